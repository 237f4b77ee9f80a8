//! Encode: `EncodeStream` batched (default 32 KiB threshold) and unbatched
//! (threshold 0) against the per-message design it replaces, on the same
//! ready messages in the same run.
//!
//! `cargo bench --bench encode`; a quick pass:
//! `cargo bench --bench encode -- --warm-up-time 1 --measurement-time 2`.
//! Besides criterion's timings (ns per message, via element throughput) it
//! prints one `alloc/msg encode <arm> <size> x<count>` line per arm and row.

mod support;

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{BufMut, Bytes};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use futures_core::Stream;
use grpc_stream_codec::encode::{EncodeConfig, EncodeStream, MessageEncoder};
use grpc_stream_codec::envelope::{EnvelopeHeader, HEADER_LEN};
use grpc_stream_codec::{
    compression::{Compression, CompressionEncoding},
    status::Status,
};
use http_body::Frame;
use linkedbytes::{LinkedBytes, Node};
use std::cell::Cell;
use std::hint::black_box;
use std::rc::Rc;

/// The message shapes: payload size and whether the encoder copies the
/// payload in or links it as a node of its own (what pilota does with a
/// `Bytes` field of 4 KiB or more).
#[derive(Clone, Copy)]
struct Shape {
    name: &'static str,
    size: usize,
    zero_copy: bool,
}

const SHAPES: [Shape; 3] = [
    Shape {
        name: "256B",
        size: 256,
        zero_copy: false,
    },
    Shape {
        name: "8KiB",
        size: 8 * 1024,
        zero_copy: true,
    },
    Shape {
        name: "64KiB",
        size: 64 * 1024,
        zero_copy: false,
    },
];

const COUNTS: [usize; 3] = [16, 256, 1024];

/// Gzip rows: the whole matrix would take minutes per pass for the large
/// shapes, and per-message compression dominates there anyway.
fn gzip_rows(shape: Shape) -> &'static [usize] {
    match shape.size {
        256 => &[16, 256, 1024],
        8192 => &[16, 256],
        _ => &[16],
    }
}

/// A payload that compresses about 2:1, so gzip does real work.
fn payload(size: usize) -> Bytes {
    let mut state = 0x2545_f491_u32;
    (0..size)
        .map(|_| {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            b"abcdefghijklmnop"[(state >> 28) as usize]
        })
        .collect::<Vec<u8>>()
        .into()
}

/// Writes `item` as one length-delimited protobuf field (tag, varint
/// length, bytes), the way generated code writes a `bytes` field.
fn write_field(item: &Bytes, zero_copy: bool, dst: &mut LinkedBytes) {
    dst.put_u8(0x0a);
    let mut len = item.len() as u64;
    while len >= 0x80 {
        dst.put_u8(len as u8 | 0x80);
        len >>= 7;
    }
    dst.put_u8(len as u8);
    if zero_copy {
        dst.insert(item.clone());
    } else {
        dst.put_slice(item);
    }
}

/// [`write_field`] into any buffer, copying the bytes in.
fn write_field_to(item: &Bytes, dst: &mut impl BufMut) {
    dst.put_u8(0x0a);
    let mut len = item.len() as u64;
    while len >= 0x80 {
        dst.put_u8(len as u8 | 0x80);
        len >>= 7;
    }
    dst.put_u8(len as u8);
    dst.put_slice(item);
}

fn varint_len(len: usize) -> usize {
    (usize::BITS - (len | 1).leading_zeros()).div_ceil(7) as usize
}

/// The encoder the new arms use; `exact_len` is what a generated encoder's
/// `encoded_len` gives.
struct Field {
    zero_copy: bool,
}

impl MessageEncoder for Field {
    type Item = Bytes;

    fn encode(&mut self, item: Bytes, dst: &mut LinkedBytes) -> Result<(), Status> {
        write_field(&item, self.zero_copy, dst);
        Ok(())
    }

    fn exact_len(&self, item: &Bytes) -> Option<usize> {
        Some(1 + varint_len(item.len()) + item.len())
    }
}

/// `count` messages, all ready: the source never returns `Pending`.
struct Ready {
    payload: Bytes,
    left: usize,
}

impl Stream for Ready {
    type Item = Result<Bytes, Status>;

    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.left == 0 {
            return Poll::Ready(None);
        }
        self.left -= 1;
        Poll::Ready(Some(Ok(self.payload.clone())))
    }
}

/// volo-grpc 0.12's `codec::encode::encode`, re-implemented: per message a
/// fresh 8 KiB `LinkedBytes` (and a second one to encode into before
/// compressing, plus a contiguous copy of it for the compressor), a
/// placeholder prefix backfilled in node 0 or the tail, and one body frame
/// per non-empty node.
///
/// Two differences, both in its favour: it is a plain `poll_next` instead
/// of an `async_stream` generator, and it compresses with this crate's
/// compressor, as the other arms do, so only the framing differs.
struct PerMessage {
    source: Ready,
    zero_copy: bool,
    compression: Option<Compression>,
    /// The message being sent and the index of its next node.
    sending: Option<(LinkedBytes, usize)>,
}

const VOLO_BUFFER_SIZE: usize = 8 * 1024;

impl PerMessage {
    fn new(source: Ready, zero_copy: bool, compression: Option<Compression>) -> Self {
        Self {
            source,
            zero_copy,
            compression,
            sending: None,
        }
    }

    fn encode(&self, item: Bytes) -> Result<LinkedBytes, Status> {
        let mut buf = LinkedBytes::with_capacity(VOLO_BUFFER_SIZE);
        let mut compressed_buf = if self.compression.is_some() {
            LinkedBytes::with_capacity(VOLO_BUFFER_SIZE)
        } else {
            LinkedBytes::new()
        };
        buf.reserve(HEADER_LEN);
        buf.put_slice(&[0; HEADER_LEN]);
        // volo's `DefaultEncoder` reserves the bytes it will copy in.
        let copied = 1 + varint_len(item.len()) + if self.zero_copy { 0 } else { item.len() };
        if let Some(compression) = self.compression {
            compressed_buf.reserve(copied);
            write_field(&item, self.zero_copy, &mut compressed_buf);
            compression.compress(&mut compressed_buf.concat(), buf.bytes_mut())?;
        } else {
            buf.reserve(copied);
            write_field(&item, self.zero_copy, &mut buf);
        }
        let len = buf.len() - HEADER_LEN;
        let prefix = EnvelopeHeader::message(self.compression.is_some(), len as u32).to_bytes();
        match buf.get_list_mut(0) {
            Some(Node::BytesMut(first)) => first[..HEADER_LEN].copy_from_slice(&prefix),
            Some(_) => unreachable!("the prefix node is the first BytesMut"),
            None => buf.bytes_mut()[..HEADER_LEN].copy_from_slice(&prefix),
        }
        Ok(buf)
    }
}

impl Stream for PerMessage {
    type Item = Result<Frame<Bytes>, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            // `into_iter_list` order: the list's nodes, then the tail.
            if let Some((buf, next)) = &mut self.sending {
                let node = match buf.get_list_mut(*next) {
                    Some(slot) => std::mem::replace(slot, Node::Bytes(Bytes::new())),
                    None => {
                        let tail = std::mem::take(buf.bytes_mut());
                        self.sending = None;
                        Node::BytesMut(tail)
                    }
                };
                if let Some((_, next)) = &mut self.sending {
                    *next += 1;
                }
                let bytes = match node {
                    Node::Bytes(bytes) => bytes,
                    Node::BytesMut(bytes) => bytes.freeze(),
                    Node::FastStr(text) => text.into_bytes(),
                };
                if !bytes.is_empty() {
                    return Poll::Ready(Some(Ok(Frame::data(bytes))));
                }
                continue;
            }
            let item = match Pin::new(&mut self.source).poll_next(cx) {
                Poll::Ready(Some(Ok(item))) => item,
                Poll::Ready(Some(Err(status))) => return Poll::Ready(Some(Err(status))),
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            };
            match self.encode(item) {
                Ok(buf) => self.sending = Some((buf, 0)),
                Err(status) => return Poll::Ready(Some(Err(status))),
            }
        }
    }
}

#[derive(Clone, Copy)]
enum Arm {
    Batched,
    Unbatched,
    PerMessage,
}

impl Arm {
    const ALL: [Arm; 3] = [Arm::Batched, Arm::Unbatched, Arm::PerMessage];

    fn name(self) -> &'static str {
        match self {
            Arm::Batched => "batched",
            Arm::Unbatched => "unbatched",
            Arm::PerMessage => "per_message",
        }
    }

    /// Encodes `count` ready messages as one stream and drops every body
    /// frame as it comes, as a transport does once it has written it.
    /// Returns the messages encoded.
    fn run(self, payload: &Bytes, count: usize, shape: Shape, gzip: bool) -> usize {
        let source = Ready {
            payload: payload.clone(),
            left: count,
        };
        let compression = gzip.then(|| Compression::new(CompressionEncoding::Gzip));
        let mut messages = 0;
        match self {
            Arm::Batched | Arm::Unbatched => {
                let mut config = EncodeConfig::new().with_compression(compression);
                if matches!(self, Arm::Unbatched) {
                    config = config.with_batch_threshold(0);
                }
                let encoder = Field {
                    zero_copy: shape.zero_copy,
                };
                let mut stream = EncodeStream::new(source, encoder, config);
                support::drain_ready(&mut stream, |batch| {
                    let batch = batch.expect("bench messages encode");
                    messages += batch.message_count();
                    for frame in batch.into_frames() {
                        black_box(frame);
                    }
                });
            }
            Arm::PerMessage => {
                let mut stream = PerMessage::new(source, shape.zero_copy, compression);
                support::drain_ready(&mut stream, |frame| {
                    black_box(frame.expect("bench messages encode"));
                });
                messages = count;
            }
        }
        messages
    }
}

fn bench_shape(c: &mut Criterion, shape: Shape, gzip: bool) {
    let payload = payload(shape.size);
    let compression = if gzip { "gzip" } else { "plain" };
    let mut group = c.benchmark_group(format!("encode/{compression}/{}", shape.name));
    if gzip || shape.size > 8 * 1024 {
        group.sample_size(20);
    }
    let counts = if gzip { gzip_rows(shape) } else { &COUNTS };
    for &count in counts {
        group.throughput(Throughput::Elements(count as u64));
        for arm in Arm::ALL {
            assert_eq!(arm.run(&payload, count, shape, gzip), count);
            let gz = if gzip { " gzip" } else { "" };
            let label = format!("encode {} {}{gz} x{count}", arm.name(), shape.name);
            let rounds = (4096 / count).max(2);
            let mut reported = false;
            group.bench_function(BenchmarkId::new(arm.name(), count), |b| {
                // Counted once, where criterion runs this arm, never timed.
                if !reported {
                    reported = true;
                    support::print_allocs_per_message(&label, rounds, || {
                        arm.run(&payload, count, shape, gzip)
                    });
                }
                b.iter(|| arm.run(&payload, count, shape, gzip));
            });
        }
    }
    group.finish();
}

fn encode(c: &mut Criterion) {
    for gzip in [false, true] {
        for shape in SHAPES {
            bench_shape(c, shape, gzip);
        }
    }
}

/// Messages per iteration of the compressed rows.
const BURST: usize = 64;

/// Per compressed message, on one long-lived stream per arm: this crate's
/// `EncodeStream` (one compression context per stream) against tonic 0.14's
/// path (a fresh read encoder per message). Each iteration hands the stream
/// a burst of `BURST` ready messages and drains it.
fn compressed(c: &mut Criterion) {
    for encoding in [CompressionEncoding::Gzip, CompressionEncoding::Zstd] {
        for (name, size) in [("256B", 256), ("4KiB", 4096)] {
            let item = payload(size);
            let mut group = c.benchmark_group(format!("encode_compressed/{encoding}/{name}"));
            group.throughput(Throughput::Elements(BURST as u64));
            group.sample_size(30);

            let left = Rc::new(Cell::new(0));
            let source = support::Burst::new(item.clone(), left.clone());
            let config = EncodeConfig::new().with_compression(Some(Compression::new(encoding)));
            let mut stream = EncodeStream::new(source, Field { zero_copy: false }, config);
            let mut run_crate = || {
                left.set(BURST);
                let mut messages = 0;
                support::drain_burst(&mut stream, |batch| {
                    let batch = batch.expect("bench messages encode");
                    messages += batch.message_count();
                    for frame in batch.into_frames() {
                        black_box(frame);
                    }
                });
                messages
            };
            assert_eq!(run_crate(), BURST);
            support::print_allocs_per_message(
                &format!("encode_compressed crate {encoding} {name}"),
                64,
                &mut run_crate,
            );
            group.bench_function("crate", |b| b.iter(&mut run_crate));

            for &(arm, backend) in support::compression::tonic_arms(encoding) {
                let mut tonic = support::compression::TonicEncoder::new(encoding, backend);
                // The arm's output is a valid message, the field it was given.
                let _ = tonic.encode(|buf| write_field_to(&item, buf));
                let wire = tonic.flush().expect("one message");
                let mut field = Vec::new();
                grpc_stream_codec::compression::decompress(
                    encoding,
                    &mut &wire[5..],
                    &mut field,
                    usize::MAX,
                )
                .expect("the tonic arm's output decompresses");
                assert_eq!(&field[field.len() - size..], &item[..]);
                let mut run_tonic = || {
                    for _ in 0..BURST {
                        // prost writes the field straight into tonic's buffer.
                        let batch = tonic.encode(|buf| write_field_to(&item, buf));
                        black_box(batch);
                    }
                    black_box(tonic.flush());
                    BURST
                };
                support::print_allocs_per_message(
                    &format!("encode_compressed {arm} {encoding} {name}"),
                    64,
                    &mut run_tonic,
                );
                group.bench_function(arm, |b| b.iter(&mut run_tonic));
            }
            group.finish();
        }
    }
}

/// Raw deflate, level 6, one message per iteration: flate2's default
/// backend (miniz_oxide) against the zlib-rs backend this crate enables,
/// each with a fresh context per message and with one reset between
/// messages.
fn deflate_backend(c: &mut Criterion) {
    use support::compression::backend::Deflater;
    for (name, size) in [("256B", 256), ("4KiB", 4096)] {
        let input = payload(size);
        let mut group = c.benchmark_group(format!("deflate_backend/compress/{name}"));
        group.throughput(Throughput::Elements(1));
        group.sample_size(30);
        type Make = fn(bool) -> Deflater;
        let arms: [(&str, Make, bool); 8] = [
            ("miniz_oxide_fresh", Deflater::miniz, false),
            ("miniz_oxide_reused", Deflater::miniz, true),
            ("zlib_rs_fresh", Deflater::zlib_rs, false),
            ("zlib_rs_reused", Deflater::zlib_rs, true),
            ("libdeflate_fresh", |r| Deflater::libdeflate(r, 6), false),
            ("libdeflate_reused", |r| Deflater::libdeflate(r, 6), true),
            (
                "libdeflate_level1_reused",
                |r| Deflater::libdeflate(r, 1),
                true,
            ),
            (
                "libdeflate_level0_reused",
                |r| Deflater::libdeflate(r, 0),
                true,
            ),
        ];
        for (arm, make, reused) in arms {
            let mut deflater = make(reused);
            let mut out = Vec::new();
            group.bench_function(arm, |b| {
                b.iter(|| deflater.compress(black_box(&input), &mut out))
            });
        }
        group.finish();
    }
}

criterion_group!(benches, encode, compressed, deflate_backend);
criterion_main!(benches);
