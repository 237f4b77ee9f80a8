//! Tests of `grpc_stream_codec::volo` through its public API (moved out of `adapters/volo/status.rs`).
#![cfg(feature = "volo")]

use bytes::Bytes;
use grpc_stream_codec::status::{Code, Status};

use http::HeaderValue;

use grpc_stream_codec::volo::*;

#[test]
fn codes_round_trip() {
    for value in 0..=16 {
        let code = Code::from_i32(value);
        assert_eq!(code_to_volo(code) as i32, value);
        assert_eq!(code_from_volo(code_to_volo(code)), code);
    }
}

#[test]
fn into_volo_moves_everything() {
    let mut metadata = http::HeaderMap::new();
    metadata.insert("x-key", HeaderValue::from_static("v"));
    let status = Status::new(Code::ResourceExhausted, "too big")
        .with_details(Bytes::from_static(b"\x01\x02"))
        .with_metadata(metadata);
    let volo: volo_grpc::Status = status.into();
    assert_eq!(volo.code(), volo_grpc::Code::ResourceExhausted);
    assert_eq!(volo.message(), "too big");
    assert_eq!(volo.details(), b"\x01\x02");
    assert_eq!(volo.metadata().get("x-key").unwrap(), "v");
}

#[test]
fn from_volo_moves_metadata_out() {
    let mut volo = volo_grpc::Status::with_details(
        volo_grpc::Code::NotFound,
        "gone",
        Bytes::from_static(b"d"),
    );
    volo.metadata_mut().insert("x-key", "v".parse().unwrap());
    let status = Status::from(volo);
    assert_eq!(status.code(), Code::NotFound);
    assert_eq!(status.message(), "gone");
    assert_eq!(status.details(), b"d");
    assert_eq!(status.metadata().unwrap().get("x-key").unwrap(), "v");
}

#[test]
fn a_plain_status_from_volo_has_no_boxed_part() {
    let status = Status::from(volo_grpc::Status::internal("x"));
    assert!(status.metadata().is_none());
    assert!(status.details().is_empty());
}
