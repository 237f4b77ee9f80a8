//! The [`MessageEncoder`] trait: how one item becomes payload bytes.

use linkedbytes::LinkedBytes;

use crate::status::Status;

/// Serialises one message payload into a [`LinkedBytes`].
///
/// The encoder writes only the payload: the 5-byte envelope prefix, the
/// batching and the compression are the [`EncodeStream`](super::EncodeStream)'s
/// job. It may copy bytes in (`BufMut` on `LinkedBytes`) or pass large fields
/// by reference with [`LinkedBytes::insert`], which keeps them zero-copy on
/// the uncompressed path.
///
/// ```
/// use bytes::{BufMut, Bytes};
/// use grpc_stream_codec::status::Status;
/// use grpc_stream_codec::encode::MessageEncoder;
/// use linkedbytes::LinkedBytes;
///
/// /// A header copied in, then a large body passed by reference.
/// struct Blob;
///
/// impl MessageEncoder for Blob {
///     type Item = (u32, Bytes);
///
///     fn encode(&mut self, (id, body): (u32, Bytes), dst: &mut LinkedBytes) -> Result<(), Status> {
///         dst.put_u32(id);
///         dst.insert(body);
///         Ok(())
///     }
///
///     fn exact_len(&self, (_, body): &(u32, Bytes)) -> Option<usize> {
///         Some(4 + body.len())
///     }
/// }
/// ```
pub trait MessageEncoder {
    /// The message type this encoder serialises.
    type Item;

    /// Appends the payload of `item` to `dst`.
    ///
    /// An error ends the stream: the completed messages before it are still
    /// delivered, whatever this call wrote is discarded.
    fn encode(&mut self, item: Self::Item, dst: &mut LinkedBytes) -> Result<(), Status>;

    /// The exact payload length `encode` will write, when cheap to know.
    ///
    /// With it the stream reserves room for the whole message up front and
    /// rejects an oversized message before encoding it. A wrong answer costs
    /// only that: the prefix always carries the length actually written.
    fn exact_len(&self, item: &Self::Item) -> Option<usize> {
        let _ = item;
        None
    }

    /// How many of `item`'s payload bytes `encode` copies in, and how many
    /// it writes in all (the rest inserted by reference), when cheap to
    /// know.
    ///
    /// The stream asks once, for the first message of a stream, to choose
    /// its buffer's reservations: a stream whose messages are mostly
    /// inserted by reference (less than 1/8 copied) reserves as an
    /// unbatched stream does, since batching such messages gains nothing
    /// and a batch-sized buffer held for the stream only costs memory.
    fn copied_len_hint(&self, item: &Self::Item) -> Option<(usize, usize)> {
        let _ = item;
        None
    }
}

impl<E: MessageEncoder + ?Sized> MessageEncoder for &mut E {
    type Item = E::Item;

    fn encode(&mut self, item: Self::Item, dst: &mut LinkedBytes) -> Result<(), Status> {
        (**self).encode(item, dst)
    }

    fn exact_len(&self, item: &Self::Item) -> Option<usize> {
        (**self).exact_len(item)
    }

    fn copied_len_hint(&self, item: &Self::Item) -> Option<(usize, usize)> {
        (**self).copied_len_hint(item)
    }
}
