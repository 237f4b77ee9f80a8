//! A tower layer that applies this crate's envelope rules to gRPC bodies
//! before tonic's framing reads them.
//!
//! tonic's own framing, which a codec cannot reach, answers an over-limit
//! message with `OUT_OF_RANGE` instead of `RESOURCE_EXHAUSTED`, treats a body
//! that ends right after a header as a clean end, and reserves whatever
//! length a header declares as soon as it reads it. The layers here close
//! those gaps:
//!
//! - [`RequestGuardLayer`] for servers guards every request body;
//! - [`ResponseGuardLayer`] for clients guards every response body.
//!
//! Both check each envelope header as it arrives (a length above the limit
//! ends the body with `resource_exhausted` and `message size N exceeds limit
//! M`; reserved flag bits are `internal`) and turn a body that ends inside an
//! envelope into an `internal` error. The error is a `tonic::Status`, which
//! tonic hands to the handler or caller as it is.
//!
//! # One limit
//!
//! A compressed message is held to the same receive limit once
//! decompressed, and refused with the same status as a plain one: the guard
//! decompresses it as it passes (see [`GuardedBody::with_encoding`]). tonic
//! keeps a receive limit of its own behind the guard
//! (`max_decoding_message_size`, 4 MiB unless set); [`guarded_server!`] and
//! [`guarded_client!`] set it, and tonic's send limit, from the guard's
//! [`Limits`], so that the guard, which sees every message first, is the one
//! that refuses. Set apart, a server guard whose limit is above a service's
//! tonic limit still answers with its own status: tonic refuses the
//! messages between the two, and the guard restates tonic's refusal
//! (`OUT_OF_RANGE`, or tonic's decompression-limit text) as its own
//! `RESOURCE_EXHAUSTED` `message size N exceeds limit M`, M being tonic's
//! limit. A client guard cannot: tonic's decoder sits above it and hands
//! its `OUT_OF_RANGE` straight to the caller, so on clients keep tonic's
//! limit at or above the guard's, or use [`guarded_client!`].
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use grpc_stream_codec::tonic::guard::{RequestGuardLayer, ResponseGuardLayer};
//!
//! // Server: one line.
//! let router = tonic::transport::Server::builder().layer(RequestGuardLayer::new());
//!
//! // Client: wrap the channel.
//! let channel = tonic::transport::Endpoint::from_static("http://127.0.0.1:50051")
//!     .connect()
//!     .await?;
//! let channel = tower::ServiceBuilder::new()
//!     .layer(ResponseGuardLayer::new())
//!     .service(channel);
//! # let _ = (router, channel);
//! # Ok(())
//! # }
//! ```

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::{Buf, Bytes};
use http_body::{Body, Frame, SizeHint};
use tower_layer::Layer;
use tower_service::Service;

use crate::Status;
use crate::boundary::EnvelopeTracker;
use crate::compression::CompressionEncoding;
use crate::decode::{Decoded, EnvelopeAssembler};
use crate::envelope::{EnvelopeHeader, HEADER_LEN, Limits};

#[cfg(any(feature = "gzip", feature = "deflate", feature = "zstd"))]
mod inflated;
#[cfg(not(any(feature = "gzip", feature = "deflate", feature = "zstd")))]
#[path = "guard/inflated_none.rs"]
mod inflated;
mod one_limit;
mod restate;

use inflated::{InflatedLimit, PayloadFollower};
pub use restate::RequestFuture;

#[doc(inline)]
pub use crate::__tonic_guarded_client as guarded_client;
#[doc(inline)]
pub use crate::__tonic_guarded_server as guarded_server;

type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// How a guard handles the bytes it checks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GuardMode {
    /// Forward every frame as it arrives, unchanged and uncopied, reading
    /// only the envelope headers (and decompressing, counting, compressed
    /// messages that could pass the limit: see
    /// [`GuardedBody::with_encoding`]). Costs next to nothing for plain
    /// messages; tonic still reserves the declared length (up to the limit)
    /// when it reads a header.
    #[default]
    PassThrough,
    /// Hold each envelope until it is complete and forward it, so tonic
    /// never reserves a length nobody has sent. Allocation follows the bytes
    /// received (`min(declared, 2 x received)`); costs one copy of every
    /// message.
    ///
    /// An envelope of up to 4 KiB goes to tonic as one frame; a larger one
    /// as two, its header and then its payload, so that tonic's read buffer
    /// is sized to the message (an envelope handed over whole made tonic
    /// reserve its length twice: 2 MiB kept for a 1 MiB message). What tonic
    /// still keeps is its own and out of a layer's reach: an idle stream
    /// holds a read buffer the size of the last message above 4 KiB it
    /// received (about 1 MiB after one 1 MiB message, as with pass-through
    /// or no layer, which keep the largest message's size or more).
    Assembling,
}

/// What a guard layer enforces.
#[derive(Clone, Copy, Debug, Default)]
pub struct GuardConfig {
    limits: Limits,
    mode: GuardMode,
}

impl GuardConfig {
    /// The limits (default: receive 4 MiB). The guard reads only the
    /// receive limit; see [`guarded_server!`] for the send limit.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The mode (default [`GuardMode::PassThrough`]).
    pub fn with_mode(mut self, mode: GuardMode) -> Self {
        self.mode = mode;
        self
    }
}

/// The builder methods and the `Layer` impl, the same for both layers.
macro_rules! guard_layer {
    ($layer:ident, $service:ident) => {
        impl $layer {
            /// A pass-through layer with the default limit (4 MiB).
            pub fn new() -> Self {
                Self::default()
            }

            /// Takes the limits from `limits`.
            ///
            /// The layer enforces the receive limit itself. The send limit is
            /// not the layer's to enforce (outgoing messages are tonic's);
            /// [`guarded_server!`] and [`guarded_client!`] hand both limits to
            /// tonic as well, which is how they stay one limit.
            pub fn with_limits(mut self, limits: Limits) -> Self {
                self.config = self.config.with_limits(limits);
                self
            }

            /// The limits this layer was given.
            pub fn limits(&self) -> Limits {
                self.config.limits
            }

            /// Wraps `inner`, as `Layer::layer` does, without the
            /// `tower::Layer` trait in scope.
            pub fn wrap<S>(&self, inner: S) -> $service<S> {
                $service {
                    inner,
                    config: self.config,
                }
            }

            /// Sets the mode.
            pub fn with_mode(mut self, mode: GuardMode) -> Self {
                self.config = self.config.with_mode(mode);
                self
            }
        }

        impl<S> Layer<S> for $layer {
            type Service = $service<S>;

            fn layer(&self, inner: S) -> Self::Service {
                self.wrap(inner)
            }
        }
    };
}

/// Guards the request bodies a tonic server receives.
///
/// For one service, with the service's own tonic limits set from the same
/// [`Limits`], use [`guarded_server!`]. A [`RequestGuard`] of a generated
/// server is a `NamedService`, so wrapping it by hand
/// (`tower::ServiceBuilder::new().layer(layer).service(server)` or
/// [`wrap`](Self::wrap)) also goes straight into `add_service`; the limits
/// are then yours to keep equal. For every service of a server:
/// `Server::builder().layer(RequestGuardLayer::new())`, which sees no
/// service's tonic limits (tonic's default is 4 MiB, the layer's too). A
/// service whose `max_decoding_message_size` is below the layer's limit
/// refuses the messages between the two itself; the guard then rewrites
/// tonic's refusal, in the response headers or trailers, into its own
/// `RESOURCE_EXHAUSTED` `message size N exceeds limit M` (M = the service's
/// limit), so clients see one status whichever limit is lower. A service
/// whose limit is above the layer's is held to the layer's.
#[derive(Clone, Copy, Debug, Default)]
pub struct RequestGuardLayer {
    config: GuardConfig,
}

guard_layer!(RequestGuardLayer, RequestGuard);

/// The service [`RequestGuardLayer`] produces.
#[derive(Clone, Debug)]
pub struct RequestGuard<S> {
    inner: S,
    config: GuardConfig,
}

impl<S> RequestGuard<S> {
    /// The guarded service.
    pub fn inner(&self) -> &S {
        &self.inner
    }
}

/// Routed under the inner service's name, so a guarded generated server goes
/// into `Server::builder().add_service(...)` like the server itself.
impl<S: tonic::server::NamedService> tonic::server::NamedService for RequestGuard<S> {
    const NAME: &'static str = S::NAME;
}

impl<S, B, ResBody> Service<http::Request<B>> for RequestGuard<S>
where
    S: Service<http::Request<tonic::body::Body>, Response = http::Response<ResBody>>,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
    ResBody: Body<Data = Bytes> + Send + 'static,
    ResBody::Error: Into<BoxError>,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = S::Error;
    type Future = RequestFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let guarded = is_grpc(request.headers()).then(|| stream_encoding(request.headers()));
        let config = self.config;
        let request = request.map(|body| guard_if(guarded, body, config));
        RequestFuture::new(self.inner.call(request), guarded.is_some())
    }
}

/// Guards the response bodies a tonic client receives.
///
/// [`guarded_client!`] wraps a channel and builds the generated client on it
/// with tonic's limits set from the same [`Limits`]. By hand, wrap a
/// `Channel` with `tower::ServiceBuilder::new().layer(ResponseGuardLayer::new())`
/// and keep the client's `max_decoding_message_size` at or above the layer's
/// limit (both default to 4 MiB).
#[derive(Clone, Copy, Debug, Default)]
pub struct ResponseGuardLayer {
    config: GuardConfig,
}

guard_layer!(ResponseGuardLayer, ResponseGuard);

/// The service [`ResponseGuardLayer`] produces.
#[derive(Clone, Debug)]
pub struct ResponseGuard<S> {
    inner: S,
    config: GuardConfig,
}

impl<S> ResponseGuard<S> {
    /// The guarded service (the channel).
    pub fn inner(&self) -> &S {
        &self.inner
    }
}

impl<S, ReqBody, ResBody> Service<http::Request<ReqBody>> for ResponseGuard<S>
where
    S: Service<http::Request<ReqBody>, Response = http::Response<ResBody>>,
    ResBody: Body<Data = Bytes> + Send + 'static,
    ResBody::Error: Into<BoxError>,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<ReqBody>) -> Self::Future {
        ResponseFuture {
            inner: self.inner.call(request),
            config: self.config,
        }
    }
}

pin_project_lite::pin_project! {
    /// The future of [`ResponseGuard`]: the inner response with its body guarded.
    pub struct ResponseFuture<F> {
        #[pin]
        inner: F,
        config: GuardConfig,
    }
}

impl<F, ResBody, E> std::future::Future for ResponseFuture<F>
where
    F: std::future::Future<Output = Result<http::Response<ResBody>, E>>,
    ResBody: Body<Data = Bytes> + Send + 'static,
    ResBody::Error: Into<BoxError>,
{
    type Output = Result<http::Response<tonic::body::Body>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let response = ready!(this.inner.poll(cx))?;
        let guarded = is_grpc(response.headers()).then(|| stream_encoding(response.headers()));
        let config = *this.config;
        Poll::Ready(Ok(response.map(|body| guard_if(guarded, body, config))))
    }
}

fn is_grpc(headers: &http::HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|value| value.as_bytes().starts_with(b"application/grpc"))
}

/// The stream's message encoding. One this build cannot decompress (or a
/// malformed header) reads as none: tonic refuses such a stream itself.
fn stream_encoding(headers: &http::HeaderMap) -> Option<CompressionEncoding> {
    CompressionEncoding::from_encoding_header(headers)
        .ok()
        .flatten()
}

/// Guards `body` when `guarded` holds the stream's encoding.
fn guard_if<B>(
    guarded: Option<Option<CompressionEncoding>>,
    body: B,
    config: GuardConfig,
) -> tonic::body::Body
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    match guarded {
        Some(encoding) => {
            tonic::body::Body::new(GuardedBody::with_encoding(body, config, encoding))
        }
        None => tonic::body::Body::new(body),
    }
}

pin_project_lite::pin_project! {
    /// A body whose envelopes are checked on the way through (see
    /// [`GuardMode`] for what each mode forwards).
    pub struct GuardedBody<B> {
        #[pin]
        inner: B,
        inspector: Inspector,
        done: bool,
    }
}

/// The per-mode state of a [`GuardedBody`].
enum Inspector {
    PassThrough {
        tracker: EnvelopeTracker,
        /// Decompressed sizes, on a stream with a message encoding.
        inflated: Option<PayloadFollower>,
    },
    Assembling {
        assembler: EnvelopeAssembler,
        /// The payload of an envelope whose header went out as a frame of
        /// its own (see [`split_for_tonic`]); forwarded before anything else.
        payload: Option<Bytes>,
        /// Decompressed sizes, on a stream with a message encoding.
        inflated: Option<InflatedLimit>,
    },
}

/// Envelopes above this size reach tonic in two frames, header then payload.
///
/// When tonic reads an envelope header it reserves the declared length on
/// top of what its read buffer already holds (`BytesMut::reserve` in
/// `tonic::codec::decode`), and it keeps that buffer for the life of the
/// stream. An envelope forwarded whole already sits in the buffer when the
/// header is read, so the reservation asked for twice the message and the
/// `Vec` under the buffer grew to that: a stream that had carried one 1 MiB
/// message held 2 MiB, 1 MiB more than with no guard. Given the header alone,
/// tonic reserves exactly the message and the payload then fills it.
///
/// Below this size an envelope still goes whole: one frame per message is
/// cheaper, and header, payload and that reservation together (at most
/// `2 x 4 KiB`) fit tonic's default 8 KiB read buffer without growing it.
const SPLIT_ABOVE: usize = 4 * 1024;

/// Cuts an envelope bigger than [`SPLIT_ABOVE`] into its header and its
/// payload.
///
/// The header gets an allocation of its own rather than a view into the
/// envelope: tonic adopts a frame's allocation as its read buffer when that
/// buffer is used up and the frame's bytes are not shared (`BufMut::put` on
/// a `BytesMut` of no capacity), so a header nobody else holds lets tonic
/// drop the previous message's buffer and reserve the next message's length
/// from scratch, exactly, instead of doubling the old buffer to make room.
fn split_for_tonic(mut envelope: Bytes) -> (Bytes, Option<Bytes>) {
    if envelope.len() <= SPLIT_ABOVE {
        return (envelope, None);
    }
    let header = Bytes::copy_from_slice(&envelope[..HEADER_LEN]);
    envelope.advance(HEADER_LEN);
    (header, Some(envelope))
}

impl<B> GuardedBody<B> {
    /// Guards `inner` as `config` says, for a stream with no message
    /// encoding: compressed messages are checked on their wire length only
    /// (tonic refuses them anyway, with no `grpc-encoding`).
    pub fn new(inner: B, config: GuardConfig) -> Self {
        Self::with_encoding(inner, config, None)
    }

    /// Guards `inner` as `config` says, for a stream whose `grpc-encoding`
    /// is `encoding`: compressed messages are also held to the receive limit
    /// once decompressed, with the same status as a plain message over it.
    ///
    /// The guard decompresses such a message as it goes by, into a scratch
    /// buffer it drops (8 KiB; 128 KiB for a large zstd message), and stops
    /// the body before the message's last byte reaches tonic; tonic then
    /// decompresses it again, which is what the check costs: about 2x
    /// tonic's decoding time for large messages, gzip or zstd
    /// (`benches/tonic_guard.rs`). Messages too small to reach the
    /// limit however they expand (deflate expands at most 1032:1, zstd
    /// 32768:1) are not decompressed by the guard.
    pub fn with_encoding(
        inner: B,
        config: GuardConfig,
        encoding: Option<CompressionEncoding>,
    ) -> Self {
        let limit = config.limits.max_receive();
        let inflated = InflatedLimit::new(encoding, limit);
        let inspector = match config.mode {
            GuardMode::PassThrough => Inspector::PassThrough {
                tracker: EnvelopeTracker::new(limit),
                inflated: inflated.map(InflatedLimit::follower),
            },
            GuardMode::Assembling => Inspector::Assembling {
                assembler: EnvelopeAssembler::raw(config.limits),
                payload: None,
                inflated,
            },
        };
        Self {
            inner,
            inspector,
            done: false,
        }
    }
}

impl Inspector {
    /// A frame ready to forward without reading more of the inner body.
    fn ready_frame(&mut self) -> Result<Option<Frame<Bytes>>, Status> {
        match self {
            Inspector::PassThrough { .. } => Ok(None),
            Inspector::Assembling {
                assembler,
                payload,
                inflated,
            } => {
                if let Some(payload) = payload.take() {
                    return Ok(Some(Frame::data(payload)));
                }
                let frame = match assembler.next()? {
                    None => return Ok(None),
                    Some(Decoded::Message(envelope)) => {
                        if let Some(inflated) = inflated {
                            inflated.check_envelope(&envelope)?;
                        }
                        let (first, rest) = split_for_tonic(envelope);
                        *payload = rest;
                        Frame::data(first)
                    }
                    Some(Decoded::EndStream(trailers)) => {
                        Frame::data(encode_web_trailers(&trailers))
                    }
                };
                Ok(Some(frame))
            }
        }
    }

    /// Takes a data frame of the inner body; returns it if it is forwarded as is.
    fn take(&mut self, data: Bytes) -> Result<Option<Bytes>, Status> {
        match self {
            Inspector::PassThrough { tracker, inflated } => {
                tracker.observe(&data)?;
                if let Some(inflated) = inflated {
                    inflated.observe(&data)?;
                }
                Ok(Some(data))
            }
            Inspector::Assembling { assembler, .. } => {
                assembler.push(data);
                Ok(None)
            }
        }
    }

    /// The inner body's data ended (with trailers or without).
    fn finish(&mut self) -> Result<(), Status> {
        match self {
            Inspector::PassThrough { tracker, .. } => tracker.finish(),
            Inspector::Assembling { assembler, .. } => assembler.finish(),
        }
    }

    fn at_boundary(&self) -> bool {
        match self {
            Inspector::PassThrough { tracker, .. } => tracker.at_boundary(),
            Inspector::Assembling {
                assembler, payload, ..
            } => assembler.is_idle() && payload.is_none(),
        }
    }
}

/// Serialises trailers back into a gRPC-Web trailers frame, so the
/// assembling mode forwards such frames as it found them.
fn encode_web_trailers(trailers: &http::HeaderMap) -> Bytes {
    let mut block = Vec::new();
    for (name, value) in trailers {
        block.extend_from_slice(name.as_str().as_bytes());
        block.extend_from_slice(b": ");
        block.extend_from_slice(value.as_bytes());
        block.extend_from_slice(b"\r\n");
    }
    // The block came out of a frame whose length fit the trailers limit.
    let len = u32::try_from(block.len()).unwrap_or(u32::MAX);
    let mut frame = Vec::with_capacity(HEADER_LEN + block.len());
    frame.extend_from_slice(&EnvelopeHeader::trailers(len).to_bytes());
    frame.extend_from_slice(&block);
    Bytes::from(frame)
}

impl<B> Body for GuardedBody<B>
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let mut this = self.project();
        loop {
            if *this.done {
                return Poll::Ready(None);
            }
            let step = match this.inspector.ready_frame() {
                Ok(Some(frame)) => Ok(Some(frame)),
                Ok(None) => match ready!(this.inner.as_mut().poll_frame(cx)) {
                    Some(Ok(frame)) => match frame.into_data() {
                        Ok(data) => this.inspector.take(data).map(|kept| kept.map(Frame::data)),
                        // HTTP trailers end the data: the last envelope must be complete.
                        Err(trailers) => this.inspector.finish().map(|()| Some(trailers)),
                    },
                    Some(Err(error)) => {
                        *this.done = true;
                        return Poll::Ready(Some(Err(error.into())));
                    }
                    None => {
                        *this.done = true;
                        return Poll::Ready(
                            this.inspector.finish().err().map(|s| Err(to_error(s))),
                        );
                    }
                },
                Err(status) => Err(status),
            };
            match step {
                Ok(Some(frame)) => return Poll::Ready(Some(Ok(frame))),
                // The assembler took the frame; look for a complete envelope.
                Ok(None) => continue,
                Err(status) => {
                    *this.done = true;
                    return Poll::Ready(Some(Err(to_error(status))));
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done || (self.inner.is_end_stream() && self.inspector.at_boundary())
    }

    fn size_hint(&self) -> SizeHint {
        match self.inspector {
            Inspector::PassThrough { .. } => self.inner.size_hint(),
            Inspector::Assembling { .. } => SizeHint::default(),
        }
    }
}

/// A body error tonic recognises: it finds a `tonic::Status` in the error
/// and reports it as it is.
fn to_error(status: Status) -> BoxError {
    Box::new(tonic::Status::from(status))
}
