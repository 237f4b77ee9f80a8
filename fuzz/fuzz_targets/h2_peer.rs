//! The hostile HTTP/2 peer shared by the four adapter targets (`tonic_server`,
//! `tonic_client`, `volo_server`, `volo_client`): the fuzz input, read as a
//! script, becomes one request (for a server target) or one response (for a
//! client target) written with `h2` — arbitrary header blocks (names from a
//! list of the ones gRPC, volo-grpc and tonic read, `-bin` ones, `te`,
//! `content-type`, or made-up names; arbitrary values), DATA frames holding
//! valid envelopes, envelopes with lying lengths or reserved flags, or raw
//! bytes, then trailers, a reset, or a plain end.
//!
//! Every read of the input is total: past its end, bytes read as 0.
//!
//! A target asserts nothing about the answer: the property is that nothing
//! panics. libfuzzer-sys aborts the process on a panic in any thread, so a
//! panic in a task the framework spawned (which tokio would otherwise catch)
//! is found too. Each run has a time limit; a peer that stalls the call is
//! not a finding.

#![allow(dead_code)] // each target uses its side of the script

use std::sync::OnceLock;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Request, Response, StatusCode};
use tokio::io::DuplexStream;

/// The input, read front to back.
pub struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Input { data }
    }

    pub fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&first, rest)) => {
                self.data = rest;
                first
            }
            None => 0,
        }
    }

    pub fn bytes(&mut self, len: usize) -> &'a [u8] {
        let len = len.min(self.data.len());
        let (head, rest) = self.data.split_at(len);
        self.data = rest;
        head
    }

    pub fn u32(&mut self) -> u32 {
        u32::from_be_bytes([self.byte(), self.byte(), self.byte(), self.byte()])
    }
}

/// Header names a gRPC server or client reads, or that are known to trip
/// one (volo-grpc's metainfo prefixes, `-bin` metadata, `grpc-*`).
const NAMES: &[&str] = &[
    "content-type",
    "te",
    "grpc-encoding",
    "grpc-accept-encoding",
    "grpc-timeout",
    "grpc-status",
    "grpc-message",
    "grpc-status-details-bin",
    "x-trace-bin",
    "x-echo-bin",
    "x-plain",
    "rpc-persist-key",
    "rpc-transit-key",
    "rpc-backward-key",
    "source-service",
    "destination-service",
    "destination-method",
    "rip",
    "user-agent",
    "x-fail-after",
    "x-pace-micros",
    "x-response-encoding",
    "content-length",
];

/// Values worth more than random bytes for some of the names above.
const VALUES: &[&str] = &[
    "application/grpc",
    "application/grpc+proto",
    "application/json",
    "trailers",
    "gzip",
    "deflate",
    "zstd",
    "identity",
    "zlib",
    "gzip,deflate,zstd",
    "0",
    "13",
    "99",
    "-1",
    "1S",
    "100m",
    "99999999H",
    "AAEC",
    "AQ==",
    "%%not*base64%%",
    "A",
    "%41%zz",
    "127.0.0.1:1",
];

fn header_name(input: &mut Input<'_>) -> Option<HeaderName> {
    let selector = input.byte();
    if selector < 224 {
        return Some(HeaderName::from_static(
            NAMES[selector as usize % NAMES.len()],
        ));
    }
    let len = input.byte() as usize % 16;
    let mut name = input.bytes(len).to_ascii_lowercase();
    if selector & 1 == 1 {
        name.extend_from_slice(b"-bin");
    }
    HeaderName::from_bytes(&name).ok()
}

fn header_value(input: &mut Input<'_>) -> Option<HeaderValue> {
    let selector = input.byte();
    if selector < 128 {
        return Some(HeaderValue::from_static(
            VALUES[selector as usize % VALUES.len()],
        ));
    }
    let len = input.byte() as usize % 32;
    HeaderValue::from_bytes(input.bytes(len)).ok()
}

/// Up to 7 headers.
pub fn headers(input: &mut Input<'_>) -> HeaderMap {
    let mut map = HeaderMap::new();
    for _ in 0..input.byte() % 8 {
        if let (Some(name), Some(value)) = (header_name(input), header_value(input)) {
            map.append(name, value);
        }
    }
    map
}

/// One DATA frame's payload.
pub fn data(input: &mut Input<'_>) -> Bytes {
    let kind = input.byte() % 5;
    let len = input.byte() as usize % 48;
    let payload = input.bytes(len);
    let mut frame = Vec::with_capacity(len + 5);
    match kind {
        // A valid uncompressed envelope of whatever bytes.
        0 => {
            frame.push(0);
            frame.extend_from_slice(&(payload.len() as u32).to_be_bytes());
            frame.extend_from_slice(payload);
        }
        // An envelope of an EchoRequest/EchoResponse with a `payload` field.
        1 => {
            let mut message = vec![0x0a, payload.len() as u8];
            message.extend_from_slice(payload);
            frame.push(0);
            frame.extend_from_slice(&(message.len() as u32).to_be_bytes());
            frame.extend_from_slice(&message);
        }
        // Any flag byte and declared length.
        2 => {
            frame.push(input.byte());
            frame.extend_from_slice(&input.u32().to_be_bytes());
            frame.extend_from_slice(payload);
        }
        // A compressed flag on a valid length.
        3 => {
            frame.push(1);
            frame.extend_from_slice(&(payload.len() as u32).to_be_bytes());
            frame.extend_from_slice(payload);
        }
        // Raw bytes.
        _ => frame.extend_from_slice(payload),
    }
    Bytes::from(frame)
}

/// How a stream's sender ends it.
pub enum End {
    /// END_STREAM on the last DATA frame (or an empty one).
    Data,
    /// Trailers.
    Trailers(HeaderMap),
    /// RST_STREAM with this reason.
    Reset(h2::Reason),
}

pub fn end(input: &mut Input<'_>) -> End {
    match input.byte() % 3 {
        0 => End::Data,
        1 => End::Trailers(headers(input)),
        _ => End::Reset(h2::Reason::from(u32::from(input.byte() % 14))),
    }
}

/// Sends up to 3 DATA frames, then ends the stream as the script says.
pub fn send_body(input: &mut Input<'_>, send: &mut h2::SendStream<Bytes>) {
    for _ in 0..input.byte() % 4 {
        let chunk = data(input);
        if send.send_data(chunk, false).is_err() {
            return;
        }
    }
    let _ = match end(input) {
        End::Data => send.send_data(Bytes::new(), true),
        End::Trailers(trailers) => send.send_trailers(trailers),
        End::Reset(reason) => {
            send.send_reset(reason);
            Ok(())
        }
    };
}

/// The Echo service's methods, and a few paths that are not.
const PATHS: &[&str] = &[
    "/streamcodec.echo.v1.Echo/Unary",
    "/streamcodec.echo.v1.Echo/ServerStream",
    "/streamcodec.echo.v1.Echo/ClientStream",
    "/streamcodec.echo.v1.Echo/Bidi",
    "/streamcodec.echo.v1.Echo/Nope",
    "/other.Service/Unary",
];

/// Plays a hostile client on `io` against a server: one request, read to
/// its end (or until the server stops answering).
pub async fn client_side(io: DuplexStream, input: &mut Input<'_>) {
    let Ok((client, connection)) = h2::client::handshake(io).await else {
        return;
    };
    let connection = tokio::spawn(async move {
        let _ = connection.await;
    });
    if let Ok(mut client) = client.ready().await {
        let path = PATHS[input.byte() as usize % PATHS.len()];
        let mut request = Request::new(());
        *request.method_mut() = http::Method::POST;
        *request.uri_mut() = format!("http://fuzz{path}").parse().unwrap_or_default();
        let flags = input.byte();
        if flags & 1 == 0 {
            request
                .headers_mut()
                .insert("content-type", HeaderValue::from_static("application/grpc"));
        }
        if flags & 2 == 0 {
            request
                .headers_mut()
                .insert("te", HeaderValue::from_static("trailers"));
        }
        for (name, value) in headers(input) {
            if let Some(name) = name {
                request.headers_mut().append(name, value);
            }
        }
        if let Ok((response, mut send)) = client.send_request(request, false) {
            send_body(input, &mut send);
            if let Ok(response) = response.await {
                read_to_end(response.into_body()).await;
            }
        }
    }
    connection.abort();
}

async fn read_to_end(mut body: h2::RecvStream) {
    while let Some(Ok(chunk)) = body.data().await {
        let _ = body.flow_control().release_capacity(chunk.len());
    }
    let _ = body.trailers().await;
}

/// Plays a hostile server on `io` against a client: answers the first
/// request as the script says. Returns the tasks that keep the connection
/// going, for the caller to abort once the client is done.
pub async fn server_side(
    io: impl tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    input: &mut Input<'_>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let Ok(mut connection) = h2::server::handshake(io).await else {
        return Vec::new();
    };
    let Some(Ok((request, mut respond))) = connection.accept().await else {
        return Vec::new();
    };
    // Drives the connection (refusing any further stream) while the script
    // answers and the client reads.
    let driver = tokio::spawn(async move {
        while let Some(Ok((_, mut respond))) = connection.accept().await {
            respond.send_reset(h2::Reason::REFUSED_STREAM);
        }
    });
    let reader = tokio::spawn(read_to_end(request.into_body()));
    let status = match input.byte() {
        0..=239 => StatusCode::OK,
        code => StatusCode::from_u16(100 + u16::from(code) * 2).unwrap_or(StatusCode::OK),
    };
    let mut response = Response::new(());
    *response.status_mut() = status;
    let flags = input.byte();
    if flags & 1 == 0 {
        response
            .headers_mut()
            .insert("content-type", HeaderValue::from_static("application/grpc"));
    }
    for (name, value) in headers(input) {
        if let Some(name) = name {
            response.headers_mut().append(name, value);
        }
    }
    // Trailers-only: the headers end the stream.
    let trailers_only = flags & 2 == 2;
    if let Ok(mut send) = respond.send_response(response, trailers_only)
        && !trailers_only
    {
        send_body(input, &mut send);
    }
    vec![driver, reader]
}

/// The runtime every run of a target uses.
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime")
    })
}

/// How long one run may take; a peer that stalls a call is not a finding.
pub const RUN_LIMIT: Duration = Duration::from_millis(500);
