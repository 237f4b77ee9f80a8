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

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tower_layer::Layer;
use tower_service::Service;

use crate::boundary::EnvelopeTracker;
use crate::envelope::Limits;

type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What a guard layer enforces.
#[derive(Clone, Copy, Debug, Default)]
pub struct GuardConfig {
    limits: Limits,
}

impl GuardConfig {
    /// The receive limit from `limits` (default 4 MiB).
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }
}

/// Guards the request bodies a tonic server receives.
///
/// Add it with `Server::builder().layer(RequestGuardLayer::new())`; for one
/// service only, wrap that service with `tower::ServiceBuilder`.
#[derive(Clone, Copy, Debug, Default)]
pub struct RequestGuardLayer {
    config: GuardConfig,
}

impl RequestGuardLayer {
    /// A layer with the default limit (4 MiB).
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the receive limit from `limits`.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.config = self.config.with_limits(limits);
        self
    }
}

impl<S> Layer<S> for RequestGuardLayer {
    type Service = RequestGuard<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RequestGuard {
            inner,
            config: self.config,
        }
    }
}

/// The service [`RequestGuardLayer`] produces.
#[derive(Clone, Debug)]
pub struct RequestGuard<S> {
    inner: S,
    config: GuardConfig,
}

impl<S, B> Service<http::Request<B>> for RequestGuard<S>
where
    S: Service<http::Request<tonic::body::Body>>,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let guarded = is_grpc(request.headers());
        let config = self.config;
        let request = request.map(|body| guard_if(guarded, body, config.limits.max_receive()));
        self.inner.call(request)
    }
}

/// Guards the response bodies a tonic client receives.
///
/// Wrap a `Channel` with `tower::ServiceBuilder::new().layer(ResponseGuardLayer::new())`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ResponseGuardLayer {
    config: GuardConfig,
}

impl ResponseGuardLayer {
    /// A layer with the default limit (4 MiB).
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the receive limit from `limits`.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.config = self.config.with_limits(limits);
        self
    }
}

impl<S> Layer<S> for ResponseGuardLayer {
    type Service = ResponseGuard<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ResponseGuard {
            inner,
            config: self.config,
        }
    }
}

/// The service [`ResponseGuardLayer`] produces.
#[derive(Clone, Debug)]
pub struct ResponseGuard<S> {
    inner: S,
    config: GuardConfig,
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
        let guarded = is_grpc(response.headers());
        let limit = this.config.limits.max_receive();
        Poll::Ready(Ok(response.map(|body| guard_if(guarded, body, limit))))
    }
}

fn is_grpc(headers: &http::HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|value| value.as_bytes().starts_with(b"application/grpc"))
}

fn guard_if<B>(guarded: bool, body: B, limit: usize) -> tonic::body::Body
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    if guarded {
        tonic::body::Body::new(GuardedBody::new(body, limit))
    } else {
        tonic::body::Body::new(body)
    }
}

pin_project_lite::pin_project! {
    /// A body forwarded frame by frame, unchanged and uncopied, while its
    /// envelopes are checked.
    pub struct GuardedBody<B> {
        #[pin]
        inner: B,
        tracker: EnvelopeTracker,
        done: bool,
    }
}

impl<B> GuardedBody<B> {
    /// Guards `inner` with a per-message limit of `limit` bytes.
    pub fn new(inner: B, limit: usize) -> Self {
        Self {
            inner,
            tracker: EnvelopeTracker::new(limit),
            done: false,
        }
    }
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
        let this = self.project();
        if *this.done {
            return Poll::Ready(None);
        }
        let frame = match ready!(this.inner.poll_frame(cx)) {
            Some(Ok(frame)) => frame,
            Some(Err(error)) => {
                *this.done = true;
                return Poll::Ready(Some(Err(error.into())));
            }
            None => {
                *this.done = true;
                return Poll::Ready(this.tracker.finish().err().map(|s| Err(to_error(s))));
            }
        };
        let checked = match frame.data_ref() {
            Some(data) => this.tracker.observe(data),
            // HTTP trailers end the data: the last envelope must be complete.
            None => this.tracker.finish(),
        };
        match checked {
            Ok(()) => Poll::Ready(Some(Ok(frame))),
            Err(status) => {
                *this.done = true;
                Poll::Ready(Some(Err(to_error(status))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done || (self.inner.is_end_stream() && self.tracker.at_boundary())
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A body error tonic recognises: it finds a `tonic::Status` in the error
/// and reports it as it is.
fn to_error(status: crate::Status) -> BoxError {
    Box::new(tonic::Status::new(
        tonic::Code::from(status.code().as_i32()),
        status.message().to_owned(),
    ))
}
