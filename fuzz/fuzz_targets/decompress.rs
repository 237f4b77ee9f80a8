//! Decompression of arbitrary bytes with a limit: never panics, never writes
//! or reserves past the limit, consumes all of an input it accepts, and
//! round-trips what it accepts.
//!
//! Input: one selector byte (`% 4`: identity, gzip, deflate, zstd; bit
//! `0x80`: a 64-byte limit instead of 64 KiB), then the payload.
#![no_main]

use grpc_stream_codec::compression::{Compression, CompressionEncoding, decompress};
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
    match decompress(encoding, &mut input, &mut out, limit) {
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
