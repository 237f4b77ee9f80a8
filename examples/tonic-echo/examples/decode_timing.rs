//! Decode timing through tonic's `Streaming`, one decoder per arm:
//!
//! - `stock`: `tonic_prost::ProstCodec` (fields slice tonic's buffer);
//! - `borrowed`: decode from a borrowed view of tonic's buffer (each `bytes`
//!   field gets an exact allocation);
//! - `slab/exact`: copy the message into this crate's receive policy
//!   (`decode::MessageBuffers`: 8 KiB slab up to 4 KiB, exact allocation
//!   above), then decode zero-copy from that copy;
//! - `ProstDecoder (split)`: the shipped decoder, slab/exact up to 4 KiB and
//!   borrowed above.
//!
//! Run with `cargo run --release -p tonic-echo --example decode_timing`.
//! Prints ns per message and MB/s (best of 5 runs) for each message shape.

use std::convert::Infallible;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use grpc_stream_codec::decode::MessageBuffers;
use http_body::Frame;
use http_body_util::StreamBody;
use prost::Message;
use tokio_stream::StreamExt;
use tonic::Status;
use tonic::codec::{Codec, DecodeBuf, Decoder, Streaming};

/// A message with `fields` bytes fields.
#[derive(Clone, PartialEq, Message)]
struct Shape {
    #[prost(bytes = "bytes", repeated, tag = "1")]
    fields: Vec<Bytes>,
    #[prost(uint64, tag = "2")]
    id: u64,
}

/// The borrowed way alone: decode from a view of tonic's buffer.
#[derive(Default)]
struct Borrowed;

impl Decoder for Borrowed {
    type Item = Shape;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Shape>, Status> {
        let len = src.remaining();
        // `DecodeBuf` over tonic's `BytesMut` is contiguous.
        let decoded = Shape::decode(src.chunk());
        src.advance(len);
        decoded
            .map(Some)
            .map_err(|e| Status::internal(e.to_string()))
    }
}

/// The copy way alone: the message goes into this crate's slab/exact policy
/// (`MessageBuffers`), then decodes zero-copy from that `Bytes`.
#[derive(Default)]
struct Copied {
    buffers: MessageBuffers,
}

impl Decoder for Copied {
    type Item = Shape;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Shape>, Status> {
        let len = src.remaining();
        let copy = self.buffers.copy_message(src, len);
        Shape::decode(copy)
            .map(Some)
            .map_err(|e| Status::internal(e.to_string()))
    }
}

fn frames(shape: &Shape, count: usize) -> Vec<Bytes> {
    let mut wire = Vec::with_capacity(count * (shape.encoded_len() + 5));
    for _ in 0..count {
        wire.push(0);
        wire.extend_from_slice(&(shape.encoded_len() as u32).to_be_bytes());
        shape.encode(&mut wire).unwrap();
    }
    let wire = Bytes::from(wire);
    (0..wire.len())
        .step_by(16 * 1024)
        .map(|at| wire.slice(at..(at + 16 * 1024).min(wire.len())))
        .collect()
}

fn run<D>(
    rt: &tokio::runtime::Runtime,
    make: impl Fn() -> D,
    frames: &[Bytes],
    count: usize,
) -> Duration
where
    D: Decoder<Item = Shape, Error = Status> + Send + 'static,
{
    (0..5)
        .map(|_| {
            let frames = frames.to_vec();
            let decoder = make();
            let start = Instant::now();
            let decoded = rt.block_on(async move {
                let body = StreamBody::new(tokio_stream::iter(
                    frames
                        .into_iter()
                        .map(|f| Ok::<_, Infallible>(Frame::data(f))),
                ));
                let mut stream = Streaming::new_request(decoder, body, None, Some(usize::MAX));
                let mut n = 0;
                while let Some(message) = stream.next().await {
                    std::hint::black_box(message.unwrap());
                    n += 1;
                }
                n
            });
            assert_eq!(decoded, count);
            start.elapsed()
        })
        .min()
        .unwrap()
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let shapes: &[(&str, usize, usize)] = &[
        ("1 field", 64, 1),
        ("1 field", 1024, 1),
        ("1 field", 4096, 1),
        ("1 field", 60_000, 1),
        ("1 field", 65_536, 1),
        ("1 field", 70_000, 1),
        ("1 field", 1 << 20, 1),
        ("8 fields", 16, 8),
        ("64 fields", 16, 64),
        ("64 fields", 1024, 64),
    ];
    println!(
        "{:<10} {:>8} {:>7} | {:>22} | {:>22} | {:>22} | {:>22}",
        "shape", "field B", "msg B", "stock", "borrowed", "slab/exact", "ProstDecoder (split)"
    );
    for &(name, field, fields) in shapes {
        let shape = Shape {
            fields: (0..fields)
                .map(|i| Bytes::from(vec![i as u8; field]))
                .collect(),
            id: 7,
        };
        let len = shape.encoded_len();
        let count = (64 << 20) / (len + 5).max(1);
        let count = count.clamp(64, 200_000);
        let frames = frames(&shape, count);
        let stock = run(
            &rt,
            || tonic_prost::ProstCodec::<Shape, Shape>::default().decoder(),
            &frames,
            count,
        );
        let borrowed = run(&rt, || Borrowed, &frames, count);
        let slab = run(&rt, Copied::default, &frames, count);
        let shipped = run(
            &rt,
            grpc_stream_codec::tonic::ProstDecoder::<Shape>::default,
            &frames,
            count,
        );
        let cell = |d: Duration| {
            let ns = d.as_nanos() as f64 / count as f64;
            let mbs = (len * count) as f64 / d.as_secs_f64() / 1e6;
            format!("{ns:>9.0} ns {mbs:>7.0} MB/s")
        };
        println!(
            "{name:<10} {field:>8} {len:>7} | {} | {} | {} | {}",
            cell(stock),
            cell(borrowed),
            cell(slab),
            cell(shipped)
        );
    }
}
