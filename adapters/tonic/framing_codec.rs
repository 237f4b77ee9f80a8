//! Which codecs the full framing runs with.

use prost::Message;
use tonic::codec::Codec;

use super::codec::ProstCodec;

/// A codec that [`server::Grpc`](super::server::Grpc) and
/// [`client::Grpc`](super::client::Grpc) can run: a tonic codec whose
/// message types are prost's, which the full framing encodes and decodes itself (with
/// `ProstMessageEncoder` and `ProstMessageDecoder`).
///
/// Generated code builds the codec with `Default`; the build hook points it
/// at [`ProstCodec`]. [`ProstCodecWith`](super::ProstCodecWith) does not
/// implement it on purpose: its buffer settings size tonic's buffers, which
/// the full framing does not have, so naming it there is a compile error
/// rather than a setting that silently does nothing.
pub trait FramingCodec: Codec<Encode: Message, Decode: Message + Default> {}

impl<T, U> FramingCodec for ProstCodec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Default + Send + 'static,
{
}
