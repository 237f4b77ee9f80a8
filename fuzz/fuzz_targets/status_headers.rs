//! `Status` header parsing on arbitrary header maps: never panics, the
//! borrowed and owned readers agree, and what a status writes it reads back.
#![no_main]

use grpc_stream_codec::status::Status;
use http::{HeaderMap, HeaderName, HeaderValue};
use libfuzzer_sys::fuzz_target;

const NAMES: [&str; 5] = [
    "grpc-status",
    "grpc-message",
    "grpc-status-details-bin",
    "x-meta",
    "x-meta-bin",
];

fuzz_target!(|input: &[u8]| {
    let mut headers = HeaderMap::new();
    // Each entry: one selector byte naming the header, then a value up to a 0 byte.
    for entry in input.split(|&b| b == 0) {
        let Some((&selector, value)) = entry.split_first() else {
            continue;
        };
        let name = HeaderName::from_static(NAMES[selector as usize % NAMES.len()]);
        if let Ok(value) = HeaderValue::from_bytes(value) {
            headers.append(name, value);
        }
    }
    let borrowed = Status::from_header_map(&headers);
    let owned = Status::from_headers(headers.clone());
    match (&borrowed, &owned) {
        (Some(a), Some(b)) => {
            assert_eq!(a.code(), b.code());
            assert_eq!(a.message(), b.message());
            assert_eq!(a.details(), b.details());
            assert_eq!(a.metadata(), b.metadata());
        }
        (None, None) => {}
        _ => panic!("readers disagree on whether there is a status"),
    }
    if let Some(status) = borrowed {
        let written = status.to_header_map();
        let read = Status::from_headers(written).expect("a written status reads back");
        assert_eq!(read.code(), status.code());
        assert_eq!(read.message(), status.message());
        assert_eq!(read.details(), status.details());
        assert_eq!(metadata(&read), metadata(&status));
    }
});

/// Metadata with "none" and "empty" counted as the same.
fn metadata(status: &Status) -> Option<&HeaderMap> {
    status.metadata().filter(|map| !map.is_empty())
}
