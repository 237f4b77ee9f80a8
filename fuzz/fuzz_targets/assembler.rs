//! `EnvelopeAssembler` fed arbitrary bytes cut into arbitrary frames, checked
//! against a reference decoder that parses the whole body in one pass: both
//! yield the same messages and trailers, and fail (with the same code) on the
//! same input.
//!
//! Input layout:
//! - byte 0, the stream's encoding: `% 5` picks none, gzip, deflate, zstd
//!   or identity; bit `0x80` picks a 64-byte receive limit
//!   instead of 64 KiB (small enough to explore both sides of the limit);
//! - byte 1: `n = byte & 15`, followed by `n` frame-size bytes, used in a
//!   cycle: `size & 0x7f` bytes per frame (0: everything left in one frame);
//!   bit `0x80` pushes the next frame without draining the assembler first;
//! - the rest: the body.
#![no_main]

use bytes::Bytes;
use grpc_stream_codec::compression::{CompressionEncoding, decompress};
use grpc_stream_codec::decode::{Decoded, EnvelopeAssembler};
use grpc_stream_codec::envelope::MAX_TRAILERS_SIZE;
use grpc_stream_codec::{envelope::Limits, status::{Code, Status}};
use http::{HeaderMap, HeaderName, HeaderValue};
use libfuzzer_sys::fuzz_target;

const LIMIT: usize = 64 * 1024;
const SMALL_LIMIT: usize = 64;

fuzz_target!(|input: &[u8]| {
    let [selector, count, rest @ ..] = input else {
        return;
    };
    let mode = match selector % 5 {
        0 => None,
        1 => Some(CompressionEncoding::Gzip),
        2 => Some(CompressionEncoding::Deflate),
        3 => Some(CompressionEncoding::Zstd),
        _ => Some(CompressionEncoding::Identity),
    };
    let limit = if selector & 0x80 != 0 {
        SMALL_LIMIT
    } else {
        LIMIT
    };
    let count = usize::from(count & 15);
    if rest.len() < count {
        return;
    }
    let (sizes, body) = rest.split_at(count);

    let expected = reference(body, mode, limit);
    let actual = assemble(body, sizes, mode, limit);

    let (expected_items, expected_end) = expected;
    let (actual_items, actual_end) = actual;
    assert_eq!(actual_items, expected_items, "decoded items differ");
    match (&actual_end, &expected_end) {
        (Ok(()), Ok(())) => {}
        (Err(actual), Err(expected)) => {
            assert_eq!(actual.code(), *expected, "error codes differ: {actual:?}")
        }
        _ => panic!("outcomes differ: assembler {actual_end:?}, reference {expected_end:?}"),
    }
});

/// Runs the assembler over `body` cut into frames as `sizes` says.
fn assemble(
    body: &[u8],
    sizes: &[u8],
    mode: Option<CompressionEncoding>,
    limit: usize,
) -> (Vec<Decoded>, Result<(), Status>) {
    let limits = Limits::default().with_max_receive(limit);
    let mut assembler = EnvelopeAssembler::new(limits, mode);
    let body = Bytes::copy_from_slice(body);
    let mut items = Vec::new();
    let mut offset = 0;
    let mut turn = 0;
    while offset < body.len() {
        let size_byte = sizes.get(turn % sizes.len().max(1)).copied().unwrap_or(0);
        turn += 1;
        let size = match usize::from(size_byte & 0x7f) {
            0 => body.len() - offset,
            n => n.min(body.len() - offset),
        };
        assembler.push(body.slice(offset..offset + size));
        offset += size;
        // Frames pushed without draining queue up inside the assembler.
        if size_byte & 0x80 != 0 {
            continue;
        }
        if let Err(status) = drain(&mut assembler, &mut items) {
            return (items, Err(terminal(&mut assembler, status)));
        }
    }
    if let Err(status) = drain(&mut assembler, &mut items) {
        return (items, Err(terminal(&mut assembler, status)));
    }
    let idle = assembler.is_idle();
    match assembler.finish() {
        Ok(()) => {
            assert!(idle, "finished cleanly while not idle");
            (items, Ok(()))
        }
        Err(status) => {
            assert!(!idle, "idle but the end is an error: {status:?}");
            (items, Err(terminal(&mut assembler, status)))
        }
    }
}

fn drain(assembler: &mut EnvelopeAssembler, items: &mut Vec<Decoded>) -> Result<(), Status> {
    while let Some(item) = assembler.next()? {
        items.push(item);
    }
    Ok(())
}

/// Checks that an error is final: repeated by `next` and `finish`, and
/// nothing pushed afterwards is parsed.
fn terminal(assembler: &mut EnvelopeAssembler, status: Status) -> Status {
    assembler.push(Bytes::from_static(b"\0\0\0\0\x01x"));
    let again = assembler.next().expect_err("an error is final");
    assert_eq!(
        (again.code(), again.message()),
        (status.code(), status.message())
    );
    let end = assembler.finish().expect_err("an error is final");
    assert_eq!(end.message(), status.message());
    assert!(!assembler.is_idle());
    status
}

/// The reference: parses the whole body at once by the rules of the gRPC
/// wire format, written without any of the assembler's state machine.
fn reference(body: &[u8], mode: Option<CompressionEncoding>, limit: usize) -> (Vec<Decoded>, Result<(), Code>) {
    let mut items = Vec::new();
    let mut pos = 0;
    let mut ended = false;
    while pos < body.len() {
        if ended {
            return (items, Err(Code::Internal));
        }
        let Some(header) = body.get(pos..pos + 5) else {
            return (items, Err(Code::Internal));
        };
        let flags = header[0];
        let len = u32::from_be_bytes([header[1], header[2], header[3], header[4]]) as usize;
        if flags & 0x7e != 0 {
            return (items, Err(Code::Internal));
        }
        let trailers = flags & 0x80 != 0;
        let compressed = flags & 0x01 != 0;
        let bound = if trailers { MAX_TRAILERS_SIZE } else { limit };
        if len > bound {
            return (items, Err(Code::ResourceExhausted));
        }
        let encoding = mode.filter(|&encoding| encoding != CompressionEncoding::Identity);
        let needs_encoding = compressed;
        if needs_encoding && encoding.is_none() {
            return (items, Err(Code::Internal));
        }
        let Some(payload) = body.get(pos + 5..pos + 5 + len) else {
            return (items, Err(Code::Internal));
        };
        pos += 5 + len;

        let plain = if needs_encoding {
            let mut out = Vec::new();
            let encoding = encoding.unwrap_or(CompressionEncoding::Identity);
            if let Err(status) = decompress(encoding, &mut &payload[..], &mut out, bound) {
                return (items, Err(status.code()));
            }
            out
        } else {
            payload.to_vec()
        };
        if trailers {
            match parse_block(&plain) {
                Some(map) => items.push(Decoded::EndStream(Box::new(map))),
                None => return (items, Err(Code::Internal)),
            }
            ended = true;
        } else {
            items.push(Decoded::Message(Bytes::from(plain)));
        }
    }
    (items, Ok(()))
}

/// gRPC-Web trailer lines: `name: value`, ended by `\r\n` or `\n`, empty
/// lines skipped, names lower-cased, both sides trimmed.
fn parse_block(block: &[u8]) -> Option<HeaderMap> {
    let mut map = HeaderMap::new();
    let text = block;
    let mut start = 0;
    while start <= text.len() {
        let end = text[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(text.len(), |i| start + i);
        let mut line = &text[start..end];
        if let [head @ .., b'\r'] = line {
            line = head;
        }
        start = end + 1;
        if line.is_empty() {
            continue;
        }
        let colon = line.iter().position(|&b| b == b':')?;
        let name = HeaderName::from_bytes(line[..colon].trim_ascii()).ok()?;
        let value = HeaderValue::from_bytes(line[colon + 1..].trim_ascii()).ok()?;
        map.append(name, value);
    }
    Some(map)
}
