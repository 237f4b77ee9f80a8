//! `volo-echo-load-client --addr 127.0.0.1:PORT --stack stock|adapter
//! --rpc server|unary|client [--size N] [--count N] [--compression none|gzip|zstd]
//! [--streams N] [--connections N]`
//!
//! The end-to-end bench's client arm (`e2e-bench --sections clients`): runs
//! `--streams` closed-loop callers over `--connections` clients until
//! standard input closes, and answers each `count` line on standard input
//! with `messages M calls C errors E`, the totals so far, so the bench can
//! read the client's CPU time per message over a window of its choice. It
//! prints `ready` once the callers are started.
//!
//! - `server`: ServerStream asking for `--count` responses of `--size` bytes;
//!   every response counts.
//! - `unary`: Unary with an empty payload and `response_size` `--size` (the
//!   bench's bare server answers with that many bytes); the response counts.
//! - `client`: ClientStream of `--count` requests of `--size` bytes; every
//!   request counts.
//!
//! Each response's length and `seq` are checked, the same light check for
//! every stack. `--stack adapter` is grpc-stream-codec's volo adapter client
//! (batching request encoder, `RecvStream`), `stock` volo-grpc as generated;
//! both configure compression the volo-grpc way (gzip and zstd have the same
//! names everywhere).

use std::io::{BufRead, Write};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use futures::StreamExt;
use volo_echo::compression_by_name;

const USAGE: &str = "usage: volo-echo-load-client --addr 127.0.0.1:PORT --stack stock|adapter \
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

/// The load loop and one call, for one generated flavour.
macro_rules! load {
    ($flavour:ident) => {
        mod $flavour {
            use super::*;
            use volo_echo::$flavour::{EchoClient, EchoRequest, client};

            pub fn start(
                addr: SocketAddr,
                compression: Option<volo_grpc::codec::compression::CompressionEncoding>,
                settings: Settings,
                totals: Arc<Totals>,
            ) {
                let clients: Vec<EchoClient> = (0..settings.connections)
                    .map(|_| client(addr, compression.clone()))
                    .collect();
                let payload = Bytes::from(vec![7u8; settings.size]);
                for worker in 0..settings.streams {
                    let client = clients[worker % clients.len()].clone();
                    let totals = totals.clone();
                    let payload = payload.clone();
                    tokio::spawn(async move {
                        loop {
                            match call(&client, settings, &payload).await {
                                Ok(messages) => {
                                    totals.messages.fetch_add(messages, Ordering::Relaxed);
                                    totals.calls.fetch_add(1, Ordering::Relaxed);
                                }
                                Err(err) => {
                                    if totals.errors.fetch_add(1, Ordering::Relaxed) == 0 {
                                        eprintln!("volo-echo-load-client: {err}");
                                    }
                                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                                }
                            }
                        }
                    });
                }
            }

            async fn call(
                client: &EchoClient,
                settings: Settings,
                payload: &Bytes,
            ) -> Result<u64, String> {
                let Settings { size, count, .. } = settings;
                match settings.rpc {
                    Rpc::Server => {
                        let mut responses = client
                            .server_stream(EchoRequest {
                                response_count: count,
                                response_size: size as u32,
                                ..Default::default()
                            })
                            .await
                            .map_err(|status| status.to_string())?
                            .into_inner();
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
                            .map_err(|status| status.to_string())?
                            .into_inner();
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
                        let requests = futures::stream::iter(0..count).map(move |_| EchoRequest {
                            payload: payload.clone(),
                            ..Default::default()
                        });
                        let reply = client
                            .client_stream(requests)
                            .await
                            .map_err(|status| status.to_string())?
                            .into_inner();
                        if reply.count != count {
                            return Err(format!("count {} != {count}", reply.count));
                        }
                        Ok(u64::from(count))
                    }
                }
            }
        }
    };
}

load!(adapter);
load!(stock);

#[derive(Clone, Copy)]
struct Settings {
    rpc: Rpc,
    size: usize,
    count: u32,
    streams: usize,
    connections: usize,
}

#[tokio::main]
async fn main() -> ExitCode {
    let mut addr: Option<SocketAddr> = None;
    let mut stock = None;
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
            "--addr" => match value.parse() {
                Ok(parsed) => addr = Some(parsed),
                Err(_) => return usage("--addr is HOST:PORT"),
            },
            "--stack" => {
                stock = match value.as_str() {
                    "stock" => Some(true),
                    "adapter" => Some(false),
                    _ => return usage("--stack is stock or adapter"),
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
            "--compression" => {
                compression = match value.as_str() {
                    "none" | "identity" => None,
                    name => match compression_by_name(name) {
                        Some(encoding) => Some(encoding),
                        None => return usage("--compression is none, gzip, deflate or zstd"),
                    },
                }
            }
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
    let (Some(addr), Some(stock), Some(rpc)) = (addr, stock, rpc) else {
        return usage("--addr, --stack and --rpc are required");
    };
    let settings = Settings {
        rpc,
        size,
        count,
        streams,
        connections,
    };
    let totals = Arc::new(Totals::default());
    if stock {
        stock::start(addr, compression, settings, totals.clone());
    } else {
        adapter::start(addr, compression, settings, totals.clone());
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
