//! Stalled ClientStream calls over a raw HTTP/2 client, shared by the
//! budget tests: each sends most of one large message and waits.

#![allow(dead_code)] // each test binary uses part of this

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use h2::SendStream;
use h2::client::ResponseFuture;
use http::Request;
use pilota::pb::Message;
use tokio::net::TcpStream;

/// One stalled ClientStream call: the rest of its message, where to send it,
/// and its response.
pub struct Stalled {
    send: SendStream<Bytes>,
    rest: Bytes,
    response: ResponseFuture,
}

/// The wire of one ClientStream call: an envelope holding one `EchoRequest`
/// whose encoding is `message_len` bytes long.
pub fn request_wire(message_len: usize) -> (Bytes, usize) {
    // payload field: tag 0x0a, varint length, payload.
    let varint_len = |n: usize| (usize::BITS - n.max(1).leading_zeros()).div_ceil(7) as usize;
    let payload_len = (1..=5)
        .map(|v| message_len - 1 - v)
        .find(|&len| 1 + varint_len(len) + len == message_len)
        .expect("a payload length fits");
    let mut request = vec![0x0a];
    let mut value = payload_len;
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            request.push(byte);
            break;
        }
        request.push(byte | 0x80);
    }
    request.resize(message_len, 0x5a);
    let mut wire = vec![0];
    wire.extend_from_slice(&(message_len as u32).to_be_bytes());
    wire.extend_from_slice(&request);
    (Bytes::from(wire), payload_len)
}

/// Opens `streams` ClientStream calls over `connections` connections and
/// sends the first `sent` bytes of each one's wire.
pub async fn open_stalled(
    addr: SocketAddr,
    connections: usize,
    streams: usize,
    wire: &Bytes,
    sent: usize,
) -> Vec<Stalled> {
    let mut clients = Vec::new();
    for _ in 0..connections {
        let tcp = TcpStream::connect(addr).await.expect("connect");
        let (client, connection) = h2::client::handshake(tcp).await.expect("h2 handshake");
        tokio::spawn(async move {
            let _ = connection.await;
        });
        clients.push(client);
    }
    let mut stalled = Vec::with_capacity(streams);
    for i in 0..streams {
        let client = clients[i % connections].clone();
        let mut client = client.ready().await.expect("h2 ready");
        let request = Request::builder()
            .method("POST")
            .uri(format!(
                "http://{addr}/streamcodec.echo.v1.Echo/ClientStream"
            ))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(())
            .expect("request");
        let (response, mut send) = client.send_request(request, false).expect("send request");
        send.send_data(wire.slice(..sent), false)
            .expect("send data");
        stalled.push(Stalled {
            send,
            rest: wire.slice(sent..),
            response,
        });
    }
    stalled
}

/// Sends the rest of every call and checks each answer: status OK, one
/// request of `payload_len` bytes.
pub async fn finish_all(stalled: Vec<Stalled>, payload_len: usize) {
    let mut calls = Vec::new();
    for mut call in stalled {
        call.send.send_data(call.rest, true).expect("send rest");
        calls.push(tokio::spawn(async move {
            let response = call.response.await.expect("response headers");
            let (parts, mut body) = response.into_parts();
            let mut data = Vec::new();
            while let Some(frame) = body.data().await {
                let frame = frame.expect("response data");
                let _ = body.flow_control().release_capacity(frame.len());
                data.extend_from_slice(&frame);
            }
            let trailers = body.trailers().await.expect("trailers");
            let status = trailers
                .as_ref()
                .and_then(|t| t.get("grpc-status"))
                .or_else(|| parts.headers.get("grpc-status"))
                .map(|v| v.to_str().unwrap_or("?").to_string());
            (status, data)
        }));
    }
    for call in calls {
        let (status, data) = call.await.expect("call task");
        assert_eq!(status.as_deref(), Some("0"), "a stalled call failed");
        let reply = volo_echo::adapter::EchoResponse::decode(Bytes::from(data[5..].to_vec()))
            .expect("EchoResponse");
        assert_eq!(reply.count, 1);
        assert_eq!(reply.total_bytes, payload_len as u64);
    }
}

/// A small Unary from a client of its own; returns how long it took.
pub async fn small_unary(addr: SocketAddr) -> Duration {
    let client = volo_echo::adapter::client(addr, None);
    let started = Instant::now();
    volo_echo::adapter::calls::unary(&client, 100)
        .await
        .expect("a small unary while the budget is held");
    started.elapsed()
}
