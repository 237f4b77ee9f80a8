//! Real tonic servers and channels over 127.0.0.1 (ephemeral ports): every
//! RPC kind with grpc-stream-codec's codec on the server, on the client and
//! on both, tonic's stock codec on the other side; uncompressed and gzip;
//! payloads from 0 B to 1 MiB; 1,000-message streams. The checks verify every
//! reply's content and order.

use std::net::SocketAddr;

use tokio::task::JoinHandle;
use tonic::codec::CompressionEncoding;
use tonic_echo::{EchoClient, check_bidi, check_client_stream, check_server_stream, check_unary};

const SIZES: [usize; 4] = [0, 256, 64 * 1024, 1 << 20];
/// Messages per stream for each size: long streams of small messages, a few
/// of the large ones.
const STREAM_LENGTHS: [(usize, u32); 5] = [
    (0, 1000),
    (256, 1000),
    (64 * 1024, 20),
    (1 << 20, 3),
    (256, 0),
];

async fn start_server(stock: bool) -> (String, JoinHandle<()>) {
    let (listener, addr) = tonic_echo::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let server = tokio::spawn(async move {
        tonic_echo::serve(listener, stock).await.unwrap();
    });
    (format!("http://{addr}"), server)
}

/// Runs every RPC kind over every size with the given codecs, once
/// uncompressed and once with gzip in both directions.
async fn run_matrix(stock_server: bool, stock_client: bool) {
    let (addr, server) = start_server(stock_server).await;
    for compression in [None, Some(CompressionEncoding::Gzip)] {
        let mut client = EchoClient::connect(addr.clone(), stock_client, compression)
            .await
            .unwrap();
        let case = |rpc: &str, size: usize, count: u32| {
            format!(
                "{rpc} size {size} count {count}, stock server {stock_server}, \
                 stock client {stock_client}, {compression:?}"
            )
        };
        for size in SIZES {
            if let Err(error) = check_unary(&mut client, size).await {
                panic!("{}: {error}", case("unary", size, 1));
            }
        }
        for (size, count) in STREAM_LENGTHS {
            if let Err(error) = check_server_stream(&mut client, size as u32, count).await {
                panic!("{}: {error}", case("server stream", size, count));
            }
            if let Err(error) = check_client_stream(&mut client, size, count).await {
                panic!("{}: {error}", case("client stream", size, count));
            }
            if let Err(error) = check_bidi(&mut client, size, count).await {
                panic!("{}: {error}", case("bidi", size, count));
            }
        }
    }
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adapter_server_with_stock_client() {
    run_matrix(false, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stock_server_with_adapter_client() {
    run_matrix(true, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adapter_on_both_sides() {
    run_matrix(false, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_count_of_zero_means_one_response() {
    use tokio_stream::StreamExt;
    let (addr, server) = start_server(false).await;
    let mut client = EchoClient::connect(addr, false, None).await.unwrap();
    let mut responses = client
        .server_stream(tonic_echo::adapter::EchoRequest {
            response_count: 0,
            response_size: 300,
            ..Default::default()
        })
        .await
        .unwrap();
    let first = responses.next().await.unwrap().unwrap();
    assert_eq!(first.seq, 0);
    assert_eq!(first.payload.len(), 300);
    assert!(first.payload.iter().all(|&b| b == 0));
    assert!(responses.next().await.is_none());

    // seq 251 wraps the fill byte back to 0.
    let mut responses = client
        .server_stream(tonic_echo::adapter::EchoRequest {
            response_count: 253,
            response_size: 2,
            ..Default::default()
        })
        .await
        .unwrap();
    let mut fills = Vec::new();
    while let Some(response) = responses.next().await {
        fills.push(response.unwrap().payload[0]);
    }
    assert_eq!(&fills[249..], &[249, 250, 0, 1]);
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_response_size_is_resource_exhausted() {
    // What the server allocates meanwhile: memory.rs's
    // `an_oversized_response_size_is_refused_before_allocating`.
    let (addr, server) = start_server(false).await;
    let mut client = EchoClient::connect(addr, false, None).await.unwrap();
    let Err(status) = client
        .server_stream(tonic_echo::adapter::EchoRequest {
            response_size: tonic_echo::MAX_RESPONSE_SIZE + 1,
            ..Default::default()
        })
        .await
    else {
        panic!("an oversized response_size was accepted");
    };
    assert_eq!(status.code(), tonic::Code::ResourceExhausted);
    assert_eq!(
        status.message(),
        format!(
            "response_size {} exceeds {}",
            tonic_echo::MAX_RESPONSE_SIZE + 1,
            tonic_echo::MAX_RESPONSE_SIZE
        )
    );
    server.abort();
}
