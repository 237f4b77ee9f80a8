//! Compressor and decompressor on private items: pooled contexts and
//! bounded room. Their public behaviour (every encoding, limits, corrupt and
//! hostile input) is tested in `tests/compression_contexts.rs`.

use test_support::data::sample;

use super::compress::*;
use super::decompress::*;
use super::pool::*;
use super::*;
use crate::compression::CompressionLevel;

fn compress_with(compressor: &mut Compressor, input: &[u8]) -> BytesMut {
    let mut out = BytesMut::new();
    compressor.compress(&mut &input[..], &mut out).unwrap();
    out
}

#[test]
fn the_zstd_window_follows_the_limit_within_bounds() {
    assert_eq!(zstd_window_log_max(4 * 1024 * 1024), 23);
    assert_eq!(zstd_window_log_max(64 * 1024 * 1024), 26);
    assert_eq!(zstd_window_log_max(1), 23);
    assert_eq!(zstd_window_log_max(usize::MAX), 27);
}

/// The pools are process-wide and tests run in parallel, so each
/// check uses a setting (level, window cap) no other test uses.
#[test]
fn contexts_go_back_to_the_pool_grown_ones_within_the_cap_failed_ones_never() {
    let zstd = Compression::new(CompressionEncoding::Zstd).with_level(CompressionLevel::Precise(7));
    let mut compressor = Compressor::new(zstd);
    let mut decompressor = Decompressor::new(CompressionEncoding::Zstd);
    // A 32 MiB limit caps the window at 2^25, a tag no other test uses.
    let (limit, window) = (32 << 20, 25);
    assert_eq!(zstd_window_log_max(limit), window);
    let small = compress_with(&mut compressor, &sample(100, 6));
    assert_eq!(ZSTD_COMPRESSORS.idle_with(7), 1, "given back, not held");
    decompressor
        .decompress(&small, &mut Vec::new(), limit)
        .unwrap();
    assert_eq!(ZSTD_DECOMPRESSORS.idle_with(window as i32), 1);
    // Reused: the next small message takes the same one.
    let again = compress_with(&mut compressor, &sample(100, 7));
    decompressor
        .decompress(&again, &mut Vec::new(), limit)
        .unwrap();
    assert_eq!(ZSTD_COMPRESSORS.idle_with(7), 1);
    assert_eq!(ZSTD_DECOMPRESSORS.idle_with(window as i32), 1);
    // Grown with a large message: kept while the process's grown idle
    // contexts stay within the cap (dropping them made the next large
    // message fault the window in again).
    let large = compress_with(&mut compressor, &sample(KEEP_CONTEXT_MAX + 1, 6));
    assert_eq!(
        ZSTD_COMPRESSORS.idle_with(7),
        1,
        "grew with the message, kept"
    );
    decompressor
        .decompress(&large, &mut Vec::new(), limit)
        .unwrap();
    assert_eq!(ZSTD_DECOMPRESSORS.idle_with(window as i32), 1);
    decompressor
        .decompress(&small, &mut Vec::new(), limit)
        .unwrap();
    assert_eq!(ZSTD_DECOMPRESSORS.idle_with(window as i32), 1);
    let mut corrupt = small.to_vec();
    corrupt.truncate(corrupt.len() - 2);
    decompressor
        .decompress(&corrupt, &mut Vec::new(), limit)
        .unwrap_err();
    assert_eq!(
        ZSTD_DECOMPRESSORS.idle_with(window as i32),
        0,
        "failed: dropped"
    );

    // libdeflate's compressor does not grow with the message: kept. Text
    // that compresses less than 32:1 is libdeflate's; the first message
    // sets the stream's way whatever the process compressed last.
    let mut state = 0x2545_f491_u32;
    let letters: Vec<u8> = (0..=KEEP_CONTEXT_MAX)
        .map(|_| {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            b"abcdefghijklmnop"[(state >> 28) as usize]
        })
        .collect();
    let gzip = Compression::new(CompressionEncoding::Gzip).with_level(CompressionLevel::Precise(3));
    let mut compressor = Compressor::new(gzip);
    compress_with(&mut compressor, &letters[..1000]);
    compress_with(&mut compressor, &letters);
    assert_eq!(DEFLATERS.idle_with(3), 1);
}

#[test]
fn bounded_room_stops_for_more_without_writing_past_it() {
    let input = sample(300_000, 3);
    let limit = 1 << 20;
    for encoding in [
        CompressionEncoding::Gzip,
        CompressionEncoding::Deflate,
        CompressionEncoding::Zstd,
    ] {
        let wire = compress_with(&mut Compressor::new(Compression::new(encoding)), &input);
        let mut decompressor = Decompressor::new(encoding);
        // Too little room, well within the limit: stop, keep nothing,
        // never allocate past the room.
        for room in [1, 4096, 100_000, input.len() - 1] {
            let mut out = Vec::new();
            let outcome = decompressor
                .decompress_within(&wire, &mut out, limit, room)
                .unwrap();
            assert_eq!(outcome, Bounded::NeedsRoom, "{encoding} room {room}");
            assert!(out.is_empty(), "{encoding} room {room}");
            assert!(
                out.capacity() <= room,
                "{encoding} room {room}: {}",
                out.capacity()
            );
        }
        // Exactly enough room: done, within it.
        let mut out = Vec::new();
        let outcome = decompressor
            .decompress_within(&wire, &mut out, limit, input.len())
            .unwrap();
        assert_eq!(outcome, Bounded::Done, "{encoding}");
        assert_eq!(out, input, "{encoding}");
        assert!(out.capacity() <= input.len(), "{encoding}");
        // Room at the limit and a larger message: too large, as ever.
        let small_limit = input.len() - 1;
        let err = decompressor
            .decompress_within(&wire, &mut Vec::new(), small_limit, small_limit)
            .unwrap_err();
        assert_eq!(err.code(), Code::ResourceExhausted, "{encoding}: {err}");
        // The declared size is what a stream asks room for (zlib
        // declares none).
        let hint = decompressor.output_hint(&wire);
        match encoding {
            CompressionEncoding::Deflate => assert_eq!(hint, None),
            _ => assert_eq!(hint, Some(input.len()), "{encoding}"),
        }
    }
}
