//! `grpc-timeout` bounds streaming calls on the volo adapter, as grpc-go
//! and C-core bound them: the server (behind `BinaryMetadataLayer`) ends a
//! server-streaming or bidi response at the deadline with
//! `DEADLINE_EXCEEDED` in its trailers, and the client ends a streaming
//! response at the deadline it sent. volo-grpc itself bounds a call only
//! until its response headers. Each test also checks that the ended call
//! leaves no task and no heap behind (one test at a time, so the process's
//! heap is the test's).

mod support;

use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt as _;
use support::{Flavour, envelope, server_stream_request, start};
use test_support::alloc::CountingAlloc;
use test_support::raw_h2::{connect, grpc_request, read_response, send};
use test_support::settle::Footprint;
use volo_echo::{ClientOptions, EchoService, MetadataLayer};

const DEADLINE_EXCEEDED: i32 = 4;
const DEADLINE: Duration = Duration::from_millis(200);

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::ALWAYS;

/// Heap an ended call may leave: none of its own; this is what the
/// allocator's and the runtime's bookkeeping move by.
const HEAP_SLACK: usize = 16 * 1024;

static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A unary call and a short server stream read late on `client`: warms the
/// connection up (its buffers and h2's queue of frames grow to what a full
/// stream window takes, as they may in the call measured after), and shows
/// it still serves after a call ended at its deadline.
async fn warm_up(client: &h2::client::SendRequest<Bytes>) {
    let unary = send(
        client,
        "/streamcodec.echo.v1.Echo/Unary",
        &[],
        envelope(false, b"\x0a\x04ping"),
    )
    .await;
    assert_eq!(unary.grpc_status(), Some(0), "{unary:?}");
    let mut ready = client.clone().ready().await.unwrap();
    let (response, mut request) = ready
        .send_request(
            grpc_request("/streamcodec.echo.v1.Echo/ServerStream", &[]),
            false,
        )
        .unwrap();
    request
        .send_data(envelope(false, &server_stream_request(2_000, 100)), true)
        .unwrap();
    let response = response.await.unwrap();
    tokio::time::sleep(DEADLINE).await;
    let response = read_response(response).await;
    assert_eq!(response.grpc_status(), Some(0), "{response:?}");
}

fn endless_request() -> Bytes {
    envelope(false, &server_stream_request(20_000_000, 100))
}

#[tokio::test]
async fn the_adapter_server_ends_a_server_stream_at_its_deadline() {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = start(Flavour::Adapter, EchoService::default()).await;
    let client = connect(server.addr).await;
    warm_up(&client).await;
    let before = Footprint::settled().await;
    let started = Instant::now();
    let response = send(
        &client,
        "/streamcodec.echo.v1.Echo/ServerStream",
        &[("grpc-timeout", "200m")],
        endless_request(),
    )
    .await;
    println!("server stream ended after {:?}", started.elapsed());
    assert_eq!(
        response.grpc_status(),
        Some(DEADLINE_EXCEEDED),
        "{:?}",
        response.trailers
    );
    let sent: usize = response.data_frames.iter().map(Bytes::len).sum();
    assert!(sent < 20_000_000 * 100, "the whole stream went out");
    drop(response);
    Footprint::settled()
        .await
        .assert_back_to(before, HEAP_SLACK);
    warm_up(&client).await;
}

#[tokio::test]
async fn the_adapter_server_ends_a_bidi_stream_at_its_deadline() {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = start(Flavour::Adapter, EchoService::default()).await;
    let client = connect(server.addr).await;
    warm_up(&client).await;
    let before = Footprint::settled().await;
    let mut client = client.ready().await.unwrap();
    let (response, mut requests) = client
        .send_request(
            grpc_request(
                "/streamcodec.echo.v1.Echo/Bidi",
                &[("grpc-timeout", "200m")],
            ),
            false,
        )
        .unwrap();
    // EchoRequest { payload: "ping" }
    requests
        .send_data(envelope(false, b"\x0a\x04ping"), false)
        .unwrap();
    // The request stream stays open: only the deadline ends the call.
    let started = Instant::now();
    let response = read_response(response.await.unwrap()).await;
    println!("bidi ended after {:?}", started.elapsed());
    assert_eq!(
        response.grpc_status(),
        Some(DEADLINE_EXCEEDED),
        "{response:?}"
    );
    drop((requests, response));
    Footprint::settled()
        .await
        .assert_back_to(before, HEAP_SLACK);
}

/// A stock server in a process of its own (it streams on past the
/// deadline), so this process's heap is the client's.
fn stock_server() -> test_support::process::ListeningProcess {
    let mut server = std::process::Command::new(env!("CARGO_BIN_EXE_volo-echo-server"));
    server
        .args(["--listen", "127.0.0.1:0", "--stock"])
        .stderr(std::process::Stdio::null());
    test_support::process::ListeningProcess::start(server)
}

#[tokio::test]
async fn the_adapter_client_ends_streaming_responses_at_the_deadline_it_sent() {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = stock_server();
    let options = ClientOptions {
        metadata: MetadataLayer::new(&[("grpc-timeout", "200m")]).unwrap(),
        ..ClientOptions::default()
    };
    // A first client and its connection, gone before the baseline: what a
    // process sets up once (the runtime's I/O registrations) is not
    // counted. The calls' client is dropped, closing its connection, before
    // the footprint is taken again: h2's receive queue grows with how many
    // frames arrive before each reset, which depends on the machine's load,
    // and is h2's.
    let first = volo_echo::adapter::client_with(server.addr, &options);
    first
        .unary(volo_echo::adapter::EchoRequest::default())
        .await
        .unwrap();
    drop(first);
    let before = Footprint::settled().await;
    let client = volo_echo::adapter::client_with(server.addr, &options);

    let started = Instant::now();
    let outcome = volo_echo::adapter::calls::server_stream(&client, 100, 20_000_000).await;
    println!(
        "server stream ended after {:?}: {outcome:?}",
        started.elapsed()
    );
    let status = match outcome {
        Ok((_, Some(status))) => status,
        other => panic!("not ended by a status: {other:?}"),
    };
    assert_eq!(
        status.code(),
        volo_grpc::Code::DeadlineExceeded,
        "{status:?}"
    );

    // Bidi, with a request stream that never ends.
    let ping = volo_echo::adapter::EchoRequest {
        payload: Bytes::from_static(b"ping"),
        ..Default::default()
    };
    let requests = futures::stream::iter([ping]).chain(futures::stream::pending());
    let started = Instant::now();
    let mut responses = client.bidi(requests).await.unwrap().into_inner();
    let status = loop {
        match responses.next().await {
            Some(Ok(_)) => continue,
            Some(Err(status)) => break status,
            None => panic!("the bidi stream ended without an error"),
        }
    };
    println!("bidi ended after {:?}: {status:?}", started.elapsed());
    assert_eq!(
        status.code(),
        volo_grpc::Code::DeadlineExceeded,
        "{status:?}"
    );
    drop(responses);
    drop(client);
    Footprint::settled()
        .await
        .assert_back_to(before, HEAP_SLACK);
}
