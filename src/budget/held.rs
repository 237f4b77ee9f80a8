//! [`Held`]: bytes a stream holds beside the message it assembles (the
//! request read-ahead's backlog, the small-message slabs), counted against
//! its budget through one account.

use super::{Budget, WaitSlot};

/// How much a [`Held`] account asks the budget for at a time when it may
/// wait, so a stream of small frames takes the budget's lock once per this
/// many bytes.
#[cfg(any(feature = "tonic", feature = "volo"))]
const GRANT_STEP: usize = 16 * 1024;

/// One stream's account of what it holds beside its messages. Everything
/// still counted goes back to the budget when the account is dropped.
pub(crate) struct Held {
    budget: Budget,
    slot: WaitSlot,
    counted: usize,
}

impl Held {
    pub(crate) fn new(budget: Budget) -> Self {
        Held {
            budget,
            slot: WaitSlot::default(),
            counted: 0,
        }
    }

    /// Counts `bytes` more without asking: memory that is allocated
    /// whatever the budget says (a small-message slab: never gated).
    pub(crate) fn charge(&mut self, bytes: usize) {
        self.budget.policy().charge(bytes);
        self.counted += bytes;
    }

    /// Gives `bytes` of what is counted back.
    pub(crate) fn release(&mut self, bytes: usize) {
        let bytes = bytes.min(self.counted);
        if bytes > 0 {
            self.budget.policy().release(bytes);
            self.counted -= bytes;
        }
    }

    /// Gives everything counted back.
    pub(crate) fn release_all(&mut self) {
        self.release(self.counted);
    }

    /// Whether the budget has room for this account to hold `held` bytes in
    /// all, asking for more (a step at a time) if not; nothing is charged
    /// when it has none, so the caller takes nothing more out of the
    /// transport and flow control holds the peer.
    #[cfg(any(feature = "tonic", feature = "volo"))]
    pub(crate) fn make_room(&mut self, held: usize) -> bool {
        held <= self.counted || self.acquire(held - self.counted)
    }

    /// Takes at least `bytes` (a step at least) from the budget if it can
    /// grant them now.
    #[cfg(any(feature = "tonic", feature = "volo"))]
    fn acquire(&mut self, bytes: usize) -> bool {
        let wanted = bytes.max(GRANT_STEP);
        let policy = self.budget.policy();
        let request = super::Request {
            bytes: wanted,
            starting: Some(wanted),
        };
        if !policy.try_acquire(&mut self.slot, request) {
            return false;
        }
        policy.message_received(&mut self.slot);
        self.counted += wanted;
        true
    }

    /// Whether holding `held` bytes in all is covered by the budget, asking
    /// for more (a step at a time) if not. Bytes already out of the
    /// transport are counted either way: when the budget cannot grant, the
    /// excess is charged and the caller stops taking more, so flow control
    /// holds the peer.
    #[cfg(any(feature = "tonic", feature = "volo"))]
    pub(crate) fn cover(&mut self, held: usize) -> bool {
        if self.make_room(held) {
            return true;
        }
        self.charge(held - self.counted);
        false
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.release_all();
        self.budget.policy().cancel(&mut self.slot);
    }
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Held")
            .field("counted", &self.counted)
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, any(feature = "tonic", feature = "volo")))]
mod tests {
    use super::*;
    use crate::budget::SharedBudget;

    #[test]
    fn what_is_counted_goes_back_with_the_account() {
        let budget = SharedBudget::new(64 * 1024);
        let mut held = Held::new(budget.clone().into());
        held.charge(8 * 1024);
        assert!(held.cover(20 * 1024), "room left: granted");
        assert_eq!(budget.stats().in_use, 8 * 1024 + GRANT_STEP);
        held.release(1024);
        assert_eq!(budget.stats().in_use, 7 * 1024 + GRANT_STEP);
        drop(held);
        assert_eq!(budget.stats().in_use, 0);
    }

    #[test]
    fn no_room_charges_nothing() {
        let budget = SharedBudget::new(16 * 1024);
        let mut held = Held::new(budget.clone().into());
        assert!(held.make_room(1), "a step fits");
        assert_eq!(budget.stats().in_use, GRANT_STEP);
        assert!(held.make_room(GRANT_STEP), "within what is counted");
        assert!(!held.make_room(GRANT_STEP + 1), "the budget is full");
        assert_eq!(budget.stats().in_use, GRANT_STEP, "nothing charged");
    }

    #[test]
    fn what_the_budget_cannot_grant_is_charged_and_refused() {
        let budget = SharedBudget::new(16 * 1024);
        let mut held = Held::new(budget.clone().into());
        assert!(held.cover(16 * 1024));
        assert!(!held.cover(40 * 1024), "over the capacity");
        assert_eq!(budget.stats().in_use, 40 * 1024, "already held: counted");
        held.release_all();
        assert_eq!(budget.stats().in_use, 0);
    }
}
