//! `bare-echo-server --listen 127.0.0.1:PORT [--report-memory]`
//!
//! The benchmark's floor: the Echo service (`proto/echo.proto`) answered by
//! hyper's HTTP/2 server and prost alone, with no gRPC framework. Unary,
//! ServerStream and ClientStream read the request body inside the service
//! call, split it into envelopes by hand, and answer with one body chunk
//! (every response message encoded into one buffer) and `grpc-status: 0`.
//! Bidi echoes each message as it arrives from a task of its own, so the
//! memory arm can hold it open. There is no compression, no limit and no
//! error handling beyond refusing what it cannot parse: it only measures
//! what serving these streams costs below any framework.

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
    if buffer.len() < 5 {
        return None;
    }
    let len = u32::from_be_bytes([buffer[1], buffer[2], buffer[3], buffer[4]]) as usize;
    if buffer.len() < 5 + len {
        return None;
    }
    buffer.advance(5);
    Some(buffer.split_to(len).freeze())
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
        return Ok(grpc_response(http_body_util::Either::Left(
            whole(request).await,
        )));
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
/// response.
async fn whole(request: Request<Incoming>) -> Whole {
    let unary = request.uri().path().ends_with("/Unary");
    let server_stream = request.uri().path().ends_with("/ServerStream");
    let mut body = request.into_body();
    let mut buffer = BytesMut::new();
    let mut out = BytesMut::new();
    let mut total_bytes = 0u64;
    let mut count = 0u32;
    while let Some(Ok(frame)) = body.frame().await {
        let Ok(data) = frame.into_data() else {
            continue;
        };
        buffer.extend_from_slice(&data);
        while let Some(message) = next_message(&mut buffer) {
            let Ok(request) = EchoRequest::decode(message) else {
                break;
            };
            if server_stream {
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
            } else if unary {
                let response = EchoResponse {
                    payload: request.payload,
                    ..EchoResponse::default()
                };
                envelope(&response, &mut out);
            } else {
                total_bytes += request.payload.len() as u64;
                count += 1;
            }
        }
    }
    if !unary && !server_stream {
        let response = EchoResponse {
            total_bytes,
            count,
            ..EchoResponse::default()
        };
        envelope(&response, &mut out);
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
        live_alloc::serve_reports_on_stdin();
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
