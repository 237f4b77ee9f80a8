//! The decoder: a message never keeps tonic's read buffer alive.

use std::marker::PhantomData;

use bytes::Buf;
use prost::Message;
use tonic::Status;
use tonic::codec::{BufferSettings, DecodeBuf, Decoder};

/// Decodes prost messages out of tonic's decode buffer.
///
/// The message is decoded from a borrowed `&[u8]` view of the buffer, so
/// prost gives every `bytes` field (with the `Bytes` config) an exact
/// allocation of its own instead of a slice of tonic's buffer. It always
/// consumes exactly the bytes tonic handed it, also when decoding fails:
/// tonic does not check, and an under-read would desynchronise its framing.
#[derive(Debug, Clone)]
pub struct ProstDecoder<U> {
    buffer_settings: BufferSettings,
    _message: PhantomData<fn() -> U>,
}

impl<U> ProstDecoder<U> {
    /// A decoder that reports `buffer_settings` to tonic.
    pub fn new(buffer_settings: BufferSettings) -> Self {
        ProstDecoder {
            buffer_settings,
            _message: PhantomData,
        }
    }
}

impl<U> Default for ProstDecoder<U> {
    fn default() -> Self {
        ProstDecoder::new(BufferSettings::default())
    }
}

impl<U: Message + Default> Decoder for ProstDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        decode_borrowed(src)
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
