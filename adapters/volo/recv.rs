//! `RecvStream`: volo-grpc's receiving stream, on [`Streaming`].

use std::fmt;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

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
use super::call_guard::arm_request_pump;
use super::call_scope::{ResponseHeaders, scoped_response_headers};
use super::compression::encoding_from_volo;
use super::limits::limits_for_new_stream;
use super::metadata::warn_unshielded;
use super::trailers_only::WithoutLayer;
use crate::PolledFrame;
use crate::budget::Budget;
use crate::call::{Pump, SECOND_REQUEST_MESSAGE};
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
    inner: Inner<T>,
    limits: Limits,
    /// The receive budget, for a stream made once the encoding is known.
    budget: Option<Budget>,
    /// The read-ahead of a server's request, counted against `budget`.
    request_pump: Option<Pump>,
    is_request: bool,
    ended: bool,
}

// `Ready` is the state for the stream's whole life after the first read;
// boxing it would cost an allocation per stream to save bytes on a stack.
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
        let mut request_pump = None;
        let (inner, is_request) = match kind {
            Kind::Request => {
                // What the call's guard reads ahead counts against this
                // stream's budget.
                request_pump = arm_request_pump(budget.clone());
                if request_pump.is_none() {
                    warn_unshielded();
                }
                let method = request_pump.as_ref().map(Pump::method).unwrap_or_default();
                (
                    Streaming::new_request(VoloBody { inner: body }, decoder, encoding)
                        .observed(method),
                    true,
                )
            }
            Kind::Response(status) => {
                let method = client_method();
                if let Some(headers) = scoped_response_headers() {
                    return RecvStream {
                        inner: Inner::AwaitingHeaders {
                            status,
                            body,
                            headers,
                            encoding,
                            method,
                        },
                        limits,
                        budget,
                        request_pump: None,
                        is_request: false,
                        ended: false,
                    };
                }
                let headers = encoding_headers(encoding);
                let body = WithoutLayer::new(VoloBody { inner: body });
                (
                    Streaming::new_response(status, &headers, body, decoder).observed(method),
                    false,
                )
            }
        };
        let inner = inner.with_limits(limits);
        RecvStream {
            inner: Inner::Ready(with_budget(inner, budget.clone())),
            limits,
            budget,
            request_pump,
            is_request,
            ended: false,
        }
    }

    /// Counts this stream's received messages against `budget` instead of
    /// the one from a [`ReceiveBudgetLayer`](crate::budget::ReceiveBudgetLayer) or
    /// [`set_default_budget`](super::set_default_budget). Call it before
    /// reading.
    pub fn with_budget(mut self, budget: impl Into<Budget>) -> Self {
        let budget = budget.into();
        self.budget = Some(budget.clone());
        if let Some(pump) = &self.request_pump {
            pump.arm(Some(budget.clone()));
        }
        if let Inner::Ready(inner) = self.inner {
            self.inner = Inner::Ready(inner.with_budget(budget));
        }
        self
    }

    /// Sets the receive limit for messages not yet started. Call it before
    /// reading, e.g. on `req.into_inner()` in a handler.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        if let Inner::Ready(inner) = self.inner {
            self.inner = Inner::Ready(inner.with_limits(limits));
        }
        self
    }

    /// The decoding stream, made now if it waited for the response's
    /// headers.
    #[inline]
    fn streaming(&mut self) -> &mut Streaming<PilotaDecoder<T>> {
        if let Inner::AwaitingHeaders { .. } = self.inner
            && let Inner::AwaitingHeaders {
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
            let streaming = Streaming::new_response(
                status,
                &headers,
                VoloBody { inner: body },
                PilotaDecoder::new(),
            );
            let streaming = streaming.with_limits(self.limits).observed(method);
            self.inner = Inner::Ready(with_budget(streaming, self.budget.clone()));
        }
        match &mut self.inner {
            Inner::Ready(streaming) => streaming,
            // `Moving` never outlives the block above.
            Inner::AwaitingHeaders { .. } | Inner::Moving => {
                unreachable!("the stream was made above")
            }
        }
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
        if self.is_request && self.message().await?.is_some() {
            return Err(Status::new(Code::Internal, SECOND_REQUEST_MESSAGE).into());
        }
        match self.streaming().trailers().await {
            Ok(trailers) => Ok(trailers.map(MetadataMap::from_headers)),
            Err(status) => Err(status.into()),
        }
    }
}

fn with_budget<T>(
    streaming: Streaming<PilotaDecoder<T>>,
    budget: Option<Budget>,
) -> Streaming<PilotaDecoder<T>>
where
    T: Message + Default,
{
    match budget {
        Some(budget) => streaming.with_budget(budget),
        None => streaming,
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
        let this = self.get_mut();
        if this.ended {
            return Poll::Ready(None);
        }
        match Pin::new(this.streaming()).poll_next(cx) {
            Poll::Ready(Some(Err(status)))
                if this.is_request && status.code() == Code::Cancelled =>
            {
                this.ended = true;
                Poll::Ready(None)
            }
            Poll::Ready(Some(result)) => Poll::Ready(Some(result.map_err(Into::into))),
            Poll::Ready(None) => {
                this.ended = true;
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T> fmt::Debug for RecvStream<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecvStream")
            .field(
                "inner",
                match &self.inner {
                    Inner::Ready(streaming) => streaming as &dyn fmt::Debug,
                    Inner::AwaitingHeaders { .. } => &"awaiting the response's headers",
                    Inner::Moving => &"moving",
                },
            )
            .field("is_request", &self.is_request)
            .finish()
    }
}

/// volo-grpc's body with this crate's `Status` as its error.
struct VoloBody {
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
