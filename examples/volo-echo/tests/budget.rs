//! The receive budget end to end, against the volo adapter server over
//! loopback: many ClientStream calls that each send most of one large
//! message and stall are held by HTTP/2 flow control instead of filling the
//! server's memory; a small Unary from another client still succeeds; once
//! the rest is sent every call is answered OK with the right count and
//! bytes, and the budget (or the server's heap) is back to its baseline.
//! Compressed uploads whose handlers keep messages stay within the budget's
//! bound, and a budget layer around stock volo-grpc reports what it cannot
//! count.
//!
//! The small version that runs in CI is the behaviour suite's stall
//! (`examples/interop-tests/tests/behaviour.rs`, in-process server, figures
//! from the budget's stats, against tonic's full framing too).
//! `issue_13_figures` is the full run from the issue, on the
//! `volo-echo-server` binary with and without `--receive-budget`, reading the
//! server's RSS from `/proc`:
//!
//! ```text
//! cargo test -p volo-echo --release --test budget -- --ignored --nocapture
//! ```

#[path = "support/stall.rs"]
mod stall;
mod support;

use std::io::{BufRead, Write};
use std::net::{Ipv4Addr, SocketAddr};
use std::process::{ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};
use test_support::process::ListeningProcess;
use test_support::settle::settle;

use grpc_stream_codec::budget::SharedBudget;
use pilota::Bytes;
use stall::{finish_all, open_stalled, request_wire, small_unary};
use volo_echo::EchoService;

/// A `volo-echo-server` child process, answering `memory` on its stdin.
struct ServerProcess {
    process: ListeningProcess,
    stdin: ChildStdin,
    addr: SocketAddr,
}

impl ServerProcess {
    fn start(extra: &[&str]) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_volo-echo-server"));
        command
            .args(["--listen", "127.0.0.1:0", "--report-memory"])
            .args(extra)
            .stdin(Stdio::piped())
            .stderr(Stdio::null());
        let mut process = ListeningProcess::start(command);
        let stdin = process.child.stdin.take().expect("stdin");
        let addr = process.addr;
        ServerProcess {
            process,
            stdin,
            addr,
        }
    }

    /// (VmRSS, VmHWM) in bytes.
    fn rss(&self) -> (u64, u64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.process.child.id()))
            .expect("/proc/PID/status");
        let field = |name: &str| {
            status
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .and_then(|rest| {
                    rest.trim()
                        .trim_end_matches(" kB")
                        .trim()
                        .parse::<u64>()
                        .ok()
                })
                .map(|kib| kib * 1024)
                .expect("rss field")
        };
        (field("VmRSS:"), field("VmHWM:"))
    }

    fn ask(&mut self, what: &str) -> String {
        writeln!(self.stdin, "{what}").expect("ask");
        self.stdin.flush().expect("flush");
        let mut line = String::new();
        self.process.stdout.read_line(&mut line).expect("answer");
        line.trim().to_string()
    }

    fn live_bytes(&mut self) -> i64 {
        self.ask("memory")
            .strip_prefix("live_bytes ")
            .and_then(|n| n.parse().ok())
            .expect("live_bytes N")
    }
}

const MIB: f64 = 1024.0 * 1024.0;

/// One arm of the issue's run; prints its figures.
async fn issue_13_arm(name: &str, extra: &[&str]) -> u64 {
    const MESSAGE: usize = 4_000_000;
    const SENT: usize = 3_900_000;
    let mut server = ServerProcess::start(extra);
    let (wire, payload_len) = request_wire(MESSAGE);
    // Warm the server up (connections, first allocations) before the baseline.
    small_unary(server.addr).await;
    let (rss_before, _) = server.rss();
    let live_before = server.live_bytes();

    let stalled = open_stalled(server.addr, 10, 500, &wire, SENT).await;
    let (rss_stalled, _) = settle(Duration::from_secs(2), Duration::from_secs(120), || {
        server.rss()
    })
    .await;
    let budget_line = if extra.is_empty() {
        String::new()
    } else {
        server.ask("budget")
    };
    let latency = small_unary(server.addr).await;
    let (_, hwm_stalled) = server.rss();

    let finishing = Instant::now();
    finish_all(stalled, payload_len).await;
    let finished_in = finishing.elapsed();
    let live_after = settle(Duration::from_millis(500), Duration::from_secs(30), || {
        server.live_bytes()
    })
    .await;
    let (rss_after, hwm) = server.rss();
    println!(
        "issue13 {name}: rss growth stalled {:.1} MiB, peak growth {:.1} MiB (peak while stalled {:.1} MiB), \
         rss after {:.1} MiB; all 500 answered OK {:?} after the rest was sent; heap live growth after {} bytes; \
         small unary while stalled {:?}; {budget_line}",
        (rss_stalled as f64 - rss_before as f64) / MIB,
        (hwm as f64 - rss_before as f64) / MIB,
        (hwm_stalled as f64 - rss_before as f64) / MIB,
        (rss_after as f64 - rss_before as f64) / MIB,
        finished_in,
        live_after - live_before,
        latency,
    );
    assert!(
        (live_after - live_before).abs() < 4 << 20,
        "{name}: heap not back to baseline: {} bytes",
        live_after - live_before
    );
    hwm_stalled - rss_before
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the issue's full run: 500 streams, ~2 GB without the budget; see the file docs"]
async fn issue_13_figures() {
    let without = issue_13_arm("without budget", &[]).await;
    let budget = (256u64 << 20).to_string();
    let with = issue_13_arm(
        "budget 256 MiB",
        &["--receive-budget", &budget, "--budget-wait-ms", "1200000"],
    )
    .await;
    // 256 MiB + one message (the progress rule) + what HTTP/2 lets the
    // clients have in flight unread, min(connections x connection window,
    // streams x stream window), + one 16 KiB frame held by each waiting
    // stream. On top, up to 40 MiB for everything else 500 streams cost a
    // server (the run without a budget shows ~30 MiB above its 500 x 3.9 MB).
    let windows =
        SharedBudget::new(256 << 20).http2_windows(volo_echo::BUDGET_STREAMS_PER_CONNECTION);
    let windows = (10 * u64::from(windows.connection)).min(500 * u64::from(windows.stream));
    let allowed = (256u64 << 20) + 4_000_000 + windows + 500 * 16 * 1024;
    println!(
        "issue13 peak growth: without {:.1} MiB, with {:.1} MiB, allowed {:.1} MiB",
        without as f64 / MIB,
        with as f64 / MIB,
        allowed as f64 / MIB
    );
    assert!(
        with <= allowed + (40 << 20),
        "with the budget: {with} > {allowed} + per-stream overhead"
    );
    assert!(without > 2 * with, "the budget made no difference");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_counts_its_response_streams_against_its_layers_budget() {
    let server = support::start(support::Flavour::Adapter, EchoService::default()).await;
    let budget = SharedBudget::new(16 << 20);
    let client = volo_echo::adapter::EchoClientBuilder::new("echo")
        .address(server.addr)
        .layer_inner(grpc_stream_codec::budget::ReceiveBudgetLayer::new(
            budget.clone(),
        ))
        .build();
    let (received, status) = volo_echo::adapter::calls::server_stream(&client, 100_000, 20)
        .await
        .expect("server stream");
    assert_eq!((received, status.is_none()), (20, true));
    let stats = budget.stats();
    // Every 100 kB response was counted while it was held, and released.
    assert!(stats.peak >= 100_000, "{stats:?}");
    assert_eq!(stats.in_use, 0, "{stats:?}");

    // A client without the layer counts nothing against it, even after the
    // layered client's calls on the same runtime threads. Its responses are
    // each larger than everything the layered client ever held at once, so
    // any one of them counted would raise the peak.
    const LARGER: usize = 3_000_000;
    assert!(stats.peak < LARGER, "the control could not show: {stats:?}");
    let plain = volo_echo::adapter::client(server.addr, None);
    let (received, status) = volo_echo::adapter::calls::server_stream(&plain, LARGER, 3)
        .await
        .expect("server stream");
    assert_eq!((received, status.is_none()), (3, true));
    let after = budget.stats();
    assert_eq!(
        (after.peak, after.in_use, after.waits),
        (stats.peak, 0, stats.waits),
        "the plain client counted against the layer's budget: {after:?}"
    );
}

/// A budget layer around a server or client whose generated code the build
/// hook did not rewrite (stock volo-grpc) cannot count anything: it reports
/// the calls (a counter, and a warning logged once) instead of doing
/// nothing in silence. Around the adapter it counts and reports none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_layer_on_stock_volo_is_not_silent() {
    use grpc_stream_codec::budget::ReceiveBudgetLayer;

    for stock in [true, false] {
        let budget = SharedBudget::new(16 << 20);
        let layer = ReceiveBudgetLayer::new(budget.clone());
        let (listener, addr) = volo_echo::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
            .await
            .expect("bind");
        let incoming = volo::net::incoming::DefaultIncoming::from(listener);
        let server = volo_grpc::server::Server::new().layer_front(layer.clone());
        let server = if stock {
            let codec = volo_grpc::server::ServiceBuilder::new(volo_echo::stock::EchoServer::new(
                EchoService::default(),
            ))
            .build();
            tokio::spawn(server.add_service(codec).run(incoming))
        } else {
            let codec = volo_grpc::server::ServiceBuilder::new(
                volo_echo::adapter::EchoServer::new(EchoService::default()),
            )
            .build();
            tokio::spawn(server.add_service(codec).run(incoming))
        };
        for _ in 0..3 {
            if stock {
                let client = volo_echo::stock::client(addr, None);
                volo_echo::stock::calls::unary(&client, 100)
                    .await
                    .expect("unary");
                volo_echo::stock::calls::client_stream(&client, 1000, 3)
                    .await
                    .expect("client stream");
            } else {
                let client = volo_echo::adapter::client(addr, None);
                volo_echo::adapter::calls::unary(&client, 100)
                    .await
                    .expect("unary");
                volo_echo::adapter::calls::client_stream(&client, 1000, 3)
                    .await
                    .expect("client stream");
            }
        }
        let uncounted = settle(Duration::from_millis(200), Duration::from_secs(10), || {
            layer.uncounted_calls()
        })
        .await;
        if stock {
            assert_eq!(uncounted, 6, "every stock call is reported");
            assert_eq!(budget.stats().peak, 0, "stock volo-grpc counted nothing");
        } else {
            assert_eq!(uncounted, 0, "adapter calls are counted");
            assert!(budget.stats().peak > 0);
        }

        // The same on a client, the layer where the adapter needs it.
        let client_budget = SharedBudget::new(16 << 20);
        let client_layer = ReceiveBudgetLayer::new(client_budget.clone());
        if stock {
            let client = volo_echo::stock::EchoClientBuilder::new("echo")
                .address(addr)
                .layer_inner(client_layer.clone())
                .build();
            volo_echo::stock::calls::unary(&client, 100_000)
                .await
                .expect("unary");
        } else {
            let client = volo_echo::adapter::EchoClientBuilder::new("echo")
                .address(addr)
                .layer_inner(client_layer.clone())
                .build();
            volo_echo::adapter::calls::unary(&client, 100_000)
                .await
                .expect("unary");
        }
        assert_eq!(
            client_layer.uncounted_calls(),
            u64::from(stock),
            "stock client: {stock}"
        );
        assert_eq!(
            client_budget.stats().peak > 0,
            !stock,
            "stock client: {stock}"
        );
        server.abort();
    }
}

/// A volo adapter Echo service whose ClientStream handler keeps what it
/// receives: each payload (a share of its message's counted memory) goes
/// to a worker through a queue of 3, and the worker keeps it 100 ms, so a
/// stream can hold 5 messages at once. Only ClientStream is served.
struct Keeper;

const UPLOADS: usize = 24;
const UPLOAD_MESSAGES: usize = 6;
const UPLOAD_MESSAGE: usize = 256 * 1024;
const UPLOAD_LIMIT: usize = 320 * 1024;
const UPLOAD_BUDGET: usize = 4 << 20;

impl volo_echo::adapter::Echo for Keeper {
    async fn unary(
        &self,
        _: volo_grpc::Request<volo_echo::adapter::EchoRequest>,
    ) -> Result<volo_grpc::Response<volo_echo::adapter::EchoResponse>, volo_grpc::Status> {
        Err(volo_grpc::Status::unimplemented("ClientStream only"))
    }

    async fn server_stream(
        &self,
        _: volo_grpc::Request<volo_echo::adapter::EchoRequest>,
    ) -> Result<
        volo_grpc::Response<
            volo_grpc::BoxStream<
                'static,
                Result<volo_echo::adapter::EchoResponse, volo_grpc::Status>,
            >,
        >,
        volo_grpc::Status,
    > {
        Err(volo_grpc::Status::unimplemented("ClientStream only"))
    }

    async fn client_stream(
        &self,
        req: volo_grpc::Request<
            grpc_stream_codec::volo::RecvStream<volo_echo::adapter::EchoRequest>,
        >,
    ) -> Result<volo_grpc::Response<volo_echo::adapter::EchoResponse>, volo_grpc::Status> {
        let mut requests = req
            .into_inner()
            .with_limits(grpc_stream_codec::envelope::Limits::new().with_max_receive(UPLOAD_LIMIT));
        let (kept, mut worker_rx) = tokio::sync::mpsc::channel::<pilota::Bytes>(3);
        let worker = tokio::spawn(async move {
            let (mut count, mut total_bytes) = (0u32, 0u64);
            while let Some(payload) = worker_rx.recv().await {
                count += 1;
                total_bytes += payload.len() as u64;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            (count, total_bytes)
        });
        while let Some(request) = requests.message().await? {
            if kept.send(request.payload).await.is_err() {
                break;
            }
        }
        drop(kept);
        let (count, total_bytes) = worker
            .await
            .map_err(|error| volo_grpc::Status::internal(error.to_string()))?;
        Ok(volo_grpc::Response::new(volo_echo::adapter::EchoResponse {
            count,
            total_bytes,
            ..Default::default()
        }))
    }

    async fn bidi(
        &self,
        _: volo_grpc::Request<grpc_stream_codec::volo::RecvStream<volo_echo::adapter::EchoRequest>>,
    ) -> Result<
        volo_grpc::Response<
            volo_grpc::BoxStream<
                'static,
                Result<volo_echo::adapter::EchoResponse, volo_grpc::Status>,
            >,
        >,
        volo_grpc::Status,
    > {
        Err(volo_grpc::Status::unimplemented("ClientStream only"))
    }
}

/// `len` bytes that differ per `seed`: `random` pseudo-random bytes, then a
/// 1 KiB pseudo-random block repeated (compresses to about `random` bytes).
fn compressible(len: usize, random: usize, seed: u64) -> Bytes {
    let mut state = 0x2545_F491_4F6C_DD1D ^ seed.wrapping_mul(0x9E37_79B9);
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state as u8
    };
    let mut payload: Vec<u8> = (0..random.min(len)).map(|_| next()).collect();
    let block: Vec<u8> = (0..1024).map(|_| next()).collect();
    while payload.len() < len {
        let take = (len - payload.len()).min(block.len());
        payload.extend_from_slice(&block[..take]);
    }
    Bytes::from(payload)
}

/// 24 uploads of 6 compressed 256 KiB messages over loopback to a volo
/// adapter server whose handlers keep them (up to 30 MiB at once if nothing
/// held them back) against a 4 MiB budget, the server's windows from
/// `http2_windows`.
async fn keeping_uploads(name: &str) -> grpc_stream_codec::budget::BudgetStats {
    let encoding = volo_echo::compression_by_name(name).expect("a volo compression");
    let budget = SharedBudget::new(UPLOAD_BUDGET)
        .with_max_wait(Duration::from_secs(120))
        .with_overdraft_after(Duration::from_millis(5));
    let (listener, addr) = volo_echo::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .await
        .expect("bind");
    let windows = budget.http2_windows(UPLOADS as u32);
    let codec = volo_grpc::server::ServiceBuilder::new(volo_echo::adapter::EchoServer::new(Keeper))
        .accept_compressions(vec![encoding])
        .build();
    let server = tokio::spawn(
        volo_grpc::server::Server::new()
            .http2_init_stream_window_size(windows.stream)
            .http2_init_connection_window_size(windows.connection)
            .http2_max_concurrent_streams(windows.max_concurrent_streams)
            .layer_front(grpc_stream_codec::budget::ReceiveBudgetLayer::new(
                budget.clone(),
            ))
            .add_service(codec)
            .run(volo::net::incoming::DefaultIncoming::from(listener)),
    );
    let client = volo_echo::adapter::client(addr, Some(encoding));
    let mut calls = Vec::new();
    for upload in 0..UPLOADS {
        let random = if upload % 2 == 0 { 0 } else { 32 * 1024 };
        let requests: Vec<volo_echo::adapter::EchoRequest> = (0..UPLOAD_MESSAGES)
            .map(|message| volo_echo::adapter::EchoRequest {
                payload: compressible(
                    UPLOAD_MESSAGE,
                    random,
                    (upload * UPLOAD_MESSAGES + message) as u64,
                ),
                ..Default::default()
            })
            .collect();
        let client = client.clone();
        calls.push(tokio::spawn(async move {
            client
                .client_stream(futures::stream::iter(requests))
                .await
                .map(volo_grpc::Response::into_inner)
        }));
    }
    for call in calls {
        let response = call.await.expect("call task").expect("ClientStream");
        assert_eq!(
            (response.count, response.total_bytes),
            (
                UPLOAD_MESSAGES as u32,
                (UPLOAD_MESSAGES * UPLOAD_MESSAGE) as u64
            )
        );
    }
    server.abort();
    budget.stats()
}

/// The budget holds with compressed uploads that keep their messages on
/// volo too: peak from `BudgetStats` ≤ capacity + one message (compressed
/// bytes and output room, each at most the receive limit) + ungated slabs.
/// With the decompressed output charged but not gated (the grant in
/// `GatedDecompression::poll` skipped) the peaks are
/// 12.25 MiB (gzip) and 15.25 MiB (zstd) against this 5 MiB bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compressed_uploads_that_keep_messages_stay_within_the_bound() {
    use grpc_stream_codec::decode::SLAB_SIZE;
    let bound = UPLOAD_BUDGET + 2 * UPLOAD_LIMIT + UPLOADS * 2 * SLAB_SIZE;
    let mut runs = Vec::new();
    for name in ["gzip", "zstd"] {
        let stats = keeping_uploads(name).await;
        eprintln!("{name}: {stats:?}, bound {bound}");
        runs.push((name, stats));
    }
    for (name, stats) in runs {
        assert!(
            stats.peak <= bound,
            "{name}: peak {} over the bound {bound}: {stats:?}",
            stats.peak
        );
        assert!(stats.waits > 0, "{name}: nothing waited: {stats:?}");
        assert_eq!(
            (stats.waiting, stats.timed_out),
            (0, 0),
            "{name}: {stats:?}"
        );
    }
}
