//! The batch buffer: a reused [`LinkedBytes`] that messages are encoded
//! into, with positions that survive zero-copy inserts, and the cut that
//! turns its contents into an [`EncodedBatch`].

use std::cell::RefCell;
use std::mem;

use bytes::{Buf, Bytes, BytesMut};
use linkedbytes::{LinkedBytes, Node};

use super::batch::EncodedBatch;
use super::config::FRAME_SIZE;
use crate::envelope::HEADER_LEN;
use crate::spares::{self, Spares};
use crate::status::Status;

/// Spare room below which a new batch reserves a fresh stretch: enough for
/// the message that crosses the threshold without regrowing mid-message.
const BATCH_SLACK: usize = 4 * 1024;

/// Cap on what a batch reserves up front, whatever the threshold: a large
/// threshold should not make a one-message batch allocate megabytes.
const MAX_BATCH_RESERVE: usize = 256 * 1024;

/// What a stream's first batch reserves up front, at most. Many streams are
/// one short batch (a reply, a few ready messages), and reserving the full
/// threshold for them made every such stream allocate and free 36 KiB to
/// send a few hundred bytes. A first batch that outgrows it grows as a
/// vector does; later batches reserve the full threshold, since a stream
/// that had more than one batch is likely to fill them.
const FIRST_BATCH_RESERVE: usize = 8 * 1024;

/// Spare room in the first batch's reservation below which it grows to the
/// full one.
const FIRST_BATCH_LOW_WATER: usize = 1024;

/// A message copying in less than 1/`BY_REFERENCE_RATIO` of its bytes is
/// by-reference ([`MessageEncoder::copied_len_hint`]): its payload is a node
/// inserted by reference (pilota's `Bytes` fields of 4 KiB and more) and a
/// few bytes of prefix and small fields are all it copies.
///
/// [`MessageEncoder::copied_len_hint`]: super::MessageEncoder::copied_len_hint
pub(crate) const BY_REFERENCE_RATIO: usize = 8;

/// A stream's `LinkedBytes`, taken from its thread's spares the first time
/// the stream batches and given back when the stream is done with it: a
/// new one allocates its node list and its slice vector, two allocations
/// that a spare's kept capacities save. A reply of one message never
/// batches (it is written on its own), so it never takes one.
struct SpareLinked(Option<LinkedBytes>);

/// Most spares a thread keeps: enough for the streams that finish on it
/// between two that start.
const MAX_SPARES: usize = 8;

thread_local! {
    /// Empty buffers of finished streams, their list capacities kept.
    static SPARES: RefCell<Spares<LinkedBytes, MAX_SPARES>> = const { Spares::new() };
}

impl SpareLinked {
    /// The buffer, taken now if the stream has not used one yet.
    #[inline]
    fn get(&mut self) -> &mut LinkedBytes {
        self.0.get_or_insert_with(|| {
            spares::take(&SPARES).unwrap_or_else(|| LinkedBytes::with_capacity(0))
        })
    }

    /// Bytes in the trailing buffer (none before the buffer is taken).
    #[inline]
    fn tail_len(&self) -> usize {
        self.0.as_ref().map_or(0, |buf| buf.bytes().len())
    }
}

impl Drop for SpareLinked {
    fn drop(&mut self) {
        let Some(mut buf) = self.0.take() else {
            return;
        };
        // Only an empty list is kept (a stream dropped mid-batch holds
        // nodes), and never the trailing buffer's memory.
        if buf.iter_list().next().is_some() {
            return;
        }
        *buf.bytes_mut() = BytesMut::new();
        spares::keep(&SPARES, buf);
    }
}

/// A position in the buffer, taken before a message is written.
///
/// `LinkedBytes::insert` and `split` move the trailing buffer into the node
/// list but never reorder or rewrite bytes, so the position stays valid as
/// "node `node`, byte `offset`" once the list has grown past `node`, and as
/// "trailing buffer, byte `offset`" until then.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mark {
    node: usize,
    offset: usize,
    /// Bytes in the whole buffer before this position.
    pos: usize,
}

pub(crate) struct BatchBuffer {
    buf: SpareLinked,
    /// What a new batch reserves, and the most copied-in bytes a batch may
    /// hold for its allocation to be kept for the next batch.
    reserve: usize,
    retain: usize,
    /// Whether a batch has been cut yet: the first one reserves less.
    cut_once: bool,
    /// `reserve` for the threshold, which a by-reference stream's
    /// unbatched reservations give way to again once a batch copies bytes
    /// in ([`BatchBuffer::first_message_hint`]).
    batched_reserve: usize,
    /// Nodes in `buf`'s list and their total length. `LinkedBytes` does not
    /// report its list length, and the list only grows at the back, so new
    /// nodes are counted after each message: amortised O(1) per node.
    nodes: usize,
    node_bytes: usize,
    /// Of `node_bytes`, the copied-in ones (`BytesMut` nodes split off the
    /// trailing buffer by inserts).
    copied_node_bytes: usize,
    messages: usize,
    /// Frame accounting in the trailing buffer for
    /// [`BatchBuffer::take_filling`]: where the trailing buffer starts in
    /// the batch, the last [`FRAME_SIZE`] multiple (from that start) a
    /// completed message reached, and how many completed messages end after
    /// it, the ones a cut there would carry.
    tail_start: usize,
    boundary: usize,
    after_boundary: usize,
    /// Whether [`BatchBuffer::prepare_batch`] ran since the last cut.
    prepared: bool,
    /// What the stream's only message copies in, its prefix included, when
    /// the source said before it was encoded that no other follows
    /// ([`BatchBuffer::sole_message_hint`]): the first batch reserves that.
    sole: Option<usize>,
}

impl BatchBuffer {
    /// A buffer for batches of about `threshold` bytes.
    pub(crate) fn new(threshold: usize) -> Self {
        let reserve = Self::reserve_for(threshold);
        Self {
            buf: SpareLinked(None),
            reserve,
            retain: 2 * reserve,
            cut_once: false,
            batched_reserve: reserve,
            nodes: 0,
            node_bytes: 0,
            copied_node_bytes: 0,
            messages: 0,
            tail_start: 0,
            boundary: 0,
            after_boundary: 0,
            prepared: false,
            sole: None,
        }
    }

    fn reserve_for(threshold: usize) -> usize {
        threshold.min(MAX_BATCH_RESERVE) + BATCH_SLACK
    }

    /// Whether the stream's first message has not been seen yet: then the
    /// stream asks the encoder for [`BatchBuffer::first_message_hint`].
    #[inline]
    pub(crate) fn awaits_first_message(&self) -> bool {
        !self.cut_once && !self.prepared && self.messages == 0
    }

    /// Sizes the reservations from the stream's first message, before it is
    /// encoded: a by-reference message ([`BY_REFERENCE_RATIO`]) makes the
    /// buffer reserve as an unbatched one (threshold 0) does, for the whole
    /// stream. Batching such messages gains nothing (each is a batch of its
    /// own once past the threshold), and a batched reservation held per
    /// stream among large payload allocations makes the allocator trim and
    /// fault the heap top in again (measured in docs/results.md). The batch threshold itself is kept,
    /// and a later batch that copies bytes in gives the stream its batched
    /// reservations back.
    pub(crate) fn first_message_hint(&mut self, hint: Option<(usize, usize)>) {
        if let Some((copied, total)) = hint
            && copied * BY_REFERENCE_RATIO < total
        {
            self.set_reserve(Self::reserve_for(0));
        }
    }

    /// The stream's first message is also its last (its source has said it
    /// yields nothing more), and it copies `copied` bytes in: its batch
    /// reserves those and the prefix, not a first batch's
    /// [`FIRST_BATCH_RESERVE`]. Most calls answer with one message, often a
    /// small one, and the larger allocation cost every such call more than
    /// the rest of its encoding. A source that yields more after all grows
    /// the batch as a vector does.
    pub(crate) fn sole_message_hint(&mut self, copied: usize) {
        self.sole = Some(HEADER_LEN + copied);
    }

    fn set_reserve(&mut self, reserve: usize) {
        self.reserve = reserve;
        self.retain = 2 * reserve;
    }

    /// After a batch is cut: a stream on unbatched reservations whose batch
    /// copied more than 1/[`BY_REFERENCE_RATIO`] of its bytes goes back to
    /// the batched ones.
    fn review_reservations(&mut self) {
        if self.reserve != self.batched_reserve {
            let copied = self.copied_node_bytes + self.buf.tail_len();
            if copied * BY_REFERENCE_RATIO >= self.len() {
                self.set_reserve(self.batched_reserve);
            }
        }
    }

    /// Where encoders write.
    #[inline]
    pub(crate) fn dst(&mut self) -> &mut LinkedBytes {
        self.buf.get()
    }

    /// The trailing buffer, for prefixes and compressed payloads.
    #[inline]
    pub(crate) fn tail(&mut self) -> &mut BytesMut {
        self.buf.get().bytes_mut()
    }

    /// Completed messages since the last cut.
    pub(crate) fn messages(&self) -> usize {
        self.messages
    }

    /// Bytes written since the last cut. Exact after `mark`/`written_since`;
    /// the stream only asks between messages, after both.
    pub(crate) fn len(&self) -> usize {
        self.node_bytes + self.buf.tail_len()
    }

    /// Makes room for a new batch, reusing the trailing buffer's allocation.
    ///
    /// After a cut the trailing buffer keeps the unused end of its
    /// allocation, and `BytesMut::reserve` reclaims the whole allocation in
    /// place once the consumer has dropped the previous batches. So a stream
    /// whose batches are sent before the next is encoded allocates nothing
    /// per batch, and one whose consumer holds on allocates once per batch.
    /// Runs once per batch; later calls until the next cut do nothing.
    pub(crate) fn prepare_batch(&mut self) {
        if mem::replace(&mut self.prepared, true) {
            return;
        }
        if !self.cut_once
            && let Some(sole) = self.sole
        {
            self.buf.get().reserve(sole);
            return;
        }
        let reserve = if self.cut_once {
            self.reserve
        } else {
            self.reserve.min(FIRST_BATCH_RESERVE)
        };
        let tail = self.buf.get().bytes_mut();
        let spare = tail.capacity() - tail.len();
        // A batch opening with bytes carried over from a cut on a frame
        // boundary needs room for the rest of a full batch after them, or it
        // would regrow midway.
        let carried = tail.len();
        if spare < BATCH_SLACK || carried > 0 && spare < reserve.saturating_sub(carried) {
            tail.reserve(reserve.saturating_sub(carried).max(BATCH_SLACK));
        }
    }

    /// Reserves `additional` bytes in the trailing buffer.
    #[inline]
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.buf.get().reserve(additional);
    }

    /// The current end of the buffer.
    #[inline]
    pub(crate) fn mark(&mut self) -> Mark {
        self.count_new_nodes();
        Mark {
            node: self.nodes,
            offset: self.buf.tail_len(),
            pos: self.len(),
        }
    }

    /// Bytes written after `mark`.
    #[inline]
    pub(crate) fn written_since(&mut self, mark: Mark) -> usize {
        self.count_new_nodes();
        self.len() - mark.pos
    }

    /// Overwrites the bytes at `mark` (a prefix placeholder) with `bytes`.
    pub(crate) fn write_at(&mut self, mark: Mark, bytes: &[u8]) -> Result<(), Status> {
        self.count_new_nodes();
        let target: &mut [u8] = if mark.node < self.nodes {
            // The trailing buffer holding the placeholder was split off into
            // this node by an insert: it is always a `BytesMut` node.
            match self.buf.get().get_list_mut(mark.node) {
                Some(Node::BytesMut(node)) => node,
                _ => return Err(moved()),
            }
        } else {
            self.buf.get().bytes_mut()
        };
        match target.get_mut(mark.offset..mark.offset + bytes.len()) {
            Some(dst) => {
                dst.copy_from_slice(bytes);
                Ok(())
            }
            None => Err(moved()),
        }
    }

    /// Counts a message written since the last cut as complete.
    #[inline]
    pub(crate) fn finish_message(&mut self) {
        self.messages += 1;
        self.count_new_nodes();
        if self.node_bytes != self.tail_start {
            // A node was split off: every earlier message ends before the
            // new trailing buffer, so before any cut in it.
            self.tail_start = self.node_bytes;
            self.boundary = 0;
            self.after_boundary = 0;
        }
        let end = self.buf.tail_len();
        if end > 0 {
            let boundary = end - end % FRAME_SIZE;
            if boundary > self.boundary {
                // Every earlier message ends at or before this boundary.
                self.boundary = boundary;
                self.after_boundary = usize::from(end > boundary);
            } else {
                self.after_boundary += 1;
            }
        }
        if !self.cut_once && self.sole.is_none() {
            // A first batch that is filling its smaller reservation moves to
            // the full one in a single step, rather than doubling its way
            // there one reallocation at a time.
            let tail = self.buf.get().bytes_mut();
            if tail.capacity() - tail.len() < FIRST_BATCH_LOW_WATER {
                // To a total of the full reservation, as if it had been made
                // up front, so later batches see the same spare room.
                tail.reserve(self.reserve.saturating_sub(tail.len()));
            }
        }
    }

    /// Moves everything before `cut` (or everything, with `None`) out as a
    /// batch, drops the rest, and leaves the buffer empty for reuse.
    ///
    /// Nodes are moved, never copied; the trailing buffer is split off, so
    /// its unused capacity stays here for the next batch.
    pub(crate) fn take(&mut self, cut: Option<Mark>) -> EncodedBatch {
        self.count_new_nodes();
        self.cut_once = true;
        self.review_reservations();
        let nodes = self.nodes;
        let (keep, cut_offset) = match cut {
            Some(mark) if mark.node < nodes => (mark.node, Some(mark.offset)),
            _ => (nodes, None),
        };
        let mut batch = EncodedBatch::with_node_hint(keep + 1);
        self.reset_frame_accounting(0);
        self.prepared = false;
        let mut copied = self.buf.tail_len();
        for index in 0..nodes {
            // An empty `BytesMut` in place keeps `LinkedBytes::reset` happy:
            // it requires a `BytesMut` head and unsplits `BytesMut` nodes.
            let Some(slot) = self.buf.get().get_list_mut(index) else {
                break;
            };
            let node = mem::replace(slot, Node::BytesMut(BytesMut::new()));
            if let Node::BytesMut(bytes) = &node {
                copied += bytes.len();
            }
            if index < keep {
                batch.push(node_bytes(node));
            } else if index == keep
                && let Some(offset) = cut_offset
            {
                let mut bytes = node_bytes(node);
                bytes.truncate(offset);
                batch.push(bytes);
            }
        }
        let tail = self.buf.get().bytes_mut();
        match cut {
            None => batch.push(tail.split().freeze()),
            Some(mark) if mark.node >= nodes => {
                batch.push(tail.split_to(mark.offset.min(tail.len())).freeze());
                tail.clear();
            }
            Some(_) => tail.clear(),
        }
        if cut.is_some() || copied > self.retain {
            // The trailing buffer shares the allocation its split-off parts
            // came from. After an unusually large batch, let that allocation
            // go with the batch rather than pin it for the stream's life.
            *tail = BytesMut::new();
        }
        // Empties the node list, keeping its capacity and the tail's.
        self.buf.get().reset();
        self.nodes = 0;
        self.node_bytes = 0;
        self.copied_node_bytes = 0;
        batch.finish(mem::take(&mut self.messages))
    }

    /// Cuts a batch whose last node, the trailing buffer of copied-in bytes,
    /// ends on a [`FRAME_SIZE`] boundary of its own, and keeps the rest of
    /// the trailing buffer, all of completed messages, in place for the next
    /// batch. HTTP/2 sends each node as its own DATA frames, so this fills
    /// every frame of a stream of copied-in messages while they are ready;
    /// nodes inserted by reference go whole, as before. Nothing is copied:
    /// the cut is a `split_to`. A trailing buffer under one frame, or an
    /// exact multiple, leaves nothing to carry: then it is
    /// [`take(None)`](Self::take).
    ///
    /// The batch's message count is of the messages whose last byte is in
    /// it; the carried ones count in the next batch.
    pub(crate) fn take_filling(&mut self) -> EncodedBatch {
        self.count_new_nodes();
        let tail_len = self.buf.tail_len();
        let kept = tail_len % FRAME_SIZE;
        if tail_len < FRAME_SIZE || kept == 0 {
            return self.take(None);
        }
        self.review_reservations();
        // The messages ending after the last boundary in the trailing buffer.
        let carried = if self.tail_start == self.node_bytes {
            self.after_boundary
        } else {
            0
        };
        let mut batch = EncodedBatch::with_node_hint(self.nodes + 1);
        let mut copied = tail_len;
        for index in 0..self.nodes {
            let Some(slot) = self.buf.get().get_list_mut(index) else {
                break;
            };
            // An empty `BytesMut` in place keeps `LinkedBytes::reset` happy.
            let node = mem::replace(slot, Node::BytesMut(BytesMut::new()));
            if let Node::BytesMut(bytes) = &node {
                copied += bytes.len();
            }
            batch.push(node_bytes(node));
        }
        let tail = self.buf.get().bytes_mut();
        batch.push(tail.split_to(tail_len - kept).freeze());
        // `reset` clears the trailing buffer: hold the rest aside meanwhile.
        let mut rest = mem::take(self.buf.get().bytes_mut());
        if copied > self.retain {
            // As in `take`: let an unusually large allocation go with the
            // batch; the rest (under one frame) moves to one of its own.
            rest = BytesMut::from(&rest[..]);
        }
        self.buf.get().reset();
        *self.buf.get().bytes_mut() = rest;
        self.nodes = 0;
        self.node_bytes = 0;
        self.copied_node_bytes = 0;
        let messages = self.messages - carried;
        self.messages = carried;
        self.reset_frame_accounting(carried);
        self.prepared = false;
        self.cut_once = true;
        batch.finish(messages)
    }

    /// A new batch whose trailing buffer opens with `carried` messages' ends,
    /// all within its first frame.
    fn reset_frame_accounting(&mut self, carried: usize) {
        self.tail_start = 0;
        self.boundary = 0;
        self.after_boundary = carried;
    }

    #[inline]
    fn count_new_nodes(&mut self) {
        while let Some(node) = self.buf.get().get_list_mut(self.nodes) {
            let len = node.as_ref().len();
            if let Node::BytesMut(_) = node {
                self.copied_node_bytes += len;
            }
            self.node_bytes += len;
            self.nodes += 1;
        }
    }
}

pub(crate) fn node_bytes(node: Node) -> Bytes {
    match node {
        Node::Bytes(bytes) => bytes,
        Node::BytesMut(bytes) => bytes.freeze(),
        Node::FastStr(text) => text.into_bytes(),
    }
}

fn moved() -> Status {
    Status::internal("message encoder moved bytes it did not write (envelope prefix lost)")
}

/// A [`Buf`] over the nodes of a batch, for compressing a message that
/// spans several nodes without first joining them.
pub(crate) struct NodesBuf<'a> {
    nodes: &'a [Bytes],
    offset: usize,
    remaining: usize,
}

impl<'a> NodesBuf<'a> {
    pub(crate) fn new(nodes: &'a [Bytes]) -> Self {
        Self {
            nodes,
            offset: 0,
            remaining: nodes.iter().map(Bytes::len).sum(),
        }
    }
}

impl Buf for NodesBuf<'_> {
    fn remaining(&self) -> usize {
        self.remaining
    }

    fn chunk(&self) -> &[u8] {
        self.nodes.first().map_or(&[], |node| &node[self.offset..])
    }

    fn advance(&mut self, mut cnt: usize) {
        assert!(cnt <= self.remaining, "advance past the end of the nodes");
        self.remaining -= cnt;
        while let Some(node) = self.nodes.first() {
            let left = node.len() - self.offset;
            if cnt < left {
                self.offset += cnt;
                return;
            }
            cnt -= left;
            self.nodes = &self.nodes[1..];
            self.offset = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use bytes::BufMut;

    use super::*;

    #[test]
    fn placeholder_is_found_after_an_insert_split_it_off() {
        let mut buffer = BatchBuffer::new(0);
        buffer.tail().put_slice(b"done|");
        let mark = buffer.mark();
        buffer.tail().put_slice(&[0; 5]);
        buffer.dst().put_slice(b"head");
        buffer.dst().insert(Bytes::from_static(b"BODY"));
        buffer.dst().put_slice(b"tail");
        assert_eq!(buffer.written_since(mark), 17);
        buffer.write_at(mark, b"PFX!!").unwrap();
        buffer.finish_message();
        let batch = buffer.take(None);
        assert_eq!(
            batch.nodes(),
            [&b"done|PFX!!head"[..], &b"BODY"[..], &b"tail"[..]]
        );
        assert_eq!(batch.message_count(), 1);
        assert_eq!(buffer.len(), 0);
    }

    #[test]
    fn cut_drops_the_partial_message_in_a_node() {
        let mut buffer = BatchBuffer::new(0);
        buffer.tail().put_slice(b"kept");
        buffer.finish_message();
        let mark = buffer.mark();
        buffer.tail().put_slice(b"part");
        buffer.dst().insert(Bytes::from_static(b"ial"));
        let batch = buffer.take(Some(mark));
        assert_eq!(batch.nodes(), [&b"kept"[..]]);
        assert_eq!(batch.message_count(), 1);
    }

    #[test]
    fn cut_drops_the_partial_message_in_the_tail() {
        let mut buffer = BatchBuffer::new(0);
        buffer.dst().insert(Bytes::from_static(b"kept"));
        buffer.tail().put_slice(b"also");
        let mark = buffer.mark();
        buffer.tail().put_slice(b"partial");
        let batch = buffer.take(Some(mark));
        assert_eq!(batch.nodes(), [&b"kept"[..], &b"also"[..]]);
    }

    #[test]
    fn buffer_is_reusable_after_a_take_with_inserts() {
        let mut buffer = BatchBuffer::new(0);
        for round in 0..3u8 {
            // An insert into an empty tail makes a `Bytes` head node.
            buffer.dst().insert(Bytes::from(vec![round; 3]));
            buffer.tail().put_slice(&[round + 10]);
            let batch = buffer.take(None);
            assert_eq!(batch.to_bytes(), &[round, round, round, round + 10][..]);
        }
    }

    fn copied_messages(buffer: &mut BatchBuffer, count: usize, len: usize, byte: u8) {
        for _ in 0..count {
            buffer.prepare_batch();
            buffer.tail().put_slice(&vec![byte; len]);
            buffer.finish_message();
        }
    }

    #[test]
    fn take_filling_cuts_the_tail_on_a_frame_and_counts_messages_by_their_end() {
        let mut buffer = BatchBuffer::new(32 * 1024);
        copied_messages(&mut buffer, 40, 1000, 1);
        let batch = buffer.take_filling();
        assert_eq!(batch.len(), 2 * FRAME_SIZE);
        assert_eq!(batch.nodes().len(), 1);
        // Messages ending at 1000, 2000, ..., 32000 are in; the 33rd ends
        // at 33000, past the cut at 32768, and is carried with 7 more.
        assert_eq!(batch.message_count(), 32);
        assert_eq!(buffer.messages(), 8);
        assert_eq!(buffer.len(), 40_000 - 2 * FRAME_SIZE);
        copied_messages(&mut buffer, 30, 1000, 2);
        let next = buffer.take_filling();
        assert_eq!(next.len(), 2 * FRAME_SIZE);
        // 7,232 carried bytes + 30,000: ends past 32,768 from message 26 on.
        assert_eq!(next.message_count(), 8 + 25);
        let last = buffer.take(None);
        assert_eq!(last.message_count(), 5);
        let mut wire = batch.to_bytes().to_vec();
        wire.extend_from_slice(&next.to_bytes());
        wire.extend_from_slice(&last.to_bytes());
        let mut expected = vec![1; 40_000];
        expected.extend_from_slice(&[2; 30_000]);
        assert_eq!(wire, expected);
    }

    #[test]
    fn take_filling_leaves_inserted_nodes_whole_and_cuts_only_the_tail() {
        let mut buffer = BatchBuffer::new(32 * 1024);
        let field = Bytes::from(vec![9; 20_000]);
        buffer.tail().put_slice(b"head");
        buffer.dst().insert(field.clone());
        buffer.finish_message();
        copied_messages(&mut buffer, 20, 1000, 3);
        let batch = buffer.take_filling();
        let nodes = batch.nodes();
        assert_eq!(nodes.len(), 3);
        assert_eq!(nodes[1].as_ptr(), field.as_ptr());
        assert_eq!(nodes[1].len(), field.len());
        // The tail held 20,000 bytes: one frame goes, the rest stays.
        assert_eq!(nodes[2].len(), FRAME_SIZE);
        assert_eq!(batch.message_count(), 1 + 16);
        assert_eq!(buffer.messages(), 4);
        assert_eq!(buffer.len(), 20_000 - FRAME_SIZE);
        // A tail under one frame is not cut.
        let mut small = BatchBuffer::new(32 * 1024);
        small.tail().put_slice(b"x");
        small.dst().insert(Bytes::from(vec![0; 40_000]));
        small.tail().put_slice(b"y");
        small.finish_message();
        let whole = small.take_filling();
        assert_eq!(whole.len(), 40_002);
        assert_eq!(whole.message_count(), 1);
        assert_eq!(small.messages(), 0);
    }

    #[test]
    fn a_by_reference_stream_reserves_as_an_unbatched_one() {
        let by_reference = |hint| {
            let mut buffer = BatchBuffer::new(32 * 1024);
            assert!(buffer.awaits_first_message());
            buffer.first_message_hint(hint);
            buffer.prepare_batch();
            assert!(!buffer.awaits_first_message());
            (buffer.reserve, buffer.tail().capacity())
        };
        let unbatched = BatchBuffer::new(0).reserve;
        // 11 bytes copied around a 64 KiB payload inserted by reference.
        assert_eq!(
            by_reference(Some((11, 11 + 64 * 1024))),
            (unbatched, unbatched)
        );
        // Copied messages, or no hint: the batched reservations.
        let batched = BatchBuffer::new(32 * 1024).reserve;
        assert_eq!(
            by_reference(Some((300, 300))),
            (batched, FIRST_BATCH_RESERVE)
        );
        assert_eq!(by_reference(None), (batched, FIRST_BATCH_RESERVE));

        // By-reference batches keep the unbatched reservations; the first
        // batch that copies its bytes in gives the batched ones back.
        let mut buffer = BatchBuffer::new(32 * 1024);
        buffer.first_message_hint(Some((11, 11 + 64 * 1024)));
        for _ in 0..2 {
            buffer.prepare_batch();
            buffer.tail().put_slice(&[0; 11]);
            buffer.dst().insert(Bytes::from(vec![1; 64 * 1024]));
            buffer.finish_message();
            drop(buffer.take(None));
            assert_eq!(buffer.reserve, unbatched);
        }
        buffer.prepare_batch();
        buffer.tail().put_slice(&[2; 300]);
        buffer.finish_message();
        drop(buffer.take(None));
        assert_eq!(buffer.reserve, batched);
    }

    #[test]
    fn nodes_buf_reads_across_nodes() {
        let nodes = [Bytes::from_static(b"ab"), Bytes::from_static(b"cde")];
        let mut buf = NodesBuf::new(&nodes);
        assert_eq!(buf.remaining(), 5);
        buf.advance(1);
        assert_eq!(buf.chunk(), b"b");
        buf.advance(2);
        assert_eq!(buf.chunk(), b"de");
        assert_eq!(buf.copy_to_bytes(2), &b"de"[..]);
        assert_eq!(buf.remaining(), 0);
        assert_eq!(buf.chunk(), b"");
    }
}
