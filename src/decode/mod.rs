//! Decoding: assembling messages from transport frames.
//!
//! - [`MessageBuffers`]: where a received message's bytes live (a per-stream
//!   8 KiB slab for small messages, an exact allocation for large ones);
//! - [`EnvelopeAssembler`]: turns body frames into messages, framework-free;
//! - [`Streaming`]: a `Stream` of decoded messages over an `http_body::Body`,
//!   decoding in the caller's task.

mod assembler;
mod buffers;
mod decompression;
mod sink;
mod state;
mod streaming;
mod trailers;

pub use assembler::{Decoded, EnvelopeAssembler};
pub use buffers::{MessageBuffers, SLAB_SIZE, SMALL_MESSAGE_MAX};
pub use streaming::{BytesDecoder, MessageDecoder, Streaming};
