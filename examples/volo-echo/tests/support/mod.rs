//! Servers on ephemeral loopback ports and a raw HTTP/2 client that sees
//! the wire as it is (frames, bytes, trailers).

#![allow(dead_code)] // each test binary uses part of this

use std::net::{Ipv4Addr, SocketAddr};

use bytes::{BufMut, Bytes, BytesMut};
use http::{HeaderMap, Request};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;
use volo_echo::EchoService;

/// A server task; aborted when dropped.
pub struct Running {
    pub addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

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
    Running { addr, task }
}

/// What a raw call saw.
#[derive(Debug)]
pub struct RawResponse {
    pub http_status: http::StatusCode,
    pub headers: HeaderMap,
    /// Every DATA frame's payload, as received.
    pub data_frames: Vec<Bytes>,
    pub trailers: Option<HeaderMap>,
}

impl RawResponse {
    /// `grpc-status` from the trailers, or from the headers of a
    /// trailers-only response.
    pub fn grpc_status(&self) -> Option<i32> {
        self.grpc_header("grpc-status")
            .and_then(|value| value.parse().ok())
    }

    pub fn grpc_message(&self) -> String {
        self.grpc_header("grpc-message").unwrap_or_default()
    }

    fn grpc_header(&self, name: &str) -> Option<String> {
        self.trailers
            .as_ref()
            .and_then(|trailers| trailers.get(name))
            .or_else(|| self.headers.get(name))
            .map(|value| grpc_stream_codec::status::decode_message(value.as_bytes()))
    }

    pub fn body(&self) -> Vec<u8> {
        self.data_frames.concat()
    }
}

/// Calls `method` on the Echo service with a hand-made request body, over
/// a fresh HTTP/2 connection, and reads the whole response.
pub async fn raw_call(
    addr: SocketAddr,
    method: &str,
    extra_headers: &[(&str, &str)],
    body: Bytes,
) -> RawResponse {
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let (client, connection) = h2::client::handshake(tcp).await.expect("h2 handshake");
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let mut client = client.ready().await.expect("h2 ready");
    let mut request = Request::builder()
        .method("POST")
        .uri(format!("http://{addr}/streamcodec.echo.v1.Echo/{method}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    for (name, value) in extra_headers {
        request = request.header(*name, *value);
    }
    let request = request.body(()).expect("request");
    let (response, mut send) = client.send_request(request, false).expect("send request");
    send.send_data(body, true).expect("send body");
    let response = response.await.expect("response headers");
    let (parts, mut body) = response.into_parts();
    let mut data_frames = Vec::new();
    while let Some(frame) = body.data().await {
        let frame = frame.expect("response data");
        let _ = body.flow_control().release_capacity(frame.len());
        data_frames.push(frame);
    }
    let trailers = body.trailers().await.expect("response trailers");
    RawResponse {
        http_status: parts.status,
        headers: parts.headers,
        data_frames,
        trailers,
    }
}

/// A gRPC envelope: flag byte, big-endian length, payload.
pub fn envelope(compressed: bool, payload: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(5 + payload.len());
    out.put_u8(u8::from(compressed));
    out.put_u32(payload.len() as u32);
    out.put_slice(payload);
    out.freeze()
}

/// An `EchoRequest` with only `response_count` and `response_size` set,
/// protobuf-encoded by hand so the raw client depends on no codec.
pub fn server_stream_request(count: u32, size: u32) -> Vec<u8> {
    let mut out = Vec::new();
    for (tag, value) in [(0x10u8, count), (0x18, size)] {
        out.push(tag);
        let mut value = value;
        loop {
            let byte = (value & 0x7f) as u8;
            value >>= 7;
            if value == 0 {
                out.push(byte);
                break;
            }
            out.push(byte | 0x80);
        }
    }
    out
}

/// Splits a response body into its envelopes' payloads, checking each
/// header's flag is 0.
pub fn uncompressed_payloads(body: &[u8]) -> Vec<&[u8]> {
    let mut rest = body;
    let mut payloads = Vec::new();
    while !rest.is_empty() {
        assert!(rest.len() >= 5, "cut envelope header");
        assert_eq!(rest[0], 0, "compressed flag on an uncompressed response");
        let len = u32::from_be_bytes([rest[1], rest[2], rest[3], rest[4]]) as usize;
        payloads.push(&rest[5..5 + len]);
        rest = &rest[5 + len..];
    }
    payloads
}
