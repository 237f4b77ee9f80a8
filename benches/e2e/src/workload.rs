//! The client side: the workloads every arm is driven with.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use prost::bytes::Bytes;
use tonic::transport::{Channel, Endpoint};

use crate::Settings;
use crate::arms::Arm;
use crate::measure::{CpuWindow, process_rss_bytes};
use crate::server::Server;

use crate::proto;
use crate::proto::EchoRequest;
use crate::proto::echo_client::EchoClient;

/// Messages per server-streaming call and their payload size: the workload
/// of the published volo-grpc batching measurement.
const STREAM_MESSAGES: u32 = 16;
const STREAM_MESSAGE_SIZE: u32 = 256;
pub const CONNECTIONS: usize = 4;
const CLIENT_STREAM_MESSAGES: usize = 10;
const CLIENT_STREAM_MESSAGE_SIZE: usize = 64;
const MEMORY_MESSAGE_SIZE: usize = 1024 * 1024;
const MEMORY_CONNECTIONS: usize = 16;

/// One measured window of one workload.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sample {
    /// Completed streams per second (server-streaming), or µs per stream
    /// (client-streaming).
    pub rate: f64,
    /// Server CPU time per stream, in µs.
    pub server_cpu_us: f64,
    /// Server CPU-seconds per second over the window.
    pub server_share: f64,
    /// Client (this process) CPU-seconds per second over the window.
    pub client_share: f64,
}

/// Memory held by a server with many idle streams.
#[derive(Clone, Copy, Debug, Default)]
pub struct Memory {
    /// Resident set growth over the idle server, in bytes.
    pub rss_growth: u64,
    /// Live heap growth, when the server reports it.
    pub live_growth: Option<u64>,
}

/// Everything measured for one arm.
#[derive(Clone, Debug)]
pub struct ArmResults {
    /// The arm.
    pub arm: Arm,
    /// Per concurrency level, one sample per round.
    pub streaming: Vec<(usize, Vec<Sample>)>,
    /// Client-streaming samples, one per round.
    pub client_streaming: Vec<Sample>,
    /// The memory arm.
    pub memory: Option<Memory>,
}

/// Runs every arm for every round, alternating the order of arms.
pub async fn run_all(settings: &Settings) -> Vec<ArmResults> {
    let mut results: Vec<ArmResults> = settings
        .arms
        .iter()
        .map(|&arm| ArmResults {
            arm,
            streaming: settings
                .concurrency
                .iter()
                .map(|&level| (level, Vec::new()))
                .collect(),
            client_streaming: Vec::new(),
            memory: None,
        })
        .collect();
    for round in 0..settings.rounds {
        let mut order: Vec<usize> = (0..results.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for index in order {
            let arm = results[index].arm;
            eprintln!("round {}/{}: {}", round + 1, settings.rounds, arm.label());
            let server = Server::start(arm);
            let channels = connect(&server.addr, CONNECTIONS).await;
            for (level, samples) in &mut results[index].streaming {
                samples.push(server_streaming(&server, &channels, *level, settings).await);
            }
            let sample = client_streaming(&server, &channels[0], settings).await;
            results[index].client_streaming.push(sample);
        }
    }
    for result in &mut results {
        if settings.memory_streams > 0 {
            eprintln!("memory: {}", result.arm.label());
            result.memory = Some(idle_streams_memory(result.arm, settings.memory_streams).await);
        }
    }
    results
}

pub async fn connect(addr: &str, count: usize) -> Vec<Channel> {
    let mut channels = Vec::with_capacity(count);
    for _ in 0..count {
        // One `Endpoint::connect` is one HTTP/2 connection.
        let channel = Endpoint::from_shared(format!("http://{addr}"))
            .expect("valid address")
            .connect()
            .await
            .expect("connect to the server");
        channels.push(channel);
    }
    channels
}

/// `level` server-streaming calls in flight, each receiving 16 ready 256 B
/// messages; counts completed calls over the window.
pub async fn server_streaming(
    server: &Server,
    channels: &[Channel],
    level: usize,
    settings: &Settings,
) -> Sample {
    let completed = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut workers = Vec::with_capacity(level);
    for worker in 0..level {
        let mut client = EchoClient::new(channels[worker % channels.len()].clone());
        let completed = completed.clone();
        let stop = stop.clone();
        workers.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let request = EchoRequest {
                    payload: Bytes::new(),
                    response_count: STREAM_MESSAGES,
                    response_size: STREAM_MESSAGE_SIZE,
                };
                let mut stream = match client.server_stream(request).await {
                    Ok(response) => response.into_inner(),
                    Err(status) => panic!("server_stream failed: {status}"),
                };
                let mut received = 0;
                while let Some(message) = stream.message().await.expect("stream message") {
                    assert_eq!(message.payload.len(), STREAM_MESSAGE_SIZE as usize);
                    received += 1;
                }
                assert_eq!(received, STREAM_MESSAGES);
                completed.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    tokio::time::sleep(settings.warmup).await;
    let (streams_before, window) = (
        completed.load(Ordering::Relaxed),
        CpuWindow::start(server.pid()),
    );
    tokio::time::sleep(settings.window).await;
    let (streams_after, cpu) = (completed.load(Ordering::Relaxed), window.finish());
    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        worker.await.expect("worker task");
    }
    let streams = (streams_after - streams_before).max(1) as f64;
    Sample {
        rate: streams / cpu.seconds,
        server_cpu_us: cpu.server_us / streams,
        server_share: cpu.server_share,
        client_share: cpu.client_share,
    }
}

/// One client-streaming call at a time, 10 small messages each; reports µs
/// per call.
pub async fn client_streaming(server: &Server, channel: &Channel, settings: &Settings) -> Sample {
    let mut client = EchoClient::new(channel.clone());
    let payload = Bytes::from(vec![7u8; CLIENT_STREAM_MESSAGE_SIZE]);
    let one_call = |client: &mut EchoClient<Channel>| {
        let requests: Vec<EchoRequest> = (0..CLIENT_STREAM_MESSAGES)
            .map(|_| EchoRequest {
                payload: payload.clone(),
                ..Default::default()
            })
            .collect();
        let mut client = client.clone();
        async move {
            let reply = client
                .client_stream(tokio_stream::iter(requests))
                .await
                .expect("client_stream")
                .into_inner();
            assert_eq!(reply.count as usize, CLIENT_STREAM_MESSAGES);
        }
    };
    let warmup_end = Instant::now() + settings.warmup;
    while Instant::now() < warmup_end {
        one_call(&mut client).await;
    }
    let window = CpuWindow::start(server.pid());
    let started = Instant::now();
    let mut calls = 0u64;
    while started.elapsed() < settings.window {
        one_call(&mut client).await;
        calls += 1;
    }
    let cpu = window.finish();
    let calls = calls.max(1) as f64;
    Sample {
        rate: cpu.seconds * 1e6 / calls,
        server_cpu_us: cpu.server_us / calls,
        server_share: cpu.server_share,
        client_share: cpu.client_share,
    }
}

/// Opens `streams` bidi calls that each send one 1 MiB message, wait for its
/// echo and then sit idle; reports how much memory the server holds for them.
async fn idle_streams_memory(arm: Arm, streams: usize) -> Memory {
    let mut server = Server::start(arm);
    let channels = connect(&server.addr, MEMORY_CONNECTIONS).await;
    // Settle the server's allocator with one round trip before the baseline.
    open_idle_streams(&channels, 1).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let rss_before = process_rss_bytes(server.pid());
    let live_before = server.live_bytes();
    let held = open_idle_streams(&channels, streams).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_after = process_rss_bytes(server.pid());
    let live_after = server.live_bytes();
    drop(held);
    Memory {
        rss_growth: rss_after.saturating_sub(rss_before),
        live_growth: live_before
            .zip(live_after)
            .map(|(before, after)| after.saturating_sub(before)),
    }
}

/// Keeps a bidi call open: its request sender and response stream.
type IdleStream = (
    tokio::sync::mpsc::Sender<EchoRequest>,
    tonic::Streaming<proto::EchoResponse>,
);

async fn open_idle_streams(channels: &[Channel], count: usize) -> Vec<IdleStream> {
    let payload = Bytes::from(vec![42u8; MEMORY_MESSAGE_SIZE]);
    let mut held = Vec::with_capacity(count);
    // In batches, so the client does not buffer gigabytes at once.
    for batch_start in (0..count).step_by(100) {
        let batch_end = (batch_start + 100).min(count);
        let mut opening = Vec::new();
        for index in batch_start..batch_end {
            let mut client = EchoClient::new(channels[index % channels.len()].clone());
            let payload = payload.clone();
            opening.push(tokio::spawn(async move {
                let (sender, receiver) = tokio::sync::mpsc::channel(1);
                sender
                    .send(EchoRequest {
                        payload,
                        ..Default::default()
                    })
                    .await
                    .expect("queue the request");
                let mut responses = client
                    .bidi(tokio_stream::wrappers::ReceiverStream::new(receiver))
                    .await
                    .expect("bidi")
                    .into_inner();
                let echo = responses.message().await.expect("echo").expect("one reply");
                assert_eq!(echo.payload.len(), MEMORY_MESSAGE_SIZE);
                (sender, responses)
            }));
        }
        for task in opening {
            held.push(task.await.expect("open stream"));
        }
    }
    held
}
