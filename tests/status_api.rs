//! Tests of `grpc_stream_codec::status` through its public API (moved out of `src/status.rs`).

use bytes::Bytes;
use http::header::{HeaderMap, HeaderValue};
use std::error::Error as StdError;
use std::fmt;

use grpc_stream_codec::status::*;

#[test]
fn status_is_compact() {
    assert!(std::mem::size_of::<Status>() <= 40);
    assert_eq!(
        std::mem::size_of::<Result<(), Status>>(),
        std::mem::size_of::<Status>()
    );
}

#[test]
fn codes_round_trip_and_unknown_values_map_to_unknown() {
    for value in 0..=16 {
        assert_eq!(Code::from_i32(value).as_i32(), value);
    }
    assert_eq!(Code::from_i32(17), Code::Unknown);
    assert_eq!(Code::from_i32(-1), Code::Unknown);
    assert_eq!(Code::from(8), Code::ResourceExhausted);
    assert_eq!(i32::from(Code::Unauthenticated), 16);
}

#[test]
fn every_http_status_maps_per_spec() {
    let table = [
        (400, Code::Internal),
        (401, Code::Unauthenticated),
        (403, Code::PermissionDenied),
        (404, Code::Unimplemented),
        (429, Code::Unavailable),
        (502, Code::Unavailable),
        (503, Code::Unavailable),
        (504, Code::Unavailable),
        (200, Code::Unknown),
        (500, Code::Unknown),
        (418, Code::Unknown),
    ];
    for (http, code) in table {
        assert_eq!(Code::from_http_status(http), code, "HTTP {http}");
    }
    let status = Status::from_http_status(http::StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(status.code(), Code::Unavailable);
    assert!(status.message().contains("503"));
}

#[test]
fn message_percent_encoding_round_trips() {
    let text = "100% done\nnext: ünïcødé ✓ \u{7f}";
    let mut status = Status::new(Code::Aborted, text).to_header_map();
    let encoded = status
        .get(GRPC_MESSAGE)
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    assert!(encoded.contains("100%25 done%0Anext"), "{encoded}");
    assert!(encoded.bytes().all(|b| (0x20..=0x7e).contains(&b)));
    let read = Status::from_headers(std::mem::take(&mut status)).unwrap();
    assert_eq!(read.code(), Code::Aborted);
    assert_eq!(read.message(), text);
}

#[test]
fn details_are_written_unpadded_and_read_padded_or_not() {
    let details = Bytes::from_static(b"ab");
    let headers = Status::new(Code::Internal, "x")
        .with_details(details.clone())
        .to_header_map();
    assert_eq!(headers.get(GRPC_STATUS_DETAILS).unwrap(), "YWI");

    for encoded in ["YWI", "YWI="] {
        let mut headers = HeaderMap::new();
        headers.insert(GRPC_STATUS, HeaderValue::from_static("13"));
        headers.insert(GRPC_STATUS_DETAILS, HeaderValue::from_static(encoded));
        let status = Status::from_header_map(&headers).unwrap();
        assert_eq!(status.details(), b"ab", "{encoded}");
    }
}

#[test]
fn reserved_headers_are_not_metadata() {
    let mut headers = HeaderMap::new();
    headers.insert(GRPC_STATUS, HeaderValue::from_static("5"));
    headers.insert(GRPC_MESSAGE, HeaderValue::from_static("gone"));
    headers.insert("content-type", HeaderValue::from_static("application/grpc"));
    headers.insert("grpc-encoding", HeaderValue::from_static("gzip"));
    headers.insert("x-request-id", HeaderValue::from_static("r1"));
    headers.append("x-multi", HeaderValue::from_static("a"));
    headers.append("x-multi", HeaderValue::from_static("b"));

    for status in [
        Status::from_header_map(&headers).unwrap(),
        Status::from_headers(headers.clone()).unwrap(),
    ] {
        assert_eq!(status.code(), Code::NotFound);
        assert_eq!(status.message(), "gone");
        let metadata = status.metadata().unwrap();
        assert_eq!(metadata.len(), 3);
        assert_eq!(metadata.get("x-request-id").unwrap(), "r1");
        assert_eq!(metadata.get_all("x-multi").iter().count(), 2);
    }
}

#[test]
fn missing_and_invalid_grpc_status() {
    assert!(Status::from_header_map(&HeaderMap::new()).is_none());
    let mut headers = HeaderMap::new();
    headers.insert(GRPC_STATUS, HeaderValue::from_static("abc"));
    assert_eq!(
        Status::from_header_map(&headers).unwrap().code(),
        Code::Unknown
    );
    headers.insert(GRPC_STATUS, HeaderValue::from_static("99"));
    assert_eq!(
        Status::from_header_map(&headers).unwrap().code(),
        Code::Unknown
    );
}

#[test]
fn into_headers_moves_metadata_in_order() {
    let mut metadata = HeaderMap::new();
    metadata.append("x-a", HeaderValue::from_static("1"));
    metadata.append("x-a", HeaderValue::from_static("2"));
    metadata.insert("x-b", HeaderValue::from_static("3"));
    let mut headers = HeaderMap::new();
    Status::new(Code::Unavailable, "later")
        .with_metadata(metadata)
        .into_headers(&mut headers);
    assert_eq!(headers.get(GRPC_STATUS).unwrap(), "14");
    let values: Vec<_> = headers.get_all("x-a").iter().collect();
    assert_eq!(values, ["1", "2"]);
    assert_eq!(headers.get("x-b").unwrap(), "3");
}

#[test]
fn display_debug_and_source() {
    #[derive(Debug)]
    struct Cause;
    impl fmt::Display for Cause {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("disk on fire")
        }
    }
    impl StdError for Cause {}

    let status = Status::from_error(Code::DataLoss, Cause);
    assert_eq!(status.to_string(), "DATA_LOSS: disk on fire");
    assert_eq!(status.source().unwrap().to_string(), "disk on fire");
    assert!(format!("{status:?}").contains("DataLoss"));
    assert_eq!(Status::ok().to_string(), "OK");
    assert!(Status::new(Code::Ok, "").source().is_none());
}
