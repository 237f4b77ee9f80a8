//! [`SharedBudget`]: the crate's receive budget, a byte capacity with a fair
//! wait queue, the overdraft progress rule and a lazily started timer thread.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use super::{Budget, BudgetStats, Http2Windows, ReceiveBudget, Request, WaitSlot};
use crate::status::{Code, Status};

/// How long a stream waits for memory before failing, unless configured.
pub const DEFAULT_MAX_WAIT: Duration = Duration::from_secs(30);

/// How long the oldest waiter waits before it may overdraw, unless
/// configured: long enough for ordinary contention to resolve by releases.
pub const DEFAULT_OVERDRAFT_AFTER: Duration = Duration::from_millis(100);

/// A receive budget of a fixed byte capacity, shared by every clone.
///
/// Cheap to clone (one reference count). Follows the rules of the
/// [module docs](super): gated large-message growth in one fair queue,
/// ungated slabs, the oldest waiter overdrawing by one message, waits that
/// time out after [`with_max_wait`](Self::with_max_wait).
///
/// ```
/// use std::time::Duration;
/// use grpc_stream_codec::budget::SharedBudget;
///
/// let budget = SharedBudget::new(256 << 20).with_max_wait(Duration::from_secs(10));
/// let stats = budget.stats();
/// assert_eq!((stats.capacity, stats.in_use, stats.waiting), (256 << 20, 0, 0));
/// ```
#[derive(Clone)]
pub struct SharedBudget {
    inner: Arc<Inner>,
}

struct Inner {
    /// This budget itself, for the timer thread it starts.
    me: Weak<Inner>,
    capacity: usize,
    max_wait: Duration,
    overdraft_after: Duration,
    state: Mutex<State>,
    /// Wakes the timer thread when a new, earlier deadline appears.
    timer: Condvar,
}

#[derive(Default)]
struct State {
    in_use: usize,
    peak: usize,
    /// What started messages will still allocate (declared, not yet
    /// received): kept free for them, so a message that starts can finish.
    reserved: usize,
    /// Waiters whose message is under way, in arrival order (deadlines
    /// therefore ascend too); served first.
    under_way: VecDeque<Waiter>,
    /// Waiters whose message has yet to start, in arrival order.
    starting: VecDeque<Waiter>,
    /// Waiters served or timed out that have not polled since.
    resolved: HashMap<u64, Resolution>,
    next_id: u64,
    /// The waiter id holding the overdraft, if any.
    overdraft: Option<u64>,
    timer_running: bool,
    timed_out: u64,
    waits: u64,
}

struct Waiter {
    id: u64,
    bytes: usize,
    /// What must be free to serve it: `bytes`, or for a message to start,
    /// all it will allocate.
    fit: usize,
    /// Whether it waits to start a message (else to grow one).
    starts: bool,
    waker: Waker,
    /// From then on it may take the overdraft.
    overdraft_at: Instant,
    deadline: Instant,
}

impl Waiter {
    /// When the wait began: its deadline less the budget's wait, so no
    /// clock is read for it.
    fn since(&self, max_wait: Duration) -> Instant {
        self.deadline.checked_sub(max_wait).unwrap_or(self.deadline)
    }
}

#[derive(Clone, Copy)]
enum Resolution {
    /// Granted (already counted in `in_use`); `overdraft` if by that rule.
    Granted {
        bytes: usize,
        overdraft: bool,
        /// For a message that starts: what is kept free for its rest.
        reserve: usize,
        /// Whether the grant starts a message (else it grows one).
        starts: bool,
        /// When the wait began.
        since: Instant,
    },
    TimedOut {
        /// When the wait began.
        since: Instant,
    },
}

impl SharedBudget {
    /// A budget of `capacity` bytes, waits of [`DEFAULT_MAX_WAIT`].
    pub fn new(capacity: usize) -> Self {
        Self::build(capacity, DEFAULT_MAX_WAIT, DEFAULT_OVERDRAFT_AFTER)
    }

    fn build(capacity: usize, max_wait: Duration, overdraft_after: Duration) -> Self {
        SharedBudget {
            inner: Arc::new_cyclic(|me| Inner {
                me: me.clone(),
                capacity,
                max_wait,
                overdraft_after,
                state: Mutex::new(State::default()),
                timer: Condvar::new(),
            }),
        }
    }

    /// Sets how long a stream waits for memory before it fails with
    /// `resource_exhausted`. Call it before sharing the budget: clones made
    /// earlier keep the old setting.
    pub fn with_max_wait(self, max_wait: Duration) -> Self {
        Self::build(self.inner.capacity, max_wait, self.inner.overdraft_after)
    }

    /// Sets how long the oldest waiter waits before the progress rule lets
    /// it overdraw by one message (default [`DEFAULT_OVERDRAFT_AFTER`]).
    /// Zero overdraws at once; a value at or above the maximum wait turns
    /// the rule off, leaving timeouts as the only way out of a deadlock.
    /// Call it before sharing the budget.
    pub fn with_overdraft_after(self, overdraft_after: Duration) -> Self {
        Self::build(self.inner.capacity, self.inner.max_wait, overdraft_after)
    }

    /// What the budget holds now.
    pub fn stats(&self) -> BudgetStats {
        self.inner.stats()
    }

    /// HTTP/2 settings for a server (or client) whose received streams
    /// count against this budget, with at most `streams_per_connection`
    /// streams open on one connection.
    ///
    /// A stream that waits for the budget stops reading and leaves up to
    /// its stream window unread; that also fills its connection's window.
    /// If waiting streams could fill the whole connection window, the
    /// streams on that connection that hold the budget could not receive
    /// the rest of their messages, and waits would end only by timeout.
    /// The rule:
    ///
    /// - `connection = (streams_per_connection + 1) × stream`: every stream
    ///   may leave a whole window unread and one window is still free;
    /// - `stream` = 64 KiB (HTTP/2's default), lowered to
    ///   `capacity / (streams_per_connection + 1)` so that what one
    ///   connection can leave unread beside the budget is at most the
    ///   budget, but not below 16 KiB (one default frame) unless the
    ///   connection window's protocol maximum (2^31 − 1) requires it;
    /// - `max_concurrent_streams = streams_per_connection` (from 1 up to
    ///   65 536): set it too, or a peer may open more streams than the
    ///   connection window was sized for.
    ///
    /// The windows keep streams that hold the budget from being starved
    /// by streams that wait; they do not help when handlers keep more than
    /// the budget (see the module docs' progress rule).
    ///
    /// ```
    /// use grpc_stream_codec::budget::SharedBudget;
    ///
    /// let budget = SharedBudget::new(256 << 20);
    /// let windows = budget.http2_windows(64);
    /// assert_eq!((windows.stream, windows.connection), (64 << 10, 65 * (64 << 10)));
    /// assert_eq!(windows.max_concurrent_streams, 64);
    /// // tonic: Server::builder()
    /// //     .initial_stream_window_size(windows.stream)
    /// //     .initial_connection_window_size(windows.connection)
    /// //     .max_concurrent_streams(windows.max_concurrent_streams)
    /// // volo-grpc: Server::new()
    /// //     .http2_init_stream_window_size(windows.stream)
    /// //     .http2_init_connection_window_size(windows.connection)
    /// //     .http2_max_concurrent_streams(windows.max_concurrent_streams)
    ///
    /// // A small budget gets smaller windows.
    /// let small = SharedBudget::new(1 << 20).http2_windows(32);
    /// assert_eq!(small.stream, (1 << 20) / 33);
    /// assert_eq!(small.connection, 33 * small.stream);
    /// ```
    pub fn http2_windows(&self, streams_per_connection: u32) -> Http2Windows {
        Http2Windows::for_capacity(self.inner.capacity, streams_per_connection)
    }
}

impl std::fmt::Debug for SharedBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedBudget")
            .field("stats", &self.stats())
            .field("max_wait", &self.inner.max_wait)
            .finish()
    }
}

impl From<SharedBudget> for Budget {
    fn from(shared: SharedBudget) -> Budget {
        Budget(shared.inner)
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves counts that are still
        // consistent (every update is a single assignment): keep going.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn add(&self, state: &mut State, bytes: usize) {
        state.in_use = state.in_use.saturating_add(bytes);
        state.peak = state.peak.max(state.in_use);
    }

    fn fits(&self, state: &State, bytes: usize) -> bool {
        state.in_use.saturating_add(bytes) <= self.capacity
    }

    /// Whether a message that will allocate `bytes` in all may start: it
    /// fits beside what is in use and what started messages still need.
    fn admits(&self, state: &State, bytes: usize) -> bool {
        state
            .in_use
            .saturating_add(state.reserved)
            .saturating_add(bytes)
            <= self.capacity
    }

    /// Whether `request` may be served without waiting: a message under
    /// way takes what it was promised, or what fits; a message starts if
    /// all of it is admitted and no waiter it must not overtake is queued.
    fn may_take_now(&self, state: &State, slot: &WaitSlot, request: Request) -> bool {
        match request.starting {
            None => request.bytes <= slot.reserved() || self.fits(state, request.bytes),
            Some(rest) => Self::waiting(state) == 0 && self.admits(state, rest.max(request.bytes)),
        }
    }

    /// Counts a grant made at once: a chunk of a message under way comes
    /// out of what the message was promised; a message that starts is
    /// promised the rest of it.
    fn take_now(&self, state: &mut State, slot: &mut WaitSlot, request: Request) {
        self.add(state, request.bytes);
        match request.starting {
            None => {
                let promised = slot.use_reserved(request.bytes);
                state.reserved = state.reserved.saturating_sub(promised);
            }
            Some(rest) => {
                let promise = rest.saturating_sub(request.bytes);
                slot.reserve(promise);
                state.reserved += promise;
            }
        }
    }

    /// Serves waiters while memory allows, and returns the wakers to call
    /// once the lock is released. Messages under way first: every one
    /// whose grant fits, oldest first (a message under way that fits is not
    /// held up behind a larger one: finishing it is what frees memory).
    /// Then messages waiting to start, strictly in order. The oldest waiter
    /// takes a free overdraft once it has waited long enough.
    fn serve(&self, state: &mut State) -> Vec<Waker> {
        let mut woken = Vec::new();
        let now = Instant::now();
        let mut index = 0;
        while index < state.under_way.len() {
            let waiter = &state.under_way[index];
            let overdraft = if self.fits(state, waiter.fit) {
                false
            } else if index == 0 && state.overdraft.is_none() && waiter.overdraft_at <= now {
                true
            } else {
                index += 1;
                continue;
            };
            if let Some(waiter) = state.under_way.remove(index) {
                self.grant(state, waiter, overdraft, &mut woken);
            }
        }
        if !state.under_way.is_empty() {
            return woken;
        }
        while let Some(head) = state.starting.front() {
            let overdraft = if self.admits(state, head.fit) {
                false
            } else if state.overdraft.is_none() && head.overdraft_at <= now {
                true
            } else {
                break;
            };
            if let Some(head) = state.starting.pop_front() {
                self.grant(state, head, overdraft, &mut woken);
            }
        }
        woken
    }

    fn grant(&self, state: &mut State, waiter: Waiter, overdraft: bool, woken: &mut Vec<Waker>) {
        self.add(state, waiter.bytes);
        let reserve = if waiter.starts {
            waiter.fit.saturating_sub(waiter.bytes)
        } else {
            0
        };
        state.reserved += reserve;
        if overdraft {
            state.overdraft = Some(waiter.id);
        }
        state.resolved.insert(
            waiter.id,
            Resolution::Granted {
                bytes: waiter.bytes,
                overdraft,
                reserve,
                starts: waiter.starts,
                since: waiter.since(self.max_wait),
            },
        );
        woken.push(waiter.waker);
    }

    /// When the timer must look again: the earliest deadline, or the
    /// moment the next head may take a free overdraft.
    fn next_event(&self, state: &State) -> Option<Instant> {
        let heads = [state.under_way.front(), state.starting.front()];
        let deadline = heads.iter().flatten().map(|w| w.deadline).min()?;
        let overdraft = state
            .overdraft
            .is_none()
            .then(|| heads.iter().flatten().next().map(|w| w.overdraft_at))
            .flatten();
        Some(overdraft.map_or(deadline, |at| at.min(deadline)))
    }

    /// Times out every waiter whose deadline has passed.
    fn expire(&self, state: &mut State, now: Instant, woken: &mut Vec<Waker>) {
        for under_way in [true, false] {
            loop {
                let queue = if under_way {
                    &mut state.under_way
                } else {
                    &mut state.starting
                };
                if queue.front().is_none_or(|w| w.deadline > now) {
                    break;
                }
                let Some(expired) = queue.pop_front() else {
                    break;
                };
                state.timed_out += 1;
                let since = expired.since(self.max_wait);
                state
                    .resolved
                    .insert(expired.id, Resolution::TimedOut { since });
                woken.push(expired.waker);
            }
        }
    }

    /// Hands a waited-for grant to its stream: a message that starts keeps
    /// its reserve; a message that grows uses up its own reserve first.
    fn collect(
        state: &mut State,
        slot: &mut WaitSlot,
        bytes: usize,
        overdraft: bool,
        reserve: usize,
        starts: bool,
    ) {
        slot.set_queued(None);
        if overdraft {
            slot.grant_overdraft();
        }
        if starts {
            slot.reserve(reserve);
        } else {
            let promised = slot.use_reserved(bytes);
            state.reserved = state.reserved.saturating_sub(promised);
        }
    }

    fn waiting(state: &State) -> usize {
        state.under_way.len() + state.starting.len()
    }

    /// Serves the waiters, if any, and wakes them once the lock is released.
    fn serve_waiting(&self, mut state: MutexGuard<'_, State>) {
        if Self::waiting(&state) == 0 {
            return;
        }
        let woken = self.serve(&mut state);
        drop(state);
        woken.into_iter().for_each(Waker::wake);
    }

    fn start_timer(&self, state: &mut State) {
        if state.timer_running {
            return;
        }
        let Some(inner) = self.me.upgrade() else {
            return;
        };
        state.timer_running = true;
        let spawned = std::thread::Builder::new()
            .name("receive-budget-timer".into())
            .spawn(move || inner.run_timer());
        if spawned.is_err() {
            // No thread, no timeouts: waits still end when memory is
            // released. Try again with the next waiter.
            state.timer_running = false;
        }
    }

    /// The timer thread: sleeps until the oldest deadline, times out the
    /// waiters whose deadline has passed, and exits when nobody waits.
    fn run_timer(&self) {
        let mut state = self.lock();
        loop {
            let Some(wake) = self.next_event(&state) else {
                state.timer_running = false;
                return;
            };
            let now = Instant::now();
            if wake > now {
                state = self
                    .timer
                    .wait_timeout(state, wake - now)
                    .map(|(guard, _)| guard)
                    .unwrap_or_else(|poisoned| poisoned.into_inner().0);
                continue;
            }
            let mut woken = Vec::new();
            self.expire(&mut state, now, &mut woken);
            // A new head may fit where an expired one did not, or may take
            // the overdraft now.
            woken.extend(self.serve(&mut state));
            drop(state);
            woken.into_iter().for_each(Waker::wake);
            state = self.lock();
        }
    }

    fn exhausted(&self, bytes: usize, in_use: usize) -> Status {
        let status = Status::new(
            Code::ResourceExhausted,
            format!(
                "receive budget exhausted: waited {:?} for {bytes} bytes \
                 (budget of {} bytes, {in_use} in use)",
                self.max_wait, self.capacity
            ),
        );
        #[cfg(any(feature = "tonic", feature = "volo"))]
        crate::observe::budget_timed_out(&status);
        status
    }
}

impl Inner {
    /// A queued slot's wait: its outcome once resolved (the waker renewed
    /// while it is still queued), `None` when this budget does not know it.
    fn poll_queued(
        &self,
        state: &mut State,
        slot: &mut WaitSlot,
        id: u64,
        bytes: usize,
        cx: &mut Context<'_>,
    ) -> Option<Poll<Result<(), Status>>> {
        match state.resolved.remove(&id) {
            Some(Resolution::Granted {
                bytes,
                overdraft,
                reserve,
                starts,
                since,
            }) => {
                Self::collect(state, slot, bytes, overdraft, reserve, starts);
                crate::observe::budget_waited(since, false);
                return Some(Poll::Ready(Ok(())));
            }
            Some(Resolution::TimedOut { since }) => {
                crate::observe::budget_waited(since, true);
                slot.set_queued(None);
                return Some(Poll::Ready(Err(self.exhausted(bytes, state.in_use))));
            }
            None => {}
        }
        let State {
            under_way,
            starting,
            ..
        } = state;
        let waiter = under_way
            .iter_mut()
            .chain(starting.iter_mut())
            .find(|waiter| waiter.id == id)?;
        waiter.waker.clone_from(cx.waker());
        Some(Poll::Pending)
    }

    /// Queues a request that cannot be granted now; returns its id.
    fn enqueue(&self, state: &mut State, request: Request, cx: &mut Context<'_>) -> u64 {
        let id = state.next_id;
        state.next_id += 1;
        state.waits += 1;
        let now = Instant::now();
        let waiter = Waiter {
            id,
            bytes: request.bytes,
            fit: request
                .starting
                .map_or(request.bytes, |rest| rest.max(request.bytes)),
            starts: request.starting.is_some(),
            waker: cx.waker().clone(),
            overdraft_at: now + self.overdraft_after,
            deadline: now + self.max_wait,
        };
        match request.starting {
            None => state.under_way.push_back(waiter),
            Some(_) => state.starting.push_back(waiter),
        }
        id
    }
}

impl ReceiveBudget for Inner {
    fn capacity(&self) -> usize {
        self.capacity
    }

    fn try_acquire(&self, slot: &mut WaitSlot, request: Request) -> bool {
        let mut state = self.lock();
        if slot.holds_overdraft() || self.may_take_now(&state, slot, request) {
            self.take_now(&mut state, slot, request);
            return true;
        }
        false
    }

    fn charge(&self, bytes: usize) {
        let mut state = self.lock();
        self.add(&mut state, bytes);
    }

    fn poll_acquire(
        &self,
        slot: &mut WaitSlot,
        request: Request,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(), Status>> {
        let mut state = self.lock();
        if let Some(id) = slot.queued() {
            if let Some(outcome) = self.poll_queued(&mut state, slot, id, request.bytes, cx) {
                return outcome;
            }
            // Not queued and not resolved: a slot from another budget.
            slot.set_queued(None);
        }
        if slot.holds_overdraft() || self.may_take_now(&state, slot, request) {
            self.take_now(&mut state, slot, request);
            return Poll::Ready(Ok(()));
        }
        let id = self.enqueue(&mut state, request, cx);
        slot.set_queued(Some(id));
        // With a zero overdraft delay it may be served at once.
        let woken = self.serve(&mut state);
        let granted = state.resolved.remove(&id);
        if let Some(Resolution::Granted {
            bytes,
            overdraft,
            reserve,
            starts,
            since,
        }) = granted
        {
            Self::collect(&mut state, slot, bytes, overdraft, reserve, starts);
            crate::observe::budget_waited(since, false);
        } else {
            self.start_timer(&mut state);
        }
        drop(state);
        woken.into_iter().for_each(Waker::wake);
        match slot.queued() {
            None => Poll::Ready(Ok(())),
            Some(_) => Poll::Pending,
        }
    }

    fn release(&self, bytes: usize) {
        let mut state = self.lock();
        state.in_use = state.in_use.saturating_sub(bytes);
        self.serve_waiting(state);
    }

    fn message_received(&self, slot: &mut WaitSlot) {
        let promised = slot.take_reserved();
        if promised == 0 {
            return;
        }
        let mut state = self.lock();
        state.reserved = state.reserved.saturating_sub(promised);
        self.serve_waiting(state);
    }

    fn message_done(&self, slot: &mut WaitSlot) {
        if !slot.take_overdraft() {
            return;
        }
        let mut state = self.lock();
        state.overdraft = None;
        // Whoever heads the queue may take the overdraft now, or when it
        // has waited long enough: the timer sleeps until then.
        self.timer.notify_one();
        self.serve_waiting(state);
    }

    fn cancel(&self, slot: &mut WaitSlot) {
        let queued = slot.queued();
        slot.set_queued(None);
        if queued.is_none() && !slot.holds_overdraft() && slot.reserved() == 0 {
            return;
        }
        let mut state = self.lock();
        let promised = slot.take_reserved();
        state.reserved = state.reserved.saturating_sub(promised);
        if let Some(id) = queued {
            state.under_way.retain(|w| w.id != id);
            state.starting.retain(|w| w.id != id);
            match state.resolved.remove(&id) {
                Some(Resolution::Granted {
                    bytes,
                    overdraft,
                    reserve,
                    ..
                }) => {
                    state.in_use = state.in_use.saturating_sub(bytes);
                    state.reserved = state.reserved.saturating_sub(reserve);
                    if overdraft {
                        slot.grant_overdraft();
                    }
                }
                Some(Resolution::TimedOut { .. }) | None => {}
            }
        }
        if slot.take_overdraft() {
            state.overdraft = None;
            self.timer.notify_one();
        }
        self.serve_waiting(state);
    }

    fn stats(&self) -> BudgetStats {
        let state = self.lock();
        BudgetStats {
            capacity: self.capacity,
            in_use: state.in_use,
            reserved: state.reserved,
            peak: state.peak,
            waiting: Self::waiting(&state),
            timed_out: state.timed_out,
            waits: state.waits,
        }
    }
}
