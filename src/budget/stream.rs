//! One stream's side of a budget: its place in the queue, the grant it waits
//! for, and the share of the message it is assembling.

use std::task::{Context, Poll, ready};

use super::{Budget, Request, Share, WaitSlot};
use crate::status::Status;

/// What a decoder keeps about its budget. Only exists when a budget is set,
/// so a stream without one pays nothing for it.
pub(crate) struct StreamBudget {
    budget: Budget,
    slot: WaitSlot,
    /// Bytes granted and not used yet (a grant that waited, before it is
    /// taken by the step that asked for it).
    credit: usize,
    /// The grant the stream waits for.
    want: Option<Request>,
    /// Bytes counted for the message being assembled.
    held: usize,
}

impl StreamBudget {
    pub(crate) fn new(budget: Budget) -> Self {
        StreamBudget {
            budget,
            slot: WaitSlot::default(),
            credit: 0,
            want: None,
            held: 0,
        }
    }

    pub(crate) fn capacity(&self) -> usize {
        self.budget.policy().capacity()
    }

    /// Takes `bytes` for the message being assembled, which will allocate
    /// `rest` more in all (this grant included): from a grant that already
    /// waited, or at once if the budget allows. Otherwise records the wish
    /// and returns `false`: the caller stops and [`poll`](Self::poll) waits
    /// for it.
    pub(crate) fn take(&mut self, bytes: usize, rest: usize) -> bool {
        let request = Request {
            bytes,
            starting: (self.held == 0).then_some(rest),
        };
        if self.credit >= bytes {
            self.credit -= bytes;
        } else if self.want.is_none() && self.budget.policy().try_acquire(&mut self.slot, request) {
        } else {
            // Having to wait, ask for the rest of the message at once: the
            // memory that comes back then finishes a message instead of
            // being spread over many that each grow a step and wait again.
            self.want = Some(Request {
                bytes: rest.max(bytes),
                ..request
            });
            return false;
        }
        self.held += bytes;
        true
    }

    /// Whether the stream waits for a grant.
    pub(crate) fn blocked(&self) -> bool {
        self.want.is_some()
    }

    /// Waits for the grant [`take`](Self::take) could not have at once.
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Status>> {
        let Some(request) = self.want else {
            return Poll::Ready(Ok(()));
        };
        let granted = ready!(
            self.budget
                .policy()
                .poll_acquire(&mut self.slot, request, cx)
        );
        self.want = None;
        granted?;
        self.credit += request.bytes;
        Poll::Ready(Ok(()))
    }

    /// The assembled message's share, to travel with it; the message is
    /// complete.
    pub(crate) fn message_share(&mut self) -> Share {
        self.message_received();
        let held = std::mem::take(&mut self.held);
        if self.slot.take_overdraft() {
            // The overdraft stays taken until this message is freed.
            return Share::overdrawn(self.budget.clone(), held);
        }
        Share::new(self.budget.clone(), held)
    }

    /// The share of a decompressed message that keeps `keep` bytes: what
    /// the message held beyond that (its compressed bytes, just freed, and
    /// output room granted but not used) is given back; the message is
    /// complete. Output room is always granted before it is used, so
    /// `keep` is within what the message holds.
    pub(crate) fn output_share(&mut self, keep: usize) -> Share {
        if self.held > keep {
            self.budget.policy().release(self.held - keep);
        } else if keep > self.held {
            self.budget.policy().charge(keep - self.held);
        }
        self.held = keep;
        self.message_share()
    }

    /// The message's memory is freed (decompressed, failed): give its share
    /// back; the message is over.
    pub(crate) fn release_message(&mut self) {
        self.message_received();
        let held = std::mem::take(&mut self.held);
        if held > 0 {
            self.budget.policy().release(held);
        }
        self.message_done();
    }

    fn message_received(&mut self) {
        if self.slot.reserved() > 0 {
            self.budget.policy().message_received(&mut self.slot);
        }
    }

    fn message_done(&mut self) {
        if self.slot.holds_overdraft() {
            self.budget.policy().message_done(&mut self.slot);
        }
    }
}

impl Drop for StreamBudget {
    fn drop(&mut self) {
        let unused = self.credit + self.held;
        if unused > 0 {
            self.budget.policy().release(unused);
        }
        if self.slot.queued().is_some() || self.slot.holds_overdraft() || self.slot.reserved() > 0 {
            self.budget.policy().cancel(&mut self.slot);
        }
    }
}

impl std::fmt::Debug for StreamBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamBudget")
            .field("slot", &self.slot)
            .field("want", &self.want)
            .field("held", &self.held)
            .finish_non_exhaustive()
    }
}
