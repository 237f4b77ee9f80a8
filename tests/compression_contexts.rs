//! `Compressor` and `Decompressor` together through the public API: every
//! encoding, reused contexts, limits, corrupt and hostile input (moved out of
//! `src/compression/context_tests.rs`; the pool and bounded-room tests that
//! need private items stay there).
#![cfg(all(feature = "gzip", feature = "deflate", feature = "zstd"))]

use std::io::{Read, Write};

use bytes::BytesMut;
use grpc_stream_codec::compression::{
    Compression, CompressionEncoding, CompressionLevel, Compressor, Decompressor,
};
use grpc_stream_codec::status::Code;
use test_support::data::sample;

/// The gzip member header this crate writes (RFC 1952: magic, deflate, no
/// flags, no mtime, no extra flags, OS unknown).
const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
/// Deflate's largest expansion, and the smallest first reservation
/// (`src/compression/decompress.rs`).
const MAX_DEFLATE_RATIO: usize = 1032;
const MIN_OUTPUT: usize = 256;

const COMPRESSING: [CompressionEncoding; 3] = [
    CompressionEncoding::Gzip,
    CompressionEncoding::Deflate,
    CompressionEncoding::Zstd,
];

fn compress_with(compressor: &mut Compressor, input: &[u8]) -> BytesMut {
    let mut out = BytesMut::new();
    compressor.compress(&mut &input[..], &mut out).unwrap();
    out
}

/// What an independent reader (flate2's and zstd's stream decoders)
/// makes of a payload.
fn reference_decode(encoding: CompressionEncoding, wire: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    match encoding {
        CompressionEncoding::Gzip => flate2::read::GzDecoder::new(wire).read_to_end(&mut out),
        CompressionEncoding::Deflate => flate2::read::ZlibDecoder::new(wire).read_to_end(&mut out),
        CompressionEncoding::Zstd => zstd::stream::read::Decoder::new(wire)
            .unwrap()
            .read_to_end(&mut out),
        CompressionEncoding::Identity => unreachable!(),
    }
    .unwrap();
    out
}

#[test]
fn reused_contexts_round_trip_many_messages_and_stay_standard() {
    for encoding in COMPRESSING {
        let mut compressor = Compressor::new(Compression::new(encoding));
        let mut decompressor = Decompressor::new(encoding);
        for (index, len) in [0, 1, 256, 4096, 70_000, 3, 256, 100_000, 17]
            .into_iter()
            .enumerate()
        {
            let input = sample(len, index);
            let wire = compress_with(&mut compressor, &input);
            // Each message is a complete, standard stream on its own.
            assert_eq!(reference_decode(encoding, &wire), input, "{encoding} {len}");
            let mut out = vec![9];
            decompressor.decompress(&wire, &mut out, 1 << 20).unwrap();
            assert_eq!(out[0], 9, "appends");
            assert_eq!(&out[1..], &input[..], "{encoding} {len}");
        }
    }
}

#[test]
fn a_multi_chunk_input_compresses_as_one_stream() {
    for encoding in COMPRESSING {
        let input = sample(50_000, 1);
        let chunks = bytes::Buf::chain(&input[..20_000], &input[20_000..]);
        let mut chained = chunks;
        let mut wire = BytesMut::new();
        Compressor::new(Compression::new(encoding))
            .compress(&mut chained, &mut wire)
            .unwrap();
        assert_eq!(reference_decode(encoding, &wire), input, "{encoding}");
    }
}

#[test]
fn gzip_headers_with_optional_fields_are_read() {
    let input = sample(5000, 2);
    let mut encoder = flate2::GzBuilder::new()
        .filename("name.bin")
        .comment("a comment")
        .extra(vec![1, 2, 3, 4])
        .mtime(12345)
        .write(Vec::new(), flate2::Compression::fast());
    encoder.write_all(&input).unwrap();
    let wire = encoder.finish().unwrap();
    let mut out = Vec::new();
    Decompressor::new(CompressionEncoding::Gzip)
        .decompress(&wire, &mut out, 1 << 20)
        .unwrap();
    assert_eq!(out, input);
}

#[test]
fn gzip_header_crc_is_checked() {
    // FHCRC set: the header's CRC-16 follows the fixed 10 bytes.
    let mut wire = GZIP_HEADER.to_vec();
    wire[3] = 0x02;
    let mut crc = flate2::Crc::new();
    crc.update(&wire);
    wire.extend_from_slice(&(crc.sum() as u16).to_le_bytes());
    let body = compress_with(
        &mut Compressor::new(Compression::new(CompressionEncoding::Gzip)),
        b"hello",
    );
    wire.extend_from_slice(&body[10..]);
    let mut decompressor = Decompressor::new(CompressionEncoding::Gzip);
    let mut out = Vec::new();
    decompressor.decompress(&wire, &mut out, 100).unwrap();
    assert_eq!(out, b"hello");
    wire[10] ^= 1;
    let err = decompressor
        .decompress(&wire, &mut Vec::new(), 100)
        .unwrap_err();
    assert!(err.message().contains("header CRC"), "{err}");
}

#[test]
fn gzip_trailer_and_header_are_checked() {
    let mut compressor = Compressor::new(Compression::new(CompressionEncoding::Gzip));
    let good = compress_with(&mut compressor, &sample(1000, 3)).to_vec();
    let len = good.len();
    let mut decompressor = Decompressor::new(CompressionEncoding::Gzip);
    type Damage = fn(&mut Vec<u8>, usize);
    let cases: [(&str, Damage); 5] = [
        ("crc", |w, len| w[len - 8] ^= 1),
        ("size", |w, len| w[len - 1] ^= 1),
        ("trailer cut", |w, len| w.truncate(len - 3)),
        ("reserved flag", |w, _| w[3] = 0x20),
        ("magic", |w, _| w[1] = 0),
    ];
    for (name, damage) in cases {
        let mut wire = good.clone();
        damage(&mut wire, len);
        let mut out = vec![1, 2];
        let err = decompressor
            .decompress(&wire, &mut out, 1 << 20)
            .unwrap_err();
        assert_eq!(err.code(), Code::Internal, "{name}: {err}");
        assert_eq!(out, [1, 2], "{name}: output left as it was");
        // The stream's next message still decodes.
        let mut out = Vec::new();
        decompressor.decompress(&good, &mut out, 1 << 20).unwrap();
        assert_eq!(out, sample(1000, 3));
    }
}

#[test]
fn truncated_trailing_and_bombs_fail_on_a_reused_context() {
    let zeros = vec![0u8; 4 << 20];
    for encoding in COMPRESSING {
        let mut compressor = Compressor::new(Compression::new(encoding));
        let mut decompressor = Decompressor::new(encoding);
        let good = compress_with(&mut compressor, &sample(3000, 4));
        let bomb = compress_with(&mut compressor, &zeros);
        let mut decode = |wire: &[u8], limit| {
            let mut out = Vec::new();
            let result = decompressor.decompress(wire, &mut out, limit);
            assert!(
                out.capacity() <= limit,
                "{encoding}: capacity {}",
                out.capacity()
            );
            result.map(|()| out)
        };
        assert_eq!(decode(&good, 1 << 20).unwrap(), sample(3000, 4));
        let truncated = decode(&good[..good.len() - 1], 1 << 20).unwrap_err();
        assert_eq!(truncated.code(), Code::Internal, "{encoding}: {truncated}");
        let mut trailing = good.to_vec();
        trailing.push(0);
        let err = decode(&trailing, 1 << 20).unwrap_err();
        assert_eq!(err.code(), Code::Internal, "{encoding}: {err}");
        assert!(err.message().contains("1 bytes after the end"), "{err}");
        let err = decode(&bomb, 1 << 20).unwrap_err();
        assert_eq!(err.code(), Code::ResourceExhausted, "{encoding}: {err}");
        assert!(err.message().ends_with("exceeds limit 1048576"), "{err}");
        // Exactly at the limit is fine, one byte under is not.
        assert_eq!(decode(&good, 3000).unwrap().len(), 3000);
        assert_eq!(
            decode(&good, 2999).unwrap_err().code(),
            Code::ResourceExhausted
        );
        assert_eq!(decode(&good, 1 << 20).unwrap(), sample(3000, 4));
    }
}

#[test]
fn a_callers_spare_capacity_does_not_lift_the_limit() {
    for encoding in COMPRESSING {
        let wire = compress_with(
            &mut Compressor::new(Compression::new(encoding)),
            &sample(10_000, 5),
        );
        let mut out = Vec::with_capacity(1 << 20);
        let err = Decompressor::new(encoding)
            .decompress(&wire, &mut out, 9_999)
            .unwrap_err();
        assert_eq!(err.code(), Code::ResourceExhausted, "{encoding}");
        assert!(out.is_empty());
    }
}

/// Found by the decompress fuzz target: a zstd frame declaring 353
/// bytes, then an RLE block of 16,460. How much zstd decoded before
/// noticing depended on the buffers a pooled context had grown for
/// earlier frames, so the same payload was `resource_exhausted` on one
/// context and `internal` on another.
#[test]
fn a_zstd_frame_is_judged_on_its_declared_size_whatever_the_context_did_before() {
    let lying = [
        0x28, 0xb5, 0x2f, 0xfd, 0x50, 0x53, 0x61, 0x00, 0x62, 0x02, 0x02, 0x63, 0x01, 0x00, 0x00,
    ];
    let large = compress_with(
        &mut Compressor::new(Compression::new(CompressionEncoding::Zstd)),
        &sample(200_000, 8),
    );
    for (limit, code) in [(64, Code::ResourceExhausted), (1024, Code::Internal)] {
        let mut seen = Vec::new();
        for history in [false, true] {
            let mut decompressor = Decompressor::new(CompressionEncoding::Zstd);
            if history {
                // Grows the context's buffers (same window cap, so the
                // same pooled context when tests do not interleave).
                decompressor
                    .decompress(&large, &mut Vec::new(), 1 << 20)
                    .unwrap();
            }
            let err = decompressor
                .decompress(&lying, &mut Vec::new(), limit)
                .unwrap_err();
            seen.push(err.code());
        }
        assert_eq!(seen, [code, code], "limit {limit}");
    }
}

#[test]
fn levels_map_to_libdeflate_and_every_level_round_trips() {
    let input = sample(20_000, 9);
    let mut sizes = Vec::new();
    for level in [0, 1, 6, 9] {
        for encoding in [CompressionEncoding::Gzip, CompressionEncoding::Deflate] {
            let compression =
                Compression::new(encoding).with_level(CompressionLevel::Precise(level));
            let wire = compress_with(&mut Compressor::new(compression), &input);
            assert_eq!(
                reference_decode(encoding, &wire),
                input,
                "{encoding} {level}"
            );
            if encoding == CompressionEncoding::Gzip {
                sizes.push(wire.len());
            }
        }
    }
    // Level 0 stores, 1 and up compress.
    assert!(sizes[0] > input.len(), "{sizes:?}");
    assert!(sizes[1] < input.len() / 2, "{sizes:?}");
}

#[test]
fn a_declared_size_is_believed_only_as_far_as_the_input_allows() {
    // A 40-byte gzip payload claiming 4 MiB in its trailer: the first
    // reservation follows the input, not the claim.
    let mut wire = compress_with(
        &mut Compressor::new(Compression::new(CompressionEncoding::Gzip)),
        b"tiny",
    )
    .to_vec();
    let len = wire.len();
    wire[len - 4..].copy_from_slice(&(4u32 << 20).to_le_bytes());
    let mut out = Vec::new();
    let err = Decompressor::new(CompressionEncoding::Gzip)
        .decompress(&wire, &mut out, 8 << 20)
        .unwrap_err();
    assert_eq!(err.code(), Code::Internal);
    assert!(out.capacity() <= len * MAX_DEFLATE_RATIO + MIN_OUTPUT);
}

/// A 1 MiB zstd message of one repeated byte compresses past deflate's
/// 1032:1; its declared size is still believed (zstd expands up to 32768:1),
/// so it is decompressed into one exact allocation rather than grown by
/// doubling.
#[test]
fn a_highly_compressible_zstd_message_gets_its_declared_size_at_once() {
    let plain = vec![7u8; 1 << 20];
    let wire = compress_with(
        &mut Compressor::new(Compression::new(CompressionEncoding::Zstd)),
        &plain,
    );
    assert!(
        wire.len() * MAX_DEFLATE_RATIO < plain.len(),
        "{} bytes",
        wire.len()
    );
    let mut out = Vec::new();
    Decompressor::new(CompressionEncoding::Zstd)
        .decompress(&wire, &mut out, 4 << 20)
        .unwrap();
    assert_eq!(out, plain);
    assert_eq!(out.capacity(), plain.len(), "one exact allocation");
}

/// Byte 9 of the gzip header: libdeflate writes "unknown" (255), zlib-rs
/// the OS it runs on, so it tells which backend compressed a message.
fn gzip_written_by_libdeflate(wire: &[u8]) -> bool {
    wire[9] == 0xff
}

#[test]
fn a_long_match_message_moves_the_stream_to_zlib_rs_until_one_is_not() {
    let runs = vec![7u8; 4096];
    let text = sample(4096, 3);
    let mut state = 0x2545_f491_u32;
    let letters: Vec<u8> = (0..4096)
        .map(|_| {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            b"abcdefghijklmnop"[(state >> 28) as usize]
        })
        .collect();
    for encoding in [CompressionEncoding::Gzip, CompressionEncoding::Deflate] {
        for level in [1, 6, 9] {
            let compression =
                Compression::new(encoding).with_level(CompressionLevel::Precise(level));
            let mut compressor = Compressor::new(compression);
            let mut decompressor = Decompressor::new(encoding);
            // (message, in two chunks, compressed by libdeflate). The
            // stream's first message follows the process's last one, which
            // other tests move.
            let steps: [(&[u8], bool, Option<bool>); 7] = [
                (&letters, false, None),
                (&runs, false, Some(true)),
                (&runs, false, Some(false)),
                (&runs, true, Some(false)),
                (&letters, true, Some(false)),
                (&letters, false, Some(true)),
                (&text, false, Some(true)),
            ];
            for (step, (input, split, by_libdeflate)) in steps.into_iter().enumerate() {
                let mut wire = BytesMut::new();
                let mut chunks = bytes::Buf::chain(&input[..1000], &input[1000..]);
                if split {
                    compressor.compress(&mut chunks, &mut wire).unwrap();
                } else {
                    compressor.compress(&mut &input[..], &mut wire).unwrap();
                }
                let what = format!("{encoding} level {level} step {step}");
                assert_eq!(reference_decode(encoding, &wire), input, "{what}");
                let mut out = Vec::new();
                decompressor.decompress(&wire, &mut out, 1 << 20).unwrap();
                assert_eq!(out, input, "{what}");
                if let (CompressionEncoding::Gzip, Some(by_libdeflate)) = (encoding, by_libdeflate)
                {
                    assert_eq!(gzip_written_by_libdeflate(&wire), by_libdeflate, "{what}");
                }
            }
        }
    }
}
