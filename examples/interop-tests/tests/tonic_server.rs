//! The tonic Echo server (grpc-stream-codec's tonic codec) against volo-grpc
//! clients: through grpc-stream-codec's volo adapter, and stock. All four
//! RPCs, payloads of 0 B, 256 B, 64 KiB and 1 MiB, 1,000-message streams;
//! `volo_echo::{adapter,stock}::call` checks every reply's contents and
//! order.

mod common;

use common::{ASKED, CASES, COMPRESSIONS, FAIL_AFTER, tonic_adapter_server, tonic_stock_server};
use volo_echo::{CallError, ClientOptions, MetadataLayer, Rpc, compression_by_name};

/// The volo adapter client, compressing under gRPC's names through
/// `ClientCompressionLayer`: uncompressed, gzip, zstd and deflate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn volo_adapter_client() {
    volo_adapter_client_against(tonic_adapter_server().await).await;
}

/// The volo adapter client against tonic's stock codec.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn volo_adapter_client_with_stock_tonic_server() {
    volo_adapter_client_against(tonic_stock_server().await).await;
}

async fn volo_adapter_client_against(server: common::Running) {
    for compression in COMPRESSIONS {
        let options = ClientOptions {
            compression: compression.and_then(compression_by_name),
            ..Default::default()
        };
        let client = volo_echo::adapter::grpc_client(server.addr, &options);
        for rpc in Rpc::ALL {
            for (size, count) in CASES {
                if let Err(err) = volo_echo::adapter::call(&client, rpc, size, count).await {
                    panic!("{rpc:?}, {size} B x {count}, {compression:?}: {err}");
                }
            }
        }
    }
}

/// Stock volo-grpc: uncompressed, gzip and zstd work as they are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stock_volo_client() {
    let server = tonic_adapter_server().await;
    for compression in [None, Some("gzip"), Some("zstd")] {
        let client =
            volo_echo::stock::client(server.addr, compression.and_then(compression_by_name));
        for rpc in Rpc::ALL {
            for (size, count) in CASES {
                if let Err(err) = volo_echo::stock::call(&client, rpc, size, count).await {
                    panic!("{rpc:?}, {size} B x {count}, {compression:?}: {err}");
                }
            }
        }
    }
}

/// Stock volo-grpc sends deflate as `grpc-encoding: zlib`, which tonic (like
/// every other gRPC implementation) does not know: `unimplemented`. The
/// client-side fix needs the adapter's codec (`volo_adapter_client` above).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stock_volo_client_deflate_is_zlib_and_refused() {
    let server = tonic_adapter_server().await;
    let client = volo_echo::stock::client(server.addr, compression_by_name("deflate"));
    match volo_echo::stock::call(&client, Rpc::Unary, 256, 1).await {
        Err(CallError::Status(status)) => {
            assert_eq!(status.code(), volo_grpc::Code::Unimplemented, "{status:?}");
            assert!(status.message().contains("zlib"), "{status:?}");
        }
        other => panic!("expected unimplemented, got {other:?}"),
    }
}

/// Converts the client's status into this crate's, so one check serves
/// both stacks.
fn assert_failed_after_k(what: &str, received: u32, status: Option<volo_grpc::Status>) {
    common::assert_failed_after_k(
        what,
        received,
        status.map(grpc_stream_codec::status::Status::from),
    );
}

/// `x-fail-after: k`: the tonic server sends k messages then `aborted` with
/// its message and `x-fail-detail` metadata; both volo clients see exactly
/// that.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_after_k_messages_reaches_volo_clients_intact() {
    let server = tonic_adapter_server().await;
    let options = ClientOptions {
        metadata: MetadataLayer::new(&[(tonic_echo::FAIL_AFTER, FAIL_AFTER.to_string())])
            .expect("valid metadata"),
        ..Default::default()
    };

    let adapter = volo_echo::adapter::grpc_client(server.addr, &options);
    let (received, status) = volo_echo::adapter::calls::server_stream(&adapter, 300, ASKED)
        .await
        .expect("server stream");
    assert_failed_after_k("adapter client, ServerStream", received, status);
    let (received, status) = volo_echo::adapter::calls::bidi(&adapter, 300, ASKED)
        .await
        .expect("bidi");
    assert_failed_after_k("adapter client, Bidi", received, status);

    let stock = volo_echo::stock::client_with(server.addr, &options);
    let (received, status) = volo_echo::stock::calls::server_stream(&stock, 300, ASKED)
        .await
        .expect("server stream");
    assert_failed_after_k("stock client, ServerStream", received, status);
    let (received, status) = volo_echo::stock::calls::bidi(&stock, 300, ASKED)
        .await
        .expect("bidi");
    assert_failed_after_k("stock client, Bidi", received, status);
}
