//! The instruments, made once from the application's `Meter`, and the one
//! flag every call checks before it records anything.
// The call instruments are made from any meter; only the adapters record
// on them, so a build with neither reads none.
#![cfg_attr(not(any(feature = "tonic", feature = "volo")), allow(dead_code))]

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Instant;

use opentelemetry::metrics::{Counter, Histogram, Meter};
use opentelemetry::{KeyValue, Value};

#[cfg(feature = "opentelemetry-bound")]
use crate::status::Code;

#[cfg(any(feature = "tonic", feature = "volo"))]
use super::codec::{Method, Refusal, Side};

/// The instrument and attribute names, as gRFC A66 spells them.
pub mod names {
    /// Server calls started (counter, `{call}`; attribute `grpc.method`).
    pub const SERVER_CALL_STARTED: &str = "grpc.server.call.started";
    /// Server call duration, from the request headers to the status sent
    /// (histogram, `s`; `grpc.method`, `grpc.status`).
    pub const SERVER_CALL_DURATION: &str = "grpc.server.call.duration";
    /// Bytes of response messages a server call sent, as on the wire
    /// (compressed, without the 5-byte prefixes) (histogram, `By`;
    /// `grpc.method`, `grpc.status`).
    pub const SERVER_CALL_SENT_TOTAL_COMPRESSED_MESSAGE_SIZE: &str =
        "grpc.server.call.sent_total_compressed_message_size";
    /// Bytes of request messages a server call received, as on the wire
    /// (histogram, `By`; `grpc.method`, `grpc.status`).
    pub const SERVER_CALL_RCVD_TOTAL_COMPRESSED_MESSAGE_SIZE: &str =
        "grpc.server.call.rcvd_total_compressed_message_size";

    /// Client call attempts started (counter, `{attempt}`; `grpc.method`,
    /// `grpc.target`). This crate makes one attempt per call.
    pub const CLIENT_ATTEMPT_STARTED: &str = "grpc.client.attempt.started";
    /// Client attempt duration, from sending the request headers to the
    /// status (histogram, `s`; `grpc.method`, `grpc.target`, `grpc.status`).
    pub const CLIENT_ATTEMPT_DURATION: &str = "grpc.client.attempt.duration";
    /// Bytes of request messages a client attempt sent, as on the wire
    /// (histogram, `By`; `grpc.method`, `grpc.target`, `grpc.status`).
    pub const CLIENT_ATTEMPT_SENT_TOTAL_COMPRESSED_MESSAGE_SIZE: &str =
        "grpc.client.attempt.sent_total_compressed_message_size";
    /// Bytes of response messages a client attempt received, as on the
    /// wire (histogram, `By`; `grpc.method`, `grpc.target`, `grpc.status`).
    pub const CLIENT_ATTEMPT_RCVD_TOTAL_COMPRESSED_MESSAGE_SIZE: &str =
        "grpc.client.attempt.rcvd_total_compressed_message_size";
    /// Client call duration as the application sees it (histogram, `s`;
    /// `grpc.method`, `grpc.target`, `grpc.status`).
    pub const CLIENT_CALL_DURATION: &str = "grpc.client.call.duration";

    /// The full method name without the leading slash, e.g.
    /// `streamcodec.echo.v1.Echo/Unary`.
    pub const METHOD: &str = "grpc.method";
    /// The status code's name, e.g. `OK`, `RESOURCE_EXHAUSTED`.
    pub const STATUS: &str = "grpc.status";
    /// The server a client calls: the request URI's `scheme://authority`
    /// (volo-grpc's clients: `http://IP:PORT`), or [`OTHER_METHOD`] when
    /// the transport adds it (a tonic `Channel`).
    pub const TARGET: &str = "grpc.target";
    /// What [`METHOD`] (and [`TARGET`]) says once the set of method names seen is full.
    pub const OTHER_METHOD: &str = "other";
}

/// The crate's own instruments, named in A66's style in the crate's
/// namespace: what it refuses, waits for and holds, and the framework
/// panics it keeps from happening.
pub mod codec_names {
    /// Request messages a server refused (counter, `{message}`;
    /// `grpc.method`, [`REASON`]). A request refused for its
    /// `grpc-encoding` is counted here too, reason `unsupported_encoding`.
    pub const SERVER_MESSAGES_REFUSED: &str = "grpc_stream_codec.server.messages_refused";
    /// Response messages a client refused (counter, `{message}`;
    /// `grpc.method`, [`REASON`]).
    pub const CLIENT_MESSAGES_REFUSED: &str = "grpc_stream_codec.client.messages_refused";
    /// Server calls that ended `DEADLINE_EXCEEDED` once their
    /// `grpc-timeout` had passed (counter, `{call}`; `grpc.method`).
    pub const SERVER_DEADLINE_ENDED: &str = "grpc_stream_codec.server.deadline_ended";
    /// Client calls that ended `DEADLINE_EXCEEDED` once their deadline had
    /// passed (counter, `{call}`; `grpc.method`, `grpc.target`).
    pub const CLIENT_DEADLINE_ENDED: &str = "grpc_stream_codec.client.deadline_ended";
    /// Time a stream waited for the receive budget, from the request that
    /// could not be granted to its grant or time-out (histogram, `s`, A66's
    /// latency boundaries; [`OUTCOME`]). Its count with outcome `timed_out`
    /// is the time-outs, with or without `observe_budget`.
    pub const BUDGET_WAIT_DURATION: &str = "grpc_stream_codec.receive_budget.wait_duration";
    /// Request bytes servers have read ahead of their handlers and hold now,
    /// over all calls (gauge, `By`).
    pub const READ_AHEAD_HELD: &str = "grpc_stream_codec.server.read_ahead.held";
    /// Framework panics the crate kept from happening (counter, `{panic}`;
    /// [`TRIGGER`]).
    pub const PANICS_SHIELDED: &str = "grpc_stream_codec.framework_panics_shielded";

    /// Why a message was refused: `over_limit`, `bad_envelope`,
    /// `bad_compression`, `unsupported_encoding`, `bad_message`.
    pub const REASON: &str = "grpc_stream_codec.reason";
    /// How a wait for the budget ended: `granted` or `timed_out`.
    pub const OUTCOME: &str = "grpc_stream_codec.outcome";
    /// What would have made the framework panic: `request_binary_metadata`
    /// (volo-grpc's server scan), `response_binary_metadata` (volo-grpc's
    /// client scan).
    pub const TRIGGER: &str = "grpc_stream_codec.trigger";
}

/// A66's boundaries for latencies, in seconds.
const LATENCY_BOUNDARIES: [f64; 41] = [
    0.0, 0.00001, 0.00005, 0.0001, 0.0003, 0.0006, 0.0008, 0.001, 0.002, 0.003, 0.004, 0.005,
    0.006, 0.008, 0.01, 0.013, 0.016, 0.02, 0.025, 0.03, 0.04, 0.05, 0.065, 0.08, 0.1, 0.13, 0.16,
    0.2, 0.25, 0.3, 0.4, 0.5, 0.65, 0.8, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0,
];

/// A66's boundaries for sizes, in bytes (0 to 4 GiB, by powers of 4 past
/// 4 KiB).
const SIZE_BOUNDARIES: [f64; 14] = [
    0.0,
    1024.0,
    2048.0,
    4096.0,
    16384.0,
    65536.0,
    262144.0,
    1048576.0,
    4194304.0,
    16777216.0,
    67108864.0,
    268435456.0,
    1073741824.0,
    4294967296.0,
];

/// Every instrument the crate records on.
pub(crate) struct Instruments {
    /// Which [`install`] made these.
    generation: u64,
    pub(crate) server_duration: Histogram<f64>,
    pub(crate) server_sent: Histogram<u64>,
    pub(crate) server_rcvd: Histogram<u64>,
    pub(crate) client_started: Counter<u64>,
    pub(crate) client_duration: Histogram<f64>,
    pub(crate) client_sent: Histogram<u64>,
    pub(crate) client_rcvd: Histogram<u64>,
    pub(crate) client_call_duration: Histogram<f64>,
    pub(crate) server_refused: Counter<u64>,
    pub(crate) client_refused: Counter<u64>,
    pub(crate) server_deadline_ended: Counter<u64>,
    pub(crate) client_deadline_ended: Counter<u64>,
    budget_wait: Histogram<f64>,
    #[cfg_attr(not(feature = "volo"), allow(dead_code))]
    panics_shielded: Counter<u64>,
    /// The server histograms bound per method number and status code,
    /// made as each pair is first seen.
    #[cfg(feature = "opentelemetry-bound")]
    server_bound: Box<[std::sync::OnceLock<BoundRow>]>,
}

/// A server call's three histograms bound to one method and status:
/// recording on them skips the SDK's attribute hashing and lookup.
#[cfg(feature = "opentelemetry-bound")]
pub(crate) struct ServerBound {
    pub(crate) duration: opentelemetry::metrics::BoundHistogram<f64>,
    pub(crate) sent: opentelemetry::metrics::BoundHistogram<u64>,
    pub(crate) rcvd: opentelemetry::metrics::BoundHistogram<u64>,
}

/// gRPC's status codes, 0 to 16.
#[cfg(feature = "opentelemetry-bound")]
const CODES: usize = 17;

/// One method's [`ServerBound`]s, by status code.
#[cfg(feature = "opentelemetry-bound")]
type BoundRow = Box<[std::sync::OnceLock<ServerBound>; CODES]>;

impl Instruments {
    fn new(meter: &Meter) -> Self {
        let seconds = |name: &'static str, description: &'static str| {
            meter
                .f64_histogram(name)
                .with_unit("s")
                .with_description(description)
                .with_boundaries(LATENCY_BOUNDARIES.to_vec())
                .build()
        };
        let bytes = |name: &'static str, description: &'static str| {
            meter
                .u64_histogram(name)
                .with_unit("By")
                .with_description(description)
                .with_boundaries(SIZE_BOUNDARIES.to_vec())
                .build()
        };
        // Every install reads the one process-wide table, so the count
        // never goes back (a delta reader would see it fall); only the
        // latest install's callback reports it.
        let generation = INSTALLS.fetch_add(1, Ordering::Relaxed) + 1;
        meter
            .u64_observable_counter(names::SERVER_CALL_STARTED)
            .with_unit("{call}")
            .with_description("Number of server calls started")
            .with_callback(move |observer| {
                if INSTALLS.load(Ordering::Relaxed) != generation {
                    return;
                }
                let counts = super::started::totals();
                super::codec::each_interned(|name, number| {
                    let started = counts[number];
                    if started > 0 {
                        let method = KeyValue::new(names::METHOD, Value::from(name.clone()));
                        observer.observe(started, &[method]);
                    }
                });
                let other = counts[super::codec::OTHER_NUMBER];
                if other > 0 {
                    observer.observe(other, &[KeyValue::new(names::METHOD, names::OTHER_METHOD)]);
                }
            })
            .build();
        Instruments {
            #[cfg(feature = "opentelemetry-bound")]
            server_bound: (0..super::codec::NUMBERS)
                .map(|_| std::sync::OnceLock::new())
                .collect(),
            generation,
            server_duration: seconds(
                names::SERVER_CALL_DURATION,
                "Time from a server call's request headers to its status",
            ),
            server_sent: bytes(
                names::SERVER_CALL_SENT_TOTAL_COMPRESSED_MESSAGE_SIZE,
                "Compressed bytes of the response messages of one server call",
            ),
            server_rcvd: bytes(
                names::SERVER_CALL_RCVD_TOTAL_COMPRESSED_MESSAGE_SIZE,
                "Compressed bytes of the request messages of one server call",
            ),
            client_started: meter
                .u64_counter(names::CLIENT_ATTEMPT_STARTED)
                .with_unit("{attempt}")
                .with_description("Number of client call attempts started")
                .build(),
            client_duration: seconds(
                names::CLIENT_ATTEMPT_DURATION,
                "Time from a client attempt's request headers to its status",
            ),
            client_sent: bytes(
                names::CLIENT_ATTEMPT_SENT_TOTAL_COMPRESSED_MESSAGE_SIZE,
                "Compressed bytes of the request messages of one client attempt",
            ),
            client_rcvd: bytes(
                names::CLIENT_ATTEMPT_RCVD_TOTAL_COMPRESSED_MESSAGE_SIZE,
                "Compressed bytes of the response messages of one client attempt",
            ),
            client_call_duration: seconds(
                names::CLIENT_CALL_DURATION,
                "Time from a client call's start to its status",
            ),
            server_refused: meter
                .u64_counter(codec_names::SERVER_MESSAGES_REFUSED)
                .with_unit("{message}")
                .with_description("Request messages a server refused, by reason")
                .build(),
            client_refused: meter
                .u64_counter(codec_names::CLIENT_MESSAGES_REFUSED)
                .with_unit("{message}")
                .with_description("Response messages a client refused, by reason")
                .build(),
            server_deadline_ended: meter
                .u64_counter(codec_names::SERVER_DEADLINE_ENDED)
                .with_unit("{call}")
                .with_description("Server calls ended by their deadline")
                .build(),
            client_deadline_ended: meter
                .u64_counter(codec_names::CLIENT_DEADLINE_ENDED)
                .with_unit("{call}")
                .with_description("Client calls ended by their deadline")
                .build(),
            budget_wait: seconds(
                codec_names::BUDGET_WAIT_DURATION,
                "Time a stream waited for the receive budget",
            ),
            panics_shielded: meter
                .u64_counter(codec_names::PANICS_SHIELDED)
                .with_unit("{panic}")
                .with_description("Framework panics the crate kept from happening")
                .build(),
        }
    }

    /// The `grpc.method` value of a request path (`/package.Service/Method`):
    /// one shared string per method, so recording allocates nothing once a
    /// method has been seen.
    pub(crate) fn method(&self, path: &str) -> Value {
        self.interned(path.strip_prefix('/').unwrap_or(path))
    }

    /// Whether these are the instruments the latest [`install`] made (a
    /// record kept for reuse may hold older ones).
    pub(crate) fn are_current(&self) -> bool {
        self.generation == INSTALLS.load(Ordering::Relaxed)
    }

    /// The server histograms bound to the method numbered `number` and
    /// `code`, bound on first use.
    #[cfg(feature = "opentelemetry-bound")]
    pub(crate) fn server_bound(&self, number: usize, code: Code) -> Option<&ServerBound> {
        let row = self
            .server_bound
            .get(number)?
            .get_or_init(|| Box::new(std::array::from_fn(|_| std::sync::OnceLock::new())));
        let slot = row.get(code as usize)?;
        if let Some(bound) = slot.get() {
            return Some(bound);
        }
        let method = super::codec::numbered_name(number)?;
        Some(slot.get_or_init(|| {
            let attributes = [
                KeyValue::new(names::METHOD, Value::from(method)),
                KeyValue::new(names::STATUS, code.as_str()),
            ];
            ServerBound {
                duration: self.server_duration.bind(&attributes),
                sent: self.server_sent.bind(&attributes),
                rcvd: self.server_rcvd.bind(&attributes),
            }
        }))
    }

    /// The `grpc.target` value of a client's request URI.
    pub(crate) fn target(&self, uri: &http::Uri) -> Value {
        match (uri.scheme_str(), uri.authority()) {
            (Some(scheme), Some(authority)) => {
                self.interned(&format!("{scheme}://{}", authority.as_str()))
            }
            _ => Value::from(names::OTHER_METHOD),
        }
    }

    fn interned(&self, name: &str) -> Value {
        Value::from(super::codec::intern(name))
    }
}

/// How many times [`install`] has run.
static INSTALLS: AtomicU64 = AtomicU64::new(0);

/// Set once instruments are installed: the one thing an unobserved call
/// reads.
static ON: AtomicBool = AtomicBool::new(false);

static INSTRUMENTS: RwLock<Option<Arc<Instruments>>> = RwLock::new(None);

/// Records this crate's metrics on `meter` from now on: every call that
/// starts after this returns (calls already under way stay unrecorded). A
/// later call replaces the instruments with ones made from its meter;
/// `grpc.server.call.started`, a count the crate keeps and the meter reads
/// when it collects, goes on from what earlier installs counted.
///
/// ```
/// use opentelemetry::metrics::MeterProvider as _;
/// # let provider = opentelemetry::metrics::noop::NoopMeterProvider::new();
/// // provider: the application's SdkMeterProvider, with its exporter
/// grpc_stream_codec::observe::install(&provider.meter("grpc-stream-codec"));
/// assert!(grpc_stream_codec::observe::installed());
/// ```
pub fn install(meter: &Meter) {
    let instruments = Arc::new(Instruments::new(meter));
    meter
        .u64_observable_gauge(codec_names::READ_AHEAD_HELD)
        .with_unit("By")
        .with_description("Request bytes servers hold read ahead of their handlers")
        .with_callback(|observer| {
            // The SDK runs every callback before it reads any instrument:
            // calls kept in threads' batches are recorded in time for
            // this collection.
            #[cfg(all(
                feature = "opentelemetry-bound",
                any(feature = "tonic", feature = "volo")
            ))]
            super::batched::flush_all();
            let held = READ_AHEAD_HELD.load(Ordering::Relaxed).max(0);
            observer.observe(held.unsigned_abs(), &[]);
        })
        .build();
    *INSTRUMENTS.write().unwrap_or_else(|e| e.into_inner()) = Some(instruments);
    ON.store(true, Ordering::Release);
}

/// Whether [`install`] has been called in this process.
#[inline]
pub fn installed() -> bool {
    ON.load(Ordering::Relaxed)
}

/// The installed instruments; `None` (one relaxed load) when none are.
#[inline]
pub(crate) fn instruments() -> Option<Arc<Instruments>> {
    if !ON.load(Ordering::Relaxed) {
        return None;
    }
    INSTRUMENTS
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}

/// Bytes counted read-ahead now, over every call that counts them.
static READ_AHEAD_HELD: AtomicI64 = AtomicI64::new(0);

/// See `codec::read_ahead_held`.
#[inline]
pub(crate) fn read_ahead_held(delta: i64) {
    READ_AHEAD_HELD.fetch_add(delta, Ordering::Relaxed);
}

/// See `codec::budget_waited`.
#[inline]
pub(crate) fn budget_waited(since: Instant, timed_out: bool) {
    let Some(instruments) = instruments() else {
        return;
    };
    let outcome = if timed_out { "timed_out" } else { "granted" };
    instruments.budget_wait.record(
        since.elapsed().as_secs_f64(),
        &[KeyValue::new(codec_names::OUTCOME, outcome)],
    );
}

/// See `codec::message_refused`.
#[cfg(any(feature = "tonic", feature = "volo"))]
pub(crate) fn message_refused(side: Side, method: &Method, reason: Refusal) {
    let Some(instruments) = instruments() else {
        return;
    };
    let counter = match side {
        Side::Server => &instruments.server_refused,
        Side::Client => &instruments.client_refused,
    };
    let method = match method.name() {
        Some(name) => Value::from(name.clone()),
        None => Value::from(names::OTHER_METHOD),
    };
    counter.add(
        1,
        &[
            KeyValue::new(names::METHOD, method),
            KeyValue::new(codec_names::REASON, reason.as_str()),
        ],
    );
}

/// See `codec::panic_shielded`.
#[cfg(feature = "volo")]
pub(crate) fn panic_shielded(trigger: &'static str) {
    if let Some(instruments) = instruments() {
        instruments
            .panics_shielded
            .add(1, &[KeyValue::new(codec_names::TRIGGER, trigger)]);
    }
}
