//! A [`MessageEncoder`] for prost messages, for driving this crate's
//! [`EncodeStream`](crate::encode::EncodeStream) directly with prost types
//! (for example behind a hand-written `http_body::Body`), outside tonic's own
//! encoding path.

use std::marker::PhantomData;

use linkedbytes::LinkedBytes;

use crate::status::Status;
use crate::encode::MessageEncoder;

/// Encodes any `prost::Message` into the batch buffer, reporting its exact
/// length up front so the 5-byte prefix is written before the message.
///
/// ```
/// use futures_util::{FutureExt, StreamExt};
/// use grpc_stream_codec::encode::{EncodeConfig, EncodeStream};
/// use grpc_stream_codec::codegen::tonic::ProstMessageEncoder;
///
/// let messages = futures_util::stream::iter(["a".to_string(), "bc".to_string()].map(Ok));
/// let mut batches = EncodeStream::new(messages, ProstMessageEncoder::default(), EncodeConfig::default());
/// // Every message is ready, so the first batch holds both.
/// let batch = batches.next().now_or_never().unwrap().unwrap().unwrap();
/// assert_eq!(batch.message_count(), 2);
/// assert_eq!(batch.len(), (5 + 3) + (5 + 4)); // prefix + tag, length, bytes
/// ```
#[doc(hidden)]
pub struct ProstMessageEncoder<T>(PhantomData<fn(T)>);

stateless_codec_impls!(ProstMessageEncoder);

impl<T: prost::Message> MessageEncoder for ProstMessageEncoder<T> {
    type Item = T;

    fn encode(&mut self, item: T, dst: &mut LinkedBytes) -> Result<(), Status> {
        // prost copies every field, so nothing is inserted by reference:
        // write straight into the current buffer, whose `BufMut` is the
        // inlined fast path (`LinkedBytes`' own is the generic one).
        item.encode(dst.bytes_mut())
            .map_err(|error| Status::internal(format!("encoding a message failed: {error}")))
    }

    fn exact_len(&self, item: &T) -> Option<usize> {
        Some(item.encoded_len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::{EncodeConfig, EncodeStream};
    use futures_util::{FutureExt, StreamExt};
    use prost::Message as _;

    #[test]
    fn messages_round_trip_through_encode_stream() {
        let inputs: Vec<String> = vec![String::new(), "x".repeat(300), "y".repeat(70_000)];
        let source = futures_util::stream::iter(inputs.clone().into_iter().map(Ok));
        let batches: Vec<_> = EncodeStream::new(
            source,
            ProstMessageEncoder::default(),
            EncodeConfig::default(),
        )
        .collect::<Vec<_>>()
        .now_or_never()
        .expect("every message is ready");
        let mut wire = Vec::new();
        for batch in batches {
            for node in batch.unwrap().nodes() {
                wire.extend_from_slice(node);
            }
        }
        let mut rest = &wire[..];
        for input in inputs {
            assert_eq!(rest[0], 0, "uncompressed");
            let len = u32::from_be_bytes([rest[1], rest[2], rest[3], rest[4]]) as usize;
            let decoded = String::decode(&rest[5..5 + len]).unwrap();
            assert_eq!(decoded, input);
            rest = &rest[5 + len..];
        }
        assert!(rest.is_empty());
    }
}
