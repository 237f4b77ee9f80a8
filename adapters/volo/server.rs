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

use http::{HeaderMap, HeaderName, HeaderValue};
use motore::layer::Layer;
use volo_grpc::context::ServerContext;

use super::service::wrap_service;
use crate::compression::{GRPC_ACCEPT_ENCODING, GRPC_ENCODING, ZLIB_NAME as ZLIB};

const DEFLATE: &str = "deflate";

// Names, not `&str`s: looking up by `&str` parses the name on every call.
static ENCODING: HeaderName = HeaderName::from_static(GRPC_ENCODING);
static ACCEPT_ENCODING: HeaderName = HeaderName::from_static(GRPC_ACCEPT_ENCODING);

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
///
/// [`BinaryMetadataLayer`](super::BinaryMetadataLayer) does the same
/// renaming in the pass over the headers it makes anyway: a server with it
/// needs no `DeflateNameLayer` (behind it, this layer finds nothing left to
/// rename).
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

wrap_service!(DeflateName on ServerContext, |this, cx, mut req| {
    let answer_deflate = rename_request_headers(req.metadata_mut().headers_mut());
    let mut response = this.inner.call(cx, req).await?;
    if answer_deflate {
        rename_response_headers(response.metadata_mut().headers_mut());
    }
    Ok(response)
});

/// Renames `deflate` to `zlib` in a request's `grpc-encoding` and
/// `grpc-accept-encoding`. Returns whether the client accepts `deflate` but
/// not `zlib`, i.e. whether a `zlib` answer must be called `deflate`.
pub(super) fn rename_request_headers(headers: &mut HeaderMap) -> bool {
    // One walk over a few headers costs less than hashing two long names,
    // and most requests name no `deflate` at all: nothing to rename.
    let mut encoding = None;
    let mut accepts_deflate = false;
    for (name, value) in headers.iter() {
        if *name == ENCODING {
            encoding.get_or_insert(value.as_bytes() == DEFLATE.as_bytes());
        } else if *name == ACCEPT_ENCODING {
            accepts_deflate |= value
                .as_bytes()
                .windows(DEFLATE.len())
                .any(|window| window == DEFLATE.as_bytes());
        }
    }
    if encoding == Some(true) {
        headers.insert(ENCODING.clone(), HeaderValue::from_static(ZLIB));
    }
    if !accepts_deflate {
        return false;
    }
    let accepted = headers.get_all(&ACCEPT_ENCODING);
    let mut names: Vec<&str> = Vec::new();
    let mut unreadable = false;
    for value in accepted {
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
            headers.insert(ACCEPT_ENCODING.clone(), value);
        }
        // The names came out of valid header values and are joined by
        // commas, so this does not happen; keep the request as it was.
        Err(_) => return false,
    }
    !says_zlib
}

/// Renames a response's `grpc-encoding: zlib` to `deflate`.
pub(super) fn rename_response_headers(headers: &mut HeaderMap) {
    if headers
        .get(&ENCODING)
        .is_some_and(|value| value.as_bytes() == ZLIB.as_bytes())
    {
        headers.insert(ENCODING.clone(), HeaderValue::from_static(DEFLATE));
    }
}
