//! tonic's receiving side on the full framing: the transport's body as the
//! core reads it, prost messages decoded from what the core assembled, and
//! `Streaming<T>`, the stream handlers and callers read.

use std::error::Error as StdError;
use std::fmt;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::{Buf, Bytes};
use futures_core::Stream;
use http::{HeaderMap, StatusCode};
use http_body::Body;
use http_body_util::BodyExt;
use prost::Message;
use sync_wrapper::SyncWrapper;
use tonic::metadata::MetadataMap;

use super::server::TonicSlots;
use crate::budget::Budget;
use crate::call::rearm_request;
use crate::compression::CompressionEncoding;
use crate::decode::{self, MessageDecoder, SMALL_MESSAGE_MAX};
use crate::envelope::Limits;
use crate::status::Status;

/// `body` with `Bytes` data and [`Status`] errors. tonic's servers and
/// clients name bodies with any `Buf` data; for `Bytes` (what hyper and
/// tonic produce) the conversion is a move, for anything else one copy.
pub(crate) fn bytes_body<B>(body: B) -> impl Body<Data = Bytes, Error = Status>
where
    B: Body,
    B::Error: Into<Box<dyn StdError + Send + Sync>>,
{
    body.map_frame(|frame| frame.map_data(|mut data| data.copy_to_bytes(data.remaining())))
        .map_err(status_from_transport)
}

/// The code tonic gives a transport error: an HTTP/2 reset's reason maps as
/// the gRPC spec says (`CANCEL` is `cancelled`, `REFUSED_STREAM` is
/// `unavailable`, ...), hyper's timeouts and cancellations too, so handlers
/// and callers see the same code on either framing.
///
/// An error that already is this crate's status (a body read ahead of its
/// handler passes the transport's mapped errors on, and ends a call at its
/// deadline with one) stays as it is.
fn status_from_transport(error: impl Into<Box<dyn StdError + Send + Sync>>) -> Status {
    match error.into().downcast::<Status>() {
        Ok(status) => *status,
        Err(error) => tonic::Status::from_error(error).into(),
    }
}

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
pub(crate) fn decode_owned<T: Message + Default>(message: Bytes) -> Result<T, prost::DecodeError> {
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

/// The messages of a request (on a server) or a response (on a client), in
/// place of `tonic::Streaming<T>`: the [build hook](super::build) points
/// generated code at it, so client-streaming and bidi handlers take
/// `tonic::Request<grpc_stream_codec::tonic::Streaming<T>>` and streaming
/// client calls return `tonic::Response<grpc_stream_codec::tonic::Streaming<T>>`.
///
/// It is a `Stream<Item = Result<T, tonic::Status>>` with
/// [`message`](Self::message) and [`trailers`](Self::trailers), like tonic's,
/// read by this crate's frame-fed decoder ([`decode::Streaming`]): each
/// message's length is checked against the receive limit before anything is
/// allocated for it (`resource_exhausted`, "message size N exceeds limit
/// M"), decompression is bounded by the same limit, a body that ends inside a
/// message is `internal`, and nothing of a message is kept once it is handed
/// out — no per-stream buffer grows to the largest message seen. After an
/// error the stream ends.
///
/// ```no_run
/// use grpc_stream_codec::tonic::Streaming;
///
/// // A client-streaming handler's body: `request.into_inner()` is the stream.
/// async fn total_len(mut requests: Streaming<String>) -> Result<usize, tonic::Status> {
///     let mut total = 0;
///     while let Some(text) = requests.message().await? {
///         total += text.len();
///     }
///     Ok(total)
/// }
/// ```
pub struct Streaming<T> {
    // `Sync` like tonic's `Streaming`, so a handler may hold
    // `&tonic::Request<Streaming<T>>` across an `.await`; the decoder's boxed
    // body is `Send` only, and is reached through `&mut self` alone.
    // Boxed: generated code and tonic move the stream several times on its
    // way into the handler, and each move of the decoder state is a copy of
    // some hundred bytes; one allocation costs less.
    inner: SyncWrapper<Box<decode::Streaming<ProstMessageDecoder<T>>>>,
    /// The server call whose request this stream reads (0: none), so a
    /// budget set here counts the request's read-ahead too.
    request_call: u64,
}

impl<T: Message + Default> Streaming<T> {
    /// A stream over a request body a server received, its messages
    /// compressed with `encoding` (already negotiated).
    pub(crate) fn new_request<B>(
        body: B,
        encoding: Option<CompressionEncoding>,
        limits: Limits,
    ) -> Self
    where
        B: Body<Data = Bytes, Error = Status> + Send + 'static,
    {
        let mut inner = Box::new(decode::Streaming::request_of(
            Box::pin(body),
            ProstMessageDecoder::new(),
            encoding,
        ));
        inner.set_limits(limits);
        Streaming {
            inner: SyncWrapper::new(inner),
            request_call: 0,
        }
    }

    /// A stream over a response body a client received.
    pub(crate) fn new_response<B>(
        status: StatusCode,
        headers: &HeaderMap,
        body: B,
        limits: Limits,
    ) -> Self
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn StdError + Send + Sync>>,
    {
        let mut inner = Box::new(decode::Streaming::new_response(
            status,
            headers,
            body,
            ProstMessageDecoder::new(),
        ));
        inner.set_limits(limits);
        Streaming {
            inner: SyncWrapper::new(inner),
            request_call: 0,
        }
    }

    /// Counts this stream's received messages against `budget` (see
    /// [`crate::budget`]) instead of the one a
    /// [`ReceiveBudgetLayer`](crate::budget::ReceiveBudgetLayer) attached. Call it
    /// before reading: it applies to messages not yet started.
    pub fn with_budget(mut self, budget: impl Into<Budget>) -> Self {
        let budget = budget.into();
        rearm_request::<TonicSlots>(self.request_call, &budget);
        self.inner.get_mut().set_budget(budget);
        self
    }

    /// Names the call's method in what is recorded of this stream.
    pub(crate) fn observed(mut self, method: crate::observe::Method) -> Self {
        self.inner.get_mut().set_method(method);
        self
    }

    /// Ties the request's read-ahead to this stream, so a budget set on the
    /// stream counts what is read ahead too.
    pub(crate) fn set_request_call(&mut self, call: u64) {
        self.request_call = call;
    }

    /// Counts against `budget` when there is one.
    pub(crate) fn with_optional_budget(self, budget: Option<Budget>) -> Self {
        match budget {
            Some(budget) => self.with_budget(budget),
            None => self,
        }
    }

    /// The next message, or `None` at the end of a successful stream.
    pub async fn message(&mut self) -> Result<Option<T>, tonic::Status> {
        self.inner.get_mut().message().await.map_err(Into::into)
    }

    /// Reads the body to its end, discarding messages not yet read, and
    /// returns its trailers. On a client, a non-`OK` status is the error.
    pub async fn trailers(&mut self) -> Result<Option<MetadataMap>, tonic::Status> {
        let trailers = self.inner.get_mut().trailers().await?;
        Ok(trailers.map(MetadataMap::from_headers))
    }

    /// The end of a unary request whose one message has been read: its
    /// trailers, or `INTERNAL` when another message follows.
    pub(crate) async fn unary_request_end(&mut self) -> Result<Option<MetadataMap>, tonic::Status> {
        let trailers = self.inner.get_mut().unary_request_end().await?;
        Ok(trailers.map(MetadataMap::from_headers))
    }
}

impl<T: Message + Default> Stream for Streaming<T> {
    type Item = Result<T, tonic::Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let item = ready!(Pin::new(&mut **self.inner.get_mut()).poll_next(cx));
        Poll::Ready(item.map(|result| result.map_err(Into::into)))
    }
}

impl<T> fmt::Debug for Streaming<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Streaming").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send_and_sync<T: Send + Sync>() {}

    /// Handlers hold `&tonic::Request<Streaming<T>>` across an `.await`
    /// (metadata checks before reading), which needs `Sync`, as tonic's is.
    #[test]
    fn streaming_is_send_and_sync_like_tonics() {
        send_and_sync::<tonic::Streaming<String>>();
        send_and_sync::<Streaming<String>>();
    }

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
