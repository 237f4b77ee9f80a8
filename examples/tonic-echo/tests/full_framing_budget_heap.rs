//! The receive budget's memory claim on tonic's full framing, measured on
//! the process rather than on the budget's own counters (which
//! `full_framing_budget.rs` checks): with ClientStream calls stalled
//! mid-message against an in-process full-framing server, the process's
//! live heap (counting global allocator: server, raw HTTP/2 client and
//! runtime in one process) grows by no more than the budget, one overdrawn
//! message, the HTTP/2 windows the peer may fill unread, and a fixed
//! allowance; and it is back to its baseline once the calls finish. The
//! same run with a budget too large to gate is the control: it holds every
//! byte sent, so the measure sees what the budget saves.
//!
//! One test in its own binary: the allocator counts the whole process.
//! Uncompressed requests, public API (`serve_full_with_budget`).

#[path = "support/raw.rs"]
mod raw;

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use grpc_stream_codec::budget::{BudgetStats, SharedBudget};
use h2::SendStream;
use h2::client::ResponseFuture;
use prost::Message;
use test_support::alloc::{CountingAlloc, live_bytes};
use test_support::settle::{settle, settle_live_bytes};
use tonic_echo::adapter::{EchoRequest, EchoResponse};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::ALWAYS;

const CAPACITY: usize = 4 << 20;
/// The control's budget: more than every call's whole message.
const UNGATED: usize = 64 << 20;
const PAYLOAD: usize = 1_000_000;
const STREAMS: usize = 16;
const CONNECTIONS: usize = 2;
/// Heap the stalled calls may cost besides their message bytes and the
/// unread windows: h2 streams on two client and two server connections,
/// tonic's per-call tasks and one frame held by each waiting stream.
const ALLOWANCE: usize = 1 << 20;
/// Live heap that may differ from the baseline once everything finished.
const SETTLED: isize = 256 * 1024;

struct Stalled {
    send: SendStream<Bytes>,
    rest: Bytes,
    response: ResponseFuture,
}

async fn open_stalled(
    addr: SocketAddr,
    connections: usize,
    streams: usize,
    wire: &Bytes,
    sent: usize,
) -> Vec<Stalled> {
    let mut clients = Vec::new();
    for _ in 0..connections {
        clients.push(raw::connect(addr).await);
    }
    let mut stalled = Vec::new();
    for i in 0..streams {
        let mut client = clients[i % connections].clone().ready().await.unwrap();
        let (response, mut send) = client
            .send_request(raw::grpc_request(raw::CLIENT_STREAM, &[]), false)
            .unwrap();
        send.send_data(wire.slice(..sent), false).unwrap();
        stalled.push(Stalled {
            send,
            rest: wire.slice(sent..),
            response,
        });
    }
    stalled
}

async fn finish_all(stalled: Vec<Stalled>) {
    let mut calls = Vec::new();
    for mut call in stalled {
        call.send.send_data(call.rest, true).unwrap();
        calls.push(tokio::spawn(async move {
            raw::read_reply(call.response.await.unwrap()).await
        }));
    }
    for call in calls {
        let reply = call.await.unwrap();
        assert_eq!(reply.code(), tonic::Code::Ok, "{reply:?}");
        let response = EchoResponse::decode(&reply.data[5..]).unwrap();
        assert_eq!((response.count, response.total_bytes), (1, PAYLOAD as u64));
    }
}

struct Arm {
    /// Live heap growth while the calls stall, bytes.
    stalled: isize,
    /// Live heap difference once every call finished, bytes.
    after: isize,
    stats: BudgetStats,
    sent: usize,
    message: usize,
}

async fn arm(capacity: usize) -> Arm {
    let budget = SharedBudget::new(capacity).with_max_wait(Duration::from_secs(120));
    let (listener, addr) = tonic_echo::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let server = tokio::spawn(tonic_echo::serve_full_with_budget(
        listener,
        budget.clone().into(),
    ));
    let wire = Bytes::from(raw::message(&EchoRequest {
        payload: Bytes::from(vec![0x5a; PAYLOAD]),
        ..EchoRequest::default()
    }));
    let sent = wire.len() * 9 / 10;
    // First calls allocate what every later call reuses (runtime, pools).
    finish_all(open_stalled(addr, 1, 2, &wire, sent).await).await;
    let before = settle_live_bytes(16 * 1024).await;

    let stalled = open_stalled(addr, CONNECTIONS, STREAMS, &wire, sent).await;
    settle(Duration::from_millis(500), Duration::from_secs(30), || {
        let stats = budget.stats();
        (stats.in_use, stats.waiting, live_bytes() >> 16)
    })
    .await;
    let stalled_live = settle_live_bytes(64 * 1024).await;
    let stats = budget.stats();

    finish_all(stalled).await;
    assert_eq!(budget.stats().in_use, 0, "{:?}", budget.stats());
    let after = settle_live_bytes(16 * 1024).await;
    server.abort();
    let _ = server.await;
    Arm {
        stalled: stalled_live - before,
        after: after - before,
        stats,
        sent,
        message: wire.len() - 5,
    }
}

#[test]
fn stalled_streams_hold_no_more_heap_than_the_budget_allows() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let gated = runtime.block_on(arm(CAPACITY));
    let control = runtime.block_on(arm(UNGATED));
    // The windows the example server sets for its budget.
    let set = grpc_stream_codec::budget::SharedBudget::new(CAPACITY)
        .http2_windows(tonic_echo::BUDGET_STREAMS_PER_CONNECTION);
    let windows = (CONNECTIONS * set.connection as usize).min(STREAMS * set.stream as usize);
    let allowed = CAPACITY + gated.message + windows + ALLOWANCE;
    let offered = STREAMS * gated.sent;
    eprintln!(
        "{STREAMS} calls, {offered} bytes sent: live heap growth while stalled {} bytes \
         with a {CAPACITY}-byte budget (allowed {allowed}), {} bytes ungated; after: {} \
         and {} bytes; budget {:?}",
        gated.stalled, control.stalled, gated.after, control.after, gated.stats,
    );
    assert!(gated.stats.waiting > 0, "{:?}", gated.stats);
    assert!(
        gated.stalled <= allowed as isize,
        "stalled calls grew the live heap by {} bytes, more than {allowed}",
        gated.stalled
    );
    assert_eq!(control.stats.waiting, 0, "{:?}", control.stats);
    assert!(
        control.stalled >= (offered - windows) as isize && control.stalled > allowed as isize,
        "the ungated run holds only {} bytes of {offered} sent",
        control.stalled
    );
    for (name, arm) in [("gated", &gated), ("control", &control)] {
        assert!(
            arm.after.abs() <= SETTLED,
            "{name}: live heap {} bytes from its baseline after every call finished",
            arm.after
        );
    }
}
