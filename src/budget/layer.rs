//! What both adapters' `ReceiveBudgetLayer`s share.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::Budget;

/// A receive budget layer's state, shared by the layer, its clones and the
/// services made from it: the budget, and the calls it did not bound.
#[derive(Clone, Debug)]
pub(crate) struct LayerBudget {
    budget: Budget,
    uncounted: Arc<Uncounted>,
}

#[derive(Debug)]
struct Uncounted {
    calls: AtomicU64,
    warned: AtomicBool,
    warning: &'static str,
}

impl LayerBudget {
    /// A layer's state for `budget`; `warning` is logged (`tracing`) the
    /// first time a call is not counted.
    pub(crate) fn new(budget: Budget, warning: &'static str) -> Self {
        let uncounted = Uncounted {
            calls: AtomicU64::new(0),
            warned: AtomicBool::new(false),
            warning,
        };
        LayerBudget {
            budget,
            uncounted: Arc::new(uncounted),
        }
    }

    /// The budget the layer gives its calls.
    pub(crate) fn budget(&self) -> &Budget {
        &self.budget
    }

    /// Calls whose messages the budget did not count.
    pub(crate) fn uncounted_calls(&self) -> u64 {
        self.uncounted.calls.load(Ordering::Relaxed)
    }

    /// Counts a call whose messages the budget did not count, and logs the
    /// warning the first time.
    pub(crate) fn note_uncounted(&self) {
        self.uncounted.calls.fetch_add(1, Ordering::Relaxed);
        if !self.uncounted.warned.swap(true, Ordering::Relaxed) {
            tracing::warn!("{}", self.uncounted.warning);
        }
    }
}
