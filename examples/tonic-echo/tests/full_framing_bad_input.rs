//! The bad-input suite against the full-framing tonic server with no guard
//! layer, and bad responses against the full-framing client: every case gets
//! the code the volo-grpc adapter gives (the core decides both), the server
//! keeps serving, and nothing a peer sends panics or allocates past the limit.

#[path = "support/raw.rs"]
mod raw;

use std::net::SocketAddr;

use bytes::Bytes;
use grpc_stream_codec::compression::{Compression, CompressionEncoding as Encoding};
use prost::Message;
use raw::{CLIENT_STREAM, LIMIT, SERVER_STREAM, UNARY, envelope, header, message};
use test_support::alloc::{CountingAlloc, global_peak, reset_global_peak};
use test_support::rss;
use tokio::sync::Mutex;
use tokio::task::JoinHandle;
use tokio_stream::StreamExt;
use tonic::Code;
use tonic_echo::adapter::{EchoRequest, EchoResponse};
use tonic_echo::{ClientStack, EchoClient, Framing, ServeOptions};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::ALWAYS;

/// The bomb test reads the process-wide peak: no other test may run beside it.
static SERIAL: Mutex<()> = Mutex::const_new(());

const BIDI: &str = "/streamcodec.echo.v1.Echo/Bidi";
const ENCODINGS: [Encoding; 3] = [Encoding::Gzip, Encoding::Deflate, Encoding::Zstd];

async fn start_full() -> (SocketAddr, JoinHandle<()>) {
    let (listener, addr) = tonic_echo::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let options = ServeOptions {
        framing: Framing::Full,
        ..ServeOptions::default()
    };
    let server = tokio::spawn(async move {
        tonic_echo::serve_with(listener, options).await.unwrap();
    });
    (addr, server)
}

fn request(payload: &[u8]) -> EchoRequest {
    EchoRequest {
        payload: Bytes::copy_from_slice(payload),
        ..EchoRequest::default()
    }
}

fn too_large(size: u64) -> String {
    format!("message size {size} exceeds limit {LIMIT}")
}

fn compress(encoding: Encoding, input: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    Compression::from(encoding)
        .compress(&mut &input[..], &mut out)
        .unwrap();
    out
}

/// A normal ClientStream call of two messages on `client`: OK, count 2.
async fn assert_still_serving(client: &h2::client::SendRequest<Bytes>, after: &str) {
    let mut body = message(&request(b"one"));
    body.extend(message(&request(b"two")));
    let reply = raw::call(client, CLIENT_STREAM, &[], body).await;
    assert_eq!(reply.code(), Code::Ok, "after {after}: {reply:?}");
    let response = EchoResponse::decode(&reply.data[5..]).unwrap();
    assert_eq!(
        (response.count, response.total_bytes),
        (2, 6),
        "after {after}"
    );
}

/// Sends `body` with `headers` to every method of a fresh full-framing
/// server, asserts the code and that `check` accepts the message, then that
/// the server still serves.
async fn expect(
    what: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    code: Code,
    check: impl Fn(&str) -> bool,
) {
    let (addr, server) = start_full().await;
    let client = raw::connect(addr).await;
    for path in [CLIENT_STREAM, BIDI, UNARY, SERVER_STREAM] {
        let reply = raw::call(&client, path, headers, body.to_vec()).await;
        let case = format!("{path} {what}");
        eprintln!("{case}: {:?} {:?}", reply.code(), reply.status.message());
        assert_eq!(reply.code(), code, "{case}: {reply:?}");
        assert!(check(reply.status.message()), "{case}: {reply:?}");
        // A status about the body had the body, and the same call with a
        // well-formed body succeeds: the status came from reading this body.
        assert!(reply.body_sent, "{case}: answered before the body went out");
        let control = raw::call(&client, path, headers, message(&request(b"control"))).await;
        assert_eq!(
            control.code(),
            Code::Ok,
            "{case}, well-formed body: {control:?}"
        );
        assert_still_serving(&client, &case).await;
    }
    server.abort();
}

fn any(_: &str) -> bool {
    true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lengths_over_the_limit_are_resource_exhausted_on_the_header() {
    let _serial = SERIAL.lock().await;
    for declared in [LIMIT as u32 + 1, u32::MAX] {
        let text = too_large(u64::from(declared));
        expect(
            &format!("declares {declared}"),
            &[],
            &header(0, declared),
            Code::ResourceExhausted,
            |m| m == text,
        )
        .await;
    }
    // After a valid message, and with a valid one behind it that must not
    // be read as the next header.
    let mut body = message(&request(b"fine"));
    body.extend(header(0, u32::MAX));
    body.extend(message(&request(b"never read")));
    let text = too_large(u64::from(u32::MAX));
    expect(
        "over the limit after a valid message",
        &[],
        &body,
        Code::ResourceExhausted,
        |m| m == text,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_cut_inside_an_envelope_are_internal() {
    let _serial = SERIAL.lock().await;
    let mut partial_payload = header(0, 10);
    partial_payload.extend_from_slice(&[1, 2, 3]);
    let mut message_then_two = message(&request(b"x"));
    message_then_two.extend_from_slice(&[0, 0]);
    for (name, body) in [
        ("header only", header(0, 10)),
        ("partial payload", partial_payload),
        ("partial header", vec![0, 0, 0]),
        ("a message, then 2 bytes", message_then_two),
    ] {
        expect(name, &[], &body, Code::Internal, any).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reserved_flag_bits_are_internal() {
    let _serial = SERIAL.lock().await;
    for flag in [0x02, 0x04, 0x40] {
        let body = envelope(flag, &request(b"x").encode_to_vec());
        expect(
            &format!("flag {flag:#04x}"),
            &[],
            &body,
            Code::Internal,
            any,
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compressed_flag_without_an_encoding_is_internal() {
    let _serial = SERIAL.lock().await;
    let body = envelope(1, &compress(Encoding::Gzip, &request(b"x").encode_to_vec()));
    expect(
        "flag 1, no grpc-encoding",
        &[],
        &body,
        Code::Internal,
        |m| m.contains("grpc-encoding"),
    )
    .await;
    expect(
        "flag 1, grpc-encoding identity",
        &[("grpc-encoding", "identity")],
        &body,
        Code::Internal,
        |m| m.contains("grpc-encoding"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_encoding_is_unimplemented_with_the_accepted_list() {
    let _serial = SERIAL.lock().await;
    let (addr, server) = start_full().await;
    let client = raw::connect(addr).await;
    let body = envelope(1, &request(b"x").encode_to_vec());
    for path in [CLIENT_STREAM, UNARY] {
        let reply = raw::call(&client, path, &[("grpc-encoding", "snappy")], body.clone()).await;
        assert_eq!(reply.code(), Code::Unimplemented, "{reply:?}");
        assert!(reply.status.message().contains("snappy"), "{reply:?}");
        let accepted = reply.metadata["grpc-accept-encoding"].to_str().unwrap();
        for name in ["identity", "gzip", "deflate", "zstd"] {
            assert!(accepted.contains(name), "{accepted}");
        }
        assert_still_serving(&client, "snappy").await;
    }
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupt_compressed_payloads_are_internal() {
    let _serial = SERIAL.lock().await;
    let plain = request(&[5; 4096]).encode_to_vec();
    for encoding in ENCODINGS {
        let valid = compress(encoding, &plain);
        let mut overwritten = valid.clone();
        let middle = overwritten.len() / 2;
        overwritten[middle - 4..middle + 4].fill(0xA5);
        let mut trailing = valid.clone();
        trailing.extend_from_slice(b"extra");
        for (name, payload) in [
            ("garbage", b"this is not compressed data, honestly".to_vec()),
            ("truncated", valid[..valid.len() / 2].to_vec()),
            ("overwritten", overwritten),
            ("trailing bytes", trailing),
        ] {
            let headers = [("grpc-encoding", encoding.name())];
            expect(
                &format!("{encoding} {name}"),
                &headers,
                &envelope(1, &payload),
                Code::Internal,
                any,
            )
            .await;
        }
    }
}

/// A zstd frame that does not state its content size (as a streaming
/// encoder writes it): the decoder cannot refuse it from the frame header
/// and must decompress, with zstd's window in C memory the counting
/// allocator does not see.
fn zstd_without_content_size(input: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = zstd::stream::Encoder::new(Vec::new(), 19).unwrap();
    encoder.include_contentsize(false).unwrap();
    encoder.write_all(input).unwrap();
    encoder.finish().unwrap()
}

/// The largest zstd window the decoder accepts at a 4 MiB limit
/// (`zstd_window_log_max`: never below 2^23, so level-19 frames decode).
const ZSTD_SMALLEST_WINDOW_CAP: usize = 1 << 23;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bombs_are_resource_exhausted_with_memory_bounded_by_the_limit() {
    let _serial = SERIAL.lock().await;
    let plain = request(&vec![0; 2 * LIMIT]).encode_to_vec();
    let mut bombs: Vec<(String, Encoding, Vec<u8>)> = ENCODINGS
        .into_iter()
        .map(|encoding| (encoding.to_string(), encoding, compress(encoding, &plain)))
        .collect();
    bombs.push((
        "zstd without content size".to_string(),
        Encoding::Zstd,
        zstd_without_content_size(&plain),
    ));
    let (addr, server) = start_full().await;
    let client = raw::connect(addr).await;
    // Warm: the connection's and the server's first allocations.
    assert_still_serving(&client, "warm-up").await;
    for (name, encoding, bomb) in bombs {
        assert!(bomb.len() < 64 * 1024, "{name}: {}", bomb.len());
        let headers = [("grpc-encoding", encoding.name())];
        for path in [CLIENT_STREAM, BIDI, UNARY, SERVER_STREAM] {
            let case = format!("{path} {name} bomb");
            // Resident memory sees what the Rust heap count cannot: zstd's
            // (and any C library's) own allocations. Per call: glibc keeps
            // freed blocks per thread arena, so calls in a row add up in
            // RSS without being live at once.
            let rss_before = rss::reset_peak().expect("/proc/self/status");
            let before = reset_global_peak();
            let reply = raw::call(&client, path, &headers, envelope(1, &bomb)).await;
            let peak = global_peak() - before;
            let resident = rss::peak().expect("/proc/self/status") - rss_before;
            eprintln!(
                "{case}: {:?} {:?}; Rust heap peak +{:.2} MiB, resident peak +{:.2} MiB",
                reply.code(),
                reply.status.message(),
                peak as f64 / (1 << 20) as f64,
                resident as f64 / (1 << 20) as f64
            );
            assert_eq!(reply.code(), Code::ResourceExhausted, "{case}: {reply:?}");
            assert!(
                reply
                    .status
                    .message()
                    .contains(&format!("exceeds limit {LIMIT}")),
                "{case}: {reply:?}"
            );
            // Decompressed output never grows past the limit (tonic's own
            // path reaches up to twice it).
            assert!(peak < LIMIT + LIMIT / 2, "{case}: heap peak +{peak} bytes");
            // Everything the process touched, C allocations included: the
            // output up to the limit, and zstd's window, which the decoder
            // allows up to 8 MiB at any limit (what zstd's own level 19
            // writes) and touches as far as it decodes before the limit
            // stops it; 1 MiB for the rest.
            assert!(
                resident < (LIMIT + ZSTD_SMALLEST_WINDOW_CAP + (1 << 20)) as u64,
                "{case}: resident peak +{resident} bytes"
            );
        }
        assert_still_serving(&client, &name).await;
    }
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_protobuf_is_internal_with_prosts_text() {
    let _serial = SERIAL.lock().await;
    for payload in [&[0x08u8, 0x01][..], &[0x0A, 0x10, 1, 2]] {
        let text = EchoRequest::decode(payload).unwrap_err().to_string();
        expect(
            "invalid protobuf",
            &[],
            &envelope(0, payload),
            Code::Internal,
            |m| m == text,
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unary_request_needs_exactly_one_message() {
    let _serial = SERIAL.lock().await;
    let (addr, server) = start_full().await;
    let client = raw::connect(addr).await;
    let mut two = message(&request(b"one"));
    two.extend(message(&request(b"two")));
    for (name, body) in [("no message", Vec::new()), ("two messages", two)] {
        for path in [UNARY, SERVER_STREAM] {
            let reply = raw::call(&client, path, &[], body.clone()).await;
            assert_eq!(reply.code(), Code::Internal, "{path} {name}: {reply:?}");
        }
    }
    assert_still_serving(&client, "unary cases").await;
    server.abort();
}

/// The full client against a raw server sending bad response bodies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_full_client_answers_bad_responses_with_the_spec_codes() {
    let _serial = SERIAL.lock().await;
    let mut partial_payload = header(0, 10);
    partial_payload.extend_from_slice(&[1, 2, 3]);
    let valid = message(&EchoResponse::default());
    // Name, response body, trailing grpc-status, what the client must see.
    type Case = (
        &'static str,
        Vec<u8>,
        Option<&'static str>,
        Result<usize, Code>,
    );
    let cases: Vec<Case> = vec![
        ("valid", valid.clone(), Some("0"), Ok(1)),
        (
            "over the limit",
            header(0, u32::MAX),
            Some("0"),
            Err(Code::ResourceExhausted),
        ),
        ("header only", header(0, 10), Some("0"), Err(Code::Internal)),
        (
            "partial payload",
            partial_payload,
            Some("0"),
            Err(Code::Internal),
        ),
        (
            "partial header",
            vec![0, 0, 0],
            Some("0"),
            Err(Code::Internal),
        ),
        (
            "reserved flag",
            envelope(0x02, &EchoResponse::default().encode_to_vec()),
            Some("0"),
            Err(Code::Internal),
        ),
        ("no grpc-status", valid.clone(), None, Err(Code::Internal)),
        (
            "error after a message",
            valid,
            Some("10"),
            Err(Code::Aborted),
        ),
    ];
    for (name, body, status, expected) in cases {
        let (addr, server) = raw::serve_raw_with(body, status).await;
        let mut client =
            EchoClient::connect_with(format!("http://{addr}"), ClientStack::Full, None)
                .await
                .unwrap();
        // Twice: the channel keeps working after a bad response.
        for _ in 0..2 {
            let outcome = async {
                let mut responses = client.server_stream(EchoRequest::default()).await?;
                let mut count = 0;
                while let Some(response) = responses.next().await {
                    response?;
                    count += 1;
                }
                Ok::<_, tonic::Status>(count)
            }
            .await;
            match (&outcome, expected) {
                (Ok(count), Ok(want)) => assert_eq!(*count, want, "{name}"),
                (Err(status), Err(code)) => {
                    assert_eq!(status.code(), code, "{name}: {status:?}");
                    if code == Code::ResourceExhausted {
                        assert_eq!(status.message(), too_large(u64::from(u32::MAX)));
                    }
                }
                _ => panic!("{name}: {outcome:?}, expected {expected:?}"),
            }
        }
        server.abort();
    }
}
