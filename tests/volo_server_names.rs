//! `grpc_stream_codec::volo::DeflateNameLayer`: a volo-grpc server reads a
//! client's `deflate` as its own `zlib` and answers such a client in its
//! words, seen from the route behind the layer and from the client.
#![cfg(feature = "volo")]

use std::sync::{Arc, Mutex};

use grpc_stream_codec::compression::GRPC_ENCODING;
use grpc_stream_codec::volo::DeflateNameLayer;
use http::{HeaderMap, HeaderValue};
use motore::layer::Layer;
use motore::service::Service;
use volo_grpc::context::ServerContext;
use volo_grpc::{Request, Response};

fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.append(*name, HeaderValue::from_static(value));
    }
    map
}

/// The route behind the layer: records the request headers it sees and
/// answers in `answer` (what volo-grpc's codec service names), if set.
#[derive(Clone)]
struct Route {
    seen: Arc<Mutex<Option<HeaderMap>>>,
    answer: Option<&'static str>,
}

impl Service<ServerContext, Request<()>> for Route {
    type Response = Response<()>;
    type Error = volo_grpc::Status;

    async fn call(
        &self,
        _cx: &mut ServerContext,
        req: Request<()>,
    ) -> Result<Response<()>, volo_grpc::Status> {
        *self.seen.lock().unwrap() = Some(req.metadata().headers().clone());
        let mut response = Response::new(());
        if let Some(answer) = self.answer {
            response
                .metadata_mut()
                .headers_mut()
                .insert(GRPC_ENCODING, HeaderValue::from_static(answer));
        }
        Ok(response)
    }
}

/// What the route saw of a request with `pairs`, and the response's
/// `grpc-encoding` when the route answers in `answer`.
async fn through_layer(
    pairs: &[(&'static str, &'static str)],
    answer: Option<&'static str>,
) -> (HeaderMap, Option<HeaderValue>) {
    let seen = Arc::new(Mutex::new(None));
    let route = Route {
        seen: seen.clone(),
        answer,
    };
    let service = DeflateNameLayer.layer(route);
    let mut req = Request::new(());
    *req.metadata_mut().headers_mut() = headers(pairs);
    let response = service
        .call(&mut ServerContext::default(), req)
        .await
        .map_err(|status| status.message().to_owned())
        .unwrap();
    let seen = seen.lock().unwrap().take().expect("the route was called");
    let answered = response.metadata().headers().get(GRPC_ENCODING).cloned();
    (seen, answered)
}

#[tokio::test]
async fn a_deflate_request_is_read_as_zlib_and_answered_as_deflate() {
    let request = [
        ("grpc-encoding", "deflate"),
        ("grpc-accept-encoding", "identity,deflate,gzip"),
    ];
    let (seen, answered) = through_layer(&request, Some("zlib")).await;
    assert_eq!(seen["grpc-encoding"], "zlib");
    assert_eq!(seen["grpc-accept-encoding"], "identity,zlib,gzip");
    assert_eq!(answered.unwrap(), "deflate");
}

#[tokio::test]
async fn accept_lists_split_over_values_and_spaces_are_merged() {
    let request = [
        ("grpc-accept-encoding", "gzip, deflate"),
        ("grpc-accept-encoding", "zstd"),
    ];
    let (seen, _) = through_layer(&request, None).await;
    let accepted: Vec<_> = seen.get_all("grpc-accept-encoding").iter().collect();
    assert_eq!(accepted, ["gzip,zlib,zstd"]);
}

#[tokio::test]
async fn a_client_that_also_says_zlib_gets_zlib() {
    let request = [("grpc-accept-encoding", "deflate,zlib")];
    let (seen, answered) = through_layer(&request, Some("zlib")).await;
    assert_eq!(seen["grpc-accept-encoding"], "zlib");
    assert_eq!(answered.unwrap(), "zlib");
}

#[tokio::test]
async fn volo_names_and_other_encodings_pass_unchanged() {
    for request in [
        &[
            ("grpc-encoding", "zlib"),
            ("grpc-accept-encoding", "gzip,zlib"),
        ][..],
        &[("grpc-encoding", "gzip")][..],
    ] {
        let (seen, answered) = through_layer(request, Some("zlib")).await;
        assert_eq!(seen, headers(request));
        assert_eq!(answered.unwrap(), "zlib");
    }
}

#[tokio::test]
async fn only_a_zlib_answer_to_a_deflate_client_is_renamed() {
    let request = [("grpc-accept-encoding", "deflate")];
    let (_, answered) = through_layer(&request, Some("gzip")).await;
    assert_eq!(answered.unwrap(), "gzip");
    let (_, answered) = through_layer(&request, Some("zlib")).await;
    assert_eq!(answered.unwrap(), "deflate");
}
