//! What encoding 1,000 ready 256 B `EchoResponse`s costs in allocations and
//! DATA frames: the adapter's `encode` against volo-grpc's, on the generated
//! types, with the project's counting allocator.

use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use futures::Stream as _;
use futures::stream::{self, BoxStream};
use http_body::Frame;
use test_support::alloc::{CountingAlloc, Usage, measure};
use volo_echo::adapter::EchoResponse;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::ALWAYS;

const MESSAGES: usize = 1000;

fn responses() -> Vec<Result<EchoResponse, volo_grpc::Status>> {
    (0..MESSAGES as u32)
        .map(|seq| EchoResponse {
            payload: volo_echo::server_stream_payload(seq, 256),
            seq,
            ..Default::default()
        })
        .map(Ok)
        .collect()
}

/// Drains an always-ready body stream, returning (frames, bytes).
fn drain(
    mut frames: BoxStream<'static, Result<Frame<Bytes>, volo_grpc::Status>>,
) -> (usize, usize) {
    let mut cx = Context::from_waker(Waker::noop());
    let (mut count, mut bytes) = (0, 0);
    loop {
        match Pin::new(&mut frames).poll_next(&mut cx) {
            Poll::Ready(Some(Ok(frame))) => {
                count += 1;
                bytes += frame.data_ref().map_or(0, Bytes::len);
            }
            Poll::Ready(Some(Err(status))) => panic!("encode failed: {status:?}"),
            Poll::Ready(None) => return (count, bytes),
            Poll::Pending => panic!("an iterator source is never pending"),
        }
    }
}

fn run(adapter: bool) -> ((usize, usize), Usage) {
    let source = stream::iter(responses());
    measure(move || {
        let frames = if adapter {
            grpc_stream_codec::codegen::volo::encode(source, None)
        } else {
            volo_grpc::codec::encode::encode(source, None)
        };
        drain(frames)
    })
}

#[test]
fn ready_messages_cost_a_fraction_of_an_allocation_each() {
    let ((adapter_frames, adapter_bytes), adapter) = run(true);
    let ((stock_frames, stock_bytes), stock) = run(false);
    eprintln!(
        "{MESSAGES} ready 256 B messages: adapter {} allocations ({} B), {adapter_frames} frames; \
         stock volo-grpc {} allocations ({} B), {stock_frames} frames",
        adapter.allocations, adapter.allocated_bytes, stock.allocations, stock.allocated_bytes
    );
    // The same bytes on the wire.
    assert_eq!(adapter_bytes, stock_bytes);
    // Batches of at least 32 KiB but the last: one frame each here (the
    // payloads are below pilota's by-reference size), not one per message.
    assert!(
        adapter_frames <= adapter_bytes.div_ceil(32 * 1024),
        "{adapter_frames}"
    );
    assert_eq!(stock_frames, MESSAGES);
    // At most one allocation per 16 messages, where stock pays several each.
    assert!(
        adapter.allocations <= MESSAGES / 16,
        "adapter: {} allocations",
        adapter.allocations
    );
    assert!(
        stock.allocations >= MESSAGES,
        "stock: {}",
        stock.allocations
    );
}
