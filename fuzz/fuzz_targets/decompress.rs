//! Decompression of arbitrary bytes with a limit: never panics, never writes
//! or reserves past the limit, consumes all of an input it accepts, and
//! round-trips what it accepts. What it accepts, flate2's and zstd's own
//! stream readers (an implementation independent of this crate's gzip
//! framing and context reuse) accept too, with the same output; and a
//! second call on the same, reused `Decompressor` gives the same outcome
//! as the first.
//!
//! Input: one selector byte (`% 4`: identity, gzip, deflate, zstd; bit
//! `0x80`: a 64-byte limit instead of 64 KiB), then the payload.
#![no_main]

use std::io::Read;

use grpc_stream_codec::compression::{Compression, CompressionEncoding, Decompressor, decompress};
use libfuzzer_sys::fuzz_target;

const LIMIT: usize = 64 * 1024;
const SMALL_LIMIT: usize = 64;

fuzz_target!(|input: &[u8]| {
    let Some((&selector, payload)) = input.split_first() else {
        return;
    };
    let encoding = match selector % 4 {
        0 => CompressionEncoding::Identity,
        1 => CompressionEncoding::Gzip,
        2 => CompressionEncoding::Deflate,
        _ => CompressionEncoding::Zstd,
    };
    let limit = if selector & 0x80 != 0 {
        SMALL_LIMIT
    } else {
        LIMIT
    };
    let mut out = Vec::new();
    let mut input = payload;
    let result = decompress(encoding, &mut input, &mut out, limit);
    // The same payload again on one reused context, after a valid message.
    let mut reused = Decompressor::new(encoding);
    let mut warm = bytes::BytesMut::new();
    Compression::new(encoding)
        .compress(&mut &b"warm-up message"[..], &mut warm)
        .expect("compress");
    reused
        .decompress(&warm, &mut Vec::new(), limit)
        .expect("warm-up");
    let mut again = Vec::new();
    let second = reused.decompress(payload, &mut again, limit);
    assert_eq!(
        second.as_ref().map_err(|s| s.code()),
        result.as_ref().map_err(|s| s.code()),
        "a reused context decides differently"
    );
    if result.is_ok() {
        assert_eq!(again, out, "a reused context decodes differently");
        if let Some(reference) = reference(encoding, payload, limit) {
            assert_eq!(reference, out, "the reference decoder disagrees");
        }
    }
    match result {
        Ok(()) => {
            assert!(out.len() <= limit);
            assert!(
                input.is_empty(),
                "accepted with {} bytes of input left unread",
                input.len()
            );
            // What was accepted compresses and decompresses back to itself.
            let mut again = bytes::BytesMut::new();
            Compression::new(encoding)
                .compress(&mut &out[..], &mut again)
                .expect("compress");
            let mut back = Vec::new();
            decompress(encoding, &mut &again[..], &mut back, limit).expect("round trip");
            assert_eq!(back, out);
        }
        Err(status) => {
            assert!(out.is_empty(), "a failed call leaves the output as it was");
            assert!(!status.message().is_empty());
        }
    }
    assert!(out.capacity() <= limit, "capacity {}", out.capacity());
});

/// flate2's and zstd's stream readers: `None` for identity, otherwise what
/// they make of an input this crate accepted (which they must accept too).
fn reference(encoding: CompressionEncoding, payload: &[u8], limit: usize) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut rest = payload;
    let read = match encoding {
        CompressionEncoding::Identity => return None,
        CompressionEncoding::Gzip => {
            let mut reader = flate2::bufread::GzDecoder::new(&mut rest);
            (&mut reader).take(limit as u64 + 1).read_to_end(&mut out)
        }
        CompressionEncoding::Deflate => {
            let mut reader = flate2::bufread::ZlibDecoder::new(&mut rest);
            (&mut reader).take(limit as u64 + 1).read_to_end(&mut out)
        }
        CompressionEncoding::Zstd => {
            let mut reader = zstd::stream::read::Decoder::with_buffer(&mut rest)
                .expect("zstd decoder")
                .single_frame();
            reader.window_log_max(27).expect("window");
            (&mut reader).take(limit as u64 + 1).read_to_end(&mut out)
        }
    };
    read.expect("accepted here, refused by the reference decoder");
    assert!(rest.is_empty(), "the reference decoder stopped {} bytes early", rest.len());
    Some(out)
}
