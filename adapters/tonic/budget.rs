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
//! read the tag when they start decoding. A service or client with any other
//! framing (stock tonic, the codec-only path, `tonic-health`, ...) never
//! reads it: the layer notices, counts the call in
//! [`ReceiveBudgetLayer::uncounted_calls`] and logs a warning once.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};

use http::Extensions;
use pin_project_lite::pin_project;
use tower_layer::Layer;
use tower_service::Service;

use crate::budget::{Budget, ReceiveBudgetLayer, ReceiveBudgetService};

/// The budget a [`ReceiveBudgetLayer`] attached, as an HTTP extension, with
/// the call's probe (shared by the request's and the response's tag).
#[derive(Clone)]
struct Tagged {
    budget: Budget,
    probe: Arc<Probe>,
}

/// Whether a call's tag was read by this crate's framing. Checked when the
/// last tag of the call is dropped: by then the full framing has read it
/// (a server when it starts decoding the request, a client when it starts
/// decoding the response), so an unread tag means another framing.
struct Probe {
    read: AtomicBool,
    /// The call was answered without messages to decode (a trailers-only
    /// response or an error), or dropped before its response: there was
    /// nothing to count, or no chance to.
    exempt: AtomicBool,
    layer: ReceiveBudgetLayer,
}

impl Drop for Probe {
    fn drop(&mut self) {
        if !self.read.load(Ordering::Relaxed) && !self.exempt.load(Ordering::Relaxed) {
            self.layer.note_uncounted(UNCOUNTED);
        }
    }
}

/// Logged the first time a call through a layer is not counted.
const UNCOUNTED: &str = "grpc_stream_codec::budget::ReceiveBudgetLayer (tonic): a call went through the \
    layer but its messages were not counted: the service or client it reached does not use \
    grpc-stream-codec's full framing (stock tonic, the codec-only path, tonic-health, ...), so \
    the receive budget does not bound it. Generate the service and client with the tonic build \
    hook. (Logged once per layer; see ReceiveBudgetLayer::uncounted_calls.)";

/// The budget a [`ReceiveBudgetLayer`] attached to a request or response.
pub(crate) fn tagged_budget(extensions: &Extensions) -> Option<Budget> {
    extensions.get::<Tagged>().map(|tagged| {
        tagged.probe.read.store(true, Ordering::Relaxed);
        tagged.budget.clone()
    })
}

impl<S> Layer<S> for ReceiveBudgetLayer {
    type Service = ReceiveBudgetService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ReceiveBudgetService::new(inner, self.clone())
    }
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
        let tag = Tagged {
            budget: self.layer.budget().clone(),
            probe: Arc::new(Probe {
                read: AtomicBool::new(false),
                exempt: AtomicBool::new(false),
                layer: self.layer.clone(),
            }),
        };
        request.extensions_mut().insert(tag.clone());
        TaggedResponse {
            inner: self.inner.call(request),
            tag: PendingTag(Some(tag)),
        }
    }
}

pin_project! {
    /// The response future of [`ReceiveBudgetService`].
    pub struct TaggedResponse<F> {
        #[pin]
        inner: F,
        tag: PendingTag,
    }
}

/// The tag a response will carry. A call dropped before its response
/// (cancelled) is not judged: no framing had a chance to read the tag.
struct PendingTag(Option<Tagged>);

impl Drop for PendingTag {
    fn drop(&mut self) {
        if let Some(tag) = self.0.take() {
            tag.probe.exempt.store(true, Ordering::Relaxed);
        }
    }
}

impl<F, R, E> Future for TaggedResponse<F>
where
    F: Future<Output = Result<http::Response<R>, E>>,
{
    type Output = Result<http::Response<R>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let response = ready!(this.inner.poll(cx));
        let Some(tag) = this.tag.0.take() else {
            return Poll::Ready(response);
        };
        match response {
            Ok(mut response) => {
                if response.headers().contains_key(crate::status::GRPC_STATUS) {
                    // Trailers-only: no message to decode on either side.
                    tag.probe.exempt.store(true, Ordering::Relaxed);
                }
                response.extensions_mut().insert(tag);
                Poll::Ready(Ok(response))
            }
            Err(error) => {
                tag.probe.exempt.store(true, Ordering::Relaxed);
                Poll::Ready(Err(error))
            }
        }
    }
}
