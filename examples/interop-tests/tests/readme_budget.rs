//! README "Receive budget": its lines, compiled and run (the README block is
//! the region between the snippet markers below, checked by the root
//! crate's `tests/readme_snippets.rs`). One budget is shared by a server and
//! the clients talking to it; a call whose only large messages go one way
//! shows that side counts them.

use std::net::{Ipv4Addr, SocketAddr};

use futures::StreamExt;
use tokio_stream::wrappers::TcpListenerStream;

/// Larger than the 4 KiB below which messages are not gated, so each one
/// takes its own counted allocation.
const LARGE: usize = 64 * 1024;

async fn listener() -> (tokio::net::TcpListener, SocketAddr) {
    let listener = tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local address");
    (listener, addr)
}

/// After `LARGE` messages went to the server only.
fn assert_server_side_counted(budget: &grpc_stream_codec::budget::SharedBudget) {
    let stats = budget.stats();
    assert!(stats.peak >= LARGE, "server side not counted: {stats:?}");
    assert!(stats.peak < 1 << 20, "{stats:?}");
}

/// After 1 MiB messages came to the client only: a peak above anything the
/// server received is the client's count.
fn assert_client_side_counted(budget: &grpc_stream_codec::budget::SharedBudget) {
    let stats = budget.stats();
    assert!(stats.peak >= 1 << 20, "client side not counted: {stats:?}");
    assert_eq!(stats.in_use, 0, "every message was dropped: {stats:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tonic_full_framing_server_and_client_count_against_one_budget() {
    use tonic_echo::EchoService;
    use tonic_echo::adapter::EchoRequest;
    use tonic_echo::full::echo_client::EchoClient;
    use tonic_echo::full::echo_server::EchoServer;

    let (listener, addr) = listener().await;
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .expect("endpoint")
        .connect_lazy();

    // snippet tonic
    use grpc_stream_codec::budget::{ReceiveBudgetLayer, SharedBudget};

    let budget = SharedBudget::new(256 << 20); // clones share it
    let windows = budget.http2_windows(64); // the most streams per connection

    // Server (full framing): every request stream of every service.
    let router = tonic::transport::Server::builder()
        .initial_stream_window_size(windows.stream)
        .initial_connection_window_size(windows.connection)
        .max_concurrent_streams(windows.max_concurrent_streams)
        .layer(ReceiveBudgetLayer::new(budget.clone()))
        .add_service(EchoServer::new(EchoService));

    // Client (full framing): every response stream of the channel.
    let channel = tower::ServiceBuilder::new()
        .layer(ReceiveBudgetLayer::new(budget.clone()))
        .service(channel);
    let mut client = EchoClient::new(channel);
    // end snippet

    let server = tokio::spawn(router.serve_with_incoming(TcpListenerStream::new(listener)));

    // Large messages go to the server only: the server's count.
    let requests = futures::stream::iter((0..4).map(|_| EchoRequest {
        payload: vec![7; LARGE].into(),
        ..EchoRequest::default()
    }));
    let reply = client
        .client_stream(requests)
        .await
        .expect("ClientStream")
        .into_inner();
    assert_eq!((reply.count, reply.total_bytes), (4, 4 * LARGE as u64));
    assert_server_side_counted(&budget);

    // Large messages come to the client only.
    let mut responses = client
        .server_stream(EchoRequest {
            response_count: 2,
            response_size: 1 << 20,
            ..EchoRequest::default()
        })
        .await
        .expect("ServerStream")
        .into_inner();
    let mut received = 0;
    while let Some(response) = responses.next().await {
        assert_eq!(response.expect("response").payload.len(), 1 << 20);
        received += 1;
    }
    assert_eq!(received, 2);
    assert_client_side_counted(&budget);
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn volo_adapter_server_and_client_count_against_one_budget() {
    use volo_echo::EchoService;
    use volo_echo::adapter::{EchoClientBuilder, EchoServer};
    use volo_grpc::server::{Server, ServiceBuilder};

    let (listener, addr) = listener().await;

    // snippet volo
    use grpc_stream_codec::budget::{ReceiveBudgetLayer, SharedBudget};

    let budget = SharedBudget::new(256 << 20); // clones share it
    let windows = budget.http2_windows(64); // the most streams per connection

    // Server: every request stream.
    let server = Server::new()
        .http2_init_stream_window_size(windows.stream)
        .http2_init_connection_window_size(windows.connection)
        .http2_max_concurrent_streams(windows.max_concurrent_streams)
        .layer_front(ReceiveBudgetLayer::new(budget.clone()))
        .add_service(ServiceBuilder::new(EchoServer::new(EchoService::default())).build());

    // Client: every response stream of this client.
    let client = EchoClientBuilder::new("echo")
        .address(addr)
        .layer_inner(ReceiveBudgetLayer::new(budget.clone()))
        .build();
    // end snippet

    let incoming = volo::net::incoming::DefaultIncoming::from(listener);
    let server = tokio::spawn(server.run(incoming));

    // Checks the reply's count and total.
    volo_echo::adapter::calls::client_stream(&client, LARGE, 4)
        .await
        .expect("ClientStream");
    assert_server_side_counted(&budget);

    let (received, status) = volo_echo::adapter::calls::server_stream(&client, 1 << 20, 2)
        .await
        .expect("ServerStream");
    assert_eq!((received, status.is_none()), (2, true));
    assert_client_side_counted(&budget);
    server.abort();
}
