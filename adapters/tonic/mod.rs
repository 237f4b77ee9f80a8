//! The tonic adapter (feature `tonic`) for tonic 0.14, two ways in.
//!
//! **Full framing**, the recommended way: [`build::rewrite_out_dir`], run
//! after tonic-prost-build, rewrites the generated servers and clients onto
//! [`server::Grpc`], [`client::Grpc`] and [`Streaming`] (tonic's API, this
//! crate's frame-fed decoder and batching encoder), and [`include_proto!`]
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
//! Both convert between this crate's [`Status`](crate::Status) and
//! [`tonic::Status`]. The repository's `docs/tonic.md` has both set-ups
//! (compiled in `examples/readme-tonic-full` and `examples/readme-tonic`),
//! what each changes and its limits.

// The files, by job (docs/architecture.md lays them beside volo's):
// full framing's server and client glue, with tonic's API
#[cfg(feature = "tonic")]
pub mod client;
#[cfg(feature = "tonic")]
pub mod server;
// receiving: the message stream handlers and callers read, its decoder,
// and tonic bodies as the core reads them
#[cfg(feature = "tonic")]
mod body;
#[cfg(feature = "tonic")]
mod decode;
#[cfg(feature = "tonic")]
mod recv;
// sending: the message encoder and handlers' streams as encoder sources
#[cfg(feature = "tonic")]
mod encode;
#[cfg(feature = "tonic")]
mod send;
// conversions with tonic: status, compression, metadata
#[cfg(feature = "tonic")]
mod compression;
#[cfg(feature = "tonic")]
mod metadata;
#[cfg(feature = "tonic")]
mod status;
// the receive budget's layer
#[cfg(feature = "tonic")]
mod budget;
// the build hook and the include check it pairs with
pub mod build;
mod include;
// codec only (`codec_path`), and the codec type full framing is named by
#[cfg(feature = "tonic")]
mod codec;
#[cfg(feature = "tonic")]
mod framing_codec;

#[doc(hidden)]
pub use include::__private;

#[doc(inline)]
pub use crate::__tonic_include_proto as include_proto;

#[cfg(feature = "tonic")]
pub use budget::{ReceiveBudgetLayer, ReceiveBudgetService, TaggedResponse};
#[cfg(feature = "tonic")]
pub use codec::{
    BufferConfig, ProstCodec, ProstCodecWith, ProstDecoder, ProstEncoder, TonicDefaults,
};
#[cfg(feature = "tonic")]
pub use compression::{encoding_from_tonic, encodings_from_tonic};
#[cfg(feature = "tonic")]
pub use decode::ProstMessageDecoder;
#[cfg(feature = "tonic")]
pub use encode::ProstMessageEncoder;
#[cfg(feature = "tonic")]
pub use framing_codec::FramingCodec;
#[cfg(feature = "tonic")]
pub use recv::Streaming;
#[cfg(feature = "tonic")]
pub use server::{default_batch_threshold, set_default_batch_threshold};
#[cfg(feature = "tonic")]
pub use tonic::codec::BufferSettings;
