//! A raw HTTP/2 gRPC peer for the tests: hand-crafted bodies over `h2`, no
//! gRPC framework in between, so a test can send what no well-behaved tonic
//! peer would.
#![allow(dead_code)]

use std::net::SocketAddr;

use bytes::Bytes;
use h2::RecvStream;
use h2::client::SendRequest;
use http::{HeaderMap, HeaderValue, Request, Response};
use prost::Message;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// The default receive limit, as the crate's standard text states it.
pub const LIMIT: usize = 4 * 1024 * 1024;

/// The four Echo methods.
pub const UNARY: &str = "/streamcodec.echo.v1.Echo/Unary";
pub const SERVER_STREAM: &str = "/streamcodec.echo.v1.Echo/ServerStream";
pub const CLIENT_STREAM: &str = "/streamcodec.echo.v1.Echo/ClientStream";

/// One envelope: flags, big-endian length, payload.
pub fn envelope(flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = header(flags, payload.len() as u32);
    out.extend_from_slice(payload);
    out
}

/// An envelope header on its own, declaring `declared` bytes.
pub fn header(flags: u8, declared: u32) -> Vec<u8> {
    let mut out = vec![flags];
    out.extend_from_slice(&declared.to_be_bytes());
    out
}

/// An uncompressed envelope holding `message`.
pub fn message(message: &impl Message) -> Vec<u8> {
    envelope(0, &message.encode_to_vec())
}

/// Opens an HTTP/2 connection to `addr`; the connection is driven by a
/// spawned task until the returned handle and its clones are dropped.
pub async fn connect(addr: SocketAddr) -> SendRequest<Bytes> {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (client, connection) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
}

/// A gRPC request to `path` with `extra` headers besides the required ones.
pub fn grpc_request(path: &str, extra: &[(&str, &str)]) -> Request<()> {
    let mut request = Request::post(format!("http://127.0.0.1{path}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    for (name, value) in extra {
        request = request.header(*name, *value);
    }
    request.body(()).unwrap()
}

/// How a call ended, as the client reads it off the wire.
#[derive(Debug)]
pub struct Reply {
    /// From the trailers, or from the headers of a trailers-only response.
    pub status: tonic::Status,
    /// The response body's bytes.
    pub data: Vec<u8>,
    /// The response headers, with the trailers added.
    pub metadata: HeaderMap,
}

impl Reply {
    /// The status code.
    pub fn code(&self) -> tonic::Code {
        self.status.code()
    }
}

/// Sends `body` to `path` as the whole request and reads the reply.
pub async fn call(
    client: &SendRequest<Bytes>,
    path: &str,
    extra: &[(&str, &str)],
    body: Vec<u8>,
) -> Reply {
    let mut client = client.clone().ready().await.unwrap();
    let (response, mut stream) = client
        .send_request(grpc_request(path, extra), false)
        .unwrap();
    stream.send_data(Bytes::from(body), true).unwrap();
    read_reply(response.await.unwrap()).await
}

/// Reads a gRPC response to its end.
pub async fn read_reply(response: Response<RecvStream>) -> Reply {
    let (parts, mut body) = response.into_parts();
    assert_eq!(parts.status, http::StatusCode::OK, "{parts:?}");
    let mut metadata = parts.headers;
    if let Some(status) = tonic::Status::from_header_map(&metadata) {
        return Reply {
            status,
            data: Vec::new(),
            metadata,
        };
    }
    let mut data = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.unwrap();
        let _ = body.flow_control().release_capacity(chunk.len());
        data.extend_from_slice(&chunk);
    }
    let trailers = body
        .trailers()
        .await
        .unwrap()
        .expect("a gRPC response ends with trailers");
    let status = tonic::Status::from_header_map(&trailers).expect("grpc-status in the trailers");
    metadata.extend(trailers);
    Reply {
        status,
        data,
        metadata,
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
        .unwrap();
    let addr = listener.local_addr().unwrap();
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
    let response = Response::builder()
        .header("content-type", "application/grpc")
        .body(())
        .unwrap();
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
