//! Servers on ephemeral loopback ports and a raw HTTP/2 client that sees
//! the wire as it is (frames, bytes, trailers).

#![allow(dead_code)] // each test binary uses part of this

use std::net::{Ipv4Addr, SocketAddr};

use bytes::Bytes;
use volo_echo::EchoService;

pub use test_support::running::Running;

/// Which generated code a server or client runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavour {
    Adapter,
    /// The adapter, generated with `split_generated_files(true)`.
    AdapterSplit,
    Stock,
}

pub async fn start(flavour: Flavour, service: EchoService) -> Running {
    let (listener, addr) = volo_echo::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .await
        .expect("bind 127.0.0.1:0");
    let task = tokio::spawn(async move {
        let served = match flavour {
            Flavour::Adapter => volo_echo::adapter::serve(listener, service).await,
            Flavour::AdapterSplit => volo_echo::adapter_split::serve(listener, service).await,
            Flavour::Stock => volo_echo::stock::serve(listener, service).await,
        };
        if let Err(err) = served {
            panic!("{flavour:?} server failed: {err}");
        }
    });
    Running::new(addr, task)
}

#[allow(unused_imports)] // each test binary uses part of this
pub use test_support::raw_h2::{RawResponse, uncompressed_payloads};

/// Calls `method` on the Echo service with a hand-made request body, over
/// a fresh HTTP/2 connection, and reads the whole response.
pub async fn raw_call(
    addr: SocketAddr,
    method: &str,
    extra_headers: &[(&str, &str)],
    body: Bytes,
) -> RawResponse {
    let path = format!("/streamcodec.echo.v1.Echo/{method}");
    test_support::raw_h2::call(addr, &path, extra_headers, body).await
}

/// A gRPC envelope: flag byte (1 if `compressed`), big-endian length,
/// payload.
pub fn envelope(compressed: bool, payload: &[u8]) -> Bytes {
    Bytes::from(test_support::raw_h2::envelope(
        u8::from(compressed),
        payload,
    ))
}

/// An `EchoRequest` with only `response_count` and `response_size` set,
/// protobuf-encoded by hand so the raw client depends on no codec.
pub fn server_stream_request(count: u32, size: u32) -> Vec<u8> {
    let mut out = Vec::new();
    for (tag, value) in [(0x10u8, count), (0x18, size)] {
        out.push(tag);
        test_support::raw_h2::put_varint(&mut out, value.into());
    }
    out
}
