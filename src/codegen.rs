//! What generated code names once a build hook has rewritten it, and what
//! the hooks' marks expand through: not an API. Hidden from the docs, as
//! tonic's `codegen` and prost's `encoding` are, and named only by the
//! code the hooks emit (their rule tables and marks: `src/rewrite/`,
//! `adapters/*/build*`), so it may change with any release.
//!
//! The types users name (`tonic::Streaming`, `tonic::ProstCodec`,
//! `volo::RecvStream`, `volo::ClientBuilder`) stay in their adapter, where
//! rewritten code names them too: handlers' signatures must match it.

/// The mark a hook appends to a file it rewrote.
pub use crate::__include_mark as include_mark;
/// What a hook puts before a generated file's `include!` of a marked file.
pub use crate::__include_nested as include_nested;
/// The include check's modules (`src/include_check.rs`).
pub use crate::include_check::checks as include;
/// The include macros' names per file.
pub use grpc_stream_codec_macros as macros;

/// What tonic-prost-build's output runs on after `tonic::build`.
#[cfg(feature = "tonic")]
pub mod tonic {
    pub use crate::tonic::encode::ProstMessageEncoder;
    pub use crate::tonic::framing_codec::FramingCodec;
    pub use crate::tonic::recv::ProstMessageDecoder;

    /// In place of `tonic::server`'s `Grpc` and its streaming-request
    /// service traits.
    pub mod server {
        pub use crate::tonic::server::{ClientStreamingService, Grpc, StreamingService};
    }

    /// In place of `tonic::client::Grpc`.
    pub mod client {
        pub use crate::tonic::client::Grpc;
    }
}

/// What volo-build's output runs on after `volo::build`.
#[cfg(feature = "volo")]
pub mod volo {
    pub use crate::volo::encode::{PilotaEncoder, encode, encode_response, encode_with_config};
    pub use crate::volo::recv::PilotaDecoder;
}
