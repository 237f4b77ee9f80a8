//! The controls the batched-versus-unbatched benchmark relies on, seen on
//! the wire by a raw HTTP/2 client: the full framing's process-wide batch
//! threshold (`ServeOptions::batch_threshold`, through
//! `grpc_stream_codec::encode::set_default_batch_threshold`) and the
//! `x-pace-micros` request metadata of the example service.
//!
//! One test in its own binary: the threshold is process-wide, so no other
//! test may run beside it.

#[path = "support/raw.rs"]
mod raw;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use grpc_stream_codec::encode::DEFAULT_BATCH_THRESHOLD;
use grpc_stream_codec::encode::{default_batch_threshold, set_default_batch_threshold};
use raw::{SERVER_STREAM, connect, grpc_request, message};
use tonic_echo::adapter::EchoRequest;
use tonic_echo::{Framing, PACE_MICROS, ServeOptions};

async fn start(options: ServeOptions) -> SocketAddr {
    let (listener, addr) = tonic_echo::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    tokio::spawn(async move {
        tonic_echo::serve_with(listener, options).await.unwrap();
    });
    addr
}

/// Calls ServerStream for 16 × 256 B and returns the DATA frame count,
/// checking 16 × (5 + 261) bytes and `grpc-status: 0` arrived.
async fn frames_for(addr: SocketAddr, extra: &[(&str, &str)]) -> usize {
    let mut client = connect(addr).await.ready().await.unwrap();
    let (response, mut send) = client
        .send_request(grpc_request(SERVER_STREAM, extra), false)
        .unwrap();
    let request = EchoRequest {
        response_count: 16,
        response_size: 256,
        ..EchoRequest::default()
    };
    send.send_data(Bytes::from(message(&request)), true)
        .unwrap();
    let mut body = response.await.unwrap().into_body();
    let (mut frames, mut bytes) = (0, 0);
    while let Some(chunk) = body.data().await {
        let chunk = chunk.unwrap();
        let _ = body.flow_control().release_capacity(chunk.len());
        frames += 1;
        bytes += chunk.len();
    }
    let trailers = body.trailers().await.unwrap().expect("trailers");
    assert_eq!(trailers.get("grpc-status").unwrap(), "0");
    // Each response: payload tag + 2-byte length + 256 B, seq tag + value
    // (seq 0 is not encoded), in a 5-byte envelope.
    let expected: usize = (0..16)
        .map(|seq| 5 + 3 + 256 + if seq == 0 { 0 } else { 2 })
        .sum();
    assert_eq!(bytes, expected);
    frames
}

/// 16 ready 256 B responses leave the full-framing server in one DATA frame
/// at the default 32 KiB threshold, and with `batch_threshold: Some(0)` too
/// (one message per batch, but a partial frame waits for a ready next
/// batch, so frames fill across batches); paced 1 ms apart they leave in
/// 16 even at the default threshold, and the stream takes at least the 15
/// gaps.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threshold_and_pacing_set_how_many_data_frames_leave() {
    assert_eq!(default_batch_threshold(), DEFAULT_BATCH_THRESHOLD);
    let full = ServeOptions {
        framing: Framing::Full,
        ..ServeOptions::default()
    };
    let batched = start(full).await;
    assert_eq!(frames_for(batched, &[]).await, 1, "default threshold");

    let started = Instant::now();
    let paced = frames_for(batched, &[(PACE_MICROS, "1000")]).await;
    assert_eq!(paced, 16, "paced responses are not held back to batch");
    assert!(started.elapsed() >= Duration::from_millis(15));

    let unbatched = start(ServeOptions {
        batch_threshold: Some(0),
        ..full
    })
    .await;
    assert_eq!(frames_for(unbatched, &[]).await, 1, "threshold 0");
    assert_eq!(default_batch_threshold(), 0);

    set_default_batch_threshold(DEFAULT_BATCH_THRESHOLD);
    assert_eq!(frames_for(batched, &[]).await, 1, "restored default");
}
