//! What a stream that carried one large message keeps afterwards, with no
//! guard layer and with the guard in each mode, measured with a counting
//! allocator.
//!
//! tonic keeps its read buffer for as long as the stream lives; it reserves
//! a message's length when it reads the envelope header, on top of whatever
//! of the payload already sits in the buffer. h2 delivers 16 KiB frames, so
//! that over-reservation is at most one frame. The assembling guard hands
//! tonic complete envelopes, and an envelope arriving whole with its header
//! made tonic reserve its length a second time: the buffer of a stream that
//! carried one 1 MiB message was 2 MiB. These tests hold the guard to the
//! pass-through figure.

#[path = "support/raw.rs"]
mod raw;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use grpc_stream_codec::tonic::ProstCodec;
use grpc_stream_codec::tonic::guard::{GuardConfig, GuardMode, GuardedBody};
use http_body::Frame;
use http_body_util::StreamBody;
use raw::{UNARY, message};
use test_support::alloc::{CountingAlloc, measure};
use test_support::settle::settle_live_bytes;
use tonic::Code;
use tonic::codec::{Codec, Streaming};
use tonic_echo::ServeOptions;
use tonic_echo::adapter::{EchoRequest, EchoResponse};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::ALWAYS;

const MIB: usize = 1 << 20;

/// One test at a time: the end-to-end test reads process-wide live bytes,
/// which another test's allocations would move.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
const BIDI: &str = "/streamcodec.echo.v1.Echo/Bidi";

/// The guard's modes and no guard at all, in the order the figures print.
const ARMS: [Option<GuardMode>; 3] = [
    None,
    Some(GuardMode::PassThrough),
    Some(GuardMode::Assembling),
];

fn label(arm: Option<GuardMode>) -> &'static str {
    match arm {
        None => "no layer",
        Some(GuardMode::PassThrough) => "pass-through",
        Some(GuardMode::Assembling) => "assembling",
    }
}

/// `payload_len`-byte payloads, one envelope each, as one wire.
fn envelopes(payload_lens: &[usize]) -> Vec<u8> {
    let mut wire = Vec::new();
    for &len in payload_lens {
        wire.extend_from_slice(&message(&EchoRequest {
            payload: Bytes::from(vec![9; len]),
            ..EchoRequest::default()
        }));
    }
    wire
}

/// Feeds `frames` to a tonic `Streaming` (with the guard in `arm` between),
/// reads every message and drops it, and returns the bytes the stream still
/// holds while it stays open.
fn held_after_reading(arm: Option<GuardMode>, frames: &Arc<Vec<Bytes>>, messages: usize) -> isize {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    // The frames stay owned out here (already shared, so cloning them
    // allocates nothing), so only what the stream keeps is counted.
    let shared = Arc::clone(frames);
    let (stream, usage) = measure(|| {
        runtime.block_on(async move {
            let frames =
                (0..shared.len()).map(move |i| Ok::<_, Infallible>(Frame::data(shared[i].clone())));
            let body = StreamBody::new(tokio_stream::iter(frames));
            let decoder = ProstCodec::<EchoResponse, EchoRequest>::default().decoder();
            let mut stream = match arm {
                None => Streaming::new_request(decoder, body, None, None),
                Some(mode) => Streaming::new_request(
                    decoder,
                    GuardedBody::new(body, GuardConfig::default().with_mode(mode)),
                    None,
                    None,
                ),
            };
            for _ in 0..messages {
                let request = stream.message().await.unwrap().expect("a message");
                assert!(!request.payload.is_empty());
            }
            stream
        })
    });
    drop(stream);
    usage.live_delta
}

/// How a test's wire is cut into frames.
#[derive(Clone, Copy)]
enum Framing {
    /// 16 KiB frames, as h2 delivers a large message.
    H2,
    /// One frame per envelope, as h2 delivers small messages sent one by one.
    PerEnvelope,
}

/// Live bytes each arm's stream holds after reading `payload_lens` from
/// frames cut as `framing` says.
fn held_by_each_arm(payload_lens: &[usize], framing: Framing) -> [isize; 3] {
    let frames: Vec<Bytes> = match framing {
        Framing::H2 => envelopes(payload_lens)
            .chunks(16 * 1024)
            .map(Bytes::copy_from_slice)
            .collect(),
        Framing::PerEnvelope => payload_lens
            .iter()
            .map(|&len| Bytes::from(envelopes(&[len])))
            .collect(),
    };
    // Cloning a `Bytes` made from a vector turns it shared once; do it now.
    frames.iter().for_each(|frame| drop(frame.clone()));
    let frames = Arc::new(frames);
    let held = ARMS.map(|arm| held_after_reading(arm, &frames, payload_lens.len()));
    eprintln!("held after reading {payload_lens:?}:");
    for (arm, bytes) in ARMS.iter().zip(held) {
        eprintln!("  {:<13}{bytes:>9} bytes", label(*arm));
    }
    held
}

#[test]
fn assembling_guard_leaves_tonic_one_buffer_of_the_message_size() {
    let _serial = serial();
    let [stock, pass, assembling] = held_by_each_arm(&[MIB], Framing::H2);
    // tonic keeps a buffer of the message's size either way: that much is
    // tonic's and no layer in front of it can take it back.
    assert!(stock >= MIB as isize, "no layer: {stock}");
    assert!(pass >= MIB as isize, "pass-through: {pass}");
    // Before the fix the assembling guard left 2 MiB here.
    assert!(
        assembling <= pass + 4 * 1024,
        "assembling {assembling} vs pass-through {pass}"
    );
}

#[test]
fn assembling_guard_does_not_grow_tonic_buffer_past_the_largest_message() {
    let _serial = serial();
    // A larger message after a large one. tonic grows its 1 MiB buffer to
    // make room (to about 2.5 MiB with no layer or pass-through, and to
    // 4 MiB when the guard handed it whole envelopes); the assembling guard
    // now has tonic start over at the second header, so the buffer is the
    // size of the message just read.
    let last = 3 * MIB / 2;
    let [_, pass, assembling] = held_by_each_arm(&[MIB, last], Framing::H2);
    assert!(
        assembling <= pass + 4 * 1024,
        "assembling {assembling} vs pass-through {pass}"
    );
    assert!(
        assembling <= (last + 16 * 1024) as isize,
        "assembling {assembling} for a last message of {last}"
    );
}

#[test]
fn assembling_guard_keeps_tonic_default_buffer_for_mid_size_messages() {
    let _serial = serial();
    // A message that fits tonic's 8 KiB read buffer but not twice over: a
    // frame holding the whole envelope makes tonic double the buffer to
    // 16 KiB when it reserves the length (with or without a layer in front);
    // the assembling guard must leave it at 8 KiB, as a tiny message does.
    let [stock, _, baseline] = held_by_each_arm(&[100], Framing::PerEnvelope);
    let [mid_stock, _, assembling] = held_by_each_arm(&[100, 5000], Framing::PerEnvelope);
    assert!(
        mid_stock >= stock + 8 * 1024,
        "no layer grows: {mid_stock} vs {stock}"
    );
    assert!(
        assembling <= baseline + 1024,
        "assembling {assembling} vs {baseline} for a tiny message"
    );
}

const STREAMS: usize = 64;
const CONNECTIONS: usize = 4;

/// Growth of process-wide live bytes while `STREAMS` bidi calls, each of
/// which sent one 1 MiB message and read its echo, sit open on a real tonic
/// server with `arm` in front (the raw h2 client shares the process; it is
/// the same in every arm).
fn idle_bidi_streams(arm: Option<GuardMode>) -> isize {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let growth = runtime.block_on(async {
        let (listener, addr) = tonic_echo::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .unwrap();
        let server = tokio::spawn(tonic_echo::serve_with(
            listener,
            ServeOptions {
                guard: arm,
                ..ServeOptions::default()
            },
        ));
        let warm = raw::connect(addr).await;
        let reply = raw::call(&warm, UNARY, &[], message(&EchoRequest::default())).await;
        assert_eq!(reply.code(), Code::Ok);

        let body = Bytes::from(envelopes(&[MIB]));
        let before = settle_live_bytes(64 * 1024).await;
        let mut held = Vec::with_capacity(STREAMS);
        let mut clients = Vec::with_capacity(CONNECTIONS);
        for _ in 0..CONNECTIONS {
            let client = raw::connect(addr).await;
            for _ in 0..STREAMS / CONNECTIONS {
                let mut ready = client.clone().ready().await.unwrap();
                let (response, mut stream) = ready
                    .send_request(raw::grpc_request(BIDI, &[]), false)
                    .unwrap();
                stream.send_data(body.clone(), false).unwrap();
                let mut response = response.await.unwrap().into_body();
                let mut echoed = 0;
                while echoed < MIB {
                    let chunk = response.data().await.expect("the echo").unwrap();
                    let _ = response.flow_control().release_capacity(chunk.len());
                    echoed += chunk.len();
                }
                held.push((response, stream));
            }
            clients.push(client);
        }
        let after = settle_live_bytes(64 * 1024).await;
        drop((held, clients, warm));
        server.abort();
        after - before
    });
    drop(runtime);
    growth
}

#[test]
fn assembling_guard_holds_what_pass_through_holds_on_idle_streams() {
    let _serial = serial();
    let growth = ARMS.map(idle_bidi_streams);
    eprintln!(
        "{STREAMS} idle bidi streams after one 1 MiB echo each, live heap growth per stream:"
    );
    for (arm, bytes) in ARMS.iter().zip(growth) {
        eprintln!(
            "  {:<13}{:>7.3} MiB",
            label(*arm),
            bytes as f64 / STREAMS as f64 / MIB as f64
        );
    }
    let [_, pass, assembling] = growth.map(|bytes| bytes / STREAMS as isize);
    // Before the fix: about 1 MiB more per stream.
    assert!(
        assembling <= pass + 128 * 1024,
        "per stream: assembling {assembling} vs pass-through {pass}"
    );
}
