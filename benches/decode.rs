//! Decode: the `EnvelopeAssembler` against the single growing `BytesMut`
//! reader it replaces, on the same frames in the same run, plus a `memcpy`
//! floor for the 1 MiB row. `assembler_budget` is the assembler with a
//! receive budget (`grpc_stream_codec::budget`), for its cost.
//!
//! `cargo bench --bench decode`; a quick pass:
//! `cargo bench --bench decode -- --warm-up-time 1 --measurement-time 2`.
//! Every arm keeps one reader for the whole run, as a long-lived stream
//! does, so the timings and the printed `alloc/msg decode ...` lines are the
//! steady state.

mod support;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use grpc_stream_codec::budget::SharedBudget;
use grpc_stream_codec::compression::Compressor;
use grpc_stream_codec::decode::{Decoded, EnvelopeAssembler};
use grpc_stream_codec::envelope::{DEFAULT_MAX_RECEIVE_SIZE, EnvelopeHeader, HEADER_LEN};
use grpc_stream_codec::{
    compression::{Compression, CompressionEncoding},
    envelope::Limits,
    status::Status,
};
use std::hint::black_box;

const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;
/// The largest HTTP/2 DATA frame most peers send (the default max frame size).
const H2_FRAME: usize = 16 * KIB;

/// One unit of work: frames as the transport delivers them, and what the
/// consumer does with each message.
struct Workload {
    name: String,
    /// Frames that share one allocation made up front, so handing a frame
    /// to a reader costs a reference count, never an allocation.
    frames: Vec<Bytes>,
    messages: usize,
    /// The consumer still holds the previous message when the next frame
    /// arrives (otherwise it drops each message at once).
    hold_previous: bool,
    /// Payload bytes of the single message, for the `memcpy` floor.
    memcpy_floor: Option<usize>,
}

fn wire(sizes: impl IntoIterator<Item = usize>) -> Vec<u8> {
    let mut wire = Vec::new();
    for (index, len) in sizes.into_iter().enumerate() {
        wire.extend_from_slice(&EnvelopeHeader::message(false, len as u32).to_bytes());
        wire.resize(wire.len() + len, index as u8);
    }
    wire
}

/// Cuts `wire` into `size`-byte frames, or one frame per envelope with `None`.
fn cut(wire: Vec<u8>, size: usize) -> Vec<Bytes> {
    let whole = Bytes::from(wire);
    (0..whole.len())
        .step_by(size)
        .map(|start| whole.slice(start..whole.len().min(start + size)))
        .collect()
}

fn workloads() -> Vec<Workload> {
    let small = |name: &str, count: usize, frame: usize| Workload {
        name: name.to_string(),
        frames: cut(wire(vec![300; count]), frame),
        messages: count,
        hold_previous: false,
        memcpy_floor: None,
    };
    let one = |name: &str, len: usize| Workload {
        name: name.to_string(),
        frames: cut(wire([len]), H2_FRAME),
        messages: 1,
        hold_previous: false,
        memcpy_floor: None,
    };
    let per_frame = |hold_previous| Workload {
        name: format!(
            "300B_one_per_frame_{}",
            if hold_previous { "held" } else { "dropped" }
        ),
        // 64 frames of one envelope each: one message per DATA frame.
        frames: cut(wire(vec![300; 64]), HEADER_LEN + 300),
        messages: 64,
        hold_previous,
        memcpy_floor: None,
    };
    vec![
        per_frame(false),
        per_frame(true),
        one("64KiB_in_16KiB_frames", 64 * KIB),
        Workload {
            memcpy_floor: Some(MIB),
            ..one("1MiB_in_16KiB_frames", MIB)
        },
        // About 1 MiB of 300 B messages in four 256 KiB HTTP/1 chunks.
        small("300B_packed_in_256KiB_chunks", 3438, 256 * KIB),
        small("300B_straddling_1000B_chunks", 1000, 1000),
        small("300B_x100_in_one_frame", 100, usize::MAX),
        small("300B_x1000_in_one_frame", 1000, usize::MAX),
    ]
}

/// The reader being replaced, re-implemented from tonic 0.14's `Streaming`
/// (volo-grpc 0.12's decoder buffers the same way): every frame is appended
/// to one per-stream `BytesMut` (8 KiB to start); a complete header makes it
/// `reserve` the declared length; a complete message is cut off with
/// `split_to(len).freeze()`, which is what a `Bytes`-yielding decoder's
/// `copy_to_bytes` on tonic's `DecodeBuf` comes down to. Only the
/// uncompressed path, which is all these workloads use.
struct SlicingReader {
    buf: BytesMut,
    /// The length of the envelope whose header has been read.
    body: Option<usize>,
}

impl SlicingReader {
    fn new() -> Self {
        Self {
            buf: BytesMut::with_capacity(8 * KIB),
            body: None,
        }
    }

    fn push(&mut self, frame: Bytes) {
        self.buf.put(frame);
    }

    fn next(&mut self) -> Result<Option<Bytes>, Status> {
        let len = match self.body {
            Some(len) => len,
            None => {
                if self.buf.len() < HEADER_LEN {
                    return Ok(None);
                }
                if self.buf.get_u8() != 0 {
                    return Err(Status::internal("compressed messages are not benched"));
                }
                let len = self.buf.get_u32() as usize;
                if len > DEFAULT_MAX_RECEIVE_SIZE {
                    return Err(Status::internal("message too large"));
                }
                self.buf.reserve(len);
                self.body = Some(len);
                len
            }
        };
        if self.buf.len() < len {
            return Ok(None);
        }
        self.body = None;
        Ok(Some(self.buf.split_to(len).freeze()))
    }
}

/// What the consumer does with a message.
fn consume(message: Bytes, held: &mut Option<Bytes>, hold: bool) {
    black_box(&message);
    if hold {
        // The previous message is dropped only now, after the next one
        // was assembled.
        *held = Some(message);
    }
}

fn run_assembler(reader: &mut EnvelopeAssembler, w: &Workload, held: &mut Option<Bytes>) -> usize {
    let mut messages = 0;
    for frame in &w.frames {
        reader.push(frame.clone());
        while let Some(decoded) = reader.next().expect("bench frames are valid") {
            let Decoded::Message(message) = decoded else {
                panic!("no trailers in bench frames");
            };
            messages += 1;
            consume(message, held, w.hold_previous);
        }
    }
    messages
}

fn run_slicing(reader: &mut SlicingReader, w: &Workload, held: &mut Option<Bytes>) -> usize {
    let mut messages = 0;
    for frame in &w.frames {
        reader.push(frame.clone());
        while let Some(message) = reader.next().expect("bench frames are valid") {
            messages += 1;
            consume(message, held, w.hold_previous);
        }
    }
    messages
}

/// The floor: one copy of the payload, frame by frame, into a fresh `Vec`
/// of exactly its length. No parsing, no bookkeeping.
fn run_memcpy(w: &Workload, len: usize) -> usize {
    let mut message = Vec::with_capacity(len);
    let mut skip = HEADER_LEN;
    for frame in &w.frames {
        message.extend_from_slice(&frame[skip..]);
        skip = 0;
    }
    assert_eq!(message.len(), len);
    black_box(&message);
    1
}

fn decode(c: &mut Criterion) {
    for w in workloads() {
        let mut group = c.benchmark_group(format!("decode/{}", w.name));
        group.throughput(Throughput::Elements(w.messages as u64));
        let rounds = (4096 / w.messages).clamp(2, 256);

        let mut assembler = EnvelopeAssembler::new(Limits::default(), None);
        let mut held = None;
        assert_eq!(run_assembler(&mut assembler, &w, &mut held), w.messages);
        let mut reported = false;
        group.bench_function("assembler", |b| {
            if !reported {
                reported = true;
                support::print_allocs_per_message(
                    &format!("decode assembler {}", w.name),
                    rounds,
                    || run_assembler(&mut assembler, &w, &mut held),
                );
            }
            b.iter(|| run_assembler(&mut assembler, &w, &mut held));
        });

        // The same assembler with a receive budget (large enough never to
        // make it wait): what counting costs, against the row above.
        let budget = SharedBudget::new(1 << 30);
        let mut budgeted = EnvelopeAssembler::new(Limits::default(), None);
        budgeted.set_budget(budget.clone());
        let mut held = None;
        assert_eq!(run_assembler(&mut budgeted, &w, &mut held), w.messages);
        let mut reported = false;
        group.bench_function("assembler_budget", |b| {
            if !reported {
                reported = true;
                support::print_allocs_per_message(
                    &format!("decode assembler_budget {}", w.name),
                    rounds,
                    || run_assembler(&mut budgeted, &w, &mut held),
                );
            }
            b.iter(|| run_assembler(&mut budgeted, &w, &mut held));
        });
        drop(held);
        drop(budgeted);
        assert_eq!(budget.stats().in_use, 0, "the budget got back every byte");

        let mut slicing = SlicingReader::new();
        let mut held = None;
        assert_eq!(run_slicing(&mut slicing, &w, &mut held), w.messages);
        let mut reported = false;
        group.bench_function("slicing", |b| {
            if !reported {
                reported = true;
                support::print_allocs_per_message(
                    &format!("decode slicing {}", w.name),
                    rounds,
                    || run_slicing(&mut slicing, &w, &mut held),
                );
            }
            b.iter(|| run_slicing(&mut slicing, &w, &mut held));
        });

        if let Some(len) = w.memcpy_floor {
            let mut reported = false;
            group.bench_function("memcpy", |b| {
                if !reported {
                    reported = true;
                    support::print_allocs_per_message(
                        &format!("decode memcpy {}", w.name),
                        rounds,
                        || run_memcpy(&w, len),
                    );
                }
                b.iter(|| run_memcpy(&w, len));
            });
        }
        group.finish();
    }
}

/// Messages per iteration of the compressed rows.
const BURST: usize = 64;

/// A payload that compresses about 2:1, as in the encode bench.
fn compressible(size: usize) -> Vec<u8> {
    let mut state = 0x2545_f491_u32;
    (0..size)
        .map(|_| {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            b"abcdefghijklmnop"[(state >> 28) as usize]
        })
        .collect()
}

/// Per compressed message, on one long-lived reader per arm: the
/// `EnvelopeAssembler` (one decompression context per stream) against
/// tonic 0.14's path (a fresh read decoder per message). Each iteration
/// feeds `BURST` compressed messages in 16 KiB frames.
fn compressed(c: &mut Criterion) {
    for encoding in [CompressionEncoding::Gzip, CompressionEncoding::Zstd] {
        for (name, size) in [("256B", 256), ("4KiB", 4096)] {
            let plain = compressible(size);
            let mut wire = Vec::new();
            let mut compressor = Compressor::new(Compression::new(encoding));
            for _ in 0..BURST {
                let mut payload = BytesMut::new();
                compressor
                    .compress(&mut &plain[..], &mut payload)
                    .expect("compress");
                wire.extend_from_slice(
                    &EnvelopeHeader::message(true, payload.len() as u32).to_bytes(),
                );
                wire.extend_from_slice(&payload);
            }
            let frames = cut(wire, H2_FRAME);
            let mut group = c.benchmark_group(format!("decode_compressed/{encoding}/{name}"));
            group.throughput(Throughput::Elements(BURST as u64));
            group.sample_size(30);

            let mut assembler = EnvelopeAssembler::new(Limits::default(), Some(encoding));
            let mut run_crate = || {
                let mut messages = 0;
                for frame in &frames {
                    assembler.push(frame.clone());
                    while let Some(decoded) = assembler.next().expect("bench frames are valid") {
                        let Decoded::Message(message) = decoded else {
                            panic!("no trailers in bench frames");
                        };
                        debug_assert_eq!(message.len(), size);
                        black_box(message);
                        messages += 1;
                    }
                }
                messages
            };
            assert_eq!(run_crate(), BURST);
            support::print_allocs_per_message(
                &format!("decode_compressed crate {encoding} {name}"),
                64,
                &mut run_crate,
            );
            group.bench_function("crate", |b| b.iter(&mut run_crate));

            for &(arm, backend) in support::compression::tonic_arms(encoding) {
                let mut tonic = support::compression::TonicDecoder::new(encoding, backend);
                let mut run_tonic = || {
                    let mut messages = 0;
                    for frame in &frames {
                        tonic.push(frame);
                        while let Some(message) = tonic.next() {
                            assert_eq!(message.len(), size);
                            black_box(message);
                            messages += 1;
                        }
                    }
                    messages
                };
                assert_eq!(run_tonic(), BURST);
                support::print_allocs_per_message(
                    &format!("decode_compressed {arm} {encoding} {name}"),
                    64,
                    &mut run_tonic,
                );
                group.bench_function(arm, |b| b.iter(&mut run_tonic));
            }
            group.finish();
        }
    }
}

/// Raw inflate, one message per iteration: miniz_oxide (flate2's default
/// backend) against zlib-rs (this crate's), fresh per message or reset.
fn deflate_backend(c: &mut Criterion) {
    use support::compression::backend::{Deflater, Inflater};
    for (name, size) in [("256B", 256), ("4KiB", 4096)] {
        let plain = compressible(size);
        let mut compressed = Vec::new();
        Deflater::zlib_rs(false).compress(&plain, &mut compressed);
        let mut group = c.benchmark_group(format!("deflate_backend/decompress/{name}"));
        group.throughput(Throughput::Elements(1));
        group.sample_size(30);
        type Make = fn(bool) -> Inflater;
        let arms: [(&str, Make, bool); 5] = [
            ("miniz_oxide_fresh", Inflater::miniz, false),
            ("miniz_oxide_reused", Inflater::miniz, true),
            ("zlib_rs_fresh", Inflater::zlib_rs, false),
            ("zlib_rs_reused", Inflater::zlib_rs, true),
            ("libdeflate_reused", Inflater::libdeflate, true),
        ];
        for (arm, make, reused) in arms {
            let mut inflater = make(reused);
            let mut out = vec![0; size];
            assert_eq!(inflater.decompress(&compressed, &mut out), size);
            assert_eq!(out, plain);
            group.bench_function(arm, |b| {
                b.iter(|| inflater.decompress(black_box(&compressed), &mut out))
            });
        }
        group.finish();
    }
}

criterion_group!(benches, decode, compressed, deflate_backend);
criterion_main!(benches);
