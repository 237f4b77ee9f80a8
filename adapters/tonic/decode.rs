//! Decoding prost messages that the core assembled, for the full framing.

use std::marker::PhantomData;

use bytes::{Buf, Bytes};
use prost::Message;

use crate::status::Status;
use crate::decode::{MessageDecoder, SMALL_MESSAGE_MAX};

/// Decodes prost messages from the buffers the core's assembler hands out.
///
/// A message's bytes are its own (an exact allocation above 4 KiB, a cut of
/// the stream's 8 KiB slab below), so a `bytes` field (with tonic-prost-build's
/// `.bytes(..)`) can share them without pinning anything of the stream. For
/// messages above [`SMALL_MESSAGE_MAX`] a field shares the message's memory
/// only when it is at least half of the message; a smaller field is copied
/// out. A kept field therefore never holds more than twice its own size
/// alive: a 16-byte field of a 1 MiB message keeps 16 bytes, and a 1 MiB field
/// of that message is handed over without a copy.
pub struct ProstMessageDecoder<T>(PhantomData<fn() -> T>);

stateless_codec_impls!(ProstMessageDecoder);

impl<T: Message + Default> MessageDecoder for ProstMessageDecoder<T> {
    type Item = T;

    fn decode(&mut self, message: Bytes) -> Result<T, Status> {
        // The same text as the codec-only path: prost's own.
        decode_owned(message).map_err(|error| Status::internal(error.to_string()))
    }
}

/// Decodes a message whose bytes are its own, by the one rule both tonic
/// paths follow for kept `bytes` fields: every field of a message up to
/// [`SMALL_MESSAGE_MAX`] shares the message's buffer; in a larger message
/// only a field of at least half the message does, and a smaller one is
/// copied out.
pub(super) fn decode_owned<T: Message + Default>(message: Bytes) -> Result<T, prost::DecodeError> {
    if message.len() <= SMALL_MESSAGE_MAX {
        T::decode(message)
    } else {
        T::decode(FieldBuf::new(message))
    }
}

/// A message's bytes, read by prost, that share themselves only with fields
/// large enough to be worth it.
struct FieldBuf {
    bytes: Bytes,
    /// A field at least this long shares the message's memory.
    share_from: usize,
}

impl FieldBuf {
    fn new(bytes: Bytes) -> Self {
        let share_from = bytes.len().div_ceil(2);
        FieldBuf { bytes, share_from }
    }
}

impl Buf for FieldBuf {
    fn remaining(&self) -> usize {
        self.bytes.remaining()
    }

    fn chunk(&self) -> &[u8] {
        self.bytes.chunk()
    }

    fn advance(&mut self, cnt: usize) {
        self.bytes.advance(cnt);
    }

    fn copy_to_bytes(&mut self, len: usize) -> Bytes {
        if len >= self.share_from {
            self.bytes.copy_to_bytes(len)
        } else {
            let copy = Bytes::copy_from_slice(&self.bytes[..len.min(self.bytes.len())]);
            self.bytes.advance(len);
            copy
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, PartialEq, prost::Message)]
    struct Fields {
        #[prost(bytes = "bytes", tag = "1")]
        small: Bytes,
        #[prost(bytes = "bytes", tag = "2")]
        large: Bytes,
    }

    /// Decodes `message`, keeping another handle on its wire bytes so that
    /// `is_unique` tells a field that shares them from one that was copied.
    fn decode(message: &Fields) -> (Fields, Bytes) {
        let wire = Bytes::from(message.encode_to_vec());
        let decoded = ProstMessageDecoder::<Fields>::new()
            .decode(wire.clone())
            .unwrap();
        (decoded, wire)
    }

    #[test]
    fn a_small_field_of_a_large_message_owns_just_its_bytes() {
        let (decoded, _wire) = decode(&Fields {
            small: Bytes::from_static(&[7; 16]),
            large: Bytes::from(vec![1; 20_000]),
        });
        assert_eq!(decoded.small, Bytes::from_static(&[7; 16]));
        assert!(decoded.small.is_unique(), "16 bytes copied out of 20 kB");
        assert_eq!(decoded.large.len(), 20_000);
        assert!(!decoded.large.is_unique(), "the large field is not copied");
    }

    #[test]
    fn fields_of_small_messages_share_the_message() {
        let (decoded, _wire) = decode(&Fields {
            small: Bytes::from_static(&[7; 16]),
            large: Bytes::from(vec![1; 1_000]),
        });
        assert!(!decoded.small.is_unique());
        assert_eq!(decoded.large, Bytes::from(vec![1; 1_000]));
    }

    #[test]
    fn corrupt_input_is_internal_with_prost_text() {
        let status = ProstMessageDecoder::<Fields>::new()
            .decode(Bytes::from_static(&[0x0a, 0x05, 1]))
            .unwrap_err();
        assert_eq!(status.code(), crate::status::Code::Internal);
        assert!(!status.message().is_empty(), "prost's text");
    }
}
