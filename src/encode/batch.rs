//! [`EncodedBatch`]: the framed messages one poll of the stream produced.

use std::collections::VecDeque;
use std::{slice, vec};

use bytes::Bytes;

/// Framed gRPC messages, held as the byte nodes they were encoded into.
///
/// Concatenated, the nodes are the exact wire bytes: each message's 5-byte
/// prefix followed by its payload. A full batch of a stream whose batch
/// threshold is at least one HTTP/2 frame has its last node cut to a
/// multiple of 16 KiB ([`FRAME_SIZE`](super::FRAME_SIZE)), so it may end
/// inside a message that the next batch continues; the stream's batches
/// together are always whole messages. A node may hold several messages, and a
/// message may span several nodes (a field inserted by reference stays its
/// own node), so send the nodes in order, for example as
/// [`EncodedBatch::into_frames`] joins them into data frames. Empty nodes
/// are never included.
#[derive(Clone, Debug, Default)]
pub struct EncodedBatch {
    nodes: Nodes,
    len: usize,
    messages: usize,
}

/// The node list, inline when there is a single node: a batch of copied-in
/// messages is one node, and it should not cost a `Vec` allocation.
#[derive(Clone, Debug, Default)]
enum Nodes {
    #[default]
    Empty,
    One(Bytes),
    Many(Vec<Bytes>),
}

impl EncodedBatch {
    /// Starts an empty batch that will hold about `nodes` nodes.
    pub(crate) fn with_node_hint(nodes: usize) -> NodesBuilder {
        NodesBuilder {
            batch: EncodedBatch::default(),
            hint: nodes,
        }
    }

    /// Total wire length in bytes, prefixes included.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the batch holds no bytes (never the case for a batch the
    /// stream yields).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of messages whose last byte is in the batch.
    pub fn message_count(&self) -> usize {
        self.messages
    }

    /// The byte nodes, in wire order.
    pub fn nodes(&self) -> &[Bytes] {
        match &self.nodes {
            Nodes::Empty => &[],
            Nodes::One(node) => slice::from_ref(node),
            Nodes::Many(nodes) => nodes,
        }
    }

    /// A batch of `messages` messages whose bytes are the one `node`.
    pub(crate) fn single(node: Bytes, messages: usize) -> EncodedBatch {
        EncodedBatch {
            len: node.len(),
            nodes: Nodes::One(node),
            messages,
        }
    }

    /// The batch's node when it has exactly one, or the batch.
    pub(crate) fn into_sole_node(self) -> Result<Bytes, EncodedBatch> {
        match self.nodes {
            Nodes::One(node) => Ok(node),
            nodes => Err(EncodedBatch { nodes, ..self }),
        }
    }

    /// Appends the byte nodes to `dst`, in wire order: a whole `Vec` at
    /// once rather than one node at a time.
    pub(crate) fn append_nodes_to(self, dst: &mut VecDeque<Bytes>) {
        match self.nodes {
            Nodes::Empty => {}
            Nodes::One(node) => dst.push_back(node),
            Nodes::Many(nodes) => dst.extend(nodes),
        }
    }

    /// Consumes the batch, yielding its byte nodes in wire order.
    pub fn into_nodes(self) -> IntoNodes {
        IntoNodes(match self.nodes {
            Nodes::Empty => IntoNodesInner::One(None),
            Nodes::One(node) => IntoNodesInner::One(Some(node)),
            Nodes::Many(nodes) => IntoNodesInner::Many(nodes.into_iter()),
        })
    }

    /// Copies the batch into one contiguous buffer; meant for tests and
    /// logging, since it defeats the zero-copy nodes.
    pub fn to_bytes(&self) -> Bytes {
        match &self.nodes {
            Nodes::Empty => Bytes::new(),
            Nodes::One(node) => node.clone(),
            Nodes::Many(nodes) => Bytes::from(nodes.concat()),
        }
    }
}

impl IntoIterator for EncodedBatch {
    type Item = Bytes;
    type IntoIter = IntoNodes;

    fn into_iter(self) -> IntoNodes {
        self.into_nodes()
    }
}

/// Appends nodes to a batch being cut from the buffer.
pub(crate) struct NodesBuilder {
    batch: EncodedBatch,
    hint: usize,
}

impl NodesBuilder {
    pub(crate) fn push(&mut self, node: Bytes) {
        if node.is_empty() {
            return;
        }
        self.batch.len += node.len();
        // The common case, a batch of many nodes, pushes in place.
        match &mut self.batch.nodes {
            Nodes::Many(nodes) => nodes.push(node),
            Nodes::Empty => self.batch.nodes = Nodes::One(node),
            Nodes::One(_) => {
                let mut nodes = Vec::with_capacity(self.hint.max(2));
                if let Nodes::One(first) = std::mem::take(&mut self.batch.nodes) {
                    nodes.push(first);
                }
                nodes.push(node);
                self.batch.nodes = Nodes::Many(nodes);
            }
        }
    }

    pub(crate) fn finish(mut self, messages: usize) -> EncodedBatch {
        self.batch.messages = messages;
        self.batch
    }
}

/// Iterator over the byte nodes of an [`EncodedBatch`], from
/// [`EncodedBatch::into_nodes`].
#[derive(Debug)]
pub struct IntoNodes(IntoNodesInner);

#[derive(Debug)]
enum IntoNodesInner {
    One(Option<Bytes>),
    Many(vec::IntoIter<Bytes>),
}

impl Iterator for IntoNodes {
    type Item = Bytes;

    fn next(&mut self) -> Option<Bytes> {
        match &mut self.0 {
            IntoNodesInner::One(node) => node.take(),
            IntoNodesInner::Many(nodes) => nodes.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let len = match &self.0 {
            IntoNodesInner::One(node) => usize::from(node.is_some()),
            IntoNodesInner::Many(nodes) => nodes.len(),
        };
        (len, Some(len))
    }
}

impl ExactSizeIterator for IntoNodes {}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(nodes: &[&'static [u8]]) -> EncodedBatch {
        let mut builder = EncodedBatch::with_node_hint(nodes.len());
        for node in nodes {
            builder.push(Bytes::from_static(node));
        }
        builder.finish(1)
    }

    #[test]
    fn empty_nodes_are_dropped() {
        let batch = batch(&[b"", b"ab", b"", b"c"]);
        assert_eq!(batch.nodes(), [&b"ab"[..], &b"c"[..]]);
        assert_eq!(batch.len(), 3);
        assert_eq!(batch.to_bytes(), &b"abc"[..]);
    }

    #[test]
    fn one_node_and_many_iterate_in_order() {
        let one = batch(&[b"xyz"]);
        assert_eq!(one.nodes().len(), 1);
        assert_eq!(one.into_nodes().collect::<Vec<_>>(), [&b"xyz"[..]]);
        let many = batch(&[b"a", b"b", b"c"]);
        let nodes = many.into_nodes();
        assert_eq!(nodes.len(), 3);
        assert_eq!(nodes.collect::<Vec<_>>(), [&b"a"[..], &b"b"[..], &b"c"[..]]);
        assert_eq!(batch(&[]).into_nodes().next(), None);
    }

    #[test]
    fn frames_carry_the_nodes_joined() {
        let frames: Vec<_> = batch(&[b"a", b"bc"]).into_frames().collect();
        let data: Vec<_> = frames.into_iter().map(|f| f.into_data().unwrap()).collect();
        assert_eq!(data, [&b"abc"[..]]);
    }
}
