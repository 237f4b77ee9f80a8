//! Allocation cost of `EncodeStream`, measured with a counting allocator.

use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use bytes::{BufMut, Bytes};
use futures_core::Stream;
use grpc_stream_codec::encode::{EncodeConfig, EncodeStream, MessageEncoder};
use grpc_stream_codec::status::Status;
use linkedbytes::LinkedBytes;
use test_support::alloc::{CountingAlloc, measure};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::ALWAYS;

/// Copies the payload in, as a generated encoder does with small fields.
struct Copying;

impl MessageEncoder for Copying {
    type Item = Bytes;

    fn encode(&mut self, item: Bytes, dst: &mut LinkedBytes) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

/// Every message ready at once; yields them without allocating.
struct Ready(std::vec::IntoIter<Bytes>);

impl Stream for Ready {
    type Item = Result<Bytes, Status>;

    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Poll::Ready(self.0.next().map(Ok))
    }
}

struct Drained {
    batches: usize,
    messages: usize,
    bytes: usize,
}

/// Encodes `messages` and drops each batch as it comes, as a transport does
/// once it has written the batch.
fn drain(messages: Vec<Bytes>, config: EncodeConfig) -> Drained {
    let mut stream = EncodeStream::new(Ready(messages.into_iter()), Copying, config);
    let mut cx = Context::from_waker(Waker::noop());
    let mut drained = Drained {
        batches: 0,
        messages: 0,
        bytes: 0,
    };
    while let Poll::Ready(Some(batch)) = Pin::new(&mut stream).poll_next(&mut cx) {
        let batch = batch.expect("encoding succeeds");
        drained.batches += 1;
        drained.messages += batch.message_count();
        drained.bytes += batch.len();
    }
    drained
}

fn messages(count: usize, size: usize) -> Vec<Bytes> {
    (0..count)
        .map(|i| Bytes::from(vec![i as u8; size]))
        .collect()
}

#[test]
fn thousand_ready_small_messages_cost_at_most_one_allocation_per_16() {
    let input = messages(1000, 256);
    let (drained, usage) = measure(|| drain(input, EncodeConfig::default()));
    assert_eq!(drained.messages, 1000);
    assert_eq!(drained.bytes, 1000 * 261);
    eprintln!(
        "1000 x 256 B, default threshold: {} batches, {} allocations",
        drained.batches, usage.allocations
    );
    assert!(
        usage.allocations * 16 <= 1000,
        "{} allocations for 1000 messages",
        usage.allocations
    );
}

#[test]
fn steady_state_batches_allocate_nothing_when_the_consumer_keeps_up() {
    // Doubling the messages must not add allocations: after the first
    // batch, a batch costs nothing when the previous one was dropped before
    // it is encoded (the buffer is reclaimed in place). The second stream
    // may cost fewer: it takes the first one's byte list from the thread's
    // spares.
    let (small_input, large_input) = (messages(1000, 256), messages(2000, 256));
    let (_, small) = measure(|| drain(small_input, EncodeConfig::default()));
    let (drained, large) = measure(|| drain(large_input, EncodeConfig::default()));
    assert!(drained.batches >= 15);
    eprintln!(
        "allocations: 1000 msgs {}, 2000 msgs {}",
        small.allocations, large.allocations
    );
    assert!(large.allocations <= small.allocations);
}

#[test]
fn consumer_holding_batches_costs_one_allocation_per_batch() {
    let input = messages(1000, 256);
    let (held, usage) = measure(|| {
        let mut stream =
            EncodeStream::new(Ready(input.into_iter()), Copying, EncodeConfig::default());
        let mut cx = Context::from_waker(Waker::noop());
        let mut held = Vec::with_capacity(64);
        while let Poll::Ready(Some(batch)) = Pin::new(&mut stream).poll_next(&mut cx) {
            held.push(batch.expect("encoding succeeds"));
        }
        held
    });
    let batches = held.len();
    eprintln!("held {batches} batches: {} allocations", usage.allocations);
    // Per batch: a new buffer, and the shared header `BytesMut` allocates
    // when that buffer is first split. Plus the Vec holding the batches and
    // the stream's setup.
    assert!(usage.allocations <= 2 * batches + 4, "{usage:?}");
}

#[test]
fn unbatched_mode_allocates_per_batch_at_most_constant() {
    let input = messages(1000, 256);
    let config = EncodeConfig::default().with_batch_threshold(0);
    let (drained, usage) = measure(|| drain(input, config));
    assert_eq!(drained.batches, 1000);
    eprintln!(
        "1000 x 256 B, threshold 0: {} allocations",
        usage.allocations
    );
    // One node per batch needs no node list, and the buffer is reclaimed.
    assert!(usage.allocations <= 16, "{usage:?}");
}

/// Writes `n` filler bytes: no input allocation to muddy live-byte counts.
struct Filler;

impl MessageEncoder for Filler {
    type Item = usize;

    fn encode(&mut self, n: usize, dst: &mut LinkedBytes) -> Result<(), Status> {
        dst.put_bytes(7, n);
        Ok(())
    }
}

struct Sizes(std::vec::IntoIter<usize>);

impl Stream for Sizes {
    type Item = Result<usize, Status>;

    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Poll::Ready(self.0.next().map(Ok))
    }
}

#[test]
fn a_large_message_is_not_pinned_by_the_stream_after_it_is_sent() {
    let sizes = Sizes(vec![4 << 20, 100, 100].into_iter());
    let (stream, usage) = measure(|| {
        let mut stream = EncodeStream::new(sizes, Filler, EncodeConfig::default());
        let mut cx = Context::from_waker(Waker::noop());
        for _ in 0..2 {
            // The 4 MiB batch, then the two small messages; both dropped.
            let Poll::Ready(Some(Ok(batch))) = Pin::new(&mut stream).poll_next(&mut cx) else {
                panic!("expected a batch");
            };
            drop(batch);
        }
        stream
    });
    eprintln!("retained by the stream: {} bytes", usage.live_delta);
    assert!(usage.peak >= 4 << 20);
    assert!(usage.live_delta < 64 * 1024, "{usage:?}");
    drop(stream);
}

#[test]
fn a_short_stream_does_not_reserve_the_whole_threshold() {
    // One batch of 16 x 256 B (4 KiB on the wire), as a server-streaming
    // reply with everything ready: what it allocates should be about what it
    // sends, not the 32 KiB threshold.
    let messages = messages(16, 256);
    let (drained, usage) = measure(|| drain(messages, EncodeConfig::default()));
    println!("16 x 256 B, default threshold: {usage:?}");
    assert_eq!((drained.batches, drained.messages), (1, 16));
    assert_eq!(drained.bytes, 16 * (5 + 256));
    assert!(usage.allocated_bytes <= 12 * 1024, "{usage:?}");
}
