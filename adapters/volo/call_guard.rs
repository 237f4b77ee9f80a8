//! The per-call guard of volo-grpc servers, applied by
//! [`BinaryMetadataLayer`](super::BinaryMetadataLayer): the request body is
//! read ahead of the handler once it may need it (so h2's small-DATA-frame
//! budget comes back as the peer sends; see [`crate::call::RequestScope`]),
//! and a response is ended at the call's `grpc-timeout` with
//! `DEADLINE_EXCEEDED` (see [`crate::call`]).
//!
//! volo-build's generated code makes the request's stream while the guard
//! polls the call, so the stream finds its call's scope there
//! ([`request_body`](crate::call::request_body)).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use http_body_util::BodyExt;
use pin_project_lite::pin_project;
use volo_grpc::body::BoxBody;

use super::recv::VoloBody;
use super::server::rename_response_headers;
use crate::call::{
    BoxError, RequestScope, ScopedCall, ServerResponse, Timer, request_scope_slots, timer_for,
};
use crate::observe::{self, Method, ServerCall};

request_scope_slots!(
    /// Where volo-grpc calls keep their request streams' bodies.
    pub(super) VoloSlots,
    VoloBody
);

/// What the guard keeps of a request for its response.
pub(super) struct Guard {
    timer: Option<Timer>,
    call: ServerCall,
    method: Method,
    /// Whether the response's `grpc-encoding: zlib` is called `deflate`.
    answer_deflate: bool,
}

/// Starts recording the call (when a meter is installed) and the timer of
/// its `timeout`; the request itself is left as it is.
/// `answer_deflate`: the client asked for `deflate` by that name only.
pub(super) fn guard_request(
    req: &http::Request<BoxBody>,
    timeout: Option<Duration>,
    answer_deflate: bool,
) -> Guard {
    let call = observe::server_call(req, |_| timeout);
    // The record's name when recorded (the method is interned once), and
    // where its request stream counts the bytes it receives.
    let method = call.method(req.uri().path());
    let timer = timeout.map(timer_for);
    Guard {
        timer,
        call,
        method,
        answer_deflate,
    }
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
    /// The service's future, polled in its request scope and pumping the
    /// request while it waits; its response body ends at the deadline and
    /// keeps pumping.
    pub struct Guarded<F> {
        #[pin]
        inner: ScopedCall<VoloSlots, F>,
        timer: Option<Timer>,
        // The record of a call a deadline can cut, which the watcher at the
        // deadline finishes; any other call's record is in the scope, for
        // the response's encoder to keep.
        call: ServerCall,
        answer_deflate: bool,
    }
}

impl<F> Guarded<F> {
    pub(super) fn new(inner: F, guard: Guard) -> Self {
        // Kept here for the watcher a deadline needs; otherwise in the
        // scope, for the response's encoder.
        let mut scoped = guard.call;
        let mut kept = std::mem::take(&mut scoped);
        if guard.timer.is_none() {
            std::mem::swap(&mut kept, &mut scoped);
        }
        Guarded {
            inner: ScopedCall::new(inner, RequestScope::awaiting_stream(guard.method, scoped)),
            timer: guard.timer,
            call: kept,
            answer_deflate: guard.answer_deflate,
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
        let (response, rest) = std::task::ready!(this.inner.poll(cx));
        let mut response = response?;
        if *this.answer_deflate {
            rename_response_headers(response.headers_mut());
        }
        let timer = this.timer.take();
        // Left in the scope when no encoder kept it (a trailers-only
        // answer, or generated code the build hook did not point at
        // `encode_response`): the watcher records the call then.
        let mut call = match timer {
            Some(_) => std::mem::take(this.call),
            None => rest.record,
        };
        call.response_headers(response.headers());
        let response =
            response.map(
                |body| match ServerResponse::watching(body, timer, rest.pump, call) {
                    // Its errors are volo-grpc's already: boxed as they
                    // are, without `boxed`'s conversion layer.
                    Ok(watched) => watched.boxed_unsync(),
                    Err(body) => body,
                },
            );
        Poll::Ready(Ok(response))
    }
}
