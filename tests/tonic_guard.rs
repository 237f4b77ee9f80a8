//! The tonic guard's body wrapper, driven through tonic's own `Streaming`
//! decoder: what tonic does with and without the guard.
#![cfg(feature = "tonic")]

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use futures_util::StreamExt;
use grpc_stream_codec::Limits;
use grpc_stream_codec::tonic::guard::{GuardConfig, GuardMode, GuardedBody};
use http_body::{Body, Frame};
use test_support::alloc::{CountingAlloc, measure};
use tonic::codec::{DecodeBuf, Decoder, Streaming};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::ALWAYS;

const MIB: usize = 1024 * 1024;
const MODES: [GuardMode; 2] = [GuardMode::PassThrough, GuardMode::Assembling];

/// A tonic decoder that hands out each message's bytes.
#[derive(Default)]
struct RawDecoder;

impl Decoder for RawDecoder {
    type Item = Bytes;
    type Error = tonic::Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, tonic::Status> {
        Ok(Some(buf.copy_to_bytes(buf.remaining())))
    }
}

/// A body that yields the given frames, then either ends or stays pending
/// forever (a peer that went quiet).
struct Frames {
    frames: VecDeque<Frame<Bytes>>,
    then_pending: bool,
}

impl Frames {
    fn data(chunks: Vec<Vec<u8>>) -> Self {
        Frames {
            frames: chunks
                .into_iter()
                .map(|c| Frame::data(Bytes::from(c)))
                .collect(),
            then_pending: false,
        }
    }
}

impl Body for Frames {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, tonic::Status>>> {
        match self.frames.pop_front() {
            Some(frame) => Poll::Ready(Some(Ok(frame))),
            None if self.then_pending => Poll::Pending,
            None => Poll::Ready(None),
        }
    }
}

fn envelope(flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![flags];
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(payload);
    out
}

fn guarded(chunks: Vec<Vec<u8>>, mode: GuardMode, limits: Limits) -> GuardedBody<Frames> {
    GuardedBody::new(
        Frames::data(chunks),
        GuardConfig::default().with_mode(mode).with_limits(limits),
    )
}

/// Everything tonic's request decoder yields for a body.
async fn tonic_reads<B>(body: B) -> Vec<Result<Bytes, tonic::Status>>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut stream = Streaming::new_request(RawDecoder, body, None, None);
    let mut out = Vec::new();
    while let Some(item) = stream.next().await {
        let failed = item.is_err();
        out.push(item);
        if failed {
            break;
        }
    }
    out
}

#[tokio::test]
async fn valid_bodies_reach_tonic_unchanged_in_both_modes() {
    let mut wire = envelope(0, b"first");
    wire.extend(envelope(0, &[7; 300]));
    wire.extend(envelope(0, b""));
    for mode in MODES {
        for chunk in [1, 3, 5, 64, wire.len()] {
            let chunks = wire.chunks(chunk).map(<[u8]>::to_vec).collect();
            let read = tonic_reads(guarded(chunks, mode, Limits::default())).await;
            let messages: Vec<Bytes> = read.into_iter().map(Result::unwrap).collect();
            assert_eq!(messages.len(), 3, "{mode:?} chunk {chunk}");
            assert_eq!(&messages[0][..], b"first");
            assert_eq!(&messages[1][..], &[7; 300]);
            assert!(messages[2].is_empty());
        }
    }
}

#[tokio::test]
async fn pass_through_forwards_the_same_buffers() {
    let frame = Bytes::from(envelope(0, b"zero copy"));
    let mut body = GuardedBody::new(
        Frames {
            frames: VecDeque::from([Frame::data(frame.clone())]),
            then_pending: false,
        },
        GuardConfig::default(),
    );
    let forwarded = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx))
        .await
        .unwrap()
        .unwrap()
        .into_data()
        .unwrap();
    assert_eq!(forwarded.as_ptr(), frame.as_ptr(), "not copied");
}

#[tokio::test]
async fn over_limit_is_resource_exhausted_and_tonic_keeps_the_status() {
    // Without the guard tonic answers OUT_OF_RANGE.
    let header = vec![0, 0xff, 0xff, 0xff, 0xff];
    let stock = tonic_reads(Frames::data(vec![header.clone()])).await;
    assert_eq!(
        stock.last().unwrap().as_ref().unwrap_err().code(),
        tonic::Code::OutOfRange
    );
    for mode in MODES {
        let read = tonic_reads(guarded(vec![header.clone()], mode, Limits::default())).await;
        let status = read.last().unwrap().as_ref().unwrap_err();
        assert_eq!(status.code(), tonic::Code::ResourceExhausted, "{mode:?}");
        assert_eq!(
            status.message(),
            "message size 4294967295 exceeds limit 4194304"
        );
    }
}

#[tokio::test]
async fn the_configured_limit_applies() {
    let limits = Limits::default().with_max_receive(100);
    for mode in MODES {
        let ok = tonic_reads(guarded(vec![envelope(0, &[1; 100])], mode, limits)).await;
        assert!(ok[0].is_ok(), "{mode:?}");
        let read = tonic_reads(guarded(vec![envelope(0, &[1; 101])], mode, limits)).await;
        let status = read[0].as_ref().unwrap_err();
        assert_eq!(status.code(), tonic::Code::ResourceExhausted);
        assert_eq!(status.message(), "message size 101 exceeds limit 100");
    }
}

#[tokio::test]
async fn a_body_ending_after_a_header_is_internal_not_a_clean_end() {
    let header_only = envelope(0, &[0; 16])[..5].to_vec();
    // Without the guard tonic sees a clean end: the message is silently lost.
    let stock = tonic_reads(Frames::data(vec![header_only.clone()])).await;
    assert!(stock.is_empty(), "{stock:?}");
    for mode in MODES {
        let read = tonic_reads(guarded(vec![header_only.clone()], mode, Limits::default())).await;
        let status = read.last().unwrap().as_ref().unwrap_err();
        assert_eq!(status.code(), tonic::Code::Internal, "{mode:?}");
        assert_eq!(
            status.message(),
            "protocol error: body ended inside a message (0 of 16 bytes)"
        );
    }
}

#[tokio::test]
async fn partial_header_and_partial_payload_are_internal() {
    let full = envelope(0, &[9; 16]);
    for cut in [2, 12] {
        for mode in MODES {
            let read =
                tonic_reads(guarded(vec![full[..cut].to_vec()], mode, Limits::default())).await;
            let status = read.last().unwrap().as_ref().unwrap_err();
            assert_eq!(status.code(), tonic::Code::Internal, "{mode:?} cut {cut}");
            assert!(
                status
                    .message()
                    .starts_with("protocol error: body ended inside")
            );
        }
    }
}

#[tokio::test]
async fn reserved_flag_bits_are_internal() {
    for mode in MODES {
        let read = tonic_reads(guarded(vec![envelope(0x04, b"x")], mode, Limits::default())).await;
        let status = read.last().unwrap().as_ref().unwrap_err();
        assert_eq!(status.code(), tonic::Code::Internal, "{mode:?}");
        assert!(status.message().contains("invalid envelope flags 0x04"));
    }
}

#[tokio::test]
async fn grpc_web_trailers_frames_pass_through() {
    let trailers = envelope(0x80, b"grpc-status: 0\r\ngrpc-message: done\r\n");
    let mut wire = envelope(0, b"m");
    wire.extend(&trailers);
    for mode in MODES {
        let chunks = wire.chunks(4).map(<[u8]>::to_vec).collect();
        let body = guarded(chunks, mode, Limits::default());
        let collected = http_body_util::BodyExt::collect(body)
            .await
            .unwrap()
            .to_bytes();
        assert_eq!(&collected[..], &wire[..], "{mode:?}");
    }
}

/// tonic reserves the declared length as soon as it reads a header; the
/// assembling guard forwards nothing until the bytes have arrived.
#[tokio::test]
async fn assembling_mode_keeps_tonic_from_reserving_a_declared_length() {
    let mut first = envelope(0, &[0; 16]);
    first[1..5].copy_from_slice(&(4 * MIB as u32).to_be_bytes());
    let quiet_peer = || Frames {
        frames: VecDeque::from([Frame::data(Bytes::from(first.clone()))]),
        then_pending: true,
    };
    let poll_once = |body: tonic::body::Body| {
        let mut stream = Streaming::new_request(RawDecoder, body, None, None);
        let waker = futures_util::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        assert!(stream.poll_next_unpin(&mut cx).is_pending());
        stream
    };

    let (stock, stock_usage) = measure(|| poll_once(tonic::body::Body::new(quiet_peer())));
    let (pass, pass_usage) = measure(|| {
        poll_once(tonic::body::Body::new(GuardedBody::new(
            quiet_peer(),
            GuardConfig::default(),
        )))
    });
    let (held, held_usage) = measure(|| {
        poll_once(tonic::body::Body::new(GuardedBody::new(
            quiet_peer(),
            GuardConfig::default().with_mode(GuardMode::Assembling),
        )))
    });
    eprintln!(
        "header declaring 4 MiB + 16 bytes: stock tonic live {} B, pass-through {} B, \
         assembling {} B",
        stock_usage.live_delta, pass_usage.live_delta, held_usage.live_delta
    );
    assert!(
        stock_usage.live_delta > (4 * MIB) as isize,
        "{stock_usage:?}"
    );
    assert!(pass_usage.live_delta > (4 * MIB) as isize, "{pass_usage:?}");
    assert!(held_usage.live_delta < 64 * 1024, "{held_usage:?}");
    drop((stock, pass, held));
}

/// Polls `body` to its end on this thread (the test bodies are always
/// ready): the bytes it forwarded, or its error.
fn drain_now<B: Body<Data = Bytes> + Unpin>(mut body: B) -> Result<usize, B::Error> {
    let waker = futures_util::task::noop_waker();
    let mut cx = Context::from_waker(&waker);
    let mut forwarded = 0;
    loop {
        match Pin::new(&mut body).poll_frame(&mut cx) {
            Poll::Ready(Some(Ok(frame))) => {
                forwarded += frame.into_data().map_or(0, |data| data.len());
            }
            Poll::Ready(Some(Err(error))) => return Err(error),
            Poll::Ready(None) => return Ok(forwarded),
            Poll::Pending => unreachable!("test bodies are always ready"),
        }
    }
}

/// A compressed message over the limit once decompressed is refused like a
/// plain one, and checking it takes a scratch buffer and the decompressor's
/// state, never the decompressed message (tonic alone would fill a buffer up
/// to the limit before refusing it).
#[test]
fn compressed_messages_are_held_to_the_limit_with_bounded_memory() {
    use grpc_stream_codec::{Compression, CompressionEncoding};

    let plain = vec![0u8; 16 * MIB];
    for encoding in [
        CompressionEncoding::Gzip,
        CompressionEncoding::Deflate,
        CompressionEncoding::Zstd,
    ] {
        let mut compressed = Vec::new();
        Compression::new(encoding)
            .compress(&mut &plain[..], &mut compressed)
            .unwrap();
        let wire = envelope(1, &compressed);
        let chunks: Vec<Vec<u8>> = wire.chunks(16 * 1024).map(<[u8]>::to_vec).collect();
        for mode in MODES {
            let body = GuardedBody::with_encoding(
                Frames::data(chunks.clone()),
                GuardConfig::default().with_mode(mode),
                Some(encoding),
            );
            let (outcome, usage) = measure(|| drain_now(body));
            let what = format!("{encoding} {mode:?}");
            let error = outcome.expect_err(&what);
            let status = error
                .downcast_ref::<tonic::Status>()
                .unwrap_or_else(|| panic!("{what}: {error}"));
            assert_eq!(status.code(), tonic::Code::ResourceExhausted, "{what}");
            assert!(
                status.message().ends_with("exceeds limit 4194304"),
                "{what}: {status:?}"
            );
            eprintln!(
                "{what}: 16 MiB in {} B compressed, refused; peak {} B",
                compressed.len(),
                usage.peak
            );
            // zstd allocates its state and window with C's malloc, which
            // this counter does not see; zlib-rs allocates through Rust's.
            if encoding == CompressionEncoding::Zstd {
                continue;
            }
            // The assembling mode holds the compressed envelope itself.
            let held = if mode == GuardMode::Assembling {
                wire.len()
            } else {
                0
            };
            // The inflate state with its 32 KiB window, and the 8 KiB scratch.
            let state = 64 * 1024;
            assert!(usage.peak < (held + state) as isize, "{what}: {usage:?}");
        }
    }
}
