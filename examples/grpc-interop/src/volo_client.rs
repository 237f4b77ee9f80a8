//! The standard interop client cases on volo-grpc with grpc-stream-codec's
//! volo adapter, every client behind its `ClientCompressionLayer` (which
//! also hands the adapter trailers-only answers).
//!
//! As on tonic, a call is cancelled by dropping it: the cancel cases check
//! that the call was live when dropped and that the client serves the next
//! call (see [`crate::tonic_client`]).

use std::net::SocketAddr;
use std::process::ExitCode;

use futures::{Stream, StreamExt, stream};
use grpc_stream_codec::volo::{ClientCompressionLayer, RecvStream};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use volo_grpc::codec::compression::{CompressionEncoding, GzipConfig};
use volo_grpc::context::ClientContext;
use volo_grpc::metadata::{MetadataMap, MetadataValue};
use volo_grpc::{Code, Request, Status};

use crate::client_support::{SignalFirstPoll, check_zeros, deadline_not_enforced, zeros};
use crate::report::{ClientArgs, Report, ensure};
use crate::spec::*;
use crate::volo_gen::{
    BoolValue, EchoStatus, Empty, Payload, PayloadType, ResponseParameters, SimpleRequest,
    StreamingInputCallRequest, StreamingOutputCallRequest, StreamingOutputCallResponse,
    TestServiceClientBuilder, TestServiceGenericClient, TestServiceRequestSend,
    TestServiceResponseRecv, UnimplementedServiceClientBuilder,
};

/// The service stack under a generated `TestService` client.
pub trait Stack:
    volo::Service<
        ClientContext,
        Request<TestServiceRequestSend>,
        Response = volo_grpc::Response<TestServiceResponseRecv>,
        Error = Status,
    > + Send
    + Sync
    + 'static
{
}

impl<T> Stack for T where
    T: volo::Service<
            ClientContext,
            Request<TestServiceRequestSend>,
            Response = volo_grpc::Response<TestServiceResponseRecv>,
            Error = Status,
        > + Send
        + Sync
        + 'static
{
}

fn gzip() -> CompressionEncoding {
    CompressionEncoding::Gzip(Some(GzipConfig::default()))
}

/// The clients of one run.
pub struct Clients<S> {
    addr: SocketAddr,
    plain: TestServiceGenericClient<S>,
    gzip: TestServiceGenericClient<S>,
    deadline: TestServiceGenericClient<S>,
}

/// Builds the clients for `addr`.
pub fn clients(addr: SocketAddr) -> Clients<impl Stack> {
    let build = |send: Option<CompressionEncoding>, deadline| {
        TestServiceClientBuilder::new("grpc-interop")
            .address(addr)
            .rpc_timeout(deadline)
            .layer_inner(ClientCompressionLayer::new(send, send))
            .build()
    };
    Clients {
        addr,
        plain: build(None, None),
        gzip: build(Some(gzip()), None),
        deadline: build(None, Some(SLEEPING_SERVER_DEADLINE)),
    }
}

fn payload(size: usize) -> Option<Payload> {
    Some(Payload {
        r#type: PayloadType::default(),
        body: zeros(size),
    })
}

fn body(payload: &Option<Payload>) -> Option<&[u8]> {
    payload.as_ref().map(|payload| &payload.body[..])
}

fn flag(value: bool) -> Option<BoolValue> {
    Some(BoolValue { value })
}

fn large_request() -> SimpleRequest {
    SimpleRequest {
        response_size: LARGE_RESPONSE,
        payload: payload(LARGE_REQUEST),
        ..SimpleRequest::default()
    }
}

fn parameters(size: i32, compressed: Option<bool>) -> ResponseParameters {
    ResponseParameters {
        size,
        compressed: compressed.and_then(flag),
        ..ResponseParameters::default()
    }
}

fn output_request(sizes: &[i32], body_size: usize) -> StreamingOutputCallRequest {
    StreamingOutputCallRequest {
        response_parameters: sizes.iter().map(|size| parameters(*size, None)).collect(),
        payload: (body_size > 0).then(|| payload(body_size)).flatten(),
        ..StreamingOutputCallRequest::default()
    }
}

fn status_text(status: &Status) -> String {
    format!("status {:?} ({:?})", status.code(), status.message())
}

fn call_failed(status: Status) -> String {
    status_text(&status)
}

/// `result` must be the error `code` (with `message`, when given).
fn expect_error<T>(
    result: Result<T, Status>,
    code: Code,
    message: Option<&str>,
) -> Result<(), String> {
    match result {
        Ok(_) => Err(format!("the call succeeded, expected {code:?}")),
        Err(status) if status.code() != code => {
            Err(format!("{}, expected {code:?}", status_text(&status)))
        }
        Err(status) => match message {
            Some(message) if status.message() != message => Err(format!(
                "message {:?}, expected {message:?}",
                status.message()
            )),
            _ => Ok(()),
        },
    }
}

async fn empty_unary(c: &Clients<impl Stack>) -> Result<(), String> {
    let reply = c.plain.empty_call(Empty {}).await.map_err(call_failed)?;
    ensure(reply.into_inner() == Empty {}, || {
        "reply is not Empty".to_owned()
    })
}

async fn large_unary(c: &Clients<impl Stack>) -> Result<(), String> {
    let reply = c
        .plain
        .unary_call(large_request())
        .await
        .map_err(call_failed)?;
    check_zeros(
        body(&reply.get_ref().payload),
        LARGE_RESPONSE as usize,
        "response",
    )
}

async fn client_compressed_unary(c: &Clients<impl Stack>) -> Result<(), String> {
    let probe = SimpleRequest {
        expect_compressed: flag(true),
        ..large_request()
    };
    expect_error(
        c.plain.unary_call(probe.clone()).await,
        Code::InvalidArgument,
        None,
    )
    .map_err(|why| format!("uncompressed probe: {why}"))?;
    let reply = c.gzip.unary_call(probe).await.map_err(call_failed)?;
    check_zeros(
        body(&reply.get_ref().payload),
        LARGE_RESPONSE as usize,
        "compressed request",
    )?;
    let plain = SimpleRequest {
        expect_compressed: flag(false),
        ..large_request()
    };
    let reply = c.plain.unary_call(plain).await.map_err(call_failed)?;
    check_zeros(
        body(&reply.get_ref().payload),
        LARGE_RESPONSE as usize,
        "uncompressed request",
    )
}

async fn server_compressed_unary(c: &Clients<impl Stack>) -> Result<(), String> {
    for compressed in [true, false] {
        let request = SimpleRequest {
            response_compressed: flag(compressed),
            ..large_request()
        };
        let reply = c.gzip.unary_call(request).await.map_err(call_failed)?;
        let what = format!("response_compressed={compressed}");
        check_zeros(
            body(&reply.get_ref().payload),
            LARGE_RESPONSE as usize,
            &what,
        )?;
        if compressed {
            let encoding = reply.metadata().get("grpc-encoding");
            ensure(
                encoding.is_some_and(|e| e.as_bytes() != b"identity"),
                || format!("{what}: the response is not compressed (grpc-encoding {encoding:?})"),
            )?;
        }
    }
    Ok(())
}

fn input_requests(sizes: &[usize], expect: &[Option<bool>]) -> Vec<StreamingInputCallRequest> {
    sizes
        .iter()
        .zip(expect.iter().chain(std::iter::repeat(&None)))
        .map(|(size, expect)| StreamingInputCallRequest {
            payload: payload(*size),
            expect_compressed: expect.and_then(flag),
        })
        .collect()
}

async fn client_streaming(c: &Clients<impl Stack>) -> Result<(), String> {
    let requests = stream::iter(input_requests(&CLIENT_STREAMING_SIZES, &[]));
    let reply = c
        .plain
        .streaming_input_call(requests)
        .await
        .map_err(call_failed)?;
    let total = reply.get_ref().aggregated_payload_size;
    ensure(total == CLIENT_STREAMING_TOTAL, || {
        format!("aggregated {total}, expected {CLIENT_STREAMING_TOTAL}")
    })
}

async fn client_compressed_streaming(c: &Clients<impl Stack>) -> Result<(), String> {
    let probe = stream::iter(input_requests(
        &COMPRESSED_STREAMING_SIZES[..1],
        &[Some(true)],
    ));
    expect_error(
        c.plain.streaming_input_call(probe).await,
        Code::InvalidArgument,
        None,
    )
    .map_err(|why| format!("uncompressed probe: {why}"))?;
    // The layer compresses a whole call: the second message goes
    // compressed too, which its expect_compressed=false does not forbid.
    let requests = input_requests(&COMPRESSED_STREAMING_SIZES, &[Some(true), Some(false)]);
    let reply = c
        .gzip
        .streaming_input_call(stream::iter(requests))
        .await
        .map_err(call_failed)?;
    let expected: usize = COMPRESSED_STREAMING_SIZES.iter().sum();
    let total = reply.get_ref().aggregated_payload_size;
    ensure(total as usize == expected, || {
        format!("aggregated {total}, expected {expected}")
    })
}

/// Reads `responses` to the end: one of each of `sizes`, then nothing.
async fn read_sizes(
    responses: impl Stream<Item = Result<StreamingOutputCallResponse, Status>>,
    sizes: &[i32],
) -> Result<(), String> {
    let mut responses = std::pin::pin!(responses);
    for (i, size) in sizes.iter().enumerate() {
        let response = responses
            .next()
            .await
            .transpose()
            .map_err(call_failed)?
            .ok_or_else(|| format!("{i} responses, expected {}", sizes.len()))?;
        check_zeros(
            body(&response.payload),
            *size as usize,
            &format!("response {i}"),
        )?;
    }
    let extra = responses.next().await.transpose().map_err(call_failed)?;
    ensure(extra.is_none(), || {
        format!("more than {} responses", sizes.len())
    })
}

async fn server_streaming(c: &Clients<impl Stack>) -> Result<(), String> {
    let request = output_request(&SERVER_STREAMING_SIZES, 0);
    let responses = c
        .plain
        .streaming_output_call(request)
        .await
        .map_err(call_failed)?;
    read_sizes(responses.into_inner(), &SERVER_STREAMING_SIZES).await
}

async fn server_compressed_streaming(c: &Clients<impl Stack>) -> Result<(), String> {
    let [compressed, uncompressed] = SERVER_COMPRESSED_SIZES;
    let request = StreamingOutputCallRequest {
        response_parameters: vec![
            parameters(compressed, Some(true)),
            parameters(uncompressed, Some(false)),
        ],
        ..StreamingOutputCallRequest::default()
    };
    let responses = c
        .gzip
        .streaming_output_call(request)
        .await
        .map_err(call_failed)?;
    read_sizes(responses.into_inner(), &SERVER_COMPRESSED_SIZES).await
}

async fn ping_pong(c: &Clients<impl Stack>) -> Result<(), String> {
    let rounds: Vec<(i32, usize)> = SERVER_STREAMING_SIZES
        .into_iter()
        .zip(CLIENT_STREAMING_SIZES)
        .collect();
    let (requests, stream) = mpsc::channel(1);
    let send = |(size, body_size): (i32, usize)| {
        let requests = requests.clone();
        async move {
            requests
                .send(output_request(&[size], body_size))
                .await
                .map_err(|_| "the request stream closed".to_owned())
        }
    };
    // Some servers send their headers with the first response, so the
    // call is awaited once the first request is queued.
    send(rounds[0]).await?;
    let responses = c
        .plain
        .full_duplex_call(ReceiverStream::new(stream))
        .await
        .map_err(call_failed)?
        .into_inner();
    let mut responses = std::pin::pin!(responses);
    for (i, (size, _)) in rounds.iter().enumerate() {
        if i > 0 {
            send(rounds[i]).await?;
        }
        let response = responses
            .next()
            .await
            .transpose()
            .map_err(call_failed)?
            .ok_or_else(|| format!("the stream ended after {i} responses"))?;
        check_zeros(
            body(&response.payload),
            *size as usize,
            &format!("response {i}"),
        )?;
    }
    drop(requests);
    let extra = responses.next().await.transpose().map_err(call_failed)?;
    ensure(extra.is_none(), || {
        "a response after the last request".to_owned()
    })
}

async fn empty_stream(c: &Clients<impl Stack>) -> Result<(), String> {
    let requests = stream::empty::<StreamingOutputCallRequest>();
    let responses = c
        .plain
        .full_duplex_call(requests)
        .await
        .map_err(call_failed)?;
    let mut responses = std::pin::pin!(responses.into_inner());
    let first = responses.next().await.transpose().map_err(call_failed)?;
    ensure(first.is_none(), || "a response to no requests".to_owned())
}

async fn client_still_serves(c: &Clients<impl Stack>) -> Result<(), String> {
    c.plain
        .empty_call(Empty {})
        .await
        .map(drop)
        .map_err(|status| {
            format!(
                "the call after the cancelled one failed: {}",
                status_text(&status)
            )
        })
}

async fn cancel_after_begin(c: &Clients<impl Stack>) -> Result<(), String> {
    let (requests, begun) = SignalFirstPoll::new(stream::pending::<StreamingInputCallRequest>());
    let call = c.plain.streaming_input_call(requests);
    tokio::select! {
        answered = call => {
            return Err(format!("answered before it was cancelled: {:?}", answered.map(drop)));
        }
        _ = begun => {}
    }
    // Dropping the call (above, as select! returns) cancels it.
    client_still_serves(c).await
}

async fn cancel_after_first_response(c: &Clients<impl Stack>) -> Result<(), String> {
    let (requests, stream) = mpsc::channel(1);
    let first = output_request(&[SERVER_STREAMING_SIZES[0]], CLIENT_STREAMING_SIZES[0]);
    requests
        .send(first)
        .await
        .map_err(|_| "request stream closed")?;
    let responses = c
        .plain
        .full_duplex_call(ReceiverStream::new(stream))
        .await
        .map_err(call_failed)?
        .into_inner();
    let mut responses = Box::pin(responses);
    let response = responses
        .next()
        .await
        .transpose()
        .map_err(call_failed)?
        .ok_or("the stream ended before its first response")?;
    check_zeros(
        body(&response.payload),
        SERVER_STREAMING_SIZES[0] as usize,
        "first response",
    )?;
    drop((responses, requests));
    client_still_serves(c).await
}

async fn timeout_on_sleeping_server(c: &Clients<impl Stack>) -> Result<(), String> {
    let (requests, stream) = mpsc::channel(1);
    let first = output_request(&[SERVER_STREAMING_SIZES[0]], CLIENT_STREAMING_SIZES[0]);
    requests
        .send(first)
        .await
        .map_err(|_| "request stream closed")?;
    // volo-grpc's deadline (rpc_timeout) covers the response headers and
    // sends grpc-timeout; the stream stays open, so only a deadline ends it.
    let call = async {
        let responses = c
            .deadline
            .full_duplex_call(ReceiverStream::new(stream))
            .await?;
        let mut responses = std::pin::pin!(responses.into_inner());
        while responses.next().await.transpose()?.is_some() {}
        Ok::<(), Status>(())
    };
    // Only the call's deadline may end it, on either side; this test's own
    // timer firing means nothing did.
    let outcome = match tokio::time::timeout(DEADLINE_GUARD, call).await {
        Err(_elapsed) => return Err(deadline_not_enforced()),
        Ok(outcome) => outcome,
    };
    drop(requests);
    match outcome {
        Ok(()) => Err("the call ended OK, expected DEADLINE_EXCEEDED".to_owned()),
        Err(status) if status.code() == Code::DeadlineExceeded => Ok(()),
        Err(status) => Err(format!(
            "{}, expected DEADLINE_EXCEEDED",
            status_text(&status)
        )),
    }
}

fn add_echo_metadata(metadata: &mut MetadataMap) {
    metadata.insert(ECHO_INITIAL, MetadataValue::from_static(ECHO_INITIAL_VALUE));
    metadata.insert_bin(
        ECHO_TRAILING_BIN,
        MetadataValue::from_bytes(&ECHO_TRAILING_VALUE),
    );
}

fn check_echo(initial: &MetadataMap, trailing: &MetadataMap, what: &str) -> Result<(), String> {
    let echoed = initial.get(ECHO_INITIAL).map(|value| value.to_str());
    ensure(matches!(echoed, Some(Ok(ECHO_INITIAL_VALUE))), || {
        format!("{what}: initial metadata {echoed:?}")
    })?;
    let echoed = trailing
        .get_bin(ECHO_TRAILING_BIN)
        .map(|value| value.to_bytes());
    ensure(
        matches!(&echoed, Some(Ok(bytes)) if bytes[..] == ECHO_TRAILING_VALUE),
        || format!("{what}: trailing metadata {echoed:?}"),
    )
}

/// FullDuplexCall, made the way the generated client makes it, but keeping
/// the adapter's `RecvStream` (the generated method hides it behind
/// `impl Stream`), whose trailers custom_metadata checks.
async fn full_duplex_with_trailers<S: Stack>(
    client: &TestServiceGenericClient<S>,
    request: StreamingOutputCallRequest,
) -> Result<(MetadataMap, RecvStream<StreamingOutputCallResponse>), Status> {
    let requests = stream::iter([Ok(request)]).boxed();
    let mut req = Request::new(TestServiceRequestSend::FullDuplexCall(requests));
    add_echo_metadata(req.metadata_mut());
    let mut cx = client.0.make_cx("/grpc.testing.TestService/FullDuplexCall");
    let (metadata, _, messages) = volo::Service::call(&client.0, &mut cx, req)
        .await?
        .into_parts();
    match messages {
        TestServiceResponseRecv::FullDuplexCall(messages) => Ok((metadata, messages)),
        _ => Err(Status::internal(
            "a FullDuplexCall answered as another method",
        )),
    }
}

async fn custom_metadata(c: &Clients<impl Stack>) -> Result<(), String> {
    let mut request = Request::new(large_request());
    add_echo_metadata(request.metadata_mut());
    let reply = c.plain.unary_call(request).await.map_err(call_failed)?;
    check_zeros(
        body(&reply.get_ref().payload),
        LARGE_RESPONSE as usize,
        "UnaryCall",
    )?;
    // The generated unary call merges the trailers into the metadata.
    check_echo(reply.metadata(), reply.metadata(), "UnaryCall")?;

    let request = output_request(&[LARGE_RESPONSE], LARGE_REQUEST);
    let (initial, mut responses) = full_duplex_with_trailers(&c.plain, request)
        .await
        .map_err(call_failed)?;
    let reply = responses
        .message()
        .await
        .map_err(call_failed)?
        .ok_or("FullDuplexCall: no response")?;
    check_zeros(
        body(&reply.payload),
        LARGE_RESPONSE as usize,
        "FullDuplexCall",
    )?;
    ensure(
        responses.message().await.map_err(call_failed)?.is_none(),
        || "FullDuplexCall: a second response".to_owned(),
    )?;
    let trailing = responses
        .trailers()
        .await
        .map_err(call_failed)?
        .ok_or("FullDuplexCall: no trailers")?;
    check_echo(&initial, &trailing, "FullDuplexCall")
}

fn echo_status(message: &str) -> Option<EchoStatus> {
    Some(EchoStatus {
        code: ECHO_STATUS_CODE,
        message: message.to_owned().into(),
    })
}

async fn full_duplex_status(c: &Clients<impl Stack>, message: &str) -> Result<(), Status> {
    let request = StreamingOutputCallRequest {
        response_status: echo_status(message),
        ..StreamingOutputCallRequest::default()
    };
    let responses = c.plain.full_duplex_call(stream::iter([request])).await?;
    let mut responses = std::pin::pin!(responses.into_inner());
    while responses.next().await.transpose()?.is_some() {}
    Ok(())
}

async fn status_code_and_message(c: &Clients<impl Stack>) -> Result<(), String> {
    let request = SimpleRequest {
        response_status: echo_status(STATUS_MESSAGE),
        ..SimpleRequest::default()
    };
    expect_error(
        c.plain.unary_call(request).await,
        Code::Unknown,
        Some(STATUS_MESSAGE),
    )
    .map_err(|why| format!("UnaryCall: {why}"))?;
    expect_error(
        full_duplex_status(c, STATUS_MESSAGE).await,
        Code::Unknown,
        Some(STATUS_MESSAGE),
    )
    .map_err(|why| format!("FullDuplexCall: {why}"))
}

async fn special_status_message(c: &Clients<impl Stack>) -> Result<(), String> {
    let request = SimpleRequest {
        response_status: echo_status(SPECIAL_STATUS_MESSAGE),
        ..SimpleRequest::default()
    };
    expect_error(
        c.plain.unary_call(request).await,
        Code::Unknown,
        Some(SPECIAL_STATUS_MESSAGE),
    )
}

async fn unimplemented_method(c: &Clients<impl Stack>) -> Result<(), String> {
    expect_error(
        c.plain.unimplemented_call(Empty {}).await,
        Code::Unimplemented,
        None,
    )
}

async fn unimplemented_service(c: &Clients<impl Stack>) -> Result<(), String> {
    let client = UnimplementedServiceClientBuilder::new("grpc-interop")
        .address(c.addr)
        .layer_inner(ClientCompressionLayer::default())
        .build();
    expect_error(
        client.unimplemented_call(Empty {}).await,
        Code::Unimplemented,
        None,
    )
}

/// Runs one case by name.
pub async fn run_case(c: &Clients<impl Stack>, case: &str) -> Result<(), String> {
    let run = async {
        match case {
            "empty_unary" => empty_unary(c).await,
            "large_unary" => large_unary(c).await,
            "client_compressed_unary" => client_compressed_unary(c).await,
            "server_compressed_unary" => server_compressed_unary(c).await,
            "client_streaming" => client_streaming(c).await,
            "client_compressed_streaming" => client_compressed_streaming(c).await,
            "server_streaming" => server_streaming(c).await,
            "server_compressed_streaming" => server_compressed_streaming(c).await,
            "ping_pong" => ping_pong(c).await,
            "empty_stream" => empty_stream(c).await,
            "cancel_after_begin" => cancel_after_begin(c).await,
            "cancel_after_first_response" => cancel_after_first_response(c).await,
            "timeout_on_sleeping_server" => timeout_on_sleeping_server(c).await,
            "custom_metadata" => custom_metadata(c).await,
            "status_code_and_message" => status_code_and_message(c).await,
            "special_status_message" => special_status_message(c).await,
            "unimplemented_method" => unimplemented_method(c).await,
            "unimplemented_service" => unimplemented_service(c).await,
            other => Err(format!("unknown case {other:?}")),
        }
    };
    tokio::time::timeout(STEP_TIMEOUT, run)
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {STEP_TIMEOUT:?}")))
}

/// Runs `args`' cases and prints the report.
pub async fn run(args: &ClientArgs) -> ExitCode {
    let authority = args.authority();
    let addr = match tokio::net::lookup_host(&authority)
        .await
        .map(|mut addrs| addrs.next())
    {
        Ok(Some(addr)) => addr,
        Ok(None) => {
            eprintln!("{authority}: no address");
            return ExitCode::FAILURE;
        }
        Err(err) => {
            eprintln!("{authority}: {err}");
            return ExitCode::FAILURE;
        }
    };
    let clients = clients(addr);
    let mut report = Report::default();
    for case in &args.cases {
        report.record(case, run_case(&clients, case).await);
    }
    report.finish()
}
