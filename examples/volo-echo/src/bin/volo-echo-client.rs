//! Calls the Echo service and checks every reply; exits non-zero on a
//! failed call or a wrong reply.
//!
//! ```text
//! volo-echo-client --addr 127.0.0.1:PORT [--stock] [--rpc unary|server|client|bidi|all]
//!                  [--size N] [--count N] [--compression gzip|zstd|deflate]
//! ```
//!
//! Without `--stock` the client runs through grpc-stream-codec's volo
//! adapter. `--size` is the payload size in bytes (default 256), `--count`
//! the number of streamed messages (default 16).

use std::net::SocketAddr;
use std::process::ExitCode;

use volo_echo::{Rpc, compression_by_name};

const USAGE: &str = "usage: volo-echo-client --addr 127.0.0.1:PORT [--stock] \
                     [--rpc unary|server|client|bidi|all] [--size N] [--count N] \
                     [--compression gzip|zstd|deflate]";

struct Args {
    addr: SocketAddr,
    stock: bool,
    rpcs: Vec<Rpc>,
    size: usize,
    count: u32,
    compression: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut addr = None;
    let mut stock = false;
    let mut rpcs = Rpc::ALL.to_vec();
    let mut size = 256;
    let mut count = 16;
    let mut compression = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--addr" => addr = Some(value()?.parse().map_err(|err| format!("--addr: {err}"))?),
            "--stock" => stock = true,
            "--rpc" => {
                rpcs = match value()?.as_str() {
                    "unary" => vec![Rpc::Unary],
                    "server" => vec![Rpc::ServerStream],
                    "client" => vec![Rpc::ClientStream],
                    "bidi" => vec![Rpc::Bidi],
                    "all" => Rpc::ALL.to_vec(),
                    other => return Err(format!("unknown --rpc {other:?}")),
                }
            }
            "--size" => size = value()?.parse().map_err(|err| format!("--size: {err}"))?,
            "--count" => count = value()?.parse().map_err(|err| format!("--count: {err}"))?,
            "--compression" => {
                let name = value()?;
                if compression_by_name(&name).is_none() {
                    return Err(format!("unknown --compression {name:?}"));
                }
                compression = Some(name);
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let addr = addr.ok_or("--addr is required")?;
    Ok(Args {
        addr,
        stock,
        rpcs,
        size,
        count,
        compression,
    })
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(problem) => {
            eprintln!("{problem}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let compression = args.compression.as_deref().and_then(compression_by_name);
    let stock_client;
    let adapter_client;
    if args.stock {
        stock_client = Some(volo_echo::stock::client(args.addr, compression));
        adapter_client = None;
    } else {
        stock_client = None;
        adapter_client = Some(volo_echo::adapter::client(args.addr, compression));
    }

    let mut failed = false;
    for rpc in args.rpcs {
        let result = match (&stock_client, &adapter_client) {
            (Some(client), _) => volo_echo::stock::call(client, rpc, args.size, args.count).await,
            (_, Some(client)) => volo_echo::adapter::call(client, rpc, args.size, args.count).await,
            _ => unreachable!("one client is always built"),
        };
        match result {
            Ok(()) => println!("{rpc:?}: ok"),
            Err(err) => {
                println!("{rpc:?}: FAILED: {err}");
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
