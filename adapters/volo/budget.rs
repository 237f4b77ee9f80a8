//! Receive budgets for volo-grpc services and clients, whose generated code
//! creates every [`RecvStream`](super::RecvStream) with nothing but the body.
//!
//! Three ways to give streams a [`Budget`], the first that applies wins:
//!
//! 1. per stream: [`RecvStream::with_budget`](super::RecvStream::with_budget)
//!    before reading (for streams a handler receives);
//! 2. per server or client: [`ReceiveBudgetLayer`], which installs the
//!    budget for the streams created while it polls its inner service;
//! 3. per process: [`set_default_budget`].

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use motore::layer::Layer;

use super::scoped::{self, Scoped};
use super::service::wrap_service;
use crate::budget::{Budget, ReceiveBudgetLayer, ReceiveBudgetService};

static DEFAULT_SET: AtomicBool = AtomicBool::new(false);
static DEFAULT: RwLock<Option<Budget>> = RwLock::new(None);

thread_local! {
    static SCOPED: RefCell<Option<Scope>> = const { RefCell::new(None) };
}

/// What a [`ReceiveBudgetLayer`] installs while it polls one call: the
/// budget, and whether a stream of this crate took it.
#[derive(Clone)]
struct Scope {
    budget: Budget,
    taken: Arc<AtomicBool>,
}

/// Logged the first time a call through a layer is not counted.
const UNCOUNTED: &str = "grpc_stream_codec::budget::ReceiveBudgetLayer (volo): a call went through the \
    layer but no stream of grpc-stream-codec took its budget: the service or client it wraps \
    decodes with volo-grpc's own RecvStream (the build hook did not rewrite it), or the layer \
    is not where the streams are made (a server needs layer_front, a client layer_inner), so \
    the receive budget does not bound it. (Logged once per layer; see \
    ReceiveBudgetLayer::uncounted_calls.)";

/// Sets the budget every `RecvStream` created from now on counts against,
/// unless a [`ReceiveBudgetLayer`] or the stream itself says otherwise;
/// `None` turns the default off.
///
/// ```
/// use grpc_stream_codec::budget::SharedBudget;
/// use grpc_stream_codec::volo::{default_budget, set_default_budget};
///
/// let budget = SharedBudget::new(256 << 20);
/// set_default_budget(Some(budget.clone().into()));
/// assert!(default_budget().is_some());
/// # set_default_budget(None);
/// ```
pub fn set_default_budget(budget: Option<Budget>) {
    let set = budget.is_some();
    *DEFAULT
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner()) = budget;
    DEFAULT_SET.store(set, Ordering::Release);
}

/// The process-wide budget, see [`set_default_budget`].
pub fn default_budget() -> Option<Budget> {
    // Without a default, a stream pays one atomic load, never the lock.
    if !DEFAULT_SET.load(Ordering::Acquire) {
        return None;
    }
    DEFAULT
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .clone()
}

/// The budget for a stream created now: the enclosing layer's, else the
/// process default.
pub(super) fn budget_for_new_stream() -> Option<Budget> {
    match scoped::current(&SCOPED) {
        Some(scope) => {
            scope.taken.store(true, Ordering::Relaxed);
            Some(scope.budget)
        }
        None => default_budget(),
    }
}

impl<S> Layer<S> for ReceiveBudgetLayer {
    type Service = ReceiveBudgetService<S>;

    fn layer(self, inner: S) -> Self::Service {
        ReceiveBudgetService::new(inner, self)
    }
}

wrap_service!(ReceiveBudgetService, |this, cx, req| {
    let scope = Scope {
        budget: this.layer.budget().clone(),
        taken: Arc::new(AtomicBool::new(false)),
    };
    let taken = scope.taken.clone();
    let result = Scoped::new(&SCOPED, scope, this.inner.call(cx, req)).await;
    if result.is_ok() && !taken.load(Ordering::Relaxed) {
        this.layer.note_uncounted(UNCOUNTED);
    }
    result
});
