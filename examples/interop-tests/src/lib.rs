//! Nothing to use here: the crate is its tests (`tests/`), which run tonic
//! and volo-grpc servers and clients, through grpc-stream-codec's adapters
//! and stock, against each other over loopback.
