//! A66's server instruments: one record per call, from its request headers
//! to the status in its trailers.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};
use opentelemetry::{KeyValue, Value};
use pin_project_lite::pin_project;

use super::instruments::{Instruments, instruments, names};
use super::wire::{Counted, MessageBytes};
use crate::status::Code;

/// A server call being recorded, or nothing when no meter is installed.
/// Dropped before its status is sent (the handler's future or the response
/// body dropped: the peer went away), it records `CANCELLED`.
#[derive(Default)]
pub(crate) struct ServerCall(Option<Live>);

struct Live {
    instruments: Arc<Instruments>,
    method: Value,
    start: Instant,
    received: Arc<AtomicU64>,
    sent: MessageBytes,
    /// A trailers-only answer's status, read from its headers.
    status: Option<Code>,
    /// The call's `grpc-timeout`: a `DEADLINE_EXCEEDED` end past it is a
    /// deadline end.
    timeout: Option<Duration>,
}

impl Live {
    fn finish(self, code: Code) {
        let attributes = [
            KeyValue::new(names::METHOD, self.method),
            KeyValue::new(names::STATUS, code.as_str()),
        ];
        let instruments = &self.instruments;
        let elapsed = self.start.elapsed();
        if code == Code::DeadlineExceeded && self.timeout.is_some_and(|t| elapsed >= t) {
            instruments.server_deadline_ended.add(1, &attributes[..1]);
        }
        instruments
            .server_duration
            .record(elapsed.as_secs_f64(), &attributes);
        instruments
            .server_sent
            .record(self.sent.total(), &attributes);
        instruments
            .server_rcvd
            .record(self.received.load(Ordering::Relaxed), &attributes);
    }
}

impl ServerCall {
    fn finish(&mut self, code: Code) {
        if let Some(live) = self.0.take() {
            live.finish(code);
        }
    }
}

impl Drop for ServerCall {
    fn drop(&mut self) {
        if let Some(live) = self.0.take() {
            let code = live.status.unwrap_or(Code::Cancelled);
            live.finish(code);
        }
    }
}

/// Starts recording the call `req` opens (when a meter is installed), and
/// counts the message bytes of its body as they are read.
pub(crate) fn server_call<B>(req: http::Request<B>) -> (http::Request<Counted<B>>, ServerCall) {
    let Some(instruments) = instruments() else {
        return (req.map(|body| Counted::new(body, None)), ServerCall(None));
    };
    let method = instruments.server_call_started(req.uri().path());
    let received = Arc::new(AtomicU64::new(0));
    let req = req.map(|body| Counted::new(body, Some(received.clone())));
    let call = Live {
        instruments,
        method,
        start: Instant::now(),
        received,
        sent: MessageBytes::default(),
        status: None,
        timeout: crate::call::timeout_from_headers(req.headers()),
    };
    (req, ServerCall(Some(call)))
}

/// [`server_call`] in place, for a framework whose request bodies are all
/// one boxed type: a recorded call's body is counted and put back in that
/// type by `wrap` (`placeholder` stands in while it moves); a call not
/// recorded keeps its request as it came (no wrapping, no allocation,
/// nothing between each frame and its reader).
#[cfg(feature = "volo")]
pub(crate) fn server_call_in_place<B>(
    req: &mut http::Request<B>,
    placeholder: impl FnOnce() -> B,
    wrap: impl FnOnce(Counted<B>) -> B,
) -> ServerCall {
    if instruments().is_none() {
        return ServerCall(None);
    }
    let taken = std::mem::replace(req, http::Request::new(placeholder()));
    let (counted, call) = server_call(taken);
    *req = counted.map(wrap);
    call
}

/// The call's response, whose body counts the message bytes it sends and
/// ends the record at the status: `wrap` puts the recording body in the
/// response's body type. Not recorded, the response is returned as it is
/// (no wrapping, no allocation).
pub(crate) fn server_response<B>(
    response: http::Response<B>,
    mut call: ServerCall,
    wrap: impl FnOnce(Sent<B>) -> B,
) -> http::Response<B> {
    let Some(live) = &mut call.0 else {
        return response;
    };
    live.status = status_of(response.headers());
    response.map(|inner| wrap(Sent { inner, call }))
}

/// The code in `headers`' `grpc-status`, if they carry one.
pub(super) fn status_of(headers: &HeaderMap) -> Option<Code> {
    // A name, not a `&str`: looking up by `&str` parses it on every call.
    static GRPC_STATUS: http::HeaderName =
        http::HeaderName::from_static(crate::status::GRPC_STATUS);
    let value = headers.get(&GRPC_STATUS)?;
    let code = std::str::from_utf8(value.as_bytes())
        .ok()
        .and_then(|digits| digits.parse::<i32>().ok())
        .map_or(Code::Unknown, Code::from_i32);
    Some(code)
}

pin_project! {
    /// A server's response body, recorded as it goes out.
    pub struct Sent<B> {
        #[pin]
        inner: B,
        call: ServerCall,
    }
}

impl<B: Body<Data = Bytes>> Body for Sent<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = self.project();
        let polled = this.inner.poll_frame(cx);
        let Some(live) = &mut this.call.0 else {
            return polled;
        };
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    live.sent.feed(data);
                } else if let Some(trailers) = frame.trailers_ref() {
                    let code = status_of(trailers).unwrap_or(Code::Unknown);
                    this.call.finish(code);
                }
            }
            // A body error resets the stream: the peer sees no status.
            Poll::Ready(Some(Err(_))) => this.call.finish(Code::Internal),
            Poll::Ready(None) => {
                let code = live.status.unwrap_or(Code::Unknown);
                this.call.finish(code);
            }
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
