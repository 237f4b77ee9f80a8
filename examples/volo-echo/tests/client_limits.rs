//! `LimitsLayer` end to end: clients in one process with receive limits of
//! their own, against a real volo-grpc adapter server over loopback that has
//! a limit of its own too. Nothing here calls `set_default_limits`, so every
//! limit seen comes from a layer (or is the 4 MiB default).

use std::net::{Ipv4Addr, SocketAddr};

use futures::StreamExt;
use grpc_stream_codec::envelope::Limits;
use grpc_stream_codec::volo::{ClientCompressionLayer, DeflateNameLayer, LimitsLayer};
use pilota::pb::Message;
use volo_echo::EchoService;
use volo_echo::adapter::{EchoClient, EchoClientBuilder, EchoRequest, EchoResponse, EchoServer};
use volo_grpc::Code;
use volo_grpc::server::{Server, ServiceBuilder};

const SERVER_LIMIT: usize = 64 << 10;
const SMALL_CLIENT_LIMIT: usize = 16 << 10;
const LARGE_CLIENT_LIMIT: usize = 1 << 20;

/// An adapter server whose request streams get `SERVER_LIMIT`.
async fn serve() -> SocketAddr {
    let (listener, addr) = volo_echo::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .await
        .unwrap();
    let service = ServiceBuilder::new(EchoServer::new(EchoService::default())).build();
    let incoming = volo::net::incoming::DefaultIncoming::from(listener);
    tokio::spawn(
        Server::new()
            .layer_front(DeflateNameLayer)
            .layer_front(LimitsLayer::new(
                Limits::new().with_max_receive(SERVER_LIMIT),
            ))
            .add_service(service)
            .run(incoming),
    );
    addr
}

/// An adapter client, with its own receive limit if `max_receive` is set.
fn client(addr: SocketAddr, max_receive: Option<usize>) -> EchoClient {
    let builder = EchoClientBuilder::new("echo")
        .address(addr)
        .layer_inner(ClientCompressionLayer::default());
    match max_receive {
        Some(max) => builder
            .layer_inner(LimitsLayer::new(Limits::new().with_max_receive(max)))
            .build(),
        None => builder.build(),
    }
}

fn request(size: usize) -> EchoRequest {
    EchoRequest {
        payload: vec![0x5a; size].into(),
        ..Default::default()
    }
}

/// The encoded length of the echo of a `size`-byte payload: what the
/// limit is checked against.
fn echo_len(size: usize) -> usize {
    let response = EchoResponse {
        payload: vec![0x5a; size].into(),
        ..Default::default()
    };
    response.encoded_len(&mut Default::default())
}

fn request_len(size: usize) -> usize {
    request(size).encoded_len(&mut Default::default())
}

async fn unary(client: &EchoClient, size: usize) -> Result<usize, volo_grpc::Status> {
    let reply = client.unary(request(size)).await?.into_inner();
    Ok(reply.payload.len())
}

fn assert_exhausted(result: Result<usize, volo_grpc::Status>, len: usize, limit: usize) {
    let status = result.expect_err("over the limit");
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert_eq!(
        status.message(),
        format!("message size {len} exceeds limit {limit}"),
        "{status:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_client_and_the_server_keep_their_own_receive_limit() {
    let addr = serve().await;
    let small = client(addr, Some(SMALL_CLIENT_LIMIT));
    let large = client(addr, Some(LARGE_CLIENT_LIMIT));
    let default = client(addr, None);

    // A 32 KiB echo: over the small client's limit only. The server took
    // the request (under its 64 KiB), so the refusal is the small client's.
    let size = 32 << 10;
    assert_exhausted(
        unary(&small, size).await,
        echo_len(size),
        SMALL_CLIENT_LIMIT,
    );
    assert_eq!(unary(&large, size).await.unwrap(), size);
    assert_eq!(unary(&default, size).await.unwrap(), size);

    // The other client's limit was its own, not the small one leaking.
    assert_eq!(unary(&large, 60 << 10).await.unwrap(), 60 << 10);

    // The server's own limit: a 100 KiB request is refused by the server
    // (the 4 MiB default would take it, and so would the large client).
    let size = 100 << 10;
    assert_exhausted(unary(&large, size).await, request_len(size), SERVER_LIMIT);
    assert_exhausted(unary(&default, size).await, request_len(size), SERVER_LIMIT);

    // And the small client still works for what fits.
    assert_eq!(unary(&small, 1 << 10).await.unwrap(), 1 << 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamed_responses_follow_the_client_limit() {
    // A 2 MiB ServerStream response: under the 4 MiB default, over the
    // 1 MiB client's limit. (The server's layer sets only its receive limit;
    // its send limit stays unlimited.)
    let addr = serve().await;
    let limited = client(addr, Some(LARGE_CLIENT_LIMIT));
    let default = client(addr, None);
    let size = 2 << 20;
    let stream = |client: EchoClient| async move {
        let mut responses = client
            .server_stream(EchoRequest {
                response_count: 1,
                response_size: size as u32,
                ..Default::default()
            })
            .await?
            .into_inner();
        let mut received = 0;
        while let Some(response) = responses.next().await {
            received += response?.payload.len();
        }
        Ok::<usize, volo_grpc::Status>(received)
    };
    assert_eq!(stream(default).await.unwrap(), size);
    let len = {
        let response = EchoResponse {
            payload: volo_echo::server_stream_payload(0, size as u32),
            ..Default::default()
        };
        response.encoded_len(&mut Default::default())
    };
    assert_exhausted(stream(limited).await, len, LARGE_CLIENT_LIMIT);
}
