//! The per-call guard of volo-grpc servers, applied by
//! [`BinaryMetadataLayer`](super::BinaryMetadataLayer): the request body is
//! read ahead of the handler (so h2's small-DATA-frame budget comes back as
//! the peer sends) and a response is ended at the call's `grpc-timeout`
//! with `DEADLINE_EXCEEDED` (see [`crate::call`]).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::Body;
use http_body_util::BodyExt;
use pin_project_lite::pin_project;
use volo_grpc::body::BoxBody;

use crate::call::{BoxError, Pump, Pumped, ServerDeadline, Timer, deadline_timer, read_ahead};

/// What the guard keeps of a request for its response.
pub(super) struct Guard {
    timer: Option<Timer>,
    pump: Pump,
}

/// Splits `req`'s body for reading ahead and starts the deadline's timer.
pub(super) fn guard_request<B>(req: http::Request<B>) -> (http::Request<BoxBody>, Guard)
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let timer = deadline_timer(req.headers());
    let (parts, body) = req.into_parts();
    // volo-grpc installs the receive budget per call, after this layer:
    // what is read ahead here is bounded by the read-ahead's own limit.
    let (body, pump) = read_ahead(body, None);
    let body = volo_grpc::body::boxed(body.map_err(volo_status));
    (http::Request::from_parts(parts, body), Guard { timer, pump })
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
    }
}

impl<F> Guarded<F> {
    pub(super) fn new(inner: F, guard: Guard) -> Self {
        Guarded {
            inner: Pumped::new(inner, Some(guard.pump)),
            timer: guard.timer,
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
        let response = std::task::ready!(this.inner.poll(cx))?;
        let timer = this.timer.take();
        Poll::Ready(Ok(response.map(|body| {
            volo_grpc::body::boxed(ServerDeadline::new(body, timer, pump))
        })))
    }
}
