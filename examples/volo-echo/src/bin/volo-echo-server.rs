//! Serves the Echo service on volo-grpc.
//!
//! ```text
//! volo-echo-server --listen 127.0.0.1:PORT [--stock] [--batch-threshold BYTES] [--report-memory]
//! ```
//!
//! Without `--stock` the service runs through grpc-stream-codec's volo
//! adapter, behind its `DeflateNameLayer` (so gRPC's `deflate` works); with
//! it, exactly as volo-build generated it. Port 0 picks a free port; the
//! line `listening on ADDR` is printed once the socket is bound. With
//! `--report-memory`, each `memory` line on standard input is answered with
//! `live_bytes N` (heap bytes allocated since start-up, net of frees).
//! `--batch-threshold BYTES` sets the adapter's soft batch threshold for
//! every response (default 32 KiB; 0 sends each message as its own batch).
//!
//! Request metadata `x-fail-after: K` makes ServerStream and Bidi fail with
//! `aborted` after K responses, and `x-pace-micros: G` paces ServerStream's
//! responses G µs apart (see `volo_echo::EchoService`).

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;

use volo_echo::EchoService;

#[path = "../../../shared/live_alloc.rs"]
mod live_alloc;

#[global_allocator]
static ALLOC: live_alloc::LiveAlloc = live_alloc::LiveAlloc;

const USAGE: &str = "usage: volo-echo-server --listen 127.0.0.1:PORT [--stock] \
[--batch-threshold BYTES] [--report-memory]";

#[tokio::main]
async fn main() -> ExitCode {
    let mut listen: Option<SocketAddr> = None;
    let mut stock = false;
    let mut report_memory = false;
    let mut batch_threshold: Option<usize> = None;
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
    if let Some(threshold) = batch_threshold {
        if stock {
            return usage("--batch-threshold sets the adapter's encoder; stock volo-grpc has none");
        }
        grpc_stream_codec::volo::set_default_batch_threshold(threshold);
    }

    let (listener, addr) = match volo_echo::bind(listen).await {
        Ok(bound) => bound,
        Err(err) => {
            eprintln!("cannot listen on {listen}: {err}");
            return ExitCode::FAILURE;
        }
    };
    println!("listening on {addr}");
    let _ = std::io::stdout().flush();
    if report_memory {
        live_alloc::serve_reports_on_stdin();
    }
    let flavour = if stock { "stock" } else { "adapter" };
    eprintln!("serving the Echo service ({flavour} volo-grpc codec)");

    let served = if stock {
        volo_echo::stock::serve(listener, EchoService::default()).await
    } else {
        volo_echo::adapter::serve(listener, EchoService::default()).await
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("server failed: {err}");
            ExitCode::FAILURE
        }
    }
}

fn usage(problem: &str) -> ExitCode {
    eprintln!("{problem}\n{USAGE}");
    ExitCode::from(2)
}
