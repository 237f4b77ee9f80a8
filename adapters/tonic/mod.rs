//! The tonic adapter (feature `tonic`) for tonic 0.14, two ways in.
//!
//! # Full framing
//!
//! [`build`] rewrites tonic-prost-build's output so the generated servers
//! and clients run on [`server::Grpc`], [`client::Grpc`] and [`Streaming`]:
//! this crate's frame-fed decoder and batching encoder replace tonic's
//! framing, so no per-stream buffer of tonic's is left (an idle stream that
//! echoed 1 MiB holds a few KB instead of about 2 MiB), every limit is checked
//! on the header, and ready messages leave in batches. tonic's server,
//! channels, tower layers, interceptors, tonic-web and tonic-health work as
//! before.
//!
//! ```no_run
//! // build.rs: generate as usual, then point the generated code at this crate.
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     println!("cargo:rerun-if-changed=proto");
//!     let fds = protox::compile(["proto/echo.proto"], ["proto"])?;
//!     tonic_prost_build::configure()
//!         // Optional: every `bytes` field becomes `bytes::Bytes` (not `Vec<u8>`).
//!         .bytes(".")
//!         .compile_fds(fds)?;
//!     grpc_stream_codec::tonic::build::rewrite_out_dir()?;
//!     Ok(())
//! }
//! # mod protox {
//! #     pub struct Fds;
//! #     pub fn compile<const N: usize, const M: usize>(
//! #         _: [&str; N], _: [&str; M],
//! #     ) -> Result<Fds, std::io::Error> { Ok(Fds) }
//! # }
//! # mod tonic_prost_build {
//! #     pub fn configure() -> B { B }
//! #     pub struct B;
//! #     impl B {
//! #         pub fn codec_path(self, _: &str) -> Self { self }
//! #         pub fn bytes(self, _: &str) -> Self { self }
//! #         pub fn compile_fds(self, _: super::protox::Fds) -> std::io::Result<()> { Ok(()) }
//! #     }
//! # }
//! ```
//!
//! (The README's copy of this build script is compiled in the repository's
//! `examples/readme-tonic-full`.)
//!
//! Include the generated code with [`include_proto!`] (this crate's, in place
//! of `tonic::include_proto!`): it fails the build, naming the fix, when the
//! hook did not run after tonic-prost-build.
//!
//! ```ignore
//! pub mod pb {
//!     grpc_stream_codec::tonic::include_proto!("my.package");
//! }
//! ```
//!
//! Client-streaming and bidi handlers then take
//! `tonic::Request<grpc_stream_codec::tonic::Streaming<T>>`. One deliberate
//! difference from tonic: a request stream the client cancels ends with
//! `CANCELLED` (as in grpc-go and grpc-java), not a clean end, so a handler
//! never mistakes a cancelled upload for a complete one.
//!
//! # Codec only
//!
//! A drop-in prost codec, [`ProstCodec`], named with `codec_path`; tonic keeps
//! its own framing and the codec decides how each message is encoded into,
//! and decoded out of, tonic's buffers:
//!
//! ```no_run
//! // build.rs: generate the service with this crate's codec; no system protoc.
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     println!("cargo:rerun-if-changed=proto");
//!     let fds = protox::compile(["proto/echo.proto"], ["proto"])?;
//!     tonic_prost_build::configure()
//!         .codec_path("grpc_stream_codec::tonic::ProstCodec")
//!         // Optional: every `bytes` field becomes `bytes::Bytes` (not `Vec<u8>`).
//!         .bytes(".")
//!         .compile_fds(fds)?;
//!     Ok(())
//! }
//! # mod protox {
//! #     pub struct Fds;
//! #     pub fn compile<const N: usize, const M: usize>(
//! #         _: [&str; N], _: [&str; M],
//! #     ) -> Result<Fds, std::io::Error> { Ok(Fds) }
//! # }
//! # mod tonic_prost_build {
//! #     pub fn configure() -> B { B }
//! #     pub struct B;
//! #     impl B {
//! #         pub fn codec_path(self, _: &str) -> Self { self }
//! #         pub fn bytes(self, _: &str) -> Self { self }
//! #         pub fn compile_fds(self, _: super::protox::Fds) -> std::io::Result<()> { Ok(()) }
//! #     }
//! # }
//! ```
//!
//! `.bytes(".")` is optional: it turns every `bytes` field from `Vec<u8>`
//! into `bytes::Bytes`, which changes the generated types (handlers written
//! for `Vec<u8>` need `.into()`); what is said below about kept fields is
//! about `Bytes` fields. (The README's copy of this build script is compiled
//! in the repository's `examples/readme-tonic`.)
//!
//! What changes against `tonic_prost::ProstCodec`: a decoded message never
//! points into tonic's per-stream read buffer. Stock prost decoding slices
//! that buffer for every `bytes` field (`Bytes` config), so a handler that
//! keeps a 16-byte field of a 1 MiB message keeps about 1 MiB alive; with
//! this codec a field of a message above 4 KiB owns exactly its bytes, and
//! one of a smaller message pins at most this stream's 8 KiB slab (see
//! [`ProstDecoder`]). The encoder reserves each message's exact length once.
//! What does not change: tonic's read buffer itself, which grows to the
//! largest message received and keeps that size for the life of the stream,
//! and tonic's limits and their codes (`OUT_OF_RANGE` for a message above
//! `max_decoding_message_size`, checked after tonic has buffered it). Full
//! framing is the way to get this crate's guarantees; codec only is the
//! smaller change.
//!
//! Both ways convert between this crate's [`Status`](crate::Status) and
//! [`tonic::Status`].

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
