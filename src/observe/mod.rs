//! What the crate records about its calls: gRPC's OpenTelemetry metrics
//! (gRFC A66) on an [`opentelemetry`] `Meter` the application hands in with
//! [`install`], behind the `opentelemetry` feature.
//!
//! Nothing is recorded until [`install`] is called: until then each call
//! checks one flag and takes no clock reading, allocates nothing and builds
//! no attribute. Without the feature the hooks are empty and compile away.
//!
//! Server calls are recorded by tonic's full framing (`tonic::server::Grpc`
//! as the build hook names it) and by volo-grpc servers behind
//! `BinaryMetadataLayer`; the repository's `docs/observability.md` lists the
//! instruments, their attributes and which adapter records which.

#[cfg(all(
    feature = "opentelemetry-bound",
    any(feature = "tonic", feature = "volo")
))]
mod batched;
#[cfg(feature = "opentelemetry")]
mod budget;
#[cfg(all(feature = "opentelemetry", any(feature = "tonic", feature = "volo")))]
mod client;
mod codec;
#[cfg(any(feature = "tonic", feature = "volo"))]
mod events;
#[cfg(feature = "opentelemetry")]
mod instruments;
#[cfg(all(feature = "opentelemetry", any(feature = "tonic", feature = "volo")))]
mod server;
#[cfg(feature = "opentelemetry")]
mod started;
#[cfg(all(feature = "opentelemetry", any(feature = "tonic", feature = "volo")))]
mod wire;

#[cfg(feature = "opentelemetry")]
pub use budget::{budget_names, observe_budget};

/// Locks `mutex` whether or not a panic poisoned it: a panic while
/// recording leaves nothing half-made that matters to what is recorded.
#[cfg(feature = "opentelemetry")]
fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
#[cfg(any(feature = "tonic", feature = "volo"))]
pub(crate) use events::{budget_timed_out, request_refused};
#[cfg(feature = "opentelemetry")]
pub use instruments::{codec_names, install, installed, names};

pub(crate) use codec::{
    Method, NO_ENCODING, Refusal, Side, budget_waited, message_refused, peer_error,
};
#[cfg(feature = "volo")]
pub(crate) use codec::{client_method, panic_shielded, with_client_method};
#[cfg(any(feature = "tonic", feature = "volo"))]
pub(crate) use codec::{read_ahead_counted, read_ahead_held};

#[cfg(all(feature = "opentelemetry", any(feature = "tonic", feature = "volo")))]
pub(crate) use client::client_call;
#[cfg(all(feature = "opentelemetry", any(feature = "tonic", feature = "volo")))]
pub(crate) use server::ServerCall;
/// A body whose message bytes are counted as they pass.
#[cfg(all(feature = "opentelemetry", feature = "volo"))]
pub(crate) type Counted<B> = wire::Counted<B>;
/// Without the feature nothing is counted: the body itself.
#[cfg(all(not(feature = "opentelemetry"), feature = "volo"))]
pub(crate) type Counted<B> = B;
#[cfg(all(feature = "opentelemetry", any(feature = "tonic", feature = "volo")))]
pub(crate) use server::server_call;

// Without the feature: the same hooks, doing nothing, so the adapters call
// them unconditionally and the compiler removes them.
#[cfg(all(
    not(feature = "opentelemetry"),
    any(feature = "tonic", feature = "volo")
))]
mod off {
    use std::time::Duration;

    use http::HeaderMap;

    use crate::status::Code;

    /// Nothing to carry.
    #[derive(Debug, Default)]
    pub(crate) struct ServerCall;

    impl ServerCall {
        /// Never recorded.
        #[inline(always)]
        pub(crate) fn is_recorded(&self) -> bool {
            false
        }

        /// The method as the request stream names it without a record.
        #[inline(always)]
        pub(crate) fn method(&self, path: &str) -> super::Method {
            super::Method::of(path)
        }

        /// Nothing to record.
        #[inline(always)]
        pub(crate) fn add_sent(&mut self, _bytes: u64) {}

        /// Nothing to record.
        #[inline(always)]
        pub(crate) fn set_sent(&mut self, _bytes: u64) {}

        /// Nothing to record.
        #[inline(always)]
        pub(crate) fn finish(&mut self, _code: Code) {}

        /// Nothing to record.
        #[inline(always)]
        pub(crate) fn response_headers(&mut self, _headers: &HeaderMap) {}

        /// Nothing to record.
        #[inline(always)]
        pub(crate) fn trailers(&mut self, _trailers: &HeaderMap) {}
    }

    /// Nothing to record.
    #[inline(always)]
    pub(crate) fn server_call<B>(
        _req: &http::Request<B>,
        _timeout: impl FnOnce(&HeaderMap) -> Option<Duration>,
    ) -> ServerCall {
        ServerCall
    }

    /// Nothing to carry.
    pub(crate) struct ClientAttempt;

    impl ClientAttempt {
        /// Nothing to record.
        #[inline(always)]
        pub(crate) fn end(self, _code: crate::status::Code) {}

        /// The body as it came.
        #[inline(always)]
        pub(crate) fn response<B>(self, _headers: &http::HeaderMap, body: B) -> B {
            body
        }
    }

    /// The body as it came.
    #[inline(always)]
    pub(crate) fn client_call<B>(_parts: &http::request::Parts, body: B) -> (B, ClientAttempt) {
        (body, ClientAttempt)
    }
}

#[cfg(all(
    not(feature = "opentelemetry"),
    any(feature = "tonic", feature = "volo")
))]
pub(crate) use off::{ServerCall, client_call, server_call};
