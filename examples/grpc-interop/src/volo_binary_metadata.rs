//! Binary request metadata for volo-grpc servers: the layer now lives in
//! grpc-stream-codec's volo adapter ([`grpc_stream_codec::volo::BinaryMetadataLayer`]);
//! re-exported here under the names this crate's servers and docs use.

pub use grpc_stream_codec::volo::{BinaryMetadata, BinaryMetadataLayer, BinaryMetadataService};
