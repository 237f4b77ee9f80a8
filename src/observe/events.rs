//! `tracing` events for what the crate refuses and waits for, each written
//! where the thing happens. Field names follow OpenTelemetry's RPC
//! conventions (`rpc.system`, `rpc.service`, `rpc.method`,
//! `rpc.grpc.status_code`). Events a peer can cause in bulk at `warn` are
//! rate-limited, so a hostile peer cannot flood the log.
//!
//! With no subscriber interested, an event costs `tracing`'s level check:
//! no clock read, no string building.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use super::codec::{Method, Refusal, Side};
use crate::status::Status;

/// A `debug` event with the fields every refusal and peer error carries:
/// the RPC's names and the status the other side was given.
macro_rules! rpc_debug {
    ($service:expr, $method:expr, $status:expr, $($rest:tt)*) => {
        tracing::debug!(
            rpc.system = "grpc",
            rpc.service = $service,
            rpc.method = $method,
            rpc.grpc.status_code = $status.code() as i32,
            status_message = $status.message(),
            $($rest)*
        )
    };
}

/// A request the call layer refused before serving it, at `debug`: the
/// method it named and the status sent to the peer.
pub(crate) fn request_refused(path: &str, status: &Status) {
    if tracing::enabled!(tracing::Level::DEBUG) {
        let (service, method) = service_and_method(path);
        rpc_debug!(
            service,
            method,
            status,
            "grpc-stream-codec refused a request"
        );
    }
}

/// A message the crate refused, at `debug`: the stream's method, why, and
/// the status sent to the peer (a server) or returned to the application (a
/// client).
pub(crate) fn message_refused(side: Side, method: &Method, reason: Refusal, status: &Status) {
    if tracing::enabled!(tracing::Level::DEBUG) {
        let (service, method) = method_fields(method);
        rpc_debug!(
            service,
            method,
            status,
            reason = reason.as_str(),
            side = side.as_str(),
            "grpc-stream-codec refused a message"
        );
    }
}

/// A peer's stream that failed under its reader (a reset, a transport
/// error), at `debug`, with the status the reader got.
pub(crate) fn peer_error(side: Side, method: &Method, status: &Status) {
    if tracing::enabled!(tracing::Level::DEBUG) {
        let (service, method) = method_fields(method);
        rpc_debug!(
            service,
            method,
            status,
            side = side.as_str(),
            "grpc-stream-codec: the peer's stream failed"
        );
    }
}

/// A framework panic the crate kept from happening, at `warn`, at most once
/// a second for the process (with how many were not logged).
#[cfg(feature = "volo")]
pub(crate) fn panic_shielded(trigger: &'static str, path: &str) {
    if tracing::enabled!(tracing::Level::WARN) {
        panic_shielded_at(&PANICS_SHIELDED, now_secs(), trigger, path);
    }
}

// Only volo-grpc has panics to shield; the unit test reads it on any build.
#[cfg_attr(not(feature = "volo"), allow(dead_code))]
fn panic_shielded_at(limit: &RateLimit, second: u64, trigger: &'static str, path: &str) {
    if let Some(suppressed) = limit.admit(second) {
        let (service, method) = service_and_method(path);
        tracing::warn!(
            rpc.system = "grpc",
            rpc.service = service,
            rpc.method = method,
            trigger,
            suppressed,
            "grpc-stream-codec kept the framework from panicking on a peer's input"
        );
    }
}

#[cfg(feature = "volo")]
static PANICS_SHIELDED: RateLimit = RateLimit::new();

/// `rpc.service` and `rpc.method` of a stream's method (empty when not
/// kept).
fn method_fields(method: &Method) -> (&str, &str) {
    match method.name() {
        Some(name) => name.split_once('/').unwrap_or(("", name)),
        None => ("", ""),
    }
}

/// A stream's wait for the receive budget ended by its time-out, at `warn`,
/// at most once a second for the process (with how many were not logged).
pub(crate) fn budget_timed_out(status: &Status) {
    if tracing::enabled!(tracing::Level::WARN) {
        budget_timed_out_at(&BUDGET_TIMEOUTS, now_secs(), status);
    }
}

fn budget_timed_out_at(limit: &RateLimit, second: u64, status: &Status) {
    if let Some(suppressed) = limit.admit(second) {
        tracing::warn!(
            rpc.system = "grpc",
            rpc.grpc.status_code = status.code() as i32,
            status_message = status.message(),
            suppressed,
            "grpc-stream-codec: a stream's wait for the receive budget timed out"
        );
    }
}

static BUDGET_TIMEOUTS: RateLimit = RateLimit::new();

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

/// One event a second: `admit` says whether this one is logged and, if so,
/// how many were dropped since the last.
struct RateLimit {
    /// The second of the last logged event, plus one (0: none yet).
    last: AtomicU64,
    dropped: AtomicU64,
}

impl RateLimit {
    const fn new() -> Self {
        RateLimit {
            last: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        }
    }

    fn admit(&self, second: u64) -> Option<u64> {
        let stamp = second + 1;
        let last = self.last.load(Ordering::Relaxed);
        if last >= stamp
            || self
                .last
                .compare_exchange(last, stamp, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        Some(self.dropped.swap(0, Ordering::Relaxed))
    }
}

/// `/package.Service/Method` as OpenTelemetry's `rpc.service` and
/// `rpc.method`; anything else whole as the method.
fn service_and_method(path: &str) -> (&str, &str) {
    path.strip_prefix('/')
        .and_then(|rest| rest.split_once('/'))
        .unwrap_or(("", path))
}

#[cfg(test)]
mod tests {
    use test_support::events::Captured;

    use super::*;
    use crate::status::Code;

    #[test]
    fn a_refused_request_is_a_debug_event_with_rpc_fields() {
        let captured = Captured::default();
        let status = Status::internal("malformed grpc-timeout");
        tracing::subscriber::with_default(captured.clone(), || {
            request_refused("/streamcodec.echo.v1.Echo/Unary", &status);
        });
        let event = captured.one("refused a request");
        event.assert_rpc(tracing::Level::DEBUG, "Unary", Some(13));
        assert_eq!(
            event.field("status_message"),
            Some("malformed grpc-timeout")
        );
    }

    #[test]
    fn budget_time_outs_are_warnings_at_most_once_a_second() {
        let captured = Captured::default();
        let status = Status::new(Code::ResourceExhausted, "receive budget exhausted");
        let limit = RateLimit::new();
        tracing::subscriber::with_default(captured.clone(), || {
            for _ in 0..3 {
                budget_timed_out_at(&limit, 7, &status);
            }
            budget_timed_out_at(&limit, 8, &status);
        });
        let events = captured.all();
        assert_eq!(events.len(), 2, "one a second");
        for event in &events {
            assert_eq!(event.level, tracing::Level::WARN);
            assert_eq!(event.field("rpc.grpc.status_code"), Some("8"));
        }
        assert_eq!(events[1].field("suppressed"), Some("2"));
    }

    #[test]
    fn shielded_panics_are_warnings_at_most_once_a_second() {
        let captured = Captured::default();
        let limit = RateLimit::new();
        tracing::subscriber::with_default(captured.clone(), || {
            for _ in 0..3 {
                let path = "/streamcodec.echo.v1.Echo/Bidi";
                panic_shielded_at(&limit, 7, "request_binary_metadata", path);
            }
        });
        let event = captured.one("kept the framework from panicking");
        event.assert_rpc(tracing::Level::WARN, "Bidi", None);
        assert_eq!(event.field("trigger"), Some("request_binary_metadata"));
    }

    #[test]
    fn one_event_a_second_is_logged_and_the_rest_counted() {
        let limit = RateLimit::new();
        assert_eq!(limit.admit(100), Some(0));
        assert_eq!(limit.admit(100), None);
        assert_eq!(limit.admit(100), None);
        assert_eq!(limit.admit(101), Some(2));
        assert_eq!(
            limit.admit(100),
            None,
            "a late clock reading is not a new second"
        );
    }
}
