//! Servers of both stacks on ephemeral loopback ports, and the cases the
//! matrices run.

#![allow(dead_code)] // each test binary uses part of this

use std::net::{Ipv4Addr, SocketAddr};

pub use test_support::running::Running;

fn any_port() -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, 0))
}

/// The tonic Echo server with grpc-stream-codec's tonic codec, sending and
/// accepting gzip, deflate and zstd.
pub async fn tonic_adapter_server() -> Running {
    tonic_server(false).await
}

/// The tonic Echo server with tonic's stock codec.
#[allow(dead_code)]
pub async fn tonic_stock_server() -> Running {
    tonic_server(true).await
}

async fn tonic_server(stock: bool) -> Running {
    let (listener, addr) = tonic_echo::bind(any_port()).await.expect("bind");
    let task = tokio::spawn(async move {
        if let Err(err) = tonic_echo::serve(listener, stock).await {
            panic!("tonic server failed: {err}");
        }
    });
    Running::new(addr, task)
}

/// The volo-grpc Echo server through grpc-stream-codec's volo adapter,
/// behind `DeflateNameLayer`, sending and accepting gzip, deflate and zstd.
pub async fn volo_adapter_server() -> Running {
    let (listener, addr) = volo_echo::bind(any_port()).await.expect("bind");
    let task = tokio::spawn(async move {
        let service = volo_echo::EchoService::default();
        if let Err(err) = volo_echo::adapter::serve(listener, service).await {
            panic!("volo server failed: {err}");
        }
    });
    Running::new(addr, task)
}

/// (payload size, streamed messages): 1,000-message streams for the small
/// payloads, a few messages for the large ones to keep the run short.
pub const CASES: [(usize, u32); 4] = [(0, 1000), (256, 1000), (64 * 1024, 8), (1024 * 1024, 2)];

/// Compressions by gRPC name; `None` is uncompressed.
pub const COMPRESSIONS: [Option<&str>; 4] = [None, Some("gzip"), Some("zstd"), Some("deflate")];

/// The k of the mid-stream failure tests, and how many messages are asked
/// for (more than k).
pub const FAIL_AFTER: u32 = 7;
pub const ASKED: u32 = 20;

/// Checks what a client saw of a call that asked the server to fail after
/// [`FAIL_AFTER`] messages: that many messages, then `ABORTED` with the
/// message and the `x-fail-detail` trailing metadata intact.
#[allow(dead_code)]
pub fn assert_failed_after_k(
    what: &str,
    received: u32,
    status: Option<grpc_stream_codec::status::Status>,
) {
    assert_eq!(received, FAIL_AFTER, "{what}: messages before the error");
    let status = status.unwrap_or_else(|| panic!("{what}: the stream ended without the error"));
    assert_eq!(
        status.code(),
        grpc_stream_codec::status::Code::Aborted,
        "{what}"
    );
    assert_eq!(
        status.message(),
        format!("failed after {FAIL_AFTER} messages"),
        "{what}"
    );
    let detail = status
        .metadata()
        .and_then(|metadata| metadata.get(tonic_echo::FAIL_DETAIL))
        .and_then(|value| value.to_str().ok());
    assert_eq!(
        detail,
        Some(FAIL_AFTER.to_string().as_str()),
        "{what}: trailing metadata {:?}",
        status.metadata()
    );
}
