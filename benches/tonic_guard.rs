//! The tonic guard's decompressed-size check: what it adds to tonic's own
//! decoding of compressed messages, in the same run.
//!
//! Each arm runs tonic's `Streaming` decoder (which decompresses every
//! compressed message itself) over one body of gzip- or zstd-compressed
//! messages:
//!
//! - `tonic`: no guard;
//! - `guard_wire_only`: the pass-through guard checking wire lengths only,
//!   what it did before (`GuardedBody::new`, no encoding);
//! - `guard_checked`: the pass-through guard that also decompresses each
//!   message that could pass the limit, counting (`with_encoding`).
//!
//! `cargo bench --features tonic --bench tonic_guard`; a quick pass:
//! `... -- --warm-up-time 1 --measurement-time 2`.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures_util::StreamExt;
use grpc_stream_codec::tonic::guard::{GuardConfig, GuardedBody};
use grpc_stream_codec::{Compression, CompressionEncoding};
use http_body::{Body, Frame};
use tonic::codec::{DecodeBuf, Decoder, Streaming};

const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;
/// The usual HTTP/2 DATA frame size.
const H2_FRAME: usize = 16 * KIB;

/// Hands each message's bytes out, as a codec would before parsing.
struct RawDecoder;

impl Decoder for RawDecoder {
    type Item = usize;
    type Error = tonic::Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<usize>, tonic::Status> {
        let len = buf.remaining();
        buf.advance(len);
        Ok(Some(len))
    }
}

/// A body of prepared frames, always ready.
struct Frames(VecDeque<Bytes>);

impl Body for Frames {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, tonic::Status>>> {
        Poll::Ready(self.0.pop_front().map(|data| Ok(Frame::data(data))))
    }
}

/// Text-like bytes that compress about 4:1, not a run of zeros.
fn message(len: usize) -> Vec<u8> {
    let words = [
        &b"grpc "[..],
        b"stream ",
        b"codec ",
        b"tonic ",
        b"message ",
        b"limit ",
    ];
    let mut out = Vec::with_capacity(len + 16);
    let mut seed = 0x9E37_79B9u32;
    while out.len() < len {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        out.extend_from_slice(words[seed as usize % words.len()]);
        out.push(b'a' + (seed >> 8) as u8 % 26);
    }
    out.truncate(len);
    out
}

/// `count` compressed envelopes of `len`-byte messages, cut into H2-sized
/// frames.
fn body_frames(encoding: CompressionEncoding, len: usize, count: usize) -> (Vec<Bytes>, usize) {
    let mut compressed = Vec::new();
    Compression::new(encoding)
        .compress(&mut &message(len)[..], &mut compressed)
        .expect("compress");
    let mut wire = Vec::new();
    for _ in 0..count {
        wire.push(1);
        wire.extend_from_slice(&(compressed.len() as u32).to_be_bytes());
        wire.extend_from_slice(&compressed);
    }
    let wire = Bytes::from(wire);
    let frames = (0..wire.len())
        .step_by(H2_FRAME)
        .map(|at| wire.slice(at..(at + H2_FRAME).min(wire.len())))
        .collect();
    (frames, compressed.len())
}

/// Decodes every message of `body` with tonic; the decompressed bytes seen.
fn tonic_decodes<B>(encoding: CompressionEncoding, body: B) -> usize
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let encoding = match encoding {
        CompressionEncoding::Zstd => tonic::codec::CompressionEncoding::Zstd,
        _ => tonic::codec::CompressionEncoding::Gzip,
    };
    let mut stream = Streaming::new_request(RawDecoder, body, Some(encoding), None);
    let waker = futures_util::task::noop_waker();
    let mut cx = Context::from_waker(&waker);
    let mut total = 0;
    loop {
        match stream.poll_next_unpin(&mut cx) {
            Poll::Ready(Some(Ok(len))) => total += len,
            Poll::Ready(None) => return total,
            other => panic!("unexpected {other:?}"),
        }
    }
}

fn bench(c: &mut Criterion) {
    let cases = [CompressionEncoding::Gzip, CompressionEncoding::Zstd]
        .into_iter()
        .flat_map(|e| [(e, KIB, 256), (e, 64 * KIB, 16), (e, MIB, 2)]);
    for (encoding, len, count) in cases {
        let (frames, compressed) = body_frames(encoding, len, count);
        let name = format!("tonic_guard/{encoding} {} x {count}", size_name(len));
        println!("{name}: {compressed} B compressed per message");
        let mut group = c.benchmark_group(name);
        group.throughput(Throughput::Bytes((len * count) as u64));
        let frames = || Frames(frames.iter().cloned().collect());
        group.bench_function("tonic", |b| {
            b.iter(|| assert_eq!(tonic_decodes(encoding, frames()), len * count));
        });
        group.bench_function("guard_wire_only", |b| {
            b.iter(|| {
                let body = GuardedBody::new(frames(), GuardConfig::default());
                assert_eq!(tonic_decodes(encoding, body), len * count);
            });
        });
        group.bench_function("guard_checked", |b| {
            b.iter(|| {
                let body =
                    GuardedBody::with_encoding(frames(), GuardConfig::default(), Some(encoding));
                assert_eq!(tonic_decodes(encoding, body), len * count);
            });
        });
        group.finish();
    }
}

fn size_name(len: usize) -> String {
    if len >= MIB {
        format!("{} MiB", len / MIB)
    } else {
        format!("{} KiB", len / KIB)
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
