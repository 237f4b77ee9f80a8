//! Where received messages live: the allocation policy of the receive side.
//!
//! A message must never share memory with the transport frame it arrived in,
//! nor with a per-stream read buffer: either would keep that memory alive for
//! as long as the application holds the message. So every message is copied
//! once, into memory chosen by its size:
//!
//! - up to [`SMALL_MESSAGE_MAX`] (4 KiB): cut from a per-stream slab of
//!   [`SLAB_SIZE`] (8 KiB). The slab is allocated on first use and reclaimed
//!   in place once every message cut from it has been dropped, so a stream of
//!   small messages allocates nothing in steady state and a held small message
//!   pins at most one slab. The exception is a stream's first message when it
//!   is tiny (up to 256 B) and arrives whole: it
//!   gets an exact allocation, because many streams receive just that one
//!   message (the request of a unary or server-streaming call) and an 8 KiB
//!   slab for it is pure cost;
//! - above that: one exact allocation per message, returned as
//!   `Bytes::from(vec)`, so the message is the sole owner of its memory
//!   (`is_unique()`) and nothing else keeps it alive. While a message is still
//!   arriving its capacity grows as `min(declared, 2 x received)`: a peer has
//!   to send half of a message before the receiver allocates all of it.

use std::mem;

use bytes::{Buf, Bytes, BytesMut};

use crate::budget::{Budget, Counted, Held, Share, StreamBudget};

/// Largest message cut from the per-stream slab; larger ones get an
/// allocation of their own.
pub const SMALL_MESSAGE_MAX: usize = 4 * 1024;

/// Memory a slab costs, bookkeeping included: the most an idle stream keeps.
pub const SLAB_SIZE: usize = 8 * 1024;

/// Largest first message of a stream that gets an exact allocation instead
/// of starting the slab (when all its bytes are present at once).
const FIRST_MESSAGE_EXACT_MAX: usize = 256;

/// What `bytes` allocates next to a shared buffer (its `Shared` header is
/// 40 bytes on 64-bit targets), rounded up. Taking it off the buffer keeps a
/// whole slab, header included, within [`SLAB_SIZE`].
const SLAB_BOOKKEEPING: usize = 64;

/// Usable bytes of a slab.
const SLAB_CAPACITY: usize = SLAB_SIZE - SLAB_BOOKKEEPING;

const _: () = assert!(SLAB_CAPACITY >= SMALL_MESSAGE_MAX);

/// The allocation policy for received messages, with its per-stream slab.
///
/// One `MessageBuffers` belongs to one stream. It holds at most one slab
/// ([`SLAB_SIZE`], allocated on first use) and nothing of any message it has
/// handed out beyond that slab.
///
/// ```
/// use bytes::Bytes;
/// use grpc_stream_codec::decode::MessageBuffers;
///
/// let mut buffers = MessageBuffers::new();
/// // Copy one message out of a larger buffer (a transport frame, a
/// // framework's read buffer), consuming exactly its bytes.
/// let mut frame = Bytes::from_static(b"hello world");
/// let message = buffers.copy_message(&mut frame, 5);
/// assert_eq!(message, "hello");
/// assert_eq!(frame, " world");
/// ```
#[derive(Debug, Default)]
pub struct MessageBuffers {
    /// The unused tail of the current slab; empty (and unallocated) until the
    /// first small message.
    slab: BytesMut,
    /// Whether any message has been placed yet.
    started: bool,
    /// Slab accounting, only with a receive budget.
    budget: Option<Box<SlabBudget>>,
}

/// A stream's slabs counted against a receive budget: the current one, and
/// earlier ones still referenced by messages, held by an empty handle so the
/// stream sees when their memory can be freed (and its share released).
#[derive(Debug)]
struct SlabBudget {
    /// Every slab alive, counted once. Dropped with the stream: the slabs'
    /// memory goes with the last message cut from them, a moment the stream
    /// cannot see from then on, so their shares end then.
    held: Held,
    /// Whether the current slab was allocated (and counted).
    counted: bool,
    /// Earlier slabs that some message still referenced when they were
    /// replaced.
    retired: Vec<BytesMut>,
}

impl SlabBudget {
    /// Gives the stream a slab with `len` free bytes: a retired one whose
    /// messages are all gone, or a new one (counted once, never gated).
    /// Retired slabs found unused are freed and their shares released.
    fn refill(&mut self, slab: &mut BytesMut, len: usize) {
        let old = mem::take(slab);
        if self.counted {
            self.retired.push(old);
        }
        let mut reused = None;
        let mut freed = 0;
        self.retired.retain_mut(|retired| {
            if !retired.try_reclaim(SLAB_CAPACITY) {
                return true;
            }
            if reused.is_none() {
                reused = Some(mem::take(retired));
            } else {
                freed += SLAB_SIZE;
            }
            false
        });
        self.held.release(freed);
        *slab = match reused {
            Some(slab) => slab,
            None => {
                self.held.charge(SLAB_SIZE);
                BytesMut::with_capacity(SLAB_CAPACITY)
            }
        };
        self.counted = true;
        debug_assert!(slab.capacity() >= len);
    }
}

impl MessageBuffers {
    /// A policy with no slab allocated yet.
    pub fn new() -> Self {
        MessageBuffers {
            slab: BytesMut::new(),
            started: false,
            budget: None,
        }
    }

    /// Counts this stream's slabs against `budget` from now on.
    pub(crate) fn set_budget(&mut self, budget: Budget) {
        self.budget = Some(Box::new(SlabBudget {
            held: Held::new(budget),
            counted: false,
            retired: Vec::new(),
        }));
    }

    /// Copies `len` bytes from `src` (fewer if `src` holds fewer) into memory
    /// of their own, consuming them from `src`.
    ///
    /// Because every byte is already present, a message above
    /// [`SMALL_MESSAGE_MAX`] gets one exact allocation.
    pub fn copy_message(&mut self, src: &mut impl Buf, len: usize) -> Bytes {
        let mut builder = self.builder(len.min(src.remaining()));
        builder.fill_from(src);
        builder.finish()
    }

    /// Copies `bytes`, all present at once, into memory of their own: a
    /// region of the slab, or one exact allocation above
    /// [`SMALL_MESSAGE_MAX`].
    ///
    /// The assembler's fast path. Unlike [`copy_message`](Self::copy_message)
    /// it needs no message builder: the bytes are appended to the slab's
    /// free tail and cut off with `split`, one `memcpy` and one reference
    /// count per message; a large message is a `Vec` of exactly its length,
    /// which `Bytes::from` takes over without another allocation.
    #[inline]
    pub fn copy_slice(&mut self, bytes: &[u8]) -> Bytes {
        let len = bytes.len();
        if len > SMALL_MESSAGE_MAX {
            return Bytes::from(bytes.to_vec());
        }
        if len == 0 {
            return Bytes::new();
        }
        if !mem::replace(&mut self.started, true) && len <= FIRST_MESSAGE_EXACT_MAX {
            // Length equals capacity, so `Bytes` takes the vector over
            // without a shared header: one small allocation, no slab.
            return Bytes::from(bytes.to_vec());
        }
        self.make_room(len);
        // `make_room` left at least `len` bytes of capacity: no reallocation.
        self.slab.extend_from_slice(bytes);
        self.slab.split().freeze()
    }

    /// Moves an owned buffer (typically decompressed output) into the policy:
    /// a small one is copied into the slab and freed, a large one keeps its
    /// allocation, shrunk to its length if needed.
    pub fn place(&mut self, mut vec: Vec<u8>) -> Bytes {
        if vec.len() <= SMALL_MESSAGE_MAX {
            return self.copy_message(&mut vec.as_slice(), vec.len());
        }
        // `Bytes::from` a vector with spare capacity allocates a shared
        // header and leaves the spare bytes allocated for the message's life.
        vec.shrink_to_fit();
        Bytes::from(vec)
    }

    /// [`place`](Self::place) for decompressed output whose room the
    /// stream's budget granted: a small one goes to the slab (counted
    /// there) and the message's grant is released; a large one carries its
    /// exact size as its share.
    pub(crate) fn place_counted(&mut self, mut vec: Vec<u8>, budget: &mut StreamBudget) -> Bytes {
        if vec.len() <= SMALL_MESSAGE_MAX {
            let message = self.copy_slice(&vec);
            drop(vec);
            budget.release_message();
            return message;
        }
        vec.shrink_to_fit();
        let share = budget.output_share(vec.capacity());
        Bytes::from_owner(Counted::new(vec, share))
    }

    /// Starts a message of `len` bytes that will arrive in pieces.
    ///
    /// Nothing of size `len` is allocated here: a small message reserves its
    /// room in the slab, a large one allocates as its bytes arrive.
    pub(crate) fn builder(&mut self, len: usize) -> MessageBuilder {
        self.started = true;
        let storage = if len == 0 {
            Storage::Slab(BytesMut::new())
        } else if len <= SMALL_MESSAGE_MAX {
            Storage::Slab(self.carve(len))
        } else {
            Storage::Exact(Vec::new())
        };
        MessageBuilder {
            declared: len,
            storage,
        }
    }

    /// Takes the next `len` bytes of slab capacity as a buffer of their own.
    fn carve(&mut self, len: usize) -> BytesMut {
        self.make_room(len);
        let rest = self.slab.split_off(len);
        std::mem::replace(&mut self.slab, rest)
    }

    /// Makes the slab's free tail hold at least `len` (≤ [`SLAB_CAPACITY`])
    /// bytes: reclaims the slab in place if every message cut from it is
    /// gone, or starts a new one.
    #[inline]
    fn make_room(&mut self, len: usize) {
        // The slab handle is always empty here: every carve splits off all
        // the bytes it hands out, so `capacity()` is the free tail. Only a
        // full slab pays for `try_reclaim`.
        if self.slab.capacity() < len {
            self.refill(len);
        }
    }

    #[cold]
    fn refill(&mut self, len: usize) {
        if let Some(budget) = self.budget.as_deref_mut() {
            if !self.slab.try_reclaim(len) {
                budget.refill(&mut self.slab, len);
            }
            return;
        }
        if !self.slab.try_reclaim(len) {
            // Some message cut from this slab is still alive: leave the old
            // slab to it and start another.
            self.slab = BytesMut::with_capacity(SLAB_CAPACITY);
        }
    }
}

/// A message being assembled from pieces, created by
/// [`MessageBuffers::builder`]: its memory follows the bytes received
/// (`min(declared, 2 x received)` for a large message) and ends exactly
/// sized.
#[derive(Debug)]
pub(crate) struct MessageBuilder {
    declared: usize,
    storage: Storage,
}

#[derive(Debug)]
enum Storage {
    /// A region of the slab whose capacity is exactly the message length.
    Slab(BytesMut),
    /// A vector that grows towards the message length.
    Exact(Vec<u8>),
}

impl MessageBuilder {
    /// Bytes still missing.
    pub(crate) fn remaining(&self) -> usize {
        self.declared - self.as_slice().len()
    }

    /// The bytes received so far.
    pub(crate) fn as_slice(&self) -> &[u8] {
        match &self.storage {
            Storage::Slab(region) => region,
            Storage::Exact(vec) => vec,
        }
    }

    /// Appends as much of `bytes` as the message still needs and returns how
    /// many were taken.
    pub(crate) fn extend_from_slice(&mut self, bytes: &[u8]) -> usize {
        let taken = bytes.len().min(self.remaining());
        let bytes = &bytes[..taken];
        match &mut self.storage {
            // The region was carved at the message's length: never reallocates.
            Storage::Slab(region) => region.extend_from_slice(bytes),
            Storage::Exact(vec) => {
                reserve_for(vec, self.declared, vec.len() + taken);
                vec.extend_from_slice(bytes);
            }
        }
        taken
    }

    /// Appends as much of `src` as the message still needs, consuming it
    /// from `src`, and returns how many bytes were taken.
    pub(crate) fn fill_from(&mut self, src: &mut impl Buf) -> usize {
        let wanted = src.remaining().min(self.remaining());
        if let Storage::Exact(vec) = &mut self.storage {
            // Everything in `src` is already here: grow once for all of it.
            reserve_for(vec, self.declared, vec.len() + wanted);
        }
        let mut taken = 0;
        while taken < wanted {
            let chunk = src.chunk();
            let n = self.extend_from_slice(&chunk[..chunk.len().min(wanted - taken)]);
            src.advance(n);
            taken += n;
        }
        taken
    }

    /// How much more capacity taking `incoming` more bytes would allocate:
    /// what a receive budget is asked for before they are copied.
    pub(crate) fn growth_for(&self, incoming: usize) -> usize {
        match &self.storage {
            Storage::Slab(_) => 0,
            Storage::Exact(vec) => {
                let needed = vec.len() + incoming.min(self.remaining());
                capacity_for(vec.capacity(), self.declared, needed) - vec.capacity()
            }
        }
    }

    /// What the message will still allocate before it is complete.
    pub(crate) fn growth_rest(&self) -> usize {
        match &self.storage {
            Storage::Slab(_) => 0,
            Storage::Exact(vec) => self.declared - vec.capacity(),
        }
    }

    /// [`finish`](Self::finish) for a stream with a budget: a message of
    /// its own allocation carries `share`, released when it is dropped; a
    /// slab region's share is its slab's.
    pub(crate) fn finish_counted(self, share: Share) -> Bytes {
        match self.storage {
            Storage::Exact(mut vec) if vec.capacity() > 0 => {
                vec.shrink_to_fit();
                Bytes::from_owner(Counted::new(vec, share))
            }
            _ => self.finish(),
        }
    }

    /// The message. A builder finished early yields the bytes received so far.
    pub(crate) fn finish(self) -> Bytes {
        match self.storage {
            Storage::Slab(region) => region.freeze(),
            Storage::Exact(mut vec) => {
                vec.shrink_to_fit();
                Bytes::from(vec)
            }
        }
    }
}

/// Grows `vec` so it can hold `needed` bytes of a `declared`-byte message.
///
/// Capacity never exceeds `min(declared, 2 x needed)`, so memory follows the
/// bytes actually received. Below half the message it also stays within
/// `declared / 2`: the step to the full length then copies at most half of it,
/// which caps the moment both blocks are alive at 1.5x the message instead of
/// 2x. Reaching the full length is always an exact allocation.
///
/// The ~6 reallocations of a 1 MiB message in 16 KiB frames are cheap: a
/// growing block at the top of the heap is extended in place, and the
/// allocator moves it about once, while small. Growing in larger steps
/// would loosen the 1.5x bound for no measurable gain.
fn reserve_for(vec: &mut Vec<u8>, declared: usize, needed: usize) {
    if needed <= vec.capacity() {
        return;
    }
    let target = capacity_for(vec.capacity(), declared, needed);
    vec.reserve_exact(target - vec.len());
}

/// The capacity [`reserve_for`] grows a buffer of `capacity` to.
#[inline]
fn capacity_for(capacity: usize, declared: usize, needed: usize) -> usize {
    if needed <= capacity {
        return capacity;
    }
    let doubled = needed.saturating_mul(2);
    if doubled >= declared {
        declared
    } else {
        doubled.min(declared / 2).max(needed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_is_bounded_by_received_and_ends_exact() {
        let declared = 1 << 20;
        let mut vec = Vec::new();
        let mut received = 0;
        while received < declared {
            let n = (16 * 1024).min(declared - received);
            received += n;
            reserve_for(&mut vec, declared, received);
            vec.resize(received, 0);
            assert!(vec.capacity() <= declared.min(2 * received));
            assert!(vec.capacity() >= received);
        }
        assert_eq!(vec.capacity(), declared);
    }

    #[test]
    fn first_piece_of_half_or_more_is_exact() {
        let mut vec = Vec::new();
        reserve_for(&mut vec, 10_000, 5_000);
        assert_eq!(vec.capacity(), 10_000);
    }

    #[test]
    fn small_messages_share_one_slab() {
        let mut buffers = MessageBuffers::new();
        let a = buffers.copy_message(&mut &[1u8; 100][..], 100);
        let b = buffers.copy_message(&mut &[2u8; 100][..], 100);
        assert_eq!(a.as_ptr() as usize + 100, b.as_ptr() as usize);
    }
}
