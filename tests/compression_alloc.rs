//! Allocations of compressed streams, with a counting allocator: one
//! compression context per stream, so in steady state a compressed message
//! costs no allocation on either side; and none for a stream that does not
//! compress.

use std::cell::Cell;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use bytes::{BufMut, Bytes, BytesMut};
use futures_core::Stream;
use grpc_stream_codec::compression::CompressionLevel;
use grpc_stream_codec::compression::Compressor;
use grpc_stream_codec::decode::{Decoded, EnvelopeAssembler};
use grpc_stream_codec::encode::{EncodeConfig, EncodeStream, MessageEncoder};
use grpc_stream_codec::envelope::EnvelopeHeader;
use grpc_stream_codec::{
    compression::{Compression, CompressionEncoding},
    envelope::Limits,
    status::Status,
};
use linkedbytes::LinkedBytes;
use test_support::alloc::{Usage, measure};

#[global_allocator]
static ALLOC: test_support::alloc::CountingAlloc = test_support::alloc::CountingAlloc::ALWAYS;

struct Copying;

impl MessageEncoder for Copying {
    type Item = Bytes;

    fn encode(&mut self, item: Bytes, dst: &mut LinkedBytes) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

/// `left` ready messages, then `Pending` until refilled: one long-lived
/// stream fed bursts.
type Burst = test_support::burst::Burst<Bytes, Status>;

/// About 2:1 compressible, as in the benches: compressed 4 KiB messages
/// are ~2 KiB, so some straddle the 16 KiB frames they are sent in.
fn text(len: usize) -> Bytes {
    let mut state = 0x2545_f491_u32;
    (0..len)
        .map(|_| {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            b"abcdefghijklmnop"[(state >> 28) as usize]
        })
        .collect::<Vec<_>>()
        .into()
}

const COMPRESSING: [CompressionEncoding; 3] = [
    CompressionEncoding::Gzip,
    CompressionEncoding::Deflate,
    CompressionEncoding::Zstd,
];

/// Bursts after the first before the batch buffer is in steady state: it
/// moves from the first batch's small reservation to the full one, and its
/// allocation, reclaimed in place batch after batch, grows once when a
/// batch starts too close to its end to reclaim.
const WARM_UP: usize = 10;

/// Encodes bursts of `burst` messages on one stream, dropping each batch as
/// it comes; returns the usage of the first burst and of 40 bursts in
/// steady state.
fn encode_usage(compression: Option<Compression>, len: usize, burst: usize) -> (Usage, Usage) {
    let left = Rc::new(Cell::new(0));
    let source = Burst::new(text(len), left.clone());
    let config = EncodeConfig::new().with_compression(compression);
    let mut stream = EncodeStream::new(source, Copying, config);
    let mut cx = Context::from_waker(Waker::noop());
    let mut run = || {
        left.set(burst);
        let mut messages = 0;
        while let Poll::Ready(Some(batch)) = Pin::new(&mut stream).poll_next(&mut cx) {
            messages += batch.unwrap().message_count();
        }
        assert_eq!(messages, burst);
    };
    let ((), first) = measure(&mut run);
    (0..WARM_UP).for_each(|_| run());
    let ((), steady) = measure(|| (0..40).for_each(|_| run()));
    (first, steady)
}

#[test]
fn compressed_encoding_allocates_nothing_per_message_in_steady_state() {
    for encoding in COMPRESSING {
        for len in [256, 4096] {
            let (first, steady) = encode_usage(Some(Compression::new(encoding)), len, 64);
            eprintln!("encode {encoding} {len} B: first burst {first:?}, 40 more {steady:?}");
            assert_eq!(steady.allocations, 0, "{encoding} {len}: {steady:?}");
        }
    }
}

#[test]
fn an_uncompressed_stream_sets_up_no_context() {
    let (plain, _) = encode_usage(None, 256, 16);
    let identity = Some(Compression::new(CompressionEncoding::Identity));
    let (identity, _) = encode_usage(identity, 256, 16);
    // Contexts are pooled process-wide by level; level 2 is used by no
    // other test here, so this stream's first message makes a new one.
    let gzip = Compression::new(CompressionEncoding::Gzip).with_level(CompressionLevel::Precise(2));
    let (gzip, _) = encode_usage(Some(gzip), 256, 16);
    eprintln!("16 x 256 B: plain {plain:?}, identity {identity:?}, gzip {gzip:?}");
    // The batch buffer only: a first batch reserves 8 KiB.
    assert!(plain.allocated_bytes <= 16 * 1024, "{plain:?}");
    assert!(identity.allocated_bytes <= 16 * 1024, "{identity:?}");
    // A deflate context alone is far more than that (libdeflate's tables
    // come from the Rust allocator, so the counter sees them).
    assert!(gzip.allocated_bytes > 64 * 1024, "{gzip:?}");
}

/// `count` compressed envelopes of `len` bytes each, in 16 KiB frames.
fn compressed_frames(encoding: CompressionEncoding, len: usize, count: usize) -> Vec<Bytes> {
    let mut compressor = Compressor::new(Compression::new(encoding));
    let mut wire = BytesMut::new();
    for _ in 0..count {
        let mut payload = BytesMut::new();
        compressor.compress(&mut text(len), &mut payload).unwrap();
        wire.put_slice(&EnvelopeHeader::message(true, payload.len() as u32).to_bytes());
        wire.put_slice(&payload);
    }
    let wire = wire.freeze();
    (0..wire.len())
        .step_by(16 * 1024)
        .map(|start| wire.slice(start..wire.len().min(start + 16 * 1024)))
        .collect()
}

#[test]
fn compressed_decoding_allocates_nothing_per_message_in_steady_state() {
    for encoding in COMPRESSING {
        for len in [256, 4096] {
            let frames = compressed_frames(encoding, len, 64);
            let mut assembler = EnvelopeAssembler::new(Limits::default(), Some(encoding));
            let mut run = || {
                let mut messages = 0;
                for frame in &frames {
                    assembler.push(frame.clone());
                    while let Some(decoded) = assembler.next().unwrap() {
                        let Decoded::Message(message) = decoded else {
                            panic!("no trailers here");
                        };
                        assert_eq!(message, text(len));
                        messages += 1;
                    }
                }
                assert_eq!(messages, 64);
            };
            let ((), first) = measure(&mut run);
            let ((), steady) = measure(|| (0..20).for_each(|_| run()));
            eprintln!("decode {encoding} {len} B: first {first:?}, 20 more {steady:?}");
            // `text(len)` in the check above allocates once per message.
            assert_eq!(steady.allocations, 20 * 64, "{encoding} {len}: {steady:?}");
        }
    }
}

/// An encode stream that has sent one 256 B message and is now idle
/// (its source `Pending`).
fn idle_encoder(compression: Option<Compression>) -> impl Stream {
    let left = Rc::new(Cell::new(1));
    let source = Burst::new(text(256), left.clone());
    let config = EncodeConfig::new().with_compression(compression);
    let mut stream = EncodeStream::new(source, Copying, config);
    let mut cx = Context::from_waker(Waker::noop());
    let Poll::Ready(Some(Ok(batch))) = Pin::new(&mut stream).poll_next(&mut cx) else {
        panic!("one batch");
    };
    assert_eq!(batch.message_count(), 1);
    drop(batch);
    assert!(Pin::new(&mut stream).poll_next(&mut cx).is_pending());
    stream
}

/// An assembler that has decoded one message from `frames` and is idle.
fn idle_decoder(frames: &[Bytes], encoding: Option<CompressionEncoding>) -> EnvelopeAssembler {
    let mut assembler = EnvelopeAssembler::new(Limits::default(), encoding);
    for frame in frames {
        assembler.push(frame.clone());
    }
    let Some(Decoded::Message(message)) = assembler.next().unwrap() else {
        panic!("one message");
    };
    assert_eq!(message.len(), 256);
    drop(message);
    assert!(assembler.next().unwrap().is_none());
    assembler
}

/// Live heap per stream of `STREAMS` streams made by `open` and kept.
fn held_per_stream<T>(open: impl Fn() -> T) -> isize {
    const STREAMS: usize = 64;
    let (streams, usage) = measure(|| (0..STREAMS).map(|_| open()).collect::<Vec<_>>());
    drop(streams);
    usage.live_delta / STREAMS as isize
}

/// Streams that sent or received one compressed message and then went
/// idle hold no compression context: contexts go back to a process-wide
/// pool after each message. Measured as the live Rust heap per idle
/// stream, against the same stream uncompressed, after the pool was
/// warmed so it already holds the one context they all share.
/// libdeflate's tables come from the Rust allocator and are counted; zstd
/// contexts are C heap the counter cannot see, pooled the same way (the
/// unit tests in `compression::context_tests` check that pool).
#[test]
fn idle_compressed_streams_pin_no_context() {
    // What compression may add to an idle stream: a few KiB of buffers.
    const EXTRA_PER_STREAM: isize = 4 * 1024;
    let plain_encoder = held_per_stream(|| idle_encoder(None));
    let plain_frames = {
        let mut wire = BytesMut::new();
        wire.put_slice(&EnvelopeHeader::message(false, 256).to_bytes());
        wire.put_slice(&text(256));
        vec![wire.freeze()]
    };
    let plain_decoder = held_per_stream(|| idle_decoder(&plain_frames, None));
    for encoding in [CompressionEncoding::Gzip, CompressionEncoding::Deflate] {
        // Level 8 is this test's alone, so no other test takes the pooled
        // context while it runs.
        let compression = Compression::new(encoding).with_level(CompressionLevel::Precise(8));
        drop(idle_encoder(Some(compression)));
        let encoder = held_per_stream(|| idle_encoder(Some(compression)));
        eprintln!("idle {encoding} encoder: {encoder} B, uncompressed: {plain_encoder} B");
        assert!(
            encoder - plain_encoder <= EXTRA_PER_STREAM,
            "{encoding}: an idle encoder holds {encoder} B, {plain_encoder} B uncompressed"
        );

        let frames = compressed_frames(encoding, 256, 1);
        drop(idle_decoder(&frames, Some(encoding)));
        let decoder = held_per_stream(|| idle_decoder(&frames, Some(encoding)));
        eprintln!("idle {encoding} decoder: {decoder} B, uncompressed: {plain_decoder} B");
        assert!(
            decoder - plain_decoder <= EXTRA_PER_STREAM,
            "{encoding}: an idle decoder holds {decoder} B, {plain_decoder} B uncompressed"
        );
    }
}
