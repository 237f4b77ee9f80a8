//! gRPC's OpenTelemetry metrics (gRFC A66) as the volo-grpc adapter records
//! them on a server behind `BinaryMetadataLayer`: real calls over 127.0.0.1
//! to the example server, then what the in-memory exporter holds. Sizes are
//! checked against the bytes on the wire, which a raw HTTP/2 peer sends and
//! reads itself.

mod support;

use std::io::Write;

use bytes::Bytes;
use flate2::Compression;
use flate2::write::GzEncoder;
use pilota::pb::{EncodeLengthContext, Message};
use support::{Flavour, envelope, raw_call, server_stream_request, start};
use test_support::metrics::{Instrument, Recorder};
use volo_echo::EchoService;
use volo_echo::adapter::{EchoRequest, EchoResponse};

use grpc_stream_codec::observe::{codec_names, names};

const UNARY: &str = "streamcodec.echo.v1.Echo/Unary";
const SERVER_STREAM: &str = "streamcodec.echo.v1.Echo/ServerStream";
const CLIENT_STREAM: &str = "streamcodec.echo.v1.Echo/ClientStream";

fn recorder() -> &'static Recorder {
    let recorder = Recorder::get();
    grpc_stream_codec::observe::install(recorder.meter());
    recorder
}

/// Each message's flag and payload length, read off the prefixes of a body.
fn envelopes(mut body: &[u8]) -> Vec<(u8, usize)> {
    let mut out = Vec::new();
    while !body.is_empty() {
        let len = u32::from_be_bytes(body[1..5].try_into().unwrap()) as usize;
        out.push((body[0], len));
        body = &body[5 + len..];
    }
    out
}

/// The duration histogram once it holds `calls` calls.
async fn durations(recorder: &Recorder, calls: u64) -> Instrument {
    recorder
        .read_when(names::SERVER_CALL_DURATION, |i| i.count(&[]) >= calls)
        .await
}

fn encoded_len(message: &impl Message) -> usize {
    message.encoded_len(&mut EncodeLengthContext::default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unary_sizes_are_the_compressed_bytes_on_the_wire() {
    let recorder = recorder();
    let _turn = recorder.start().await;
    let server = start(Flavour::Adapter, EchoService::default()).await;

    // An EchoRequest with a 10,000-byte payload, encoded by hand.
    let mut plain = vec![0x0a];
    test_support::raw_h2::put_varint(&mut plain, 10_000);
    plain.extend_from_slice(&[b'a'; 10_000]);
    let mut gzip = GzEncoder::new(Vec::new(), Compression::default());
    gzip.write_all(&plain).unwrap();
    let compressed = gzip.finish().unwrap();
    let response = raw_call(
        server.addr,
        "Unary",
        &[("grpc-encoding", "gzip"), ("grpc-accept-encoding", "gzip")],
        envelope(true, &compressed),
    )
    .await;
    assert_eq!(response.grpc_status(), Some(0), "{response:?}");
    let sent = envelopes(&response.body());
    assert!(
        sent.iter().all(|&(flags, _)| flags == 1),
        "compressed: {sent:?}"
    );
    let sent_bytes: usize = sent.iter().map(|&(_, len)| len).sum();
    assert!(sent_bytes < 10_000, "the echo was compressed: {sent_bytes}");

    let ok = [(names::METHOD, UNARY), (names::STATUS, "OK")];
    let duration = durations(recorder, 1).await;
    assert_eq!(duration.unit, "s");
    assert_eq!(duration.count(&ok), 1, "{duration:?}");
    let started = recorder.read(names::SERVER_CALL_STARTED);
    assert_eq!(started.sum(&[(names::METHOD, UNARY)]), 1.0, "{started:?}");
    let sent = recorder.read(names::SERVER_CALL_SENT_TOTAL_COMPRESSED_MESSAGE_SIZE);
    assert_eq!(sent.unit, "By");
    assert_eq!(sent.sum(&ok), sent_bytes as f64, "{sent:?}");
    let rcvd = recorder.read(names::SERVER_CALL_RCVD_TOTAL_COMPRESSED_MESSAGE_SIZE);
    assert_eq!(rcvd.sum(&ok), compressed.len() as f64, "{rcvd:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_request_is_recorded_with_its_status() {
    let recorder = recorder();
    let _turn = recorder.start().await;
    let server = start(Flavour::Adapter, EchoService::default()).await;

    let mut body = vec![0u8, 0xff, 0xff, 0xff, 0xff];
    body.extend_from_slice(&[0u8; 64]);
    let response = raw_call(server.addr, "Unary", &[], Bytes::from(body)).await;
    assert_eq!(response.grpc_status(), Some(8), "{response:?}");

    let refused = [
        (names::METHOD, UNARY),
        (names::STATUS, "RESOURCE_EXHAUSTED"),
    ];
    let duration = durations(recorder, 1).await;
    assert_eq!(duration.count(&refused), 1, "{duration:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadline_is_recorded_as_deadline_exceeded() {
    let recorder = recorder();
    let _turn = recorder.start().await;
    let server = start(Flavour::Adapter, EchoService::default()).await;

    // A paced stream outlives its 100 ms deadline by far.
    let response = raw_call(
        server.addr,
        "ServerStream",
        &[("grpc-timeout", "100m"), (volo_echo::PACE_MICROS, "50000")],
        envelope(false, &server_stream_request(1000, 10)),
    )
    .await;
    assert_eq!(response.grpc_status(), Some(4), "{response:?}");
    let sent_bytes: usize = envelopes(&response.body())
        .iter()
        .map(|&(_, len)| len)
        .sum();

    let ended = [
        (names::METHOD, SERVER_STREAM),
        (names::STATUS, "DEADLINE_EXCEEDED"),
    ];
    let duration = durations(recorder, 1).await;
    assert_eq!(duration.count(&ended), 1, "{duration:?}");
    let sent = recorder.read(names::SERVER_CALL_SENT_TOTAL_COMPRESSED_MESSAGE_SIZE);
    assert_eq!(sent.sum(&ended), sent_bytes as f64, "{sent:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_stream_from_a_volo_client_is_recorded() {
    let recorder = recorder();
    let _turn = recorder.start().await;
    let server = start(Flavour::Adapter, EchoService::default()).await;

    let client = volo_echo::adapter::client(server.addr, None);
    let requests: Vec<EchoRequest> = (0..5)
        .map(|seq| EchoRequest {
            payload: volo_echo::request_payload(seq, 100 * seq as usize),
            ..Default::default()
        })
        .collect();
    let request_bytes: usize = requests.iter().map(encoded_len).sum();
    let reply: EchoResponse = client
        .client_stream(futures::stream::iter(requests))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(reply.count, 5);

    let ok = [(names::METHOD, CLIENT_STREAM), (names::STATUS, "OK")];
    let duration = durations(recorder, 1).await;
    assert_eq!(duration.count(&ok), 1, "{duration:?}");
    let sent = recorder.read(names::SERVER_CALL_SENT_TOTAL_COMPRESSED_MESSAGE_SIZE);
    assert_eq!(sent.sum(&ok), encoded_len(&reply) as f64, "{sent:?}");
    let rcvd = recorder.read(names::SERVER_CALL_RCVD_TOTAL_COMPRESSED_MESSAGE_SIZE);
    assert_eq!(rcvd.sum(&ok), request_bytes as f64, "{rcvd:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_attempt_counts_the_bytes_on_the_wire() {
    let recorder = recorder();
    let _turn = recorder.start().await;
    // The server's answer, made here: an EchoResponse with a 5,000-byte
    // payload, encoded by hand.
    let mut response = vec![0x0a];
    test_support::raw_h2::put_varint(&mut response, 5000);
    response.extend_from_slice(&[b'b'; 5000]);
    let (addr, _server) =
        test_support::raw_h2::serve_raw(test_support::raw_h2::envelope(0, &response)).await;

    let request = EchoRequest {
        payload: volo_echo::request_payload(0, 300),
        ..Default::default()
    };
    let request_bytes = encoded_len(&request);
    let reply = volo_echo::adapter::client(addr, None)
        .unary(request)
        .await
        .unwrap()
        .into_inner();
    assert_eq!(reply.payload.len(), 5000);

    let target = format!("http://{addr}");
    let ok = [
        (names::METHOD, UNARY),
        (names::TARGET, target.as_str()),
        (names::STATUS, "OK"),
    ];
    let started = recorder.read(names::CLIENT_ATTEMPT_STARTED);
    assert_eq!(
        started.sum(&[(names::METHOD, UNARY), (names::TARGET, target.as_str())]),
        1.0,
        "{started:?}"
    );
    let duration = recorder.read(names::CLIENT_ATTEMPT_DURATION);
    assert_eq!(duration.unit, "s");
    assert_eq!(duration.count(&ok), 1, "{duration:?}");
    let call = recorder.read(names::CLIENT_CALL_DURATION);
    assert_eq!(call.count(&ok), 1, "{call:?}");
    let sent = recorder.read(names::CLIENT_ATTEMPT_SENT_TOTAL_COMPRESSED_MESSAGE_SIZE);
    assert_eq!(sent.unit, "By");
    assert_eq!(sent.sum(&ok), request_bytes as f64, "{sent:?}");
    let rcvd = recorder.read(names::CLIENT_ATTEMPT_RCVD_TOTAL_COMPRESSED_MESSAGE_SIZE);
    assert_eq!(rcvd.sum(&ok), response.len() as f64, "{rcvd:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_attempt_takes_its_status_from_the_trailers() {
    let recorder = recorder();
    let _turn = recorder.start().await;
    let (addr, _server) = test_support::raw_h2::serve_raw_with(Vec::new(), Some("8")).await;

    let status = volo_echo::adapter::client(addr, None)
        .unary(EchoRequest::default())
        .await
        .unwrap_err();
    assert_eq!(status.code(), volo_grpc::Code::ResourceExhausted);

    let exhausted = [
        (names::METHOD, UNARY),
        (names::STATUS, "RESOURCE_EXHAUSTED"),
    ];
    let duration = recorder.read(names::CLIENT_ATTEMPT_DURATION);
    assert_eq!(duration.count(&exhausted), 1, "{duration:?}");
    let call = recorder.read(names::CLIENT_CALL_DURATION);
    assert_eq!(call.count(&exhausted), 1, "{call:?}");
}

/// A request's extra headers and body, the code it is answered with and
/// the reason it is counted under.
type RefusalCase = (
    &'static [(&'static str, &'static str)],
    Bytes,
    i32,
    &'static str,
);

/// What the crate's own counter `name` holds for `method` and `reason`,
/// once it holds anything.
async fn refused(recorder: &Recorder, name: &str, method: &str, reason: &str) -> f64 {
    let with = [(names::METHOD, method), (codec_names::REASON, reason)];
    recorder
        .read_when(name, |i| i.sum(&with) >= 1.0)
        .await
        .sum(&with)
}

/// A message with the flag byte `flags`.
fn flagged(flags: u8, payload: &[u8]) -> Bytes {
    Bytes::from(test_support::raw_h2::envelope(flags, payload))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_refused_request_message_is_counted_with_its_reason() {
    let recorder = recorder();
    let _turn = recorder.start().await;
    let server = start(Flavour::Adapter, EchoService::default()).await;

    let mut over_limit = vec![0u8, 0xff, 0xff, 0xff, 0xff];
    over_limit.extend_from_slice(&[0u8; 64]);
    // Flag bit 1 is reserved; corrupt gzip; a protobuf field tag of 0.
    let cases: [RefusalCase; 5] = [
        (&[], Bytes::from(over_limit), 8, "over_limit"),
        (&[], flagged(2, b"hi"), 13, "bad_envelope"),
        (
            &[("grpc-encoding", "gzip")],
            flagged(1, b"not gzip at all"),
            13,
            "bad_compression",
        ),
        (
            &[("grpc-encoding", "br")],
            flagged(0, b""),
            12,
            "unsupported_encoding",
        ),
        (&[], flagged(0, &[0, 0, 0]), 13, "bad_message"),
    ];
    for (headers, body, code, reason) in cases {
        let response = raw_call(server.addr, "Unary", headers, body).await;
        assert_eq!(response.grpc_status(), Some(code), "{reason}: {response:?}");
        let counted = refused(
            recorder,
            codec_names::SERVER_MESSAGES_REFUSED,
            UNARY,
            reason,
        )
        .await;
        assert_eq!(counted, 1.0, "{reason}");
    }
    let all = recorder.read(codec_names::SERVER_MESSAGES_REFUSED);
    assert_eq!(all.unit, "{message}");
    assert_eq!(all.sum(&[]), 5.0, "{all:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_response_a_client_refuses_is_counted_with_its_reason() {
    let recorder = recorder();
    let _turn = recorder.start().await;
    let cases = test_support::metrics::client_refusals();
    for (done, case) in cases.iter().enumerate() {
        let (addr, _server) = test_support::raw_h2::serve_script(case.script.clone()).await;
        let status = volo_echo::adapter::client(addr, None)
            .unary(EchoRequest::default())
            .await
            .unwrap_err();
        assert_eq!(
            i32::from(status.code()),
            case.code,
            "{}: {status:?}",
            case.case
        );
        let name = codec_names::CLIENT_MESSAGES_REFUSED;
        let counted = refused(recorder, name, UNARY, case.reason).await;
        assert_eq!(counted, 1.0, "{}", case.case);
        let all = recorder.read(name);
        assert_eq!(all.sum(&[]), done as f64 + 1.0, "{}: {all:?}", case.case);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadline_end_is_counted_by_method() {
    let recorder = recorder();
    let _turn = recorder.start().await;
    let server = start(Flavour::Adapter, EchoService::default()).await;

    let response = raw_call(
        server.addr,
        "ServerStream",
        &[("grpc-timeout", "100m"), (volo_echo::PACE_MICROS, "50000")],
        envelope(false, &server_stream_request(1000, 10)),
    )
    .await;
    assert_eq!(response.grpc_status(), Some(4), "{response:?}");
    let by_method = [(names::METHOD, SERVER_STREAM)];
    let ended = recorder
        .read_when(codec_names::SERVER_DEADLINE_ENDED, |i| {
            i.sum(&by_method) >= 1.0
        })
        .await;
    assert_eq!(ended.unit, "{call}");
    assert_eq!(ended.sum(&by_method), 1.0, "{ended:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shielded_framework_panic_is_counted_by_its_trigger() {
    let recorder = recorder();
    let _turn = recorder.start().await;
    let server = start(Flavour::Adapter, EchoService::default()).await;

    // volo-grpc 0.12.2 panics on any binary request header; the layer
    // takes it out first.
    let response = raw_call(
        server.addr,
        "Unary",
        &[("x-trace-bin", "AAEC")],
        envelope(false, &[]),
    )
    .await;
    assert_eq!(response.grpc_status(), Some(0), "{response:?}");
    let trigger = [(codec_names::TRIGGER, "request_binary_metadata")];
    let shielded = recorder.read(codec_names::PANICS_SHIELDED);
    assert_eq!(shielded.unit, "{panic}");
    assert_eq!(shielded.sum(&trigger), 1.0, "{shielded:?}");

    // A call without binary metadata is not counted.
    let response = raw_call(server.addr, "Unary", &[], envelope(false, &[])).await;
    assert_eq!(response.grpc_status(), Some(0), "{response:?}");
    let shielded = recorder.read(codec_names::PANICS_SHIELDED);
    assert_eq!(shielded.sum(&[]), 1.0, "{shielded:?}");
}

#[tokio::test]
async fn a_trailers_only_answer_with_bad_status_details_is_a_shielded_client_panic() {
    let recorder = recorder();
    let _turn = recorder.start().await;
    // volo-grpc 0.12.2's client expects base64 here and panics on
    // anything else; the adapter's transport answers `INTERNAL` instead.
    let script = test_support::raw_h2::Script::trailers_only(&[
        ("grpc-status", "3"),
        ("grpc-status-details-bin", "not base64!"),
    ]);
    let (addr, _server) = test_support::raw_h2::serve_script(script).await;

    let status = volo_echo::adapter::client(addr, None)
        .unary(EchoRequest::default())
        .await
        .unwrap_err();
    assert_eq!(status.code(), volo_grpc::Code::Internal, "{status:?}");
    let trigger = [(codec_names::TRIGGER, "response_binary_metadata")];
    let shielded = recorder.read(codec_names::PANICS_SHIELDED);
    assert_eq!(shielded.sum(&trigger), 1.0, "{shielded:?}");
}

/// A response stream that ends with an error: the status in its trailers
/// and the messages sent before it are what is recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_stream_ending_with_an_error_is_recorded_with_its_status() {
    const BIDI: &str = "streamcodec.echo.v1.Echo/Bidi";
    let recorder = recorder();
    let _turn = recorder.start().await;
    let server = start(Flavour::Adapter, EchoService::default()).await;

    let mut body = Vec::new();
    for seq in 0..4u32 {
        let request = EchoRequest {
            payload: volo_echo::request_payload(seq, 300),
            ..Default::default()
        };
        let encoded = request.encode_to_vec(&mut EncodeLengthContext::default());
        body.extend_from_slice(&envelope(false, &encoded));
    }
    let response = raw_call(
        server.addr,
        "Bidi",
        &[(volo_echo::FAIL_AFTER, "2")],
        Bytes::from(body),
    )
    .await;
    assert_eq!(response.grpc_status(), Some(10), "ABORTED: {response:?}");
    let echoed = envelopes(&response.body());
    assert_eq!(echoed.len(), 2, "two echoes before the failure");
    let sent_bytes: usize = echoed.iter().map(|&(_, len)| len).sum();

    let aborted = [(names::METHOD, BIDI), (names::STATUS, "ABORTED")];
    let duration = durations(recorder, 1).await;
    assert_eq!(duration.count(&aborted), 1, "{duration:?}");
    let sent = recorder.read(names::SERVER_CALL_SENT_TOTAL_COMPRESSED_MESSAGE_SIZE);
    assert_eq!(sent.sum(&aborted), sent_bytes as f64, "{sent:?}");
}
