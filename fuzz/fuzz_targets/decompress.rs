//! Decompression of arbitrary bytes with a limit: never panics, never writes
//! or reserves past the limit, and round-trips what it accepts.
#![no_main]

use grpc_stream_codec::compression::{Compression, CompressionEncoding, decompress};
use libfuzzer_sys::fuzz_target;

const LIMIT: usize = 64 * 1024;

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
    let mut out = Vec::new();
    match decompress(encoding, &mut &payload[..], &mut out, LIMIT) {
        Ok(()) => {
            assert!(out.len() <= LIMIT);
            // What was accepted compresses and decompresses back to itself.
            let mut again = bytes::BytesMut::new();
            Compression::new(encoding)
                .compress(&mut &out[..], &mut again)
                .expect("compress");
            let mut back = Vec::new();
            decompress(encoding, &mut &again[..], &mut back, LIMIT).expect("round trip");
            assert_eq!(back, out);
        }
        Err(status) => {
            assert!(out.is_empty(), "a failed call leaves the output as it was");
            assert!(!status.message().is_empty());
        }
    }
    assert!(out.capacity() <= LIMIT, "capacity {}", out.capacity());
});
