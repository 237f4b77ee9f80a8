//! grpc-stream-codec's tonic guard layers end to end over 127.0.0.1: a real
//! tonic server behind `RequestGuardLayer` fed hand-crafted bodies by a raw
//! HTTP/2 client, and a real tonic client behind `ResponseGuardLayer` fed
//! hand-crafted responses by a raw HTTP/2 server. Every bad body is also sent
//! without the layer, to document what stock tonic does with it.

#[path = "support/raw.rs"]
mod raw;

use std::net::SocketAddr;

use bytes::{Buf, Bytes};
use grpc_stream_codec::compression::{Compression, CompressionEncoding as Encoding};
use grpc_stream_codec::tonic::guard::{GuardMode, RequestGuardLayer, ResponseGuardLayer};
use http::HeaderMap;
use http_body_util::{BodyExt, Full};
use prost::Message;
use raw::{CLIENT_STREAM, LIMIT, Reply, UNARY, envelope, header, message};
use tokio::task::JoinHandle;
use tokio_stream::StreamExt;
use tonic::Code;
use tonic::codec::CompressionEncoding;
use tonic::transport::{Endpoint, Server};
use tonic_echo::adapter::{EchoRequest, EchoResponse, echo_client, echo_server};
use tonic_echo::{
    EchoClient, EchoService, ServeOptions, check_bidi, check_client_stream, check_server_stream,
    check_unary,
};

const MODES: [GuardMode; 2] = [GuardMode::PassThrough, GuardMode::Assembling];

async fn start(options: ServeOptions) -> (SocketAddr, JoinHandle<()>) {
    let (listener, addr) = tonic_echo::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let server = tokio::spawn(async move {
        tonic_echo::serve_with(listener, options).await.unwrap();
    });
    (addr, server)
}

fn request(payload: &[u8]) -> EchoRequest {
    EchoRequest {
        payload: Bytes::copy_from_slice(payload),
        ..EchoRequest::default()
    }
}

fn too_large(size: u64) -> String {
    format!("message size {size} exceeds limit {LIMIT}")
}

/// A bad request body, what the guard answers and what stock tonic answers.
struct BadBody {
    name: &'static str,
    body: Vec<u8>,
    guarded: (Code, Option<String>),
    /// On ClientStream, which reads to the end of the body.
    stock: Code,
}

fn bad_bodies() -> Vec<BadBody> {
    let valid = message(&request(b"fine"));
    let mut after_valid = valid.clone();
    after_valid.extend(header(0, u32::MAX));
    let mut partial_payload = header(0, 10);
    partial_payload.extend_from_slice(&[1, 2, 3]);
    let exhausted = |size: u64| (Code::ResourceExhausted, Some(too_large(size)));
    vec![
        BadBody {
            name: "one byte over the limit",
            body: header(0, LIMIT as u32 + 1),
            guarded: exhausted(LIMIT as u64 + 1),
            stock: Code::OutOfRange,
        },
        BadBody {
            name: "0xFFFFFFFF",
            body: header(0, u32::MAX),
            guarded: exhausted(u64::from(u32::MAX)),
            stock: Code::OutOfRange,
        },
        BadBody {
            name: "over the limit after a valid message",
            body: after_valid,
            guarded: exhausted(u64::from(u32::MAX)),
            stock: Code::OutOfRange,
        },
        BadBody {
            name: "header only",
            body: header(0, 10),
            guarded: (Code::Internal, None),
            // The gap: tonic has consumed the header, sees an empty buffer
            // at the end of the body and calls it a clean end.
            stock: Code::Ok,
        },
        BadBody {
            name: "partial payload",
            body: partial_payload,
            guarded: (Code::Internal, None),
            stock: Code::Internal,
        },
        BadBody {
            name: "partial header",
            body: vec![0, 0, 0],
            guarded: (Code::Internal, None),
            stock: Code::Internal,
        },
        BadBody {
            name: "reserved flag bit 0x02",
            body: envelope(0x02, &request(b"x").encode_to_vec()),
            guarded: (Code::Internal, None),
            stock: Code::Internal,
        },
        BadBody {
            name: "reserved flag bit 0x40",
            body: envelope(0x40, &request(b"x").encode_to_vec()),
            guarded: (Code::Internal, None),
            stock: Code::Internal,
        },
    ]
}

/// A normal ClientStream call of two messages on `client`: OK, count 2.
async fn assert_still_serving(client: &h2::client::SendRequest<Bytes>, after: &str) {
    let mut body = message(&request(b"one"));
    body.extend(message(&request(b"two")));
    let reply = raw::call(client, CLIENT_STREAM, &[], body).await;
    assert_eq!(reply.code(), Code::Ok, "after {after}: {reply:?}");
    let response = decode_single(&reply);
    assert_eq!(
        (response.count, response.total_bytes),
        (2, 6),
        "after {after}"
    );
}

/// The single uncompressed response message of a reply.
fn decode_single(reply: &Reply) -> EchoResponse {
    let data = &reply.data;
    assert!(data.len() >= 5 && data[0] == 0, "{reply:?}");
    let len = u32::from_be_bytes([data[1], data[2], data[3], data[4]]) as usize;
    assert_eq!(data.len(), 5 + len, "one message: {reply:?}");
    EchoResponse::decode(&data[5..]).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guarded_server_answers_bad_bodies_with_the_spec_codes_and_keeps_serving() {
    for mode in MODES {
        let (addr, server) = start(ServeOptions {
            stock: false,
            guard: Some(mode),
            ..ServeOptions::default()
        })
        .await;
        let client = raw::connect(addr).await;
        for case in bad_bodies() {
            for path in [CLIENT_STREAM, UNARY] {
                let reply = raw::call(&client, path, &[], case.body.clone()).await;
                let what = format!("{mode:?} {path} {}", case.name);
                assert_eq!(reply.code(), case.guarded.0, "{what}: {reply:?}");
                if let Some(text) = &case.guarded.1 {
                    assert_eq!(reply.status.message(), text, "{what}");
                }
                assert_still_serving(&client, &what).await;
            }
        }
        // And on a fresh connection.
        assert_still_serving(&raw::connect(addr).await, "all cases").await;
        server.abort();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stock_tonic_without_the_layer_shows_the_gaps() {
    let (addr, server) = start(ServeOptions {
        stock: true,
        guard: None,
        ..ServeOptions::default()
    })
    .await;
    let client = raw::connect(addr).await;
    for case in bad_bodies() {
        let reply = raw::call(&client, CLIENT_STREAM, &[], case.body.clone()).await;
        assert_eq!(reply.code(), case.stock, "stock {}: {reply:?}", case.name);
        if case.stock == Code::Ok {
            // The handler saw a normal end of a stream of no messages.
            assert_eq!(decode_single(&reply).count, 0, "stock {}", case.name);
        }
        assert_still_serving(&client, case.name).await;
    }
    // tonic's own text for the over-limit case.
    let reply = raw::call(&client, CLIENT_STREAM, &[], header(0, u32::MAX)).await;
    assert_eq!(
        reply.status.message(),
        format!(
            "Error, decoded message length too large: found {} bytes, the limit is: {LIMIT} bytes",
            u32::MAX
        )
    );
    // Unary reads a single message: a header-only body is a missing message
    // there, so stock tonic does refuse it, as INTERNAL.
    let reply = raw::call(&client, UNARY, &[], header(0, 10)).await;
    assert_eq!(reply.code(), Code::Internal, "{reply:?}");
    server.abort();
}

/// Drains a ServerStream call: the number of messages, or the status it
/// failed with.
async fn server_stream_outcome<T>(
    client: &mut echo_client::EchoClient<T>,
) -> Result<usize, tonic::Status>
where
    T: tonic::client::GrpcService<tonic::body::Body>,
    T::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    T::ResponseBody: http_body::Body<Data = Bytes> + Send + 'static,
    <T::ResponseBody as http_body::Body>::Error:
        Into<Box<dyn std::error::Error + Send + Sync>> + Send,
{
    let mut stream = client
        .server_stream(EchoRequest::default())
        .await?
        .into_inner();
    let mut count = 0;
    while let Some(message) = stream.next().await {
        message?;
        count += 1;
    }
    Ok(count)
}

/// A bad response body, what the guarded client sees and what stock tonic's
/// client sees.
struct BadResponse {
    name: &'static str,
    body: Vec<u8>,
    guarded: Result<usize, (Code, Option<String>)>,
    stock: Result<usize, Code>,
}

fn bad_responses() -> Vec<BadResponse> {
    let valid = message(&EchoResponse::default());
    let mut partial_payload = header(0, 10);
    partial_payload.extend_from_slice(&[1, 2, 3]);
    vec![
        BadResponse {
            name: "valid",
            body: valid,
            guarded: Ok(1),
            stock: Ok(1),
        },
        BadResponse {
            name: "over the limit",
            body: header(0, u32::MAX),
            guarded: Err((
                Code::ResourceExhausted,
                Some(too_large(u64::from(u32::MAX))),
            )),
            stock: Err(Code::OutOfRange),
        },
        BadResponse {
            name: "header only",
            body: header(0, 10),
            guarded: Err((Code::Internal, None)),
            // The gap on the client side: zero messages and OK.
            stock: Ok(0),
        },
        BadResponse {
            name: "partial payload",
            body: partial_payload,
            guarded: Err((Code::Internal, None)),
            // Worse than on the server side: tonic's client takes the
            // trailers as the end and drops the unfinished envelope.
            stock: Ok(0),
        },
        BadResponse {
            name: "partial header",
            body: vec![0, 0, 0],
            guarded: Err((Code::Internal, None)),
            stock: Ok(0),
        },
        BadResponse {
            name: "reserved flag bit",
            body: envelope(0x02, &EchoResponse::default().encode_to_vec()),
            guarded: Err((Code::Internal, None)),
            stock: Err(Code::Internal),
        },
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guarded_client_answers_bad_responses_with_the_spec_codes() {
    for case in bad_responses() {
        let (addr, server) = raw::serve_raw(case.body.clone()).await;
        let channel = Endpoint::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect()
            .await
            .unwrap();
        for mode in [
            None,
            Some(GuardMode::PassThrough),
            Some(GuardMode::Assembling),
        ] {
            let service = tower::ServiceBuilder::new()
                .option_layer(mode.map(|m| ResponseGuardLayer::new().with_mode(m)))
                .service(channel.clone());
            let mut client = echo_client::EchoClient::new(service);
            // Twice: the channel keeps working after a bad response.
            for _ in 0..2 {
                let outcome = server_stream_outcome(&mut client).await;
                let what = format!("{mode:?} {}: {outcome:?}", case.name);
                match (mode, &outcome) {
                    (None, Ok(count)) => assert_eq!(case.stock, Ok(*count), "{what}"),
                    (None, Err(status)) => assert_eq!(case.stock, Err(status.code()), "{what}"),
                    (Some(_), Ok(count)) => assert_eq!(case.guarded, Ok(*count), "{what}"),
                    (Some(_), Err(status)) => {
                        let Err((code, text)) = &case.guarded else {
                            panic!("{what}");
                        };
                        assert_eq!(status.code(), *code, "{what}");
                        if let Some(text) = text {
                            assert_eq!(status.message(), text, "{what}");
                        }
                    }
                }
            }
        }
        server.abort();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compressed_bodies_pass_through_both_modes() {
    // 1 MiB of zeros compresses to a few KiB: the envelope declares the
    // compressed length, and the guard must let the whole body through.
    let big = request(&vec![0; 1 << 20]);
    for mode in MODES {
        let (addr, server) = start(ServeOptions {
            stock: false,
            guard: Some(mode),
            ..ServeOptions::default()
        })
        .await;
        let client = raw::connect(addr).await;
        for encoding in [Encoding::Gzip, Encoding::Deflate, Encoding::Zstd] {
            let mut body = Vec::new();
            for _ in 0..3 {
                let mut compressed = Vec::new();
                Compression::from(encoding)
                    .compress(&mut big.encode_to_vec().as_slice(), &mut compressed)
                    .unwrap();
                assert!(compressed.len() < 64 * 1024);
                body.extend(envelope(1, &compressed));
            }
            // One uncompressed message in between is allowed too.
            body.extend(message(&request(b"plain")));
            let headers = [("grpc-encoding", encoding.name())];
            let reply = raw::call(&client, CLIENT_STREAM, &headers, body).await;
            assert_eq!(reply.code(), Code::Ok, "{mode:?} {encoding}: {reply:?}");
            let response = decode_single(&reply);
            assert_eq!(
                (response.count, response.total_bytes),
                (4, 3 * (1 << 20) + 5),
                "{mode:?} {encoding}"
            );
        }
        server.abort();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_rpc_kind_works_through_both_modes() {
    for mode in MODES {
        let (addr, server) = start(ServeOptions {
            stock: false,
            guard: Some(mode),
            ..ServeOptions::default()
        })
        .await;
        for compression in [None, Some(CompressionEncoding::Zstd)] {
            let mut client = EchoClient::connect(format!("http://{addr}"), false, compression)
                .await
                .unwrap();
            let what = format!("{mode:?} {compression:?}");
            for size in [0, 256, 1 << 20] {
                check_unary(&mut client, size)
                    .await
                    .unwrap_or_else(|e| panic!("{what} unary {size}: {e}"));
            }
            for (size, count) in [(0, 100), (256, 300), (70_000, 5), (1 << 20, 3)] {
                check_server_stream(&mut client, size as u32, count)
                    .await
                    .unwrap_or_else(|e| panic!("{what} server {size}x{count}: {e}"));
                check_client_stream(&mut client, size, count)
                    .await
                    .unwrap_or_else(|e| panic!("{what} client {size}x{count}: {e}"));
                check_bidi(&mut client, size, count)
                    .await
                    .unwrap_or_else(|e| panic!("{what} bidi {size}x{count}: {e}"));
            }
        }
        server.abort();
    }
}

/// Serves Echo for gRPC-Web over HTTP/1.1: tonic-web's layer outside, so it
/// turns the gRPC-Web request into a gRPC one before the guard reads it.
async fn start_grpc_web(mode: Option<GuardMode>) -> (SocketAddr, JoinHandle<()>) {
    let (listener, addr) = tonic_echo::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let guard = mode.map(|m| RequestGuardLayer::new().with_mode(m));
    let router = Server::builder()
        .accept_http1(true)
        .layer(tonic_web::GrpcWebLayer::new())
        .layer(tower::util::option_layer(guard))
        .add_service(echo_server::EchoServer::new(EchoService));
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    let server = tokio::spawn(async move {
        router.serve_with_incoming(incoming).await.unwrap();
    });
    (addr, server)
}

/// One gRPC-Web call over HTTP/1.1: the status (from the headers, or from
/// the trailers frame in the body) and the data messages' payloads.
async fn grpc_web_call(addr: SocketAddr, body: Vec<u8>) -> (tonic::Status, Vec<Bytes>) {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp))
            .await
            .unwrap();
    tokio::spawn(connection);
    let request = http::Request::post(format!("http://{addr}{CLIENT_STREAM}"))
        .header("content-type", "application/grpc-web+proto")
        .header("x-grpc-web", "1")
        .body(Full::new(Bytes::from(body)))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    assert_eq!(response.status(), http::StatusCode::OK);
    let headers = response.headers().clone();
    let mut data = response.into_body().collect().await.unwrap().to_bytes();
    if let Some(status) = tonic::Status::from_header_map(&headers) {
        return (status, Vec::new());
    }
    let mut messages = Vec::new();
    while data.len() >= 5 {
        let flags = data.get_u8();
        let len = data.get_u32() as usize;
        let payload = data.split_to(len);
        if flags & 0x80 == 0 {
            messages.push(payload);
            continue;
        }
        let mut trailers = HeaderMap::new();
        for line in std::str::from_utf8(&payload).unwrap().split("\r\n") {
            if let Some((name, value)) = line.split_once(':') {
                trailers.insert(
                    http::HeaderName::from_bytes(name.trim().as_bytes()).unwrap(),
                    value.trim().parse().unwrap(),
                );
            }
        }
        let status = tonic::Status::from_header_map(&trailers).expect("grpc-status");
        return (status, messages);
    }
    panic!("no trailers frame in the gRPC-Web response");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_web_requests_are_guarded_behind_tonic_web() {
    for mode in [
        None,
        Some(GuardMode::PassThrough),
        Some(GuardMode::Assembling),
    ] {
        let (addr, server) = start_grpc_web(mode).await;

        let mut valid = message(&request(b"web"));
        valid.extend(message(&request(b"again")));
        let (status, messages) = grpc_web_call(addr, valid).await;
        assert_eq!(status.code(), Code::Ok, "{mode:?}: {status:?}");
        assert_eq!(messages.len(), 1);
        let response = EchoResponse::decode(messages[0].clone()).unwrap();
        assert_eq!((response.count, response.total_bytes), (2, 8));

        let (status, _) = grpc_web_call(addr, header(0, u32::MAX)).await;
        let (header_only, _) = grpc_web_call(addr, header(0, 10)).await;
        if mode.is_some() {
            assert_eq!(status.code(), Code::ResourceExhausted, "{mode:?}");
            assert_eq!(status.message(), too_large(u64::from(u32::MAX)));
            assert_eq!(header_only.code(), Code::Internal, "{mode:?}");
        } else {
            assert_eq!(status.code(), Code::OutOfRange);
            assert_eq!(header_only.code(), Code::Ok);
        }
        server.abort();
    }
}
