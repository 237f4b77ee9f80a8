//! A raw HTTP/2 client for the matrix: one call (`ServerStream`, `Unary` or
//! `ClientStream`) at a time per task, over h2 directly, so the bench sees
//! every DATA frame the server sends and times each message as it completes.
//!
//! h2 hands the receiver one chunk per DATA frame (it drops empty frames
//! that do not end the stream, which carry no bytes), so counting chunks
//! counts the frames on the wire. Each message is unframed, decompressed
//! when flagged, decoded with prost and checked (length, `seq`, fill byte),
//! the same work for every arm; an uncompressed `ServerStream` message of
//! 256 KiB or more is read field by field in the frames it arrived in
//! instead, so the client does not copy what the large cells measure.

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
const UNARY_PATH: &str = "/streamcodec.echo.v1.Echo/Unary";

/// The byte every request payload is filled with, so an echo can be checked.
const REQUEST_FILL: u8 = 7;

/// The flow-control windows and frame size a client connection advertises.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Windows {
    /// Initial window of each stream, bytes.
    pub stream: u32,
    /// Window of the connection, bytes.
    pub connection: u32,
    /// `SETTINGS_MAX_FRAME_SIZE`, when not the protocol's 16 KiB.
    pub max_frame: Option<u32>,
}

impl Windows {
    /// hyper's client defaults (what tonic's channel uses), so large
    /// messages are not held back by the 64 KiB protocol default; with
    /// several large streams in flight the client's windows still pace the
    /// server.
    pub const DEFAULT: Windows = Windows {
        stream: 2 * 1024 * 1024,
        connection: 5 * 1024 * 1024,
        max_frame: None,
    };

    /// `bytes` for both windows: wide enough that the server never waits
    /// for a window update, so only the client's CPU can hold it back.
    pub fn wide(bytes: u32, max_frame: Option<u32>) -> Windows {
        Windows {
            stream: bytes,
            connection: bytes,
            max_frame,
        }
    }
}

/// Which Echo method a call uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Call {
    /// `ServerStream`: `count` responses of `size` payload bytes.
    ServerStream,
    /// `ClientStream`: the client sends `count` requests of `size` payload
    /// bytes (uncompressed, all in one body write) and the server answers
    /// with their count; each request counts as a message.
    ClientStream,
    /// `Unary`: one request of `size` payload bytes, echoed back in one
    /// response; the call is one message.
    Unary,
}

impl Call {
    /// Name in the JSON.
    pub fn key(self) -> &'static str {
        match self {
            Call::ServerStream => "server_stream",
            Call::ClientStream => "client_stream",
            Call::Unary => "unary",
        }
    }
}

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
    /// The method called.
    pub call: Call,
}

impl Shape {
    /// Whether this is a `ClientStream` call.
    pub fn client_stream(&self) -> bool {
        self.call == Call::ClientStream
    }
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
pub async fn connect(addr: &str, windows: Windows) -> Result<SendRequest<Bytes>, String> {
    let tcp = TcpStream::connect(addr)
        .await
        .map_err(|err| format!("connect {addr}: {err}"))?;
    let _ = tcp.set_nodelay(true);
    let mut builder = h2::client::Builder::new();
    builder
        .initial_window_size(windows.stream)
        .initial_connection_window_size(windows.connection);
    if let Some(max_frame) = windows.max_frame {
        builder.max_frame_size(max_frame);
    }
    let (send, connection) = builder
        .handshake(tcp)
        .await
        .map_err(|err| format!("HTTP/2 handshake with {addr}: {err}"))?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(send)
}

/// The request body: one uncompressed envelope holding the `EchoRequest`,
/// for a client stream `count` of them with `size`-byte payloads, for a
/// unary call one with a `size`-byte payload.
pub fn request_body(shape: &Shape) -> Bytes {
    let with_payload = || EchoRequest {
        payload: Bytes::from(vec![REQUEST_FILL; shape.size as usize]),
        ..EchoRequest::default()
    };
    let (requests, request) = match shape.call {
        Call::ClientStream => (shape.count.max(1), with_payload()),
        Call::Unary => (1, with_payload()),
        Call::ServerStream => {
            let request = EchoRequest {
                payload: Bytes::new(),
                response_count: shape.count,
                response_size: shape.size,
            };
            (1, request)
        }
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

/// Runs one call of the shape's method and checks every response.
pub async fn call(
    send: &SendRequest<Bytes>,
    authority: &str,
    shape: &Shape,
    body: Bytes,
    observer: &impl Observer,
) -> Result<StreamStats, String> {
    match shape.call {
        Call::ServerStream => server_stream(send, authority, shape, body, observer).await,
        Call::ClientStream => client_stream(send, authority, shape, body, observer).await,
        Call::Unary => unary(send, authority, shape, body, observer).await,
    }
}

/// Runs one `ServerStream` call and checks every response.
async fn server_stream(
    send: &SendRequest<Bytes>,
    authority: &str,
    shape: &Shape,
    body: Bytes,
    observer: &impl Observer,
) -> Result<StreamStats, String> {
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
        while let Some((compressed, message)) = unframer.next()? {
            match message {
                Envelope::Parts(parts) => check_response_parts(&parts, seq, shape.size)?,
                Envelope::Whole(payload) if compressed => {
                    // The response's fields around the payload take under 32 B.
                    let capacity = shape.size as usize + 32;
                    let payload = decompress(encoding.as_deref(), &payload, capacity)?;
                    check_response(&payload, seq, shape.size)?
                }
                Envelope::Whole(payload) => check_response(&payload, seq, shape.size)?,
            }
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
    let (reply, whole_stream) =
        one_response(send, authority, CLIENT_STREAM_PATH, body, observer).await?;
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
    Ok(StreamStats {
        first_message: whole_stream,
        whole_stream,
    })
}

/// Runs one `Unary` call: sends one request of `size` payload bytes and
/// checks the response echoes them.
async fn unary(
    send: &SendRequest<Bytes>,
    authority: &str,
    shape: &Shape,
    body: Bytes,
    observer: &impl Observer,
) -> Result<StreamStats, String> {
    let (reply, whole_stream) = one_response(send, authority, UNARY_PATH, body, observer).await?;
    let payload = &reply.payload;
    // Both ends and the length catch a truncated, shifted or foreign echo
    // without a pass over every byte, as the stream checks do.
    let ends_ok = payload.first().is_none_or(|&b| b == REQUEST_FILL)
        && payload.last().is_none_or(|&b| b == REQUEST_FILL);
    if payload.len() != shape.size as usize || !ends_ok {
        return Err(format!(
            "unary answer: {} bytes (expected {} bytes of {REQUEST_FILL})",
            payload.len(),
            shape.size
        ));
    }
    observer.message(false);
    Ok(StreamStats {
        first_message: whole_stream,
        whole_stream,
    })
}

/// Sends `body` to `path` in one write and reads the one uncompressed
/// response message and `grpc-status: 0`; returns the message and the time
/// from sending the request to the trailers.
async fn one_response(
    send: &SendRequest<Bytes>,
    authority: &str,
    path: &str,
    body: Bytes,
    observer: &impl Observer,
) -> Result<(EchoResponse, Duration), String> {
    let request = Request::post(format!("http://{authority}{path}"))
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
        while let Some((compressed, message)) = unframer.next()? {
            let payload = message.into_bytes();
            if compressed {
                return Err("compressed response to an uncompressed call".into());
            }
            if reply.is_some() {
                return Err("more than one response message".into());
            }
            reply = Some(
                EchoResponse::decode(payload).map_err(|err| format!("decode response: {err}"))?,
            );
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
    let reply = reply.ok_or("no response message")?;
    Ok((reply, started.elapsed()))
}

/// Messages from this size up are not joined into one buffer: the client
/// checks them where they lie, frame by frame, so it does not copy every
/// byte the large cells measure the server sending (a fifth of the client's
/// CPU there). Every matrix cell's messages are under it.
const LARGE_MESSAGE: usize = 256 * 1024;

/// One message of a body.
#[derive(Debug, PartialEq)]
enum Envelope {
    /// Contiguous: the payload within one frame, or joined from several.
    Whole(Bytes),
    /// An uncompressed message of [`LARGE_MESSAGE`] bytes or more, as the
    /// frames brought it.
    Parts(Vec<Bytes>),
}

impl Envelope {
    /// The payload in one buffer (a copy for [`Envelope::Parts`]).
    fn into_bytes(self) -> Bytes {
        match self {
            Envelope::Whole(bytes) => bytes,
            Envelope::Parts(parts) => {
                let mut joined = BytesMut::with_capacity(parts.iter().map(Bytes::len).sum());
                for part in parts {
                    joined.extend_from_slice(&part);
                }
                joined.freeze()
            }
        }
    }
}

/// Splits a body into gRPC messages across DATA frames without copying a
/// message that arrives within one frame, nor a large one.
#[derive(Default)]
struct Unframer {
    /// Bytes of an incomplete message carried over from earlier frames.
    pending: BytesMut,
    /// The current frame's bytes not yet split off.
    current: Bytes,
    /// The payload so far of an incomplete large message.
    parts: Vec<Bytes>,
    /// While one is incomplete or not yet taken: its bytes still to come.
    large_missing: Option<usize>,
}

impl Unframer {
    fn push(&mut self, mut chunk: Bytes) {
        if let Some(missing) = self.large_missing {
            let take = missing.min(chunk.len());
            self.parts.push(chunk.split_to(take));
            self.large_missing = Some(missing - take);
            // What follows starts the next message; the caller takes every
            // message after each push, so nothing else is held here.
            self.current = chunk;
        } else if self.pending.is_empty() && self.current.is_empty() {
            self.current = chunk;
        } else {
            self.pending.extend_from_slice(&self.current);
            self.pending.extend_from_slice(&chunk);
            self.current = Bytes::new();
            self.reserve_message();
        }
    }

    /// Makes room for the rest of the pending message at once: grown frame
    /// by frame, a message would be copied again at every doubling.
    fn reserve_message(&mut self) {
        if let Some((_, len)) = header(&self.pending) {
            let missing = (5 + len).saturating_sub(self.pending.len());
            // A large message leaves `pending` for `parts` (or, compressed,
            // is left to grow as it arrives rather than trusted with one
            // allocation of what its header claims).
            if len < LARGE_MESSAGE {
                self.pending.reserve(missing);
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.pending.is_empty() && self.current.is_empty() && self.large_missing.is_none()
    }

    /// The next complete message (compressed flag, payload), if any, in one
    /// buffer.
    #[cfg(test)]
    fn next_message(&mut self) -> Result<Option<(bool, Bytes)>, String> {
        Ok(self
            .next()?
            .map(|(compressed, message)| (compressed, message.into_bytes())))
    }

    /// The next complete message (compressed flag, payload), if any.
    fn next(&mut self) -> Result<Option<(bool, Envelope)>, String> {
        if let Some(missing) = self.large_missing {
            if missing > 0 {
                return Ok(None);
            }
            self.large_missing = None;
            return Ok(Some((
                false,
                Envelope::Parts(std::mem::take(&mut self.parts)),
            )));
        }
        if !self.pending.is_empty() {
            let Some((flag, len)) = header(&self.pending) else {
                return Ok(None);
            };
            if self.pending.len() < 5 + len {
                if flag == 0 && len >= LARGE_MESSAGE {
                    self.pending.advance(5);
                    let first = self.pending.split().freeze();
                    self.start_large(first, len);
                }
                return Ok(None);
            }
            self.pending.advance(5);
            let payload = self.pending.split_to(len).freeze();
            return Ok(Some((check_flag(flag)?, Envelope::Whole(payload))));
        }
        let Some((flag, len)) = header(&self.current) else {
            self.keep_rest();
            return Ok(None);
        };
        if self.current.len() < 5 + len {
            if flag == 0 && len >= LARGE_MESSAGE {
                self.current.advance(5);
                let first = std::mem::take(&mut self.current);
                self.start_large(first, len);
            } else {
                self.keep_rest();
            }
            return Ok(None);
        }
        self.current.advance(5);
        let payload = self.current.split_to(len);
        Ok(Some((check_flag(flag)?, Envelope::Whole(payload))))
    }

    /// Collects a large message of `len` payload bytes from `first`, its
    /// first ones, on.
    fn start_large(&mut self, first: Bytes, len: usize) {
        self.large_missing = Some(len - first.len());
        self.parts.push(first);
    }

    fn keep_rest(&mut self) {
        self.pending.extend_from_slice(&self.current);
        self.current = Bytes::new();
        self.reserve_message();
    }
}

/// Reads an encoded message across the frames it arrived in.
struct Cursor<'a> {
    parts: &'a [Bytes],
    part: usize,
    /// Offset in `parts[part]`; past its end after a skip, until settled.
    at: usize,
}

impl<'a> Cursor<'a> {
    fn new(parts: &'a [Bytes]) -> Cursor<'a> {
        Cursor {
            parts,
            part: 0,
            at: 0,
        }
    }

    fn settle(&mut self) {
        while let Some(part) = self.parts.get(self.part) {
            if self.at < part.len() {
                break;
            }
            self.at -= part.len();
            self.part += 1;
        }
    }

    /// Whether every byte was read; an error if a skip went past the end.
    fn at_end(&mut self) -> Result<bool, String> {
        self.settle();
        match (self.part >= self.parts.len(), self.at) {
            (false, _) => Ok(false),
            (true, 0) => Ok(true),
            (true, _) => Err("message ends inside a field".into()),
        }
    }

    fn byte(&mut self) -> Result<u8, String> {
        self.settle();
        let byte = self
            .parts
            .get(self.part)
            .and_then(|part| part.get(self.at))
            .copied()
            .ok_or("message ends inside a field")?;
        self.at += 1;
        Ok(byte)
    }

    fn skip(&mut self, len: usize) {
        self.at += len;
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut value = 0u64;
        for shift in 0..10 {
            let byte = self.byte()?;
            value |= u64::from(byte & 0x7f) << (7 * shift);
            if byte < 0x80 {
                return Ok(value);
            }
        }
        Err("varint longer than 10 bytes".into())
    }
}

/// [`check_response`] on a message that stayed in its frames: the same
/// fields read from the same bytes (`EchoResponse`'s wire format, the last
/// of a repeated field winning, as prost decodes it), without joining them.
fn check_response_parts(parts: &[Bytes], seq: u32, size: u32) -> Result<(), String> {
    let mut cursor = Cursor::new(parts);
    let (mut got_seq, mut len, mut ends) = (0u64, 0usize, None);
    while !cursor.at_end()? {
        let key = cursor.varint()?;
        match (key >> 3, key & 7) {
            // payload
            (1, 2) => {
                len = usize::try_from(cursor.varint()?).map_err(|err| err.to_string())?;
                ends = None;
                if len > 0 {
                    let first = cursor.byte()?;
                    let last = if len > 1 {
                        cursor.skip(len - 2);
                        cursor.byte()?
                    } else {
                        first
                    };
                    ends = Some((first, last));
                }
            }
            // seq
            (2, 0) => got_seq = cursor.varint()?,
            // total_bytes, count
            (3 | 4, 0) => {
                cursor.varint()?;
            }
            (field, wire) => {
                return Err(format!(
                    "decode response: field {field} of wire type {wire}"
                ));
            }
        }
    }
    let fill = (seq % 251) as u8;
    let ends_ok = ends.is_none_or(|(first, last)| first == fill && last == fill);
    if got_seq != u64::from(seq) || len != size as usize || !ends_ok {
        return Err(format!(
            "response {seq}: seq {got_seq}, {len} bytes (expected {size} bytes of {fill})"
        ));
    }
    Ok(())
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

    /// A unary call's body is one envelope whose request carries `size`
    /// bytes of the fill the echo is checked against, and asks for no
    /// stream.
    #[test]
    fn unary_request_is_one_envelope_with_the_payload() {
        let shape = Shape {
            size: 100,
            count: 1,
            compression: None,
            pace_micros: 0,
            call: Call::Unary,
        };
        let mut unframer = Unframer::default();
        unframer.push(request_body(&shape));
        let (compressed, message) = unframer.next_message().unwrap().unwrap();
        assert!(!compressed && unframer.is_empty());
        let request = EchoRequest::decode(message).unwrap();
        assert_eq!(request.payload, vec![REQUEST_FILL; 100]);
        assert_eq!((request.response_count, request.response_size), (0, 0));
    }

    /// A message over many frames comes out whole, and its buffer is
    /// reserved once its header is in rather than grown frame by frame.
    #[test]
    fn unframer_reserves_a_message_once() {
        let payload = vec![3u8; LARGE_MESSAGE - 1];
        let wire = Bytes::from(envelope(&payload));
        let mut unframer = Unframer::default();
        let mut capacity = None;
        let mut messages = Vec::new();
        for frame in wire.chunks(16 * 1024) {
            unframer.push(Bytes::copy_from_slice(frame));
            while let Some((_, message)) = unframer.next().unwrap() {
                messages.push(message);
            }
            if !unframer.pending.is_empty() {
                let now = unframer.pending.capacity();
                assert!(now >= wire.len());
                assert_eq!(*capacity.get_or_insert(now), now, "grew after the header");
            }
        }
        assert_eq!(messages, [Envelope::Whole(Bytes::from(payload))]);
    }

    /// A large uncompressed message comes out as the frames it arrived in,
    /// whatever the cuts, and what follows it in its last frame comes out
    /// after it.
    #[test]
    fn unframer_hands_out_a_large_message_in_its_frames() {
        let large: Vec<u8> = (0..LARGE_MESSAGE + 3).map(|i| i as u8).collect();
        let mut wire = envelope(&large);
        wire.extend(envelope(b"after"));
        let cuts = (0..12).chain([LARGE_MESSAGE, wire.len() - 11, wire.len() - 1]);
        for cut in cuts {
            for frame in [16 * 1024, cut.max(1)] {
                let mut unframer = Unframer::default();
                let mut messages = Vec::new();
                for part in [&wire[..cut], &wire[cut..]] {
                    for chunk in part.chunks(frame) {
                        unframer.push(Bytes::copy_from_slice(chunk));
                        while let Some(message) = unframer.next().unwrap() {
                            messages.push(message);
                        }
                    }
                }
                assert!(unframer.is_empty(), "cut at {cut}");
                assert_eq!(messages.len(), 2, "cut at {cut}");
                let (compressed, first) = messages.remove(0);
                assert!(!compressed);
                // Within its first chunk it needs no joining and stays whole.
                let first_chunk = if cut == 0 { wire.len() } else { cut }.min(frame);
                let spans_chunks = first_chunk < 5 + large.len();
                assert_eq!(matches!(first, Envelope::Parts(_)), spans_chunks);
                assert_eq!(first.into_bytes(), large, "cut at {cut}");
                assert_eq!(
                    messages[0],
                    (false, Envelope::Whole(Bytes::from_static(b"after")))
                );
            }
        }
    }

    /// Reading a response in its frames accepts and refuses exactly what
    /// decoding it with prost does.
    #[test]
    fn checks_in_frames_agree_with_prost() {
        let response = |seq: u32, len: usize, fill: u8| EchoResponse {
            payload: Bytes::from(vec![fill; len]),
            seq,
            total_bytes: 9,
            count: 0,
        };
        let cases = [
            response(3, 300, 3),
            response(3, 1, 3),
            response(0, 0, 0),
            response(4, 300, 3),
            response(3, 299, 3),
            response(3, 300, 4),
        ];
        let encoded = Bytes::from(cases[0].encode_to_vec());
        assert!(check_response_parts(std::slice::from_ref(&encoded), 3, 300).is_ok());
        assert!(check_response_parts(&[encoded], 4, 300).is_err());
        for message in cases {
            let encoded = Bytes::from(message.encode_to_vec());
            for cut in 0..=encoded.len() {
                for size in [300, message.payload.len() as u32] {
                    let parts = [encoded.slice(..cut), encoded.slice(cut..)];
                    assert_eq!(
                        check_response_parts(&parts, 3, size).is_ok(),
                        check_response(&encoded, 3, size).is_ok(),
                        "{message:?} cut at {cut}, size {size}"
                    );
                }
            }
            // Cut short anywhere: inside a field both refuse it, at a field's
            // end both read the fields before.
            for cut in 0..encoded.len() {
                let short = encoded.slice(..cut);
                assert_eq!(
                    check_response_parts(std::slice::from_ref(&short), 3, 300).is_ok(),
                    check_response(&short, 3, 300).is_ok(),
                    "{message:?} cut short at {cut}"
                );
            }
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
