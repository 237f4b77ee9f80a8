//! `Streaming<T>`: the full framing's stream of received messages.

use std::error::Error as StdError;
use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use futures_core::Stream;
use http::{HeaderMap, StatusCode};
use http_body::Body;
use prost::Message;
use sync_wrapper::SyncWrapper;
use tonic::metadata::MetadataMap;

use super::decode::ProstMessageDecoder;
use crate::budget::Budget;
use super::server::TonicSlots;
use crate::call::rearm_request;
use crate::compression::CompressionEncoding;
use crate::decode;
use crate::envelope::Limits;

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
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn StdError + Send + Sync>>,
    {
        let mut inner = Box::new(decode::Streaming::new_request(
            body,
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
        match self.inner.get_mut().trailers().await {
            Ok(trailers) => Ok(trailers.map(MetadataMap::from_headers)),
            Err(status) => Err(status.into()),
        }
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
}
