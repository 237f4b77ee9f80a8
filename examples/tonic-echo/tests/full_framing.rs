//! grpc-stream-codec's full framing for tonic, end to end with real tonic
//! servers and channels over 127.0.0.1 (ephemeral ports): the full-framing
//! server against the full-framing, codec-only and stock tonic clients, and
//! the full-framing client against stock tonic and codec-only servers; every
//! RPC kind, uncompressed and with gzip, deflate and zstd, payloads from
//! 0 B to 1 MiB, 1,000-message streams, errors after k messages.

use std::net::SocketAddr;

use tokio::task::JoinHandle;
use tokio_stream::StreamExt;
use tonic::Code;
use tonic::codec::CompressionEncoding;
use tonic::metadata::MetadataMap;
use tonic_echo::adapter::EchoRequest;
use tonic_echo::{
    ClientStack, EchoClient, FAIL_AFTER, FAIL_DETAIL, Framing, ServeOptions, check_bidi,
    check_client_stream, check_server_stream, check_unary,
};

const SIZES: [usize; 4] = [0, 256, 64 * 1024, 1 << 20];
const STREAM_LENGTHS: [(usize, u32); 5] = [
    (0, 1000),
    (256, 1000),
    (64 * 1024, 20),
    (1 << 20, 3),
    (256, 0),
];

/// Which server a test runs.
#[derive(Clone, Copy, Debug)]
enum ServerStack {
    Stock,
    Codec,
    Full,
}

async fn start(server: ServerStack) -> (String, JoinHandle<()>) {
    let (listener, addr) = tonic_echo::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let options = match server {
        ServerStack::Stock => ServeOptions {
            stock: true,
            ..ServeOptions::default()
        },
        ServerStack::Codec => ServeOptions::default(),
        ServerStack::Full => ServeOptions {
            framing: Framing::Full,
            ..ServeOptions::default()
        },
    };
    let task = tokio::spawn(async move {
        tonic_echo::serve_with(listener, options).await.unwrap();
    });
    (format!("http://{addr}"), task)
}

async fn run_matrix(
    server: ServerStack,
    client: ClientStack,
    compressions: &[Option<CompressionEncoding>],
) {
    let (addr, task) = start(server).await;
    for &compression in compressions {
        let mut echo = EchoClient::connect_with(addr.clone(), client, compression)
            .await
            .unwrap();
        let case = |rpc: &str, size: usize, count: u32| {
            format!(
                "{rpc} size {size} count {count}, {server:?} server, {client:?} client, {compression:?}"
            )
        };
        for size in SIZES {
            if let Err(error) = check_unary(&mut echo, size).await {
                panic!("{}: {error}", case("unary", size, 1));
            }
        }
        for (size, count) in STREAM_LENGTHS {
            if let Err(error) = check_server_stream(&mut echo, size as u32, count).await {
                panic!("{}: {error}", case("server stream", size, count));
            }
            if let Err(error) = check_client_stream(&mut echo, size, count).await {
                panic!("{}: {error}", case("client stream", size, count));
            }
            if let Err(error) = check_bidi(&mut echo, size, count).await {
                panic!("{}: {error}", case("bidi", size, count));
            }
        }
    }
    task.abort();
}

const ALL: [Option<CompressionEncoding>; 4] = [
    None,
    Some(CompressionEncoding::Gzip),
    Some(CompressionEncoding::Deflate),
    Some(CompressionEncoding::Zstd),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_server_with_full_client() {
    run_matrix(ServerStack::Full, ClientStack::Full, &ALL).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_server_with_stock_client() {
    run_matrix(ServerStack::Full, ClientStack::Stock, &ALL).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_server_with_codec_client() {
    run_matrix(
        ServerStack::Full,
        ClientStack::Codec,
        &[None, Some(CompressionEncoding::Gzip)],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_client_with_stock_server() {
    run_matrix(ServerStack::Stock, ClientStack::Full, &ALL).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_client_with_codec_server() {
    run_matrix(
        ServerStack::Codec,
        ClientStack::Full,
        &[None, Some(CompressionEncoding::Zstd)],
    )
    .await;
}

fn failing_after(k: u32) -> MetadataMap {
    let mut metadata = MetadataMap::new();
    metadata.insert(FAIL_AFTER, k.to_string().parse().unwrap());
    metadata
}

/// k messages, then the handler's status with its message and trailing
/// metadata, on both streaming kinds and every pairing with a full side.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_after_k_messages_arrives_after_them() {
    let pairs = [
        (ServerStack::Full, ClientStack::Full),
        (ServerStack::Full, ClientStack::Stock),
        (ServerStack::Stock, ClientStack::Full),
    ];
    for (server, client) in pairs {
        let (addr, task) = start(server).await;
        for k in [0u32, 3] {
            let mut echo = EchoClient::connect_with(addr.clone(), client, None)
                .await
                .unwrap()
                .with_metadata(failing_after(k));
            let request = EchoRequest {
                response_count: 10,
                response_size: 8,
                ..EchoRequest::default()
            };
            let mut responses = echo.server_stream(request).await.unwrap();
            let mut received = 0;
            let status = loop {
                match responses.next().await {
                    Some(Ok(_)) => received += 1,
                    Some(Err(status)) => break status,
                    None => panic!("{server:?}/{client:?}: stream ended without the error"),
                }
            };
            assert_eq!(received, k, "{server:?}/{client:?}");
            assert_eq!(status.code(), Code::Aborted, "{server:?}/{client:?}");
            assert_eq!(status.message(), format!("failed after {k} messages"));
            assert_eq!(status.metadata().get(FAIL_DETAIL).unwrap(), &k.to_string());

            let requests = tokio_stream::iter(0..10).map(|_| EchoRequest::default());
            let mut responses = echo.bidi(requests).await.unwrap();
            let mut received = 0;
            let status = loop {
                match responses.next().await {
                    Some(Ok(_)) => received += 1,
                    Some(Err(status)) => break status,
                    None => panic!("{server:?}/{client:?}: bidi ended without the error"),
                }
            };
            assert_eq!(received, k, "{server:?}/{client:?} bidi");
            assert_eq!(status.code(), Code::Aborted);
        }
        task.abort();
    }
}

/// A handler error before any response is a trailers-only answer, which the
/// full client returns from the call itself, like tonic's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_error_before_any_response_fails_the_call() {
    for (server, client) in [
        (ServerStack::Full, ClientStack::Full),
        (ServerStack::Full, ClientStack::Stock),
        (ServerStack::Stock, ClientStack::Full),
    ] {
        let (addr, task) = start(server).await;
        let mut echo = EchoClient::connect_with(addr, client, None).await.unwrap();
        let status = echo
            .server_stream(EchoRequest {
                response_size: tonic_echo::MAX_RESPONSE_SIZE + 1,
                ..EchoRequest::default()
            })
            .await
            .err()
            .unwrap_or_else(|| panic!("{server:?}/{client:?}: the call succeeded"));
        assert_eq!(
            status.code(),
            Code::ResourceExhausted,
            "{server:?}/{client:?}"
        );
        assert!(status.message().contains("exceeds"), "{}", status.message());
        task.abort();
    }
}

/// The response's `grpc-encoding` for a unary call by a client that called
/// `accept_compressed` with `order`, after checking the echo.
async fn response_encoding(
    addr: &str,
    full_client: bool,
    order: [CompressionEncoding; 2],
) -> Option<String> {
    let channel = tonic::transport::Endpoint::from_shared(addr.to_string())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let payload = tonic_echo::request_payload(7, 4096);
    let request = EchoRequest {
        payload: payload.clone(),
        ..Default::default()
    };
    let response = if full_client {
        let mut client = tonic_echo::full::echo_client::EchoClient::new(channel);
        for encoding in order {
            client = client.accept_compressed(encoding);
        }
        client.unary(request).await.unwrap()
    } else {
        let mut client = tonic_echo::stock::echo_client::EchoClient::new(channel);
        for encoding in order {
            client = client.accept_compressed(encoding);
        }
        client.unary(request).await.unwrap()
    };
    assert_eq!(response.get_ref().payload, payload);
    response
        .metadata()
        .get("grpc-encoding")
        .map(|value| value.to_str().unwrap().to_string())
}

/// `accept_compressed` calls are an order of preference: the full-framing
/// client lists them in call order (as stock tonic does), and every server
/// (stock or full framing, which may send gzip, deflate and zstd) answers
/// with the client's first choice. The reversed order tells a fixed
/// preference on either side from the client's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_use_the_clients_first_accepted_encoding() {
    use CompressionEncoding::{Gzip, Zstd};
    for server in [ServerStack::Stock, ServerStack::Full] {
        let (addr, task) = start(server).await;
        for full_client in [true, false] {
            if !full_client && matches!(server, ServerStack::Stock) {
                continue; // stock against stock: tonic's own business
            }
            for (order, expected) in [([Zstd, Gzip], "zstd"), ([Gzip, Zstd], "gzip")] {
                let got = response_encoding(&addr, full_client, order).await;
                assert_eq!(
                    got.as_deref(),
                    Some(expected),
                    "{server:?} server, {} client, accept_compressed in the order {order:?}",
                    if full_client { "full-framing" } else { "stock" }
                );
            }
        }
        task.abort();
    }
}
