//! A client that cancels mid-stream leaves the interop servers nothing
//! behind: after 1,000 streams dropped mid-call (half StreamingInputCall
//! after its first request reached the handler, half FullDuplexCall after
//! its first response), every stream the handlers opened has closed, the
//! server runtime is back to the tasks it had, and live heap has not grown
//! by more than 64 bytes per cancelled stream — on the tonic full-framing
//! server and on the volo adapter server.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{StreamExt, stream};
use grpc_interop::stats::StreamStats;
use grpc_interop::tonic_gen::test_service_client::TestServiceClient;
use grpc_interop::tonic_gen::{
    Payload, ResponseParameters, StreamingInputCallRequest, StreamingOutputCallRequest,
};
use grpc_interop::{tonic_server, volo_server};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::{Channel, Endpoint};

use test_support::alloc as live_alloc;
use test_support::settle::settle_live_bytes;

#[global_allocator]
static ALLOC: live_alloc::CountingAlloc = live_alloc::CountingAlloc::SWITCHED;

/// Cancelled streams per server, half client-streaming and half bidi.
const CANCELLED: usize = 1000;
/// Streams cancelled first, so lazily built state is not counted.
const WARM_UP: usize = 100;

/// The two arms share the process-wide heap counter: one at a time.
static EXCLUSIVE: Mutex<()> = Mutex::new(());

#[derive(Clone, Copy, Debug)]
enum Arm {
    Tonic,
    Volo,
}

async fn within<F: Future>(what: &str, future: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(30), future)
        .await
        .unwrap_or_else(|_| panic!("{what} did not happen within 30 s"))
}

/// Waits until `done()` holds (bounded by [`within`]).
async fn until(what: &str, done: impl Fn() -> bool) {
    within(what, async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
}

fn payload(size: usize) -> Option<Payload> {
    Some(Payload {
        r#type: 0,
        body: vec![0u8; size].into(),
    })
}

/// A StreamingInputCall that sends one request and keeps its stream open;
/// dropped once the handler has read that request.
async fn cancel_input(client: &TestServiceClient<Channel>, stats: &StreamStats) {
    let read = stats.messages();
    let first = StreamingInputCallRequest {
        payload: payload(64),
        ..StreamingInputCallRequest::default()
    };
    let requests = stream::once(async move { first }).chain(stream::pending());
    let mut client = client.clone();
    let call = client.streaming_input_call(requests);
    tokio::select! {
        answered = call => panic!("the open upload was answered: {:?}", answered.map(drop)),
        () = until("the handler reading the first request", || stats.messages() > read) => {}
    }
}

/// A FullDuplexCall dropped (requests and responses) after its first
/// response, as an aborted client task drops it.
async fn cancel_duplex(client: &TestServiceClient<Channel>) {
    let (requests, stream) = mpsc::channel(1);
    let first = StreamingOutputCallRequest {
        response_parameters: vec![ResponseParameters {
            size: 64,
            ..ResponseParameters::default()
        }],
        payload: payload(64),
        ..StreamingOutputCallRequest::default()
    };
    requests.send(first).await.unwrap();
    let mut client = client.clone();
    let response = within(
        "FullDuplexCall",
        client.full_duplex_call(ReceiverStream::new(stream)),
    )
    .await
    .unwrap();
    let mut responses = response.into_inner();
    let echo = within("the first response", responses.message()).await;
    let body = echo.unwrap().unwrap().payload.unwrap().body;
    assert_eq!(body.len(), 64);
    drop((responses, requests));
}

async fn cancel_streams(client: &TestServiceClient<Channel>, stats: &StreamStats, n: usize) {
    for _ in 0..n / 2 {
        cancel_input(client, stats).await;
        cancel_duplex(client).await;
    }
}

#[derive(Debug)]
struct Leftovers {
    opened: usize,
    closed: usize,
    tasks_before: usize,
    tasks_after: usize,
    live_growth: isize,
}

fn cancelled_streams_on(arm: Arm) -> Leftovers {
    let server_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let client_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let stats = Arc::new(StreamStats::default());
    let listener = server_runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    match arm {
        Arm::Tonic => {
            let service = tonic_server::TonicTestService::with_stats(stats.clone());
            server_runtime.spawn(tonic_server::serve(listener, service));
        }
        Arm::Volo => {
            let service = volo_server::VoloTestService::with_stats(stats.clone());
            server_runtime.spawn(volo_server::serve(listener, service));
        }
    }
    let server = server_runtime.handle().clone();
    live_alloc::enable();

    let figures = client_runtime.block_on(async move {
        let channel = Endpoint::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect()
            .await
            .unwrap();
        let client = TestServiceClient::new(channel);
        let all_closed = |expected: usize| {
            let stats = stats.clone();
            async move {
                until("every cancelled stream to close on the server", || {
                    stats.closed() >= expected
                })
                .await;
            }
        };
        cancel_streams(&client, &stats, WARM_UP).await;
        all_closed(WARM_UP).await;
        let tasks_before = server.metrics().num_alive_tasks();
        let live_before = settle_live_bytes(16 * 1024).await;

        cancel_streams(&client, &stats, CANCELLED).await;
        all_closed(WARM_UP + CANCELLED).await;
        // A reset stream's tasks end once the server has seen the reset.
        let mut tasks_after = server.metrics().num_alive_tasks();
        for _ in 0..200 {
            if tasks_after <= tasks_before {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            tasks_after = server.metrics().num_alive_tasks();
        }
        let live_after = settle_live_bytes(16 * 1024).await;
        drop(client);
        Leftovers {
            opened: stats.opened(),
            closed: stats.closed(),
            tasks_before,
            tasks_after,
            live_growth: live_after - live_before,
        }
    });
    drop(client_runtime);
    drop(server_runtime);
    figures
}

fn check(arm: Arm) {
    let _exclusive = EXCLUSIVE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let left = cancelled_streams_on(arm);
    eprintln!("{arm:?}: {CANCELLED} cancelled streams after {WARM_UP} warm-up: {left:?}");
    assert_eq!(left.opened, WARM_UP + CANCELLED, "{arm:?}: {left:?}");
    assert_eq!(
        left.closed, left.opened,
        "{arm:?}: a stream stayed open: {left:?}"
    );
    assert!(
        left.tasks_after <= left.tasks_before,
        "{arm:?}: tasks left: {left:?}"
    );
    // A leaked stream, handler or decoder holds far more than 64 bytes.
    assert!(
        left.live_growth < (CANCELLED * 64) as isize,
        "{arm:?}: heap grew: {left:?}"
    );
}

#[test]
fn cancelled_streams_leave_the_tonic_full_framing_server_clean() {
    check(Arm::Tonic);
}

#[test]
fn cancelled_streams_leave_the_volo_adapter_server_clean() {
    check(Arm::Volo);
}
