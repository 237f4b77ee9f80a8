//! gRPC's `deflate` for volo-grpc servers.
//!
//! volo-grpc 0.12 reads and writes the zlib format under the name `zlib`,
//! where gRPC (grpcio, grpc-go, tonic, ...) says `deflate`. Its server picks
//! the request's and the response's encodings from the headers before any
//! codec sees the body, so a `deflate` request is refused with
//! `unimplemented` and a `deflate`-only client never gets compressed
//! responses. [`DeflateNameLayer`] sits in front of the router and renames
//! the headers: `deflate` to `zlib` in `grpc-encoding` and
//! `grpc-accept-encoding` on the way in, and the response's `grpc-encoding`
//! back from `zlib` to `deflate` for a client that asked for `deflate`.

use http::{HeaderMap, HeaderValue};
use motore::layer::Layer;
use motore::service::Service;
use volo_grpc::context::ServerContext;
use volo_grpc::{Request, Response};

use crate::compression::{GRPC_ACCEPT_ENCODING, GRPC_ENCODING};

const DEFLATE: &str = "deflate";
const ZLIB: &str = "zlib";

/// A volo-grpc server layer that lets gRPC peers use `deflate`: one line,
/// `.layer_front(DeflateNameLayer)` on the `Server`.
///
/// ```
/// use grpc_stream_codec::volo::DeflateNameLayer;
///
/// let server = volo_grpc::server::Server::new().layer_front(DeflateNameLayer);
/// // ... .add_service(...).run(...).await
/// # let _ = server;
/// ```
///
/// The services behind it must accept (and, to answer compressed, send)
/// volo-grpc's `Zlib` encoding. Peers that say `zlib` (stock volo-grpc
/// clients) are served as before.
#[derive(Clone, Copy, Debug, Default)]
pub struct DeflateNameLayer;

impl<S> Layer<S> for DeflateNameLayer {
    type Service = DeflateName<S>;

    fn layer(self, inner: S) -> DeflateName<S> {
        DeflateName { inner }
    }
}

/// The service [`DeflateNameLayer`] wraps around a volo-grpc server's
/// routes.
#[derive(Clone, Debug)]
pub struct DeflateName<S> {
    inner: S,
}

impl<S, B, R> Service<ServerContext, Request<B>> for DeflateName<S>
where
    S: Service<ServerContext, Request<B>, Response = Response<R>> + Sync,
    B: Send,
    R: Send,
{
    type Response = Response<R>;
    type Error = S::Error;

    async fn call(
        &self,
        cx: &mut ServerContext,
        mut req: Request<B>,
    ) -> Result<Self::Response, Self::Error> {
        let answer_deflate = rename_request_headers(req.metadata_mut().headers_mut());
        let mut response = self.inner.call(cx, req).await?;
        if answer_deflate {
            rename_response_headers(response.metadata_mut().headers_mut());
        }
        Ok(response)
    }
}

/// Renames `deflate` to `zlib` in a request's `grpc-encoding` and
/// `grpc-accept-encoding`. Returns whether the client accepts `deflate` but
/// not `zlib`, i.e. whether a `zlib` answer must be called `deflate`.
pub fn rename_request_headers(headers: &mut HeaderMap) -> bool {
    if headers
        .get(GRPC_ENCODING)
        .is_some_and(|value| value.as_bytes() == DEFLATE.as_bytes())
    {
        headers.insert(GRPC_ENCODING, HeaderValue::from_static(ZLIB));
    }

    let mut names: Vec<&str> = Vec::new();
    let mut unreadable = false;
    for value in headers.get_all(GRPC_ACCEPT_ENCODING) {
        match value.to_str() {
            Ok(value) => names.extend(value.split(',').map(str::trim)),
            // Left alone: volo-grpc ignores what it cannot read anyway.
            Err(_) => unreadable = true,
        }
    }
    let says_deflate = names.contains(&DEFLATE);
    let says_zlib = names.contains(&ZLIB);
    if unreadable || !says_deflate {
        return false;
    }
    let mut renamed: Vec<&str> = Vec::with_capacity(names.len());
    for name in names {
        let name = if name == DEFLATE { ZLIB } else { name };
        if !renamed.contains(&name) {
            renamed.push(name);
        }
    }
    match HeaderValue::try_from(renamed.join(",")) {
        Ok(value) => {
            headers.insert(GRPC_ACCEPT_ENCODING, value);
        }
        // The names came out of valid header values and are joined by
        // commas, so this does not happen; keep the request as it was.
        Err(_) => return false,
    }
    !says_zlib
}

/// Renames a response's `grpc-encoding: zlib` to `deflate`.
pub fn rename_response_headers(headers: &mut HeaderMap) {
    if headers
        .get(GRPC_ENCODING)
        .is_some_and(|value| value.as_bytes() == ZLIB.as_bytes())
    {
        headers.insert(GRPC_ENCODING, HeaderValue::from_static(DEFLATE));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

        let zlib =
            through_layer(&[("grpc-encoding", "zlib"), ("grpc-accept-encoding", "zlib")]).await;
        assert_eq!(zlib.unwrap(), "zlib");
    }
}
