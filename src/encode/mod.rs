//! Encoding: batching streamed messages into framed, linked byte nodes.
//!
//! A [`MessageEncoder`] turns one item into payload bytes in a
//! [`LinkedBytes`](linkedbytes::LinkedBytes). An [`EncodeStream`] drives it
//! over a stream of items and yields [`EncodedBatch`]es: every message the
//! source had ready, each with its 5-byte gRPC prefix, up to a soft size
//! threshold. [`EncodeBody`] sends those batches as an HTTP body, with
//! trailers when it is a server response.
//!
//! The uncompressed path never copies a payload: messages are encoded in
//! place, fields inserted by reference stay their own nodes, and each
//! prefix is backfilled where it was written. In steady state a batch of
//! small messages costs O(1) allocations, not one per message.

mod batch;
mod body;
mod buffer;
mod config;
mod encoder;
mod frames;
mod stream;

pub use batch::{EncodedBatch, IntoNodes};
pub use body::{BodyMode, EncodeBody};
pub use config::{
    DEFAULT_BATCH_THRESHOLD, EncodeConfig, FRAME_SIZE, default_batch_threshold,
    set_default_batch_threshold,
};
pub use encoder::MessageEncoder;
pub use stream::EncodeStream;
