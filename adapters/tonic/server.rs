//! Full framing for tonic servers: [`Grpc`] in place of `tonic::server::Grpc`,
//! and the streaming-request service traits over this crate's
//! [`Streaming`].
//!
//! Generated code reaches these through the [build hook](super::build);
//! nothing here is called by hand in a normal service. Everything above the
//! `Grpc` (tower layers, interceptors, `Routes`, tonic-web, `grpc-timeout`)
//! is tonic's and works as before.

use std::future::Future;
use std::marker::PhantomData;

use futures_core::Stream;
use http::header::CONTENT_TYPE;
use http_body::Body as HttpBody;
use tonic::body::Body;
use tonic::codec::{
    CompressionEncoding as TonicEncoding, EnabledCompressionEncodings,
    SingleMessageCompressionOverride,
};
use tonic::codegen::StdError;
use tonic::metadata::GRPC_CONTENT_TYPE;
use tonic::server::{ServerStreamingService, UnaryService};
use tower_service::Service;

use super::ProstMessageEncoder;
use super::recv::bytes_body;
use super::budget::tagged_budget;
use super::compression::{
    ENCODING_NAME, accept_and_limits, encoding_from_tonic, encodings_from_tonic,
};
use super::framing_codec::FramingCodec;
use super::metadata::merge_metadata;
use super::recv::Streaming;
use super::send::StatusErrors;
use crate::call::{
    MISSING_REQUEST_MESSAGE, Pump, RequestHead, RequestScope, ScopedCall, ServerResponse, Timer,
    read_request_head, refused, request_scope_slots, timer_for,
};
use crate::compression::{Compression, CompressionEncoding, EncodingSet};
use crate::encode::{EncodeBody, EncodeConfig, EncodeStream, default_batch_threshold};
use crate::envelope::Limits;
use crate::observe::{self, ServerCall};
use crate::status::Status;

/// A client-streaming method, as generated code implements it: in place of
/// `tonic::server::ClientStreamingService`, with this crate's
/// [`Streaming`] as the request.
pub trait ClientStreamingService<R> {
    /// The response message.
    type Response;
    /// The handler's future.
    type Future: Future<Output = Result<tonic::Response<Self::Response>, tonic::Status>>;

    /// Handles one call.
    fn call(&mut self, request: tonic::Request<Streaming<R>>) -> Self::Future;
}

impl<S, R, M> ClientStreamingService<R> for S
where
    S: Service<tonic::Request<Streaming<R>>, Response = tonic::Response<M>, Error = tonic::Status>,
{
    type Response = M;
    type Future = S::Future;

    fn call(&mut self, request: tonic::Request<Streaming<R>>) -> Self::Future {
        Service::call(self, request)
    }
}

/// A bidi-streaming method, as generated code implements it: in place of
/// `tonic::server::StreamingService`, with this crate's [`Streaming`] as the
/// request.
pub trait StreamingService<R> {
    /// The response messages.
    type Response;
    /// The stream of response messages.
    type ResponseStream: Stream<Item = Result<Self::Response, tonic::Status>>;
    /// The handler's future.
    type Future: Future<Output = Result<tonic::Response<Self::ResponseStream>, tonic::Status>>;

    /// Handles one call.
    fn call(&mut self, request: tonic::Request<Streaming<R>>) -> Self::Future;
}

impl<S, R, St, M> StreamingService<R> for S
where
    S: Service<tonic::Request<Streaming<R>>, Response = tonic::Response<St>, Error = tonic::Status>,
    St: Stream<Item = Result<M, tonic::Status>>,
{
    type Response = M;
    type ResponseStream = St;
    type Future = S::Future;

    fn call(&mut self, request: tonic::Request<Streaming<R>>) -> Self::Future {
        Service::call(self, request)
    }
}

/// Serves one gRPC call on this crate's framing: the same builder and call
/// API as `tonic::server::Grpc`, which generated code uses after the
/// [build hook](super::build) has pointed it here.
///
/// - Requests are read by the frame-fed decoder: the limit
///   (`max_decoding_message_size`, default 4 MiB) is checked on each header
///   before anything is allocated (`resource_exhausted`, "message size N
///   exceeds limit M"), decompression is bounded by it, a body cut inside a
///   message is `internal`, and no buffer outlives the message it held.
/// - Responses are written by [`EncodeStream`]: every message the handler's
///   stream has ready goes into one batch of linked byte nodes (up to 32 KiB),
///   each encoded into an exact reservation, and the trailers carry the
///   handler's status (code, message, details, metadata) — also after k
///   messages. A handler error before any response is a trailers-only answer.
/// - Compression is negotiated as tonic does: `grpc-encoding` must be one
///   this service accepts (else `unimplemented`, listing what it accepts in
///   `grpc-accept-encoding`), and responses use the first encoding of the
///   client's `grpc-accept-encoding` that the service may send.
#[derive(Debug)]
pub struct Grpc<C> {
    // The codec only names the message types.
    codec: PhantomData<fn() -> C>,
    accept: EncodingSet,
    send: EncodingSet,
    limits: Limits,
    batch_threshold: usize,
}

impl<C: FramingCodec> Grpc<C> {
    /// A call handler using `codec`'s message types, batching responses up
    /// to [`default_batch_threshold`].
    pub fn new(_codec: C) -> Self {
        Grpc {
            codec: PhantomData,
            accept: EncodingSet::empty(),
            send: EncodingSet::empty(),
            limits: Limits::default(),
            batch_threshold: default_batch_threshold(),
        }
    }

    /// Compresses responses with `encoding` when the client accepts it.
    pub fn send_compressed(mut self, encoding: TonicEncoding) -> Self {
        if let Some(encoding) = encoding_from_tonic(encoding) {
            self.send = self.send.with(encoding);
        }
        self
    }

    accept_and_limits! {
        /// Accepts requests compressed with `encoding`.
        accept_compressed;
        /// The largest request message accepted, after decompression (default
        /// 4 MiB).
        max_decoding_message_size;
        /// The largest response message sent (default unlimited); a larger one
        /// ends the call with `resource_exhausted`.
        max_encoding_message_size;
    }

    /// Applies a generated server's compression settings.
    #[doc(hidden)]
    pub fn apply_compression_config(
        mut self,
        accept_encodings: EnabledCompressionEncodings,
        send_encodings: EnabledCompressionEncodings,
    ) -> Self {
        self.accept = encodings_from_tonic(accept_encodings);
        self.send = encodings_from_tonic(send_encodings);
        self
    }

    /// Applies a generated server's size limits.
    #[doc(hidden)]
    pub fn apply_max_message_size_config(
        mut self,
        max_decoding_message_size: Option<usize>,
        max_encoding_message_size: Option<usize>,
    ) -> Self {
        if let Some(limit) = max_decoding_message_size {
            self = self.max_decoding_message_size(limit);
        }
        if let Some(limit) = max_encoding_message_size {
            self = self.max_encoding_message_size(limit);
        }
        self
    }

    /// Handles a unary call.
    pub async fn unary<S, B>(
        &mut self,
        mut service: S,
        req: http::Request<B>,
    ) -> http::Response<Body>
    where
        S: UnaryService<C::Decode, Response = C::Encode>,
        B: HttpBody + Send + 'static,
        B::Error: Into<StdError> + Send,
    {
        let Opened { call, send, head, .. } = self.open(&req, false);
        let request = match self.single_request(req, &call, head).await {
            Ok(request) => request,
            Err(status) => return trailers_only(status, call),
        };
        let response = service.call(request).await;
        let send = send.filter(|_| !compression_disabled(&response));
        self.respond(response.map(|r| r.map(single)), send, None, None, call)
    }

    /// Handles a server-streaming call.
    pub async fn server_streaming<S, B>(
        &mut self,
        mut service: S,
        req: http::Request<B>,
    ) -> http::Response<Body>
    where
        S: ServerStreamingService<C::Decode, Response = C::Encode>,
        S::ResponseStream: Send + 'static,
        B: HttpBody + Send + 'static,
        B::Error: Into<StdError> + Send,
    {
        let Opened { call, timer, send, head } = self.open(&req, true);
        let request = match self.single_request(req, &call, head).await {
            Ok(request) => request,
            Err(status) => return trailers_only(status, call),
        };
        let response = service.call(request).await;
        self.respond(response, send, timer, None, call)
    }

    /// Handles a client-streaming call.
    pub async fn client_streaming<S, B>(
        &mut self,
        mut service: S,
        req: http::Request<B>,
    ) -> http::Response<Body>
    where
        S: ClientStreamingService<C::Decode, Response = C::Encode>,
        B: HttpBody + Send + 'static,
        B::Error: Into<StdError> + Send + 'static,
    {
        let Opened { call, send, head, .. } = self.open(&req, false);
        let (request, scope) = match self.scoped_request(req, &call, head) {
            Ok(request) => request,
            Err(status) => return trailers_only(status, call),
        };
        // The request was read within the call (or its read-ahead is
        // dropped with the handler's stream).
        let (response, _pump) = ScopedCall::<TonicSlots, _>::new(service.call(request), scope).await;
        let send = send.filter(|_| !compression_disabled(&response));
        self.respond(response.map(|r| r.map(single)), send, None, None, call)
    }

    /// Handles a bidi-streaming call.
    pub async fn streaming<S, B>(
        &mut self,
        mut service: S,
        req: http::Request<B>,
    ) -> http::Response<Body>
    where
        S: StreamingService<C::Decode, Response = C::Encode> + Send,
        S::ResponseStream: Send + 'static,
        B: HttpBody + Send + 'static,
        B::Error: Into<StdError> + Send,
    {
        let Opened { call, timer, send, head } = self.open(&req, true);
        let (request, scope) = match self.scoped_request(req, &call, head) {
            Ok(request) => request,
            Err(status) => return trailers_only(status, call),
        };
        let (response, rest) = ScopedCall::<TonicSlots, _>::new(service.call(request), scope).await;
        self.respond(response, send, timer, rest.pump, call)
    }

    /// What every kind of call starts with (see [`Opened`]); `streamed`:
    /// its answer is a stream a deadline may cut short.
    fn open<B>(&self, req: &http::Request<B>, streamed: bool) -> Opened {
        let send = self.send.negotiate(req.headers());
        let head = read_request_head(req.headers(), self.accept);
        let timeout = head.as_ref().ok().and_then(|head| head.timeout);
        // The deadline runs from the request's arrival.
        let timer = timeout.filter(|_| streamed).map(timer_for);
        let call = observe::server_call(req, |_| timeout);
        Opened {
            call,
            timer,
            send,
            head,
        }
    }

    /// The request of a unary or server-streaming call: exactly one message.
    async fn single_request<B>(
        &self,
        req: http::Request<B>,
        call: &ServerCall,
        head: Result<RequestHead, Status>,
    ) -> Result<tonic::Request<C::Decode>, tonic::Status>
    where
        B: HttpBody + Send + 'static,
        B::Error: Into<StdError> + Send,
    {
        let (metadata, extensions, mut messages) =
            self.streaming_request(req, call, head)?.into_parts();
        let message = messages
            .message()
            .await?
            .ok_or_else(|| tonic::Status::internal(MISSING_REQUEST_MESSAGE))?;
        let mut request = tonic::Request::from_parts(metadata, extensions, message);
        if let Some(trailers) = messages.unary_request_end().await? {
            merge_metadata(request.metadata_mut(), trailers);
        }
        Ok(request)
    }

    fn streaming_request<B>(
        &self,
        req: http::Request<B>,
        call: &ServerCall,
        head: Result<RequestHead, Status>,
    ) -> Result<tonic::Request<Streaming<C::Decode>>, tonic::Status>
    where
        B: HttpBody + Send + 'static,
        B::Error: Into<StdError>,
    {
        // tonic hands binary metadata to handlers as sent and ignores a
        // malformed deadline; both are refused here, as on volo.
        let encoding = head
            .map_err(|status| refused(req.uri().path(), status))?
            .encoding;
        let (parts, body) = req.into_parts();
        let messages = Streaming::new_request(bytes_body(body), encoding, self.limits)
            .observed(call.method(parts.uri.path()))
            .with_optional_budget(tagged_budget(&parts.extensions));
        Ok(tonic::Request::from_http(http::Request::from_parts(
            parts, messages,
        )))
    }

    /// A streaming request whose body stays with the call's scope until
    /// the handler reads it, and is read ahead of the handler once it may
    /// need it (see [`RequestScope`]).
    fn scoped_request<B>(
        &self,
        req: http::Request<B>,
        call: &ServerCall,
        head: Result<RequestHead, Status>,
    ) -> Result<(StreamingRequest<C::Decode>, RequestScope<TransportBody>), tonic::Status>
    where
        B: HttpBody + Send + 'static,
        B::Error: Into<StdError>,
    {
        let budget = tagged_budget(req.extensions());
        let (parts, body) = req.into_parts();
        let body: TransportBody = Box::pin(bytes_body(body));
        let (scope, body) = RequestScope::holding::<TonicSlots>(body, budget);
        let request_call = body.call();
        let mut request =
            self.streaming_request(http::Request::from_parts(parts, body), call, head)?;
        request.get_mut().set_request_call(request_call);
        Ok((request, scope))
    }

    /// The handler's answer as the response: its messages encoded, ended
    /// at the deadline of `timer`, pumping the request's read-ahead, and
    /// recorded in `call`.
    fn respond<St>(
        &self,
        response: Result<tonic::Response<St>, tonic::Status>,
        send: Option<CompressionEncoding>,
        timer: Option<Timer>,
        pump: Option<Pump>,
        mut call: ServerCall,
    ) -> http::Response<Body>
    where
        St: Stream<Item = Result<C::Encode, tonic::Status>> + Send + 'static,
    {
        let (metadata, messages, extensions) = match response {
            Ok(response) => response.into_parts(),
            Err(status) => return trailers_only(status, call),
        };
        let mut headers = metadata.into_headers();
        headers.insert(CONTENT_TYPE, GRPC_CONTENT_TYPE);
        if let Some(encoding) = send {
            headers.insert(ENCODING_NAME, encoding.header_value());
        }
        let config = EncodeConfig::default()
            .with_compression(send.map(Compression::new))
            .with_batch_threshold(self.batch_threshold)
            .with_limits(self.limits);
        let encoder = ProstMessageEncoder::<C::Encode>::default();
        let mut body = EncodeBody::server(EncodeStream::new(
            StatusErrors::new(messages),
            encoder,
            config,
        ));
        // Without a deadline to cut it short, the body itself tells the
        // record what it sends and how it ends, and needs no watcher for
        // that.
        if timer.is_none() {
            body.record_in(std::mem::take(&mut call));
        }
        // One box, whatever watches the body.
        let body = match ServerResponse::watching(body, timer, pump, call) {
            Ok(watched) => Body::new(watched),
            Err(body) => Body::new(body),
        };
        let mut response = http::Response::new(body);
        *response.headers_mut() = headers;
        *response.extensions_mut() = extensions;
        response
    }
}

/// A streaming request as a handler takes it.
type StreamingRequest<M> = tonic::Request<Streaming<M>>;

/// A request's transport body as its call's scope keeps it.
type TransportBody =
    std::pin::Pin<Box<dyn HttpBody<Data = bytes::Bytes, Error = crate::status::Status> + Send>>;

request_scope_slots!(
    /// Where tonic calls keep their request streams' bodies.
    pub(super) TonicSlots,
    TransportBody
);

/// What every kind of call starts with, from the request's headers read
/// once.
struct Opened {
    /// The call's record.
    call: ServerCall,
    /// The timer of its deadline, when its answer is a stream the deadline
    /// may cut short.
    timer: Option<Timer>,
    /// The compression to answer with.
    send: Option<CompressionEncoding>,
    /// The headers as the call layer reads them, or the refusal they call
    /// for (answered once the call's record has started).
    head: Result<RequestHead, Status>,
}

/// A single response message as a stream.
fn single<M>(message: M) -> tonic::codegen::tokio_stream::Once<Result<M, tonic::Status>> {
    tonic::codegen::tokio_stream::once(Ok(message))
}

/// Whether the handler turned compression off for this one response
/// (`tonic::Response::disable_compression`).
fn compression_disabled<M>(response: &Result<tonic::Response<M>, tonic::Status>) -> bool {
    response.as_ref().is_ok_and(|response| {
        response
            .extensions()
            .get::<SingleMessageCompressionOverride>()
            == Some(&SingleMessageCompressionOverride::Disable)
    })
}

impl<C> Clone for Grpc<C> {
    fn clone(&self) -> Self {
        Grpc {
            codec: PhantomData,
            accept: self.accept,
            send: self.send,
            limits: self.limits,
            batch_threshold: self.batch_threshold,
        }
    }
}

/// `status` as a trailers-only answer, which ends the call's record.
fn trailers_only(status: tonic::Status, mut call: ServerCall) -> http::Response<Body> {
    let response = status.into_http();
    call.response_headers(response.headers());
    response
}
