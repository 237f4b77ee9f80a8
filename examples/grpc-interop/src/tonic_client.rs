//! The standard interop client cases on tonic with grpc-stream-codec's full
//! framing (the generated client rewritten by the build hook).
//!
//! Rust has no call object to cancel: a call is cancelled by dropping it,
//! which resets its HTTP/2 stream with `CANCEL`, and the client sees no
//! status of its own. The cancel cases therefore check what can fail: the
//! call was live (begun, unanswered) when dropped, and the connection
//! serves the next call.

use std::process::ExitCode;

use futures::stream;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::codec::CompressionEncoding;
use tonic::metadata::{BinaryMetadataValue, MetadataValue};
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Request, Status};

use crate::client_support::{SignalFirstPoll, check_zeros, deadline_not_enforced, zeros};
use crate::report::{ClientArgs, Report, ensure};
use crate::spec::*;
use crate::tonic_gen::test_service_client::TestServiceClient;
use crate::tonic_gen::unimplemented_service_client::UnimplementedServiceClient;
use crate::tonic_gen::{
    BoolValue, EchoStatus, Empty, Payload, ResponseParameters, SimpleRequest,
    StreamingInputCallRequest, StreamingOutputCallRequest,
};

type Client = TestServiceClient<Channel>;

/// The clients of one run, all on one channel.
pub struct Clients {
    channel: Channel,
    plain: Client,
    gzip: Client,
}

impl Clients {
    /// Connects to `args`' server.
    pub async fn connect(args: &ClientArgs) -> Result<Clients, String> {
        let uri = format!("http://{}", args.authority());
        let channel = Endpoint::from_shared(uri.clone())
            .map_err(|err| format!("{uri}: {err}"))?
            .connect()
            .await
            .map_err(|err| format!("cannot connect to {uri}: {err}"))?;
        Ok(Clients::new(channel))
    }

    /// The clients on `channel`.
    pub fn new(channel: Channel) -> Clients {
        let plain = TestServiceClient::new(channel.clone());
        let gzip = TestServiceClient::new(channel.clone())
            .send_compressed(CompressionEncoding::Gzip)
            .accept_compressed(CompressionEncoding::Gzip);
        Clients {
            channel,
            plain,
            gzip,
        }
    }
}

fn payload(size: usize) -> Option<Payload> {
    Some(Payload {
        r#type: 0,
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

fn call_failed(status: Status) -> String {
    status_text(&status)
}

async fn empty_unary(c: &Clients) -> Result<(), String> {
    let reply = c
        .plain
        .clone()
        .empty_call(Empty {})
        .await
        .map_err(call_failed)?;
    ensure(reply.into_inner() == Empty {}, || {
        "reply is not Empty".to_owned()
    })
}

async fn large_unary(c: &Clients) -> Result<(), String> {
    let reply = c
        .plain
        .clone()
        .unary_call(large_request())
        .await
        .map_err(call_failed)?;
    check_zeros(
        body(&reply.get_ref().payload),
        LARGE_RESPONSE as usize,
        "response",
    )
}

async fn client_compressed_unary(c: &Clients) -> Result<(), String> {
    let probe = SimpleRequest {
        expect_compressed: flag(true),
        ..large_request()
    };
    expect_error(
        c.plain.clone().unary_call(probe.clone()).await,
        Code::InvalidArgument,
        None,
    )
    .map_err(|why| format!("uncompressed probe: {why}"))?;
    let reply = c
        .gzip
        .clone()
        .unary_call(probe)
        .await
        .map_err(call_failed)?;
    check_zeros(
        body(&reply.get_ref().payload),
        LARGE_RESPONSE as usize,
        "compressed request",
    )?;
    let plain = SimpleRequest {
        expect_compressed: flag(false),
        ..large_request()
    };
    let reply = c
        .plain
        .clone()
        .unary_call(plain)
        .await
        .map_err(call_failed)?;
    check_zeros(
        body(&reply.get_ref().payload),
        LARGE_RESPONSE as usize,
        "uncompressed request",
    )
}

async fn server_compressed_unary(c: &Clients) -> Result<(), String> {
    for compressed in [true, false] {
        let request = SimpleRequest {
            response_compressed: flag(compressed),
            ..large_request()
        };
        let reply = c
            .gzip
            .clone()
            .unary_call(request)
            .await
            .map_err(call_failed)?;
        let what = format!("response_compressed={compressed}");
        check_zeros(
            body(&reply.get_ref().payload),
            LARGE_RESPONSE as usize,
            &what,
        )?;
        if compressed {
            // Messages' flags are not visible to a client; the call's
            // encoding is.
            let encoding = reply.metadata().get("grpc-encoding");
            ensure(encoding.is_some_and(|e| e != "identity"), || {
                format!("{what}: the response is not compressed (grpc-encoding {encoding:?})")
            })?;
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

async fn client_streaming(c: &Clients) -> Result<(), String> {
    let requests = stream::iter(input_requests(&CLIENT_STREAMING_SIZES, &[]));
    let reply = c
        .plain
        .clone()
        .streaming_input_call(requests)
        .await
        .map_err(call_failed)?;
    let total = reply.get_ref().aggregated_payload_size;
    ensure(total == CLIENT_STREAMING_TOTAL, || {
        format!("aggregated {total}, expected {CLIENT_STREAMING_TOTAL}")
    })
}

async fn client_compressed_streaming(c: &Clients) -> Result<(), String> {
    let probe = stream::iter(input_requests(
        &COMPRESSED_STREAMING_SIZES[..1],
        &[Some(true)],
    ));
    expect_error(
        c.plain.clone().streaming_input_call(probe).await,
        Code::InvalidArgument,
        None,
    )
    .map_err(|why| format!("uncompressed probe: {why}"))?;
    // tonic compresses a whole call: the second message goes compressed
    // too, which its expect_compressed=false does not forbid.
    let requests = input_requests(&COMPRESSED_STREAMING_SIZES, &[Some(true), Some(false)]);
    let reply = c
        .gzip
        .clone()
        .streaming_input_call(stream::iter(requests))
        .await
        .map_err(call_failed)?;
    let expected: usize = COMPRESSED_STREAMING_SIZES.iter().sum();
    let total = reply.get_ref().aggregated_payload_size;
    ensure(total as usize == expected, || {
        format!("aggregated {total}, expected {expected}")
    })
}

async fn read_sizes(
    client: &mut Client,
    request: StreamingOutputCallRequest,
    sizes: &[i32],
) -> Result<(), String> {
    let mut responses = client
        .streaming_output_call(request)
        .await
        .map_err(call_failed)?
        .into_inner();
    for (i, size) in sizes.iter().enumerate() {
        let response = responses
            .message()
            .await
            .map_err(call_failed)?
            .ok_or_else(|| format!("{i} responses, expected {}", sizes.len()))?;
        check_zeros(
            body(&response.payload),
            *size as usize,
            &format!("response {i}"),
        )?;
    }
    let extra = responses.message().await.map_err(call_failed)?;
    ensure(extra.is_none(), || {
        format!("more than {} responses", sizes.len())
    })
}

async fn server_streaming(c: &Clients) -> Result<(), String> {
    let request = output_request(&SERVER_STREAMING_SIZES, 0);
    read_sizes(&mut c.plain.clone(), request, &SERVER_STREAMING_SIZES).await
}

async fn server_compressed_streaming(c: &Clients) -> Result<(), String> {
    let [compressed, uncompressed] = SERVER_COMPRESSED_SIZES;
    let request = StreamingOutputCallRequest {
        response_parameters: vec![
            parameters(compressed, Some(true)),
            parameters(uncompressed, Some(false)),
        ],
        ..StreamingOutputCallRequest::default()
    };
    read_sizes(&mut c.gzip.clone(), request, &SERVER_COMPRESSED_SIZES).await
}

async fn ping_pong(c: &Clients) -> Result<(), String> {
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
    let mut responses = c
        .plain
        .clone()
        .full_duplex_call(ReceiverStream::new(stream))
        .await
        .map_err(call_failed)?
        .into_inner();
    for (i, (size, _)) in rounds.iter().enumerate() {
        if i > 0 {
            send(rounds[i]).await?;
        }
        let response = responses
            .message()
            .await
            .map_err(call_failed)?
            .ok_or_else(|| format!("the stream ended after {i} responses"))?;
        check_zeros(
            body(&response.payload),
            *size as usize,
            &format!("response {i}"),
        )?;
    }
    drop(requests);
    let extra = responses.message().await.map_err(call_failed)?;
    ensure(extra.is_none(), || {
        "a response after the last request".to_owned()
    })
}

async fn empty_stream(c: &Clients) -> Result<(), String> {
    let requests = stream::empty::<StreamingOutputCallRequest>();
    let mut responses = c
        .plain
        .clone()
        .full_duplex_call(requests)
        .await
        .map_err(call_failed)?
        .into_inner();
    let first = responses.message().await.map_err(call_failed)?;
    ensure(first.is_none(), || "a response to no requests".to_owned())
}

/// After a cancelled call: the channel must serve the next one.
async fn channel_still_serves(c: &Clients) -> Result<(), String> {
    c.plain
        .clone()
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

async fn cancel_after_begin(c: &Clients) -> Result<(), String> {
    let (requests, begun) = SignalFirstPoll::new(stream::pending::<StreamingInputCallRequest>());
    let mut client = c.plain.clone();
    let call = client.streaming_input_call(requests);
    tokio::select! {
        answered = call => {
            return Err(format!("answered before it was cancelled: {:?}", answered.map(drop)));
        }
        _ = begun => {}
    }
    // Dropping the call (above, as select! returns) cancels it.
    channel_still_serves(c).await
}

async fn cancel_after_first_response(c: &Clients) -> Result<(), String> {
    let (requests, stream) = mpsc::channel(1);
    let first = output_request(&[SERVER_STREAMING_SIZES[0]], CLIENT_STREAMING_SIZES[0]);
    requests
        .send(first)
        .await
        .map_err(|_| "request stream closed")?;
    let mut responses = c
        .plain
        .clone()
        .full_duplex_call(ReceiverStream::new(stream))
        .await
        .map_err(call_failed)?
        .into_inner();
    let response = responses
        .message()
        .await
        .map_err(call_failed)?
        .ok_or("the stream ended before its first response")?;
    check_zeros(
        body(&response.payload),
        SERVER_STREAMING_SIZES[0] as usize,
        "first response",
    )?;
    drop((responses, requests));
    channel_still_serves(c).await
}

async fn timeout_on_sleeping_server(c: &Clients) -> Result<(), String> {
    let (requests, stream) = mpsc::channel(1);
    let first = output_request(&[SERVER_STREAMING_SIZES[0]], CLIENT_STREAMING_SIZES[0]);
    requests
        .send(first)
        .await
        .map_err(|_| "request stream closed")?;
    let mut request = Request::new(ReceiverStream::new(stream));
    request.set_timeout(SLEEPING_SERVER_DEADLINE);
    let mut client = c.plain.clone();
    // The request stream stays open, so only the deadline can end the call.
    let call = async {
        let mut responses = client.full_duplex_call(request).await?.into_inner();
        while responses.message().await?.is_some() {}
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
        // tonic's channel enforces `grpc-timeout` on the response headers
        // only, and reports its own expiry as CANCELLED "Timeout expired"
        // (tonic::TimeoutExpired): the call's deadline firing in tonic's
        // client when the server's headers are late. (On loopback the
        // headers come first and the server's DEADLINE_EXCEEDED ends it.)
        Err(status)
            if status.code() == Code::Cancelled && status.message() == "Timeout expired" =>
        {
            Ok(())
        }
        Err(status) => Err(format!(
            "{}, expected DEADLINE_EXCEEDED",
            status_text(&status)
        )),
    }
}

fn with_echo_metadata<T>(message: T) -> Request<T> {
    let mut request = Request::new(message);
    let metadata = request.metadata_mut();
    metadata.insert(ECHO_INITIAL, MetadataValue::from_static(ECHO_INITIAL_VALUE));
    metadata.insert_bin(
        ECHO_TRAILING_BIN,
        BinaryMetadataValue::from_bytes(&ECHO_TRAILING_VALUE),
    );
    request
}

fn check_echo(
    initial: &tonic::metadata::MetadataMap,
    trailing: &tonic::metadata::MetadataMap,
    what: &str,
) -> Result<(), String> {
    let echoed = initial.get(ECHO_INITIAL);
    ensure(
        echoed.is_some_and(|value| value == ECHO_INITIAL_VALUE),
        || format!("{what}: initial metadata {echoed:?}"),
    )?;
    let echoed = trailing
        .get_bin(ECHO_TRAILING_BIN)
        .map(|value| value.to_bytes());
    ensure(
        matches!(&echoed, Some(Ok(bytes)) if bytes[..] == ECHO_TRAILING_VALUE),
        || format!("{what}: trailing metadata {echoed:?}"),
    )
}

async fn custom_metadata(c: &Clients) -> Result<(), String> {
    let reply = c
        .plain
        .clone()
        .unary_call(with_echo_metadata(large_request()))
        .await
        .map_err(call_failed)?;
    check_zeros(
        body(&reply.get_ref().payload),
        LARGE_RESPONSE as usize,
        "UnaryCall",
    )?;
    // tonic's unary responses carry the trailers in their metadata.
    check_echo(reply.metadata(), reply.metadata(), "UnaryCall")?;

    let request = output_request(&[LARGE_RESPONSE], LARGE_REQUEST);
    let response = c
        .plain
        .clone()
        .full_duplex_call(with_echo_metadata(stream::iter([request])))
        .await
        .map_err(call_failed)?;
    let initial = response.metadata().clone();
    let mut responses = response.into_inner();
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
        message: message.to_owned(),
    })
}

async fn full_duplex_status(c: &Clients, message: &str) -> Result<(), Status> {
    let request = StreamingOutputCallRequest {
        response_status: echo_status(message),
        ..StreamingOutputCallRequest::default()
    };
    let mut responses = c
        .plain
        .clone()
        .full_duplex_call(stream::iter([request]))
        .await?
        .into_inner();
    while responses.message().await?.is_some() {}
    Ok(())
}

async fn status_code_and_message(c: &Clients) -> Result<(), String> {
    let request = SimpleRequest {
        response_status: echo_status(STATUS_MESSAGE),
        ..SimpleRequest::default()
    };
    expect_error(
        c.plain.clone().unary_call(request).await,
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

async fn special_status_message(c: &Clients) -> Result<(), String> {
    let request = SimpleRequest {
        response_status: echo_status(SPECIAL_STATUS_MESSAGE),
        ..SimpleRequest::default()
    };
    expect_error(
        c.plain.clone().unary_call(request).await,
        Code::Unknown,
        Some(SPECIAL_STATUS_MESSAGE),
    )
}

async fn unimplemented_method(c: &Clients) -> Result<(), String> {
    expect_error(
        c.plain.clone().unimplemented_call(Empty {}).await,
        Code::Unimplemented,
        None,
    )
}

async fn unimplemented_service(c: &Clients) -> Result<(), String> {
    let mut client = UnimplementedServiceClient::new(c.channel.clone());
    expect_error(
        client.unimplemented_call(Empty {}).await,
        Code::Unimplemented,
        None,
    )
}

/// Runs one case by name.
pub async fn run_case(c: &Clients, case: &str) -> Result<(), String> {
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
    let clients = match Clients::connect(args).await {
        Ok(clients) => clients,
        Err(why) => {
            eprintln!("{why}");
            return ExitCode::FAILURE;
        }
    };
    let mut report = Report::default();
    for case in &args.cases {
        report.record(case, run_case(&clients, case).await);
    }
    report.finish()
}
