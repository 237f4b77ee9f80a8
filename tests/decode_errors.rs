//! Every error of the envelope assembler: its code, its text, and that the
//! assembler parses nothing after it.

use bytes::{Bytes, BytesMut};
use grpc_stream_codec::compression::{Compression, CompressionEncoding};
use grpc_stream_codec::decode::{Decoded, EnvelopeAssembler};
use grpc_stream_codec::envelope::EnvelopeHeader;
use grpc_stream_codec::{
    envelope::Limits,
    status::{Code, Status},
};

fn message(payload: &[u8]) -> Vec<u8> {
    let mut wire = EnvelopeHeader::message(false, payload.len() as u32)
        .to_bytes()
        .to_vec();
    wire.extend_from_slice(payload);
    wire
}

fn trailers_frame(block: &[u8]) -> Vec<u8> {
    let mut wire = EnvelopeHeader::trailers(block.len() as u32)
        .to_bytes()
        .to_vec();
    wire.extend_from_slice(block);
    wire
}

fn gzip(payload: &[u8]) -> Vec<u8> {
    let mut out = BytesMut::new();
    Compression::new(CompressionEncoding::Gzip)
        .compress(&mut &payload[..], &mut out)
        .unwrap();
    let mut wire = EnvelopeHeader::message(true, out.len() as u32)
        .to_bytes()
        .to_vec();
    wire.extend_from_slice(&out);
    wire
}

/// Feeds `wire` in one frame and returns everything decoded before the first
/// error, and the error.
fn run(assembler: &mut EnvelopeAssembler, wire: Vec<u8>) -> (Vec<Decoded>, Status) {
    assembler.push(Bytes::from(wire));
    let mut decoded = Vec::new();
    loop {
        match assembler.next() {
            Ok(Some(item)) => decoded.push(item),
            Ok(None) => match assembler.finish() {
                Ok(()) => panic!("no error; decoded {decoded:?}"),
                Err(status) => return (decoded, status),
            },
            Err(status) => return (decoded, status),
        }
    }
}

fn decoder() -> EnvelopeAssembler {
    EnvelopeAssembler::new(Limits::default(), None)
}

/// The error is terminal: repeated, and later bytes (even a valid message)
/// are never parsed.
fn assert_terminal(assembler: &mut EnvelopeAssembler, status: &Status) {
    assembler.push(Bytes::from(message(b"valid")));
    let again = assembler.next().unwrap_err();
    assert_eq!(
        (again.code(), again.message()),
        (status.code(), status.message())
    );
    let end = assembler.finish().unwrap_err();
    assert_eq!(end.message(), status.message());
}

#[test]
fn reserved_flag_bits_are_internal() {
    for flag in [0x02u8, 0x04, 0x08, 0x10, 0x20, 0x40] {
        let mut assembler = decoder();
        let mut wire = message(b"ok");
        wire.extend_from_slice(&[flag, 0, 0, 0, 1, b'x']);
        let (decoded, err) = run(&mut assembler, wire);
        assert_eq!(decoded, [Decoded::Message(Bytes::from_static(b"ok"))]);
        assert_eq!(err.code(), Code::Internal);
        assert_eq!(
            err.message(),
            format!("protocol error: invalid envelope flags 0x{flag:02x}")
        );
        assert_terminal(&mut assembler, &err);
    }
}

#[test]
fn compressed_flag_without_encoding_is_internal() {
    for encoding in [None, Some(CompressionEncoding::Identity)] {
        let mut assembler = EnvelopeAssembler::new(Limits::default(), encoding);
        let (decoded, err) = run(&mut assembler, gzip(b"hello"));
        assert!(decoded.is_empty());
        assert_eq!(err.code(), Code::Internal);
        assert_eq!(
            err.message(),
            "protocol error: compressed message on a stream without a grpc-encoding"
        );
        assert_terminal(&mut assembler, &err);
    }
}

#[test]
fn over_limit_header_is_resource_exhausted() {
    let mut assembler = EnvelopeAssembler::new(Limits::default().with_max_receive(10), None);
    let (decoded, err) = run(&mut assembler, message(&[0; 11]));
    assert!(decoded.is_empty());
    assert_eq!(err.code(), Code::ResourceExhausted);
    assert_eq!(err.message(), "message size 11 exceeds limit 10");
    assert_terminal(&mut assembler, &err);
}

#[test]
fn limit_counts_payload_bytes() {
    let mut assembler = EnvelopeAssembler::new(Limits::default().with_max_receive(10), None);
    assembler.push(Bytes::from(message(&[1; 10])));
    assert!(matches!(assembler.next(), Ok(Some(Decoded::Message(m))) if m.len() == 10));
    assembler.finish().unwrap();
}

#[test]
fn body_ending_inside_a_header_is_internal() {
    let mut assembler = decoder();
    let mut wire = message(b"ok");
    wire.extend_from_slice(&[0, 0, 0]);
    let (decoded, err) = run(&mut assembler, wire);
    assert_eq!(decoded.len(), 1);
    assert_eq!(err.code(), Code::Internal);
    assert_eq!(
        err.message(),
        "protocol error: body ended inside a message header (3 of 5 bytes)"
    );
    assert_terminal(&mut assembler, &err);
}

#[test]
fn body_ending_inside_a_payload_is_internal() {
    for payload_len in [100usize, 10_000] {
        let mut assembler = decoder();
        let mut wire = message(&vec![1; payload_len]);
        wire.truncate(wire.len() - 1);
        let (decoded, err) = run(&mut assembler, wire);
        assert!(decoded.is_empty());
        assert_eq!(err.code(), Code::Internal);
        assert_eq!(
            err.message(),
            format!(
                "protocol error: body ended inside a message ({} of {payload_len} bytes)",
                payload_len - 1
            )
        );
        assert_terminal(&mut assembler, &err);
    }
}

#[test]
fn an_empty_body_and_a_body_ending_between_messages_are_clean() {
    let mut assembler = decoder();
    assembler.finish().unwrap();
    let mut assembler = decoder();
    assembler.push(Bytes::from(message(b"")));
    assert_eq!(
        assembler.next().unwrap(),
        Some(Decoded::Message(Bytes::new()))
    );
    assert_eq!(assembler.next().unwrap(), None);
    assert!(assembler.is_idle());
    assembler.finish().unwrap();
}

#[test]
fn trailers_above_one_mib_fail_on_their_header() {
    let mut assembler = decoder();
    let header = EnvelopeHeader::trailers(1024 * 1024 + 1).to_bytes();
    let (decoded, err) = run(&mut assembler, header.to_vec());
    assert!(decoded.is_empty());
    assert_eq!(err.code(), Code::ResourceExhausted);
    assert_eq!(
        err.message(),
        "gRPC-Web trailers size 1048577 exceeds limit 1048576"
    );
    assert_terminal(&mut assembler, &err);
}

#[test]
fn trailers_are_parsed_and_end_the_stream() {
    let mut assembler = decoder();
    let mut wire = message(b"ok");
    wire.extend(trailers_frame(
        b"grpc-status: 0\r\ngrpc-message: fine\r\nx-extra: a\r\n",
    ));
    assembler.push(Bytes::from(wire));
    assert!(matches!(assembler.next(), Ok(Some(Decoded::Message(_)))));
    let Ok(Some(Decoded::EndStream(trailers))) = assembler.next() else {
        panic!("trailers expected");
    };
    assert_eq!(trailers["grpc-status"], "0");
    assert_eq!(trailers["grpc-message"], "fine");
    assert_eq!(trailers["x-extra"], "a");
    assert_eq!(assembler.next().unwrap(), None);
    assembler.finish().unwrap();
}

#[test]
fn malformed_trailers_are_internal() {
    let mut assembler = decoder();
    let (decoded, err) = run(
        &mut assembler,
        trailers_frame(b"grpc-status: 0\r\nno colon here\r\n"),
    );
    assert!(decoded.is_empty());
    assert_eq!(err.code(), Code::Internal);
    assert_eq!(
        err.message(),
        "protocol error: malformed gRPC-Web trailer line \"no colon here\""
    );
    assert_terminal(&mut assembler, &err);
}

#[test]
fn data_after_trailers_is_internal() {
    let mut assembler = decoder();
    let mut wire = trailers_frame(b"grpc-status: 0\r\n");
    wire.extend(message(b"late"));
    let (decoded, err) = run(&mut assembler, wire);
    assert!(matches!(&decoded[..], [Decoded::EndStream(_)]));
    assert_eq!(err.code(), Code::Internal);
    assert_eq!(
        err.message(),
        "protocol error: data after the gRPC-Web trailers frame"
    );
    assert_terminal(&mut assembler, &err);
}

#[test]
fn corrupt_compressed_payload_is_internal() {
    let mut assembler = EnvelopeAssembler::new(Limits::default(), Some(CompressionEncoding::Gzip));
    let mut wire = gzip(&[7; 1000]);
    let middle = wire.len() / 2;
    wire[middle] ^= 0xff;
    wire[middle + 1] ^= 0xff;
    let (decoded, err) = run(&mut assembler, wire);
    assert!(decoded.is_empty());
    assert_eq!(err.code(), Code::Internal);
    assert!(
        err.message().starts_with("gzip decompression failed: "),
        "{}",
        err.message()
    );
    assert_terminal(&mut assembler, &err);
}

#[test]
fn truncated_compressed_payload_is_internal() {
    let mut assembler = EnvelopeAssembler::new(Limits::default(), Some(CompressionEncoding::Gzip));
    let mut wire = gzip(&[7; 1000]);
    // Declare a shorter payload: a valid prefix of a gzip stream.
    let short = (wire.len() - 5 - 8) as u32;
    wire[1..5].copy_from_slice(&short.to_be_bytes());
    wire.truncate(5 + short as usize);
    let (_, err) = run(&mut assembler, wire);
    assert_eq!(err.code(), Code::Internal);
    assert!(err.message().starts_with("gzip decompression failed: "));
}

#[test]
fn decompression_bomb_is_resource_exhausted() {
    let limit = 64 * 1024;
    let bomb = gzip(&vec![0; 16 * 1024 * 1024]);
    assert!(
        bomb.len() < limit / 2,
        "the compressed form passes the limit"
    );
    let mut assembler = EnvelopeAssembler::new(
        Limits::default().with_max_receive(limit),
        Some(CompressionEncoding::Gzip),
    );
    let (decoded, err) = run(&mut assembler, bomb);
    assert!(decoded.is_empty());
    assert_eq!(err.code(), Code::ResourceExhausted);
    assert_eq!(err.message(), "message size 65537 exceeds limit 65536");
    assert_terminal(&mut assembler, &err);
}

#[test]
fn compressed_messages_are_decompressed() {
    let mut assembler = EnvelopeAssembler::new(Limits::default(), Some(CompressionEncoding::Gzip));
    let large = vec![9u8; 100_000];
    let mut wire = gzip(b"small");
    wire.extend(gzip(&large));
    assembler.push(Bytes::from(wire));
    assert_eq!(
        assembler.next().unwrap(),
        Some(Decoded::Message(Bytes::from_static(b"small")))
    );
    let Some(Decoded::Message(message)) = assembler.next().unwrap() else {
        panic!("message expected");
    };
    assert_eq!(message, large);
    assert!(message.is_unique());
    assert_eq!(message.try_into_mut().unwrap().capacity(), large.len());
}
