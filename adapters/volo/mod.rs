//! The volo-grpc adapter (feature `volo`).
