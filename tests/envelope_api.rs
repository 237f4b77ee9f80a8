//! Tests of `grpc_stream_codec::envelope` through its public API (moved out of `src/envelope.rs`).

use grpc_stream_codec::status::Code;

use grpc_stream_codec::envelope::*;

#[test]
fn header_round_trips() {
    for header in [
        EnvelopeHeader::message(false, 0),
        EnvelopeHeader::message(true, 1),
        EnvelopeHeader::message(false, u32::MAX),
        EnvelopeHeader::trailers(42),
    ] {
        assert_eq!(EnvelopeHeader::parse(header.to_bytes()).unwrap(), header);
    }
}

#[test]
fn length_is_big_endian() {
    let header = EnvelopeHeader::parse([0, 0x01, 0x02, 0x03, 0x04]).unwrap();
    assert_eq!(header.len(), 0x0102_0304);
    assert!(!header.is_compressed());
    assert!(!header.is_trailers());
}

#[test]
fn known_flags_are_accepted() {
    assert!(
        EnvelopeHeader::parse([0x01, 0, 0, 0, 0])
            .unwrap()
            .is_compressed()
    );
    assert!(
        EnvelopeHeader::parse([0x80, 0, 0, 0, 0])
            .unwrap()
            .is_trailers()
    );
    let both = EnvelopeHeader::parse([0x81, 0, 0, 0, 0]).unwrap();
    assert!(both.is_trailers() && both.is_compressed());
}

#[test]
fn every_reserved_flag_bit_is_internal() {
    for bit in 1..7 {
        let err = EnvelopeHeader::parse([1 << bit, 0, 0, 0, 0]).unwrap_err();
        assert_eq!(err.code(), Code::Internal, "bit {bit}");
        assert!(err.message().contains("invalid envelope flags"));
    }
}

#[test]
fn limits_default_and_text() {
    let limits = Limits::default();
    assert_eq!(limits.max_receive(), 4 * 1024 * 1024);
    assert_eq!(limits.max_send(), usize::MAX);
    assert!(limits.check_receive(4 * 1024 * 1024).is_ok());
    let err = limits.check_receive(4 * 1024 * 1024 + 1).unwrap_err();
    assert_eq!(err.code(), Code::ResourceExhausted);
    assert_eq!(err.message(), "message size 4194305 exceeds limit 4194304");
    let err = Limits::new().with_max_send(10).check_send(11).unwrap_err();
    assert_eq!(err.message(), "message size 11 exceeds limit 10");
}
