//! A stream of decoded messages over an HTTP body, decoded in the caller's task.

use std::error::Error as StdError;
use std::fmt;
use std::future::poll_fn;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use futures_core::Stream;
use http::{HeaderMap, StatusCode};
use http_body::Body;
use http_body_util::BodyExt;

use super::assembler::{Decoded, EnvelopeAssembler};
use crate::compression::CompressionEncoding;
use crate::envelope::Limits;
use crate::observe::{self, Method, Refusal, Side};
use crate::status::{Code, Status};

/// Turns one received message into an item.
///
/// The message's bytes are its own (see [`MessageBuffers`](super::MessageBuffers)):
/// a decoder may keep them, or slices of them, without pinning anything else.
pub trait MessageDecoder {
    /// The decoded item.
    type Item;

    /// Decodes one message. An error ends the stream with that status.
    fn decode(&mut self, message: Bytes) -> Result<Self::Item, Status>;
}

/// A [`MessageDecoder`] that yields each message's bytes as they are.
#[derive(Clone, Copy, Debug, Default)]
pub struct BytesDecoder;

impl MessageDecoder for BytesDecoder {
    type Item = Bytes;

    fn decode(&mut self, message: Bytes) -> Result<Bytes, Status> {
        Ok(message)
    }
}

/// A body as the stream reads it: boxed, its errors `Status`.
pub(crate) type BoxBody = Pin<Box<dyn Body<Data = Bytes, Error = Status> + Send + 'static>>;

/// Which side of a call the body belongs to.
#[derive(Clone, Copy, Debug)]
enum Role {
    /// A request body read by a server: its end is a clean end.
    Request,
    /// A response body read by a client: its end carries the call's status.
    Response(StatusCode),
}

/// A stream of decoded messages read from an `http_body::Body`.
///
/// Frames are pulled from the body, assembled by an [`EnvelopeAssembler`]
/// and decoded by a [`MessageDecoder`] inside `poll_next`, in the task that
/// polls the stream: there is no spawned reader and no channel, so a message
/// is read only when the caller asks for one and backpressure reaches the
/// peer through HTTP flow control.
///
/// After an error (a protocol error, a body error, a decode error, or for a
/// response a non-`OK` status) the stream yields that error once and then
/// ends; it never reads further bytes of the body.
///
/// # Dropping early
///
/// Dropping a `Streaming` drops its body. On HTTP/2 that releases the
/// stream's buffered data and flow-control window at once, and the stream is
/// reset (`RST_STREAM` with `CANCEL`) once no other handle to it is left;
/// the connection and its other streams are unaffected. On HTTP/1.1 hyper
/// reads what is already buffered and otherwise closes the connection rather
/// than reuse it with an unread body. To keep an HTTP/1.1 connection
/// reusable, call [`drain`](Self::drain), which discards the rest of the
/// body up to a bound you choose.
///
/// `Streaming` is `Unpin`, and `Send` when the decoder is.
///
/// ```
/// use bytes::Bytes;
/// use grpc_stream_codec::decode::{BytesDecoder, Streaming};
/// use http_body_util::Full;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), grpc_stream_codec::status::Status> {
/// // A request body with one message, "hi".
/// let body = Full::new(Bytes::from_static(b"\0\0\0\0\x02hi"));
/// let mut stream = Streaming::new_request(body, BytesDecoder, None);
/// assert_eq!(stream.message().await?, Some(Bytes::from_static(b"hi")));
/// assert_eq!(stream.message().await?, None);
/// # Ok(())
/// # }
/// ```
pub struct Streaming<D> {
    decoder: D,
    /// `None` once the body has ended or the stream has failed.
    body: Option<BoxBody>,
    assembler: EnvelopeAssembler,
    role: Role,
    trailers: Option<HeaderMap>,
    /// How the stream ended, once it has.
    outcome: Option<Result<(), Status>>,
    /// Whether the outcome has been reported through `poll_next`.
    reported: bool,
    /// The call's method, for what is recorded of the stream (kept only
    /// when something records it).
    method: Method,
}

impl<D: MessageDecoder> Streaming<D> {
    /// A stream over a request body received by a server.
    ///
    /// `encoding` is the request's `grpc-encoding`
    /// ([`CompressionEncoding::from_encoding_header`]). The receive limit is
    /// [`Limits::default`] until [`with_limits`](Self::with_limits).
    pub fn new_request<B>(body: B, decoder: D, encoding: Option<CompressionEncoding>) -> Self
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn StdError + Send + Sync>>,
    {
        Self::request_of(status_errors(body), decoder, encoding)
    }

    /// [`new_request`](Self::new_request) over a body whose errors are
    /// already `Status`, as the call layer's are: read as it is, with no
    /// wrapper to convert them.
    pub(crate) fn request_of(
        body: BoxBody,
        decoder: D,
        encoding: Option<CompressionEncoding>,
    ) -> Self {
        Self::with_parts(body, decoder, Role::Request, Ok(encoding))
    }

    /// A stream over a response body received by a client, given the
    /// response's status and headers.
    ///
    /// The stream's last item is the call's status when it is not `OK`, read
    /// from the trailers (or from the headers of a trailers-only response).
    /// A response without a `grpc-status` fails with the status the gRPC
    /// spec derives from the HTTP status, or `internal` when that is `200`;
    /// a non-`200` response is not read at all. The `grpc-encoding` header
    /// gives the encoding of compressed messages.
    pub fn new_response<B>(status: StatusCode, headers: &HeaderMap, body: B, decoder: D) -> Self
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn StdError + Send + Sync>>,
    {
        Self::response_of(status, headers, status_errors(body), decoder)
    }

    /// [`new_response`](Self::new_response) over a body whose errors are
    /// already `Status`.
    pub(crate) fn response_of(
        status: StatusCode,
        headers: &HeaderMap,
        body: BoxBody,
        decoder: D,
    ) -> Self {
        let trailers_only = headers.contains_key(crate::status::GRPC_STATUS);
        let encoding = CompressionEncoding::from_encoding_header(headers);
        let mut stream = Self::with_parts(body, decoder, Role::Response(status), encoding);
        if trailers_only {
            stream.trailers = Some(headers.clone());
        } else if status != StatusCode::OK {
            stream.finish_with(Err(Status::from_http_status(status)));
        }
        stream
    }

    fn with_parts(
        body: BoxBody,
        decoder: D,
        role: Role,
        encoding: Result<Option<CompressionEncoding>, Status>,
    ) -> Self {
        let (encoding, refused) = match encoding {
            Ok(encoding) => (encoding, None),
            Err(status) => (None, Some(status)),
        };
        let mut stream = Streaming {
            decoder,
            body: Some(body),
            assembler: EnvelopeAssembler::new(Limits::default(), encoding),
            role,
            trailers: None,
            outcome: None,
            reported: false,
            method: Method::default(),
        };
        if let Some(status) = refused {
            stream.finish_with(Err(status));
        }
        stream
    }

    /// Names the call's method in what is recorded of this stream:
    /// refusals and peer errors (and, for a recorded server call, the bytes
    /// received).
    #[cfg(any(feature = "tonic", feature = "volo"))]
    pub(crate) fn set_method(&mut self, method: Method) {
        // A `200` response fails as it is made only for a `grpc-encoding`
        // this build cannot read: its messages are refused unread.
        if let (Role::Response(StatusCode::OK), Some(Err(status))) = (&self.role, &self.outcome) {
            let reason = Refusal::UnsupportedEncoding;
            observe::message_refused(Side::Client, &method, reason, status);
        }
        self.method = method;
    }

    /// [`with_limits`](Self::with_limits) in place.
    #[cfg(any(feature = "tonic", feature = "volo"))]
    pub(crate) fn set_limits(&mut self, limits: Limits) {
        self.assembler.set_limits(limits);
    }

    /// [`with_budget`](Self::with_budget) in place.
    #[cfg(any(feature = "tonic", feature = "volo"))]
    pub(crate) fn set_budget(&mut self, budget: crate::budget::Budget) {
        self.assembler.set_budget(budget);
    }

    /// The end of the call this stream reads.
    fn side(&self) -> Side {
        match self.role {
            Role::Request => Side::Server,
            Role::Response(_) => Side::Client,
        }
    }

    /// Sets the receive limit (default 4 MiB) for messages not yet started.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.assembler.set_limits(limits);
        self
    }

    /// Counts what this stream allocates for received messages against a
    /// shared receive budget (see [`crate::budget`]). Call it before
    /// reading. When the budget cannot grant, the stream stops polling its
    /// body (HTTP/2 flow control then holds the peer) until memory is
    /// released, and fails with `resource_exhausted` after the budget's
    /// wait.
    ///
    /// ```
    /// use bytes::Bytes;
    /// use grpc_stream_codec::budget::SharedBudget;
    /// use grpc_stream_codec::decode::{BytesDecoder, Streaming};
    /// use http_body_util::Full;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), grpc_stream_codec::status::Status> {
    /// let budget = SharedBudget::new(1 << 20);
    /// let mut wire = vec![0, 0, 0, 0x40, 0]; // one 16 KiB message
    /// wire.resize(5 + 16 * 1024, 7);
    /// let body = Full::new(Bytes::from(wire));
    /// let mut stream = Streaming::new_request(body, BytesDecoder, None).with_budget(budget.clone());
    /// let message = stream.message().await?.expect("one message");
    /// // The message carries its share until it is dropped.
    /// assert_eq!(budget.stats().in_use, 16 * 1024);
    /// drop(message);
    /// assert_eq!(budget.stats().in_use, 0);
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_budget(mut self, budget: impl Into<crate::budget::Budget>) -> Self {
        self.assembler.set_budget(budget);
        self
    }

    /// The next message, or `None` at the end of a successful stream.
    pub async fn message(&mut self) -> Result<Option<D::Item>, Status> {
        match poll_fn(|cx| Pin::new(&mut *self).poll_next(cx)).await {
            Some(Ok(item)) => Ok(Some(item)),
            Some(Err(status)) => Err(status),
            None => Ok(None),
        }
    }

    /// Reads the body to its end and returns the trailers.
    ///
    /// Messages not yet read are discarded without being decoded. For a
    /// response, a non-`OK` status (or a missing one) is returned as the
    /// error; a stream that failed earlier returns its error again. The
    /// trailers are handed out once; later calls return `Ok(None)`.
    pub async fn trailers(&mut self) -> Result<Option<HeaderMap>, Status> {
        while poll_fn(|cx| self.poll_message(cx)).await.is_some() {}
        self.ended()
    }

    /// The end of a unary request whose one message has been read: its
    /// trailers, or `INTERNAL` if another message follows (a protocol
    /// violation grpc-go refuses too; it is not decoded), or the stream's
    /// error.
    #[cfg(any(feature = "tonic", feature = "volo"))]
    pub(crate) async fn unary_request_end(&mut self) -> Result<Option<HeaderMap>, Status> {
        match poll_fn(|cx| self.poll_message(cx)).await {
            Some(Ok(_)) => {
                let status = Status::internal(crate::call::SECOND_REQUEST_MESSAGE);
                Err(self.fail(status))
            }
            Some(Err(status)) => Err(status),
            None => self.ended(),
        }
    }

    /// What an ended stream gives its reader last: its error again, or its
    /// trailers, once.
    fn ended(&mut self) -> Result<Option<HeaderMap>, Status> {
        match &self.outcome {
            Some(Err(status)) => {
                self.reported = true;
                Err(status.clone())
            }
            _ => Ok(self.trailers.take()),
        }
    }

    /// Discards the rest of the body, reading at most `limit` more bytes, so
    /// an HTTP/1.1 connection can be reused. Returns whether the body ended
    /// within the limit. Nothing is assembled or decoded.
    pub async fn drain(mut self, limit: usize) -> bool {
        let mut left = limit;
        let Some(body) = self.body.as_mut() else {
            return true;
        };
        loop {
            match poll_fn(|cx| body.as_mut().poll_frame(cx)).await {
                None => return true,
                Some(Err(_)) => return false,
                Some(Ok(frame)) => {
                    let len = frame.data_ref().map_or(0, Bytes::len);
                    match left.checked_sub(len) {
                        Some(rest) => left = rest,
                        None => return false,
                    }
                }
            }
        }
    }

    /// The next raw message, or `None` once the stream has ended (its
    /// outcome is then in `self.outcome`).
    #[inline]
    fn poll_message(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, Status>>> {
        let polled = self.read_message(cx);
        if polled.is_ready() {
            self.method.set_received(self.assembler.message_bytes());
        }
        polled
    }

    /// [`poll_message`](Self::poll_message), before the message bytes read
    /// are counted.
    fn read_message(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, Status>>> {
        loop {
            if self.outcome.is_some() {
                return Poll::Ready(None);
            }
            match self.assembler.next() {
                Ok(Some(Decoded::Message(message))) => return Poll::Ready(Some(Ok(message))),
                Ok(Some(Decoded::EndStream(trailers))) => {
                    self.add_trailers(*trailers);
                    continue;
                }
                Ok(None) => {
                    if self.assembler.is_blocked() {
                        // Not polling the body is the backpressure.
                        match ready!(self.assembler.poll_budget(cx)) {
                            Ok(()) => continue,
                            Err(status) => return Poll::Ready(Some(Err(self.fail(status)))),
                        }
                    }
                }
                Err(status) => return Poll::Ready(Some(Err(self.refuse(status)))),
            }
            let Some(body) = self.body.as_mut() else {
                // Only a failed or finished stream drops its body.
                return Poll::Ready(None);
            };
            match ready!(body.as_mut().poll_frame(cx)) {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => {
                        self.assembler.push(data);
                    }
                    Err(frame) => {
                        if let Ok(trailers) = frame.into_trailers() {
                            self.add_trailers(trailers);
                        }
                    }
                },
                Some(Err(status)) => {
                    // The deadline ends a body too; its own instrument
                    // counts it.
                    if status.code() != Code::DeadlineExceeded {
                        observe::peer_error(self.side(), &self.method, &status);
                    }
                    return Poll::Ready(Some(Err(self.fail(status))));
                }
                None => {
                    self.body = None;
                    if let Err(status) = self.assembler.finish() {
                        return Poll::Ready(Some(Err(self.refuse(status))));
                    }
                    if let Err(status) = self.end_status() {
                        return Poll::Ready(Some(Err(self.fail(status))));
                    }
                    self.finish_with(Ok(()));
                }
            }
        }
    }

    /// The next message's bytes, undecoded, with everything else
    /// `poll_next` reports (the stream's errors, an outcome set when it was
    /// made): for an adapter that decodes straight into its own item type,
    /// without a result of this stream's moved into its own.
    #[cfg(feature = "volo")]
    #[inline]
    pub(crate) fn poll_raw(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, Status>>> {
        match ready!(self.poll_message(cx)) {
            Some(message) => Poll::Ready(Some(message)),
            None => Poll::Ready(self.unreported_outcome().map(Err)),
        }
    }

    /// Ends the stream with `status`, the decoder's refusal of a message:
    /// the one place such a refusal is recorded.
    pub(crate) fn refuse_message(&mut self, status: Status) -> Status {
        let side = self.side();
        observe::message_refused(side, &self.method, Refusal::BadMessage, &status);
        self.fail(status)
    }

    /// An outcome set outside `poll_message` (when the stream was made),
    /// once: it has not been reported yet.
    fn unreported_outcome(&mut self) -> Option<Status> {
        match &self.outcome {
            Some(Err(status)) if !self.reported => {
                self.reported = true;
                Some(status.clone())
            }
            _ => None,
        }
    }

    /// The status a complete body ends the call with.
    fn end_status(&self) -> Result<(), Status> {
        let Role::Response(http_status) = self.role else {
            return Ok(());
        };
        match self.trailers.as_ref().and_then(Status::from_header_map) {
            Some(status) if status.code() == Code::Ok => Ok(()),
            Some(status) => Err(status),
            None if http_status != StatusCode::OK => Err(Status::from_http_status(http_status)),
            None => Err(Status::internal(
                "protocol error: response ended without a grpc-status",
            )),
        }
    }

    fn add_trailers(&mut self, trailers: HeaderMap) {
        match &mut self.trailers {
            Some(existing) => existing.extend(trailers),
            None => self.trailers = Some(trailers),
        }
    }

    /// Ends the stream with the status the envelope assembler refused a
    /// message with: the one place such a refusal is recorded.
    fn refuse(&mut self, status: Status) -> Status {
        let reason = Refusal::of_envelope_error(&status);
        observe::message_refused(self.side(), &self.method, reason, &status);
        self.fail(status)
    }

    /// Ends the stream with `status`, already reported to the caller.
    fn fail(&mut self, status: Status) -> Status {
        self.finish_with(Err(status.clone()));
        self.reported = true;
        status
    }

    fn finish_with(&mut self, outcome: Result<(), Status>) {
        // Dropping the body is what stops the peer: nothing more is read.
        self.body = None;
        self.outcome = Some(outcome);
    }
}

// Nothing inside is pinned structurally: the body is boxed and pinned on
// its own, and the decoder is only ever used through `&mut`.
impl<D> Unpin for Streaming<D> {}

impl<D: MessageDecoder> Stream for Streaming<D> {
    type Item = Result<D::Item, Status>;

    // Inlined into the adapters' streams: a call per message otherwise.
    #[inline]
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        match ready!(this.poll_message(cx)) {
            Some(Ok(message)) => match this.decoder.decode(message) {
                Ok(item) => Poll::Ready(Some(Ok(item))),
                Err(status) => Poll::Ready(Some(Err(this.refuse_message(status)))),
            },
            Some(Err(status)) => Poll::Ready(Some(Err(status))),
            None => Poll::Ready(this.unreported_outcome().map(Err)),
        }
    }
}

impl<D> fmt::Debug for Streaming<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Streaming")
            .field("role", &self.role)
            .field("assembler", &self.assembler)
            .field("outcome", &self.outcome)
            .finish_non_exhaustive()
    }
}

/// `body` boxed with its errors as `Status`.
fn status_errors<B>(body: B) -> BoxBody
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn StdError + Send + Sync>>,
{
    Box::pin(body.map_err(|error| status_from_body_error(error.into())))
}

/// The status for a body error: the error itself when it is a [`Status`]
/// (or has one as its source), otherwise `unknown` with the error's text.
fn status_from_body_error(error: Box<dyn StdError + Send + Sync>) -> Status {
    let error = match error.downcast::<Status>() {
        Ok(status) => return *status,
        Err(error) => error,
    };
    let mut source = error.source();
    while let Some(cause) = source {
        if let Some(status) = cause.downcast_ref::<Status>() {
            return status.clone();
        }
        source = cause.source();
    }
    Status::new(
        Code::Unknown,
        format!("error reading the message body: {error}"),
    )
}
