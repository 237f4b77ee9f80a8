//! The encoder: one exact reservation, then prost encodes in place.

use std::marker::PhantomData;

use prost::Message;
use tonic::Status;
use tonic::codec::{BufferSettings, EncodeBuf, Encoder};

/// Encodes prost messages into tonic's encode buffer.
///
/// It reserves the message's exact `encoded_len()` once, so a large message
/// grows tonic's buffer in one step instead of in `buffer_size` increments.
#[derive(Debug, Clone)]
pub struct ProstEncoder<T> {
    buffer_settings: BufferSettings,
    _message: PhantomData<fn(T)>,
}

impl<T> ProstEncoder<T> {
    /// An encoder that reports `buffer_settings` to tonic.
    pub fn new(buffer_settings: BufferSettings) -> Self {
        ProstEncoder {
            buffer_settings,
            _message: PhantomData,
        }
    }
}

impl<T> Default for ProstEncoder<T> {
    fn default() -> Self {
        ProstEncoder::new(BufferSettings::default())
    }
}

impl<T: Message> Encoder for ProstEncoder<T> {
    type Item = T;
    type Error = Status;

    fn encode(&mut self, item: T, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.reserve(item.encoded_len());
        // Only fails when the buffer cannot take the message, which a growable
        // `BytesMut` behind `EncodeBuf` rules out; still no panic if it did.
        item.encode(dst)
            .map_err(|error| Status::internal(error.to_string()))
    }

    fn buffer_settings(&self) -> BufferSettings {
        self.buffer_settings
    }
}
