//! The tonic adapter (feature `tonic`): a drop-in prost codec for tonic 0.14
//! and conversions between this crate's [`Status`](crate::Status) and
//! [`tonic::Status`].
//!
//! tonic keeps its own framing; the codec decides how each message is encoded
//! into, and decoded out of, tonic's buffers. Name it in `build.rs`:
//!
//! ```ignore
//! let fds = protox::compile(["proto/echo.proto"], ["proto"])?;
//! tonic_prost_build::configure()
//!     .codec_path("grpc_stream_codec::tonic::ProstCodec")
//!     .bytes(".")
//!     .compile_fds(fds)?;
//! ```
//!
//! What changes against `tonic_prost::ProstCodec`: a decoded message never
//! points into tonic's per-stream read buffer. Stock prost decoding slices
//! that buffer for every `bytes` field (`Bytes` config), so a handler that
//! keeps a 16-byte field of a 1 MiB message keeps about 1 MiB alive; with
//! this codec a field of a message above 4 KiB owns exactly its bytes, and
//! one of a smaller message pins at most this stream's 8 KiB slab (see
//! [`ProstDecoder`]). The encoder reserves each message's exact length once.
//!
//! What does not change: tonic's read buffer itself, which grows to the
//! largest message received and keeps that size for the life of the stream,
//! is outside any codec's reach.
//!
//! [`build`] (feature `tonic-build-hook`, std only) rewrites tonic-prost-build's
//! output so generated servers and clients run on this crate's full framing.

#[cfg(feature = "tonic")]
mod body;
pub mod build;
#[cfg(feature = "tonic")]
pub mod client;
#[cfg(feature = "tonic")]
mod codec;
#[cfg(feature = "tonic")]
mod compression;
#[cfg(feature = "tonic")]
mod decode;
#[cfg(feature = "tonic")]
mod encode;
#[cfg(feature = "tonic")]
mod framing_codec;
#[cfg(feature = "tonic")]
pub mod guard;
#[cfg(feature = "tonic")]
mod message_decoder;
#[cfg(feature = "tonic")]
mod message_encoder;
#[cfg(feature = "tonic")]
mod metadata;
#[cfg(feature = "tonic")]
pub mod server;
#[cfg(feature = "tonic")]
mod sources;
#[cfg(feature = "tonic")]
mod status;
#[cfg(feature = "tonic")]
mod streaming;

#[cfg(feature = "tonic")]
pub use codec::{BufferConfig, ProstCodec, ProstCodecWith, TonicDefaults};
#[cfg(feature = "tonic")]
pub use compression::{encoding_from_tonic, encodings_from_tonic};
#[cfg(feature = "tonic")]
pub use decode::ProstDecoder;
#[cfg(feature = "tonic")]
pub use encode::ProstEncoder;
#[cfg(feature = "tonic")]
pub use framing_codec::FramingCodec;
#[cfg(feature = "tonic")]
pub use message_decoder::ProstMessageDecoder;
#[cfg(feature = "tonic")]
pub use message_encoder::ProstMessageEncoder;
#[cfg(feature = "tonic")]
pub use server::{default_batch_threshold, set_default_batch_threshold};
#[cfg(feature = "tonic")]
pub use streaming::Streaming;
#[cfg(feature = "tonic")]
pub use tonic::codec::BufferSettings;
