//! The Echo service's messages (`proto/echo.proto`) encoded and decoded by
//! hand, and compressed payloads, so the suite's bytes depend on neither
//! adapter nor either framework's codec.

use std::io::Write;

use bytes::Bytes;

use crate::raw_h2::{envelope, put_varint};

/// The receive limit both adapters apply by default (4 MiB).
pub const LIMIT: usize = 4 * 1024 * 1024;

/// The largest `response_size` both example services honour.
pub const MAX_RESPONSE_SIZE: u32 = 4 * 1024 * 1024;

/// An `EchoRequest`: `payload` (field 1), `response_count` (2) and
/// `response_size` (3), zero fields left out as proto3 writes them.
pub fn echo_request(payload: &[u8], response_count: u32, response_size: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 16);
    if !payload.is_empty() {
        out.push(0x0a);
        put_varint(&mut out, payload.len() as u64);
        out.extend_from_slice(payload);
    }
    for (tag, value) in [(0x10u8, response_count), (0x18, response_size)] {
        if value != 0 {
            out.push(tag);
            put_varint(&mut out, value.into());
        }
    }
    out
}

/// An uncompressed envelope holding an `EchoRequest` with this payload.
pub fn request_envelope(payload: &[u8]) -> Vec<u8> {
    envelope(0, &echo_request(payload, 0, 0))
}

/// A decoded `EchoResponse`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EchoResponse {
    /// Field 1.
    pub payload: Vec<u8>,
    /// Field 2.
    pub seq: u32,
    /// Field 3.
    pub total_bytes: u64,
    /// Field 4.
    pub count: u32,
}

/// Decodes an `EchoResponse`; `None` for anything that is not one (unknown
/// fields included: the services send none).
pub fn decode_echo_response(mut bytes: &[u8]) -> Option<EchoResponse> {
    let mut response = EchoResponse::default();
    while !bytes.is_empty() {
        let key = varint(&mut bytes)?;
        match key {
            0x0a => {
                let len = usize::try_from(varint(&mut bytes)?).ok()?;
                let payload = bytes.get(..len)?;
                response.payload = payload.to_vec();
                bytes = &bytes[len..];
            }
            0x10 => response.seq = u32::try_from(varint(&mut bytes)?).ok()?,
            0x18 => response.total_bytes = varint(&mut bytes)?,
            0x20 => response.count = u32::try_from(varint(&mut bytes)?).ok()?,
            _ => return None,
        }
    }
    Some(response)
}

/// Reads one protobuf varint off the front of `bytes`.
fn varint(bytes: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = bytes.split_first()?;
        *bytes = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

/// The envelopes' payloads of a response body, in order; `None` if the
/// body is not whole uncompressed envelopes.
pub fn envelopes(mut body: &[u8]) -> Option<Vec<&[u8]>> {
    let mut payloads = Vec::new();
    while !body.is_empty() {
        if body.len() < 5 || body[0] != 0 {
            return None;
        }
        let len = u32::from_be_bytes([body[1], body[2], body[3], body[4]]) as usize;
        payloads.push(body.get(5..5 + len)?);
        body = &body[5 + len..];
    }
    Some(payloads)
}

/// How many whole uncompressed envelopes a response body holds, or what
/// makes it something else (where, and what was there).
pub fn count_envelopes(body: &[u8]) -> Result<usize, String> {
    let mut offset = 0;
    let mut count = 0;
    while offset < body.len() {
        let rest = &body[offset..];
        if rest.len() < 5 {
            return Err(format!(
                "{count} whole envelope(s), then {} byte(s) of a header at offset {offset} \
                 of {}",
                rest.len(),
                body.len()
            ));
        }
        if rest[0] != 0 {
            return Err(format!("flags {:#04x} at offset {offset}", rest[0]));
        }
        let len = u32::from_be_bytes([rest[1], rest[2], rest[3], rest[4]]) as usize;
        if rest.len() < 5 + len {
            return Err(format!(
                "{count} whole envelope(s), then one declaring {len} bytes with {} at offset \
                 {offset} of {}",
                rest.len() - 5,
                body.len()
            ));
        }
        offset += 5 + len;
        count += 1;
    }
    Ok(count)
}

/// The wire of one ClientStream call whose one `EchoRequest` encodes to
/// exactly `message` bytes: the envelope, and the payload's length.
pub fn sized_request(message: usize) -> (Bytes, usize) {
    let varint_len = |n: usize| (usize::BITS - n.max(1).leading_zeros()).div_ceil(7) as usize;
    let payload_len = (1..=5)
        .map(|v| message - 1 - v)
        .find(|&len| 1 + varint_len(len) + len == message)
        .expect("a payload length that makes the message this size");
    let wire = request_envelope(&vec![0x5a; payload_len]);
    assert_eq!(wire.len(), 5 + message);
    (Bytes::from(wire), payload_len)
}

/// `data` compressed as the `grpc-encoding` `name` says (`gzip`,
/// `deflate`: the zlib format, `zstd`: with its content size and checksum).
pub fn compress(name: &str, data: &[u8]) -> Vec<u8> {
    match name {
        "gzip" => {
            let mut encoder =
                flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
            encoder.write_all(data).expect("gzip in memory");
            encoder.finish().expect("gzip in memory")
        }
        "deflate" => {
            let mut encoder =
                flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
            encoder.write_all(data).expect("zlib in memory");
            encoder.finish().expect("zlib in memory")
        }
        // A checksum, as gzip and zlib always carry: without one, flipped
        // literal bytes decode to other bytes that no decoder can tell.
        "zstd" => zstd_frame(data, true),
        other => panic!("no compressor for {other:?}"),
    }
}

/// A zstd frame; without its content size (as a streaming encoder writes
/// it) when `content_size` is false, so a decoder cannot refuse a bomb from
/// the frame header and must decompress to find out.
pub fn zstd_frame(data: &[u8], content_size: bool) -> Vec<u8> {
    let mut encoder = zstd::stream::Encoder::new(Vec::new(), 19).expect("zstd in memory");
    encoder.include_checksum(true).expect("zstd in memory");
    encoder
        .include_contentsize(content_size)
        .expect("zstd in memory");
    if content_size {
        encoder
            .set_pledged_src_size(Some(data.len() as u64))
            .expect("zstd in memory");
    }
    encoder.write_all(data).expect("zstd in memory");
    encoder.finish().expect("zstd in memory")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_responses_round_trip_by_hand() {
        let request = echo_request(b"hi", 3, 300);
        assert_eq!(request, [0x0a, 2, b'h', b'i', 0x10, 3, 0x18, 0xac, 0x02]);
        let response = [0x0a, 1, 7, 0x10, 5, 0x18, 0x80, 0x01, 0x20, 2];
        assert_eq!(
            decode_echo_response(&response),
            Some(EchoResponse {
                payload: vec![7],
                seq: 5,
                total_bytes: 128,
                count: 2,
            })
        );
        assert_eq!(decode_echo_response(&[0x0a, 5, 1]), None);
    }

    #[test]
    fn a_sized_request_is_that_size() {
        for message in [200, 16_384, 1_000_000, 4_000_000] {
            let (wire, payload) = sized_request(message);
            assert_eq!(wire.len(), message + 5);
            let body = envelopes(&wire).unwrap();
            assert_eq!(body[0].len(), message);
            assert!(payload < message);
        }
    }
}
