//! `tonic-echo-client --addr http://127.0.0.1:PORT [--stock] [--framing codec|full]
//! [--rpc unary|server|client|bidi|all] [--size N] [--count N]
//! [--compression none|gzip|deflate|zstd] [--metadata KEY=VALUE]...
//! [--expect-code CODE] [--expect-responses N]`
//!
//! Runs the chosen RPCs against a server and verifies every reply; exits
//! non-zero on the first mismatch or failed call. `--metadata` (repeatable)
//! is sent with every call; a key ending in `-bin` takes the value's bytes
//! as its binary value. With `--expect-code CODE` (a gRPC code name such as
//! `RESOURCE_EXHAUSTED`) every chosen RPC must fail with exactly that code:
//! the run exits 1 if one succeeds or fails with another code.
//! `--expect-responses N` makes ServerStream expect exactly N responses
//! instead of `max(--count, 1)` (for servers told otherwise by metadata).
//! Usage errors exit 2.

use std::process::ExitCode;

use grpc_stream_codec::status::Code;
use tonic::codec::CompressionEncoding;
use tonic::metadata::{AsciiMetadataKey, BinaryMetadataKey, MetadataMap, MetadataValue};
use tonic_echo::{ClientStack, EchoClient, Framing, Mismatch};

const USAGE: &str = "usage: tonic-echo-client --addr http://127.0.0.1:PORT [--stock] \
[--framing codec|full] [--rpc unary|server|client|bidi|all] [--size N] [--count N] [--compression none|gzip|deflate|zstd] \
[--metadata KEY=VALUE]... [--expect-code CODE] [--expect-responses N]";

struct Options {
    addr: String,
    stock: bool,
    framing: Framing,
    rpcs: Vec<&'static str>,
    size: u32,
    count: u32,
    compression: Option<CompressionEncoding>,
    metadata: MetadataMap,
    expect_code: Option<Code>,
    expect_responses: Option<u32>,
}

/// Adds `KEY=VALUE` to `metadata`.
fn add_metadata(metadata: &mut MetadataMap, pair: &str) -> Result<(), String> {
    let (key, value) = pair
        .split_once('=')
        .ok_or(format!("--metadata {pair}: expected KEY=VALUE"))?;
    let invalid = |e: &dyn std::fmt::Display| format!("--metadata {pair}: {e}");
    if key.ends_with("-bin") {
        let key = BinaryMetadataKey::from_bytes(key.as_bytes()).map_err(|e| invalid(&e))?;
        metadata.append_bin(key, MetadataValue::from_bytes(value.as_bytes()));
    } else {
        let key = AsciiMetadataKey::from_bytes(key.as_bytes()).map_err(|e| invalid(&e))?;
        let value = value.parse().map_err(|e| invalid(&e))?;
        metadata.append(key, value);
    }
    Ok(())
}

/// A gRPC code by its canonical name, e.g. `RESOURCE_EXHAUSTED`.
fn parse_code(name: &str) -> Option<Code> {
    (0..17)
        .map(Code::from_i32)
        .find(|code| code.as_str() == name)
}

fn parse(args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut options = Options {
        addr: String::new(),
        stock: false,
        framing: Framing::Codec,
        rpcs: vec!["unary", "server", "client", "bidi"],
        size: 1024,
        count: 10,
        compression: None,
        metadata: MetadataMap::new(),
        expect_code: None,
        expect_responses: None,
    };
    let mut args = args;
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--addr" => options.addr = value()?,
            "--stock" => options.stock = true,
            "--expect-responses" => {
                let count = value()?;
                options.expect_responses = Some(
                    count
                        .parse()
                        .map_err(|e| format!("--expect-responses {count}: {e}"))?,
                );
            }
            "--framing" => {
                let name = value()?;
                options.framing =
                    Framing::parse(&name).ok_or(format!("unknown --framing {name}"))?;
            }
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
            "--metadata" => add_metadata(&mut options.metadata, &value()?)?,
            "--expect-code" => {
                let name = value()?;
                options.expect_code =
                    Some(parse_code(&name).ok_or(format!("unknown --expect-code {name}"))?);
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

async fn run(
    rpc: &str,
    client: &mut EchoClient,
    size: u32,
    count: u32,
    expect_responses: Option<u32>,
) -> Result<(), Mismatch> {
    match rpc {
        "unary" => tonic_echo::check_unary(client, size as usize).await,
        "server" => {
            let expected = expect_responses.unwrap_or(count.max(1));
            tonic_echo::check_server_stream_expecting(client, size, count, expected).await
        }
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
    let stack = match (options.stock, options.framing) {
        (true, _) => ClientStack::Stock,
        (false, Framing::Codec) => ClientStack::Codec,
        (false, Framing::Full) => ClientStack::Full,
    };
    let client =
        match EchoClient::connect_with(options.addr.clone(), stack, options.compression).await {
            Ok(client) => client,
            Err(error) => {
                eprintln!("cannot connect to {}: {error}", options.addr);
                return ExitCode::FAILURE;
            }
        };
    let mut client = client.with_metadata(options.metadata.clone());
    for rpc in &options.rpcs {
        let outcome = run(
            rpc,
            &mut client,
            options.size,
            options.count,
            options.expect_responses,
        )
        .await;
        match (outcome, options.expect_code) {
            (Ok(()), None) => {
                println!("{rpc}: ok (size {}, count {})", options.size, options.count)
            }
            (Err(Mismatch::Status(status)), Some(expected))
                if i32::from(status.code()) == expected.as_i32() =>
            {
                println!(
                    "{rpc}: failed as expected with {expected}: {}",
                    status.message()
                )
            }
            (Ok(()), Some(expected)) => {
                eprintln!("{rpc}: succeeded, expected {expected}");
                return ExitCode::FAILURE;
            }
            (Err(error), _) => {
                eprintln!("{rpc}: {error}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
