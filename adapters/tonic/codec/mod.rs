//! The codec types that generated code names in `codec_path`.

use std::fmt;
use std::marker::PhantomData;

use prost::Message;
use tonic::codec::{BufferSettings, Codec};

mod decode;
mod encode;

pub use decode::ProstDecoder;
pub use encode::ProstEncoder;

/// A `tonic::codec::Codec` for prost messages, with tonic's default buffer
/// settings; the type to name in `tonic_prost_build`'s `codec_path`.
///
/// Under the full framing the build hook names it too, for its message
/// types only: the full framing has no tonic buffers, so buffer settings
/// apply on the codec-only path alone.
///
/// Generated code builds it with `ProstCodec::default()`, leaving both type
/// parameters to inference. Written by hand, it plugs into anything that
/// takes a tonic codec:
///
/// ```
/// use grpc_stream_codec::tonic::{BufferSettings, ProstCodec};
/// use tonic::codec::Codec;
///
/// let mut codec = ProstCodec::<String, String>::with_buffer_settings(
///     BufferSettings::new(4 * 1024, 16 * 1024),
/// );
/// let _encoder = codec.encoder();
/// let _decoder = codec.decoder();
/// ```
pub struct ProstCodec<T, U> {
    encoder: BufferSettings,
    decoder: BufferSettings,
    _messages: PhantomData<fn(T) -> U>,
}

impl<T, U> ProstCodec<T, U> {
    /// A codec with tonic's default buffer settings (8 KiB buffers, 32 KiB
    /// yield threshold).
    pub fn new() -> Self {
        Self::with_buffer_settings(BufferSettings::default())
    }

    /// A codec whose encoder and decoder both report `settings` to tonic.
    pub fn with_buffer_settings(settings: BufferSettings) -> Self {
        Self::with_separate_settings(settings, settings)
    }

    /// A codec with different settings for its encoder and its decoder.
    pub fn with_separate_settings(encoder: BufferSettings, decoder: BufferSettings) -> Self {
        ProstCodec {
            encoder,
            decoder,
            _messages: PhantomData,
        }
    }
}

impl<T, U> Default for ProstCodec<T, U> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, U> Clone for ProstCodec<T, U> {
    fn clone(&self) -> Self {
        Self::with_separate_settings(self.encoder, self.decoder)
    }
}

impl<T, U> fmt::Debug for ProstCodec<T, U> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProstCodec")
            .field("encoder", &self.encoder)
            .field("decoder", &self.decoder)
            .finish()
    }
}

impl<T, U> Codec for ProstCodec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = ProstDecoder<U>;

    fn encoder(&mut self) -> ProstEncoder<T> {
        ProstEncoder::new(self.encoder)
    }

    fn decoder(&mut self) -> ProstDecoder<U> {
        ProstDecoder::new(self.decoder)
    }
}

/// Buffer settings chosen at compile time, for generated code, which can
/// only call `Default`.
///
/// ```
/// use grpc_stream_codec::tonic::{BufferConfig, BufferSettings, ProstCodecWith};
///
/// /// Small buffers for a server with many idle streams.
/// pub struct SmallBuffers;
///
/// impl BufferConfig for SmallBuffers {
///     fn encoder() -> BufferSettings {
///         BufferSettings::new(1024, 16 * 1024)
///     }
///     fn decoder() -> BufferSettings {
///         BufferSettings::new(1024, 16 * 1024)
///     }
/// }
///
/// /// Named in build.rs: `.codec_path("crate::SmallCodec")`.
/// pub type SmallCodec<T, U> = ProstCodecWith<T, U, SmallBuffers>;
///
/// // What generated code does: `default()` with the messages inferred.
/// fn call<C: tonic::codec::Codec<Encode = String, Decode = Vec<u8>>>(_codec: C) {}
/// call(SmallCodec::default());
/// ```
pub trait BufferConfig: 'static {
    /// Settings reported by the encoder.
    fn encoder() -> BufferSettings {
        BufferSettings::default()
    }

    /// Settings reported by the decoder.
    fn decoder() -> BufferSettings {
        BufferSettings::default()
    }
}

/// tonic's own defaults: 8 KiB buffers, 32 KiB yield threshold.
#[derive(Debug, Clone, Copy, Default)]
pub struct TonicDefaults;

impl BufferConfig for TonicDefaults {}

/// [`ProstCodec`] with its buffer settings taken from a [`BufferConfig`];
/// name a type alias of it in `codec_path`.
pub struct ProstCodecWith<T, U, C> {
    _marker: PhantomData<fn(T, C) -> U>,
}

impl<T, U, C> Default for ProstCodecWith<T, U, C> {
    fn default() -> Self {
        ProstCodecWith {
            _marker: PhantomData,
        }
    }
}

impl<T, U, C> Clone for ProstCodecWith<T, U, C> {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl<T, U, C> fmt::Debug for ProstCodecWith<T, U, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProstCodecWith")
    }
}

impl<T, U, C> Codec for ProstCodecWith<T, U, C>
where
    T: Message + Send + 'static,
    U: Message + Default + Send + 'static,
    C: BufferConfig,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = ProstDecoder<U>;

    fn encoder(&mut self) -> ProstEncoder<T> {
        ProstEncoder::new(C::encoder())
    }

    fn decoder(&mut self) -> ProstDecoder<U> {
        ProstDecoder::new(C::decoder())
    }
}
