//! A66's server instruments: one record per call, from its request headers
//! to the status in its trailers.

use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use http::HeaderMap;
use opentelemetry::{KeyValue, Value};

use super::instruments::{Instruments, instruments, names};
use crate::spares::{self, Spares};
use crate::status::Code;

/// A server call being recorded, or nothing when no meter is installed.
/// The call layer's response body ([`ServerResponse`](crate::call::ServerResponse))
/// carries it and tells it the message bytes sent and the status; dropped
/// before its status is sent (the handler's future or the response body
/// dropped: the peer went away), it records `CANCELLED`.
///
/// One pointer: the record rides in the call's future and its response
/// body, and inline it made every call's state some 80 bytes larger,
/// recorded or not.
#[derive(Default)]
pub(crate) struct ServerCall(Option<Arc<Live>>);

/// A recorded call's figures, shared by its response, which finishes the
/// record, and its request stream, which counts the bytes it receives.
struct Live {
    instruments: Arc<Instruments>,
    method: Arc<str>,
    /// The method name's number in the process-wide table.
    #[cfg_attr(not(feature = "opentelemetry-bound"), allow(dead_code))]
    number: usize,
    start: Instant,
    /// The call's `grpc-timeout`: a `DEADLINE_EXCEEDED` end past it is a
    /// deadline end.
    timeout: Option<Duration>,
    received: AtomicU64,
    /// Response message bytes sent so far.
    sent: AtomicU64,
}

/// Most finished records a thread keeps for the calls that start on it:
/// the calls a connection's read can start before any of them finishes.
const MAX_SPARE_RECORDS: usize = 32;

thread_local! {
    /// Finished records no stream holds any more. A record is one small
    /// allocation, but freeing and making one per call perturbs the
    /// allocator's bins for the call's own message buffers; reused, a
    /// recorded call allocates nothing the unrecorded one does not.
    static SPARE_RECORDS: RefCell<Spares<Arc<Live>, MAX_SPARE_RECORDS>> =
        const { Spares::new() };
}

impl Live {
    /// A record of a call to `name` starting now, or `None` when no meter
    /// is installed.
    // The common case, a spare record restarted for the method it last
    // recorded, is kept to a few straight lines of code: on a busy server
    // each line of it is a cache miss of its own by the next call.
    #[inline]
    fn start(name: &str, timeout: Option<Duration>) -> Option<Arc<Live>> {
        match spares::take(&SPARE_RECORDS) {
            Some(mut spare) => match Arc::get_mut(&mut spare) {
                Some(live) => {
                    live.restart(name, timeout)?;
                    Some(spare)
                }
                None => Live::start_new(name, timeout),
            },
            None => Live::start_new(name, timeout),
        }
    }

    /// A record made for a call to `name`, when no spare is at hand.
    #[cold]
    #[inline(never)]
    fn start_new(name: &str, timeout: Option<Duration>) -> Option<Arc<Live>> {
        let instruments = instruments()?;
        let (method, number) = super::codec::intern_numbered(name);
        super::started::count(number);
        Some(Arc::new(Live {
            instruments,
            method,
            number,
            start: Instant::now(),
            timeout,
            received: AtomicU64::new(0),
            sent: AtomicU64::new(0),
        }))
    }

    /// Makes a finished record the record of a call to `name` starting
    /// now. What a service's calls mostly share with the last one, the
    /// instruments and the method's name, is kept as it is.
    #[inline]
    fn restart(&mut self, name: &str, timeout: Option<Duration>) -> Option<()> {
        if !self.instruments.are_current() || *self.method != *name {
            self.rebind(name)?;
        }
        super::started::count(self.number);
        self.start = Instant::now();
        self.timeout = timeout;
        *self.received.get_mut() = 0;
        *self.sent.get_mut() = 0;
        Some(())
    }

    /// Points a spare record at the latest instruments and at `name`.
    #[cold]
    #[inline(never)]
    fn rebind(&mut self, name: &str) -> Option<()> {
        if !self.instruments.are_current() {
            self.instruments = instruments()?;
        }
        if *self.method != *name {
            (self.method, self.number) = super::codec::intern_numbered(name);
        }
        Some(())
    }

    fn finish(&self, code: Code) {
        let ended = Instant::now();
        let received = self.received.load(Ordering::Relaxed);
        let sent = self.sent.load(Ordering::Relaxed);
        if code == Code::DeadlineExceeded {
            self.deadline_exceeded(ended);
        }
        self.record(code, ended, sent, received);
    }

    /// Counts the call as ended by its deadline when it ran past it.
    #[cold]
    #[inline(never)]
    fn deadline_exceeded(&self, ended: Instant) {
        let elapsed = ended.saturating_duration_since(self.start);
        if self.timeout.is_some_and(|timeout| elapsed >= timeout) {
            let method = KeyValue::new(names::METHOD, Value::from(self.method.clone()));
            self.instruments.server_deadline_ended.add(1, &[method]);
        }
    }

    /// Records the call on its histograms bound to its method and `code`,
    /// with the thread's next batch.
    #[cfg(feature = "opentelemetry-bound")]
    fn record(&self, code: Code, ended: Instant, sent: u64, received: u64) {
        let call = super::batched::Finished {
            number: self.number,
            code,
            started: self.start,
            ended,
            sent,
            received,
        };
        super::batched::record(&self.instruments, call);
    }

    /// Records the call on its histograms, by method and `code`.
    #[cfg(not(feature = "opentelemetry-bound"))]
    fn record(&self, code: Code, ended: Instant, sent: u64, received: u64) {
        let instruments = &self.instruments;
        let attributes = [
            KeyValue::new(names::METHOD, Value::from(self.method.clone())),
            KeyValue::new(names::STATUS, code.as_str()),
        ];
        let elapsed = ended.saturating_duration_since(self.start);
        instruments
            .server_duration
            .record(elapsed.as_secs_f64(), &attributes);
        instruments.server_sent.record(sent, &attributes);
        instruments.server_rcvd.record(received, &attributes);
    }
}

/// Where a recorded call's request stream counts the message bytes it
/// receives.
#[derive(Clone)]
pub(crate) struct Received(Arc<Live>);

impl Received {
    /// The message bytes received in all.
    #[inline]
    pub(crate) fn set(&self, bytes: u64) {
        // The call's request stream is the one writer.
        self.0.received.store(bytes, Ordering::Relaxed);
    }

    /// The call's method name, as interned.
    pub(super) fn method(&self) -> &Arc<str> {
        &self.0.method
    }
}

impl fmt::Debug for Received {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Received").field(&self.0.method).finish()
    }
}

impl ServerCall {
    /// Whether the call is recorded (a meter was installed when it began).
    #[inline]
    pub(crate) fn is_recorded(&self) -> bool {
        self.0.is_some()
    }

    /// The call's method for what the request stream records: the name
    /// this record already holds and its count of bytes received, or the
    /// name `path` gives.
    pub(crate) fn method(&self, path: &str) -> super::Method {
        match &self.0 {
            Some(live) => super::Method::recorded(Received(live.clone())),
            None => super::Method::of(path),
        }
    }

    /// Adds `bytes` of response messages sent, as on the wire.
    #[inline]
    pub(crate) fn add_sent(&mut self, bytes: u64) {
        if let Some(live) = &self.0 {
            // The response body is the one writer.
            let sent = live.sent.load(Ordering::Relaxed);
            live.sent.store(sent + bytes, Ordering::Relaxed);
        }
    }

    /// The response message bytes sent so far, as on the wire.
    #[inline]
    pub(crate) fn set_sent(&mut self, bytes: u64) {
        if let Some(live) = &self.0 {
            live.sent.store(bytes, Ordering::Relaxed);
        }
    }

    /// Records the call as ended with `code`.
    // Inline, the recording out of line: every call drops its record, and
    // one that is not recorded should pay for the check alone.
    #[inline]
    pub(crate) fn finish(&mut self, code: Code) {
        if let Some(live) = self.0.take() {
            finish_recorded(live, code);
        }
    }

    /// Reads the response's headers: a trailers-only answer (its status in
    /// the headers, no body to follow) ends the call now.
    #[inline]
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

/// Records `live`'s call as ended with `code`, and keeps the record for the
/// thread's next call when nothing else holds it.
#[inline(never)]
fn finish_recorded(live: Arc<Live>, code: Code) {
    live.finish(code);
    // A request stream still holding the record (its handler has not
    // dropped it yet) frees it when it is done.
    if Arc::strong_count(&live) == 1 {
        spares::keep(&SPARE_RECORDS, live);
    }
}

impl fmt::Debug for ServerCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerCall")
            .field("recorded", &self.is_recorded())
            .finish()
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
    if !super::installed() {
        return ServerCall(None);
    }
    let path = req.uri().path();
    let name = path.strip_prefix('/').unwrap_or(path);
    ServerCall(Live::start(name, timeout(req.headers())))
}

/// The code in `headers`' `grpc-status`, if they carry one.
pub(super) fn status_of(headers: &HeaderMap) -> Option<Code> {
    // A scan, not a lookup: a response's headers and trailers are a few
    // entries, and hashing the name costs more than comparing it to each.
    let (_, value) = headers
        .iter()
        .find(|(name, _)| name.as_str() == crate::status::GRPC_STATUS)?;
    Some(Code::from_header_value(value.as_bytes()).unwrap_or(Code::Unknown))
}
