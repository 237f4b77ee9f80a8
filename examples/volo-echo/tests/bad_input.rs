//! Hostile request bodies against the volo ADAPTER server over loopback,
//! from a raw HTTP/2 client: each case gets exactly the gRPC status the spec
//! asks for, on the unary path (decoded by the generated code before the
//! handler) and the streaming one (decoded in the handler), and the server
//! goes on serving. The declared 4 GiB length and the gzip bomb are in
//! `wire.rs`; invalid protobuf payloads are in the behaviour suite
//! (`examples/interop-tests/tests/behaviour.rs`), on both adapters.

mod support;

use std::io::Write;

use bytes::Bytes;
use support::{Flavour, RawResponse, Running, envelope, raw_call, start};
use volo_echo::{EchoService, Rpc};

const INTERNAL: i32 = 13;
const RESOURCE_EXHAUSTED: i32 = 8;
const UNIMPLEMENTED: i32 = 12;

/// The methods whose request body the adapter decodes.
const METHODS: [&str; 2] = ["Unary", "ClientStream"];

/// An `EchoRequest` with a `payload` of `len` bytes, encoded by hand.
fn echo_request(len: usize) -> Vec<u8> {
    let mut out = vec![0x0a];
    test_support::raw_h2::put_varint(&mut out, len as u64);
    out.extend((0..len).map(|i| (i % 251) as u8));
    out
}

/// A raw envelope with any flag byte and declared length.
fn raw_envelope(flag: u8, declared: u32, payload: &[u8]) -> Bytes {
    Bytes::from(
        [
            test_support::raw_h2::header(flag, declared),
            payload.to_vec(),
        ]
        .concat(),
    )
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(data).expect("gzip in memory");
    encoder.finish().expect("gzip in memory")
}

fn zlib(data: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(data).expect("zlib in memory");
    encoder.finish().expect("zlib in memory")
}

/// zstd with a content checksum: without one, flipped bits in literals
/// decode to other bytes and no decoder can tell (gzip and zlib always
/// carry a checksum).
fn zstd(data: &[u8]) -> Vec<u8> {
    let mut encoder = zstd::stream::Encoder::new(Vec::new(), 19).expect("zstd in memory");
    encoder.include_checksum(true).expect("zstd in memory");
    encoder.write_all(data).expect("zstd in memory");
    encoder.finish().expect("zstd in memory")
}

/// Sends `body` with `headers` to every decoding method; each answer must
/// carry `status`, with a message for which `message_ok` holds. A status
/// about the body must have had the body (only an encoding refusal,
/// `unimplemented`, comes from the headers alone), and the control, the
/// same call with a well-formed body, must succeed: so the status came from
/// reading this body, not from the headers or a server that fails
/// everything. Then the server must still serve ordinary calls.
async fn expect(
    server: &Running,
    case: &str,
    headers: &[(&str, &str)],
    body: Bytes,
    status: i32,
    message_ok: impl Fn(&str) -> bool,
) {
    for method in METHODS {
        let response: RawResponse = raw_call(server.addr, method, headers, body.clone()).await;
        assert_eq!(
            response.grpc_status(),
            Some(status),
            "{case}, {method}: {response:?}"
        );
        let message = response.grpc_message();
        eprintln!("{case}, {method}: grpc-status {status}, {message:?}");
        assert!(
            message_ok(&message),
            "{case}, {method}: message {message:?}"
        );
        if status != UNIMPLEMENTED {
            assert!(
                response.body_sent,
                "{case}, {method}: answered before the body went out: {response:?}"
            );
            let control = envelope(false, &echo_request(10));
            let response = raw_call(server.addr, method, headers, control).await;
            assert_eq!(
                response.grpc_status(),
                Some(0),
                "{case}, {method}: the same call with a well-formed body: {response:?}"
            );
        }
    }
    let client = volo_echo::stock::client(server.addr, None);
    for rpc in [Rpc::Unary, Rpc::ClientStream] {
        volo_echo::stock::call(&client, rpc, 512, 3)
            .await
            .unwrap_or_else(|err| panic!("{rpc:?} after {case}: {err}"));
    }
}

fn any(_: &str) -> bool {
    true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_length_just_above_the_limit_is_resource_exhausted() {
    let server = start(Flavour::Adapter, EchoService::default()).await;
    let body = raw_envelope(0, 4 * 1024 * 1024 + 1, &[0; 32]);
    expect(&server, "4 MiB + 1", &[], body, RESOURCE_EXHAUSTED, |m| {
        m == "message size 4194305 exceeds limit 4194304"
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_ending_inside_a_header_is_internal() {
    let server = start(Flavour::Adapter, EchoService::default()).await;
    for cut in 1..5 {
        let whole = envelope(false, &echo_request(10));
        let body = whole.slice(..cut);
        expect(
            &server,
            &format!("{cut}-byte header"),
            &[],
            body,
            INTERNAL,
            any,
        )
        .await;
    }
    // After a whole message, too.
    let mut body = envelope(false, &echo_request(10)).to_vec();
    body.extend_from_slice(&[0, 0]);
    expect(
        &server,
        "message then 2 bytes",
        &[],
        Bytes::from(body),
        INTERNAL,
        any,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_ending_inside_a_payload_is_internal() {
    let server = start(Flavour::Adapter, EchoService::default()).await;
    let payload = echo_request(100);
    let body = raw_envelope(0, payload.len() as u32, &payload[..40]);
    expect(&server, "40 of 102 payload bytes", &[], body, INTERNAL, any).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reserved_flag_bits_are_internal() {
    let server = start(Flavour::Adapter, EchoService::default()).await;
    let payload = echo_request(10);
    for flag in [0x02u8, 0x04, 0x80, 0x81] {
        let body = raw_envelope(flag, payload.len() as u32, &payload);
        expect(
            &server,
            &format!("flag {flag:#04x}"),
            &[],
            body,
            INTERNAL,
            any,
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compressed_flag_without_grpc_encoding_is_internal() {
    let server = start(Flavour::Adapter, EchoService::default()).await;
    let compressed = gzip(&echo_request(100));
    expect(
        &server,
        "compressed flag, no grpc-encoding",
        &[],
        envelope(true, &compressed),
        INTERNAL,
        |m| m.contains("grpc-encoding"),
    )
    .await;
    // `identity` names no compression either.
    expect(
        &server,
        "compressed flag, grpc-encoding identity",
        &[("grpc-encoding", "identity")],
        envelope(true, &compressed),
        INTERNAL,
        any,
    )
    .await;
}

/// volo-grpc reads `grpc-encoding` itself, before the adapter sees the
/// body, and answers an encoding it does not know with `unimplemented`
/// (its own message), as the gRPC spec asks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_grpc_encoding_is_unimplemented() {
    let server = start(Flavour::Adapter, EchoService::default()).await;
    let body = envelope(true, b"whatever");
    expect(
        &server,
        "grpc-encoding snappy",
        &[("grpc-encoding", "snappy")],
        body,
        UNIMPLEMENTED,
        |m| m.contains("snappy"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupt_compressed_payloads_are_internal() {
    let server = start(Flavour::Adapter, EchoService::default()).await;
    let request = echo_request(2000);
    let cases: [(&str, Vec<u8>); 4] = [
        ("gzip", gzip(&request)),
        ("deflate", zlib(&request)),
        ("zlib", zlib(&request)),
        ("zstd", zstd(&request)),
    ];
    for (name, mut compressed) in cases {
        // Garbage over the middle of the stream, and a cut-off stream.
        let middle = compressed.len() / 2;
        for byte in &mut compressed[middle..middle + 8] {
            *byte ^= 0xa5;
        }
        let headers = [("grpc-encoding", name)];
        expect(
            &server,
            &format!("corrupt {name}"),
            &headers,
            envelope(true, &compressed),
            INTERNAL,
            any,
        )
        .await;
        let truncated = &compressed[..middle];
        expect(
            &server,
            &format!("truncated {name}"),
            &headers,
            envelope(true, truncated),
            INTERNAL,
            any,
        )
        .await;
        expect(
            &server,
            &format!("not {name} at all"),
            &headers,
            envelope(true, b"\x00\x01definitely not compressed"),
            INTERNAL,
            any,
        )
        .await;
    }
}

/// Small bodies that inflate to 8 MiB, twice the receive limit, in each
/// compressed format but gzip (in `wire.rs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deflate_and_zstd_bombs_are_resource_exhausted() {
    let server = start(Flavour::Adapter, EchoService::default()).await;
    let zeros = vec![0u8; 8 * 1024 * 1024];
    let cases: [(&str, Vec<u8>); 3] = [
        ("deflate", zlib(&zeros)),
        ("zlib", zlib(&zeros)),
        ("zstd", zstd(&zeros)),
    ];
    for (name, bomb) in cases {
        assert!(bomb.len() < 64 * 1024, "{name} bomb is {} B", bomb.len());
        expect(
            &server,
            &format!("{name} bomb"),
            &[("grpc-encoding", name)],
            envelope(true, &bomb),
            RESOURCE_EXHAUSTED,
            |m| m.contains("exceeds limit 4194304"),
        )
        .await;
    }
}
