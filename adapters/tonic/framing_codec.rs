//! Which codecs the full framing runs with.

use prost::Message;

use super::codec::{BufferConfig, ProstCodec, ProstCodecWith};

/// A codec that [`server::Grpc`](super::server::Grpc) and
/// [`client::Grpc`](super::client::Grpc) can run: it names the prost message
/// types, and the full framing encodes and decodes them itself (with
/// [`ProstMessageEncoder`](super::ProstMessageEncoder) and
/// [`ProstMessageDecoder`](super::ProstMessageDecoder)).
///
/// Generated code builds the codec with `Default`; the build hook points it
/// at [`ProstCodec`], which implements this trait, as does
/// [`ProstCodecWith`]. Buffer settings of the codec do not apply: the full
/// framing keeps no tonic buffer to size.
pub trait FramingCodec {
    /// The messages this side sends.
    type Encode: Message + Send + 'static;
    /// The messages this side receives.
    type Decode: Message + Default + Send + 'static;
}

impl<T, U> FramingCodec for ProstCodec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
}

impl<T, U, C> FramingCodec for ProstCodecWith<T, U, C>
where
    T: Message + Send + 'static,
    U: Message + Default + Send + 'static,
    C: BufferConfig,
{
    type Encode = T;
    type Decode = U;
}
