//! Calls the Echo service and checks every reply; exits non-zero on a
//! failed call or a wrong reply.
//!
//! ```text
//! volo-echo-client --addr 127.0.0.1:PORT [--stock] [--rpc unary|server|client|bidi|all]
//!                  [--size N] [--count N] [--compression none|gzip|zstd|deflate]
//!                  [--metadata KEY=VALUE]... [--expect-code CODE]
//!                  [--expect-responses N]
//! ```
//!
//! Without `--stock` the client runs through grpc-stream-codec's volo
//! adapter and compresses under gRPC's names (`deflate`) through its
//! `ClientCompressionLayer` (which also hands it trailers-only statuses), as
//! grpcio, tonic and the adapter server expect;
//! with `--stock` it is volo-grpc as generated (deflate is `zlib`).
//! `--size` is the payload size in bytes (default 256), `--count` the number
//! of streamed messages (default 16). `--metadata` (repeatable) adds request
//! metadata to every call. With `--expect-code` (a gRPC code name such as
//! `RESOURCE_EXHAUSTED`, or its number) every call must fail with exactly
//! that code, or the run fails. `--expect-responses N` makes ServerStream
//! and Bidi expect exactly N responses instead of their usual count, e.g. 0
//! from a server told by metadata to send none (grpcio's
//! `x-response-count`), which answers trailers-only.

use std::net::SocketAddr;
use std::process::ExitCode;

use volo_echo::{CallError, ClientOptions, MetadataLayer, Rpc, compression_by_name};

const USAGE: &str = "usage: volo-echo-client --addr 127.0.0.1:PORT [--stock] \
                     [--rpc unary|server|client|bidi|all] [--size N] [--count N] \
                     [--compression none|gzip|zstd|deflate] [--metadata KEY=VALUE]... \
                     [--expect-code CODE] [--expect-responses N]";

struct Args {
    addr: SocketAddr,
    stock: bool,
    rpcs: Vec<Rpc>,
    size: usize,
    count: u32,
    compression: Option<String>,
    metadata: Vec<(String, String)>,
    expect_code: Option<volo_grpc::Code>,
    expect_responses: Option<u32>,
}

/// The gRPC code named `name` (`RESOURCE_EXHAUSTED`, `resource_exhausted`)
/// or numbered.
fn parse_code(name: &str) -> Option<volo_grpc::Code> {
    const NAMES: [&str; 17] = [
        "OK",
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
        "UNAUTHENTICATED",
    ];
    let number = match name.parse::<i32>() {
        Ok(number) => number,
        Err(_) => NAMES
            .iter()
            .position(|known| known.eq_ignore_ascii_case(name))? as i32,
    };
    (0..NAMES.len() as i32)
        .contains(&number)
        .then(|| volo_grpc::Code::from_i32(number))
}

fn parse_args() -> Result<Args, String> {
    let mut addr = None;
    let mut stock = false;
    let mut rpcs = Rpc::ALL.to_vec();
    let mut size = 256;
    let mut count = 16;
    let mut compression = None;
    let mut metadata = Vec::new();
    let mut expect_code = None;
    let mut expect_responses = None;
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
                compression = match name.as_str() {
                    "none" | "identity" => None,
                    _ if compression_by_name(&name).is_some() => Some(name),
                    _ => return Err(format!("unknown --compression {name:?}")),
                };
            }
            "--metadata" => {
                let pair = value()?;
                let (key, value) = pair
                    .split_once('=')
                    .ok_or_else(|| format!("--metadata {pair:?}: expected KEY=VALUE"))?;
                metadata.push((key.to_owned(), value.to_owned()));
            }
            "--expect-code" => {
                let name = value()?;
                expect_code = Some(
                    parse_code(&name).ok_or_else(|| format!("unknown --expect-code {name:?}"))?,
                );
            }
            "--expect-responses" => {
                let count = value()?;
                expect_responses = Some(
                    count
                        .parse()
                        .map_err(|err| format!("--expect-responses {count:?}: {err}"))?,
                );
            }
            "--help" | "-h" => return Err(String::new()),
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
        metadata,
        expect_code,
        expect_responses,
    })
}

/// A streaming call's outcome checked against `expected` responses: OK
/// only if it ended OK after exactly that many.
fn exactly(
    outcome: Result<(u32, Option<volo_grpc::Status>), CallError>,
    expected: u32,
) -> Result<(), CallError> {
    match outcome? {
        (_, Some(status)) => Err(status.into()),
        (received, None) if received == expected => Ok(()),
        (received, None) => Err(CallError::Mismatch(format!(
            "{received} responses, expected {expected}"
        ))),
    }
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
    let metadata = match MetadataLayer::new(&args.metadata) {
        Ok(layer) => layer,
        Err(problem) => {
            eprintln!("{problem}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let options = ClientOptions {
        compression: args.compression.as_deref().and_then(compression_by_name),
        metadata,
    };
    let stock_client;
    let adapter_client;
    if args.stock {
        stock_client = Some(volo_echo::stock::client_with(args.addr, &options));
        adapter_client = None;
    } else {
        stock_client = None;
        adapter_client = Some(volo_echo::adapter::grpc_client(args.addr, &options));
    }

    let mut failed = false;
    for rpc in args.rpcs {
        let (size, count) = (args.size, args.count);
        let result = match (&stock_client, &adapter_client, rpc, args.expect_responses) {
            (Some(client), _, Rpc::ServerStream, Some(n)) => exactly(
                volo_echo::stock::calls::server_stream(client, size, count).await,
                n,
            ),
            (Some(client), _, Rpc::Bidi, Some(n)) => {
                exactly(volo_echo::stock::calls::bidi(client, size, count).await, n)
            }
            (_, Some(client), Rpc::ServerStream, Some(n)) => exactly(
                volo_echo::adapter::calls::server_stream(client, size, count).await,
                n,
            ),
            (_, Some(client), Rpc::Bidi, Some(n)) => exactly(
                volo_echo::adapter::calls::bidi(client, size, count).await,
                n,
            ),
            (Some(client), ..) => volo_echo::stock::call(client, rpc, size, count).await,
            (_, Some(client), ..) => volo_echo::adapter::call(client, rpc, size, count).await,
            _ => unreachable!("one client is always built"),
        };
        match (result, args.expect_code) {
            (Ok(()), None) => println!("{rpc:?}: ok"),
            (Err(CallError::Status(status)), Some(code)) if status.code() == code => {
                println!(
                    "{rpc:?}: ok, failed as expected: {:?}: {}",
                    status.code(),
                    status.message()
                );
            }
            (Ok(()), Some(code)) => {
                println!("{rpc:?}: FAILED: succeeded, expected {code:?}");
                failed = true;
            }
            (Err(err), _) => {
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
