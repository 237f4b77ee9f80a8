//! Allocation behaviour of `Status`, measured with a counting allocator.

use grpc_stream_codec::status::{Code, Status};
use http::{HeaderMap, HeaderValue};
use test_support::alloc::{CountingAlloc, measure};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::ALWAYS;

#[inline(never)]
fn fails() -> Result<u64, Status> {
    Err(Status::new(Code::NotFound, "no such item"))
}

#[test]
fn new_with_static_text_does_not_allocate() {
    let (status, usage) = measure(|| std::hint::black_box(fails()));
    assert_eq!(usage.allocations, 0, "{usage:?}");
    assert_eq!(status.unwrap_err().code(), Code::NotFound);
}

#[test]
fn owned_text_allocates_only_the_text() {
    let ((), usage) = measure(|| {
        let status = Status::new(Code::Internal, format!("id {}", 7));
        std::hint::black_box(&status);
    });
    assert_eq!(usage.allocations, 1, "{usage:?}");
}

#[test]
fn reading_an_ok_trailer_allocates_nothing() {
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static("0"));
    trailers.insert("x-trace-id", HeaderValue::from_static("abc"));
    let (status, usage) = measure(|| Status::from_header_map(&trailers));
    assert_eq!(usage.allocations, 0, "{usage:?}");
    assert_eq!(status.unwrap().code(), Code::Ok);
}

#[test]
fn from_headers_moves_metadata_without_copying_values() {
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static("7"));
    for index in 0..8 {
        let value = HeaderValue::from_str(&"v".repeat(1000 + index)).unwrap();
        trailers.insert(
            format!("x-big-{index}")
                .parse::<http::HeaderName>()
                .unwrap(),
            value,
        );
    }
    let (status, usage) = measure(|| Status::from_headers(trailers));
    let status = status.unwrap();
    assert_eq!(status.metadata().unwrap().len(), 8);
    // One box for the optional part; the 8 KB of values are moved, not copied.
    assert!(usage.allocated_bytes < 1000, "{usage:?}");
}
