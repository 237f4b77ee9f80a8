//! `grpc-timeout` bounds streaming calls on the volo adapter, as grpc-go
//! and C-core bound them: the server (behind `BinaryMetadataLayer`) ends a
//! server-streaming or bidi response at the deadline with
//! `DEADLINE_EXCEEDED` in its trailers, and the client ends a streaming
//! response at the deadline it sent. volo-grpc itself bounds a call only
//! until its response headers.

mod support;

use std::time::Instant;

use bytes::Bytes;
use support::{Flavour, envelope, server_stream_request, start};
use test_support::raw_h2::{connect, grpc_request, read_response, send};
use volo_echo::{ClientOptions, EchoService, MetadataLayer};

const DEADLINE_EXCEEDED: i32 = 4;

fn endless_request() -> Bytes {
    envelope(false, &server_stream_request(20_000_000, 100))
}

#[tokio::test]
async fn the_adapter_server_ends_a_server_stream_at_its_deadline() {
    let server = start(Flavour::Adapter, EchoService::default()).await;
    let client = connect(server.addr).await;
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
}

#[tokio::test]
async fn the_adapter_server_ends_a_bidi_stream_at_its_deadline() {
    let server = start(Flavour::Adapter, EchoService::default()).await;
    let client = connect(server.addr).await;
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
    drop(requests);
}

#[tokio::test]
async fn the_adapter_client_ends_a_server_stream_at_the_deadline_it_sent() {
    // A stock server streams on past the deadline: the client ends it.
    let server = start(Flavour::Stock, EchoService::default()).await;
    let options = ClientOptions {
        metadata: MetadataLayer::new(&[("grpc-timeout", "200m")]).unwrap(),
        ..ClientOptions::default()
    };
    let client = volo_echo::adapter::client_with(server.addr, &options);
    let started = Instant::now();
    let outcome = volo_echo::adapter::calls::server_stream(&client, 100, 20_000_000).await;
    println!("client ended after {:?}: {outcome:?}", started.elapsed());
    let status = match outcome {
        Ok((_, Some(status))) => status,
        other => panic!("not ended by a status: {other:?}"),
    };
    assert_eq!(
        status.code(),
        volo_grpc::Code::DeadlineExceeded,
        "{status:?}"
    );
}
