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
//! keeps a 16-byte field of a 1 MiB message keeps the whole message's memory
//! alive; with this codec the field owns exactly its 16 bytes. What does not
//! change: tonic's read buffer itself (it grows to the largest message and is
//! reused in place) is outside any codec's reach.

mod codec;
mod decode;
mod encode;
mod status;

pub use codec::{BufferConfig, ProstCodec, ProstCodecWith, TonicDefaults};
pub use decode::ProstDecoder;
pub use encode::ProstEncoder;
pub use tonic::codec::BufferSettings;
