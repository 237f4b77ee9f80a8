//! `tonic-echo-server --listen 127.0.0.1:PORT [--stock]`
//!
//! Serves the Echo service with grpc-stream-codec's tonic codec, or with
//! tonic's stock codec under `--stock`. Prints `listening on ADDR` on one line
//! once bound, so scripts can pass port 0 and read the port back.

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;

const USAGE: &str = "usage: tonic-echo-server --listen 127.0.0.1:PORT [--stock]";

fn parse(args: impl Iterator<Item = String>) -> Result<(SocketAddr, bool), String> {
    let mut listen = None;
    let mut stock = false;
    let mut args = args;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--listen" => {
                let value = args.next().ok_or("--listen needs an address")?;
                listen = Some(
                    value
                        .parse()
                        .map_err(|e| format!("--listen {value}: {e}"))?,
                );
            }
            "--stock" => stock = true,
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok((listen.ok_or("--listen is required")?, stock))
}

#[tokio::main]
async fn main() -> ExitCode {
    let (addr, stock) = match parse(std::env::args().skip(1)) {
        Ok(parsed) => parsed,
        Err(error) => {
            eprintln!("{error}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let (listener, local) = match tonic_echo::bind(addr).await {
        Ok(bound) => bound,
        Err(error) => {
            eprintln!("cannot listen on {addr}: {error}");
            return ExitCode::FAILURE;
        }
    };
    let codec = if stock {
        "stock tonic-prost"
    } else {
        "grpc-stream-codec"
    };
    println!("listening on {local}");
    let _ = std::io::stdout().flush();
    eprintln!("codec: {codec}");
    match tonic_echo::serve(listener, stock).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("server failed: {error}");
            ExitCode::FAILURE
        }
    }
}
