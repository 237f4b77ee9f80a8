//! [`DataFrames`]: a batch's byte nodes as the payloads of HTTP/2 DATA frames.
//!
//! h2 and hyper pay for every payload a body yields (a poll of the body,
//! stream state, flow control: some 3,500 instructions), whatever its size,
//! and h2 cuts a payload into DATA frames of the peer's frame size itself. So payloads follow bytes, not nodes: every payload but
//! the last is whole frames, as many as the bytes at hand fill (up to
//! [`MAX_COPIED`]). Bytes are copied together into frames of [`FRAME_SIZE`]
//! across node boundaries (prefixes, fields a message inserted by
//! reference); the whole frames inside a node of a frame or more go by
//! reference, so less than two frames' worth of any node is ever copied.

use std::collections::VecDeque;

use bytes::{Bytes, BytesMut};
use http_body::Frame;

use super::batch::EncodedBatch;
use super::config::FRAME_SIZE;

/// The most bytes one copied payload holds: three frames, so its
/// allocation stays under the 64 KiB at which glibc's `free` consolidates
/// the heap and may trim it.
pub(crate) const MAX_COPIED: usize = 3 * FRAME_SIZE;

/// The payloads of the data frames that carry batches, in wire order.
///
/// Batches are pushed as they come; a body that can see whether the next
/// batch is ready pushes it before taking a payload it would lengthen
/// ([`DataFrames::wants_more`]), so frames fill across batches.
#[derive(Debug, Default)]
pub(crate) struct DataFrames {
    /// The one node not yet taken, while there is only one: a reply of one
    /// batch of copied-in bytes costs no deque allocation. Never set with
    /// `nodes` holding any.
    sole: Option<Bytes>,
    nodes: VecDeque<Bytes>,
    /// Bytes in `nodes`.
    len: usize,
}

impl DataFrames {
    /// The payloads of `batch`.
    pub(crate) fn new(batch: EncodedBatch) -> Self {
        let mut frames = DataFrames::default();
        frames.push(batch);
        frames
    }

    /// Appends `batch`'s bytes after what is not yet taken.
    pub(crate) fn push(&mut self, batch: EncodedBatch) {
        self.len += batch.len();
        let batch = match self.sole.take() {
            None if self.nodes.is_empty() => match batch.into_sole_node() {
                Ok(node) => {
                    self.sole = Some(node);
                    return;
                }
                Err(batch) => batch,
            },
            None => batch,
            Some(sole) => {
                self.nodes.push_back(sole);
                batch
            }
        };
        batch.append_nodes_to(&mut self.nodes);
    }

    /// Whether every byte has been taken.
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether a ready next batch should be pushed before the next payload
    /// is taken: when that payload would be copied and could carry more
    /// frames, or fill its last one. It could not when what is left fills
    /// [`MAX_COPIED`], or holds a node of a frame or more (the payload ends
    /// there).
    pub(crate) fn wants_more(&self) -> bool {
        self.len < MAX_COPIED
            && (self.sole.iter())
                .chain(&self.nodes)
                .all(|node| node.len() < FRAME_SIZE)
    }

    /// The length of the next copied payload, whose first node (of less
    /// than a frame) is `first` bytes long and already taken off: whole
    /// frames, up to [`MAX_COPIED`], or what is left when that fills less
    /// than one. It ends at a node of a frame or more, once that node's head
    /// has completed the frame being filled: the rest of such a node goes
    /// by reference, or starts the next payload. Payloads of messages with
    /// large fields stay one frame long, as the fields' own allocations
    /// are: with several-frame copies between them, volo's 16 × 16 KiB
    /// streams page-faulted 0.3-1.9 times per message (glibc trimming and
    /// regrowing its heap) and spent more system time than the payloads
    /// saved.
    fn copied_len(&self, first: usize) -> usize {
        if self.len < FRAME_SIZE {
            return self.len;
        }
        let whole = self.len.min(MAX_COPIED);
        let whole = whole - whole % FRAME_SIZE;
        let mut len = first;
        for node in &self.nodes {
            if len >= whole {
                break;
            }
            if node.len() >= FRAME_SIZE {
                return len + (FRAME_SIZE - len % FRAME_SIZE) % FRAME_SIZE;
            }
            len += node.len();
        }
        len.min(whole)
    }
}

impl EncodedBatch {
    /// Consumes the batch, yielding its bytes as HTTP body data frames:
    /// nodes smaller than a frame copied together into payloads of whole
    /// [`FRAME_SIZE`] frames (up to three; the last payload may be
    /// partial), the whole frames of a node that fills a frame by itself by
    /// reference. Each payload costs the HTTP/2 stack a send whatever its
    /// size, and h2 cuts it into frames of the peer's frame size.
    pub fn into_frames(self) -> impl Iterator<Item = Frame<Bytes>> {
        DataFrames::new(self).map(Frame::data)
    }
}

impl Iterator for DataFrames {
    type Item = Bytes;

    fn next(&mut self) -> Option<Bytes> {
        let mut first = match self.sole.take() {
            Some(sole) => sole,
            None => self.nodes.pop_front()?,
        };
        if first.len() >= FRAME_SIZE {
            // Its whole frames by reference; the rest starts the next frame.
            let whole = first.len() - first.len() % FRAME_SIZE;
            if whole < first.len() {
                self.nodes.push_front(first.split_off(whole));
            }
            self.len -= whole;
            return Some(first);
        }
        let len = self.copied_len(first.len());
        self.len -= len;
        if len == first.len() {
            return Some(first);
        }
        let mut payload = BytesMut::with_capacity(len);
        payload.extend_from_slice(&first);
        while payload.len() < len {
            // `copied_len` counted these bytes, so there is a node.
            let Some(mut node) = self.nodes.pop_front() else {
                debug_assert!(false, "counted bytes are missing");
                break;
            };
            let room = len - payload.len();
            if node.len() > room {
                // The rest goes first in the next payload.
                self.nodes.push_front(node.split_off(room));
            }
            payload.extend_from_slice(&node);
        }
        debug_assert_eq!(payload.len(), len);
        Some(payload.freeze())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::EncodedBatch;

    fn batch(nodes: &[Bytes]) -> EncodedBatch {
        let mut builder = EncodedBatch::with_node_hint(nodes.len());
        for node in nodes {
            builder.push(node.clone());
        }
        builder.finish(1)
    }

    fn node(len: usize, byte: u8) -> Bytes {
        Bytes::from(vec![byte; len])
    }

    fn payloads(nodes: &[Bytes]) -> Vec<Bytes> {
        DataFrames::new(batch(nodes)).collect()
    }

    fn lens(payloads: &[Bytes]) -> Vec<usize> {
        payloads.iter().map(Bytes::len).collect()
    }

    #[test]
    fn prefixes_and_4_kib_fields_fill_whole_frames() {
        // What pilota hands over for 4 KiB `bytes` fields: a prefix node,
        // then the field by reference, per message.
        let nodes: Vec<Bytes> = (0..16u8)
            .flat_map(|i| [node(8, i), node(4096, i)])
            .collect();
        let out = payloads(&nodes);
        let wire: usize = nodes.iter().map(Bytes::len).sum();
        assert_eq!(lens(&out), [3 * FRAME_SIZE, FRAME_SIZE, 128]);
        assert_eq!(out.concat(), nodes.concat());
        assert_eq!(wire, 4 * FRAME_SIZE + 128);
        // No copied payload holds more than `MAX_COPIED`.
        let nodes: Vec<Bytes> = (0..40u8)
            .flat_map(|i| [node(8, i), node(4096, i)])
            .collect();
        let out = payloads(&nodes);
        assert_eq!(
            lens(&out),
            [
                3 * FRAME_SIZE,
                3 * FRAME_SIZE,
                3 * FRAME_SIZE,
                FRAME_SIZE,
                40 * 4104 - 10 * FRAME_SIZE
            ]
        );
        assert_eq!(out.concat(), nodes.concat());
    }

    #[test]
    fn the_whole_frames_of_a_large_node_go_by_reference() {
        let large = node(4 * FRAME_SIZE, 9);
        let out = payloads(&[node(8, 1), large.clone(), node(8, 2), node(8, 3)]);
        // The prefix and the large node's head fill a frame; its next three
        // frames go as one slice of it; its last 8 bytes start the last frame.
        assert_eq!(lens(&out), [FRAME_SIZE, 3 * FRAME_SIZE, 24]);
        assert_eq!(out[1].as_ptr(), large[FRAME_SIZE - 8..].as_ptr(), "copied");
        let aligned = payloads(&[large.clone(), node(8, 2)]);
        assert_eq!(lens(&aligned), [4 * FRAME_SIZE, 8]);
        assert_eq!(aligned[0].as_ptr(), large.as_ptr(), "copied");
    }

    #[test]
    fn prefixes_and_64_kib_fields_fill_whole_frames_copying_a_frame_of_each() {
        let nodes: Vec<Bytes> = (0..16u8)
            .flat_map(|i| [node(8, i), node(64 * 1024, i)])
            .collect();
        let out = payloads(&nodes);
        let wire: usize = nodes.iter().map(Bytes::len).sum();
        // As many frames as the bytes fill (h2 cuts a by-reference payload
        // of whole frames into those frames).
        let frames: usize = out.iter().map(|p| p.len().div_ceil(FRAME_SIZE)).sum();
        assert_eq!(frames, wire.div_ceil(FRAME_SIZE), "{:?}", lens(&out));
        assert!(out.iter().rev().skip(1).all(|p| p.len() % FRAME_SIZE == 0));
        assert_eq!(out.concat(), nodes.concat());
        let copied: usize = out
            .iter()
            .filter(|p| {
                !nodes
                    .iter()
                    .any(|n| n.as_ptr() <= p.as_ptr() && p.as_ptr() < n[n.len()..].as_ptr())
            })
            .map(Bytes::len)
            .sum();
        assert!(copied <= 16 * FRAME_SIZE + 16 * 8, "copied {copied} bytes");
    }

    #[test]
    fn a_node_alone_is_not_copied() {
        let only = node(100, 4);
        let out = payloads(std::slice::from_ref(&only));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].as_ptr(), only.as_ptr(), "copied");
    }

    #[test]
    fn every_byte_leaves_once_in_order_in_whole_frames_but_the_last() {
        let sizes = [0usize, 1, 5, 4096, 9000, FRAME_SIZE - 1, FRAME_SIZE, 70_000];
        for a in sizes {
            for b in sizes {
                for c in sizes {
                    let nodes = [node(a, 1), node(b, 2), node(c, 3)];
                    let out = payloads(&nodes);
                    assert_eq!(out.concat(), nodes.concat(), "{a} {b} {c}");
                    let wire = a + b + c;
                    assert!(out.len() <= wire.div_ceil(FRAME_SIZE), "{a} {b} {c}");
                    for payload in out.iter().rev().skip(1) {
                        assert_eq!(payload.len() % FRAME_SIZE, 0, "{a} {b} {c}");
                    }
                    assert!(out.iter().all(|p| !p.is_empty()));
                }
            }
        }
    }

    #[test]
    fn a_pushed_batch_fills_the_partial_frame_before_it() {
        let mut frames = DataFrames::new(batch(&[node(10_000, 1), node(10_000, 2)]));
        assert_eq!(frames.next().map(|p| p.len()), Some(FRAME_SIZE));
        assert!(frames.wants_more());
        frames.push(batch(&[node(10_000, 3), node(10_000, 4)]));
        assert_eq!(frames.next().map(|p| p.len()), Some(FRAME_SIZE));
        assert_eq!(
            frames.next().map(|p| p.len()),
            Some(40_000 - 2 * FRAME_SIZE)
        );
        assert!(frames.is_empty());
        assert!(frames.wants_more());
        assert_eq!(frames.next(), None);
    }

    #[test]
    fn more_is_wanted_only_for_a_copied_payload_under_the_cap() {
        // Small nodes: a next batch lengthens the copied payload, up to the
        // cap.
        let mut frames = DataFrames::new(batch(&[node(8, 1), node(4096, 1)]));
        assert!(frames.wants_more());
        for i in 0..16u8 {
            frames.push(batch(&[node(8, i), node(4096, i)]));
        }
        assert!(!frames.wants_more());
        assert_eq!(frames.next().map(|p| p.len()), Some(MAX_COPIED));
        // A large first node goes by reference, whatever follows.
        let frames = DataFrames::new(batch(&[node(2 * FRAME_SIZE, 1)]));
        assert!(!frames.wants_more());
    }
}
