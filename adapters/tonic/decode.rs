//! The decoder: a message never keeps tonic's read buffer alive.

use std::fmt;
use std::marker::PhantomData;

use bytes::Buf;
use prost::Message;
use tonic::Status;
use tonic::codec::{BufferSettings, DecodeBuf, Decoder};

use crate::decode::{MessageBuffers, SMALL_MESSAGE_MAX};

/// Decodes prost messages out of tonic's decode buffer.
///
/// No decoded message references tonic's buffer, and every call consumes
/// exactly the bytes tonic handed over, also when decoding fails: tonic does
/// not check, and an under-read would desynchronise its framing. How a
/// message leaves the buffer depends on its size (measured with the
/// `decode_timing` example of `tonic-echo`):
///
/// - up to [`SMALL_MESSAGE_MAX`] (4 KiB): copied into this stream's 8 KiB
///   slab ([`MessageBuffers`]) and decoded zero-copy from there. One copy per
///   message instead of one allocation per `bytes` field; a kept field pins
///   at most one slab;
/// - above: decoded from a borrowed view of tonic's buffer, so prost gives
///   each `bytes` field (with the `Bytes` config) an exact allocation of its
///   own and a kept field keeps only itself, never the whole message.
pub struct ProstDecoder<U> {
    buffer_settings: BufferSettings,
    buffers: MessageBuffers,
    _message: PhantomData<fn() -> U>,
}

impl<U> ProstDecoder<U> {
    /// A decoder that reports `buffer_settings` to tonic.
    pub fn new(buffer_settings: BufferSettings) -> Self {
        ProstDecoder {
            buffer_settings,
            buffers: MessageBuffers::new(),
            _message: PhantomData,
        }
    }
}

impl<U> Default for ProstDecoder<U> {
    fn default() -> Self {
        ProstDecoder::new(BufferSettings::default())
    }
}

impl<U> Clone for ProstDecoder<U> {
    /// A decoder with the same settings and a slab of its own.
    fn clone(&self) -> Self {
        ProstDecoder::new(self.buffer_settings)
    }
}

impl<U> fmt::Debug for ProstDecoder<U> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProstDecoder")
            .field("buffer_settings", &self.buffer_settings)
            .finish_non_exhaustive()
    }
}

impl<U: Message + Default> Decoder for ProstDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        let len = src.remaining();
        let decoded = if len <= SMALL_MESSAGE_MAX {
            // Consumes exactly `len`: `DecodeBuf` holds no more and no less.
            U::decode(self.buffers.copy_message(src, len))
        } else {
            decode_borrowed(src)
        };
        decoded
            .map(Some)
            .map_err(|error| Status::internal(error.to_string()))
    }

    fn buffer_settings(&self) -> BufferSettings {
        self.buffer_settings
    }
}

/// Decodes the whole of `src` from a borrowed view and consumes all of it,
/// whatever the outcome.
fn decode_borrowed<U: Message + Default>(src: &mut impl Buf) -> Result<U, prost::DecodeError> {
    let len = src.remaining();
    let chunk = src.chunk();
    if chunk.len() == len {
        let decoded = U::decode(chunk);
        src.advance(len);
        return decoded;
    }
    // tonic hands over one contiguous `BytesMut` region, so this is not
    // reached today; a segmented buffer is gathered once rather than sliced,
    // which keeps the no-reference guarantee.
    let mut gathered = vec![0; len];
    src.copy_to_slice(&mut gathered);
    U::decode(gathered.as_slice())
}
#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    #[derive(Clone, PartialEq, prost::Message)]
    struct Record {
        #[prost(bytes = "bytes", tag = "1")]
        key: Bytes,
        #[prost(bytes = "bytes", tag = "2")]
        blob: Bytes,
    }

    fn record() -> Record {
        Record {
            key: Bytes::from_static(b"0123456789abcdef"),
            blob: Bytes::from(vec![7u8; 3000]),
        }
    }

    fn points_into(field: &Bytes, buffer: &[u8]) -> bool {
        let range = buffer.as_ptr_range();
        range.contains(&field.as_ptr())
    }

    #[test]
    fn contiguous_input_is_decoded_into_fields_of_their_own() {
        let encoded = record().encode_to_vec();
        let mut src: &[u8] = &encoded;
        let decoded: Record = decode_borrowed(&mut src).unwrap();
        assert_eq!(decoded, record());
        assert!(src.is_empty());
        assert!(!points_into(&decoded.key, &encoded));
        assert!(!points_into(&decoded.blob, &encoded));
    }

    #[test]
    fn segmented_input_is_gathered_and_fully_consumed() {
        let encoded = record().encode_to_vec();
        let (head, tail) = encoded.split_at(1000);
        let mut src = Buf::chain(head, tail);
        assert!(src.chunk().len() < src.remaining());
        let decoded: Record = decode_borrowed(&mut src).unwrap();
        assert_eq!(decoded, record());
        assert_eq!(src.remaining(), 0);
    }

    #[test]
    fn a_failed_decode_still_consumes_everything() {
        // A length prefix that runs past the end of the message.
        let garbage = [0x12u8, 0x40, 1, 2, 3];
        let mut contiguous: &[u8] = &garbage;
        assert!(decode_borrowed::<Record>(&mut contiguous).is_err());
        assert!(contiguous.is_empty());

        let mut segmented = Buf::chain(&garbage[..2], &garbage[2..]);
        assert!(decode_borrowed::<Record>(&mut segmented).is_err());
        assert_eq!(segmented.remaining(), 0);
    }
}
