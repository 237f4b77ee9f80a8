//! A raw HTTP/2 gRPC peer: hand-made bodies over `h2`, no gRPC framework in
//! between, so a test can send (or answer) what no well-behaved peer would,
//! and see the wire as it is (frames, bytes, trailers).
//!
//! Setup failures (connect, handshake) panic: they are the test's own
//! environment failing, not the behaviour under test.

use std::net::SocketAddr;

use bytes::Bytes;
use h2::RecvStream;
use h2::client::SendRequest;
use http::{HeaderMap, HeaderValue, Request, Response};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// One envelope: flags, big-endian length, payload.
pub fn envelope(flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = header(flags, payload.len() as u32);
    out.extend_from_slice(payload);
    out
}

/// An envelope header on its own, declaring `declared` bytes.
pub fn header(flags: u8, declared: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(5);
    out.push(flags);
    out.extend_from_slice(&declared.to_be_bytes());
    out
}

/// Appends `value` as a protobuf varint, for messages encoded by hand so a
/// raw peer depends on no codec.
pub fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Splits a body into its envelopes' payloads, checking each header's flag
/// is 0 and no envelope is cut.
pub fn uncompressed_payloads(body: &[u8]) -> Vec<&[u8]> {
    let mut rest = body;
    let mut payloads = Vec::new();
    while !rest.is_empty() {
        assert!(rest.len() >= 5, "cut envelope header");
        assert_eq!(rest[0], 0, "compressed flag on an uncompressed body");
        let len = u32::from_be_bytes([rest[1], rest[2], rest[3], rest[4]]) as usize;
        assert!(rest.len() >= 5 + len, "cut envelope payload");
        payloads.push(&rest[5..5 + len]);
        rest = &rest[5 + len..];
    }
    payloads
}

/// Opens an HTTP/2 connection to `addr`; the connection is driven by a
/// spawned task until the returned handle and its clones are dropped.
pub async fn connect(addr: SocketAddr) -> SendRequest<Bytes> {
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let (client, connection) = h2::client::handshake(tcp).await.expect("h2 handshake");
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
}

/// A gRPC request to `path` (`/package.Service/Method`) with `extra`
/// headers besides the required ones.
pub fn grpc_request(path: &str, extra: &[(&str, &str)]) -> Request<()> {
    let mut request = Request::post(format!("http://127.0.0.1{path}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    for (name, value) in extra {
        request = request.header(*name, *value);
    }
    request.body(()).expect("a valid request head")
}

/// What a raw call saw.
#[derive(Debug)]
pub struct RawResponse {
    /// The HTTP status.
    pub http_status: http::StatusCode,
    /// The response headers.
    pub headers: HeaderMap,
    /// Every DATA frame's payload, as received.
    pub data_frames: Vec<Bytes>,
    /// The trailers, if the response had any.
    pub trailers: Option<HeaderMap>,
    /// Whether the request body went out whole: `false` when the server
    /// had ended the stream before [`send`] could send it, so whatever the
    /// server answered, it answered without the body (from the headers).
    /// Always `true` for a response read with [`read_response`] alone.
    pub body_sent: bool,
}

impl RawResponse {
    /// `grpc-status` from the trailers, or from the headers of a
    /// trailers-only response.
    pub fn grpc_status(&self) -> Option<i32> {
        self.grpc_header("grpc-status")
            .and_then(|value| value.parse().ok())
    }

    /// `grpc-message`, percent-decoded (empty if absent).
    pub fn grpc_message(&self) -> String {
        self.grpc_header("grpc-message").unwrap_or_default()
    }

    fn grpc_header(&self, name: &str) -> Option<String> {
        self.trailers
            .as_ref()
            .and_then(|trailers| trailers.get(name))
            .or_else(|| self.headers.get(name))
            .map(|value| {
                percent_encoding::percent_decode(value.as_bytes())
                    .decode_utf8_lossy()
                    .into_owned()
            })
    }

    /// The body's bytes, all frames joined.
    pub fn body(&self) -> Vec<u8> {
        self.data_frames.concat()
    }

    /// The headers with the trailers added.
    pub fn metadata(&self) -> HeaderMap {
        let mut metadata = self.headers.clone();
        if let Some(trailers) = &self.trailers {
            metadata.extend(trailers.clone());
        }
        metadata
    }
}

/// Sends `body` to `path` on `client` as the whole request and reads the
/// whole response.
pub async fn send(
    client: &SendRequest<Bytes>,
    path: &str,
    extra: &[(&str, &str)],
    body: impl Into<Bytes>,
) -> RawResponse {
    let mut client = client.clone().ready().await.expect("h2 ready");
    let (response, mut stream) = client
        .send_request(grpc_request(path, extra), false)
        .expect("send request");
    // A server may answer from the headers alone and end the stream before
    // the body goes out (volo-grpc refuses an unknown `grpc-encoding` so):
    // then the body has nowhere to go. That is recorded, not dropped: a
    // status that did not see the body must not pass for one that did.
    let sent = stream.send_data(body.into(), true);
    let mut raw = match response.await {
        Ok(response) => read_response(response).await,
        Err(error) => panic!("response headers: {error} (sending the body: {sent:?})"),
    };
    if let Err(error) = &sent {
        // Only an answer from the headers can come without the body: a
        // trailers-only status, no message and no trailers.
        assert!(
            raw.data_frames.is_empty() && raw.trailers.is_none() && raw.grpc_status().is_some(),
            "the body was not sent ({error}), yet the server answered with a body or \
             trailers: {raw:?}"
        );
        raw.body_sent = false;
    }
    raw
}

/// [`send`] over a fresh connection to `addr`.
pub async fn call(
    addr: SocketAddr,
    path: &str,
    extra: &[(&str, &str)],
    body: impl Into<Bytes>,
) -> RawResponse {
    send(&connect(addr).await, path, extra, body).await
}

/// Reads a response to its end, releasing flow-control capacity as it goes.
pub async fn read_response(response: Response<RecvStream>) -> RawResponse {
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
        body_sent: true,
    }
}

/// A raw HTTP/2 server on 127.0.0.1 that reads each request to its end and
/// answers it with `body` as the response body, `content-type:
/// application/grpc` and trailers `grpc-status: 0`, whatever the body holds.
pub async fn serve_raw(body: Vec<u8>) -> (SocketAddr, JoinHandle<()>) {
    serve_raw_with(body, Some("0")).await
}

/// Like [`serve_raw`], with `grpc-status: STATUS` in the trailers, or no
/// `grpc-status` at all (plain empty trailers) for `None`.
pub async fn serve_raw_with(
    body: Vec<u8>,
    status: Option<&'static str>,
) -> (SocketAddr, JoinHandle<()>) {
    let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local address");
    let body = Bytes::from(body);
    let server = tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let body = body.clone();
            tokio::spawn(async move {
                let Ok(mut connection) = h2::server::handshake(tcp).await else {
                    return;
                };
                while let Some(Ok((request, respond))) = connection.accept().await {
                    tokio::spawn(answer(request.into_body(), respond, body.clone(), status));
                }
            });
        }
    });
    (addr, server)
}

async fn answer(
    mut request: RecvStream,
    mut respond: h2::server::SendResponse<Bytes>,
    body: Bytes,
    status: Option<&'static str>,
) {
    while let Some(Ok(chunk)) = request.data().await {
        let _ = request.flow_control().release_capacity(chunk.len());
    }
    let Ok(response) = Response::builder()
        .header("content-type", "application/grpc")
        .body(())
    else {
        return;
    };
    let Ok(mut stream) = respond.send_response(response, false) else {
        return;
    };
    let _ = stream.send_data(body, false);
    let mut trailers = HeaderMap::new();
    if let Some(status) = status {
        trailers.insert("grpc-status", HeaderValue::from_static(status));
    }
    let _ = stream.send_trailers(trailers);
}

/// A scripted response for [`serve_script`]: exactly what a hostile or
/// unusual server sends.
#[derive(Clone, Debug, Default)]
pub struct Script {
    /// Response headers, after `content-type: application/grpc`.
    pub headers: Vec<(&'static str, &'static str)>,
    /// The body, sent as one DATA frame.
    pub body: Option<Bytes>,
    /// The trailers. With neither body nor trailers the headers end the
    /// stream (a trailers-only response).
    pub trailers: Option<Vec<(&'static str, &'static str)>>,
}

impl Script {
    /// A trailers-only response with these headers.
    pub fn trailers_only(headers: &[(&'static str, &'static str)]) -> Script {
        Script {
            headers: headers.to_vec(),
            ..Script::default()
        }
    }

    /// Headers, one body, trailers.
    pub fn full(
        headers: &[(&'static str, &'static str)],
        body: &[u8],
        trailers: &[(&'static str, &'static str)],
    ) -> Script {
        Script {
            headers: headers.to_vec(),
            body: Some(Bytes::copy_from_slice(body)),
            trailers: Some(trailers.to_vec()),
        }
    }
}

/// A raw HTTP/2 server on 127.0.0.1 that reads each request to its end and
/// answers it with `script`.
pub async fn serve_script(script: Script) -> (SocketAddr, JoinHandle<()>) {
    let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local address");
    let server = tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let script = script.clone();
            tokio::spawn(async move {
                let Ok(mut connection) = h2::server::handshake(tcp).await else {
                    return;
                };
                while let Some(Ok((request, respond))) = connection.accept().await {
                    tokio::spawn(answer_script(request.into_body(), respond, script.clone()));
                }
            });
        }
    });
    (addr, server)
}

fn header_map(entries: &[(&'static str, &'static str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in entries {
        map.append(*name, HeaderValue::from_static(value));
    }
    map
}

async fn answer_script(
    mut request: RecvStream,
    mut respond: h2::server::SendResponse<Bytes>,
    script: Script,
) {
    while let Some(Ok(chunk)) = request.data().await {
        let _ = request.flow_control().release_capacity(chunk.len());
    }
    let mut response = Response::new(());
    *response.headers_mut() = header_map(&script.headers);
    response
        .headers_mut()
        .insert("content-type", HeaderValue::from_static("application/grpc"));
    let end_on_headers = script.body.is_none() && script.trailers.is_none();
    let Ok(mut stream) = respond.send_response(response, end_on_headers) else {
        return;
    };
    if let Some(body) = script.body {
        let _ = stream.send_data(body, script.trailers.is_none());
    }
    if let Some(trailers) = script.trailers {
        let _ = stream.send_trailers(header_map(&trailers));
    }
}
