//! `tonic-echo-load-client --addr http://127.0.0.1:PORT --stack stock|full
//! --rpc server|unary|client [--size N] [--count N] [--compression none|gzip|zstd]
//! [--streams N] [--connections N]`
//!
//! The end-to-end bench's client arm (`e2e-bench --sections clients`): runs
//! `--streams` closed-loop callers over `--connections` channels until
//! standard input closes, and answers each `count` line on standard input
//! with `messages M calls C errors E`, the totals so far, so the bench can
//! read the client's CPU time per message over a window of its choice. It
//! prints `ready` once every channel is connected.
//!
//! - `server`: ServerStream asking for `--count` responses of `--size` bytes;
//!   every response counts.
//! - `unary`: Unary with an empty payload and `response_size` `--size` (the
//!   bench's bare server answers with that many bytes); the response counts.
//! - `client`: ClientStream of `--count` requests of `--size` bytes; every
//!   request counts.
//!
//! Each response's length and `seq` are checked, the same light check for
//! every stack. `--stack full` is grpc-stream-codec's full framing client,
//! `stock` tonic's.

use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use tokio_stream::StreamExt;
use tonic::transport::Endpoint;
use tonic_echo::adapter::EchoRequest;
use tonic_echo::{ClientStack, EchoClient, parse_compression};

const USAGE: &str = "usage: tonic-echo-load-client --addr http://127.0.0.1:PORT --stack stock|full \
--rpc server|unary|client [--size N] [--count N] [--compression none|gzip|zstd] [--streams N] [--connections N]";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Rpc {
    Server,
    Unary,
    Client,
}

#[derive(Default)]
struct Totals {
    messages: AtomicU64,
    calls: AtomicU64,
    errors: AtomicU64,
}

fn usage(message: &str) -> ExitCode {
    eprintln!("{message}\n{USAGE}");
    ExitCode::from(2)
}

#[tokio::main]
async fn main() -> ExitCode {
    let mut addr = None;
    let mut stack = None;
    let mut rpc = None;
    let (mut size, mut count) = (256usize, 16u32);
    let mut compression = None;
    let (mut streams, mut connections) = (16usize, 4usize);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let Some(value) = args.next() else {
            return usage(&format!("{arg} needs a value"));
        };
        match arg.as_str() {
            "--addr" => addr = Some(value),
            "--stack" => {
                stack = match value.as_str() {
                    "stock" => Some(ClientStack::Stock),
                    "full" => Some(ClientStack::Full),
                    "codec" => Some(ClientStack::Codec),
                    _ => return usage("--stack is stock, full or codec"),
                }
            }
            "--rpc" => {
                rpc = match value.as_str() {
                    "server" => Some(Rpc::Server),
                    "unary" => Some(Rpc::Unary),
                    "client" => Some(Rpc::Client),
                    _ => return usage("--rpc is server, unary or client"),
                }
            }
            "--size" => match value.parse() {
                Ok(n) => size = n,
                Err(_) => return usage("--size needs a number"),
            },
            "--count" => match value.parse() {
                Ok(n) => count = n,
                Err(_) => return usage("--count needs a number"),
            },
            "--compression" => match parse_compression(&value) {
                Some(encoding) => compression = encoding,
                None => return usage("--compression is none, gzip, deflate or zstd"),
            },
            "--streams" => match value.parse() {
                Ok(n) if n > 0 => streams = n,
                _ => return usage("--streams needs a positive number"),
            },
            "--connections" => match value.parse() {
                Ok(n) if n > 0 => connections = n,
                _ => return usage("--connections needs a positive number"),
            },
            _ => return usage(&format!("unknown flag {arg}")),
        }
    }
    let (Some(addr), Some(stack), Some(rpc)) = (addr, stack, rpc) else {
        return usage("--addr, --stack and --rpc are required");
    };
    let mut clients = Vec::with_capacity(connections);
    for _ in 0..connections {
        let channel = match Endpoint::from_shared(addr.clone()) {
            Ok(endpoint) => match endpoint.connect().await {
                Ok(channel) => channel,
                Err(err) => {
                    eprintln!("connect {addr}: {err}");
                    return ExitCode::FAILURE;
                }
            },
            Err(err) => return usage(&format!("--addr {addr}: {err}")),
        };
        clients.push(EchoClient::with_stack(channel, stack, compression));
    }
    let totals = Arc::new(Totals::default());
    let payload = Bytes::from(vec![7u8; size]);
    for worker in 0..streams {
        let mut client = clients[worker % connections].clone();
        let totals = totals.clone();
        let payload = payload.clone();
        tokio::spawn(async move {
            loop {
                match call(&mut client, rpc, size, count, &payload).await {
                    Ok(messages) => {
                        totals.messages.fetch_add(messages, Ordering::Relaxed);
                        totals.calls.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(err) => {
                        if totals.errors.fetch_add(1, Ordering::Relaxed) == 0 {
                            eprintln!("tonic-echo-load-client: {err}");
                        }
                        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    }
                }
            }
        });
    }
    println!("ready");
    let _ = std::io::stdout().flush();
    // Standard input is read on a blocking thread; its end ends the run.
    let reader = tokio::task::spawn_blocking(move || {
        let stdin = std::io::stdin();
        for line in stdin.lock().lines() {
            let Ok(line) = line else { break };
            if line.trim() == "count" {
                println!(
                    "messages {} calls {} errors {}",
                    totals.messages.load(Ordering::Relaxed),
                    totals.calls.load(Ordering::Relaxed),
                    totals.errors.load(Ordering::Relaxed)
                );
                let _ = std::io::stdout().flush();
            }
        }
    });
    let _ = reader.await;
    ExitCode::SUCCESS
}

/// One call; returns the messages it counts.
async fn call(
    client: &mut EchoClient,
    rpc: Rpc,
    size: usize,
    count: u32,
    payload: &Bytes,
) -> Result<u64, String> {
    match rpc {
        Rpc::Server => {
            let mut responses = client
                .server_stream(EchoRequest {
                    response_count: count,
                    response_size: size as u32,
                    ..Default::default()
                })
                .await
                .map_err(|status| status.to_string())?;
            let mut seq = 0u32;
            while let Some(response) = responses.next().await {
                let response = response.map_err(|status| status.to_string())?;
                if response.seq != seq || response.payload.len() != size {
                    return Err(format!("response {seq} differs"));
                }
                seq += 1;
            }
            if seq != count.max(1) {
                return Err(format!("{seq} responses, expected {}", count.max(1)));
            }
            Ok(u64::from(seq))
        }
        Rpc::Unary => {
            let response = client
                .unary(EchoRequest {
                    response_size: size as u32,
                    ..Default::default()
                })
                .await
                .map_err(|status| status.to_string())?;
            if response.payload.len() != size {
                return Err(format!(
                    "unary response of {} bytes",
                    response.payload.len()
                ));
            }
            Ok(1)
        }
        Rpc::Client => {
            let payload = payload.clone();
            let requests = tokio_stream::iter(0..count).map(move |_| EchoRequest {
                payload: payload.clone(),
                ..Default::default()
            });
            let reply = client
                .client_stream(requests)
                .await
                .map_err(|status| status.to_string())?;
            if reply.count != count {
                return Err(format!("count {} != {count}", reply.count));
            }
            Ok(u64::from(count))
        }
    }
}
