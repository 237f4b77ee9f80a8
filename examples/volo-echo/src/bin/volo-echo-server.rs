//! Serves the Echo service on volo-grpc.
//!
//! ```text
//! volo-echo-server --listen 127.0.0.1:PORT [--stock]
//! ```
//!
//! Without `--stock` the service runs through grpc-stream-codec's volo
//! adapter; with it, exactly as volo-build generated it. Port 0 picks a free
//! port; the line `listening on ADDR` is printed once the socket is bound.

use std::net::SocketAddr;
use std::process::ExitCode;

use volo_echo::EchoService;

const USAGE: &str = "usage: volo-echo-server --listen 127.0.0.1:PORT [--stock]";

#[tokio::main]
async fn main() -> ExitCode {
    let mut listen: Option<SocketAddr> = None;
    let mut stock = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--listen" => match args.next().map(|value| value.parse()) {
                Some(Ok(addr)) => listen = Some(addr),
                _ => return usage("--listen needs an address such as 127.0.0.1:50051"),
            },
            "--stock" => stock = true,
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

    let (listener, addr) = match volo_echo::bind(listen).await {
        Ok(bound) => bound,
        Err(err) => {
            eprintln!("cannot listen on {listen}: {err}");
            return ExitCode::FAILURE;
        }
    };
    println!("listening on {addr}");
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
