//! What the adapter does on the wire, seen by a raw HTTP/2 client: limits on
//! hostile request bodies, errors after streamed messages, and batching.

mod support;

use std::io::Write;

use bytes::Bytes;
use flate2::Compression;
use flate2::write::GzEncoder;
use support::{Flavour, envelope, raw_call, server_stream_request, start, uncompressed_payloads};
use volo_echo::{EchoService, FAIL_DETAIL, Rpc};
use volo_grpc::codec::compression::CompressionEncoding;

const RESOURCE_EXHAUSTED: i32 = 8;
const ABORTED: i32 = 10;

/// A 5-byte header declaring a message of 4 GiB - 1 fails on the header
/// with `resource_exhausted` (nothing of that size is allocated; stock
/// volo-grpc reserves it), on both the unary path (decoded by generated
/// code before the handler) and the streaming one (decoded in the handler),
/// and the server goes on serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declared_4_gib_message_is_resource_exhausted_and_server_keeps_serving() {
    let server = start(Flavour::Adapter, EchoService::default()).await;
    let mut body = vec![0u8, 0xff, 0xff, 0xff, 0xff];
    body.extend_from_slice(&[0u8; 64]);
    let body = Bytes::from(body);

    for method in ["Unary", "ClientStream", "Bidi"] {
        let response = raw_call(server.addr, method, &[], body.clone()).await;
        assert_eq!(
            response.grpc_status(),
            Some(RESOURCE_EXHAUSTED),
            "{method}: {response:?}"
        );
        assert_eq!(
            response.grpc_message(),
            "message size 4294967295 exceeds limit 4194304",
            "{method}"
        );
    }

    let client = volo_echo::stock::client(server.addr, None);
    for rpc in Rpc::ALL {
        volo_echo::stock::call(&client, rpc, 1024, 4)
            .await
            .unwrap_or_else(|err| panic!("{rpc:?} after the bad calls: {err}"));
    }
}

/// A gzip body of a few KiB that inflates to 8 MiB, twice the receive
/// limit, fails with `resource_exhausted` instead of being inflated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gzip_bomb_is_resource_exhausted() {
    let server = start(Flavour::Adapter, EchoService::default()).await;
    let mut gzip = GzEncoder::new(Vec::new(), Compression::best());
    gzip.write_all(&vec![0u8; 8 * 1024 * 1024]).unwrap();
    let bomb = gzip.finish().unwrap();
    assert!(
        bomb.len() < 64 * 1024,
        "the bomb is small: {} B",
        bomb.len()
    );

    for method in ["Unary", "ClientStream"] {
        let response = raw_call(
            server.addr,
            method,
            &[("grpc-encoding", "gzip")],
            envelope(true, &bomb),
        )
        .await;
        assert_eq!(
            response.grpc_status(),
            Some(RESOURCE_EXHAUSTED),
            "{method}: {response:?}"
        );
        assert!(
            response.grpc_message().contains("exceeds limit 4194304"),
            "{method}: {}",
            response.grpc_message()
        );
    }
}

/// A unary or server-streaming request carrying two messages is `INTERNAL`
/// on the adapter (as on grpc-go and tonic full framing), where stock
/// volo-grpc answers the first and drops the second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_message_in_a_single_message_request_is_internal() {
    const INTERNAL: i32 = 13;
    let message = [0x0a, 2, 7, 7];
    let two = Bytes::from([envelope(false, &message), envelope(false, &message)].concat());
    for flavour in [Flavour::Adapter, Flavour::Stock] {
        let server = start(flavour, EchoService::default()).await;
        for method in ["Unary", "ServerStream"] {
            let response = raw_call(server.addr, method, &[], two.clone()).await;
            if flavour == Flavour::Stock {
                assert_eq!(
                    response.grpc_status(),
                    Some(0),
                    "stock {method}: {response:?}"
                );
                continue;
            }
            assert_eq!(
                response.grpc_status(),
                Some(INTERNAL),
                "{method}: {response:?}"
            );
            assert_eq!(
                response.grpc_message(),
                "a unary request carried more than one message",
                "{method}"
            );
            // One message is still served.
            let one = raw_call(server.addr, method, &[], envelope(false, &message)).await;
            assert_eq!(one.grpc_status(), Some(0), "{method}: {one:?}");
        }
    }
}

/// A handler stream that fails after k messages: the client gets the k
/// messages, in order and intact, then the handler's status. Adapter server
/// to stock client, and stock server to adapter client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handler_error_after_k_messages_arrives_after_them() {
    const K: u32 = 7;
    let failing = EchoService {
        fail_after: Some(K),
    };
    for server_flavour in [Flavour::Adapter, Flavour::Stock] {
        let server = start(server_flavour, failing).await;
        for rpc in [Rpc::ServerStream, Rpc::Bidi] {
            let (received, status) = match (server_flavour, rpc) {
                (Flavour::Adapter | Flavour::AdapterSplit, Rpc::ServerStream) => {
                    let client = volo_echo::stock::client(server.addr, None);
                    volo_echo::stock::calls::server_stream(&client, 300, 20).await
                }
                (Flavour::Adapter | Flavour::AdapterSplit, _) => {
                    let client = volo_echo::stock::client(server.addr, None);
                    volo_echo::stock::calls::bidi(&client, 300, 20).await
                }
                (Flavour::Stock, Rpc::ServerStream) => {
                    let client = volo_echo::adapter::client(server.addr, None);
                    volo_echo::adapter::calls::server_stream(&client, 300, 20).await
                }
                (Flavour::Stock, _) => {
                    let client = volo_echo::adapter::client(server.addr, None);
                    volo_echo::adapter::calls::bidi(&client, 300, 20).await
                }
            }
            .unwrap_or_else(|err| panic!("{server_flavour:?} server, {rpc:?}: {err}"));
            assert_eq!(received, K, "{server_flavour:?} server, {rpc:?}");
            let status = status.unwrap_or_else(|| {
                panic!("{server_flavour:?} server, {rpc:?}: stream ended without the error")
            });
            assert_eq!(status.code(), volo_grpc::Code::Aborted);
            assert_eq!(status.message(), format!("failed after {K} messages"));
            assert_eq!(
                status.metadata().get(FAIL_DETAIL).map(|v| v.to_str().ok()),
                Some(Some(K.to_string().as_str())),
                "{server_flavour:?} server, {rpc:?}"
            );
        }
    }

    // On the wire: the k envelopes, then the status in the trailers.
    let server = start(Flavour::Adapter, failing).await;
    let response = raw_call(
        server.addr,
        "ServerStream",
        &[],
        envelope(false, &server_stream_request(20, 300)),
    )
    .await;
    assert_eq!(uncompressed_payloads(&response.body()).len(), K as usize);
    assert_eq!(response.grpc_status(), Some(ABORTED));
}

/// 16 ready 256 B server-stream responses leave the adapter server in one
/// DATA frame; stock volo-grpc sends 16.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ready_server_stream_messages_leave_in_one_data_frame() {
    let request = envelope(false, &server_stream_request(16, 256));
    let mut frames = Vec::new();
    for flavour in [Flavour::Adapter, Flavour::AdapterSplit, Flavour::Stock] {
        let server = start(flavour, EchoService::default()).await;
        let response = raw_call(server.addr, "ServerStream", &[], request.clone()).await;
        assert_eq!(response.grpc_status(), Some(0), "{flavour:?}: {response:?}");
        let body = response.body();
        let payloads = uncompressed_payloads(&body);
        assert_eq!(payloads.len(), 16, "{flavour:?}");
        frames.push(response.data_frames.len());
    }
    assert_eq!(
        frames,
        [1, 1, 16],
        "DATA frames: [adapter, adapter split, stock]"
    );
}

/// A client configured to send `Identity` sends flag 0 and the raw payload
/// through the adapter, so a stock server reads it. (Stock volo-grpc sets
/// the compressed flag and sends an empty payload: the calls fail.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_requests_are_uncompressed_with_flag_zero() {
    let server = start(Flavour::Stock, EchoService::default()).await;
    let client = volo_echo::adapter::client(server.addr, Some(CompressionEncoding::Identity));
    for rpc in Rpc::ALL {
        volo_echo::adapter::call(&client, rpc, 1000, 10)
            .await
            .unwrap_or_else(|err| panic!("{rpc:?} with Identity: {err}"));
    }

    let stock_client = volo_echo::stock::client(server.addr, Some(CompressionEncoding::Identity));
    assert!(
        volo_echo::stock::call(&stock_client, Rpc::Unary, 1000, 1)
            .await
            .is_err(),
        "stock volo-grpc was expected to mangle Identity requests"
    );
}
