//! The decoder: a message never keeps tonic's read buffer alive.

use std::fmt;
use std::marker::PhantomData;

use bytes::{Buf, Bytes};
use prost::Message;
use tonic::Status;
use tonic::codec::{BufferSettings, DecodeBuf, Decoder};

use crate::decode::{MessageBuffers, SMALL_MESSAGE_MAX};
use crate::tonic::recv::decode_owned;

/// Decodes prost messages out of tonic's decode buffer.
///
/// No decoded message references tonic's buffer, and every call consumes
/// exactly the bytes tonic handed over, also when decoding fails: tonic does
/// not check, and an under-read would desynchronise its framing. Each
/// message is copied out of tonic's buffer into memory of its own (a cut of
/// this stream's 8 KiB slab up to [`SMALL_MESSAGE_MAX`], an exact allocation
/// above) and decoded from there by the same rule as the full framing's
/// decoder: in a message above 4 KiB a `bytes` field (with the `Bytes`
/// config) shares the message's memory only when it is at least half of
/// it, so a kept field never holds more than twice its size; a field of a
/// smaller message pins at most one slab.
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
        // Consumes exactly `len`: `DecodeBuf` holds no more and no less.
        let len = src.remaining();
        let message = if len <= SMALL_MESSAGE_MAX {
            self.buffers.copy_message(src, len)
        } else {
            copy_exact(src)
        };
        decode_owned(message)
            .map(Some)
            .map_err(|error| Status::internal(error.to_string()))
    }

    fn buffer_settings(&self) -> BufferSettings {
        self.buffer_settings
    }
}

/// All of `src` in one allocation of exactly its length. Never
/// `copy_to_bytes`, which would share (and pin) tonic's buffer.
fn copy_exact(src: &mut impl Buf) -> Bytes {
    let mut owned = Vec::with_capacity(src.remaining());
    while src.has_remaining() {
        let chunk = src.chunk();
        owned.extend_from_slice(chunk);
        let read = chunk.len();
        src.advance(read);
    }
    Bytes::from(owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_message_is_copied_into_an_exact_allocation_of_its_own() {
        let wire = vec![5u8; 20_000];
        let (head, tail) = wire.split_at(7_000);
        let mut src = Buf::chain(head, tail);
        let copied = copy_exact(&mut src);
        assert_eq!(src.remaining(), 0, "everything consumed");
        assert_eq!(copied, wire);
        assert!(copied.is_unique());
        let owned = copied.try_into_mut().unwrap();
        assert_eq!(owned.capacity(), wire.len());
        assert!(!wire.as_ptr_range().contains(&owned.as_ptr()));
    }
}
