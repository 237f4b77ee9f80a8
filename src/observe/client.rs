//! A66's client instruments: one attempt per call (this crate retries
//! nothing), from the request headers to the status the response ends with.

use std::any::Any;
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
use super::server::status_of;
use super::wire::Counted;
use crate::call::MessageBytes;
use crate::status::{Code, Status};

/// The error the adapters' response bodies carry (the deadline's body).
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A client call being recorded, or nothing when no meter is installed.
/// Dropped before a status arrived (the application stopped reading, or
/// the decoder refused a message), it records `CANCELLED`.
pub(crate) struct ClientAttempt(Option<Live>);

struct Live {
    instruments: Arc<Instruments>,
    method: Value,
    target: Value,
    start: Instant,
    sent: Arc<AtomicU64>,
    received: MessageBytes,
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
            KeyValue::new(names::TARGET, self.target),
            KeyValue::new(names::STATUS, code.as_str()),
        ];
        let instruments = &self.instruments;
        let elapsed = self.start.elapsed();
        if code == Code::DeadlineExceeded && self.timeout.is_some_and(|t| elapsed >= t) {
            instruments.client_deadline_ended.add(1, &attributes[..2]);
        }
        let seconds = elapsed.as_secs_f64();
        instruments.client_duration.record(seconds, &attributes);
        // One attempt, started as the call started: the call's time is the
        // attempt's.
        instruments
            .client_call_duration
            .record(seconds, &attributes);
        instruments
            .client_sent
            .record(self.sent.load(Ordering::Relaxed), &attributes);
        instruments
            .client_rcvd
            .record(self.received.total(), &attributes);
    }
}

impl ClientAttempt {
    /// Ends the attempt with `code`: the call failed before its response
    /// body (the transport, the deadline, the response headers).
    pub(crate) fn end(mut self, code: Code) {
        if let Some(live) = self.0.take() {
            live.finish(code);
        }
    }

    /// The response body, which counts the message bytes it brings and
    /// ends the record at the status.
    pub(crate) fn response<B>(mut self, headers: &HeaderMap, body: B) -> Returned<B> {
        if let Some(live) = &mut self.0 {
            live.status = status_of(headers);
        }
        Returned {
            inner: body,
            attempt: self,
        }
    }

    fn finish(&mut self, code: Code) {
        if let Some(live) = self.0.take() {
            live.finish(code);
        }
    }
}

impl Drop for ClientAttempt {
    fn drop(&mut self) {
        if let Some(live) = self.0.take() {
            live.finish(Code::Cancelled);
        }
    }
}

/// Starts recording a client call to `parts`' URI (when a meter is
/// installed), and counts the message bytes of its request body as they
/// leave.
pub(crate) fn client_call<B>(parts: &http::request::Parts, body: B) -> (Counted<B>, ClientAttempt) {
    let Some(instruments) = instruments() else {
        return (Counted::new(body, None), ClientAttempt(None));
    };
    let method = instruments.method(parts.uri.path());
    let target = instruments.target(&parts.uri);
    instruments.client_started.add(
        1,
        &[
            KeyValue::new(names::METHOD, method.clone()),
            KeyValue::new(names::TARGET, target.clone()),
        ],
    );
    let sent = Arc::new(AtomicU64::new(0));
    let attempt = Live {
        instruments,
        method,
        target,
        start: Instant::now(),
        sent: sent.clone(),
        received: MessageBytes::default(),
        status: None,
        timeout: crate::call::timeout_from_headers(&parts.headers),
    };
    (Counted::new(body, Some(sent)), ClientAttempt(Some(attempt)))
}

/// The code a response body's error stands for: this crate's status (the
/// deadline, a mapped transport reset) as it is; any other transport error
/// is `UNAVAILABLE`.
fn code_of_error(error: &(dyn Any + 'static)) -> Code {
    if let Some(status) = error.downcast_ref::<Status>() {
        return status.code();
    }
    if let Some(boxed) = error.downcast_ref::<BoxError>()
        && let Some(status) = boxed.downcast_ref::<Status>()
    {
        return status.code();
    }
    Code::Unavailable
}

pin_project! {
    /// A client's response body, recorded as it arrives.
    pub struct Returned<B> {
        #[pin]
        inner: B,
        attempt: ClientAttempt,
    }
}

impl<B> Body for Returned<B>
where
    B: Body<Data = Bytes>,
    B::Error: 'static,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = self.project();
        let polled = this.inner.poll_frame(cx);
        let Some(live) = &mut this.attempt.0 else {
            return polled;
        };
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    live.received.feed(data);
                } else if let Some(trailers) = frame.trailers_ref() {
                    let code = status_of(trailers).unwrap_or(Code::Unknown);
                    this.attempt.finish(code);
                }
            }
            Poll::Ready(Some(Err(error))) => this.attempt.finish(code_of_error(error)),
            Poll::Ready(None) => {
                // A response without a status is an error to the caller.
                let code = live.status.unwrap_or(Code::Internal);
                this.attempt.finish(code);
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
