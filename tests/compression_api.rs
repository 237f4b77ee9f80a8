//! The compression API: every encoding, levels, limits, names and
//! `grpc-accept-encoding` negotiation (moved out of `src/compression.rs`;
//! the cases cover every encoding at once).
#![cfg(all(feature = "gzip", feature = "deflate", feature = "zstd"))]

use bytes::{Buf, Bytes, BytesMut};
use grpc_stream_codec::compression::*;
use grpc_stream_codec::status::Code;
use http::HeaderValue;

const ALL: [CompressionEncoding; 4] = [
    CompressionEncoding::Identity,
    CompressionEncoding::Gzip,
    CompressionEncoding::Deflate,
    CompressionEncoding::Zstd,
];

fn sample(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 % 251) as u8).collect()
}

fn compressed(encoding: CompressionEncoding, input: &[u8]) -> BytesMut {
    let mut out = BytesMut::new();
    Compression::new(encoding)
        .compress(&mut Bytes::copy_from_slice(input), &mut out)
        .unwrap();
    out
}

/// One compressing test at a time: a new gzip/deflate compressor starts on
/// the path (libdeflate or zlib-rs) that the process's last compression
/// chose, so another test's highly compressible input would change which
/// path, and so which bytes, this test's outputs come from.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static COMPRESSING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    COMPRESSING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[test]
fn every_encoding_round_trips() {
    let _one = one_at_a_time();
    for encoding in ALL {
        for len in [0, 1, 100 * 1024] {
            let input = sample(len);
            let mut wire = compressed(encoding, &input);
            let mut out = Vec::new();
            decompress(encoding, &mut wire, &mut out, 1 << 20).unwrap();
            assert_eq!(out, input, "{encoding} {len}");
            assert!(!wire.has_remaining(), "input is consumed");
        }
    }
}

#[test]
fn identity_copies_and_consumes() {
    let mut input = Bytes::from_static(b"plain");
    let mut out = BytesMut::from(&b">"[..]);
    Compression::new(CompressionEncoding::Identity)
        .compress(&mut input, &mut out)
        .unwrap();
    assert_eq!(&out[..], b">plain");
    assert!(input.is_empty());
}

/// Text-like input (words of a small vocabulary in a pseudo-random
/// order) on which the levels of every algorithm differ, unlike the
/// periodic `sample`, which every level shrinks alike.
fn words(len: usize) -> Vec<u8> {
    const VOCABULARY: [&str; 16] = [
        "stream", "frame", "budget", "window", "header", "message", "slab", "limit", "encode",
        "decode", "status", "trailer", "deadline", "zstd", "gzip", "deflate",
    ];
    let mut state = 0x2545_f491_u32;
    let mut out = Vec::with_capacity(len + 16);
    while out.len() < len {
        state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        out.extend_from_slice(VOCABULARY[(state >> 16) as usize % 16].as_bytes());
        out.push(if state >> 28 == 0 { b'\n' } else { b' ' });
    }
    out.truncate(len);
    out
}

#[test]
fn levels_change_the_output() {
    let _one = one_at_a_time();
    let input = words(64 * 1024);
    let at = |encoding, level| {
        // A stream's first gzip/deflate message goes the way the process's
        // last one went (libdeflate or zlib-rs); its second goes the way its
        // first did, whatever other tests compressed meanwhile.
        let mut compressor = Compressor::new(Compression::new(encoding).with_level(level));
        compressor
            .compress(&mut &input[..], &mut BytesMut::new())
            .unwrap();
        let mut out = BytesMut::new();
        compressor.compress(&mut &input[..], &mut out).unwrap();
        let mut back = Vec::new();
        decompress(encoding, &mut &out[..], &mut back, usize::MAX).unwrap();
        assert_eq!(back, input, "{encoding} at {level:?} round-trips");
        out
    };
    for (encoding, lowest, highest) in [
        (CompressionEncoding::Gzip, 0, 9),
        (CompressionEncoding::Deflate, 0, 9),
        (CompressionEncoding::Zstd, 1, 22),
    ] {
        let fastest = at(encoding, CompressionLevel::Fastest);
        let default = at(encoding, CompressionLevel::Default);
        let best = at(encoding, CompressionLevel::Best);
        // Each named level is a different setting, and they rank by size.
        assert!(
            best.len() < default.len() && default.len() < fastest.len(),
            "{encoding}: best {} < default {} < fastest {}",
            best.len(),
            default.len(),
            fastest.len()
        );
        // Precise levels are the algorithm's own numbers, clamped to its range.
        assert_eq!(
            at(encoding, CompressionLevel::Precise(1)),
            fastest,
            "{encoding}"
        );
        assert_eq!(
            at(encoding, CompressionLevel::Precise(lowest - 1)),
            at(encoding, CompressionLevel::Precise(lowest)),
            "{encoding} clamps below {lowest}"
        );
        if encoding == CompressionEncoding::Zstd {
            assert_eq!(at(encoding, CompressionLevel::Precise(19)), best);
            assert_eq!(at(encoding, CompressionLevel::Precise(0)), fastest);
        } else {
            assert_eq!(at(encoding, CompressionLevel::Precise(9)), best);
            assert_eq!(
                at(encoding, CompressionLevel::Precise(highest + 1)),
                best,
                "{encoding} clamps above {highest}"
            );
            // Level 0 stores: the output is larger than the input.
            let stored = at(encoding, CompressionLevel::Precise(0));
            assert!(stored.len() > input.len(), "{encoding} level 0 stores");
        }
    }
}

#[test]
fn deflate_is_zlib_format() {
    let _one = one_at_a_time();
    let wire = compressed(CompressionEncoding::Deflate, b"hello");
    // zlib streams start with CMF 0x78.
    assert_eq!(wire[0], 0x78);
    let gzip = compressed(CompressionEncoding::Gzip, b"hello");
    assert_eq!(&gzip[..2], &[0x1f, 0x8b]);
}

#[test]
fn bombs_fail_without_allocating_their_size() {
    let _one = one_at_a_time();
    let zeros = vec![0u8; 10 * 1024 * 1024];
    for encoding in [
        CompressionEncoding::Gzip,
        CompressionEncoding::Deflate,
        CompressionEncoding::Zstd,
    ] {
        let bomb = compressed(encoding, &zeros);
        assert!(bomb.len() < 64 * 1024, "{encoding}: {}", bomb.len());
        let limit = 1024 * 1024;
        let mut out = Vec::new();
        let err = decompress(encoding, &mut &bomb[..], &mut out, limit).unwrap_err();
        assert_eq!(err.code(), Code::ResourceExhausted, "{encoding}");
        assert!(err.message().ends_with("exceeds limit 1048576"), "{err}");
        assert!(out.capacity() <= limit, "{encoding}: {}", out.capacity());
    }
}

#[test]
fn zstd_frames_declaring_a_window_beyond_the_limit_are_refused() {
    let _one = one_at_a_time();
    // A frame compressed with a 2^25 window (long-distance mode) declares
    // that window in its header; the decoder would allocate it.
    let input = sample(64 * 1024);
    let mut encoder = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
    encoder.window_log(25).unwrap();
    encoder.long_distance_matching(true).unwrap();
    std::io::Write::write_all(&mut encoder, &input).unwrap();
    let wire = encoder.finish().unwrap();
    let mut out = Vec::new();
    let err = decompress(CompressionEncoding::Zstd, &mut &wire[..], &mut out, 1 << 20).unwrap_err();
    assert_eq!(err.code(), Code::Internal, "{err}");
    // With a limit that could use such a window, the same frame decodes.
    decompress(
        CompressionEncoding::Zstd,
        &mut &wire[..],
        &mut out,
        64 << 20,
    )
    .unwrap();
    assert_eq!(out, input);
}

#[test]
fn exactly_at_the_limit_is_accepted() {
    let _one = one_at_a_time();
    let input = sample(1000);
    let wire = compressed(CompressionEncoding::Gzip, &input);
    let mut out = Vec::new();
    decompress(CompressionEncoding::Gzip, &mut &wire[..], &mut out, 1000).unwrap();
    assert_eq!(out.len(), 1000);
    let err = decompress(
        CompressionEncoding::Gzip,
        &mut &wire[..],
        &mut Vec::new(),
        999,
    )
    .unwrap_err();
    assert_eq!(err.code(), Code::ResourceExhausted);
}

#[test]
fn corrupt_input_is_internal() {
    let _one = one_at_a_time();
    for encoding in [
        CompressionEncoding::Gzip,
        CompressionEncoding::Deflate,
        CompressionEncoding::Zstd,
    ] {
        let mut wire = compressed(encoding, &sample(4096)).to_vec();
        let middle = wire.len() / 2;
        wire[middle] ^= 0xff;
        wire.truncate(wire.len() - 3);
        let err = decompress(encoding, &mut &wire[..], &mut Vec::new(), 1 << 20).unwrap_err();
        assert_eq!(err.code(), Code::Internal, "{encoding}: {err}");
    }
}

#[test]
fn names_and_aliases() {
    for encoding in ALL {
        assert_eq!(
            CompressionEncoding::from_name(encoding.name()),
            Some(encoding)
        );
    }
    assert_eq!(
        CompressionEncoding::from_name("zlib"),
        Some(CompressionEncoding::Deflate)
    );
    assert_eq!(CompressionEncoding::from_name("br"), None);
}

#[test]
fn unknown_grpc_encoding_is_unimplemented_with_the_list() {
    let mut headers = http::HeaderMap::new();
    assert_eq!(
        CompressionEncoding::from_encoding_header(&headers).unwrap(),
        None
    );
    headers.insert(GRPC_ENCODING, HeaderValue::from_static("br"));
    let err = CompressionEncoding::from_encoding_header(&headers).unwrap_err();
    assert_eq!(err.code(), Code::Unimplemented);
    assert!(
        err.message().contains("identity,gzip,deflate,zstd"),
        "{err}"
    );
    headers.insert(GRPC_ENCODING, HeaderValue::from_static("zlib"));
    assert_eq!(
        CompressionEncoding::from_encoding_header(&headers).unwrap(),
        Some(CompressionEncoding::Deflate)
    );
}

#[test]
fn accept_lists_parse_ignore_unknowns_and_negotiate() {
    let theirs = EncodingSet::parse_accept("br, zstd ,snappy,deflate");
    assert_eq!(theirs.to_string(), "deflate,zstd");
    let accept = |value: &'static str| {
        let mut headers = http::HeaderMap::new();
        headers.insert(GRPC_ACCEPT_ENCODING, HeaderValue::from_static(value));
        headers
    };
    // The peer's order decides, not ours.
    let ours = EncodingSet::supported();
    let theirs = accept("br, zstd ,snappy,deflate");
    assert_eq!(ours.negotiate(&theirs), Some(CompressionEncoding::Zstd));
    let no_zstd = EncodingSet::empty()
        .with(CompressionEncoding::Gzip)
        .with(CompressionEncoding::Deflate);
    assert_eq!(
        no_zstd.negotiate(&theirs),
        Some(CompressionEncoding::Deflate)
    );
    assert_eq!(
        ours.negotiate(&accept("gzip,zstd,identity")),
        Some(CompressionEncoding::Gzip)
    );
    assert_eq!(ours.negotiate(&accept("identity")), None);
    assert_eq!(ours.negotiate(&http::HeaderMap::new()), None);
    assert_eq!(EncodingSet::empty().negotiate(&theirs), None);
    // Identity in our set is no reason to pick it: uncompressed is `None`.
    let identity = EncodingSet::empty().with(CompressionEncoding::Identity);
    assert_eq!(identity.negotiate(&accept("identity,gzip")), None);
    assert_eq!(
        EncodingSet::supported().accept_header_value(),
        "identity,gzip,deflate,zstd"
    );

    let mut headers = http::HeaderMap::new();
    headers.append(GRPC_ACCEPT_ENCODING, HeaderValue::from_static("gzip"));
    headers.append(GRPC_ACCEPT_ENCODING, HeaderValue::from_static("zlib, x"));
    let read = EncodingSet::from_accept_header(&headers);
    assert_eq!(read.to_string(), "identity,gzip,deflate");
}

#[test]
fn accept_lists_keep_the_callers_order_and_negotiation_follows_it() {
    let list = EncodingList::empty()
        .with(CompressionEncoding::Zstd)
        .with(CompressionEncoding::Gzip)
        .with(CompressionEncoding::Zstd);
    assert_eq!(list.to_string(), "zstd,gzip");
    assert_eq!(list.accept_header_value().unwrap(), "zstd,gzip,identity");
    let reversed: EncodingList = [CompressionEncoding::Gzip, CompressionEncoding::Zstd]
        .into_iter()
        .collect();
    assert_eq!(
        reversed.accept_header_value().unwrap(),
        "gzip,zstd,identity"
    );
    assert_eq!(list.to_set(), reversed.to_set());
    assert!(list.contains(CompressionEncoding::Gzip));
    assert!(!list.contains(CompressionEncoding::Deflate));
    assert_eq!(EncodingList::empty().accept_header_value(), None);
    let identity_only = EncodingList::empty().with(CompressionEncoding::Identity);
    assert_eq!(identity_only.accept_header_value(), None);

    // A server that may send both answers with the client's first.
    let send = EncodingSet::empty()
        .with(CompressionEncoding::Gzip)
        .with(CompressionEncoding::Zstd);
    for (client, expected) in [
        (list, CompressionEncoding::Zstd),
        (reversed, CompressionEncoding::Gzip),
    ] {
        let mut headers = http::HeaderMap::new();
        headers.insert(GRPC_ACCEPT_ENCODING, client.accept_header_value().unwrap());
        assert_eq!(send.negotiate(&headers), Some(expected));
    }
    // Values of several headers are one list, in order.
    let mut headers = http::HeaderMap::new();
    headers.append(GRPC_ACCEPT_ENCODING, HeaderValue::from_static("br"));
    headers.append(GRPC_ACCEPT_ENCODING, HeaderValue::from_static("zstd, gzip"));
    assert_eq!(send.negotiate(&headers), Some(CompressionEncoding::Zstd));
}

#[test]
fn a_received_encoding_must_be_in_the_accepted_set() {
    let accept =
        grpc_stream_codec::compression::EncodingSet::empty().with(CompressionEncoding::Gzip);
    let with = |value: &'static str| {
        let mut headers = http::HeaderMap::new();
        headers.insert(GRPC_ENCODING, HeaderValue::from_static(value));
        headers
    };
    assert_eq!(
        accept.received_encoding(&with("gzip")).unwrap(),
        Some(CompressionEncoding::Gzip)
    );
    assert_eq!(
        accept.received_encoding(&with("identity")).unwrap(),
        Some(CompressionEncoding::Identity)
    );
    assert_eq!(
        accept.received_encoding(&http::HeaderMap::new()).unwrap(),
        None
    );
    for refused in ["zstd", "br"] {
        let status = accept.received_encoding(&with(refused)).unwrap_err();
        assert_eq!(status.code(), Code::Unimplemented);
        assert_eq!(
            status.message(),
            format!("unsupported grpc-encoding {refused:?}; supported: identity,gzip")
        );
        let listed = &status.metadata().unwrap()["grpc-accept-encoding"];
        assert_eq!(listed, "identity,gzip");
    }
}
