//! [`DataFrames`]: a batch's byte nodes as the payloads of HTTP/2 DATA frames.
//!
//! h2 and hyper pay for every data frame a body yields (stream state, flow
//! control, another poll of the body), whatever its size, and sending a
//! node alone costs that much more than copying a few KiB. So frames follow
//! bytes, not nodes: consecutive nodes smaller than a frame are copied
//! together into payloads of [`FRAME_SIZE`], the last node of a payload
//! split where the frame is full; a node of a frame or more goes by
//! reference, as does a small node with no small neighbour to join.

use std::collections::VecDeque;

use bytes::{Bytes, BytesMut};

use super::batch::EncodedBatch;
use super::config::FRAME_SIZE;

/// Nodes this long or longer are sent as they are: they fill a frame (h2
/// cuts longer ones into full frames), so copying them would save no frame.
const BY_REFERENCE: usize = FRAME_SIZE;

/// The payloads of the data frames that carry batches, in wire order.
///
/// Batches are pushed as they come; a body that can see whether the next
/// batch is ready pushes it before taking a last, partial payload
/// ([`DataFrames::ends_in_partial_frame`]), so frames fill across batches.
#[derive(Debug, Default)]
pub(crate) struct DataFrames {
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
        self.nodes.extend(batch.into_nodes());
    }

    /// Whether every byte has been taken.
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether what is left fills less than one frame: the next payload
    /// would be a partial frame that the next batch could fill.
    pub(crate) fn ends_in_partial_frame(&self) -> bool {
        (1..FRAME_SIZE).contains(&self.len)
    }

    /// How many bytes the payload that starts with a node of `first` bytes
    /// holds: the run of small nodes after it, up to a frame.
    fn payload_len(&self, first: usize) -> usize {
        if first >= BY_REFERENCE {
            return first;
        }
        let mut len = first;
        for node in &self.nodes {
            if len >= FRAME_SIZE || node.len() >= BY_REFERENCE {
                break;
            }
            len += node.len();
        }
        len.min(FRAME_SIZE)
    }
}

impl Iterator for DataFrames {
    type Item = Bytes;

    fn next(&mut self) -> Option<Bytes> {
        let first = self.nodes.pop_front()?;
        let len = self.payload_len(first.len());
        self.len -= len;
        if len == first.len() {
            return Some(first);
        }
        let mut payload = BytesMut::with_capacity(len);
        payload.extend_from_slice(&first);
        while payload.len() < len {
            // `payload_len` counted these nodes, so they are there.
            let Some(mut node) = self.nodes.pop_front() else {
                debug_assert!(false, "a counted node is missing");
                break;
            };
            let room = len - payload.len();
            if node.len() > room {
                // The tail goes first in the next payload.
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
        assert_eq!(
            lens(&out),
            [FRAME_SIZE, FRAME_SIZE, FRAME_SIZE, FRAME_SIZE, 128]
        );
        assert_eq!(out.concat(), nodes.concat());
        assert_eq!(wire, 4 * FRAME_SIZE + 128);
    }

    #[test]
    fn a_node_that_fills_a_frame_goes_by_reference() {
        let large = node(4 * FRAME_SIZE, 9);
        let out = payloads(&[node(8, 1), large.clone(), node(8, 2), node(8, 3)]);
        assert_eq!(lens(&out), [8, 4 * FRAME_SIZE, 16]);
        assert_eq!(out[1].as_ptr(), large.as_ptr(), "copied");
    }

    #[test]
    fn a_node_alone_is_not_copied() {
        let only = node(100, 4);
        let out = payloads(std::slice::from_ref(&only));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].as_ptr(), only.as_ptr(), "copied");
    }

    #[test]
    fn every_byte_leaves_once_in_order_and_no_payload_passes_a_frame_unless_it_is_one_node() {
        let sizes = [0usize, 1, 5, 4096, 9000, FRAME_SIZE - 1, FRAME_SIZE, 70_000];
        for a in sizes {
            for b in sizes {
                for c in sizes {
                    let nodes = [node(a, 1), node(b, 2), node(c, 3)];
                    let out = payloads(&nodes);
                    assert_eq!(out.concat(), nodes.concat(), "{a} {b} {c}");
                    for payload in &out {
                        let passed_as_is = nodes.iter().any(|n| n.as_ptr() == payload.as_ptr());
                        assert!(payload.len() <= FRAME_SIZE || passed_as_is, "{a} {b} {c}");
                        assert!(!payload.is_empty());
                    }
                }
            }
        }
    }

    #[test]
    fn a_pushed_batch_fills_the_partial_frame_before_it() {
        let mut frames = DataFrames::new(batch(&[node(10_000, 1), node(10_000, 2)]));
        assert_eq!(frames.next().map(|p| p.len()), Some(FRAME_SIZE));
        assert!(frames.ends_in_partial_frame());
        frames.push(batch(&[node(10_000, 3), node(10_000, 4)]));
        assert!(!frames.ends_in_partial_frame());
        assert_eq!(frames.next().map(|p| p.len()), Some(FRAME_SIZE));
        assert_eq!(
            frames.next().map(|p| p.len()),
            Some(40_000 - 2 * FRAME_SIZE)
        );
        assert!(frames.is_empty());
        assert!(!frames.ends_in_partial_frame());
        assert_eq!(frames.next(), None);
    }
}
