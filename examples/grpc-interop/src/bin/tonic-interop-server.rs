//! `grpc.testing.TestService` on tonic with grpc-stream-codec's full
//! framing.
//!
//! ```text
//! tonic-interop-server --port N [--host 127.0.0.1]
//! ```
//!
//! Port 0 picks a free port; `listening on ADDR` is printed once bound.

use std::io::Write;
use std::process::ExitCode;

use grpc_interop::report::{SERVER_USAGE, ServerArgs};
use grpc_interop::tonic_server::{TonicTestService, bind, serve};

#[tokio::main]
async fn main() -> ExitCode {
    let args = match ServerArgs::parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(problem) => {
            eprintln!("{problem}\n{SERVER_USAGE}");
            return ExitCode::from(2);
        }
    };
    let addr = match args.addr() {
        Ok(addr) => addr,
        Err(problem) => {
            eprintln!("{problem}\n{SERVER_USAGE}");
            return ExitCode::from(2);
        }
    };
    let (listener, local) = match bind(addr).await {
        Ok(bound) => bound,
        Err(err) => {
            eprintln!("cannot listen on {addr}: {err}");
            return ExitCode::FAILURE;
        }
    };
    println!("listening on {local}");
    let _ = std::io::stdout().flush();
    match serve(listener, TonicTestService::default()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("server failed: {err}");
            ExitCode::FAILURE
        }
    }
}
