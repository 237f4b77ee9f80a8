//! `tonic-echo-server --listen 127.0.0.1:PORT [--stock] [--framing codec|full]
//! [--grpc-web] [--batch-threshold BYTES] [--receive-budget BYTES]
//! [--budget-windows BYTES] [--connection-window BYTES] [--report-memory]
//! [--metrics-listen ADDR]`
//!
//! Serves the Echo service with grpc-stream-codec's tonic codec, with its
//! full framing under `--framing full`, or with tonic's stock codec under
//! `--stock`. `--batch-threshold`
//! (full framing only) sets the soft batch threshold of every response in
//! bytes (default 32 KiB; 0 sends each message as its own batch).
//! `--grpc-web` serves the full framing behind tonic-web's `GrpcWebLayer`
//! and accepts HTTP/1.1, so gRPC-Web clients (`application/grpc-web*`) can
//! call it as well as gRPC ones. Prints `listening on ADDR`
//! on one line once bound, so scripts can pass port 0 and read the port back.
//! With `--report-memory`, each `memory` line on standard input is answered
//! with `live_bytes N` (heap bytes allocated since start-up, net of frees),
//! and with `--receive-budget` each `budget` line with `budget_in_use N
//! budget_waiting W budget_timed_out T budget_peak P budget_waits G`.
//! Stopped with SIGTERM, it prints `exit`, those budget figures (with a
//! budget) and `live_bytes N` (with `--report-memory`) as its last line.
//! Request metadata `x-pace-micros: G` paces ServerStream's responses G µs
//! apart. `--connection-window` sets the HTTP/2 connection window (default
//! 16 MiB, sized so that a client may send a burst of small frames before
//! the server reads any: docs/connections.md; `1048576` is hyper's
//! default); a receive budget sizes its own windows.
//! `--metrics-listen ADDR` (feature `metrics-listen`, on by default) records
//! gRPC's A66 metrics (`grpc_stream_codec::observe::install`; the full
//! framing records calls, the codec-only path cannot) and, with a receive
//! budget, the budget's gauges (`observe_budget`, named `server`), through
//! the OpenTelemetry SDK's Prometheus exporter, and serves them at
//! `GET http://ADDR/metrics`; the line `metrics on ADDR` follows
//! `listening on ADDR` (port 0 picks a free port).

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use tonic_echo::{Framing, ServeOptions};

use test_support::alloc as live_alloc;
use test_support::reports;

// `--metrics-listen`, the same on both example servers.
#[path = "../../../shared/serve_metrics.rs"]
mod serve_metrics;
use serve_metrics::serve_metrics;

#[global_allocator]
static ALLOC: live_alloc::CountingAlloc = live_alloc::CountingAlloc::SWITCHED;

const USAGE: &str = "usage: tonic-echo-server --listen 127.0.0.1:PORT [--stock] \
[--framing codec|full] [--grpc-web] [--batch-threshold BYTES] [--receive-budget BYTES] [--budget-windows BYTES] \
[--connection-window BYTES] [--report-memory] [--metrics-listen ADDR]";

struct Options {
    listen: SocketAddr,
    serve: ServeOptions,
    receive_budget: Option<usize>,
    /// `--budget-windows`: the HTTP/2 windows a budget of this size gets,
    /// without the budget.
    budget_windows: Option<usize>,
    report_memory: bool,
    /// `--grpc-web`: tonic-web in front of the full framing.
    grpc_web: bool,
    /// `--metrics-listen`: where `/metrics` is served.
    metrics_listen: Option<SocketAddr>,
}

/// The value after `flag`, parsed; `what` names it in the error.
fn parsed<T>(args: &mut impl Iterator<Item = String>, flag: &str, what: &str) -> Result<T, String>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    let value = args.next().ok_or_else(|| format!("{flag} needs {what}"))?;
    value.parse().map_err(|e| format!("{flag} {value}: {e}"))
}

fn parse(args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut listen = None;
    let mut serve = ServeOptions {
        connection_window: Some(tonic_echo::SMALL_FRAMES_CONNECTION_WINDOW),
        ..ServeOptions::default()
    };
    let mut report_memory = false;
    let mut receive_budget = None;
    let mut budget_windows = None;
    let mut grpc_web = false;
    let mut framing = None;
    let mut metrics_listen = None;
    let mut args = args;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--listen" => listen = Some(parsed(&mut args, "--listen", "an address")?),
            "--stock" => serve.stock = true,
            "--framing" => {
                let value = args.next().ok_or("--framing needs codec or full")?;
                framing = Some(
                    Framing::parse(&value).ok_or_else(|| format!("unknown --framing {value}"))?,
                );
            }
            "--batch-threshold" => {
                serve.batch_threshold =
                    Some(parsed(&mut args, "--batch-threshold", "a number of bytes")?);
            }
            "--report-memory" => report_memory = true,
            "--grpc-web" => grpc_web = true,
            "--receive-budget" => {
                receive_budget = Some(parsed(&mut args, "--receive-budget", "a byte count")?);
            }
            "--budget-windows" => {
                budget_windows = Some(parsed(&mut args, "--budget-windows", "a byte count")?);
            }
            "--connection-window" => {
                serve.connection_window =
                    Some(parsed(&mut args, "--connection-window", "a byte count")?);
            }
            "--metrics-listen" => {
                metrics_listen = Some(parsed(&mut args, "--metrics-listen", "an address")?);
            }
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if grpc_web {
        if serve.stock || framing == Some(Framing::Codec) {
            return Err(
                "--grpc-web serves the full framing (no --stock, no --framing codec)".into(),
            );
        }
        if receive_budget.is_some() || budget_windows.is_some() {
            return Err("--grpc-web takes no --receive-budget or --budget-windows".into());
        }
        framing = Some(Framing::Full);
    }
    serve.framing = framing.unwrap_or_default();
    if receive_budget.is_some() && (serve.stock || serve.framing != Framing::Full) {
        return Err("--receive-budget needs --framing full".to_owned());
    }
    if budget_windows.is_some()
        && (receive_budget.is_some() || serve.stock || serve.framing != Framing::Full)
    {
        return Err("--budget-windows needs --framing full and no --receive-budget".to_owned());
    }
    if serve.batch_threshold.is_some() && (serve.stock || serve.framing != Framing::Full) {
        return Err(
            "--batch-threshold needs --framing full (tonic's own framing has no such setting)"
                .into(),
        );
    }
    Ok(Options {
        listen: listen.ok_or("--listen is required")?,
        serve,
        receive_budget,
        budget_windows,
        report_memory,
        grpc_web,
        metrics_listen,
    })
}

#[tokio::main]
async fn main() -> ExitCode {
    let options = match parse(std::env::args().skip(1)) {
        Ok(parsed) => parsed,
        Err(error) => {
            eprintln!("{error}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let (listener, local) = match tonic_echo::bind(options.listen).await {
        Ok(bound) => bound,
        Err(error) => {
            eprintln!("cannot listen on {}: {error}", options.listen);
            return ExitCode::FAILURE;
        }
    };
    println!("listening on {local}");
    let _ = std::io::stdout().flush();
    let budget = options
        .receive_budget
        .map(grpc_stream_codec::budget::SharedBudget::new);
    // Held to the end of `main`: dropping the provider stops the exporter.
    let _metrics = match options.metrics_listen {
        Some(listen) => match serve_metrics(listen, budget.as_ref()).await {
            Ok(endpoint) => Some(endpoint),
            Err(error) => {
                eprintln!("--metrics-listen {listen}: {error}");
                return ExitCode::FAILURE;
            }
        },
        None => None,
    };
    let _ = std::io::stdout().flush();
    let budget_figures = budget.as_ref().map(budget_source);
    if options.report_memory {
        reports::answer_stdin(budget_figures.clone());
    }
    reports::on_sigterm(budget_figures);
    let codec = match (options.serve.stock, options.serve.framing) {
        (true, _) => "stock tonic-prost",
        (false, Framing::Codec) => "grpc-stream-codec (codec)",
        (false, Framing::Full) => "grpc-stream-codec (full framing)",
    };
    let web = if options.grpc_web {
        " behind tonic-web"
    } else {
        ""
    };
    eprintln!(
        "codec: {codec}{web}, receive budget: {:?}, budget windows: {:?}",
        options.receive_budget, options.budget_windows
    );
    if let Some(threshold) = options.serve.batch_threshold {
        grpc_stream_codec::encode::set_default_batch_threshold(threshold);
    }
    let served = match (budget, options.budget_windows) {
        (Some(budget), _) => tonic_echo::serve_full_with_budget(listener, budget.into()).await,
        (None, Some(bytes)) => {
            let windows = grpc_stream_codec::budget::SharedBudget::new(bytes)
                .http2_windows(tonic_echo::BUDGET_STREAMS_PER_CONNECTION);
            tonic_echo::serve_full_on_windows(listener, windows, None).await
        }
        (None, None) if options.grpc_web => tonic_echo::serve_grpc_web(listener).await,
        (None, None) => tonic_echo::serve_with(listener, options.serve).await,
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("server failed: {error}");
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
