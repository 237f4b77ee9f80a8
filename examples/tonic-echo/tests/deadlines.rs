//! `grpc-timeout` bounds streaming calls on full framing, as grpc-go and
//! C-core bound them: the server ends a server-streaming or bidi response at
//! the deadline with `DEADLINE_EXCEEDED` in its trailers, and the client ends
//! a streaming response at the deadline it sent. tonic's own transport only
//! bounds a call until its response headers. Each test also checks that
//! the ended call leaves no task and no heap behind (one test at a time, so
//! the process's heap is the test's).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use prost::Message;
use test_support::alloc::CountingAlloc;
use test_support::raw_h2::{connect, envelope, grpc_request, read_response};
use test_support::settle::Footprint;
use tokio_stream::StreamExt as _;
use tonic_echo::adapter::EchoRequest;
use tonic_echo::{Framing, ServeOptions};

const SERVER_STREAM: &str = "/streamcodec.echo.v1.Echo/ServerStream";
const BIDI: &str = "/streamcodec.echo.v1.Echo/Bidi";
const DEADLINE: Duration = Duration::from_millis(200);
const DEADLINE_EXCEEDED: i32 = 4;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::ALWAYS;

/// Heap an ended call may leave: none of its own; this is what the
/// allocator's and the runtime's bookkeeping move by.
const HEAP_SLACK: usize = 16 * 1024;

static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A unary call and a short server stream on `client`: warms the
/// connection up (its buffers grow to full frames), and shows it still
/// serves after a call ended at its deadline.
async fn unary(client: &h2::client::SendRequest<Bytes>) {
    let unary = test_support::raw_h2::send(
        client,
        "/streamcodec.echo.v1.Echo/Unary",
        &[],
        envelope(0, &EchoRequest::default().encode_to_vec()),
    )
    .await;
    assert_eq!(unary.grpc_status(), Some(0));
    let short = EchoRequest {
        response_count: 2_000,
        response_size: 100,
        ..EchoRequest::default()
    };
    let stream = test_support::raw_h2::send(
        client,
        SERVER_STREAM,
        &[],
        envelope(0, &short.encode_to_vec()),
    )
    .await;
    assert_eq!(stream.grpc_status(), Some(0));
}

async fn start(options: ServeOptions) -> SocketAddr {
    let (listener, addr) = tonic_echo::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    tokio::spawn(async move {
        tonic_echo::serve_with(listener, options).await.unwrap();
    });
    addr
}

fn full() -> ServeOptions {
    ServeOptions {
        framing: Framing::Full,
        ..ServeOptions::default()
    }
}

/// Far more responses than 200 ms can carry.
fn endless_request() -> EchoRequest {
    EchoRequest {
        response_count: 20_000_000,
        response_size: 100,
        ..EchoRequest::default()
    }
}

#[tokio::test]
async fn full_framing_server_ends_a_server_stream_at_its_deadline() {
    let _one = ONE_AT_A_TIME.lock().await;
    let addr = start(full()).await;
    let client = connect(addr).await;
    unary(&client).await;
    let before = Footprint::settled().await;
    let started = Instant::now();
    let response = test_support::raw_h2::send(
        &client,
        SERVER_STREAM,
        &[("grpc-timeout", "200m")],
        envelope(0, &endless_request().encode_to_vec()),
    )
    .await;
    let elapsed = started.elapsed();
    println!("server stream ended after {elapsed:?} (deadline {DEADLINE:?})");
    assert_eq!(
        response.grpc_status(),
        Some(DEADLINE_EXCEEDED),
        "{:?}",
        response.trailers
    );
    let sent: usize = response.data_frames.iter().map(Bytes::len).sum();
    assert!(
        sent < 20_000_000 * 100,
        "the whole stream went out: {sent} bytes"
    );
    drop(response);
    Footprint::settled()
        .await
        .assert_back_to(before, HEAP_SLACK);
    // The connection is still fine for the next call.
    unary(&client).await;
}

#[tokio::test]
async fn full_framing_server_ends_a_bidi_stream_at_its_deadline() {
    let _one = ONE_AT_A_TIME.lock().await;
    let addr = start(full()).await;
    let client = connect(addr).await;
    unary(&client).await;
    let before = Footprint::settled().await;
    let mut client = client.ready().await.unwrap();
    let (response, mut requests) = client
        .send_request(grpc_request(BIDI, &[("grpc-timeout", "200m")]), false)
        .unwrap();
    let message = EchoRequest {
        payload: Bytes::from_static(b"ping"),
        ..EchoRequest::default()
    };
    requests
        .send_data(envelope(0, &message.encode_to_vec()).into(), false)
        .unwrap();
    // The request stream stays open: only the deadline ends the call.
    let started = Instant::now();
    let response = read_response(response.await.unwrap()).await;
    println!(
        "bidi ended after {:?} (deadline {DEADLINE:?})",
        started.elapsed()
    );
    assert_eq!(
        response.grpc_status(),
        Some(DEADLINE_EXCEEDED),
        "{response:?}"
    );
    assert_eq!(response.data_frames.len(), 1, "the one echo, then the end");
    drop((requests, response));
    Footprint::settled()
        .await
        .assert_back_to(before, HEAP_SLACK);
}

#[tokio::test]
async fn stock_tonic_server_streams_past_its_deadline() {
    // The baseline the server test replaces: tonic stops a call at its
    // deadline only until the response headers.
    let _one = ONE_AT_A_TIME.lock().await;
    let addr = start(ServeOptions {
        stock: true,
        ..ServeOptions::default()
    })
    .await;
    let client = connect(addr).await;
    let mut client = client.ready().await.unwrap();
    let (response, _requests) = client
        .send_request(
            grpc_request(SERVER_STREAM, &[("grpc-timeout", "200m")]),
            false,
        )
        .map(|(response, mut stream)| {
            let body = envelope(0, &endless_request().encode_to_vec());
            stream.send_data(body.into(), true).unwrap();
            (response, stream)
        })
        .unwrap();
    let (_, mut body) = response.await.unwrap().into_parts();
    let started = Instant::now();
    let mut received = 0;
    while started.elapsed() < 3 * DEADLINE {
        let frame = body.data().await.expect("still streaming").unwrap();
        let _ = body.flow_control().release_capacity(frame.len());
        received += frame.len();
    }
    println!(
        "stock tonic sent {received} bytes in {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn full_framing_client_ends_a_streaming_response_at_the_deadline_it_sent() {
    // A stock server, which streams on past the deadline: the client ends
    // it. In a process of its own, so this one's heap is the client's.
    let _one = ONE_AT_A_TIME.lock().await;
    let mut server = std::process::Command::new(env!("CARGO_BIN_EXE_tonic-echo-server"));
    server
        .args(["--listen", "127.0.0.1:0", "--stock"])
        .stderr(std::process::Stdio::null());
    let server = test_support::process::ListeningProcess::start(server);
    let addr = server.addr;
    let connect = || tonic_echo::full::echo_client::EchoClient::connect(format!("http://{addr}"));
    // A first connection, closed before the baseline: what a process sets
    // up once (the runtime's I/O registrations) is not counted. The calls'
    // connection is closed before the footprint is taken again: its h2
    // buffers grow with how many frames arrive before each reset, which
    // depends on the machine's load, and are h2's.
    connect()
        .await
        .unwrap()
        .unary(EchoRequest::default())
        .await
        .unwrap();
    let before = Footprint::settled().await;
    let mut client = connect().await.unwrap();
    for bidi in [false, true] {
        let started = Instant::now();
        let mut responses = if bidi {
            let first = EchoRequest {
                payload: Bytes::from_static(b"ping"),
                ..EchoRequest::default()
            };
            // A request stream that never ends.
            let requests = tokio_stream::iter([first]).chain(tokio_stream::pending());
            let mut request = tonic::Request::new(requests);
            request.set_timeout(DEADLINE);
            client.bidi(request).await.unwrap().into_inner()
        } else {
            let mut request = tonic::Request::new(endless_request());
            request.set_timeout(DEADLINE);
            client.server_stream(request).await.unwrap().into_inner()
        };
        let status = loop {
            match responses.message().await {
                Ok(Some(_)) => continue,
                Ok(None) => panic!("the stream ended without an error"),
                Err(status) => break status,
            }
        };
        println!("client (bidi: {bidi}) ended after {:?}", started.elapsed());
        assert_eq!(status.code(), tonic::Code::DeadlineExceeded, "{status:?}");
        // Ended once: nothing more after the status.
        assert!(responses.message().await.unwrap_or(None).is_none());
    }
    drop(client);
    Footprint::settled()
        .await
        .assert_back_to(before, HEAP_SLACK);
}
