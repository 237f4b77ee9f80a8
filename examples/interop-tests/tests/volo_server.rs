//! The volo-grpc Echo server (grpc-stream-codec's volo adapter, behind
//! `DeflateNameLayer`) against tonic clients: with grpc-stream-codec's tonic
//! codec, and stock. All four RPCs, uncompressed, gzip, zstd and deflate,
//! payloads of 0 B, 256 B, 64 KiB and 1 MiB, 1,000-message streams;
//! `tonic_echo::check_*` checks every reply's contents and order.

mod common;

use common::{ASKED, CASES, COMPRESSIONS, FAIL_AFTER, volo_adapter_server};
use tokio_stream::StreamExt;
use tonic::metadata::MetadataValue;
use tonic_echo::EchoClient;
use tonic_echo::adapter::EchoRequest;

async fn matrix(stock: bool) {
    let server = volo_adapter_server().await;
    for name in COMPRESSIONS {
        let compression = name
            .map(|name| tonic_echo::parse_compression(name).expect("known name"))
            .unwrap_or_default();
        let mut client = EchoClient::connect(format!("http://{}", server.addr), stock, compression)
            .await
            .expect("connect");
        for (size, count) in CASES {
            let what = format!("stock tonic {stock}, {size} B x {count}, {name:?}");
            tonic_echo::check_unary(&mut client, size)
                .await
                .unwrap_or_else(|err| panic!("Unary, {what}: {err}"));
            tonic_echo::check_server_stream(&mut client, size as u32, count)
                .await
                .unwrap_or_else(|err| panic!("ServerStream, {what}: {err}"));
            tonic_echo::check_client_stream(&mut client, size, count)
                .await
                .unwrap_or_else(|err| panic!("ClientStream, {what}: {err}"));
            tonic_echo::check_bidi(&mut client, size, count)
                .await
                .unwrap_or_else(|err| panic!("Bidi, {what}: {err}"));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tonic_adapter_client() {
    matrix(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stock_tonic_client() {
    matrix(true).await;
}

fn with_fail_after<T>(message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request
        .metadata_mut()
        .insert(tonic_echo::FAIL_AFTER, MetadataValue::from(FAIL_AFTER));
    request
}

/// Reads a response stream to its end: (messages, the error it ended with).
async fn drain(
    mut responses: tonic::Streaming<tonic_echo::adapter::EchoResponse>,
) -> (u32, Option<tonic::Status>) {
    let mut received = 0;
    while let Some(response) = responses.next().await {
        match response {
            Ok(response) => {
                assert_eq!(response.seq, received, "responses in order");
                received += 1;
            }
            Err(status) => return (received, Some(status)),
        }
    }
    (received, None)
}

/// Converts the client's status into this crate's, so one check serves
/// both stacks.
fn assert_failed_after_k(what: &str, received: u32, status: Option<tonic::Status>) {
    common::assert_failed_after_k(
        what,
        received,
        status.map(grpc_stream_codec::status::Status::from),
    );
}

fn requests() -> impl tokio_stream::Stream<Item = EchoRequest> + Send + 'static {
    tokio_stream::iter(0..ASKED).map(|seq| EchoRequest {
        payload: tonic_echo::request_payload(seq, 300),
        ..Default::default()
    })
}

/// `x-fail-after: k`: the volo adapter server sends k messages then
/// `aborted` with its message and `x-fail-detail` metadata; tonic clients,
/// adapter codec and stock, see exactly that.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_after_k_messages_reaches_tonic_clients_intact() {
    let server = volo_adapter_server().await;
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", server.addr))
        .expect("endpoint")
        .connect()
        .await
        .expect("connect");
    let server_stream_request = || {
        with_fail_after(EchoRequest {
            response_count: ASKED,
            response_size: 300,
            ..Default::default()
        })
    };

    let mut adapter = tonic_echo::adapter::echo_client::EchoClient::new(channel.clone());
    let responses = adapter
        .server_stream(server_stream_request())
        .await
        .expect("call")
        .into_inner();
    let (received, status) = drain(responses).await;
    assert_failed_after_k("adapter client, ServerStream", received, status);
    let responses = adapter
        .bidi(with_fail_after(requests()))
        .await
        .expect("call")
        .into_inner();
    let (received, status) = drain(responses).await;
    assert_failed_after_k("adapter client, Bidi", received, status);

    let mut stock = tonic_echo::stock::echo_client::EchoClient::new(channel);
    let responses = stock
        .server_stream(server_stream_request())
        .await
        .expect("call")
        .into_inner();
    let (received, status) = drain(responses).await;
    assert_failed_after_k("stock client, ServerStream", received, status);
    let responses = stock
        .bidi(with_fail_after(requests()))
        .await
        .expect("call")
        .into_inner();
    let (received, status) = drain(responses).await;
    assert_failed_after_k("stock client, Bidi", received, status);
}
