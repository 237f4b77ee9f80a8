//! The standard gRPC interop client cases on tonic with grpc-stream-codec's
//! full framing.
//!
//! ```text
//! tonic-interop-client --server_port=N [--server_host=127.0.0.1]
//!     [--test_case=all|CASE[,CASE...]] [--use_tls=false]
//! ```
//!
//! Prints `PASS <case>` or `FAIL <case>: <why>` per case, then
//! `N passed, M failed`; exits 1 if any case failed.

use std::process::ExitCode;

use grpc_interop::report::{CLIENT_USAGE, ClientArgs};

#[tokio::main]
async fn main() -> ExitCode {
    match ClientArgs::parse(std::env::args().skip(1)) {
        Ok(args) => grpc_interop::tonic_client::run(&args).await,
        Err(problem) => {
            eprintln!("{problem}\n{CLIENT_USAGE}");
            ExitCode::from(2)
        }
    }
}
