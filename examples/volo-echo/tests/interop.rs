//! Adapter and stock volo-grpc, each side against the other, over loopback:
//! all four RPCs, uncompressed, gzip and zstd, payloads of 0 B, 256 B,
//! 64 KiB and 1 MiB, streams of 1,000 messages; every reply's contents and
//! order are checked by `volo_echo::{adapter,stock}::call`.

mod support;

use support::{Flavour, start};
use volo_echo::{EchoService, Rpc, compression_by_name};

/// (payload size, streamed messages): 1,000-message streams for the small
/// payloads, a few messages for the large ones to keep the run short.
const CASES: [(usize, u32); 4] = [(0, 1000), (256, 1000), (64 * 1024, 8), (1024 * 1024, 2)];

async fn matrix(server: Flavour, compression: Option<&str>) {
    let running = start(server, EchoService::default()).await;
    let compression = compression.and_then(compression_by_name);
    // The client is the other flavour.
    let adapter_client;
    let stock_client;
    match server {
        Flavour::Adapter | Flavour::AdapterSplit => {
            stock_client = Some(volo_echo::stock::client(running.addr, compression));
            adapter_client = None;
        }
        Flavour::Stock => {
            adapter_client = Some(volo_echo::adapter::client(running.addr, compression));
            stock_client = None;
        }
    }
    for rpc in Rpc::ALL {
        for (size, count) in CASES {
            let result = match (&adapter_client, &stock_client) {
                (Some(client), _) => volo_echo::adapter::call(client, rpc, size, count).await,
                (_, Some(client)) => volo_echo::stock::call(client, rpc, size, count).await,
                _ => unreachable!(),
            };
            if let Err(err) = result {
                panic!("{server:?} server, {rpc:?}, {size} B x {count}, {compression:?}: {err}");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adapter_server_stock_client_uncompressed() {
    matrix(Flavour::Adapter, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adapter_server_stock_client_gzip() {
    matrix(Flavour::Adapter, Some("gzip")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adapter_server_stock_client_zstd() {
    matrix(Flavour::Adapter, Some("zstd")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adapter_client_stock_server_uncompressed() {
    matrix(Flavour::Stock, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adapter_client_stock_server_gzip() {
    matrix(Flavour::Stock, Some("gzip")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adapter_client_stock_server_zstd() {
    matrix(Flavour::Stock, Some("zstd")).await;
}

/// volo-grpc calls deflate `zlib`; both sides of the adapter read and write
/// it as gRPC's deflate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zlib_both_ways() {
    for server in [Flavour::Adapter, Flavour::Stock] {
        let running = start(server, EchoService::default()).await;
        let compression = compression_by_name("deflate");
        for rpc in Rpc::ALL {
            let result = match server {
                Flavour::Adapter | Flavour::AdapterSplit => {
                    let client = volo_echo::stock::client(running.addr, compression);
                    volo_echo::stock::call(&client, rpc, 4096, 8).await
                }
                Flavour::Stock => {
                    let client = volo_echo::adapter::client(running.addr, compression);
                    volo_echo::adapter::call(&client, rpc, 4096, 8).await
                }
            };
            if let Err(err) = result {
                panic!("{server:?} server, {rpc:?}, zlib: {err}");
            }
        }
    }
}

/// The rewrite also covers `split_generated_files(true)`: that build serves
/// the same calls, and batches (1 frame for 16 ready messages, checked in
/// `wire.rs` for the single-file build) the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn split_generated_files_adapter_server_stock_client() {
    let running = start(Flavour::AdapterSplit, EchoService::default()).await;
    let client = volo_echo::stock::client(running.addr, compression_by_name("gzip"));
    for rpc in Rpc::ALL {
        volo_echo::stock::call(&client, rpc, 256, 100)
            .await
            .unwrap_or_else(|err| panic!("split build, {rpc:?}: {err}"));
    }
    let client = volo_echo::adapter_split::client(running.addr, None);
    for rpc in Rpc::ALL {
        volo_echo::adapter_split::call(&client, rpc, 256, 100)
            .await
            .unwrap_or_else(|err| panic!("split build client, {rpc:?}: {err}"));
    }
}
