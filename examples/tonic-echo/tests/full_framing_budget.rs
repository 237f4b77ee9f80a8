//! The receive budget on tonic's full framing, end to end over loopback:
//! ClientStream calls that each send most of one large message and stall are
//! held by HTTP/2 flow control instead of filling the server's memory; a
//! small Unary from another client still succeeds; once the rest is sent
//! every call is answered OK with the right count and bytes, and the budget
//! is back to zero. And a full-framing client counts its response streams.

#[path = "support/raw.rs"]
mod raw;

use std::net::SocketAddr;
use std::time::{Duration, Instant};
use test_support::settle::settle;

use bytes::Bytes;
use grpc_stream_codec::budget::SharedBudget;
use h2::SendStream;
use h2::client::ResponseFuture;
use prost::Message;
use tokio_stream::StreamExt;
use tonic::transport::Endpoint;
use tonic_echo::adapter::{EchoRequest, EchoResponse};
use tonic_echo::{ClientStack, EchoClient, Framing, ServeOptions};

const CLIENT_STREAM: &str = raw::CLIENT_STREAM;

/// One stalled ClientStream call.
struct Stalled {
    send: SendStream<Bytes>,
    rest: Bytes,
    response: ResponseFuture,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_streams_are_held_by_the_budget_and_all_complete() {
    const CAPACITY: usize = 4 << 20;
    const PAYLOAD: usize = 1_000_000;
    const STREAMS: usize = 16;
    const CONNECTIONS: usize = 2;
    let budget = SharedBudget::new(CAPACITY).with_max_wait(Duration::from_secs(120));
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
    let mut clients = Vec::new();
    for _ in 0..CONNECTIONS {
        clients.push(raw::connect(addr).await);
    }
    let mut stalled = Vec::new();
    for i in 0..STREAMS {
        let mut client = clients[i % CONNECTIONS].clone().ready().await.unwrap();
        let (response, mut send) = client
            .send_request(raw::grpc_request(CLIENT_STREAM, &[]), false)
            .unwrap();
        send.send_data(wire.slice(..sent), false).unwrap();
        stalled.push(Stalled {
            send,
            rest: wire.slice(sent..),
            response,
        });
    }
    let held = settle(Duration::from_millis(500), Duration::from_secs(30), || {
        let stats = budget.stats();
        (stats.in_use, stats.waiting)
    })
    .await;
    let stats = budget.stats();
    eprintln!(
        "{STREAMS} calls of {} bytes, 90% sent, against {CAPACITY}: {stats:?}",
        wire.len()
    );
    assert!(held.1 > 0, "some streams must wait: {stats:?}");
    // The progress rule's one overdrawn message is the only excess.
    assert!(stats.peak <= CAPACITY + wire.len(), "{stats:?}");
    assert!(stats.in_use >= CAPACITY - wire.len(), "{stats:?}");

    // A small Unary from a client of its own still gets through.
    let mut other = EchoClient::connect_with(format!("http://{addr}"), ClientStack::Full, None)
        .await
        .unwrap();
    let started = Instant::now();
    tonic_echo::check_unary(&mut other, 100).await.unwrap();
    eprintln!("small unary while stalled: {:?}", started.elapsed());

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
    let after = settle(Duration::from_millis(200), Duration::from_secs(10), || {
        budget.stats().in_use
    })
    .await;
    let stats = budget.stats();
    assert_eq!(
        (after, stats.waiting, stats.timed_out),
        (0, 0, 0),
        "{stats:?}"
    );
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_counts_held_response_messages_until_dropped() {
    let (listener, addr) = tonic_echo::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let options = ServeOptions {
        framing: Framing::Full,
        ..ServeOptions::default()
    };
    let server = tokio::spawn(tonic_echo::serve_with(listener, options));
    let budget = SharedBudget::new(16 << 20);
    let channel = Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let channel = tower::ServiceBuilder::new()
        .layer(grpc_stream_codec::tonic::ReceiveBudgetLayer::new(
            budget.clone(),
        ))
        .service(channel);
    let mut client = tonic_echo::full::echo_client::EchoClient::new(channel);
    let mut responses = client
        .server_stream(EchoRequest {
            response_count: 4,
            response_size: 1 << 20,
            ..EchoRequest::default()
        })
        .await
        .unwrap()
        .into_inner();
    let mut held = Vec::new();
    while let Some(response) = responses.next().await {
        held.push(response.unwrap().payload);
    }
    assert_eq!(held.len(), 4);
    // The payloads are shares of their messages' counted memory.
    let in_use = budget.stats().in_use;
    assert!(in_use >= 4 << 20, "in use {in_use}");
    drop(held);
    drop(responses);
    assert_eq!(budget.stats().in_use, 0);
    server.abort();
}
