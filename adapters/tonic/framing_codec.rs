//! Which codecs the full framing runs with.

use prost::Message;

use super::codec::ProstCodec;

/// A codec that [`server::Grpc`](super::server::Grpc) and
/// [`client::Grpc`](super::client::Grpc) can run: it names the prost message
/// types, and the full framing encodes and decodes them itself (with
/// [`ProstMessageEncoder`](super::ProstMessageEncoder) and
/// [`ProstMessageDecoder`](super::ProstMessageDecoder)).
///
/// Generated code builds the codec with `Default`; the build hook points it
/// at [`ProstCodec`]. [`ProstCodecWith`](super::ProstCodecWith) does not
/// implement it on purpose: its buffer settings size tonic's buffers, which
/// the full framing does not have, so naming it there is a compile error
/// rather than a setting that silently does nothing.
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
