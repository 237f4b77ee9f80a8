//! What 1,000 streams that each send only an envelope header declaring
//! 4 MiB (plus 16 payload bytes) and then hold still cost a tonic server,
//! with and without grpc-stream-codec's guard layer, and with its full
//! framing (no layer): process-wide live heap
//! bytes from a counting allocator, server and raw client in one process.

#[path = "support/raw.rs"]
mod raw;

use std::net::SocketAddr;

use bytes::Bytes;
use grpc_stream_codec::tonic::guard::GuardMode;
use raw::{CLIENT_STREAM, LIMIT, UNARY, header, message};
use test_support::alloc::{CountingAlloc, global_peak, reset_global_peak};
use test_support::settle::settle_live_bytes;
use tonic::Code;
use tonic_echo::adapter::EchoRequest;
use tonic_echo::{Framing, ServeOptions};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::ALWAYS;

const STREAMS: usize = 1000;
const CONNECTIONS: usize = 10;
/// At the limit, so tonic accepts the header and reserves what it declares.
const DECLARED: u32 = LIMIT as u32;
const SENT: usize = 16;
const MIB: f64 = 1024.0 * 1024.0;

/// Growth of live bytes, and of the peak, while `STREAMS` held-open streams
/// sit on a server with `guard`.
fn held_streams(options: ServeOptions) -> (isize, isize) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let figures = runtime.block_on(async {
        let (listener, addr) = tonic_echo::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .unwrap();
        let server = tokio::spawn(tonic_echo::serve_with(listener, options));
        // One full call first, so lazily built state is not counted.
        let warm = raw::connect(addr).await;
        let reply = raw::call(&warm, UNARY, &[], message(&EchoRequest::default())).await;
        assert_eq!(reply.code(), Code::Ok);

        let before = settle_live_bytes(64 * 1024).await;
        let peak_before = reset_global_peak();
        let mut held = Vec::with_capacity(STREAMS);
        let mut clients = Vec::with_capacity(CONNECTIONS);
        let mut body = header(0, DECLARED);
        body.extend_from_slice(&[7; SENT]);
        let body = Bytes::from(body);
        for _ in 0..CONNECTIONS {
            let client = raw::connect(addr).await;
            for _ in 0..STREAMS / CONNECTIONS {
                let mut ready = client.clone().ready().await.unwrap();
                let (response, mut stream) = ready
                    .send_request(raw::grpc_request(CLIENT_STREAM, &[]), false)
                    .unwrap();
                stream.send_data(body.clone(), false).unwrap();
                held.push((response, stream));
            }
            // The server reads a connection's frames in order: once this
            // call is answered, it has taken every held stream above.
            let reply = raw::call(&client, UNARY, &[], message(&EchoRequest::default())).await;
            assert_eq!(reply.code(), Code::Ok);
            clients.push(client);
        }
        let after = settle_live_bytes(64 * 1024).await;
        let growth = after - before;
        let peak = global_peak() as isize - peak_before as isize;
        drop((held, clients, warm));
        server.abort();
        (growth, peak)
    });
    drop(runtime);
    figures
}

#[test]
fn assembling_guard_keeps_held_open_headers_from_reserving_memory() {
    let guarded = |mode| ServeOptions {
        guard: Some(mode),
        ..ServeOptions::default()
    };
    let (assembling, assembling_peak) = held_streams(guarded(GuardMode::Assembling));
    let (pass, pass_peak) = held_streams(guarded(GuardMode::PassThrough));
    let (stock, stock_peak) = held_streams(ServeOptions::default());
    let (full, full_peak) = held_streams(ServeOptions {
        framing: Framing::Full,
        ..ServeOptions::default()
    });
    let show = |bytes: isize| bytes as f64 / MIB;
    eprintln!(
        "{STREAMS} streams over {CONNECTIONS} connections, each a header declaring {DECLARED} \
         bytes plus {SENT} bytes, held open; growth of process-wide live heap (peak):\n  \
         no layer:    {:>9.1} MiB ({:.1} MiB)\n  \
         pass-through:{:>9.1} MiB ({:.1} MiB)\n  \
         assembling:  {:>9.1} MiB ({:.1} MiB)\n  \
         full framing, no layer: {:>9.1} MiB ({:.1} MiB)",
        show(stock),
        show(stock_peak),
        show(pass),
        show(pass_peak),
        show(assembling),
        show(assembling_peak),
        show(full),
        show(full_peak),
    );
    // The full framing reads through the core decoder: memory follows the
    // bytes received, with no layer in front.
    assert!(full < 32 * 1024 * 1024, "full framing: {full} bytes");
    assert!(
        full_peak < 32 * 1024 * 1024,
        "full framing peak: {full_peak} bytes"
    );
    let reserved = (STREAMS * DECLARED as usize) as isize;
    assert!(
        assembling < 64 * 1024 * 1024,
        "assembling guard: {assembling} bytes"
    );
    assert!(
        assembling_peak < 64 * 1024 * 1024,
        "assembling guard peak: {assembling_peak} bytes"
    );
    // Without the assembler, tonic reserves every declared length: the
    // pass-through mode checks headers but forwards them, so it cannot help.
    assert!(stock >= reserved, "no layer: {stock} bytes");
    assert!(pass >= reserved, "pass-through: {pass} bytes");
}
