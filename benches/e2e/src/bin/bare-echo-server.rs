//! `bare-echo-server --listen 127.0.0.1:PORT [--report-memory]`
//!
//! The benchmark's floor: the Echo service (`proto/echo.proto`) answered by
//! hyper's HTTP/2 server and prost alone, with no gRPC framework. Unary,
//! ServerStream and ClientStream read the request body inside the service
//! call, split it into envelopes by hand, and answer with one body chunk
//! (every response message encoded into one buffer) and `grpc-status: 0`.
//! Bidi echoes each message as it arrives from a task of its own, so the
//! memory arm can hold it open. There is no limit and no error handling
//! beyond refusing what it cannot parse: it only measures what serving these
//! streams costs below any framework.
//!
//! For the client arms (`e2e-bench --sections clients`, where this server is
//! the one fixed peer of every client) Unary, ServerStream and ClientStream
//! also take gzip and zstd: requests flagged compressed are decompressed per
//! the request's `grpc-encoding`, and responses are compressed in the first
//! of gzip and zstd the request's `grpc-accept-encoding` lists (compressed
//! response messages are cached by size, so the server stays cheap and the
//! client is what is measured). A Unary request with an empty payload and a
//! `response_size` is answered with that many bytes (every byte 0), so a
//! client can receive a large unary response without sending one.

use std::convert::Infallible;
use std::io::Write;
use std::net::SocketAddr;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use http::{HeaderMap, HeaderValue, Request, Response};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::{TokioExecutor, TokioIo};
use prost::Message;
use tokio::net::TcpListener;
use tokio_stream::wrappers::ReceiverStream;

use test_support::alloc as live_alloc;

#[global_allocator]
static ALLOC: live_alloc::CountingAlloc = live_alloc::CountingAlloc::SWITCHED;

#[allow(clippy::all, missing_docs, dead_code)]
mod proto {
    tonic::include_proto!("streamcodec.echo.v1");
}

use proto::{EchoRequest, EchoResponse};

type Streamed = StreamBody<ReceiverStream<Result<Frame<Bytes>, Infallible>>>;
type Whole =
    StreamBody<tokio_stream::Iter<std::array::IntoIter<Result<Frame<Bytes>, Infallible>, 2>>>;
type Body = http_body_util::Either<Whole, Streamed>;

fn envelope(message: &impl Message, out: &mut BytesMut) {
    let len = message.encoded_len();
    out.reserve(5 + len);
    out.put_u8(0);
    out.put_u32(len as u32);
    // The buffer was reserved for exactly this.
    let _ = message.encode(out);
}

/// Splits complete envelopes off the front of `buffer`.
fn next_message(buffer: &mut BytesMut) -> Option<Bytes> {
    next_envelope(buffer).map(|(_, message)| message)
}

/// Splits complete envelopes off the front of `buffer`, with their
/// compressed flag.
fn next_envelope(buffer: &mut BytesMut) -> Option<(bool, Bytes)> {
    if buffer.len() < 5 {
        return None;
    }
    let compressed = buffer[0] & 1 == 1;
    let len = u32::from_be_bytes([buffer[1], buffer[2], buffer[3], buffer[4]]) as usize;
    if buffer.len() < 5 + len {
        return None;
    }
    buffer.advance(5);
    Some((compressed, buffer.split_to(len).freeze()))
}

/// gzip or zstd, the compressions the client arms use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Encoding {
    Gzip,
    Zstd,
}

impl Encoding {
    fn parse(name: &str) -> Option<Encoding> {
        match name.trim() {
            "gzip" => Some(Encoding::Gzip),
            "zstd" => Some(Encoding::Zstd),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Encoding::Gzip => "gzip",
            Encoding::Zstd => "zstd",
        }
    }

    fn compress(self, data: &[u8]) -> Vec<u8> {
        match self {
            Encoding::Gzip => {
                let mut encoder =
                    flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
                let _ = encoder.write_all(data);
                encoder.finish().unwrap_or_default()
            }
            Encoding::Zstd => zstd::bulk::compress(data, 0).unwrap_or_default(),
        }
    }

    fn decompress(self, data: &[u8]) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        match self {
            Encoding::Gzip => {
                std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(data), &mut out)
                    .ok()?;
            }
            Encoding::Zstd => {
                std::io::Read::read_to_end(
                    &mut zstd::stream::read::Decoder::new(data).ok()?,
                    &mut out,
                )
                .ok()?;
            }
        }
        Some(out)
    }
}

/// The request's `grpc-encoding` (how its flagged messages are compressed)
/// and the encoding the responses get, the first of gzip and zstd in its
/// `grpc-accept-encoding`.
fn encodings(headers: &HeaderMap) -> (Option<Encoding>, Option<Encoding>) {
    let header = |name| headers.get(name).and_then(|value| value.to_str().ok());
    let request = header("grpc-encoding").and_then(Encoding::parse);
    let response =
        header("grpc-accept-encoding").and_then(|names| names.split(',').find_map(Encoding::parse));
    (request, response)
}

thread_local! {
    /// Compressed response envelopes by (payload size, seq, encoding).
    static COMPRESSED: std::cell::RefCell<std::collections::HashMap<(u32, u32, Encoding), Bytes>> =
        std::cell::RefCell::default();
}

/// Appends the message `message` makes to `out` as one compressed envelope,
/// from the cache (without making the message) when `key` is given and was
/// seen before.
fn envelope_compressed(
    message: impl FnOnce() -> EchoResponse,
    encoding: Encoding,
    key: Option<(u32, u32)>,
    out: &mut BytesMut,
) {
    let make = || {
        let compressed = encoding.compress(&message().encode_to_vec());
        let mut envelope = BytesMut::with_capacity(5 + compressed.len());
        envelope.put_u8(1);
        envelope.put_u32(compressed.len() as u32);
        envelope.put_slice(&compressed);
        envelope.freeze()
    };
    let Some((size, seq)) = key else {
        out.extend_from_slice(&make());
        return;
    };
    COMPRESSED.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.len() > 4096 {
            cache.clear();
        }
        let envelope = cache.entry((size, seq, encoding)).or_insert_with(make);
        out.extend_from_slice(envelope);
    });
}

fn ok_trailers() -> Frame<Bytes> {
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static("0"));
    Frame::trailers(trailers)
}

fn grpc_response(body: Body) -> Response<Body> {
    let mut response = Response::new(body);
    response
        .headers_mut()
        .insert("content-type", HeaderValue::from_static("application/grpc"));
    response
}

async fn answer(request: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    if request.uri().path() != "/streamcodec.echo.v1.Echo/Bidi" {
        let (request_encoding, response_encoding) = encodings(request.headers());
        let mut response = grpc_response(http_body_util::Either::Left(
            whole(request, request_encoding, response_encoding).await,
        ));
        if let Some(encoding) = response_encoding {
            response
                .headers_mut()
                .insert("grpc-encoding", HeaderValue::from_static(encoding.name()));
        }
        return Ok(response);
    }
    let (sender, receiver) = tokio::sync::mpsc::channel(16);
    let path = request.uri().path().to_owned();
    let mut body = request.into_body();
    tokio::spawn(async move {
        let mut buffer = BytesMut::new();
        let mut out = BytesMut::new();
        let mut seq = 0u32;
        let mut total_bytes = 0u64;
        let mut count = 0u32;
        while let Some(Ok(frame)) = body.frame().await {
            let Ok(data) = frame.into_data() else {
                continue;
            };
            buffer.extend_from_slice(&data);
            while let Some(message) = next_message(&mut buffer) {
                let Ok(request) = EchoRequest::decode(message) else {
                    return;
                };
                match path.as_str() {
                    "/streamcodec.echo.v1.Echo/Bidi" => {
                        let response = EchoResponse {
                            payload: request.payload,
                            seq,
                            ..EchoResponse::default()
                        };
                        seq += 1;
                        envelope(&response, &mut out);
                        let chunk = out.split().freeze();
                        if sender.send(Ok(Frame::data(chunk))).await.is_err() {
                            return;
                        }
                    }
                    "/streamcodec.echo.v1.Echo/ServerStream" => {
                        for seq in 0..request.response_count.max(1) {
                            let mut payload = BytesMut::zeroed(request.response_size as usize);
                            payload.fill((seq % 251) as u8);
                            let response = EchoResponse {
                                payload: payload.freeze(),
                                seq,
                                ..EchoResponse::default()
                            };
                            envelope(&response, &mut out);
                        }
                    }
                    "/streamcodec.echo.v1.Echo/Unary" => {
                        let response = EchoResponse {
                            payload: request.payload,
                            ..EchoResponse::default()
                        };
                        envelope(&response, &mut out);
                    }
                    _ => {
                        total_bytes += request.payload.len() as u64;
                        count += 1;
                    }
                }
            }
        }
        if path.ends_with("/ClientStream") {
            let response = EchoResponse {
                total_bytes,
                count,
                ..EchoResponse::default()
            };
            envelope(&response, &mut out);
        }
        if !out.is_empty() {
            let _ = sender.send(Ok(Frame::data(out.freeze()))).await;
        }
        let _ = sender.send(Ok(ok_trailers())).await;
    });
    let body = StreamBody::new(ReceiverStream::new(receiver));
    Ok(grpc_response(http_body_util::Either::Right(body)))
}

/// Unary, ServerStream and ClientStream: the whole request, then the whole
/// response, compressed in `response_encoding` when given.
async fn whole(
    request: Request<Incoming>,
    request_encoding: Option<Encoding>,
    response_encoding: Option<Encoding>,
) -> Whole {
    let unary = request.uri().path().ends_with("/Unary");
    let server_stream = request.uri().path().ends_with("/ServerStream");
    let mut body = request.into_body();
    let mut buffer = BytesMut::new();
    let mut out = BytesMut::new();
    let mut total_bytes = 0u64;
    let mut count = 0u32;
    let respond =
        |response: &dyn Fn() -> EchoResponse, key: Option<(u32, u32)>, out: &mut BytesMut| {
            match response_encoding {
                None => envelope(&response(), out),
                Some(encoding) => envelope_compressed(response, encoding, key, out),
            }
        };
    while let Some(Ok(frame)) = body.frame().await {
        let Ok(data) = frame.into_data() else {
            continue;
        };
        buffer.extend_from_slice(&data);
        while let Some((compressed, message)) = next_envelope(&mut buffer) {
            let message = match (compressed, request_encoding) {
                (false, _) => message,
                (true, Some(encoding)) => match encoding.decompress(&message) {
                    Some(plain) => Bytes::from(plain),
                    None => break,
                },
                (true, None) => break,
            };
            let Ok(request) = EchoRequest::decode(message) else {
                break;
            };
            if server_stream {
                for seq in 0..request.response_count.max(1) {
                    let response = || {
                        let mut payload = BytesMut::zeroed(request.response_size as usize);
                        payload.fill((seq % 251) as u8);
                        EchoResponse {
                            payload: payload.freeze(),
                            seq,
                            ..EchoResponse::default()
                        }
                    };
                    respond(&response, Some((request.response_size, seq)), &mut out);
                }
            } else if unary {
                let sized = request.payload.is_empty() && request.response_size > 0;
                let response = || EchoResponse {
                    payload: if sized {
                        Bytes::from(vec![0; request.response_size as usize])
                    } else {
                        request.payload.clone()
                    },
                    ..EchoResponse::default()
                };
                let key = sized.then_some((request.response_size, u32::MAX));
                respond(&response, key, &mut out);
            } else {
                total_bytes += request.payload.len() as u64;
                count += 1;
            }
        }
    }
    if !unary && !server_stream {
        let response = || EchoResponse {
            total_bytes,
            count,
            ..EchoResponse::default()
        };
        respond(&response, None, &mut out);
    }
    StreamBody::new(tokio_stream::iter([
        Ok(Frame::data(out.freeze())),
        Ok(ok_trailers()),
    ]))
}

#[tokio::main]
async fn main() {
    let mut listen: Option<SocketAddr> = None;
    let mut report_memory = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--listen" => listen = args.next().and_then(|value| value.parse().ok()),
            "--report-memory" => report_memory = true,
            _ => {
                eprintln!("usage: bare-echo-server --listen 127.0.0.1:PORT [--report-memory]");
                std::process::exit(2);
            }
        }
    }
    let Some(listen) = listen else {
        eprintln!("--listen 127.0.0.1:PORT is required");
        std::process::exit(2);
    };
    let listener = TcpListener::bind(listen).await.expect("bind");
    println!(
        "listening on {}",
        listener.local_addr().expect("local address")
    );
    let _ = std::io::stdout().flush();
    if report_memory {
        test_support::reports::answer_stdin(None);
    }
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            continue;
        };
        let _ = tcp.set_nodelay(true);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(answer);
            let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(tcp), service)
                .await;
        });
    }
}
