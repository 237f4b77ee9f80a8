//! The adapter's volo-grpc client against grpcio's Echo server
//! (`interop/echo_server.py`, gRPC C-core), which answers a call that sends
//! no message *trailers-only*: `grpc-status` in the response headers, no
//! body. Empty streams end OK with 0 messages, a trailers-only error is
//! that error, on every call kind, uncompressed, gzip and deflate; a client
//! with no layer added (as the README builds it) reads the empty stream as
//! `OK` too.
//!
//! Needs python3 with grpcio and grpcio-tools, so the tests are ignored in
//! a plain `cargo test`; `interop/run.sh` installs both and runs them
//! (`cargo test -p volo-echo --test grpcio_trailers_only -- --ignored`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use test_support::process::ListeningProcess;

use volo_echo::adapter::{self, EchoClient, calls};
use volo_echo::{ClientOptions, MetadataLayer, compression_by_name};

const NEEDS: &str = "needs python3 with grpcio and grpcio-tools; interop/run.sh runs it";

/// grpcio's Echo server on an ephemeral loopback port; killed on drop.
struct Grpcio {
    addr: SocketAddr,
    process: ListeningProcess,
    stubs: PathBuf,
}

impl Grpcio {
    fn start() -> Grpcio {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let stubs = std::env::temp_dir().join(format!(
            "volo-echo-grpcio-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&stubs).expect("create the stubs directory");
        let protoc = Command::new("python3")
            .args(["-m", "grpc_tools.protoc", "-I"])
            .arg(root.join("proto"))
            .arg(format!("--python_out={}", stubs.display()))
            .arg(format!("--grpc_python_out={}", stubs.display()))
            .arg("echo.proto")
            .status()
            .expect("run python3 -m grpc_tools.protoc");
        assert!(protoc.success(), "grpc_tools.protoc failed ({NEEDS})");
        let mut command = Command::new("python3");
        command
            .arg(root.join("interop/echo_server.py"))
            .arg("--stubs")
            .arg(&stubs)
            .args(["--port", "0"]);
        let process = ListeningProcess::start(command);
        Grpcio {
            addr: process.addr,
            process,
            stubs,
        }
    }

    /// An adapter client, with `ClientCompressionLayer` compressing with
    /// `compression` (a `compression_by_name` name), sending `metadata`.
    fn client(&self, compression: Option<&str>, metadata: &[(&str, &str)]) -> EchoClient {
        let mut metadata = metadata.to_vec();
        // Ask grpcio to compress its responses the same way.
        if let Some(name) = compression {
            metadata.push(("x-response-encoding", name));
        }
        let options = ClientOptions {
            compression: compression.and_then(compression_by_name),
            metadata: MetadataLayer::new(&metadata).expect("valid metadata"),
        };
        adapter::grpc_client(self.addr, &options)
    }
}

impl Drop for Grpcio {
    fn drop(&mut self) {
        // The server first, then the stubs it runs from.
        let _ = self.process.child.kill();
        let _ = self.process.child.wait();
        let _ = std::fs::remove_dir_all(&self.stubs);
    }
}

/// How many messages a stream had if it ended OK, else what went wrong.
fn ended_ok(
    outcome: Result<(u32, Option<volo_grpc::Status>), volo_echo::CallError>,
) -> Result<u32, String> {
    match outcome {
        Ok((received, None)) => Ok(received),
        Ok((received, Some(status))) => Err(format!("{received} messages, then {status:?}")),
        Err(err) => Err(err.to_string()),
    }
}

const COMPRESSIONS: [Option<&str>; 3] = [None, Some("gzip"), Some("deflate")];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs python3 with grpcio and grpcio-tools; interop/run.sh runs it"]
async fn empty_streams_from_grpcio_end_ok_with_no_messages() {
    let grpcio = Grpcio::start();
    for compression in COMPRESSIONS {
        // Bidi: the client sends nothing, grpcio echoes nothing.
        let client = grpcio.client(compression, &[]);
        let outcome = ended_ok(calls::bidi(&client, 64, 0).await);
        assert_eq!(outcome, Ok(0), "bidi, {compression:?}");

        // ServerStream asked for 0 responses.
        let client = grpcio.client(compression, &[("x-response-count", "0")]);
        let outcome = ended_ok(calls::server_stream(&client, 64, 0).await);
        assert_eq!(outcome, Ok(0), "server stream, {compression:?}");

        // The same client still reads ordinary streams.
        let client = grpcio.client(compression, &[("x-response-count", "3")]);
        let outcome = ended_ok(calls::server_stream(&client, 64, 0).await);
        assert_eq!(outcome, Ok(3), "server stream of 3, {compression:?}");
    }
}

/// `x-fail-after: 0`: grpcio aborts before the first response, so the
/// status (ABORTED, "failed after 0 messages", `x-fail-detail: 0`) is all
/// the response has.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs python3 with grpcio and grpcio-tools; interop/run.sh runs it"]
async fn a_trailers_only_error_from_grpcio_is_that_error_on_every_call_kind() {
    let grpcio = Grpcio::start();
    for compression in COMPRESSIONS {
        let client = grpcio.client(compression, &[("x-fail-after", "0")]);
        let results = [
            ("unary", calls::unary(&client, 64).await.err()),
            (
                "client stream",
                calls::client_stream(&client, 64, 2).await.err(),
            ),
            (
                "server stream",
                stream_status(calls::server_stream(&client, 64, 5).await),
            ),
            ("bidi", stream_status(calls::bidi(&client, 64, 2).await)),
        ];
        for (rpc, error) in results {
            let status = match error {
                Some(volo_echo::CallError::Status(status)) => status,
                other => panic!("{rpc}, {compression:?}: {other:?}, expected ABORTED"),
            };
            assert_eq!(status.code(), volo_grpc::Code::Aborted, "{rpc}: {status:?}");
            assert_eq!(status.message(), "failed after 0 messages", "{rpc}");
            assert_eq!(
                status.metadata().get("x-fail-detail").map(|v| v.as_bytes()),
                Some(&b"0"[..]),
                "{rpc}: {status:?}"
            );
        }
    }
}

/// A streaming call's outcome as an error: its status if it failed, a
/// mismatch if it had messages.
fn stream_status(
    outcome: Result<(u32, Option<volo_grpc::Status>), volo_echo::CallError>,
) -> Option<volo_echo::CallError> {
    match outcome {
        Ok((0, Some(status))) => Some(status.into()),
        Ok((received, status)) => Some(volo_echo::CallError::Mismatch(format!(
            "{received} messages, then {status:?}"
        ))),
        Err(err) => Some(err),
    }
}

/// The client as the README builds it, with no layer added: the build
/// hook's client transport hands the response headers to the stream, so
/// grpcio's trailers-only `OK` is an empty stream that ends `OK`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs python3 with grpcio and grpcio-tools; interop/run.sh runs it"]
async fn without_any_layer_an_empty_stream_from_grpcio_ends_ok() {
    let grpcio = Grpcio::start();
    let client = adapter::client(grpcio.addr, None);
    assert_eq!(ended_ok(calls::bidi(&client, 64, 0).await), Ok(0));
    let client = adapter::client_with(
        grpcio.addr,
        &ClientOptions {
            compression: None,
            metadata: MetadataLayer::new(&[("x-response-count", "0")]).expect("valid metadata"),
        },
    );
    assert_eq!(ended_ok(calls::server_stream(&client, 64, 0).await), Ok(0));
    // Streams with messages as before.
    assert_eq!(ended_ok(calls::bidi(&client, 64, 3).await), Ok(3));
}
