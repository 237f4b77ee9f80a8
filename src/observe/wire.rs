//! The message bytes a body carries, read off its envelope prefixes as the
//! frames pass: what A66 calls the compressed message size, counted on the
//! wire bytes themselves, whichever side made them.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use std::io::IoSlice;

use bytes::Buf;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;

/// Follows the 5-byte prefixes through a stream of data chunks, counting
/// the payload bytes that pass: per chunk it reads the prefixes only and
/// skips every payload whole. A message cut short (a refusal, a reset)
/// counts what of it arrived.
#[derive(Debug, Default)]
pub(crate) struct MessageBytes {
    header: [u8; 5],
    /// Bytes of `header` collected (a prefix may be split across frames).
    have: usize,
    /// Payload bytes of the current message still to pass.
    remaining: u64,
    /// Whether the current message is one (not gRPC-Web's trailers).
    counted: bool,
    /// Message payload bytes passed.
    total: u64,
}

/// gRPC-Web's trailers travel as a message with this flag bit; they are
/// metadata, not a message.
const TRAILERS_FLAG: u8 = 0x80;

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
                while let Some((&[flags, a, b, c, d], rest)) = chunk.split_first_chunk::<5>() {
                    let length = u32::from_be_bytes([a, b, c, d]);
                    let counted = flags & TRAILERS_FLAG == 0;
                    match usize::try_from(length).ok().and_then(|n| rest.get(n..)) {
                        Some(after) => {
                            if counted {
                                self.total += u64::from(length);
                            }
                            chunk = after;
                        }
                        None => {
                            // The payload goes on in later chunks.
                            self.remaining = u64::from(length);
                            self.counted = counted;
                            chunk = rest;
                            break;
                        }
                    }
                }
                if self.remaining > 0 {
                    continue;
                }
                if chunk.is_empty() {
                    return;
                }
            }
            // A prefix split across chunks.
            let take = (5 - self.have).min(chunk.len());
            self.header[self.have..self.have + take].copy_from_slice(&chunk[..take]);
            self.have += take;
            chunk = &chunk[take..];
            if self.have == 5 {
                self.have = 0;
                let [flags, length @ ..] = self.header;
                self.remaining = u64::from(u32::from_be_bytes(length));
                self.counted = flags & TRAILERS_FLAG == 0;
            }
        }
    }

    /// Reads one chunk of any `Buf` (hyper's and tonic's are one `Bytes`).
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

    /// The message payload bytes that have passed.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }
}

pin_project! {
    /// A body whose message bytes are added to a call's count as its
    /// frames pass: a server's request, a client's request.
    pub struct Counted<B> {
        #[pin]
        inner: B,
        count: Option<(MessageBytes, Arc<AtomicU64>)>,
    }
}

impl<B> Counted<B> {
    pub(crate) fn new(inner: B, total: Option<Arc<AtomicU64>>) -> Self {
        Counted {
            inner,
            count: total.map(|total| (MessageBytes::default(), total)),
        }
    }
}

impl<B> Body for Counted<B>
where
    B: Body,
    B::Data: Buf,
{
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let this = self.project();
        let polled = this.inner.poll_frame(cx);
        if let (Poll::Ready(Some(Ok(frame))), Some((bytes, total))) = (&polled, this.count)
            && let Some(data) = frame.data_ref()
        {
            let before = bytes.total();
            bytes.feed_buf(data);
            total.fetch_add(bytes.total() - before, Ordering::Relaxed);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
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
}
