//! Binary (`-bin`) request metadata for volo-grpc servers.
//!
//! volo-grpc 0.12.2's server panics (`unreachable!()` in `server/meta.rs`,
//! where it scans request metadata for its own prefixes) on any request that
//! carries binary metadata: the task serving the stream dies and the peer
//! sees `RST_STREAM(CANCEL)`. Other gRPC clients send binary metadata freely
//! (tracing contexts, grpc's interop `custom_metadata` case).

use std::task::{Context, Poll};

use http::{HeaderMap, HeaderName};

/// A request's binary metadata, as sent (values still base64), in the
/// request's extensions after [`BinaryMetadataLayer`] took it out of the
/// headers.
///
/// ```no_run
/// use grpc_stream_codec::volo::BinaryMetadata;
///
/// fn trace_context<T>(req: &volo_grpc::Request<T>) -> Option<&http::HeaderValue> {
///     let BinaryMetadata(binary) = req.extensions().get()?;
///     binary.get("x-trace-bin")
/// }
/// ```
#[derive(Clone, Debug, Default)]
pub struct BinaryMetadata(pub HeaderMap);

/// A tower layer for volo-grpc servers, in front of volo-grpc's metadata
/// scan, that moves every `-bin` request header into a [`BinaryMetadata`]
/// request extension, so such requests are served instead of killing the
/// stream's task. Responses are not touched.
///
/// ```no_run
/// use grpc_stream_codec::volo::BinaryMetadataLayer;
///
/// // volo_grpc::server::Server::new().layer_tower(BinaryMetadataLayer).add_service(..)
/// # let _ = BinaryMetadataLayer;
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct BinaryMetadataLayer;

impl<S> tower_layer::Layer<S> for BinaryMetadataLayer {
    type Service = BinaryMetadataService<S>;

    fn layer(&self, inner: S) -> BinaryMetadataService<S> {
        BinaryMetadataService { inner }
    }
}

/// The service of [`BinaryMetadataLayer`].
#[derive(Clone, Debug)]
pub struct BinaryMetadataService<S> {
    inner: S,
}

impl<S, B> tower_service::Service<http::Request<B>> for BinaryMetadataService<S>
where
    S: tower_service::Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: http::Request<B>) -> S::Future {
        let binary = take_binary(req.headers_mut());
        if !binary.is_empty() {
            req.extensions_mut().insert(BinaryMetadata(binary));
        }
        self.inner.call(req)
    }
}

/// Removes every `-bin` entry from `headers` and returns them, all values
/// of each.
pub(super) fn take_binary(headers: &mut HeaderMap) -> HeaderMap {
    let names: Vec<HeaderName> = headers
        .keys()
        .filter(|name| name.as_str().ends_with("-bin"))
        .cloned()
        .collect();
    let mut binary = HeaderMap::new();
    for name in names {
        for value in headers.get_all(&name) {
            binary.append(name.clone(), value.clone());
        }
        headers.remove(&name);
    }
    binary
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;
    use std::future::{Ready, ready};

    use http::HeaderValue;
    use tower_layer::Layer;
    use tower_service::Service;

    use super::*;

    #[test]
    fn only_binary_entries_move_and_all_their_values_do() {
        let mut headers = HeaderMap::new();
        headers.append("a-bin", HeaderValue::from_static("AQ"));
        headers.append("a-bin", HeaderValue::from_static("Ag"));
        headers.insert("binary", HeaderValue::from_static("x"));
        headers.insert("x-bin-not", HeaderValue::from_static("y"));
        let binary = take_binary(&mut headers);
        let moved: Vec<_> = binary.get_all("a-bin").iter().collect();
        assert_eq!(moved, ["AQ", "Ag"]);
        assert_eq!(binary.len(), 2);
        assert!(!headers.contains_key("a-bin"));
        assert_eq!(headers.len(), 2);
    }

    /// What the inner service saw of a request.
    #[derive(Clone)]
    struct Seen;

    impl Service<http::Request<()>> for Seen {
        type Response = (HeaderMap, Option<BinaryMetadata>);
        type Error = Infallible;
        type Future = Ready<Result<Self::Response, Infallible>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, req: http::Request<()>) -> Self::Future {
            let binary = req.extensions().get::<BinaryMetadata>().cloned();
            ready(Ok((req.headers().clone(), binary)))
        }
    }

    #[test]
    fn the_inner_service_gets_the_entries_as_an_extension() {
        let mut service = BinaryMetadataLayer.layer(Seen);
        let req = http::Request::builder()
            .header("x-trace-bin", "AQID")
            .header("x-plain", "1")
            .body(())
            .unwrap();
        let (headers, binary) = futures_util::FutureExt::now_or_never(service.call(req))
            .unwrap()
            .unwrap();
        assert!(!headers.contains_key("x-trace-bin"));
        assert_eq!(headers["x-plain"], "1");
        assert_eq!(binary.unwrap().0["x-trace-bin"], "AQID");

        // No binary entries: no extension.
        let req = http::Request::builder()
            .header("x-plain", "1")
            .body(())
            .unwrap();
        let (_, binary) = futures_util::FutureExt::now_or_never(service.call(req))
            .unwrap()
            .unwrap();
        assert!(binary.is_none());
    }
}
