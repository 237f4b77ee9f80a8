//! The tonic adapter (feature `tonic`) for tonic 0.14, two ways in.
//!
//! **Full framing**, the recommended way: [`build::rewrite_out_dir`], run
//! after tonic-prost-build, rewrites the generated servers and clients onto
//! this crate's framing with tonic's API (their handlers and calls take
//! [`Streaming`]: this crate's frame-fed decoder; responses leave through
//! its batching encoder), and [`include_proto!`]
//! (in place of `tonic::include_proto!`) fails the build, naming the fix, if
//! the hook did not run. No per-stream buffer of tonic's is left, every limit
//! is checked on the header, and ready messages leave in batches; tonic's
//! server, channels, layers, interceptors, tonic-web and tonic-health work as
//! before. One deliberate difference: a request stream the client cancels
//! ends with `CANCELLED`, not a clean end.
//!
//! **Codec only**: [`ProstCodec`], named with tonic-prost-build's
//! `codec_path`. tonic keeps its framing, its read buffer and its limits; a
//! decoded message never points into tonic's read buffer (see
//! [`ProstDecoder`]).
//!
//! Both convert between this crate's [`Status`](crate::status::Status) and
//! [`tonic::Status`]. The repository's `docs/tonic.md` has both set-ups
//! (compiled in `examples/readme-tonic-full` and `examples/readme-tonic`),
//! what each changes and its limits.

// The files, by job (docs/architecture.md lays them beside volo's). The
// build hook and the include check it pairs with build without tonic:
pub mod build;

#[doc(inline)]
pub use crate::{__tonic_include_file as include_file, __tonic_include_proto as include_proto};

with_feature! {"tonic",
    // full framing's server and client glue, with tonic's API
    pub(crate) mod client;
    pub(crate) mod server;
    // receiving: the message stream handlers and callers read, its decoder,
    // and tonic bodies as the core reads them
    pub(crate) mod recv;
    // sending: the message encoder and handlers' streams as encoder sources
    pub(crate) mod encode;
    mod send;
    // conversions with tonic: status, compression, metadata
    mod compression;
    mod metadata;
    mod status;
    // the receive budget's layer
    mod budget;
    // codec only (`codec_path`), and the codec type full framing is named by
    mod codec;
    pub(crate) mod framing_codec;

    pub use budget::TaggedResponse;
    pub use codec::{
        BufferConfig, ProstCodec, ProstCodecWith, ProstDecoder, ProstEncoder, TonicDefaults,
    };
    pub use compression::{encoding_from_tonic, encodings_from_tonic};
    use encode::ProstMessageEncoder;
    pub use recv::Streaming;
    pub use tonic::codec::BufferSettings;
}
