//! `RecvStream`: volo-grpc's receiving stream, on [`Streaming`].

use std::fmt;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use futures_core::Stream;
use http::HeaderMap;
use http_body::{Body, SizeHint};
use pilota::pb::Message;
use volo_grpc::body::BoxBody;
use volo_grpc::codec::compression::CompressionEncoding as VoloEncoding;
use volo_grpc::codec::decode::Kind;
use volo_grpc::metadata::MetadataMap;

use super::budget::budget_for_new_stream;
use super::call_guard::VoloSlots;
use crate::call::{rearm_request, request_body};
use super::call_scope::{ResponseHeaders, scoped_response_headers};
use super::compression::encoding_from_volo;
use super::limits::limits_for_new_stream;
use super::metadata::warn_unshielded;
use super::trailers_only::WithoutLayer;
use crate::PolledFrame;
use crate::budget::Budget;
use crate::compression::{CompressionEncoding, GRPC_ENCODING};
use crate::decode::{MessageDecoder, Streaming};
use crate::envelope::Limits;
use crate::observe::{Method, client_method};
use crate::status::{Code, Status};

/// Decodes pilota protobuf messages. Bytes fields of the message share its
/// buffer, which holds that message alone.
pub struct PilotaDecoder<T>(PhantomData<fn() -> T>);

stateless_codec_impls!(PilotaDecoder);

impl<T: Message + Default> MessageDecoder for PilotaDecoder<T> {
    type Item = T;

    fn decode(&mut self, message: Bytes) -> Result<T, Status> {
        // prost's text alone, as tonic (and this crate's tonic adapter) send it.
        T::decode(message).map_err(|err| Status::internal(err.to_string()))
    }
}

/// The messages of a volo-grpc request or response body: a drop-in for
/// `volo_grpc::RecvStream`, which the [build hook](super::build) replaces
/// with it in generated code, so client-streaming and bidi handlers receive
/// `Request<grpc_stream_codec::volo::RecvStream<T>>`.
///
/// Unlike the stock stream it checks each message's declared length against
/// a receive limit (default 4 MiB; [`set_default_limits`](super::set_default_limits),
/// a [`LimitsLayer`](super::LimitsLayer) or [`with_limits`](Self::with_limits))
/// before allocating anything for it,
/// bounds decompression by the same limit, and keeps no frame buffer: each
/// message is assembled straight into memory of its own. Too large a message
/// fails with `resource_exhausted`. After any error the stream ends.
///
/// As in volo-grpc, a request body that the client cancelled ends the stream
/// quietly instead of yielding `cancelled`.
///
/// ```no_run
/// use grpc_stream_codec::volo::RecvStream;
///
/// // A client-streaming handler's body; `req.into_inner()` is the stream.
/// async fn count<T>(mut requests: RecvStream<T>) -> Result<u64, volo_grpc::Status>
/// where
///     T: pilota::pb::Message + Default,
/// {
///     let mut count = 0;
///     while let Some(_message) = requests.message().await? {
///         count += 1;
///     }
///     Ok(count)
/// }
/// ```
pub struct RecvStream<T> {
    // Boxed: generated code and volo-grpc move the stream several times
    // inside every call's futures (into the request, the handler's future,
    // out of the request), and each move of an unboxed stream copies its
    // whole decoder state. One allocation per stream costs less.
    state: Box<State<T>>,
}

struct State<T> {
    inner: Inner<T>,
    limits: Limits,
    /// The receive budget, for a stream made once the encoding is known.
    budget: Option<Budget>,
    /// The call whose guard reads a server's request ahead (0: none),
    /// counted against `budget`.
    request_call: u64,
    is_request: bool,
    ended: bool,
}

// `Ready` is the state for the stream's whole life after the first read,
// and the whole state is boxed once: boxing the variant again would cost a
// second allocation per stream.
#[expect(clippy::large_enum_variant)]
enum Inner<T> {
    Ready(Streaming<PilotaDecoder<T>>),
    /// A response created inside a [`ClientCompressionLayer`] call: volo-grpc
    /// built this stream before the layer could see the response's headers
    /// (`grpc-encoding`, and a trailers-only response's status), so the
    /// decoder is made on the first read, by which time the layer has filled
    /// them in. `encoding` is volo-grpc's own, which wins if it has one.
    ///
    /// [`ClientCompressionLayer`]: super::ClientCompressionLayer
    AwaitingHeaders {
        status: http::StatusCode,
        body: BoxBody,
        headers: ResponseHeaders,
        encoding: Option<CompressionEncoding>,
        method: Method,
    },
    /// Only while moving from the state above to `Ready`.
    Moving,
}

impl<T: Message + Default> RecvStream<T> {
    /// A stream over `body`, as the generated `RecvEntryMessage::from_body`
    /// creates it. `compression_encoding` is what volo-grpc read from
    /// `grpc-encoding` (its `Zlib` is gRPC's `deflate`).
    pub fn new(body: BoxBody, kind: Kind, compression_encoding: Option<VoloEncoding>) -> Self {
        let encoding = compression_encoding
            .map(encoding_from_volo)
            .filter(|encoding| !encoding.is_identity());
        let limits = limits_for_new_stream();
        let budget = budget_for_new_stream();
        let decoder = PilotaDecoder::new();
        // Made in its box, then filled in place: the decoder state is
        // large, and each move of it is a copy.
        let mut state = Box::new(State {
            inner: Inner::Moving,
            limits,
            budget,
            request_call: 0,
            is_request: false,
            ended: false,
        });
        match kind {
            Kind::Request => {
                state.is_request = true;
                // Inside the call's guard the body may be read ahead, and
                // what is read ahead counts against this stream's budget.
                let (body, method, guarded) =
                    request_body::<VoloSlots>(VoloBody { inner: body }, state.budget.clone());
                if !guarded {
                    warn_unshielded();
                }
                state.request_call = body.call();
                let mut streaming = Streaming::request_of(Box::pin(body), decoder, encoding);
                streaming.set_method(method);
                state.inner = Inner::Ready(streaming);
            }
            Kind::Response(status) => {
                let method = client_method();
                if let Some(headers) = scoped_response_headers() {
                    state.inner = Inner::AwaitingHeaders {
                        status,
                        body,
                        headers,
                        encoding,
                        method,
                    };
                    return RecvStream { state };
                }
                let headers = encoding_headers(encoding);
                let body = WithoutLayer::new(VoloBody { inner: body });
                state.inner =
                    Inner::Ready(Streaming::response_of(status, &headers, Box::pin(body), decoder));
                if let Inner::Ready(streaming) = &mut state.inner {
                    streaming.set_method(method);
                }
            }
        }
        let state_ref = &mut *state;
        if let Inner::Ready(streaming) = &mut state_ref.inner {
            streaming.set_limits(limits);
            if let Some(budget) = &state_ref.budget {
                streaming.set_budget(budget.clone());
            }
        }
        RecvStream { state }
    }

    /// Counts this stream's received messages against `budget` instead of
    /// the one from a [`ReceiveBudgetLayer`](crate::budget::ReceiveBudgetLayer) or
    /// [`set_default_budget`](super::set_default_budget). Call it before
    /// reading.
    pub fn with_budget(mut self, budget: impl Into<Budget>) -> Self {
        let budget = budget.into();
        let state = &mut *self.state;
        state.budget = Some(budget.clone());
        rearm_request::<VoloSlots>(state.request_call, &budget);
        if let Inner::Ready(inner) = &mut state.inner {
            inner.set_budget(budget);
        }
        self
    }

    /// Sets the receive limit for messages not yet started. Call it before
    /// reading, e.g. on `req.into_inner()` in a handler.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        let state = &mut *self.state;
        state.limits = limits;
        if let Inner::Ready(inner) = &mut state.inner {
            inner.set_limits(limits);
        }
        self
    }

    /// The decoding stream, made now if it waited for the response's
    /// headers.
    #[inline]
    fn streaming(&mut self) -> &mut Streaming<PilotaDecoder<T>> {
        self.state.streaming()
    }

    /// The next message, or `None` at the end of a successful stream.
    pub async fn message(&mut self) -> Result<Option<T>, volo_grpc::Status> {
        match std::future::poll_fn(|cx| Pin::new(&mut *self).poll_next(cx)).await {
            Some(Ok(message)) => Ok(Some(message)),
            Some(Err(status)) => Err(status),
            None => Ok(None),
        }
    }

    /// Reads the body to its end (discarding unread messages) and returns
    /// its trailers. For a response, a non-`OK` status is the error.
    ///
    /// On a server's request stream, volo-grpc's generated unary and
    /// server-streaming methods call this right after taking the request's
    /// one message, so there a message still in the body is `INTERNAL`
    /// (as grpc-go answers it), not dropped.
    pub async fn trailers(&mut self) -> Result<Option<MetadataMap>, volo_grpc::Status> {
        let is_request = self.state.is_request;
        let streaming = self.streaming();
        let end = if is_request {
            streaming.unary_request_end().await
        } else {
            streaming.trailers().await
        };
        match end {
            Ok(trailers) => Ok(trailers.map(MetadataMap::from_headers)),
            Err(status) => Err(status.into()),
        }
    }
}

impl<T: Message + Default> State<T> {
    /// The decoding stream, made now if it waited for the response's
    /// headers.
    #[inline]
    fn streaming(&mut self) -> &mut Streaming<PilotaDecoder<T>> {
        if !matches!(self.inner, Inner::Ready(_)) {
            self.make_streaming();
        }
        match &mut self.inner {
            Inner::Ready(streaming) => streaming,
            // `Moving` never outlives `make_streaming`.
            Inner::AwaitingHeaders { .. } | Inner::Moving => {
                unreachable!("the stream was made above")
            }
        }
    }

    /// Makes the decoding stream of a response that waited for its
    /// headers: once per stream, off the path of every read.
    #[cold]
    fn make_streaming(&mut self) {
        if let Inner::AwaitingHeaders {
            status,
            body,
            headers,
            encoding,
            method,
        } = std::mem::replace(&mut self.inner, Inner::Moving)
        {
            let mut headers = headers.take();
            if let Some(encoding) = encoding {
                headers.insert(GRPC_ENCODING, encoding.header_value());
            }
            let mut streaming = Streaming::response_of(
                status,
                &headers,
                Box::pin(VoloBody { inner: body }),
                PilotaDecoder::new(),
            );
            streaming.set_limits(self.limits);
            streaming.set_method(method);
            if let Some(budget) = &self.budget {
                streaming.set_budget(budget.clone());
            }
            self.inner = Inner::Ready(streaming);
        }
    }
}

fn encoding_headers(encoding: Option<CompressionEncoding>) -> HeaderMap {
    let mut headers = HeaderMap::new();
    if let Some(encoding) = encoding {
        headers.insert(GRPC_ENCODING, encoding.header_value());
    }
    headers
}

impl<T: Message + Default> Stream for RecvStream<T> {
    type Item = Result<T, volo_grpc::Status>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self.get_mut().state;
        if this.ended {
            return Poll::Ready(None);
        }
        let is_request = this.is_request;
        let streaming = this.streaming();
        // Decoded here, straight into the item volo-grpc's callers take:
        // a message moves once, not through the stream's own result first.
        match ready!(streaming.poll_raw(cx)) {
            Some(Ok(message)) => Poll::Ready(Some(match T::decode(message) {
                Ok(item) => Ok(item),
                // prost's text alone, as tonic (and this crate's tonic
                // adapter) send it.
                Err(err) => {
                    let status = Status::internal(err.to_string());
                    Err(streaming.refuse_message(status).into())
                }
            })),
            Some(Err(status)) if is_request && status.code() == Code::Cancelled => {
                this.ended = true;
                Poll::Ready(None)
            }
            Some(Err(status)) => Poll::Ready(Some(Err(status.into()))),
            None => {
                this.ended = true;
                Poll::Ready(None)
            }
        }
    }
}

impl<T> fmt::Debug for RecvStream<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecvStream")
            .field(
                "inner",
                match &self.state.inner {
                    Inner::Ready(streaming) => streaming as &dyn fmt::Debug,
                    Inner::AwaitingHeaders { .. } => &"awaiting the response's headers",
                    Inner::Moving => &"moving",
                },
            )
            .field("is_request", &self.state.is_request)
            .finish()
    }
}

/// volo-grpc's body with this crate's `Status` as its error.
pub(super) struct VoloBody {
    inner: BoxBody,
}

impl Body for VoloBody {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> PolledFrame<Status> {
        Pin::new(&mut self.inner)
            .poll_frame(cx)
            .map_err(Status::from)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
