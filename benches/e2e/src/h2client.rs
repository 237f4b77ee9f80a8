//! A raw HTTP/2 client for the matrix: one `ServerStream` call at a time per
//! task, over h2 directly, so the bench sees every DATA frame the server
//! sends and times each message as it completes.
//!
//! h2 hands the receiver one chunk per DATA frame (it drops empty frames
//! that do not end the stream, which carry no bytes), so counting chunks
//! counts the frames on the wire. Each message is unframed, decompressed
//! when flagged, decoded with prost and checked (length, `seq`, fill byte),
//! the same work for every arm.

use std::io::Read;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use h2::client::SendRequest;
use http::{HeaderValue, Request};
use prost::Message;
use tokio::net::TcpStream;

use crate::proto::{EchoRequest, EchoResponse};

const SERVER_STREAM_PATH: &str = "/streamcodec.echo.v1.Echo/ServerStream";
const CLIENT_STREAM_PATH: &str = "/streamcodec.echo.v1.Echo/ClientStream";

/// Window sizes of the client's connections: hyper's client defaults (what
/// tonic's channel uses), so large messages are not held back by the 64 KiB
/// protocol default.
const STREAM_WINDOW: u32 = 2 * 1024 * 1024;
const CONNECTION_WINDOW: u32 = 5 * 1024 * 1024;

/// Compression the client asks for (`grpc-accept-encoding`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// gzip.
    Gzip,
    /// zstd.
    Zstd,
}

impl Encoding {
    /// The gRPC name.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Gzip => "gzip",
            Encoding::Zstd => "zstd",
        }
    }
}

/// What one call asks the server for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shape {
    /// Payload bytes of each response.
    pub size: u32,
    /// Responses per stream.
    pub count: u32,
    /// Responses compressed with this.
    pub compression: Option<Encoding>,
    /// `x-pace-micros`: the server produces one response every this many µs.
    pub pace_micros: u32,
    /// A `ClientStream` call instead: the client sends `count` requests of
    /// `size` payload bytes (uncompressed, all in one body write) and the
    /// server answers with their count; each request counts as a message.
    pub client_stream: bool,
}

/// What one completed call saw.
#[derive(Clone, Copy, Debug)]
pub struct StreamStats {
    /// From sending the request to the first complete response message.
    pub first_message: Duration,
    /// From sending the request to the trailers (`grpc-status: 0`).
    pub whole_stream: Duration,
}

/// Per-call counters the caller accumulates while it measures.
pub trait Observer {
    /// A DATA frame carrying bytes arrived.
    fn data_frame(&self);
    /// A complete response message arrived; `compressed` is its flag.
    fn message(&self, compressed: bool);
}

/// Opens one HTTP/2 connection (one TCP connection, `TCP_NODELAY`).
pub async fn connect(addr: &str) -> Result<SendRequest<Bytes>, String> {
    let tcp = TcpStream::connect(addr)
        .await
        .map_err(|err| format!("connect {addr}: {err}"))?;
    let _ = tcp.set_nodelay(true);
    let (send, connection) = h2::client::Builder::new()
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .handshake(tcp)
        .await
        .map_err(|err| format!("HTTP/2 handshake with {addr}: {err}"))?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(send)
}

/// The request body: one uncompressed envelope holding the `EchoRequest`,
/// or for a client stream `count` of them with `size`-byte payloads.
pub fn request_body(shape: &Shape) -> Bytes {
    let (requests, request) = if shape.client_stream {
        let request = EchoRequest {
            payload: Bytes::from(vec![7u8; shape.size as usize]),
            ..EchoRequest::default()
        };
        (shape.count.max(1), request)
    } else {
        let request = EchoRequest {
            payload: Bytes::new(),
            response_count: shape.count,
            response_size: shape.size,
        };
        (1, request)
    };
    let len = request.encoded_len();
    let mut body = Vec::with_capacity((5 + len) * requests as usize);
    for _ in 0..requests {
        body.push(0);
        body.extend_from_slice(&(len as u32).to_be_bytes());
        // A Vec grows as needed, so encoding cannot fail.
        let _ = request.encode(&mut body);
    }
    Bytes::from(body)
}

/// Runs one `ServerStream` call (or `ClientStream`, for a shape that says
/// so) and checks every response.
pub async fn server_stream(
    send: &SendRequest<Bytes>,
    authority: &str,
    shape: &Shape,
    body: Bytes,
    observer: &impl Observer,
) -> Result<StreamStats, String> {
    if shape.client_stream {
        return client_stream(send, authority, shape, body, observer).await;
    }
    let mut request = Request::post(format!("http://{authority}{SERVER_STREAM_PATH}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    if let Some(encoding) = shape.compression {
        request = request.header("grpc-accept-encoding", encoding.name());
    }
    if shape.pace_micros > 0 {
        request = request.header("x-pace-micros", HeaderValue::from(shape.pace_micros));
    }
    let request = request.body(()).map_err(|err| err.to_string())?;

    let started = Instant::now();
    let mut send = send
        .clone()
        .ready()
        .await
        .map_err(|err| format!("connection not ready: {err}"))?;
    let (response, mut request_stream) = send
        .send_request(request, false)
        .map_err(|err| format!("send request: {err}"))?;
    request_stream
        .send_data(body, true)
        .map_err(|err| format!("send request body: {err}"))?;
    let response = response
        .await
        .map_err(|err| format!("response headers: {err}"))?;
    if let Some(status) = response.headers().get("grpc-status") {
        return Err(format!("trailers-only answer, grpc-status {status:?}"));
    }
    let encoding = response
        .headers()
        .get("grpc-encoding")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let mut body = response.into_body();
    let mut unframer = Unframer::default();
    let mut first_message = None;
    let mut seq = 0u32;
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(|err| format!("response body: {err}"))?;
        let _ = body.flow_control().release_capacity(chunk.len());
        observer.data_frame();
        unframer.push(chunk);
        while let Some((compressed, payload)) = unframer.next_message()? {
            let payload = if compressed {
                // The response's fields around the payload take under 32 B.
                decompress(encoding.as_deref(), &payload, shape.size as usize + 32)?
            } else {
                payload
            };
            check_response(&payload, seq, shape.size)?;
            observer.message(compressed);
            seq += 1;
            first_message.get_or_insert_with(|| started.elapsed());
        }
    }
    if !unframer.is_empty() {
        return Err("the body ended inside a message".into());
    }
    let trailers = body
        .trailers()
        .await
        .map_err(|err| format!("trailers: {err}"))?
        .ok_or("no trailers")?;
    let status = trailers
        .get("grpc-status")
        .and_then(|value| value.to_str().ok());
    if status != Some("0") {
        return Err(format!("grpc-status {status:?}"));
    }
    if seq != shape.count.max(1) {
        return Err(format!("{seq} responses, expected {}", shape.count.max(1)));
    }
    let whole_stream = started.elapsed();
    Ok(StreamStats {
        first_message: first_message.unwrap_or(whole_stream),
        whole_stream,
    })
}

/// Runs one `ClientStream` call: sends `body` (the shape's requests), then
/// checks the one response counts them all. Each request counts as a
/// message when the response confirms it.
async fn client_stream(
    send: &SendRequest<Bytes>,
    authority: &str,
    shape: &Shape,
    body: Bytes,
    observer: &impl Observer,
) -> Result<StreamStats, String> {
    let request = Request::post(format!("http://{authority}{CLIENT_STREAM_PATH}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())
        .map_err(|err| err.to_string())?;
    let started = Instant::now();
    let mut send = send
        .clone()
        .ready()
        .await
        .map_err(|err| format!("connection not ready: {err}"))?;
    let (response, mut request_stream) = send
        .send_request(request, false)
        .map_err(|err| format!("send request: {err}"))?;
    // h2 queues what the stream's window cannot take yet and sends it as
    // the server opens the window.
    request_stream
        .send_data(body, true)
        .map_err(|err| format!("send request body: {err}"))?;
    let response = response
        .await
        .map_err(|err| format!("response headers: {err}"))?;
    if let Some(status) = response.headers().get("grpc-status") {
        return Err(format!("trailers-only answer, grpc-status {status:?}"));
    }
    let mut body = response.into_body();
    let mut unframer = Unframer::default();
    let mut reply = None;
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(|err| format!("response body: {err}"))?;
        let _ = body.flow_control().release_capacity(chunk.len());
        observer.data_frame();
        unframer.push(chunk);
        while let Some((_, payload)) = unframer.next_message()? {
            reply = Some(
                EchoResponse::decode(payload).map_err(|err| format!("decode response: {err}"))?,
            );
        }
    }
    let trailers = body
        .trailers()
        .await
        .map_err(|err| format!("trailers: {err}"))?
        .ok_or("no trailers")?;
    let status = trailers
        .get("grpc-status")
        .and_then(|value| value.to_str().ok());
    if status != Some("0") {
        return Err(format!("grpc-status {status:?}"));
    }
    let reply = reply.ok_or("no response message")?;
    let count = shape.count.max(1);
    if reply.count != count || reply.total_bytes != u64::from(count) * u64::from(shape.size) {
        return Err(format!(
            "client stream answer: count {}, {} bytes (expected {count} of {} bytes)",
            reply.count, reply.total_bytes, shape.size
        ));
    }
    for _ in 0..count {
        observer.message(false);
    }
    let whole_stream = started.elapsed();
    Ok(StreamStats {
        first_message: whole_stream,
        whole_stream,
    })
}

/// Splits a body into gRPC messages across DATA frames without copying a
/// message that arrives within one frame.
#[derive(Default)]
struct Unframer {
    /// Bytes of an incomplete message carried over from earlier frames.
    pending: BytesMut,
    /// The current frame's bytes not yet split off.
    current: Bytes,
}

impl Unframer {
    fn push(&mut self, chunk: Bytes) {
        if self.pending.is_empty() && self.current.is_empty() {
            self.current = chunk;
        } else {
            self.pending.extend_from_slice(&self.current);
            self.pending.extend_from_slice(&chunk);
            self.current = Bytes::new();
        }
    }

    fn is_empty(&self) -> bool {
        self.pending.is_empty() && self.current.is_empty()
    }

    /// The next complete message (compressed flag, payload), if any.
    fn next_message(&mut self) -> Result<Option<(bool, Bytes)>, String> {
        if !self.pending.is_empty() {
            let Some((flag, len)) = header(&self.pending) else {
                return Ok(None);
            };
            if self.pending.len() < 5 + len {
                return Ok(None);
            }
            self.pending.advance(5);
            let payload = self.pending.split_to(len).freeze();
            return Ok(Some((check_flag(flag)?, payload)));
        }
        let Some((flag, len)) = header(&self.current) else {
            self.keep_rest();
            return Ok(None);
        };
        if self.current.len() < 5 + len {
            self.keep_rest();
            return Ok(None);
        }
        self.current.advance(5);
        let payload = self.current.split_to(len);
        Ok(Some((check_flag(flag)?, payload)))
    }

    fn keep_rest(&mut self) {
        self.pending.extend_from_slice(&self.current);
        self.current = Bytes::new();
    }
}

fn header(bytes: &[u8]) -> Option<(u8, usize)> {
    let header: &[u8; 5] = bytes.get(..5)?.try_into().ok()?;
    let len = u32::from_be_bytes([header[1], header[2], header[3], header[4]]);
    Some((header[0], len as usize))
}

fn check_flag(flag: u8) -> Result<bool, String> {
    match flag {
        0 => Ok(false),
        1 => Ok(true),
        other => Err(format!("bad message flag {other:#x}")),
    }
}

thread_local! {
    static ZSTD: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// Decompresses one message of at most `capacity` bytes.
fn decompress(encoding: Option<&str>, payload: &[u8], capacity: usize) -> Result<Bytes, String> {
    let mut out = Vec::new();
    match encoding {
        Some("gzip") => {
            flate2::read::GzDecoder::new(payload)
                .read_to_end(&mut out)
                .map_err(|err| format!("gzip: {err}"))?;
        }
        Some("zstd") => {
            // One context per client thread: a fresh one per message would
            // make the client's zstd set-up cost the largest term in its CPU.
            out = ZSTD.with(|cell| {
                let mut slot = cell.borrow_mut();
                if slot.is_none() {
                    *slot = Some(zstd::bulk::Decompressor::new().map_err(|e| e.to_string())?);
                }
                let decompressor = slot.as_mut().ok_or("no zstd context")?;
                decompressor
                    .decompress(payload, capacity)
                    .map_err(|err| format!("zstd: {err}"))
            })?;
        }
        other => return Err(format!("compressed message with grpc-encoding {other:?}")),
    }
    Ok(Bytes::from(out))
}

/// The checks every arm's responses pass: the decoded message has the right
/// `seq`, length, and the fill byte `seq % 251` at both ends.
fn check_response(payload: &Bytes, seq: u32, size: u32) -> Result<(), String> {
    let response =
        EchoResponse::decode(payload.clone()).map_err(|err| format!("decode response: {err}"))?;
    let fill = (seq % 251) as u8;
    let ends_ok = response.payload.first().is_none_or(|&b| b == fill)
        && response.payload.last().is_none_or(|&b| b == fill);
    if response.seq != seq || response.payload.len() != size as usize || !ends_ok {
        return Err(format!(
            "response {seq}: seq {}, {} bytes (expected {size} bytes of {fill})",
            response.seq,
            response.payload.len()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope(payload: &[u8]) -> Vec<u8> {
        let mut out = vec![0];
        out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        out.extend_from_slice(payload);
        out
    }

    /// Messages split across frames at every possible point come out whole
    /// and in order.
    #[test]
    fn unframer_reassembles_messages_split_anywhere() {
        let mut wire = envelope(b"first message");
        wire.extend(envelope(b""));
        wire.extend(envelope(&[7u8; 300]));
        for cut in 0..=wire.len() {
            let mut unframer = Unframer::default();
            let mut messages = Vec::new();
            for part in [&wire[..cut], &wire[cut..]] {
                unframer.push(Bytes::copy_from_slice(part));
                while let Some((compressed, payload)) = unframer.next_message().unwrap() {
                    assert!(!compressed);
                    messages.push(payload);
                }
            }
            assert!(unframer.is_empty(), "cut at {cut}");
            assert_eq!(messages.len(), 3, "cut at {cut}");
            assert_eq!(&messages[0][..], b"first message");
            assert!(messages[1].is_empty());
            assert_eq!(&messages[2][..], &[7u8; 300][..]);
        }
    }

    /// A reserved flag bit is an error, not a message.
    #[test]
    fn unframer_refuses_reserved_flags() {
        let mut unframer = Unframer::default();
        unframer.push(Bytes::from_static(&[0x02, 0, 0, 0, 0]));
        assert!(unframer.next_message().is_err());
    }
}
