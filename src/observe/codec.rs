//! The hooks the core calls where the crate itself refuses, waits or holds
//! something: a message refused, a peer's stream failing, a wait for the
//! receive budget, the read-ahead's bytes, a framework panic shielded.
//! Each records the crate's own instrument (feature `opentelemetry`, once
//! [`install`](super::install)ed) and writes its `tracing` event (with the
//! `tonic` or `volo` feature); with neither there is nothing to do and each
//! hook is empty.
// Each hook's parameters are read only by the metrics, the events, or both.
#![cfg_attr(
    not(all(feature = "opentelemetry", any(feature = "tonic", feature = "volo"))),
    allow(unused_variables, dead_code)
)]

#[cfg(any(feature = "opentelemetry", feature = "tonic", feature = "volo"))]
use std::sync::Arc;

use crate::status::{Code, Status};

/// Which end of a call a stream belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    /// A server reading a request.
    Server,
    /// A client reading a response.
    Client,
}

impl Side {
    #[cfg(any(feature = "tonic", feature = "volo"))]
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Side::Server => "server",
            Side::Client => "client",
        }
    }
}

/// Why a message was refused: the values of the `grpc_stream_codec.reason`
/// attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Larger than the receive limit (or the whole receive budget), on its
    /// prefix or once decompressed.
    OverLimit,
    /// A prefix with reserved flag bits, a body ending inside a message,
    /// data after gRPC-Web's trailers, bad trailers.
    BadEnvelope,
    /// Corrupt compressed data, or a compressed message on a stream without
    /// a `grpc-encoding`.
    BadCompression,
    /// A `grpc-encoding` this build does not read.
    UnsupportedEncoding,
    /// A complete message its decoder could not decode (protobuf).
    BadMessage,
}

/// What `sink.rs` answers a compressed message on a stream without a
/// `grpc-encoding`: the one envelope error that is about compression.
pub(crate) const NO_ENCODING: &str =
    "protocol error: compressed message on a stream without a grpc-encoding";

impl Refusal {
    /// The reason for a status the envelope assembler failed with: its
    /// size errors are the only `RESOURCE_EXHAUSTED` it makes, compression's
    /// errors carry the codec's error as their source (or are
    /// [`NO_ENCODING`]); everything else is the envelope.
    pub(crate) fn of_envelope_error(status: &Status) -> Refusal {
        if status.code() == Code::ResourceExhausted {
            return Refusal::OverLimit;
        }
        let from_codec = crate::compression::CodecError::is_source_of(status);
        if from_codec || status.message() == NO_ENCODING {
            Refusal::BadCompression
        } else {
            Refusal::BadEnvelope
        }
    }

    /// The attribute value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Refusal::OverLimit => "over_limit",
            Refusal::BadEnvelope => "bad_envelope",
            Refusal::BadCompression => "bad_compression",
            Refusal::UnsupportedEncoding => "unsupported_encoding",
            Refusal::BadMessage => "bad_message",
        }
    }
}

/// A stream's method, `package.Service/Method`, kept only when something
/// will read it (a meter installed, or a subscriber interested in `debug`):
/// otherwise empty, with nothing allocated or looked up. A server call's
/// record also hands its request stream the count of message bytes received
/// (see [`Method::set_received`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct Method {
    #[cfg(any(feature = "opentelemetry", feature = "tonic", feature = "volo"))]
    name: Option<Arc<str>>,
    #[cfg(all(feature = "opentelemetry", any(feature = "tonic", feature = "volo")))]
    received: Option<super::server::Received>,
}

impl Method {
    /// The method of a request to `path` (`/package.Service/Method`).
    #[inline]
    pub(crate) fn of(path: &str) -> Method {
        #[cfg(any(feature = "opentelemetry", feature = "tonic", feature = "volo"))]
        if wanted() {
            return Method {
                name: Some(intern(path.strip_prefix('/').unwrap_or(path))),
                #[cfg(all(feature = "opentelemetry", any(feature = "tonic", feature = "volo")))]
                received: None,
            };
        }
        Method::default()
    }

    /// A recorded server call's method: the record, which holds its
    /// interned name and the count of message bytes its request stream
    /// receives.
    #[cfg(all(feature = "opentelemetry", any(feature = "tonic", feature = "volo")))]
    pub(crate) fn recorded(received: super::server::Received) -> Method {
        // The name is read through the record: cloning the interned name
        // would touch its count, shared by every thread's calls to the
        // method, twice a call.
        Method {
            name: None,
            received: Some(received),
        }
    }

    /// The same name, for another stream of the call: the call's count of
    /// bytes received is its own request stream's alone.
    #[cfg(feature = "volo")]
    pub(crate) fn for_another_stream(&self) -> Method {
        Method {
            name: self.name().cloned(),
            #[cfg(feature = "opentelemetry")]
            received: None,
        }
    }

    /// The name, when kept.
    #[cfg(any(feature = "opentelemetry", feature = "tonic", feature = "volo"))]
    pub(super) fn name(&self) -> Option<&Arc<str>> {
        #[cfg(all(feature = "opentelemetry", any(feature = "tonic", feature = "volo")))]
        if let Some(received) = &self.received {
            return Some(received.method());
        }
        self.name.as_ref()
    }

    /// Tells a recorded server call the message bytes its request stream
    /// has read in all, as on the wire (A66's received compressed size);
    /// nothing for a stream whose call is not recorded.
    #[inline]
    pub(crate) fn set_received(&self, bytes: u64) {
        #[cfg(all(feature = "opentelemetry", any(feature = "tonic", feature = "volo")))]
        if let Some(received) = &self.received {
            received.set(bytes);
        }
    }
}

/// Whether a method name will be read: one relaxed load and `tracing`'s
/// level check.
#[cfg(any(feature = "opentelemetry", feature = "tonic", feature = "volo"))]
#[inline]
fn wanted() -> bool {
    #[cfg(feature = "opentelemetry")]
    if super::installed() {
        return true;
    }
    #[cfg(any(feature = "tonic", feature = "volo"))]
    if tracing::enabled!(tracing::Level::DEBUG) {
        return true;
    }
    false
}

/// Most distinct method names kept: a server sees whatever paths peers
/// send (volo-grpc's router answers unknown ones after this crate has seen
/// them), and each name is a series in every instrument; past this, new
/// ones are `other` (A66's `grpc.method` for them).
#[cfg(any(feature = "opentelemetry", feature = "tonic", feature = "volo"))]
const MAX_METHODS: usize = 1000;

/// One shared string per method name, so a stream's name is a reference
/// count once its method has been seen.
#[cfg(any(feature = "opentelemetry", feature = "tonic", feature = "volo"))]
pub(super) fn intern(name: &str) -> Arc<str> {
    intern_numbered(name).0
}

/// The number [`intern_numbered`] gives names past [`MAX_METHODS`] (which
/// are all `other`).
#[cfg(any(feature = "opentelemetry", feature = "tonic", feature = "volo"))]
pub(super) const OTHER_NUMBER: usize = MAX_METHODS;

/// How many numbers [`intern_numbered`] hands out: a table indexed by them
/// has one slot per name it can see.
#[cfg(feature = "opentelemetry")]
pub(super) const NUMBERS: usize = MAX_METHODS + 1;

#[cfg(any(feature = "opentelemetry", feature = "tonic", feature = "volo"))]
type Names = std::sync::Mutex<std::collections::HashMap<Box<str>, (Arc<str>, usize)>>;

#[cfg(any(feature = "opentelemetry", feature = "tonic", feature = "volo"))]
static NAMES: std::sync::OnceLock<Names> = std::sync::OnceLock::new();

/// [`intern`], with the name's number: names are numbered in the order
/// they are first seen, from 0, so per-method counts can live in a table
/// (`other` is [`OTHER_NUMBER`]). Each thread keeps the last name it was
/// asked for: a service's calls mostly repeat a method, and then neither
/// the shared map's lock nor its hash is touched.
#[cfg(any(feature = "opentelemetry", feature = "tonic", feature = "volo"))]
pub(super) fn intern_numbered(name: &str) -> (Arc<str>, usize) {
    use std::cell::RefCell;

    thread_local! {
        static LAST: RefCell<Option<(Arc<str>, usize)>> = const { RefCell::new(None) };
    }

    let last = LAST.with(|last| {
        last.borrow()
            .as_ref()
            .filter(|(kept, _)| **kept == *name)
            .cloned()
    });
    if let Some(kept) = last {
        return kept;
    }
    let kept = {
        let names = NAMES.get_or_init(Default::default);
        let mut names = names.lock().unwrap_or_else(|e| e.into_inner());
        match names.get(name) {
            Some(kept) => kept.clone(),
            None if names.len() >= MAX_METHODS => {
                return (other_name(), OTHER_NUMBER);
            }
            None => {
                let kept = (Arc::<str>::from(name), names.len());
                names.insert(name.into(), kept.clone());
                kept
            }
        }
    };
    LAST.with(|last| *last.borrow_mut() = Some(kept.clone()));
    kept
}

/// The one shared `other`, the name of every method past [`MAX_METHODS`].
#[cfg(any(feature = "opentelemetry", feature = "tonic", feature = "volo"))]
fn other_name() -> Arc<str> {
    static OTHER: std::sync::OnceLock<Arc<str>> = std::sync::OnceLock::new();
    OTHER.get_or_init(|| Arc::from("other")).clone()
}

/// Calls `each` with every name interned so far and its number.
#[cfg(feature = "opentelemetry")]
pub(super) fn each_interned(mut each: impl FnMut(&Arc<str>, usize)) {
    let Some(names) = NAMES.get() else {
        return;
    };
    for (name, number) in names.lock().unwrap_or_else(|e| e.into_inner()).values() {
        each(name, *number);
    }
}

/// The name [`intern_numbered`] gave `number`, if it gave one.
#[cfg(feature = "opentelemetry-bound")]
pub(super) fn numbered_name(number: usize) -> Option<Arc<str>> {
    if number == OTHER_NUMBER {
        return Some(other_name());
    }
    let mut found = None;
    each_interned(|name, kept| {
        if kept == number {
            found = Some(name.clone());
        }
    });
    found
}

/// A message (or the request carrying it) refused by the crate, with the
/// status sent to the peer: the instrument of `side`, by method and reason,
/// and a `debug` event.
#[cold]
pub(crate) fn message_refused(side: Side, method: &Method, reason: Refusal, status: &Status) {
    #[cfg(all(feature = "opentelemetry", any(feature = "tonic", feature = "volo")))]
    super::instruments::message_refused(side, method, reason);
    #[cfg(any(feature = "tonic", feature = "volo"))]
    super::events::message_refused(side, method, reason, status);
}

/// A peer's stream that failed under the reader (a reset, a transport
/// error): a `debug` event with the status the reader got.
#[cold]
pub(crate) fn peer_error(side: Side, method: &Method, status: &Status) {
    #[cfg(any(feature = "tonic", feature = "volo"))]
    super::events::peer_error(side, method, status);
}

/// A wait for the receive budget, begun at `since`, ended (granted, or
/// timed out): the wait's time. The clock is read only with a meter
/// installed.
#[inline]
pub(crate) fn budget_waited(since: std::time::Instant, timed_out: bool) {
    #[cfg(feature = "opentelemetry")]
    super::instruments::budget_waited(since, timed_out);
}

#[cfg(any(feature = "tonic", feature = "volo"))]
/// Whether a read-ahead made now counts what it holds (a meter is
/// installed): decided once per call, so what it adds it also takes away.
#[inline]
pub(crate) fn read_ahead_counted() -> bool {
    #[cfg(feature = "opentelemetry")]
    return super::installed();
    #[cfg(not(feature = "opentelemetry"))]
    false
}

#[cfg(any(feature = "tonic", feature = "volo"))]
/// Bytes a counted read-ahead took (positive) or gave back (negative).
#[inline]
pub(crate) fn read_ahead_held(delta: i64) {
    #[cfg(feature = "opentelemetry")]
    super::instruments::read_ahead_held(delta);
}

/// A framework panic the crate kept from happening (`trigger` names what
/// would have caused it): its instrument, and a `warn` event at most once a
/// second.
#[cfg(feature = "volo")]
#[cold]
pub(crate) fn panic_shielded(trigger: &'static str, path: &str) {
    #[cfg(all(feature = "opentelemetry", any(feature = "tonic", feature = "volo")))]
    super::instruments::panic_shielded(trigger);
    #[cfg(any(feature = "tonic", feature = "volo"))]
    super::events::panic_shielded(trigger, path);
}

#[cfg(feature = "volo")]
thread_local! {
    /// The method of the client call whose response stream generated code
    /// is making on this thread (volo-grpc hands it the body only).
    static CLIENT_METHOD: std::cell::RefCell<Method> = const {
        std::cell::RefCell::new(Method {
            name: None,
            #[cfg(feature = "opentelemetry")]
            received: None,
        })
    };
}

/// Runs `make` (which makes a client call's response stream) with `method`
/// as the call's method for [`client_method`].
#[cfg(feature = "volo")]
pub(crate) fn with_client_method<T>(method: Method, make: impl FnOnce() -> T) -> T {
    let outer = CLIENT_METHOD.with(|slot| slot.replace(method));
    let made = make();
    CLIENT_METHOD.with(|slot| *slot.borrow_mut() = outer);
    made
}

/// The method [`with_client_method`] set for the stream being made, if any.
#[cfg(feature = "volo")]
pub(crate) fn client_method() -> Method {
    CLIENT_METHOD.with(|slot| slot.borrow().clone())
}
