//! The one `ReceiveBudgetLayer` both adapters plug in: its state lives
//! here, each framework's `Layer` and `Service` impls in its adapter.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::Budget;

/// A layer that gives every stream received under it a receive budget:
/// request streams on a server, response streams on a client. It is a
/// `tower` layer with the `tonic` feature and a `motore` layer with the
/// `volo` feature; both frameworks name it here.
///
/// ```no_run
/// use grpc_stream_codec::budget::{ReceiveBudgetLayer, SharedBudget};
///
/// let budget = SharedBudget::new(256 << 20);
/// let layer = ReceiveBudgetLayer::new(budget.clone());
/// # #[cfg(feature = "tonic")] {
/// // tonic, server: every request stream of every full-framing service.
/// let server = tonic::transport::Server::builder().layer(layer.clone());
/// // tonic, client: every response stream of a full-framing client.
/// // let channel = tower::ServiceBuilder::new().layer(layer.clone()).service(channel);
/// # drop(server);
/// # }
/// // volo-grpc, server: Server::new().layer_front(layer.clone()).add_service(..)
/// // volo-grpc, client: EchoClientBuilder::new("echo").layer_inner(layer.clone())
/// # drop(layer);
/// ```
///
/// A waiting stream leaves up to its HTTP/2 stream window unread, and that
/// counts against its connection's window too: set the server's windows
/// from [`SharedBudget::http2_windows`](super::SharedBudget::http2_windows)
/// (on tonic `Server::initial_stream_window_size`,
/// `initial_connection_window_size` and `max_concurrent_streams`), or the
/// streams that hold the budget may not receive the rest of their messages.
///
/// Where it reads the budget:
///
/// - **tonic**: the layer tags each request and its response; the full
///   framing's `server::Grpc` and `client::Grpc` read the tag when they
///   start decoding. A stream's own `Streaming::with_budget` wins.
/// - **volo-grpc**: the layer installs the budget while it polls the service
///   it wraps, which is where the generated code creates its receiving
///   streams, so on a client it goes with `layer_inner` (around the
///   transport) and on a server with `layer_front`. A stream's own
///   `with_budget` wins; without a layer, the process default
///   (`volo::set_default_budget`) applies.
///
/// Only this crate's framing reads the budget. A call that reaches a
/// service or client decoding another way (stock tonic, the codec-only
/// path, `tonic-health`, volo-grpc code the build hook did not rewrite) is
/// not bounded: the layer counts such calls
/// ([`uncounted_calls`](Self::uncounted_calls)) and logs a `tracing`
/// warning the first time. Calls that fail, are answered without a message
/// body (trailers-only) or are cancelled before their response are not
/// judged.
#[derive(Clone, Debug)]
pub struct ReceiveBudgetLayer {
    budget: Budget,
    uncounted: Arc<Uncounted>,
}

#[derive(Debug, Default)]
struct Uncounted {
    calls: AtomicU64,
    warned: AtomicBool,
}

impl ReceiveBudgetLayer {
    /// A layer giving streams `budget`.
    pub fn new(budget: impl Into<Budget>) -> Self {
        ReceiveBudgetLayer {
            budget: budget.into(),
            uncounted: Arc::default(),
        }
    }

    /// Calls through this layer (its clones and the services made from
    /// it) whose messages the budget did not count, because the service or
    /// client they reached does not decode with this crate's framing. A
    /// call is judged once it has ended.
    pub fn uncounted_calls(&self) -> u64 {
        self.uncounted.calls.load(Ordering::Relaxed)
    }

    /// The budget the layer gives its calls.
    pub(crate) fn budget(&self) -> &Budget {
        &self.budget
    }

    /// Counts a call whose messages the budget did not count, and logs
    /// `warning` (which names the framework's fix) the first time.
    pub(crate) fn note_uncounted(&self, warning: &str) {
        self.uncounted.calls.fetch_add(1, Ordering::Relaxed);
        if !self.uncounted.warned.swap(true, Ordering::Relaxed) {
            tracing::warn!("{warning}");
        }
    }
}

/// The service a [`ReceiveBudgetLayer`] makes around `S`.
#[derive(Clone, Debug)]
pub struct ReceiveBudgetService<S> {
    pub(crate) inner: S,
    pub(crate) layer: ReceiveBudgetLayer,
}

impl<S> ReceiveBudgetService<S> {
    /// `inner`, with `layer`'s budget.
    pub(crate) fn new(inner: S, layer: ReceiveBudgetLayer) -> Self {
        ReceiveBudgetService { inner, layer }
    }

    /// See [`ReceiveBudgetLayer::uncounted_calls`].
    pub fn uncounted_calls(&self) -> u64 {
        self.layer.uncounted_calls()
    }
}
