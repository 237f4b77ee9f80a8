//! A66's server instruments: one record per call, from its request headers
//! to the status in its trailers.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use http::HeaderMap;
use opentelemetry::{KeyValue, Value};

use super::instruments::{Instruments, instruments, names};
use crate::status::Code;

/// A server call being recorded, or nothing when no meter is installed.
/// The call layer's response body ([`ServerResponse`](crate::call::ServerResponse))
/// carries it and tells it the message bytes sent and the status; dropped
/// before its status is sent (the handler's future or the response body
/// dropped: the peer went away), it records `CANCELLED`.
///
/// Boxed: the record rides in the call's future and its response body, and
/// inline it made every call's state some 80 bytes larger, recorded or not
/// (more copying than the box's one allocation costs a recorded call).
#[derive(Default)]
pub(crate) struct ServerCall(Option<Box<Live>>);

struct Live {
    instruments: Arc<Instruments>,
    method: Arc<str>,
    /// The method name's number in the process-wide table.
    #[cfg_attr(not(feature = "opentelemetry-bound"), allow(dead_code))]
    number: usize,
    start: Instant,
    received: Arc<AtomicU64>,
    /// Response message bytes sent so far.
    sent: u64,
    /// The call's `grpc-timeout`: a `DEADLINE_EXCEEDED` end past it is a
    /// deadline end.
    timeout: Option<Duration>,
}

impl Live {
    fn finish(self, code: Code) {
        let instruments = &self.instruments;
        let elapsed = self.start.elapsed();
        let received = self.received.load(Ordering::Relaxed);
        if code == Code::DeadlineExceeded && self.timeout.is_some_and(|t| elapsed >= t) {
            let method = KeyValue::new(names::METHOD, Value::from(self.method.clone()));
            instruments.server_deadline_ended.add(1, &[method]);
        }
        #[cfg(feature = "opentelemetry-bound")]
        if let Some(bound) = instruments.server_bound(self.number, &self.method, code) {
            bound.duration.record(elapsed.as_secs_f64());
            bound.sent.record(self.sent);
            bound.rcvd.record(received);
            return;
        }
        let attributes = [
            KeyValue::new(names::METHOD, Value::from(self.method)),
            KeyValue::new(names::STATUS, code.as_str()),
        ];
        instruments
            .server_duration
            .record(elapsed.as_secs_f64(), &attributes);
        instruments.server_sent.record(self.sent, &attributes);
        instruments.server_rcvd.record(received, &attributes);
    }
}

impl ServerCall {
    /// Whether the call is recorded (a meter was installed when it began).
    #[inline]
    pub(crate) fn is_recorded(&self) -> bool {
        self.0.is_some()
    }

    /// The call's method for what the request stream records: the name
    /// this record already holds and the count of bytes received it adds
    /// to, or the name `path` gives.
    pub(crate) fn method(&self, path: &str) -> super::Method {
        match &self.0 {
            Some(live) => super::Method::recorded(live.method.clone(), live.received.clone()),
            None => super::Method::of(path),
        }
    }

    /// The response message bytes sent so far, as on the wire.
    #[inline]
    pub(crate) fn set_sent(&mut self, bytes: u64) {
        if let Some(live) = &mut self.0 {
            live.sent = bytes;
        }
    }

    /// Records the call as ended with `code`.
    pub(crate) fn finish(&mut self, code: Code) {
        if let Some(live) = self.0.take() {
            (*live).finish(code);
        }
    }

    /// Reads the response's headers: a trailers-only answer (its status in
    /// the headers, no body to follow) ends the call now.
    pub(crate) fn response_headers(&mut self, headers: &HeaderMap) {
        if self.0.is_some()
            && let Some(code) = status_of(headers)
        {
            self.finish(code);
        }
    }

    /// The code of the trailers that end the response.
    pub(crate) fn trailers(&mut self, trailers: &HeaderMap) {
        if self.0.is_some() {
            self.finish(status_of(trailers).unwrap_or(Code::Unknown));
        }
    }
}

impl Drop for ServerCall {
    fn drop(&mut self) {
        self.finish(Code::Cancelled);
    }
}

/// Starts recording the call `req` opens, when a meter is installed.
/// `timeout` reads the call's `grpc-timeout`, only when it is recorded.
/// The request's body is left as it is: its stream counts the message
/// bytes it receives, told where by [`ServerCall::method`].
pub(crate) fn server_call<B>(
    req: &http::Request<B>,
    timeout: impl FnOnce(&HeaderMap) -> Option<Duration>,
) -> ServerCall {
    let Some(instruments) = instruments() else {
        return ServerCall(None);
    };
    let (method, number) = instruments.server_call_started(req.uri().path());
    let call = Live {
        instruments,
        method,
        number,
        start: Instant::now(),
        received: Arc::new(AtomicU64::new(0)),
        sent: 0,
        timeout: timeout(req.headers()),
    };
    ServerCall(Some(Box::new(call)))
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
