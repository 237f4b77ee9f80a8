//! `volo-encode-heap [--arm batched|unbatched|stock] [--size N] [--count N]
//! [--streams N] [--total N] [--window BYTES]`
//!
//! A focused harness for the response encoders of volo-echo-server's
//! ServerStream, without the network: `--streams` streams of `--count`
//! responses of `--size` bytes (the server's own `server_stream_payload`,
//! allocated as the source is polled) are encoded side by side, polled
//! round-robin as hyper polls the bodies of a connection, and their frames
//! go through a FIFO "transport" that holds `--window` bytes before it
//! drops the oldest, as the socket and h2's queues do. It runs on a thread
//! of its own (a non-main malloc arena, as a tokio worker's) and prints the
//! page faults (minflt) and CPU time per message, so the heap behaviour of
//! the arms can be compared deterministically; run it under
//! `valgrind --tool=callgrind` for instruction counts.
//!
//! - `batched`: grpc-stream-codec's volo adapter, 32 KiB threshold;
//! - `unbatched`: the same at threshold 0;
//! - `stock`: volo-grpc's own `codec::encode::encode`.

use std::collections::VecDeque;
use std::pin::Pin;
use std::process::ExitCode;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use futures::{Stream, StreamExt};
use grpc_stream_codec::encode::EncodeConfig;
use http_body::Frame;
use volo_echo::adapter::EchoResponse;

type Frames = Pin<Box<dyn Stream<Item = Result<Frame<Bytes>, volo_grpc::Status>> + Send>>;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Arm {
    Batched,
    Unbatched,
    Stock,
}

#[derive(Clone, Copy)]
struct Settings {
    arm: Arm,
    size: u32,
    count: u32,
    streams: usize,
    total: usize,
    window: usize,
}

fn stream(settings: Settings) -> Frames {
    let Settings { size, count, .. } = settings;
    let source = futures::stream::iter(0..count)
        .map(move |seq| EchoResponse {
            payload: volo_echo::server_stream_payload(seq, size),
            seq,
            ..Default::default()
        })
        .map(Ok::<_, volo_grpc::Status>);
    match settings.arm {
        Arm::Stock => volo_grpc::codec::encode::encode(source, None),
        Arm::Batched => grpc_stream_codec::codegen::volo::encode_with_config(
            source,
            EncodeConfig::new().with_batch_threshold(32 * 1024),
        ),
        Arm::Unbatched => grpc_stream_codec::codegen::volo::encode_with_config(
            source,
            EncodeConfig::new().with_batch_threshold(0),
        ),
    }
}

/// This process's minor page faults and CPU time (µs).
fn faults_and_cpu() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let field = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // minflt is field 10 of the line, utime/stime 14/15 (8, 12, 13 here);
    // clock ticks are 10 ms.
    (field(7), (field(11) + field(12)) * 10_000)
}

fn run(settings: Settings) -> (u64, u64, u64, u64) {
    let mut cx = Context::from_waker(Waker::noop());
    let mut active: Vec<Frames> = (0..settings.streams).map(|_| stream(settings)).collect();
    let mut started = settings.streams;
    let mut finished = 0usize;
    let mut transport: VecDeque<Bytes> = VecDeque::new();
    let mut queued = 0usize;
    let (mut frames, mut bytes) = (0u64, 0u64);
    let (faults_before, cpu_before) = faults_and_cpu();
    while finished < settings.total {
        for slot in active.iter_mut() {
            match slot.as_mut().poll_next(&mut cx) {
                Poll::Ready(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        frames += 1;
                        bytes += data.len() as u64;
                        queued += data.len();
                        transport.push_back(data);
                        while queued > settings.window {
                            let Some(sent) = transport.pop_front() else {
                                break;
                            };
                            queued -= sent.len();
                        }
                    }
                }
                Poll::Ready(Some(Err(status))) => panic!("encode failed: {status}"),
                Poll::Ready(None) => {
                    finished += 1;
                    started += 1;
                    *slot = stream(settings);
                }
                Poll::Pending => unreachable!("every source is ready"),
            }
        }
    }
    drop(transport);
    let (faults_after, cpu_after) = faults_and_cpu();
    let _ = started;
    (
        faults_after - faults_before,
        cpu_after - cpu_before,
        frames,
        bytes,
    )
}

fn main() -> ExitCode {
    let mut settings = Settings {
        arm: Arm::Batched,
        size: 64 * 1024,
        count: 16,
        streams: 16,
        total: 2000,
        window: 1 << 20,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next().unwrap_or_default();
        let number = || value.parse::<usize>().ok();
        match (arg.as_str(), number()) {
            ("--arm", _) => {
                settings.arm = match value.as_str() {
                    "batched" => Arm::Batched,
                    "unbatched" => Arm::Unbatched,
                    "stock" => Arm::Stock,
                    _ => {
                        eprintln!("--arm is batched, unbatched or stock");
                        return ExitCode::from(2);
                    }
                }
            }
            ("--size", Some(n)) => settings.size = n as u32,
            ("--count", Some(n)) => settings.count = n as u32,
            ("--streams", Some(n)) => settings.streams = n.max(1),
            ("--total", Some(n)) => settings.total = n,
            ("--window", Some(n)) => settings.window = n,
            _ => {
                eprintln!(
                    "usage: volo-encode-heap [--arm batched|unbatched|stock] [--size N] \
                     [--count N] [--streams N] [--total N] [--window BYTES]"
                );
                return ExitCode::from(2);
            }
        }
    }
    // A thread of its own: its allocations come from a non-main arena, as
    // a tokio worker's do.
    let (faults, cpu_us, frames, bytes) = std::thread::spawn(move || run(settings))
        .join()
        .expect("the run panicked");
    let messages = (settings.total as u64 * u64::from(settings.count.max(1))).max(1);
    println!(
        "messages {messages} faults {faults} faults/msg {:.2} cpu_us/msg {:.2} frames/msg {:.2} bytes {bytes}",
        faults as f64 / messages as f64,
        cpu_us as f64 / messages as f64,
        frames as f64 / messages as f64,
    );
    ExitCode::SUCCESS
}
