//! Serves the Echo service on volo-grpc.
//!
//! ```text
//! volo-echo-server --listen 127.0.0.1:PORT [--stock] [--batch-threshold BYTES] [--report-memory]
//!                  [--receive-budget BYTES [--budget-wait-ms MS]] [--metrics-listen ADDR]
//! ```
//!
//! Without `--stock` the service runs through grpc-stream-codec's volo
//! adapter, behind its `BinaryMetadataLayer` (so gRPC's `deflate` works); with
//! it, exactly as volo-build generated it. Port 0 picks a free port; the
//! line `listening on ADDR` is printed once the socket is bound. With
//! `--report-memory`, each `memory` line on standard input is answered with
//! `live_bytes N` (heap bytes allocated since start-up, net of frees).
//! With `--receive-budget BYTES` (adapter only), every request stream counts
//! what it holds for received messages against one shared budget of that
//! many bytes: a stream that cannot get memory stops reading (HTTP/2 flow
//! control holds its client) and fails with `resource_exhausted` after
//! `--budget-wait-ms` (default 30000); the HTTP/2 windows and the streams
//! per connection are the budget's `http2_windows(64)`
//! (`volo_echo::BUDGET_STREAMS_PER_CONNECTION`). With `--report-memory` a `budget`
//! line on standard input is answered with
//! `budget_in_use N budget_waiting W budget_timed_out T budget_peak P budget_waits G`.
//! Stopped with SIGTERM, it prints `exit`, those budget figures (with a
//! budget) and `live_bytes N` (with `--report-memory`) as its last line.
//! `--batch-threshold BYTES` sets the adapter's soft batch threshold for
//! every response (default 32 KiB; 0 sends each message as its own batch).
//! `--connection-window BYTES` sets the HTTP/2 connection window without a
//! budget (default 16 MiB, sized so that a client may send a burst of small
//! frames before the server reads any: docs/connections.md; `1048576` is
//! volo-grpc's default).
//! `--metrics-listen ADDR` (feature `metrics-listen`, on by default) records
//! gRPC's A66 metrics (`grpc_stream_codec::observe::install`) and, with a
//! receive budget, the budget's gauges (`observe_budget`, named `server`),
//! through the OpenTelemetry SDK's Prometheus exporter, and serves them at
//! `GET http://ADDR/metrics`; the line `metrics on ADDR` follows
//! `listening on ADDR` (port 0 picks a free port).
//!
//! Request metadata `x-fail-after: K` makes ServerStream and Bidi fail with
//! `aborted` after K responses, and `x-pace-micros: G` paces ServerStream's
//! responses G µs apart (see `volo_echo::EchoService`).

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use volo_echo::EchoService;

use test_support::alloc as live_alloc;
use test_support::reports;

// `--metrics-listen`, the same on both example servers.
#[path = "../../../shared/serve_metrics.rs"]
mod serve_metrics;
use serve_metrics::serve_metrics;

#[global_allocator]
static ALLOC: live_alloc::CountingAlloc = live_alloc::CountingAlloc::SWITCHED;

const USAGE: &str = "usage: volo-echo-server --listen 127.0.0.1:PORT [--stock] \
[--batch-threshold BYTES] [--report-memory] [--receive-budget BYTES [--budget-wait-ms MS]] \
[--budget-windows BYTES] [--connection-window BYTES] [--metrics-listen ADDR]";

#[tokio::main]
async fn main() -> ExitCode {
    let mut listen: Option<SocketAddr> = None;
    let mut stock = false;
    let mut report_memory = false;
    let mut receive_budget: Option<usize> = None;
    let mut connection_window = volo_echo::SMALL_FRAMES_CONNECTION_WINDOW;
    let mut budget_wait = grpc_stream_codec::budget::DEFAULT_MAX_WAIT;
    let mut batch_threshold: Option<usize> = None;
    // The HTTP/2 windows a budget of this size gets, without the budget.
    let mut budget_windows: Option<usize> = None;
    let mut metrics_listen: Option<SocketAddr> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--listen" => match args.next().map(|value| value.parse()) {
                Some(Ok(addr)) => listen = Some(addr),
                _ => return usage("--listen needs an address such as 127.0.0.1:50051"),
            },
            "--stock" => stock = true,
            "--batch-threshold" => match args.next().map(|value| value.parse()) {
                Some(Ok(bytes)) => batch_threshold = Some(bytes),
                _ => return usage("--batch-threshold needs a number of bytes"),
            },
            "--report-memory" => report_memory = true,
            "--receive-budget" => match args.next().map(|value| value.parse()) {
                Some(Ok(bytes)) => receive_budget = Some(bytes),
                _ => return usage("--receive-budget needs a number of bytes"),
            },
            "--budget-windows" => match args.next().map(|value| value.parse()) {
                Some(Ok(bytes)) => budget_windows = Some(bytes),
                _ => return usage("--budget-windows needs a number of bytes"),
            },
            "--budget-wait-ms" => match args.next().map(|value| value.parse()) {
                Some(Ok(ms)) => budget_wait = std::time::Duration::from_millis(ms),
                _ => return usage("--budget-wait-ms needs a number of milliseconds"),
            },
            "--connection-window" => match args.next().map(|value| value.parse()) {
                Some(Ok(bytes)) => connection_window = bytes,
                _ => return usage("--connection-window needs a number of bytes"),
            },
            "--metrics-listen" => match args.next().map(|value| value.parse()) {
                Some(Ok(addr)) => metrics_listen = Some(addr),
                _ => return usage("--metrics-listen needs an address such as 127.0.0.1:9464"),
            },
            "--help" | "-h" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => return usage(&format!("unknown argument {other:?}")),
        }
    }
    let Some(listen) = listen else {
        return usage("--listen is required");
    };
    if stock && receive_budget.is_some() {
        return usage("--receive-budget needs the adapter (it cannot be used with --stock)");
    }
    if budget_windows.is_some() && (stock || receive_budget.is_some()) {
        return usage("--budget-windows needs the adapter and no --receive-budget");
    }
    let budget = receive_budget.map(|bytes| {
        grpc_stream_codec::budget::SharedBudget::new(bytes).with_max_wait(budget_wait)
    });
    if let Some(threshold) = batch_threshold {
        if stock {
            return usage("--batch-threshold sets the adapter's encoder; stock volo-grpc has none");
        }
        grpc_stream_codec::encode::set_default_batch_threshold(threshold);
    }

    let (listener, addr) = match volo_echo::bind(listen).await {
        Ok(bound) => bound,
        Err(err) => {
            eprintln!("cannot listen on {listen}: {err}");
            return ExitCode::FAILURE;
        }
    };
    println!("listening on {addr}");
    // Held to the end of `main`: dropping the provider stops the exporter.
    let _metrics = match metrics_listen {
        Some(listen) => match serve_metrics(listen, budget.as_ref()).await {
            Ok(endpoint) => Some(endpoint),
            Err(err) => {
                eprintln!("--metrics-listen {listen}: {err}");
                return ExitCode::FAILURE;
            }
        },
        None => None,
    };
    let _ = std::io::stdout().flush();
    let budget_figures = budget.as_ref().map(budget_source);
    if report_memory {
        reports::answer_stdin(budget_figures.clone());
    }
    reports::on_sigterm(budget_figures);
    let flavour = if stock { "stock" } else { "adapter" };
    eprintln!("serving the Echo service ({flavour} volo-grpc codec)");

    let served = if stock {
        volo_echo::stock::serve_with_connection_window(
            listener,
            EchoService::default(),
            Some(connection_window),
        )
        .await
    } else if let Some(budget) = budget {
        eprintln!(
            "receive budget: {} bytes, {:?}",
            budget.stats().capacity,
            budget.http2_windows(volo_echo::BUDGET_STREAMS_PER_CONNECTION)
        );
        volo_echo::adapter::serve_with_budget(listener, EchoService::default(), budget.into()).await
    } else if let Some(bytes) = budget_windows {
        let windows = grpc_stream_codec::budget::SharedBudget::new(bytes)
            .http2_windows(volo_echo::BUDGET_STREAMS_PER_CONNECTION);
        eprintln!("no receive budget, HTTP/2 windows {windows:?}");
        volo_echo::adapter::serve_on_windows(listener, EchoService::default(), windows, None).await
    } else {
        volo_echo::adapter::serve_with_connection_window(
            listener,
            EchoService::default(),
            Some(connection_window),
        )
        .await
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("server failed: {err}");
            ExitCode::FAILURE
        }
    }
}

/// What `--report-memory` and SIGTERM report of the budget.
fn budget_source(budget: &grpc_stream_codec::budget::SharedBudget) -> reports::BudgetSource {
    let budget = budget.clone();
    Arc::new(move || {
        let stats = budget.stats();
        reports::BudgetFigures {
            in_use: stats.in_use,
            peak: stats.peak,
            waits: stats.waits,
            waiting: stats.waiting,
            timed_out: stats.timed_out,
        }
    })
}

fn usage(problem: &str) -> ExitCode {
    eprintln!("{problem}\n{USAGE}");
    ExitCode::from(2)
}
