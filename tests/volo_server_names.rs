//! Tests of `grpc_stream_codec::volo` through its public API (moved out of `adapters/volo/server.rs`).
#![cfg(feature = "volo")]

use grpc_stream_codec::compression::GRPC_ENCODING;
use http::{HeaderMap, HeaderValue};
use motore::layer::Layer;
use motore::service::Service;
use volo_grpc::context::ServerContext;
use volo_grpc::{Request, Response};

use grpc_stream_codec::volo::*;

fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.append(*name, HeaderValue::from_static(value));
    }
    map
}

#[test]
fn a_deflate_request_is_read_as_zlib() {
    let mut map = headers(&[
        ("grpc-encoding", "deflate"),
        ("grpc-accept-encoding", "identity,deflate,gzip"),
    ]);
    assert!(rename_request_headers(&mut map));
    assert_eq!(map["grpc-encoding"], "zlib");
    assert_eq!(map["grpc-accept-encoding"], "identity,zlib,gzip");
}

#[test]
fn accept_lists_split_over_values_and_spaces_are_merged() {
    let mut map = headers(&[
        ("grpc-accept-encoding", "gzip, deflate"),
        ("grpc-accept-encoding", "zstd"),
    ]);
    assert!(rename_request_headers(&mut map));
    assert_eq!(
        map.get_all("grpc-accept-encoding")
            .iter()
            .collect::<Vec<_>>(),
        ["gzip,zlib,zstd"]
    );
}

#[test]
fn a_client_that_also_says_zlib_gets_zlib() {
    let mut map = headers(&[("grpc-accept-encoding", "deflate,zlib")]);
    assert!(!rename_request_headers(&mut map));
    assert_eq!(map["grpc-accept-encoding"], "zlib");
}

#[test]
fn volo_names_and_other_encodings_pass_unchanged() {
    let original = headers(&[
        ("grpc-encoding", "zlib"),
        ("grpc-accept-encoding", "gzip,zlib"),
    ]);
    let mut map = original.clone();
    assert!(!rename_request_headers(&mut map));
    assert_eq!(map, original);

    let original = headers(&[("grpc-encoding", "gzip")]);
    let mut map = original.clone();
    assert!(!rename_request_headers(&mut map));
    assert_eq!(map, original);
}

#[test]
fn only_a_zlib_response_is_renamed() {
    let mut map = headers(&[("grpc-encoding", "zlib")]);
    rename_response_headers(&mut map);
    assert_eq!(map["grpc-encoding"], "deflate");
    let mut map = headers(&[("grpc-encoding", "gzip")]);
    rename_response_headers(&mut map);
    assert_eq!(map["grpc-encoding"], "gzip");
}

/// The route behind the layer: checks it sees volo-grpc's name and
/// answers the way volo-grpc's codec service does.
#[derive(Clone)]
struct Route;

impl Service<ServerContext, Request<()>> for Route {
    type Response = Response<()>;
    type Error = volo_grpc::Status;

    async fn call(
        &self,
        _cx: &mut ServerContext,
        req: Request<()>,
    ) -> Result<Response<()>, volo_grpc::Status> {
        let seen = req.metadata().headers().get(GRPC_ENCODING).cloned();
        let mut response = Response::new(());
        if let Some(seen) = seen {
            response
                .metadata_mut()
                .headers_mut()
                .insert(GRPC_ENCODING, seen);
        }
        Ok(response)
    }
}

async fn through_layer(pairs: &[(&'static str, &'static str)]) -> Option<HeaderValue> {
    let service = DeflateNameLayer.layer(Route);
    let mut req = Request::new(());
    *req.metadata_mut().headers_mut() = headers(pairs);
    let response = service
        .call(&mut ServerContext::default(), req)
        .await
        .map_err(|status| status.message().to_owned())
        .unwrap();
    response.metadata().headers().get(GRPC_ENCODING).cloned()
}

#[tokio::test]
async fn the_service_renames_both_ways_for_a_deflate_client_only() {
    let deflate = through_layer(&[
        ("grpc-encoding", "deflate"),
        ("grpc-accept-encoding", "deflate"),
    ])
    .await;
    assert_eq!(deflate.unwrap(), "deflate");

    let zlib = through_layer(&[("grpc-encoding", "zlib"), ("grpc-accept-encoding", "zlib")]).await;
    assert_eq!(zlib.unwrap(), "zlib");
}
