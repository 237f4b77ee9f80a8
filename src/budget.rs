//! A receive memory budget shared across streams.
//!
//! [`Limits`](crate::envelope::Limits) bounds one message; a budget bounds the total
//! that every decoder sharing it holds for received messages. A stream that
//! cannot get memory **waits**: it stops polling its body, so HTTP/2 flow
//! control holds that peer, and resumes as soon as memory is released.
//! After [`SharedBudget::with_max_wait`] (default 30 s) it fails with
//! `resource_exhausted`, `receive budget exhausted: ...`.
//!
//! # Turning it on
//!
//! ```
//! use grpc_stream_codec::budget::SharedBudget;
//! use grpc_stream_codec::decode::{BytesDecoder, Streaming};
//! # use bytes::Bytes;
//! # use http_body_util::Full;
//!
//! // One budget for a whole server: clones share it.
//! let budget = SharedBudget::new(256 << 20);
//! # let body = Full::new(Bytes::from_static(b"\0\0\0\0\x02hi"));
//! let stream = Streaming::new_request(body, BytesDecoder, None).with_budget(budget.clone());
//! assert_eq!(budget.stats().in_use, 0);
//! # drop(stream);
//! ```
//!
//! Without a budget nothing changes: the decoder takes one branch on an
//! `Option` and makes no extra allocation or atomic operation per message.
//!
//! # What is counted, and when it is released
//!
//! Exactly what the decoder allocates for received messages, at the moment
//! it allocates it (see [`MessageBuffers`](crate::decode::MessageBuffers)):
//!
//! - a large message (above 4 KiB): each growth of its buffer as bytes
//!   arrive, never the declared length; a message that is fully present is
//!   one grant of its length. The message handed out carries its share
//!   (`Bytes::from_owner` with a guard), so a message a handler keeps stays
//!   counted until its last clone or slice is dropped;
//! - small messages: their 8 KiB slab, once per slab. The share is released
//!   when the slab's memory is freed, i.e. once every message cut from it has
//!   been dropped (a stream keeps an empty handle to a slab still in use and
//!   frees it, releasing the share, at its next slab refill; at the end of
//!   the stream that handle is dropped and the share released);
//! - decompressed output: the room decompression may write, granted before
//!   it runs (see below); once it is done, the message's exact size.
//!
//! # When a grant waits: the rules
//!
//! - **Gated**: large-message growth. A grant that does not fit waits.
//!   Messages under way come first: released memory goes to every waiter
//!   whose message has started and whose grant fits, oldest first (finishing
//!   a message is what frees memory), then, when none of those waits, to
//!   the streams waiting to start a message, strictly in arrival order.
//!   A message starts only when all of it fits beside what is in use and
//!   what messages already started still need: the rest of its declared
//!   length is then *reserved* (kept free for it, not counted as in use:
//!   its growth is still counted as it arrives) and every later growth of
//!   it is granted without waiting. Under exhaustion, streams therefore
//!   finish their messages one after the other at full speed, instead of
//!   all of them holding a part of one and waiting for the rest. A message
//!   that has to wait to start is granted all of its growth at once
//!   (counted from then on, allocated as its bytes arrive).
//! - **HTTP/2 windows**: a waiting stream leaves up to its stream window
//!   unread, which also fills its connection's window. Keep the stream
//!   window times the streams that may wait on one connection below the
//!   connection window, or the streams holding the budget cannot receive
//!   the rest of their messages and waits end only by timeout.
//!   [`SharedBudget::http2_windows`] gives settings that keep this rule.
//! - **Never gated**: small-message slabs (counted, may exceed the capacity).
//!   That is what keeps small requests of well-behaved clients flowing while
//!   hostile streams hold the budget; their total is bounded by one slab per
//!   stream plus what handlers keep.
//! - **Progress rule**: the oldest waiter may overdraw by one message. When
//!   the head of the queue has waited
//!   [`overdraft_after`](SharedBudget::with_overdraft_after) (default
//!   100 ms) and no other stream holds the overdraft, it is served anyway
//!   and keeps the overdraft until that message is freed (dropped by the
//!   handler). So when every stream holds part of a message and
//!   waits, one of them still finishes, its memory is released and the queue
//!   moves on.
//! - **What the progress rule does not cover**: memory that handlers keep.
//!   Streams cannot deadlock on each other's partial messages, nor on a
//!   few messages a handler keeps until it receives the next; but when
//!   handlers together keep more than the budget (and wait for more
//!   messages before they drop any), the overdrawn message is kept too,
//!   nothing is released, and every wait ends by timeout with
//!   `resource_exhausted`. Size the budget above what handlers keep at once.
//! - **Decompression** is gated like received bytes. A compressed message
//!   is first received as above (its compressed bytes gated as they
//!   arrive). Before it is decompressed, the budget grants the output room
//!   it may use, waiting like any grant of a message under way (or, for a
//!   payload that arrived whole in one frame, like a message that starts):
//!   the size the compressed data declares (zstd's content size, gzip's
//!   ISIZE, believed only within the receive limit and what deflate can
//!   expand to), else four times the compressed size. Output that needs
//!   more room stops, more is granted (double, or the declared size) and
//!   the message is decompressed again from its compressed bytes, which
//!   are still at hand. A waiting stream holds no decompression context.
//!   Output of up to 4 KiB needs no grant (it goes to the ungated slab).
//!   Once decompressed, the message's share is its exact size: the
//!   compressed bytes and the unused room are released. Output that would
//!   need more than the whole capacity fails with `resource_exhausted`,
//!   `decompressed message exceeds the receive budget of M bytes`.
//! - **Timeout**: a waiter that waited `max_wait` fails with
//!   `resource_exhausted`. Every waiter has the same wait, so they time out
//!   oldest-first.
//! - **Too large**: a message whose declared length exceeds the whole
//!   capacity fails at once, on its header, with `resource_exhausted`,
//!   `message size N exceeds the receive budget of M bytes`.
//!
//! # The bound
//!
//! Every gated grant fits in the capacity, except the one stream's that
//! holds the overdraft; ungated memory is the slabs. So at every moment
//!
//! ```text
//! in use ≤ capacity + one message + ungated slabs
//! ```
//!
//! where *one message* is the overdrawn message's memory: at most the
//! receive limit, or for a compressed message while it is decompressed its
//! compressed bytes and its output room (each at most the receive limit),
//! and *ungated slabs* are 8 KiB per stream receiving small messages plus
//! the slabs that small messages kept by handlers pin. This holds with and
//! without compression (identity, gzip, deflate and zstd alike). It counts
//! what the decoders allocate for messages; a decoder also holds, uncounted,
//! the transport frame it is reading (and, while it decompresses, a pooled
//! decompression context and up to 4 KiB of small output).
//!
//! # The wait timeout needs no runtime
//!
//! The core names no runtime, so [`SharedBudget`] owns one timer thread,
//! started when the first stream has to wait and ended when no stream is
//! waiting. It sleeps on a condition variable until the oldest deadline and
//! wakes timed-out streams through their wakers. An injected timer would
//! tie the budget to an executor (and make every integrator supply one); a
//! thread costs nothing when nobody waits and works under any executor.
//!
//! # Observable
//!
//! [`ReceiveBudget::stats`]: bytes in use, streams waiting, waits that timed
//! out, the peak in use.
//!
//! # A policy of your own
//!
//! Implement [`ReceiveBudget`] (for example one governor for the whole
//! process that also counts other memory) and pass it as
//! [`Budget::new(policy)`](Budget::new).

mod held;
#[cfg(any(feature = "tonic", feature = "volo"))]
mod layer;
mod share;
mod shared;
mod stream;
mod windows;

use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::status::Status;

pub(crate) use held::Held;
#[cfg(any(feature = "tonic", feature = "volo"))]
pub use layer::{ReceiveBudgetLayer, ReceiveBudgetService};
pub(crate) use share::{Counted, Share};
pub use shared::{DEFAULT_MAX_WAIT, DEFAULT_OVERDRAFT_AFTER, SharedBudget};
pub(crate) use stream::StreamBudget;
pub use windows::Http2Windows;

/// A receive memory policy shared by many streams.
///
/// Every decoder calls it with the memory it is about to allocate, and
/// [`release`](Self::release) when that memory is freed. The crate's
/// implementation is [`SharedBudget`]; see the [module docs](self) for the
/// rules it follows, which a custom policy should keep (in particular the
/// progress rule, or streams that all wait can deadlock until they time out).
pub trait ReceiveBudget: Send + Sync + 'static {
    /// The most a message may declare: a larger one fails on its header.
    fn capacity(&self) -> usize;

    /// Takes `request.bytes` if that is possible at once without overtaking
    /// a waiting stream. `slot` identifies the stream (see
    /// [`poll_acquire`](Self::poll_acquire)); a stream holding the overdraft
    /// is always served.
    fn try_acquire(&self, slot: &mut WaitSlot, request: Request) -> bool;

    /// Takes `bytes` unconditionally (memory that is never gated).
    fn charge(&self, bytes: usize);

    /// Takes `bytes`, waiting if needed: `Ready(Ok)` once granted,
    /// `Ready(Err)` (`resource_exhausted`) after the wait timed out, or
    /// `Pending` with `cx`'s waker registered. `slot` is the stream's place
    /// in the queue; call again with the same slot and size until ready.
    fn poll_acquire(
        &self,
        slot: &mut WaitSlot,
        request: Request,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(), Status>>;

    /// Gives back `bytes` taken earlier; wakes waiters that now fit.
    fn release(&self, bytes: usize);

    /// The message `slot` was assembling is complete or abandoned: nothing
    /// more of it will be asked for, so what was kept free for the rest of
    /// it (see [`WaitSlot::reserved`]) is free again. A policy that keeps
    /// nothing free for started messages need not do anything.
    fn message_received(&self, slot: &mut WaitSlot) {
        let _ = slot;
    }

    /// The overdrawn message of `slot` is freed (or was never handed out):
    /// the overdraft is free again.
    fn message_done(&self, slot: &mut WaitSlot);

    /// The stream stops waiting (it is dropped): forget its place, and give
    /// back a grant it was made but has not collected.
    fn cancel(&self, slot: &mut WaitSlot);

    /// What the budget holds now.
    fn stats(&self) -> BudgetStats;
}

/// One grant a decoder asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// The bytes to take now.
    pub bytes: usize,
    /// For a message's first grant: what the whole message will still
    /// allocate (its declared length less what is already allocated), which
    /// [`SharedBudget`] wants to fit before the message starts; `None` for a
    /// message under way.
    pub starting: Option<usize>,
}

/// A stream's identity towards a [`ReceiveBudget`]: its place in the wait
/// queue, whether it holds the overdraft, and what the budget keeps free for
/// the rest of its message. Starts empty; a policy changes it only through
/// these methods, none of which can take more than the slot holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WaitSlot {
    queued: Option<u64>,
    overdraft: bool,
    reserved: usize,
}

impl WaitSlot {
    /// The waiter's id while it is queued (or granted, not yet collected).
    pub fn queued(&self) -> Option<u64> {
        self.queued
    }

    /// Records the slot's place in the queue (`None`: not queued).
    pub fn set_queued(&mut self, id: Option<u64>) {
        self.queued = id;
    }

    /// Whether the stream holds the overdraft (see the progress rule).
    pub fn holds_overdraft(&self) -> bool {
        self.overdraft
    }

    /// Gives the stream the overdraft.
    pub fn grant_overdraft(&mut self) {
        self.overdraft = true;
    }

    /// Takes the overdraft back: whether the stream held it.
    pub fn take_overdraft(&mut self) -> bool {
        std::mem::take(&mut self.overdraft)
    }

    /// What the budget keeps free for the rest of the message the stream
    /// assembles: granted without waiting as the message grows.
    pub fn reserved(&self) -> usize {
        self.reserved
    }

    /// Keeps `bytes` more free for the stream's message.
    pub fn reserve(&mut self, bytes: usize) {
        self.reserved = self.reserved.saturating_add(bytes);
    }

    /// Uses up to `bytes` of what is kept free: the amount used, at most
    /// [`reserved`](Self::reserved).
    pub fn use_reserved(&mut self, bytes: usize) -> usize {
        let used = bytes.min(self.reserved);
        self.reserved -= used;
        used
    }

    /// Releases everything kept free for the stream: the amount released.
    pub fn take_reserved(&mut self) -> usize {
        std::mem::take(&mut self.reserved)
    }
}

/// A snapshot of a budget.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BudgetStats {
    /// The configured capacity in bytes.
    pub capacity: usize,
    /// Bytes counted now (may exceed `capacity`: see the module docs).
    pub in_use: usize,
    /// Bytes kept free for messages that have started and not yet fully
    /// arrived (their declared length less what is counted).
    pub reserved: usize,
    /// The most ever in use at once.
    pub peak: usize,
    /// Streams waiting for memory now.
    pub waiting: usize,
    /// Waits that ended in `resource_exhausted`, since the budget was made.
    pub timed_out: u64,
    /// Grants that had to wait (then succeeded or timed out).
    pub waits: u64,
}

/// A shared handle to a receive budget: cheap to clone (one reference
/// count), what decoders are given.
///
/// ```
/// use grpc_stream_codec::budget::{Budget, SharedBudget};
///
/// let shared = SharedBudget::new(64 << 20);
/// let budget: Budget = shared.clone().into(); // no allocation
/// assert_eq!(budget.stats().capacity, 64 << 20);
/// ```
#[derive(Clone)]
pub struct Budget(pub(crate) Arc<dyn ReceiveBudget>);

impl Budget {
    /// A handle to a policy of your own.
    pub fn new(policy: impl ReceiveBudget) -> Self {
        Budget(Arc::new(policy))
    }

    /// What the budget holds now.
    pub fn stats(&self) -> BudgetStats {
        self.0.stats()
    }

    /// HTTP/2 window settings for this budget's capacity: the rule of
    /// [`SharedBudget::http2_windows`].
    ///
    /// ```
    /// use grpc_stream_codec::budget::{Budget, SharedBudget};
    ///
    /// let budget: Budget = SharedBudget::new(64 << 20).into();
    /// let windows = budget.http2_windows(100);
    /// assert_eq!(windows.connection, 101 * windows.stream);
    /// ```
    pub fn http2_windows(&self, streams_per_connection: u32) -> Http2Windows {
        Http2Windows::for_capacity(self.0.capacity(), streams_per_connection)
    }

    pub(crate) fn policy(&self) -> &dyn ReceiveBudget {
        &*self.0
    }
}

impl fmt::Debug for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Budget").field(&self.stats()).finish()
    }
}

/// The status of a message larger than the whole budget.
pub(crate) fn too_large(len: usize, capacity: usize) -> Status {
    Status::new(
        crate::status::Code::ResourceExhausted,
        format!("message size {len} exceeds the receive budget of {capacity} bytes"),
    )
}
