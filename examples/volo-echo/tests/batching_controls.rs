//! The controls the batched-versus-unbatched benchmark relies on, seen on
//! the wire by a raw HTTP/2 client: the process-wide batch threshold
//! (`grpc_stream_codec::encode::set_default_batch_threshold`) and the
//! `x-pace-micros` request metadata of the example service.
//!
//! One test in its own binary: the threshold is process-wide, so no other
//! test may run beside it.

mod support;

use std::time::{Duration, Instant};

use grpc_stream_codec::encode::DEFAULT_BATCH_THRESHOLD;
use grpc_stream_codec::encode::{default_batch_threshold, set_default_batch_threshold};
use support::{Flavour, envelope, raw_call, server_stream_request, start, uncompressed_payloads};
use volo_echo::{EchoService, PACE_MICROS};

/// Calls ServerStream for 16 × 256 B and returns the DATA frame count,
/// checking the 16 responses arrived with `grpc-status: 0`.
async fn frames_for(addr: std::net::SocketAddr, extra: &[(&str, &str)]) -> usize {
    let request = envelope(false, &server_stream_request(16, 256));
    let response = raw_call(addr, "ServerStream", extra, request).await;
    assert_eq!(response.grpc_status(), Some(0), "{response:?}");
    assert_eq!(uncompressed_payloads(&response.body()).len(), 16);
    response.data_frames.len()
}

/// 16 ready 256 B responses leave in one DATA frame at the default 32 KiB
/// threshold, and at threshold 0 too (one message per batch, but a partial
/// frame waits for a ready next batch, so frames fill across batches); the
/// threshold is what streams started after the setter runs get. Paced 1 ms
/// apart they leave in 16 even at the default threshold, and the stream
/// takes at least the 15 gaps.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threshold_and_pacing_set_how_many_data_frames_leave() {
    assert_eq!(default_batch_threshold(), DEFAULT_BATCH_THRESHOLD);
    let server = start(Flavour::Adapter, EchoService::default()).await;
    assert_eq!(frames_for(server.addr, &[]).await, 1, "default threshold");

    let started = Instant::now();
    let paced = frames_for(server.addr, &[(PACE_MICROS, "1000")]).await;
    assert_eq!(paced, 16, "paced responses are not held back to batch");
    assert!(started.elapsed() >= Duration::from_millis(15));

    set_default_batch_threshold(0);
    assert_eq!(default_batch_threshold(), 0);
    assert_eq!(frames_for(server.addr, &[]).await, 1, "threshold 0");

    set_default_batch_threshold(DEFAULT_BATCH_THRESHOLD);
    assert_eq!(frames_for(server.addr, &[]).await, 1, "restored default");
}
