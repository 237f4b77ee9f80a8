//! Memory of the full framing, from a counting allocator (process-wide live
//! heap; server and raw HTTP/2 client in one process): open streams that
//! each echoed one 1 MiB message and then sit idle keep nothing of it, where
//! stock tonic keeps its read and write buffers at that size. (What a kept
//! field retains with the full framing is `memory.rs`'s
//! `kept_fields_retain_only_themselves_with_the_full_framing`, next to this file.)

#[path = "support/raw.rs"]
mod raw;

use std::net::SocketAddr;

use bytes::Bytes;
use raw::{UNARY, message};
use test_support::alloc::CountingAlloc;
use test_support::settle::settle_live_bytes;
use tonic::Code;
use tonic_echo::adapter::EchoRequest;
use tonic_echo::{Framing, ServeOptions};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::ALWAYS;

const BIDI: &str = "/streamcodec.echo.v1.Echo/Bidi";
const MIB: usize = 1 << 20;
const MIB_F: f64 = MIB as f64;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Live heap growth per stream while `STREAMS` Bidi streams that each echoed
/// one 1 MiB message stay open.
fn idle_after_one_mib(options: ServeOptions) -> f64 {
    const STREAMS: usize = 100;
    runtime().block_on(async {
        let (listener, addr) = tonic_echo::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .unwrap();
        let server = tokio::spawn(tonic_echo::serve_with(listener, options));
        let client = raw::connect(addr).await;
        let warm = raw::call(&client, UNARY, &[], message(&EchoRequest::default())).await;
        assert_eq!(warm.code(), Code::Ok);
        // One body shared by every stream, allocated before the baseline.
        let body = Bytes::from(message(&EchoRequest {
            payload: Bytes::from(vec![9; MIB]),
            ..EchoRequest::default()
        }));
        let before = settle_live_bytes(64 * 1024).await;
        let mut held = Vec::with_capacity(STREAMS);
        for _ in 0..STREAMS {
            let mut ready = client.clone().ready().await.unwrap();
            let (response, mut stream) = ready
                .send_request(raw::grpc_request(BIDI, &[]), false)
                .unwrap();
            stream.send_data(body.clone(), false).unwrap();
            let (_, mut responses) = response.await.unwrap().into_parts();
            let mut received = 0;
            while received < body.len() {
                let chunk = responses.data().await.unwrap().unwrap();
                let _ = responses.flow_control().release_capacity(chunk.len());
                received += chunk.len();
            }
            assert_eq!(received, body.len(), "one echo of the same size");
            held.push((stream, responses));
        }
        let after = settle_live_bytes(64 * 1024).await;
        drop(held);
        server.abort();
        (after as f64 - before as f64) / STREAMS as f64
    })
}

#[test]
fn idle_streams_keep_nothing_of_an_echoed_mebibyte() {
    let full = idle_after_one_mib(ServeOptions {
        framing: Framing::Full,
        ..ServeOptions::default()
    });
    let stock = idle_after_one_mib(ServeOptions {
        stock: true,
        ..ServeOptions::default()
    });
    eprintln!(
        "per idle stream after one 1 MiB Bidi echo: stock tonic {:.3} MiB, full framing {:.3} MiB",
        stock / MIB_F,
        full / MIB_F
    );
    // Stock tonic keeps its read and write buffers at the message's size.
    assert!(stock > 1.5 * MIB_F, "stock: {stock} bytes per stream");
    // A stream's own state (h2's, the handler's, the read-ahead's), and
    // nothing sized by the message: a buffer of a few KiB kept per idle
    // stream would cross it.
    assert!(full < 6.0 * 1024.0, "full framing: {full} bytes per stream");
}
