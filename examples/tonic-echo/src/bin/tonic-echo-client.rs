//! `tonic-echo-client --addr http://127.0.0.1:PORT [--stock]
//! [--rpc unary|server|client|bidi|all] [--size N] [--count N]
//! [--compression none|gzip|deflate|zstd]`
//!
//! Runs the chosen RPCs against a server and verifies every reply; exits
//! non-zero on the first mismatch or failed call.

use std::process::ExitCode;

use tonic::codec::CompressionEncoding;
use tonic_echo::{EchoClient, Mismatch};

const USAGE: &str = "usage: tonic-echo-client --addr http://127.0.0.1:PORT [--stock] \
[--rpc unary|server|client|bidi|all] [--size N] [--count N] [--compression none|gzip|deflate|zstd]";

struct Options {
    addr: String,
    stock: bool,
    rpcs: Vec<&'static str>,
    size: u32,
    count: u32,
    compression: Option<CompressionEncoding>,
}

fn parse(args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut options = Options {
        addr: String::new(),
        stock: false,
        rpcs: vec!["unary", "server", "client", "bidi"],
        size: 1024,
        count: 10,
        compression: None,
    };
    let mut args = args;
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--addr" => options.addr = value()?,
            "--stock" => options.stock = true,
            "--rpc" => {
                let rpc = value()?;
                options.rpcs = match rpc.as_str() {
                    "unary" => vec!["unary"],
                    "server" => vec!["server"],
                    "client" => vec!["client"],
                    "bidi" => vec!["bidi"],
                    "all" => vec!["unary", "server", "client", "bidi"],
                    _ => return Err(format!("unknown --rpc {rpc}")),
                };
            }
            "--size" => {
                let size = value()?;
                options.size = size.parse().map_err(|e| format!("--size {size}: {e}"))?;
            }
            "--count" => {
                let count = value()?;
                options.count = count.parse().map_err(|e| format!("--count {count}: {e}"))?;
            }
            "--compression" => {
                let name = value()?;
                options.compression = tonic_echo::parse_compression(&name)
                    .ok_or(format!("unknown --compression {name}"))?;
            }
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if options.addr.is_empty() {
        return Err("--addr is required".to_owned());
    }
    Ok(options)
}

async fn run(rpc: &str, client: &mut EchoClient, size: u32, count: u32) -> Result<(), Mismatch> {
    match rpc {
        "unary" => tonic_echo::check_unary(client, size as usize).await,
        "server" => tonic_echo::check_server_stream(client, size, count).await,
        "client" => tonic_echo::check_client_stream(client, size as usize, count).await,
        _ => tonic_echo::check_bidi(client, size as usize, count).await,
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let options = match parse(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(error) => {
            eprintln!("{error}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let mut client =
        match EchoClient::connect(options.addr.clone(), options.stock, options.compression).await {
            Ok(client) => client,
            Err(error) => {
                eprintln!("cannot connect to {}: {error}", options.addr);
                return ExitCode::FAILURE;
            }
        };
    for rpc in &options.rpcs {
        match run(rpc, &mut client, options.size, options.count).await {
            Ok(()) => println!("{rpc}: ok (size {}, count {})", options.size, options.count),
            Err(error) => {
                eprintln!("{rpc}: {error}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
