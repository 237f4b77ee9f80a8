//! `BinaryMetadataLayer` through its public API (moved out of
//! `adapters/volo/metadata.rs`).
#![cfg(feature = "volo")]

use std::convert::Infallible;
use std::future::{Ready, ready};
use std::task::{Context, Poll};

use grpc_stream_codec::status::decode_message;
use grpc_stream_codec::volo::{BinaryMetadata, BinaryMetadataLayer};
use http::{HeaderMap, HeaderValue};
use tower::{Layer, Service};
use volo_grpc::body::BoxBody;

/// What the inner service saw of a request, in its response's
/// extensions.
#[derive(Clone)]
struct Seen;

#[derive(Clone)]
struct SeenRequest(HeaderMap, Option<BinaryMetadata>);

impl Service<http::Request<BoxBody>> for Seen {
    type Response = http::Response<BoxBody>;
    type Error = Infallible;
    type Future = Ready<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<BoxBody>) -> Self::Future {
        let binary = req.extensions().get::<BinaryMetadata>().cloned();
        let mut response = http::Response::new(volo_grpc::body::empty_body());
        response
            .extensions_mut()
            .insert(SeenRequest(req.headers().clone(), binary));
        ready(Ok(response))
    }
}

fn call(req: http::Request<()>) -> http::Response<BoxBody> {
    let mut service = BinaryMetadataLayer.layer(Seen);
    let req = req.map(|()| volo_grpc::body::empty_body());
    futures_util::FutureExt::now_or_never(service.call(req))
        .unwrap()
        .unwrap()
}

fn seen(response: &http::Response<BoxBody>) -> SeenRequest {
    response.extensions().get::<SeenRequest>().unwrap().clone()
}

#[test]
fn the_inner_service_gets_the_entries_as_an_extension() {
    let req = http::Request::builder()
        .header("x-trace-bin", "AQID")
        .header("x-plain", "1")
        .body(())
        .unwrap();
    let SeenRequest(headers, binary) = seen(&call(req));
    assert!(!headers.contains_key("x-trace-bin"));
    assert_eq!(headers["x-plain"], "1");
    let binary = binary.unwrap();
    assert_eq!(binary.0["x-trace-bin"], "AQID");
    assert_eq!(binary.get_bin("x-trace-bin"), Some(vec![1, 2, 3]));

    // No binary entries: no extension.
    let req = http::Request::builder()
        .header("x-plain", "1")
        .body(())
        .unwrap();
    assert!(seen(&call(req)).1.is_none());
}

#[test]
fn a_grpc_timeout_outside_the_spec_is_refused() {
    for (value, served) in [
        ("1S", true),
        ("99999999H", true),
        ("100m", true),
        ("999999999H", false),
        ("18446744073709551615H", false),
        ("1", false),
        ("S", false),
        ("1x", false),
        ("-1S", false),
    ] {
        let req = http::Request::builder()
            .header("grpc-timeout", value)
            .body(())
            .unwrap();
        let response = call(req);
        assert_eq!(
            response.extensions().get::<SeenRequest>().is_some(),
            served,
            "{value}"
        );
        if !served {
            assert_eq!(response.headers()["grpc-status"], "13", "{value}");
        }
    }
}

#[test]
fn a_malformed_entry_is_refused_with_internal_before_the_service() {
    for value in ["%%not*base64%%", "AQ=x", "A"] {
        let req = http::Request::builder()
            .header("x-ok-bin", "AAEC")
            .header("x-hostile-bin", value)
            .body(())
            .unwrap();
        let response = call(req);
        assert!(response.extensions().get::<SeenRequest>().is_none());
        assert_eq!(response.status(), http::StatusCode::OK);
        let headers = response.headers();
        assert_eq!(headers["content-type"], "application/grpc");
        assert_eq!(headers["grpc-status"], "13", "{value}");
        let message = decode_message(headers["grpc-message"].as_bytes());
        assert!(message.contains("malformed binary metadata"), "{message}");
        assert!(message.contains("x-hostile-bin"), "{message}");
    }
}

#[test]
fn only_binary_entries_move_and_all_their_values_do() {
    let mut req = http::Request::new(());
    let headers = req.headers_mut();
    headers.append("a-bin", HeaderValue::from_static("AQ"));
    headers.append("a-bin", HeaderValue::from_static("Ag"));
    headers.insert("binary", HeaderValue::from_static("x"));
    headers.insert("x-bin-not", HeaderValue::from_static("y"));
    let SeenRequest(headers, binary) = seen(&call(req));
    let binary = binary.unwrap();
    let moved: Vec<_> = binary.0.get_all("a-bin").iter().collect();
    assert_eq!(moved, ["AQ", "Ag"]);
    assert_eq!(binary.0.len(), 2);
    assert!(!headers.contains_key("a-bin"));
    assert_eq!(headers.len(), 2);
    assert_eq!(binary.get_bin("a-bin"), Some(vec![1]));
    assert_eq!(binary.get_all_bin("a-bin"), [vec![1], vec![2]]);
    assert_eq!(binary.get_bin("b-bin"), None);
}
