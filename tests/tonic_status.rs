//! Tests of `grpc_stream_codec::tonic` through its public API (moved out of `adapters/tonic/status.rs`).
#![cfg(feature = "tonic")]

use grpc_stream_codec::status::{Code, Status};
use tonic::metadata::MetadataMap;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue};

fn metadata() -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.append("x-request-id", HeaderValue::from_static("r-1"));
    headers.append("x-multi", HeaderValue::from_static("a"));
    headers.append("x-multi", HeaderValue::from_static("b"));
    headers.append("trace-bin", HeaderValue::from_static("AAEC"));
    headers
}

#[test]
fn every_code_maps_both_ways() {
    for value in 0..=16 {
        let ours = Status::new(Code::from_i32(value), "m");
        let theirs = tonic::Status::from(ours);
        assert_eq!(theirs.code() as i32, value);
        let back = Status::from(theirs);
        assert_eq!(back.code().as_i32(), value);
    }
}

#[test]
fn ours_to_tonic_carries_message_details_and_metadata() {
    let ours = Status::new(Code::ResourceExhausted, "quota: 100% used")
        .with_details(Bytes::from_static(b"\x08\x01"))
        .with_metadata(metadata());
    let theirs = tonic::Status::from(ours);
    assert_eq!(theirs.code(), tonic::Code::ResourceExhausted);
    assert_eq!(theirs.message(), "quota: 100% used");
    assert_eq!(theirs.details(), b"\x08\x01");
    let map = theirs.metadata();
    assert_eq!(map.get("x-request-id").unwrap(), "r-1");
    let multi: Vec<_> = map.get_all("x-multi").iter().collect();
    assert_eq!(multi, ["a", "b"]);
    assert_eq!(
        map.get_bin("trace-bin").unwrap().to_bytes().unwrap(),
        &[0, 1, 2][..]
    );
}

#[test]
fn tonic_to_ours_carries_message_details_and_metadata() {
    let theirs = tonic::Status::with_details_and_metadata(
        tonic::Code::Unavailable,
        "try later",
        Bytes::from_static(b"\x01\x02\x03"),
        MetadataMap::from_headers(metadata()),
    );
    let ours = Status::from(theirs);
    assert_eq!(ours.code(), Code::Unavailable);
    assert_eq!(ours.message(), "try later");
    assert_eq!(ours.details(), b"\x01\x02\x03");
    assert_eq!(ours.metadata().unwrap(), &metadata());
}

#[test]
fn empty_parts_stay_empty() {
    let ours = Status::from(tonic::Status::not_found(""));
    assert_eq!(ours.code(), Code::NotFound);
    assert_eq!(ours.message(), "");
    assert!(ours.details().is_empty());
    assert!(ours.metadata().is_none());
    let theirs = tonic::Status::from(Status::new(Code::Aborted, ""));
    assert!(theirs.details().is_empty());
    assert!(theirs.metadata().is_empty());
}
