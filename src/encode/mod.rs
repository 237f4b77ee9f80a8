//! Encoding: batching streamed messages into linked byte nodes.
