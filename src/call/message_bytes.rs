//! The message bytes a body carries, read off its envelope prefixes as
//! the frames pass: what A66 calls the compressed message size, counted on
//! the wire bytes themselves, whichever side made them; and where the
//! messages end, for a body cut at a deadline.

#[cfg(feature = "opentelemetry")]
use std::io::IoSlice;

#[cfg(feature = "opentelemetry")]
use bytes::Buf;

// gRPC-Web's trailers travel as a message with the trailers flag; they are
// metadata, not a message, and not counted.
use crate::envelope::{FLAG_TRAILERS, HEADER_LEN};

/// Follows the 5-byte prefixes through a stream of data chunks, counting
/// the payload bytes that pass: per chunk it reads the prefixes only and
/// skips every payload whole. A message cut short (a refusal, a reset)
/// counts what of it arrived.
#[derive(Debug, Default)]
pub(crate) struct MessageBytes {
    header: [u8; HEADER_LEN],
    /// Bytes of `header` collected (a prefix may be split across frames).
    have: usize,
    /// Payload bytes of the current message still to pass.
    remaining: u64,
    /// Whether the current message is one (not gRPC-Web's trailers).
    counted: bool,
    /// Message payload bytes passed.
    total: u64,
}

impl MessageBytes {
    /// Reads one data chunk.
    pub(crate) fn feed(&mut self, mut chunk: &[u8]) {
        loop {
            if self.remaining > 0 {
                let skip =
                    usize::try_from(self.remaining).map_or(chunk.len(), |r| r.min(chunk.len()));
                self.remaining -= skip as u64;
                if self.counted {
                    self.total += skip as u64;
                }
                chunk = &chunk[skip..];
            }
            if chunk.is_empty() {
                return;
            }
            if self.have == 0 {
                // Whole messages, the common case (a batch is one chunk):
                // from prefix to prefix, without a look at the payloads.
                let mut total = self.total;
                while let Some((&[flags, a, b, c, d], rest)) =
                    chunk.split_first_chunk::<HEADER_LEN>()
                {
                    let length = u32::from_be_bytes([a, b, c, d]);
                    let counted = flags & FLAG_TRAILERS == 0;
                    let Some(after) = usize::try_from(length).ok().and_then(|n| rest.get(n..))
                    else {
                        // The payload goes on in later chunks.
                        self.remaining = u64::from(length);
                        self.counted = counted;
                        chunk = rest;
                        break;
                    };
                    // All ones for a message, zero for gRPC-Web's trailers:
                    // no branch in the loop that most bodies run.
                    total += u64::from(length) & u64::from(counted).wrapping_neg();
                    chunk = after;
                }
                self.total = total;
                if self.remaining > 0 {
                    continue;
                }
                if chunk.is_empty() {
                    return;
                }
            }
            // A prefix split across chunks.
            let take = (HEADER_LEN - self.have).min(chunk.len());
            self.header[self.have..self.have + take].copy_from_slice(&chunk[..take]);
            self.have += take;
            chunk = &chunk[take..];
            if self.have == HEADER_LEN {
                self.have = 0;
                let [flags, length @ ..] = self.header;
                self.remaining = u64::from(u32::from_be_bytes(length));
                self.counted = flags & FLAG_TRAILERS == 0;
            }
        }
    }

    /// Reads one chunk of any `Buf` (hyper's and tonic's are one `Bytes`).
    #[cfg(feature = "opentelemetry")]
    pub(crate) fn feed_buf(&mut self, data: &impl Buf) {
        let chunk = data.chunk();
        if chunk.len() == data.remaining() {
            return self.feed(chunk);
        }
        let mut slices = [IoSlice::new(&[]); 64];
        let filled = data.chunks_vectored(&mut slices);
        for slice in &slices[..filled] {
            self.feed(slice);
        }
    }

    /// Whether the bytes so far end where a message does.
    pub(crate) fn at_boundary(&self) -> bool {
        self.have == 0 && self.remaining == 0
    }

    /// Reads `chunk` up to the end of the message under way (nothing at a
    /// boundary), and returns how many of its bytes that is.
    pub(crate) fn feed_to_message_end(&mut self, chunk: &[u8]) -> usize {
        let mut at = 0;
        while !self.at_boundary() && at < chunk.len() {
            // The rest of a split prefix, then the payload it announces.
            let step = if self.have > 0 {
                HEADER_LEN - self.have
            } else {
                usize::try_from(self.remaining).unwrap_or(usize::MAX)
            };
            let end = at.saturating_add(step).min(chunk.len());
            self.feed(&chunk[at..end]);
            at = end;
        }
        at
    }

    /// The message payload bytes that have passed.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }
}

#[cfg(test)]
mod tests {
    use super::MessageBytes;

    fn envelope(flags: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = vec![flags];
        out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        out.extend_from_slice(payload);
        out
    }

    #[test]
    fn counts_payloads_across_any_split() {
        let mut wire = envelope(0, &[7; 10]);
        wire.extend(envelope(1, &[]));
        wire.extend(envelope(1, &[1; 300]));
        wire.extend(envelope(0x80, b"grpc-status:0\r\n"));
        for step in 1..=wire.len() {
            let mut bytes = MessageBytes::default();
            for chunk in wire.chunks(step) {
                bytes.feed(chunk);
            }
            assert_eq!(bytes.total(), 310, "chunks of {step}");
        }
    }

    #[test]
    fn a_walk_to_the_message_end_stops_where_each_message_ends_across_any_split() {
        let mut wire = envelope(0, &[7; 10]);
        wire.extend(envelope(0, &[]));
        wire.extend(envelope(0, &[1; 300]));
        let ends = [15, 20, 325];
        for step in 1..=wire.len() {
            let mut bytes = MessageBytes::default();
            let mut at = 0;
            let mut stops = Vec::new();
            while at < wire.len() {
                let end = (at + step).min(wire.len());
                let chunk = &wire[at..end];
                // At a boundary the walk takes the next prefix's first bytes.
                let moved = match bytes.feed_to_message_end(chunk) {
                    0 => {
                        let first = chunk.len().min(5);
                        bytes.feed(&chunk[..first]);
                        first
                    }
                    moved => moved,
                };
                at += moved;
                if bytes.at_boundary() {
                    stops.push(at);
                }
            }
            assert_eq!(stops, ends, "chunks of {step}");
            assert_eq!(bytes.total(), 310, "chunks of {step}");
        }
    }
}
