//! Shares of a budget that travel with the memory they count.

use super::{Budget, WaitSlot};

/// Bytes counted against a budget, given back when dropped.
pub(crate) struct Share {
    budget: Budget,
    bytes: usize,
    /// The bytes were an overdraft (the progress rule): it ends when they
    /// are freed, so overdrawn messages never pile up.
    overdraft: bool,
}

impl Share {
    /// A share of `bytes` already taken from `budget`.
    pub(crate) fn new(budget: Budget, bytes: usize) -> Self {
        Share {
            budget,
            bytes,
            overdraft: false,
        }
    }

    /// A share that also holds the budget's overdraft.
    pub(crate) fn overdrawn(budget: Budget, bytes: usize) -> Self {
        Share {
            budget,
            bytes,
            overdraft: true,
        }
    }
}

impl Drop for Share {
    fn drop(&mut self) {
        if self.bytes > 0 {
            self.budget.policy().release(self.bytes);
        }
        if self.overdraft {
            let mut slot = WaitSlot {
                overdraft: true,
                ..WaitSlot::default()
            };
            self.budget.policy().message_done(&mut slot);
        }
    }
}

/// A message's memory together with its share: the owner behind a counted
/// message's `Bytes::from_owner`, so the share is released exactly when the
/// last clone or slice of the message is dropped.
pub(crate) struct Counted {
    vec: Vec<u8>,
    // Declared after `vec`: the memory is freed before the share is released.
    _share: Share,
}

impl Counted {
    /// `vec` with the share that counts its capacity.
    pub(crate) fn new(vec: Vec<u8>, share: Share) -> Self {
        Counted { vec, _share: share }
    }
}

impl AsRef<[u8]> for Counted {
    fn as_ref(&self) -> &[u8] {
        &self.vec
    }
}
