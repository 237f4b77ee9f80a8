//! The adapter's volo-grpc client against a raw HTTP/2 server that answers
//! exactly as told (request metadata `x-answer`): trailers-only `OK`,
//! trailers-only errors, and responses with no `grpc-status` anywhere, on
//! all four call kinds, with and without compression, with and without
//! `ClientCompressionLayer` (which the build hook's client no longer needs). grpcio itself is in `grpcio_trailers_only.rs`.

use std::net::{Ipv4Addr, SocketAddr};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, StatusCode};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use volo_echo::adapter::{self, EchoClient, calls};
use volo_echo::{CallError, ClientOptions, MetadataLayer, compression_by_name};

/// The response the server sends, by the request's `x-answer`.
#[derive(Clone, Copy, Debug)]
enum Answer {
    /// `grpc-status: 0` (and `x-extra`) in the headers, END_STREAM.
    TrailersOnlyOk,
    /// The same with `grpc-encoding: gzip`, as a compressing server may.
    TrailersOnlyOkGzip,
    /// A full error status in the headers, END_STREAM.
    TrailersOnlyError,
    /// Headers without `grpc-status`, END_STREAM.
    NoStatus,
    /// Headers without `grpc-status`, one message, END_STREAM on the data.
    NoStatusAfterAMessage,
}

impl Answer {
    const ALL: [Answer; 5] = [
        Answer::TrailersOnlyOk,
        Answer::TrailersOnlyOkGzip,
        Answer::TrailersOnlyError,
        Answer::NoStatus,
        Answer::NoStatusAfterAMessage,
    ];

    fn name(self) -> &'static str {
        match self {
            Answer::TrailersOnlyOk => "trailers-only-ok",
            Answer::TrailersOnlyOkGzip => "trailers-only-ok-gzip",
            Answer::TrailersOnlyError => "trailers-only-error",
            Answer::NoStatus => "no-status",
            Answer::NoStatusAfterAMessage => "no-status-after-a-message",
        }
    }
}

/// The error the server sends trailers-only: every part of a status.
fn the_error() -> grpc_stream_codec::status::Status {
    let mut metadata = HeaderMap::new();
    metadata.insert("x-extra", HeaderValue::from_static("yes"));
    grpc_stream_codec::status::Status::new(
        grpc_stream_codec::status::Code::FailedPrecondition,
        "not now: 100%",
    )
    .with_details(Bytes::from_static(b"\x08\x2a"))
    .with_metadata(metadata)
}

/// An empty `EchoResponse` (seq 0, no payload: the first reply to the
/// 0-byte calls of `call_all`) in an uncompressed envelope.
const ONE_MESSAGE: &[u8] = b"\0\0\0\0\0";

/// A raw HTTP/2 server task on an ephemeral loopback port; aborted on drop.
struct RawServer {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn raw_server() -> RawServer {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("bound address");
    let task = tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let Ok(mut connection) = h2::server::handshake(tcp).await else {
                    return;
                };
                while let Some(Ok((request, respond))) = connection.accept().await {
                    tokio::spawn(answer(request, respond));
                }
            });
        }
    });
    RawServer { addr, task }
}

/// Reads the whole request, then answers as its `x-answer` says.
async fn answer(
    request: http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
) {
    let (parts, mut body) = request.into_parts();
    while let Some(Ok(data)) = body.data().await {
        let _ = body.flow_control().release_capacity(data.len());
    }
    let answer = Answer::ALL
        .into_iter()
        .find(|answer| {
            parts
                .headers
                .get("x-answer")
                .is_some_and(|v| v == answer.name())
        })
        .expect("every request names an answer");
    let mut response = Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/grpc")
        .body(())
        .expect("response head");
    let headers = response.headers_mut();
    match answer {
        Answer::TrailersOnlyOk | Answer::TrailersOnlyOkGzip => {
            headers.insert("grpc-status", HeaderValue::from_static("0"));
            headers.insert("x-extra", HeaderValue::from_static("yes"));
            if let Answer::TrailersOnlyOkGzip = answer {
                headers.insert("grpc-encoding", HeaderValue::from_static("gzip"));
            }
        }
        Answer::TrailersOnlyError => the_error().write_headers(headers),
        Answer::NoStatus | Answer::NoStatusAfterAMessage => {}
    }
    let end_on_headers = !matches!(answer, Answer::NoStatusAfterAMessage);
    let Ok(mut send) = respond.send_response(response, end_on_headers) else {
        return;
    };
    if !end_on_headers {
        let _ = send.send_data(Bytes::from_static(ONE_MESSAGE), true);
    }
}

/// An adapter client sending `x-answer: answer`, through
/// `ClientCompressionLayer` (compressing with `compression`) if `layer`.
fn client(addr: SocketAddr, answer: Answer, layer: bool, compression: Option<&str>) -> EchoClient {
    let metadata = MetadataLayer::new(&[("x-answer", answer.name())]).expect("valid metadata");
    let options = ClientOptions {
        compression: compression.and_then(compression_by_name),
        metadata,
    };
    if layer {
        adapter::grpc_client(addr, &options)
    } else {
        adapter::client_with(addr, &options)
    }
}

/// Every call kind's outcome: for the streaming ones the number of
/// messages and the status they ended with, for the others their error.
struct Outcomes {
    unary: Option<CallError>,
    client_stream: Option<CallError>,
    server_stream: Result<(u32, Option<volo_grpc::Status>), CallError>,
    bidi: Result<(u32, Option<volo_grpc::Status>), CallError>,
}

async fn call_all(client: &EchoClient) -> Outcomes {
    Outcomes {
        unary: calls::unary(client, 0).await.err(),
        client_stream: calls::client_stream(client, 0, 2).await.err(),
        server_stream: calls::server_stream(client, 0, 3).await,
        // No requests: an empty bidi call is where trailers-only `OK`
        // comes from.
        bidi: calls::bidi(client, 0, 0).await,
    }
}

/// Every failed call kind's status, named; panics on a call that did not
/// fail, or failed without a status.
fn statuses(outcomes: Outcomes, case: &str) -> Vec<(&'static str, volo_grpc::Status)> {
    let call = |rpc, error: Option<CallError>| match error {
        Some(CallError::Status(status)) => (rpc, *status),
        other => panic!("{case}, {rpc}: {other:?}, expected a status"),
    };
    let stream = |rpc, outcome: Result<(u32, Option<volo_grpc::Status>), CallError>| match outcome {
        Ok((_, Some(status))) => (rpc, status),
        Err(CallError::Status(status)) => (rpc, *status),
        other => panic!("{case}, {rpc}: {other:?}, expected a status"),
    };
    vec![
        call("unary", outcomes.unary),
        call("client stream", outcomes.client_stream),
        stream("server stream", outcomes.server_stream),
        stream("bidi", outcomes.bidi),
    ]
}

/// How many messages a stream had if it ended OK, else what went wrong.
fn ended_ok(outcome: Result<(u32, Option<volo_grpc::Status>), CallError>) -> Result<u32, String> {
    match outcome {
        Ok((received, None)) => Ok(received),
        Ok((received, Some(status))) => Err(format!("{received} messages, then {status:?}")),
        Err(err) => Err(err.to_string()),
    }
}

const COMPRESSIONS: [Option<&str>; 3] = [None, Some("gzip"), Some("deflate")];

/// Trailers-only `OK`, with `ClientCompressionLayer` or without it (the
/// client as the README builds it: the build hook's transport hands the
/// response headers to the stream): the streaming calls end OK with no
/// messages; the calls that need a response say it is missing, as stock
/// volo-grpc does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trailers_only_ok_is_an_empty_stream() {
    let server = raw_server().await;
    for (answer, layer) in [Answer::TrailersOnlyOk, Answer::TrailersOnlyOkGzip]
        .into_iter()
        .flat_map(|answer| [(answer, true), (answer, false)])
    {
        for compression in COMPRESSIONS {
            let case = format!("{answer:?}, layer {layer}, {compression:?}");
            let outcomes = call_all(&client(server.addr, answer, layer, compression)).await;
            assert_eq!(
                ended_ok(outcomes.server_stream),
                Ok(0),
                "{case}, server stream"
            );
            assert_eq!(ended_ok(outcomes.bidi), Ok(0), "{case}, bidi");
            for (rpc, error) in [
                ("unary", outcomes.unary),
                ("client stream", outcomes.client_stream),
            ] {
                match error {
                    Some(CallError::Status(status)) => {
                        assert_eq!(status.code(), volo_grpc::Code::Internal, "{case}, {rpc}");
                        assert_eq!(status.message(), "Missing response message.", "{case}");
                    }
                    other => panic!("{case}, {rpc}: {other:?}"),
                }
            }
        }
    }
}

/// A trailers-only error is that status, all of it, on every call kind,
/// with the layer or without (volo-grpc's transport reads it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trailers_only_error_is_that_error() {
    let server = raw_server().await;
    let expected = the_error();
    for layer in [true, false] {
        for compression in COMPRESSIONS {
            let case = format!("layer {layer}, {compression:?}");
            let client = client(server.addr, Answer::TrailersOnlyError, layer, compression);
            for (rpc, status) in statuses(call_all(&client).await, &case) {
                assert_eq!(
                    status.code() as i32,
                    expected.code().as_i32(),
                    "{case}, {rpc}"
                );
                assert_eq!(status.message(), expected.message(), "{case}, {rpc}");
                assert_eq!(status.details(), expected.details(), "{case}, {rpc}");
                assert_eq!(
                    status.metadata().get("x-extra").map(|v| v.as_bytes()),
                    Some(&b"yes"[..]),
                    "{case}, {rpc}: {status:?}"
                );
            }
        }
    }
}

/// No `grpc-status` in the headers nor anywhere after: an error on every
/// call kind, never a silent `OK` (stock volo-grpc ends such a stream OK),
/// with the layer or without.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_grpc_status_anywhere_is_an_error() {
    let server = raw_server().await;
    for (answer, layer) in [Answer::NoStatus, Answer::NoStatusAfterAMessage]
        .into_iter()
        .flat_map(|answer| [(answer, true), (answer, false)])
    {
        for compression in COMPRESSIONS {
            let case = format!("{answer:?}, layer {layer}, {compression:?}");
            let client = client(server.addr, answer, layer, compression);
            for (rpc, status) in statuses(call_all(&client).await, &case) {
                assert_eq!(status.code(), volo_grpc::Code::Internal, "{case}, {rpc}");
                assert_eq!(
                    status.message(),
                    "protocol error: response ended without a grpc-status",
                    "{case}, {rpc}"
                );
            }
        }
    }
}
