//! gRPC's OpenTelemetry metrics (gRFC A66) as tonic's full framing records
//! them: real calls over 127.0.0.1 to the example server, then what the
//! in-memory exporter holds. Sizes are checked against the bytes on the
//! wire, which a raw HTTP/2 peer sends and reads itself.

#[path = "support/raw.rs"]
mod raw;

use std::net::SocketAddr;

use prost::Message;
use test_support::metrics::{Instrument, Recorder};
use tonic_echo::adapter::{EchoRequest, EchoResponse};
use tonic_echo::{Framing, ServeOptions};

use grpc_stream_codec::observe::{codec_names, names};
use raw::{LIMIT, SERVER_STREAM, UNARY, envelope, header};

const BIDI: &str = "streamcodec.echo.v1.Echo/Bidi";

/// A66's boundaries, as its text lists them.
const LATENCY_BOUNDS: [f64; 41] = [
    0.0, 0.00001, 0.00005, 0.0001, 0.0003, 0.0006, 0.0008, 0.001, 0.002, 0.003, 0.004, 0.005,
    0.006, 0.008, 0.01, 0.013, 0.016, 0.02, 0.025, 0.03, 0.04, 0.05, 0.065, 0.08, 0.1, 0.13, 0.16,
    0.2, 0.25, 0.3, 0.4, 0.5, 0.65, 0.8, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0,
];
const SIZE_BOUNDS: [f64; 14] = [
    0.0,
    1024.0,
    2048.0,
    4096.0,
    16384.0,
    65536.0,
    262144.0,
    1048576.0,
    4194304.0,
    16777216.0,
    67108864.0,
    268435456.0,
    1073741824.0,
    4294967296.0,
];

fn recorder() -> &'static Recorder {
    let recorder = Recorder::get();
    grpc_stream_codec::observe::install(recorder.meter());
    recorder
}

async fn start_server() -> SocketAddr {
    let (listener, addr) = tonic_echo::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let options = ServeOptions {
        framing: Framing::Full,
        ..ServeOptions::default()
    };
    tokio::spawn(tonic_echo::serve_with(listener, options));
    addr
}

/// The method attribute of a request path.
fn method(path: &str) -> &str {
    path.trim_start_matches('/')
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

#[tokio::test]
async fn unary_sizes_are_the_compressed_bytes_on_the_wire() {
    let recorder = recorder();
    let _turn = recorder.start().await;
    let addr = start_server().await;

    let request = EchoRequest {
        payload: vec![b'a'; 10_000].into(),
        ..Default::default()
    };
    let compressed = zstd::encode_all(&request.encode_to_vec()[..], 3).unwrap();
    let reply = raw::call(
        &raw::connect(addr).await,
        UNARY,
        &[("grpc-encoding", "zstd"), ("grpc-accept-encoding", "gzip")],
        envelope(1, &compressed),
    )
    .await;
    assert_eq!(reply.code(), tonic::Code::Ok, "{reply:?}");
    let sent = envelopes(&reply.data);
    assert!(
        sent.iter().all(|&(flags, _)| flags == 1),
        "compressed: {sent:?}"
    );
    let sent_bytes: usize = sent.iter().map(|&(_, len)| len).sum();
    assert!(sent_bytes < 10_000, "the echo was compressed: {sent_bytes}");

    let ok = [(names::METHOD, method(UNARY)), (names::STATUS, "OK")];
    let duration = durations(recorder, 1).await;
    assert_eq!(duration.unit, "s");
    assert_eq!(duration.count(&ok), 1, "{duration:?}");
    assert_eq!(duration.matching(&ok)[0].bounds, LATENCY_BOUNDS);

    let started = recorder.read(names::SERVER_CALL_STARTED);
    assert_eq!(
        started.sum(&[(names::METHOD, method(UNARY))]),
        1.0,
        "{started:?}"
    );

    let sent = recorder.read(names::SERVER_CALL_SENT_TOTAL_COMPRESSED_MESSAGE_SIZE);
    assert_eq!(sent.unit, "By");
    assert_eq!(sent.count(&ok), 1, "{sent:?}");
    assert_eq!(sent.sum(&ok), sent_bytes as f64);
    assert_eq!(sent.matching(&ok)[0].bounds, SIZE_BOUNDS);

    let rcvd = recorder.read(names::SERVER_CALL_RCVD_TOTAL_COMPRESSED_MESSAGE_SIZE);
    assert_eq!(rcvd.unit, "By");
    assert_eq!(rcvd.sum(&ok), compressed.len() as f64, "{rcvd:?}");
}

#[tokio::test]
async fn calls_one_after_another_each_record_their_own_method_and_sizes() {
    let recorder = recorder();
    let _turn = recorder.start().await;
    let addr = start_server().await;
    let connection = raw::connect(addr).await;

    // The test's runtime has one thread: each call after the first starts
    // on the record the one before it finished.
    let mut unary_received = 0;
    let mut unary_sent = 0;
    for size in [100, 3_000] {
        let request = EchoRequest {
            payload: vec![b'a'; size].into(),
            ..Default::default()
        }
        .encode_to_vec();
        let reply = raw::call(&connection, UNARY, &[], envelope(0, &request)).await;
        assert_eq!(reply.code(), tonic::Code::Ok, "{reply:?}");
        unary_received += request.len();
        unary_sent += envelopes(&reply.data)
            .iter()
            .map(|&(_, len)| len)
            .sum::<usize>();
    }
    let request = EchoRequest {
        response_count: 3,
        response_size: 10,
        ..Default::default()
    }
    .encode_to_vec();
    let reply = raw::call(&connection, SERVER_STREAM, &[], envelope(0, &request)).await;
    assert_eq!(reply.code(), tonic::Code::Ok, "{reply:?}");
    let stream_sent: usize = envelopes(&reply.data).iter().map(|&(_, len)| len).sum();

    let unary = [(names::METHOD, method(UNARY)), (names::STATUS, "OK")];
    let stream = [
        (names::METHOD, method(SERVER_STREAM)),
        (names::STATUS, "OK"),
    ];
    let duration = durations(recorder, 3).await;
    assert_eq!(duration.count(&unary), 2, "{duration:?}");
    assert_eq!(duration.count(&stream), 1, "{duration:?}");
    let rcvd = recorder.read(names::SERVER_CALL_RCVD_TOTAL_COMPRESSED_MESSAGE_SIZE);
    assert_eq!(rcvd.sum(&unary), unary_received as f64, "{rcvd:?}");
    assert_eq!(rcvd.sum(&stream), request.len() as f64, "{rcvd:?}");
    let sent = recorder.read(names::SERVER_CALL_SENT_TOTAL_COMPRESSED_MESSAGE_SIZE);
    assert_eq!(sent.sum(&unary), unary_sent as f64, "{sent:?}");
    assert_eq!(sent.sum(&stream), stream_sent as f64, "{sent:?}");
    let started = recorder.read(names::SERVER_CALL_STARTED);
    assert_eq!(started.sum(&[(names::METHOD, method(UNARY))]), 2.0);
    assert_eq!(started.sum(&[(names::METHOD, method(SERVER_STREAM))]), 1.0);
}

#[tokio::test]
async fn a_refused_request_is_recorded_with_its_status() {
    let recorder = recorder();
    let _turn = recorder.start().await;
    let addr = start_server().await;

    let mut body = header(0, LIMIT as u32 + 1);
    body.extend_from_slice(&[0; 64]);
    let reply = raw::call(&raw::connect(addr).await, UNARY, &[], body).await;
    assert_eq!(reply.code(), tonic::Code::ResourceExhausted, "{reply:?}");

    let refused = [
        (names::METHOD, method(UNARY)),
        (names::STATUS, "RESOURCE_EXHAUSTED"),
    ];
    let duration = durations(recorder, 1).await;
    assert_eq!(duration.count(&refused), 1, "{duration:?}");
    let sent = recorder.read(names::SERVER_CALL_SENT_TOTAL_COMPRESSED_MESSAGE_SIZE);
    assert_eq!(sent.sum(&refused), 0.0, "{sent:?}");
}

#[tokio::test]
async fn a_deadline_is_recorded_as_deadline_exceeded() {
    let recorder = recorder();
    let _turn = recorder.start().await;
    let addr = start_server().await;

    // A paced stream outlives its 100 ms deadline by far.
    let request = EchoRequest {
        response_count: 1000,
        response_size: 10,
        ..Default::default()
    };
    let reply = raw::call(
        &raw::connect(addr).await,
        SERVER_STREAM,
        &[("grpc-timeout", "100m"), (tonic_echo::PACE_MICROS, "50000")],
        envelope(0, &request.encode_to_vec()),
    )
    .await;
    assert_eq!(reply.code(), tonic::Code::DeadlineExceeded, "{reply:?}");
    let sent_bytes: usize = envelopes(&reply.data).iter().map(|&(_, len)| len).sum();

    let ended = [
        (names::METHOD, method(SERVER_STREAM)),
        (names::STATUS, "DEADLINE_EXCEEDED"),
    ];
    let duration = durations(recorder, 1).await;
    assert_eq!(duration.count(&ended), 1, "{duration:?}");
    let sent = recorder.read(names::SERVER_CALL_SENT_TOTAL_COMPRESSED_MESSAGE_SIZE);
    assert_eq!(sent.sum(&ended), sent_bytes as f64, "{sent:?}");
    let deadline_ended = recorder.read(codec_names::SERVER_DEADLINE_ENDED);
    assert_eq!(deadline_ended.unit, "{call}");
    assert_eq!(
        deadline_ended.sum(&[(names::METHOD, method(SERVER_STREAM))]),
        1.0,
        "{deadline_ended:?}"
    );
}

#[tokio::test]
async fn a_bidi_call_from_a_tonic_client_is_recorded() {
    let recorder = recorder();
    let _turn = recorder.start().await;
    let addr = start_server().await;

    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut client = tonic_echo::full::echo_client::EchoClient::new(channel);
    let requests: Vec<EchoRequest> = (0..5)
        .map(|seq| EchoRequest {
            payload: tonic_echo::request_payload(seq, 100 * seq as usize),
            ..Default::default()
        })
        .collect();
    let request_bytes: usize = requests.iter().map(Message::encoded_len).sum();
    let mut responses = client
        .bidi(tokio_stream::iter(requests))
        .await
        .unwrap()
        .into_inner();
    let mut response_bytes = 0;
    while let Some(response) = responses.message().await.unwrap() {
        let response: EchoResponse = response;
        response_bytes += response.encoded_len();
    }

    let ok = [(names::METHOD, BIDI), (names::STATUS, "OK")];
    let duration = durations(recorder, 1).await;
    assert_eq!(duration.count(&ok), 1, "{duration:?}");
    let started = recorder.read(names::SERVER_CALL_STARTED);
    assert_eq!(started.sum(&[(names::METHOD, BIDI)]), 1.0, "{started:?}");
    let sent = recorder.read(names::SERVER_CALL_SENT_TOTAL_COMPRESSED_MESSAGE_SIZE);
    assert_eq!(sent.sum(&ok), response_bytes as f64, "{sent:?}");
    let rcvd = recorder.read(names::SERVER_CALL_RCVD_TOTAL_COMPRESSED_MESSAGE_SIZE);
    assert_eq!(rcvd.sum(&ok), request_bytes as f64, "{rcvd:?}");
}

/// A full-framing client of `addr`.
async fn full_client(
    addr: SocketAddr,
) -> tonic_echo::full::echo_client::EchoClient<tonic::transport::Channel> {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    tonic_echo::full::echo_client::EchoClient::new(channel)
}

#[tokio::test]
async fn a_client_attempt_counts_the_bytes_on_the_wire() {
    let recorder = recorder();
    let _turn = recorder.start().await;
    // The server's answer, made here: a zstd-compressed response.
    let response = EchoResponse {
        payload: vec![b'b'; 5000].into(),
        ..Default::default()
    };
    let compressed = zstd::encode_all(&response.encode_to_vec()[..], 3).unwrap();
    let script = test_support::raw_h2::Script::full(
        &[("grpc-encoding", "zstd")],
        &envelope(1, &compressed),
        &[("grpc-status", "0")],
    );
    let (addr, _server) = test_support::raw_h2::serve_script(script).await;

    let request = EchoRequest {
        payload: tonic_echo::request_payload(0, 300),
        ..Default::default()
    };
    let request_bytes = request.encoded_len();
    let mut client = full_client(addr)
        .await
        .accept_compressed(tonic::codec::CompressionEncoding::Zstd);
    let reply = client.unary(request).await.unwrap().into_inner();
    assert_eq!(reply, response);

    let ok = [
        (names::METHOD, method(UNARY)),
        (names::TARGET, names::OTHER_METHOD),
        (names::STATUS, "OK"),
    ];
    let started = recorder.read(names::CLIENT_ATTEMPT_STARTED);
    let started_attributes = [
        (names::METHOD, method(UNARY)),
        (names::TARGET, names::OTHER_METHOD),
    ];
    assert_eq!(started.sum(&started_attributes), 1.0, "{started:?}");
    let duration = recorder.read(names::CLIENT_ATTEMPT_DURATION);
    assert_eq!(duration.unit, "s");
    assert_eq!(duration.count(&ok), 1, "{duration:?}");
    assert_eq!(duration.matching(&ok)[0].bounds, LATENCY_BOUNDS);
    let call = recorder.read(names::CLIENT_CALL_DURATION);
    assert_eq!(call.unit, "s");
    assert_eq!(call.count(&ok), 1, "{call:?}");
    let sent = recorder.read(names::CLIENT_ATTEMPT_SENT_TOTAL_COMPRESSED_MESSAGE_SIZE);
    assert_eq!(sent.unit, "By");
    assert_eq!(sent.sum(&ok), request_bytes as f64, "{sent:?}");
    assert_eq!(sent.matching(&ok)[0].bounds, SIZE_BOUNDS);
    let rcvd = recorder.read(names::CLIENT_ATTEMPT_RCVD_TOTAL_COMPRESSED_MESSAGE_SIZE);
    assert_eq!(rcvd.sum(&ok), compressed.len() as f64, "{rcvd:?}");
}

#[tokio::test]
async fn a_client_attempt_takes_its_status_from_the_trailers() {
    let recorder = recorder();
    let _turn = recorder.start().await;
    let (addr, _server) = test_support::raw_h2::serve_raw_with(Vec::new(), Some("8")).await;

    let status = full_client(addr)
        .await
        .unary(EchoRequest::default())
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::ResourceExhausted);

    let exhausted = [
        (names::METHOD, method(UNARY)),
        (names::STATUS, "RESOURCE_EXHAUSTED"),
    ];
    let duration = recorder.read(names::CLIENT_ATTEMPT_DURATION);
    assert_eq!(duration.count(&exhausted), 1, "{duration:?}");
    let call = recorder.read(names::CLIENT_CALL_DURATION);
    assert_eq!(call.count(&exhausted), 1, "{call:?}");
}

#[tokio::test]
async fn a_client_deadline_is_recorded_as_deadline_exceeded() {
    let recorder = recorder();
    let _turn = recorder.start().await;
    let addr = start_server().await;

    let mut request = tonic::Request::new(EchoRequest {
        response_count: 1000,
        response_size: 10,
        ..Default::default()
    });
    request.set_timeout(std::time::Duration::from_millis(100));
    request
        .metadata_mut()
        .insert(tonic_echo::PACE_MICROS, "50000".parse().unwrap());
    let mut responses = full_client(addr)
        .await
        .server_stream(request)
        .await
        .unwrap()
        .into_inner();
    let status = loop {
        match responses.message().await {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("the stream outlived its deadline"),
            Err(status) => break status,
        }
    };
    assert_eq!(status.code(), tonic::Code::DeadlineExceeded, "{status:?}");

    let ended = [
        (names::METHOD, method(SERVER_STREAM)),
        (names::STATUS, "DEADLINE_EXCEEDED"),
    ];
    let duration = recorder.read(names::CLIENT_ATTEMPT_DURATION);
    assert_eq!(duration.count(&ended), 1, "{duration:?}");
    let by_method = [(names::METHOD, method(SERVER_STREAM))];
    let client_ended = recorder
        .read_when(codec_names::CLIENT_DEADLINE_ENDED, |i| {
            i.sum(&by_method) >= 1.0
        })
        .await;
    assert_eq!(client_ended.unit, "{call}");
    assert_eq!(client_ended.sum(&by_method), 1.0, "{client_ended:?}");
}

#[tokio::test]
async fn the_receive_budget_is_read_when_the_meter_collects() {
    use grpc_stream_codec::budget::{Budget, SharedBudget};
    use grpc_stream_codec::observe::budget_names;

    let recorder = recorder();
    let _turn = recorder.start().await;
    let budget: Budget = SharedBudget::new(1 << 20).into();
    // snippet observe
    grpc_stream_codec::observe::install(recorder.meter());
    grpc_stream_codec::observe::observe_budget(recorder.meter(), "metrics-test", &budget);
    // end snippet
    let (listener, addr) = tonic_echo::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    tokio::spawn(tonic_echo::serve_full_with_budget(listener, budget.clone()));

    let requests: Vec<EchoRequest> = (0..3)
        .map(|seq| EchoRequest {
            payload: tonic_echo::request_payload(seq, 50_000),
            ..Default::default()
        })
        .collect();
    let reply = full_client(addr)
        .await
        .client_stream(tokio_stream::iter(requests))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(reply.count, 3);

    let this = [(budget_names::BUDGET, "metrics-test")];
    let capacity = recorder.read(budget_names::CAPACITY);
    assert_eq!(capacity.unit, "By");
    assert_eq!(capacity.last(&this), Some((1 << 20) as f64), "{capacity:?}");
    let peak = recorder.read(budget_names::PEAK);
    assert_eq!(
        peak.last(&this),
        Some(budget.stats().peak as f64),
        "{peak:?}"
    );
    assert!(budget.stats().peak >= 50_000, "{:?}", budget.stats());
    let in_use = recorder
        .read_when(budget_names::IN_USE, |i| i.last(&this) == Some(0.0))
        .await;
    assert_eq!(in_use.last(&this), Some(0.0), "{in_use:?}");
}

/// A request's extra headers and body, the code it is answered with and
/// the reason it is counted under.
type RefusalCase = (
    &'static [(&'static str, &'static str)],
    Vec<u8>,
    tonic::Code,
    &'static str,
);

/// What the crate's own counter `name` holds for `path`'s method and
/// `reason`, once it holds anything.
async fn refused(recorder: &Recorder, name: &str, path: &str, reason: &str) -> f64 {
    let with = [(names::METHOD, method(path)), (codec_names::REASON, reason)];
    recorder
        .read_when(name, |i| i.sum(&with) >= 1.0)
        .await
        .sum(&with)
}

#[tokio::test]
async fn each_refused_request_message_is_counted_with_its_reason() {
    let recorder = recorder();
    let _turn = recorder.start().await;
    let addr = start_server().await;
    let client = raw::connect(addr).await;

    let mut over_limit = header(0, LIMIT as u32 + 1);
    over_limit.extend_from_slice(&[0; 64]);
    // Flag bit 1 is reserved; corrupt zstd; a protobuf field tag of 0.
    let cases: [RefusalCase; 5] = [
        (
            &[],
            over_limit,
            tonic::Code::ResourceExhausted,
            "over_limit",
        ),
        (
            &[],
            envelope(2, b"hi"),
            tonic::Code::Internal,
            "bad_envelope",
        ),
        (
            &[("grpc-encoding", "zstd")],
            envelope(1, b"not zstd at all"),
            tonic::Code::Internal,
            "bad_compression",
        ),
        (
            &[("grpc-encoding", "br")],
            envelope(0, b""),
            tonic::Code::Unimplemented,
            "unsupported_encoding",
        ),
        (
            &[],
            envelope(0, &[0, 0, 0]),
            tonic::Code::Internal,
            "bad_message",
        ),
    ];
    for (headers, body, code, reason) in cases {
        let reply = raw::call(&client, UNARY, headers, body).await;
        assert_eq!(reply.code(), code, "{reason}: {reply:?}");
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

#[tokio::test]
async fn each_response_a_client_refuses_is_counted_with_its_reason() {
    let recorder = recorder();
    let _turn = recorder.start().await;
    let cases = test_support::metrics::client_refusals();
    for (done, case) in cases.iter().enumerate() {
        let (addr, _server) = test_support::raw_h2::serve_script(case.script.clone()).await;
        let status = full_client(addr)
            .await
            .unary(EchoRequest::default())
            .await
            .unwrap_err();
        assert_eq!(status.code() as i32, case.code, "{}: {status:?}", case.case);
        let name = codec_names::CLIENT_MESSAGES_REFUSED;
        let counted = refused(recorder, name, UNARY, case.reason).await;
        assert_eq!(counted, 1.0, "{}", case.case);
        let all = recorder.read(name);
        assert_eq!(all.sum(&[]), done as f64 + 1.0, "{}: {all:?}", case.case);
    }
    let server = recorder.read(codec_names::SERVER_MESSAGES_REFUSED);
    assert_eq!(
        server.sum(&[]),
        0.0,
        "the client's, not a server's: {server:?}"
    );
}

#[tokio::test]
async fn read_ahead_bytes_are_held_while_the_handler_waits_and_given_back() {
    let recorder = recorder();
    let _turn = recorder.start().await;
    let addr = start_server().await;

    // The handler sleeps before it reads: the call layer reads ahead.
    let mut client = raw::connect(addr).await.ready().await.unwrap();
    let (response, mut stream) = client
        .send_request(
            test_support::raw_h2::grpc_request(
                raw::CLIENT_STREAM,
                &[(tonic_echo::READ_DELAY_MILLIS, "1500")],
            ),
            false,
        )
        .unwrap();
    let message = raw::message(&EchoRequest {
        payload: vec![b'r'; 100].into(),
        ..Default::default()
    });
    for _ in 0..10 {
        stream
            .send_data(bytes::Bytes::from(message.clone()), false)
            .unwrap();
    }
    let sent = (10 * message.len()) as f64;
    let held = recorder
        .read_when(codec_names::READ_AHEAD_HELD, |i| i.last(&[]) == Some(sent))
        .await;
    assert_eq!(held.unit, "By");
    assert_eq!(held.last(&[]), Some(sent), "{held:?}");

    stream.send_data(bytes::Bytes::new(), true).unwrap();
    let reply = raw::read_reply(response.await.unwrap()).await;
    assert_eq!(reply.code(), tonic::Code::Ok, "{reply:?}");
    let held = recorder
        .read_when(codec_names::READ_AHEAD_HELD, |i| i.last(&[]) == Some(0.0))
        .await;
    assert_eq!(held.last(&[]), Some(0.0), "given back: {held:?}");
}

/// Sends `data` as flow control lets it go.
async fn send_granted(stream: &mut h2::SendStream<bytes::Bytes>, mut data: bytes::Bytes) {
    while !data.is_empty() {
        stream.reserve_capacity(data.len().min(16_384));
        let mut granted = stream.capacity();
        while granted == 0 {
            granted = std::future::poll_fn(|cx| stream.poll_capacity(cx))
                .await
                .expect("the stream is open")
                .expect("flow control");
        }
        let chunk = data.split_to(granted.min(data.len()));
        stream.send_data(chunk, false).unwrap();
    }
}

#[tokio::test]
async fn a_wait_for_the_receive_budget_is_timed_with_how_it_ended() {
    use grpc_stream_codec::budget::{Budget, SharedBudget};
    use std::time::Duration;

    let recorder = recorder();
    let _turn = recorder.start().await;
    const WAIT: Duration = Duration::from_millis(300);
    let budget: Budget = SharedBudget::new(1 << 20)
        .with_max_wait(WAIT)
        .with_overdraft_after(Duration::from_secs(60))
        .into();
    let (listener, addr) = tonic_echo::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    tokio::spawn(tonic_echo::serve_full_with_budget(listener, budget.clone()));

    // One call holds half of a 600,000-byte message: with the rest it is
    // promised, the budget has no room for another such message.
    let (wire, payload) = test_support::behaviour::wire::sized_request(600_000);
    let mut client = raw::connect(addr).await.ready().await.unwrap();
    let (held_response, mut held) = client
        .send_request(
            test_support::raw_h2::grpc_request(raw::CLIENT_STREAM, &[]),
            false,
        )
        .unwrap();
    send_granted(&mut held, wire.slice(..300_000)).await;
    while budget.stats().in_use < 300_000 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let big = move || EchoRequest {
        payload: vec![b'w'; payload].into(),
        ..Default::default()
    };

    // Another waits, and times out.
    let status = full_client(addr)
        .await
        .client_stream(tokio_stream::iter([big()]))
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::ResourceExhausted, "{status:?}");
    let timed_out = [(codec_names::OUTCOME, "timed_out")];
    let waits = recorder
        .read_when(codec_names::BUDGET_WAIT_DURATION, |i| {
            i.count(&timed_out) >= 1
        })
        .await;
    assert_eq!(waits.unit, "s");
    assert_eq!(waits.count(&timed_out), 1, "{waits:?}");
    assert!(waits.sum(&timed_out) >= WAIT.as_secs_f64(), "{waits:?}");
    assert_eq!(waits.matching(&timed_out)[0].bounds, LATENCY_BOUNDS);

    // A third waits until the held call's message is complete.
    let mut third = full_client(addr).await;
    let waiting =
        tokio::spawn(async move { third.client_stream(tokio_stream::iter([big()])).await });
    while budget.stats().waiting == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    send_granted(&mut held, wire.slice(300_000..)).await;
    held.send_data(bytes::Bytes::new(), true).unwrap();
    let reply = raw::read_reply(held_response.await.unwrap()).await;
    assert_eq!(reply.code(), tonic::Code::Ok, "{reply:?}");
    let reply = waiting.await.unwrap().unwrap().into_inner();
    assert_eq!(reply.count, 1);

    let granted = [(codec_names::OUTCOME, "granted")];
    let waits = recorder
        .read_when(codec_names::BUDGET_WAIT_DURATION, |i| {
            i.count(&granted) >= 1
        })
        .await;
    assert!(waits.count(&granted) >= 1, "{waits:?}");
    assert!(
        waits.sum(&granted) >= 0.1,
        "waited at least 100 ms: {waits:?}"
    );
}

/// A server thread keeps the calls it finishes and records them in
/// batches: more calls than one batch holds, on a server thread that ends
/// before the meter collects, are all recorded.
#[tokio::test]
async fn every_call_a_server_thread_finished_is_recorded_after_the_thread_ends() {
    const CALLS: u64 = 40;
    let recorder = recorder();
    let _turn = recorder.start().await;
    let (listener, addr) = tonic_echo::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let listener = listener.into_std().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server_thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let options = ServeOptions {
                framing: Framing::Full,
                ..ServeOptions::default()
            };
            tokio::select! {
                served = tonic_echo::serve_with(listener, options) => served.unwrap(),
                _ = stopped => {}
            }
        });
    });

    let client = raw::connect(addr).await;
    let request = EchoRequest::default().encode_to_vec();
    for _ in 0..CALLS {
        let reply = raw::call(&client, UNARY, &[], envelope(0, &request)).await;
        assert_eq!(reply.code(), tonic::Code::Ok, "{reply:?}");
    }
    drop(client);
    stop.send(()).unwrap();
    server_thread.join().unwrap();

    // Every call, whichever status the thread's end left it: a call still
    // sending its trailers when the server stopped is recorded cancelled.
    let unary = [(names::METHOD, method(UNARY))];
    let duration = recorder.read(names::SERVER_CALL_DURATION);
    assert_eq!(duration.count(&unary), CALLS, "{duration:?}");
    let sent = recorder.read(names::SERVER_CALL_SENT_TOTAL_COMPRESSED_MESSAGE_SIZE);
    assert_eq!(sent.count(&unary), CALLS, "{sent:?}");
}
