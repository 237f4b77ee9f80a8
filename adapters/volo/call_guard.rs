//! The per-call guard of volo-grpc servers, applied by
//! [`BinaryMetadataLayer`](super::BinaryMetadataLayer): the request body is
//! read ahead of the handler (so h2's small-DATA-frame budget comes back as
//! the peer sends) and a response is ended at the call's `grpc-timeout`
//! with `DEADLINE_EXCEEDED` (see [`crate::call`]).
//!
//! The read-ahead starts when generated code makes the request's stream
//! (which runs while the guard polls the call): the stream arms it with its
//! own receive budget, so what is read ahead counts against the budget.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::Body;
use http_body_util::BodyExt;
use pin_project_lite::pin_project;
use volo_grpc::body::BoxBody;

use super::scoped;
use crate::budget::Budget;
use crate::call::{BoxError, Pump, Pumped, ServerDeadline, Timer, read_ahead, timer_for};
use crate::observe::{self, ServerCall};

thread_local! {
    /// The request pump of the call a [`Guarded`] polls.
    static REQUEST_PUMP: RefCell<Option<Pump>> = const { RefCell::new(None) };
}

/// Arms the read-ahead of the call being served with `budget`, as its
/// request stream is made, and returns its pump; `None` when no guard
/// serves this call (the server lacks `BinaryMetadataLayer`).
pub(super) fn arm_request_pump(budget: Option<Budget>) -> Option<Pump> {
    let pump = REQUEST_PUMP.with(|slot| slot.borrow().clone())?;
    pump.arm(budget);
    Some(pump)
}

/// What the guard keeps of a request for its response.
pub(super) struct Guard {
    timer: Option<Timer>,
    pump: Pump,
    call: ServerCall,
}

/// Splits `req`'s body for reading ahead and starts the timer of the
/// call's `timeout`.
pub(super) fn guard_request<B>(
    req: http::Request<B>,
    timeout: Option<Duration>,
) -> (http::Request<BoxBody>, Guard)
where
    B: Body<Data = Bytes> + Unpin + Send + 'static,
    B::Error: Into<BoxError>,
{
    let (req, call) = observe::server_call(req);
    let timer = timeout.map(timer_for);
    let (parts, body) = req.into_parts();
    // Armed, with the stream's budget, by the stream (`arm_request_pump`).
    let (body, pump) = read_ahead(body);
    let pump = pump.observed(observe::Method::of(parts.uri.path()));
    let body = volo_grpc::body::boxed(body.map_err(volo_status));
    (
        http::Request::from_parts(parts, body),
        Guard { timer, pump, call },
    )
}

/// A body error as volo-grpc carries it: this crate's status (a deadline)
/// converted, anything else as volo-grpc converts errors.
pub(super) fn volo_status(error: BoxError) -> volo_grpc::Status {
    match error.downcast::<crate::status::Status>() {
        Ok(status) => (*status).into(),
        Err(error) => volo_grpc::Status::from_error(error),
    }
}

pin_project! {
    /// The service's future, pumping the request while it runs; its
    /// response body ends at the deadline and keeps pumping.
    pub struct Guarded<F> {
        #[pin]
        inner: Pumped<F>,
        timer: Option<Timer>,
        call: ServerCall,
    }
}

impl<F> Guarded<F> {
    pub(super) fn new(inner: F, guard: Guard) -> Self {
        Guarded {
            inner: Pumped::new(inner, Some(guard.pump)),
            timer: guard.timer,
            call: guard.call,
        }
    }
}

impl<F, E> Future for Guarded<F>
where
    F: Future<Output = Result<http::Response<BoxBody>, E>>,
{
    type Output = Result<http::Response<BoxBody>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let pump = this.inner.pump().cloned();
        let polled = match &pump {
            Some(pump) => scoped::with(&REQUEST_PUMP, pump.clone(), || this.inner.poll(cx)),
            None => this.inner.poll(cx),
        };
        let response = std::task::ready!(polled)?;
        let timer = this.timer.take();
        let response = response.map(|body| match ServerDeadline::watching(body, timer, pump) {
            Ok(watched) => volo_grpc::body::boxed(watched),
            Err(body) => body,
        });
        let call = std::mem::take(this.call);
        Poll::Ready(Ok(observe::server_response(
            response,
            call,
            volo_grpc::body::boxed,
        )))
    }
}
