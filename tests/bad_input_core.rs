//! A hostile peer against the core `Streaming`, as a server reads a request
//! body and as a client reads a response body: every bad input ends the
//! stream with one exact `Status`, nothing more is yielded afterwards, and no
//! allocation follows a length the peer merely declared.
//!
//! The assembler-level cases (each error text, terminal state) are in
//! `decode_errors.rs`; here every body goes through `Streaming`.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::task::{Context, Waker};

use bytes::{Bytes, BytesMut};
use futures_util::{FutureExt, Stream, StreamExt, stream};
use grpc_stream_codec::compression::{
    Compression, CompressionEncoding, EncodingSet, GRPC_ENCODING,
};
use grpc_stream_codec::decode::{BytesDecoder, MessageDecoder, Streaming};
use grpc_stream_codec::envelope::{DEFAULT_MAX_RECEIVE_SIZE, MAX_TRAILERS_SIZE};
use grpc_stream_codec::{
    envelope::Limits,
    status::{Code, Status},
};
use http::{HeaderMap, HeaderValue, StatusCode};
use http_body::Frame;
use http_body_util::StreamBody;
use test_support::alloc::{CountingAlloc, Usage, global_peak, measure, reset_global_peak};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::ALWAYS;

/// The process-wide peak is only meaningful while nothing else allocates:
/// the test that reads it takes this lock for writing, every other test
/// for reading.
static PROCESS: RwLock<()> = RwLock::new(());

fn shared() -> RwLockReadGuard<'static, ()> {
    PROCESS
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn exclusive() -> RwLockWriteGuard<'static, ()> {
    PROCESS
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

const MIB: usize = 1024 * 1024;

/// Which end of a call reads the body.
#[derive(Clone, Copy, Debug)]
enum Side {
    /// A server reading a request body.
    Request,
    /// A client reading a response body that ends with `grpc-status: 0`
    /// trailers: the body alone is at fault when the stream fails.
    Response,
}

const SIDES: [Side; 2] = [Side::Request, Side::Response];

fn header(flags: u8, len: u32) -> Vec<u8> {
    vec![
        flags,
        (len >> 24) as u8,
        (len >> 16) as u8,
        (len >> 8) as u8,
        len as u8,
    ]
}

fn envelope(flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut wire = header(flags, payload.len() as u32);
    wire.extend_from_slice(payload);
    wire
}

fn message(payload: &[u8]) -> Vec<u8> {
    envelope(0, payload)
}

fn trailers_frame(block: &[u8]) -> Vec<u8> {
    envelope(0x80, block)
}

fn compress(encoding: CompressionEncoding, payload: &[u8]) -> Vec<u8> {
    let mut out = BytesMut::new();
    Compression::new(encoding)
        .compress(&mut &payload[..], &mut out)
        .unwrap();
    out.to_vec()
}

fn ok_trailers() -> HeaderMap {
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static("0"));
    trailers
}

/// A `Streaming` over a body of the given data frames, with `encoding` as
/// the stream's `grpc-encoding`.
fn open(
    side: Side,
    frames: Vec<Vec<u8>>,
    encoding: Option<CompressionEncoding>,
) -> Streaming<BytesDecoder> {
    open_with(side, frames, encoding, BytesDecoder)
}

fn open_with<D: MessageDecoder>(
    side: Side,
    frames: Vec<Vec<u8>>,
    encoding: Option<CompressionEncoding>,
    decoder: D,
) -> Streaming<D> {
    let mut frames: Vec<Frame<Bytes>> = frames
        .into_iter()
        .map(|frame| Frame::data(Bytes::from(frame)))
        .collect();
    match side {
        Side::Request => {
            let body = StreamBody::new(stream::iter(frames.into_iter().map(Ok::<_, Infallible>)));
            Streaming::new_request(body, decoder, encoding)
        }
        Side::Response => {
            frames.push(Frame::trailers(ok_trailers()));
            let body = StreamBody::new(stream::iter(frames.into_iter().map(Ok::<_, Infallible>)));
            let mut headers = HeaderMap::new();
            if let Some(encoding) = encoding {
                headers.insert(GRPC_ENCODING, encoding.header_value());
            }
            Streaming::new_response(StatusCode::OK, &headers, body, decoder)
        }
    }
}

/// Reads the stream to its end (every body here is ready at once) and
/// returns the messages before the error and the error; then checks the
/// stream stays finished.
fn failure<D: MessageDecoder>(stream: &mut Streaming<D>) -> (Vec<D::Item>, Status) {
    let mut items = Vec::new();
    let status = loop {
        match next_now(stream) {
            Some(Ok(item)) => items.push(item),
            Some(Err(status)) => break status,
            None => panic!("the stream ended cleanly"),
        }
    };
    assert_finished(stream);
    (items, status)
}

fn next_now<D: MessageDecoder>(stream: &mut Streaming<D>) -> Option<Result<D::Item, Status>> {
    stream
        .next()
        .now_or_never()
        .expect("every test body is ready")
}

/// After its error a stream yields nothing more.
fn assert_finished<D: MessageDecoder>(stream: &mut Streaming<D>) {
    for _ in 0..2 {
        assert!(next_now(stream).is_none(), "an item after the error");
    }
}

/// The stream fails with exactly `code` and `text` after yielding `before`.
fn assert_fails(
    mut stream: Streaming<BytesDecoder>,
    before: &[&[u8]],
    code: Code,
    text: &str,
) -> Usage {
    let ((items, status), usage) = measure(|| failure(&mut stream));
    assert_eq!(items, before, "messages before the error");
    assert_eq!((status.code(), status.message()), (code, text));
    usage
}

#[test]
fn a_length_above_the_limit_is_resource_exhausted_without_allocating_it() {
    let _process = shared();
    let limit = DEFAULT_MAX_RECEIVE_SIZE;
    for side in SIDES {
        for declared in [limit as u32 + 1, 0x7fff_ffff, 0xffff_ffff] {
            // A few payload bytes follow: the peer started sending the message.
            let mut bad = header(0, declared);
            bad.extend_from_slice(&[0; 1000]);
            let stream = open(side, vec![message(b"first"), bad], None);
            let usage = assert_fails(
                stream,
                &[b"first"],
                Code::ResourceExhausted,
                &format!("message size {declared} exceeds limit {limit}"),
            );
            // Far below any declared size; a slab and bookkeeping at most.
            assert!(usage.peak < 64 * 1024, "{side:?} {declared}: {usage:?}");
        }
    }
}

#[test]
fn a_body_ending_inside_a_header_is_internal() {
    let _process = shared();
    for side in SIDES {
        for cut in 1..5 {
            let mut wire = message(b"whole");
            wire.extend_from_slice(&header(0, 3)[..cut]);
            assert_fails(
                open(side, vec![wire], None),
                &[b"whole"],
                Code::Internal,
                &format!("protocol error: body ended inside a message header ({cut} of 5 bytes)"),
            );
        }
    }
}

#[test]
fn a_body_ending_inside_a_payload_is_internal() {
    let _process = shared();
    for side in SIDES {
        // Header alone, a small payload cut short, a large one cut short
        // after arriving over several frames.
        let small = message(&[3; 100]);
        let large = message(&[4; 100_000]);
        let cases = [
            (vec![header(0, 10)], 0, 10),
            (vec![small[..50].to_vec()], 45, 100),
            (
                large[..99_000]
                    .chunks(16 * 1024)
                    .map(<[u8]>::to_vec)
                    .collect(),
                98_995,
                100_000,
            ),
        ];
        for (frames, got, expected) in cases {
            assert_fails(
                open(side, frames, None),
                &[],
                Code::Internal,
                &format!("protocol error: body ended inside a message ({got} of {expected} bytes)"),
            );
        }
    }
}

#[test]
fn reserved_flag_bits_are_internal() {
    let _process = shared();
    for side in SIDES {
        for flags in [0x02u8, 0x04, 0x08, 0x10, 0x20, 0x40, 0x7e, 0xff] {
            let stream = open(side, vec![message(b"ok"), envelope(flags, b"x")], None);
            assert_fails(
                stream,
                &[b"ok"],
                Code::Internal,
                &format!("protocol error: invalid envelope flags 0x{flags:02x}"),
            );
        }
    }
}

#[test]
fn a_compressed_flag_without_grpc_encoding_is_internal() {
    let _process = shared();
    let payload = compress(CompressionEncoding::Gzip, b"squeezed");
    for side in SIDES {
        for encoding in [None, Some(CompressionEncoding::Identity)] {
            let stream = open(side, vec![envelope(0x01, &payload)], encoding);
            assert_fails(
                stream,
                &[],
                Code::Internal,
                "protocol error: compressed message on a stream without a grpc-encoding",
            );
        }
    }
}

#[test]
fn an_unknown_request_grpc_encoding_is_unimplemented() {
    let _process = shared();
    let supported = EncodingSet::supported().to_string();
    for (raw, shown) in [
        (&b"br"[..], "br"),
        (b"snappy", "snappy"),
        (b"GZIP ", "GZIP "),
        (b"\xff\xfe", "\u{fffd}\u{fffd}"),
    ] {
        let mut headers = HeaderMap::new();
        headers.insert(GRPC_ENCODING, HeaderValue::from_bytes(raw).unwrap());
        // What a server calls on the request headers before reading the body.
        let status = CompressionEncoding::from_encoding_header(&headers).unwrap_err();
        assert_eq!(status.code(), Code::Unimplemented);
        assert_eq!(
            status.message(),
            format!("unsupported grpc-encoding {shown:?}; supported: {supported}")
        );
    }
}

const ENCODINGS: [CompressionEncoding; 3] = [
    CompressionEncoding::Gzip,
    CompressionEncoding::Deflate,
    CompressionEncoding::Zstd,
];

#[test]
fn corrupt_compressed_payloads_are_internal() {
    let _process = shared();
    let original = b"a message worth compressing, a message worth compressing".repeat(20);
    for encoding in ENCODINGS {
        let good = compress(encoding, &original);
        let truncated = good[..good.len() - 4].to_vec();
        let garbage = b"this was never compressed".to_vec();
        let mut flipped = good.clone();
        // Inside the compressed data, past any header.
        let middle = flipped.len() / 2;
        for byte in &mut flipped[middle..middle + 4] {
            *byte ^= 0xa5;
        }
        let mut cases = vec![("truncated", truncated), ("garbage", garbage)];
        if encoding != CompressionEncoding::Zstd {
            // gzip and zlib carry a checksum of the data; zstd frames carry
            // one only when the sender asks, so a flipped byte may decode.
            cases.push(("flipped", flipped));
        }
        for side in SIDES {
            for (what, payload) in &cases {
                let frames = vec![
                    envelope(0x01, &compress(encoding, b"fine")),
                    envelope(0x01, payload),
                ];
                let mut stream = open(side, frames, Some(encoding));
                let (items, status) = failure(&mut stream);
                assert_eq!(items, [&b"fine"[..]], "{encoding} {what}");
                assert_eq!(
                    status.code(),
                    Code::Internal,
                    "{encoding} {what}: {status:?}"
                );
                let prefix = format!("{encoding} decompression failed: ");
                assert!(
                    status.message().starts_with(&prefix),
                    "{encoding} {what}: {status:?}"
                );
            }
        }
    }
}

/// Found by the `decompress` fuzz target: a decoder stops at the end of
/// its stream, and bytes after it were dropped without an error.
#[test]
fn bytes_after_the_compressed_stream_are_internal() {
    let _process = shared();
    for encoding in ENCODINGS {
        let stream_of = |payload: &[u8]| compress(encoding, payload);
        let mut with_tail = stream_of(b"payload");
        with_tail.extend_from_slice(b"tail");
        // Two whole streams back to back: the second was lost unseen.
        let twice = [stream_of(b"one"), stream_of(b"two")].concat();
        let second_len = stream_of(b"two").len();
        for (payload, left) in [(with_tail, 4), (twice, second_len)] {
            for side in SIDES {
                let stream = open(side, vec![envelope(0x01, &payload)], Some(encoding));
                assert_fails(
                    stream,
                    &[],
                    Code::Internal,
                    &format!(
                        "{encoding} decompression failed: {left} bytes after the end of the \
                         compressed data"
                    ),
                );
            }
        }
    }
}

#[test]
fn bombs_inflating_past_the_limit_are_resource_exhausted_within_the_limit() {
    let _process = shared();
    let limit = MIB;
    let zeros = vec![0u8; 4 * limit];
    for encoding in ENCODINGS {
        let bomb = compress(encoding, &zeros);
        assert!(bomb.len() < limit / 64, "{encoding}: {} bytes", bomb.len());
        for side in SIDES {
            let stream = open(side, vec![envelope(0x01, &bomb)], Some(encoding))
                .with_limits(Limits::new().with_max_receive(limit));
            let usage = assert_fails(
                stream,
                &[],
                Code::ResourceExhausted,
                &format!("message size {} exceeds limit {limit}", limit + 1),
            );
            // The output stops at the limit: nothing near the 4 MiB the
            // bomb inflates to.
            assert!(
                usage.peak < (limit + limit / 2) as isize,
                "{encoding} {side:?}: {usage:?}"
            );
        }
    }
}

#[test]
fn a_grpc_web_trailers_frame_above_one_mib_is_refused_on_its_header() {
    let _process = shared();
    for side in SIDES {
        let mut frames = vec![message(b"m")];
        frames.push(header(0x80, MAX_TRAILERS_SIZE as u32 + 1));
        frames.push(vec![b'a'; 64 * 1024]);
        let usage = assert_fails(
            open(side, frames, None),
            &[b"m"],
            Code::ResourceExhausted,
            "gRPC-Web trailers size 1048577 exceeds limit 1048576",
        );
        assert!(usage.peak < 256 * 1024, "{side:?}: {usage:?}");
    }
}

#[test]
fn a_grpc_web_trailers_frame_of_exactly_one_mib_is_read() {
    let _process = shared();
    let mut block = b"grpc-status: 0\r\nx-pad: ".to_vec();
    block.resize(MAX_TRAILERS_SIZE - 2, b'p');
    block.extend_from_slice(b"\r\n");
    let mut stream = open(Side::Response, vec![trailers_frame(&block)], None);
    let trailers = stream
        .trailers()
        .now_or_never()
        .expect("ready")
        .unwrap()
        .unwrap();
    assert_eq!(trailers["grpc-status"], "0");
    assert_eq!(trailers["x-pad"].len(), MAX_TRAILERS_SIZE - 25);
}

#[test]
fn malformed_grpc_web_trailer_lines_are_internal() {
    let _process = shared();
    let cases: [(&[u8], &str); 5] = [
        (b"grpc-status: 0\r\nno colon\r\n", "no colon"),
        (b": 0\r\n", ": 0"),
        (b"bad name: 1\r\n", "bad name: 1"),
        (b"x-ok: \x01\r\n", "x-ok: \u{1}"),
        (b"grpc-status\xff: 0\r\n", "grpc-status\u{fffd}: 0"),
    ];
    for side in SIDES {
        for (block, line) in cases {
            let frames = vec![message(b"m"), trailers_frame(block)];
            assert_fails(
                open(side, frames, None),
                &[b"m"],
                Code::Internal,
                &format!("protocol error: malformed gRPC-Web trailer line {line:?}"),
            );
        }
    }
}

#[test]
fn data_after_grpc_web_trailers_is_internal() {
    let _process = shared();
    let trailers = trailers_frame(b"grpc-status: 0\r\n");
    let mut same_frame = trailers.clone();
    same_frame.extend(message(b"late"));
    for side in SIDES {
        for frames in [
            vec![same_frame.clone()],
            vec![trailers.clone(), message(b"late")],
            vec![trailers.clone(), vec![0]],
            vec![trailers.clone(), trailers.clone()],
        ] {
            assert_fails(
                open(side, frames, None),
                &[],
                Code::Internal,
                "protocol error: data after the gRPC-Web trailers frame",
            );
        }
    }
}

/// A protobuf decoder as an application plugs in: prost, with its error
/// text as an `internal` status, as tonic's prost codec reports it.
#[cfg(feature = "tonic")]
struct ProstDecoder;

#[cfg(feature = "tonic")]
impl MessageDecoder for ProstDecoder {
    /// A `google.protobuf.StringValue`.
    type Item = String;

    fn decode(&mut self, message: Bytes) -> Result<String, Status> {
        <String as prost::Message>::decode(message)
            .map_err(|error| Status::internal(error.to_string()))
    }
}

#[cfg(feature = "tonic")]
#[test]
fn an_invalid_protobuf_payload_is_internal_with_the_decoders_text() {
    let _process = shared();
    // Field 1, length-delimited: "hi", then a field 1 declaring 10 bytes
    // with only 2 present.
    let good = [0x0a, 0x02, b'h', b'i'];
    let truncated = [0x0a, 0x0a, b'h', b'i'];
    let bad_utf8 = [0x0a, 0x02, 0xff, 0xfe];
    for payload in [&truncated[..], &bad_utf8[..]] {
        let expected = <String as prost::Message>::decode(payload)
            .unwrap_err()
            .to_string();
        assert!(expected.starts_with("failed to decode Protobuf message"));
        for side in SIDES {
            let frames = vec![message(&good), message(payload), message(&good)];
            let mut stream = open_with(side, frames, None, ProstDecoder);
            let (items, status) = failure(&mut stream);
            assert_eq!(items, ["hi"]);
            assert_eq!(
                (status.code(), status.message()),
                (Code::Internal, &*expected)
            );
        }
    }
}

/// A body that sends one frame and then nothing, ever.
fn header_then_silence(
    frame: Bytes,
) -> StreamBody<impl Stream<Item = Result<Frame<Bytes>, Infallible>> + Send + 'static> {
    StreamBody::new(stream::iter([Ok(Frame::data(frame))]).chain(stream::pending()))
}

#[test]
fn ten_thousand_streams_declaring_4_mib_each_stay_bounded() {
    const STREAMS: usize = 10_000;
    let _process = exclusive();
    let declared = header(0, DEFAULT_MAX_RECEIVE_SIZE as u32);
    // Like a peer's frame: the header and its first byte of payload.
    let mut first = declared.clone();
    first.push(0xaa);
    let frame = Bytes::from(first);
    let mut cx = Context::from_waker(Waker::noop());

    let before = reset_global_peak();
    let mut streams: Vec<_> = (0..STREAMS)
        .map(|_| Streaming::new_request(header_then_silence(frame.clone()), BytesDecoder, None))
        .collect();
    for stream in &mut streams {
        // Each reads its header and waits for a payload that never comes.
        assert!(Pin::new(stream).poll_next(&mut cx).is_pending());
    }
    let peak = global_peak() - before;
    drop(streams);
    println!(
        "{STREAMS} streams, each waiting on a 4 MiB message: peak {peak} bytes live \
         ({} per stream)",
        peak / STREAMS
    );
    assert!(peak < 64 * MIB, "peak {peak} bytes");
    // The figure that matters: memory follows bytes received, not declared.
    assert!(peak / STREAMS < 4 * 1024, "peak {peak} bytes");
}
