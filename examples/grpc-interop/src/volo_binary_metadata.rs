//! Binary request metadata for volo-grpc servers.
//!
//! volo-grpc 0.12.2's server panics (`unreachable!()` in
//! `server/meta.rs`, where it scans request metadata for its own prefixes)
//! on any request carrying binary (`-bin`) metadata: the task serving the
//! stream dies and the peer sees `RST_STREAM(CANCEL)`. grpc clients send
//! binary metadata freely (custom_metadata sends
//! `x-grpc-test-echo-trailing-bin`). [`BinaryMetadataLayer`], a tower layer
//! in front of that scan (`Server::layer_tower`), moves every `-bin` entry
//! from the request headers into a [`BinaryMetadata`] request extension,
//! where handlers and volo layers find it; the response side is not
//! affected.

use std::task::{Context, Poll};

use http::{HeaderMap, HeaderName};

/// The request's binary metadata, as sent (values still base64).
#[derive(Clone, Debug, Default)]
pub struct BinaryMetadata(pub HeaderMap);

/// `Server::new().layer_tower(BinaryMetadataLayer)`: see the module docs.
#[derive(Clone, Copy, Debug, Default)]
pub struct BinaryMetadataLayer;

impl<S> tower::Layer<S> for BinaryMetadataLayer {
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

impl<S, B> tower::Service<http::Request<B>> for BinaryMetadataService<S>
where
    S: tower::Service<http::Request<B>>,
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

/// Removes every `-bin` entry from `headers` and returns them.
pub fn take_binary(headers: &mut HeaderMap) -> HeaderMap {
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
    use http::HeaderValue;

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
}
