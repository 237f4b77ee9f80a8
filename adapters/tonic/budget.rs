//! Receive budgets for tonic's full framing.
//!
//! Two ways to give streams a [`Budget`] (see [`crate::budget`]), the first
//! that applies wins:
//!
//! 1. per stream: [`Streaming::with_budget`](super::Streaming::with_budget)
//!    before reading (for request streams a handler receives);
//! 2. per server, service or client: [`ReceiveBudgetLayer`].
//!
//! The layer only tags requests and responses; the full framing's
//! [`server::Grpc`](super::server::Grpc) and [`client::Grpc`](super::client::Grpc)
//! read the tag when they start decoding. The codec-only path is unaffected.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use http::Extensions;
use pin_project_lite::pin_project;
use tower_layer::Layer;
use tower_service::Service;

use crate::budget::Budget;

/// The budget a [`ReceiveBudgetLayer`] attached, as an HTTP extension.
#[derive(Clone)]
struct Tagged(Budget);

/// The budget a [`ReceiveBudgetLayer`] attached to a request or response.
pub(crate) fn tagged_budget(extensions: &Extensions) -> Option<Budget> {
    extensions.get::<Tagged>().map(|tagged| tagged.0.clone())
}

/// Counts what the full framing receives against one budget: requests on a
/// server, responses on a client.
///
/// ```no_run
/// use grpc_stream_codec::budget::SharedBudget;
/// use grpc_stream_codec::tonic::ReceiveBudgetLayer;
///
/// let budget = SharedBudget::new(256 << 20);
/// // Server: every request stream of every full-framing service.
/// let server = tonic::transport::Server::builder().layer(ReceiveBudgetLayer::new(budget.clone()));
/// // Client: every response stream of a full-framing client on `channel`:
/// // let channel = tower::ServiceBuilder::new().layer(ReceiveBudgetLayer::new(budget)).service(channel);
/// # drop(server);
/// ```
///
/// A waiting stream leaves up to its HTTP/2 stream window unread, and that
/// counts against its connection's window too: keep the stream window times
/// the streams that may wait on one connection below the connection window
/// (`Server::initial_stream_window_size`, `initial_connection_window_size`),
/// or the streams that hold the budget cannot receive the rest of their
/// messages.
#[derive(Clone, Debug)]
pub struct ReceiveBudgetLayer {
    budget: Budget,
}

impl ReceiveBudgetLayer {
    /// A layer for `budget`.
    pub fn new(budget: impl Into<Budget>) -> Self {
        ReceiveBudgetLayer {
            budget: budget.into(),
        }
    }
}

impl<S> Layer<S> for ReceiveBudgetLayer {
    type Service = ReceiveBudgetService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ReceiveBudgetService {
            inner,
            budget: self.budget.clone(),
        }
    }
}

/// The service [`ReceiveBudgetLayer`] makes: tags each request, and its
/// response, with the budget.
#[derive(Clone, Debug)]
pub struct ReceiveBudgetService<S> {
    inner: S,
    budget: Budget,
}

impl<S, B, R> Service<http::Request<B>> for ReceiveBudgetService<S>
where
    S: Service<http::Request<B>, Response = http::Response<R>>,
{
    type Response = http::Response<R>;
    type Error = S::Error;
    type Future = TaggedResponse<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        request.extensions_mut().insert(Tagged(self.budget.clone()));
        TaggedResponse {
            inner: self.inner.call(request),
            budget: Some(self.budget.clone()),
        }
    }
}

pin_project! {
    /// The response future of [`ReceiveBudgetService`].
    pub struct TaggedResponse<F> {
        #[pin]
        inner: F,
        budget: Option<Budget>,
    }
}

impl<F, R, E> Future for TaggedResponse<F>
where
    F: Future<Output = Result<http::Response<R>, E>>,
{
    type Output = Result<http::Response<R>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let mut response = ready!(this.inner.poll(cx))?;
        if let Some(budget) = this.budget.take() {
            response.extensions_mut().insert(Tagged(budget));
        }
        Poll::Ready(Ok(response))
    }
}
