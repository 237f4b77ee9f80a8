//! Binary (`-bin`) request metadata for volo-grpc servers.
//!
//! volo-grpc 0.12.2's server panics (`unreachable!()` in `server/meta.rs`,
//! where it scans request metadata for its own prefixes) on any request that
//! carries binary metadata, valid or not: the task serving the stream dies
//! and the peer sees `RST_STREAM` with no status; under `panic = "abort"`
//! the process dies. Other gRPC clients send binary metadata freely (tracing
//! contexts, grpc's interop `custom_metadata` case). The scan runs before
//! the router, so no generated code can step in: the server needs
//! [`BinaryMetadataLayer`] in front of it (`layer_tower`).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use http::{HeaderMap, HeaderName, HeaderValue};
use pin_project_lite::pin_project;
use volo_grpc::body::BoxBody;

use super::call_guard::{Guarded, guard_request};
use super::server::rename_request_headers;
use crate::binary_metadata::decode_binary_header;
use crate::call::{self, read_request_head};
use crate::compression::EncodingSet;
use crate::status::Status;

/// A request's binary metadata, in the request's extensions after
/// [`BinaryMetadataLayer`] took it out of the headers. Every value is valid
/// base64 (the layer refuses a request with any other): the map holds the
/// values as sent, [`get_bin`](Self::get_bin) and
/// [`get_all_bin`](Self::get_all_bin) decode them.
///
/// ```no_run
/// use grpc_stream_codec::volo::BinaryMetadata;
///
/// fn trace_context<T>(req: &volo_grpc::Request<T>) -> Option<Vec<u8>> {
///     req.extensions().get::<BinaryMetadata>()?.get_bin("x-trace-bin")
/// }
/// ```
#[derive(Clone, Debug, Default)]
pub struct BinaryMetadata(pub HeaderMap);

impl BinaryMetadata {
    /// The decoded bytes of the first value of `name`.
    pub fn get_bin(&self, name: &str) -> Option<Vec<u8>> {
        let value = self.0.get(name)?;
        decode_binary_header(value.as_bytes()).ok()
    }

    /// The decoded bytes of every value of `name`, in the order sent.
    pub fn get_all_bin(&self, name: &str) -> Vec<Vec<u8>> {
        self.0
            .get_all(name)
            .iter()
            .filter_map(|value| decode_binary_header(value.as_bytes()).ok())
            .collect()
    }
}

/// A tower layer for volo-grpc servers, in front of volo-grpc's metadata
/// scan (`Server::new().layer_tower(BinaryMetadataLayer)`), that moves every
/// `-bin` request header into a [`BinaryMetadata`] request extension, so
/// such requests are served instead of killing the stream's task. A request
/// with a binary header that is not base64 is answered `internal`
/// ("malformed binary metadata", as grpc-go answers it) without reaching the
/// service, and so is one whose `grpc-timeout` is not 1 to 8 digits and a
/// unit (volo-grpc's opt-in server `TimeoutLayer` overflows on longer ones);
/// one whose `grpc-encoding` this build does not support is answered
/// `unimplemented` with the supported list, as tonic's full framing answers
/// it.
///
/// It also does [`DeflateNameLayer`](super::DeflateNameLayer)'s renaming in
/// the same pass over the headers (gRPC's `deflate` read as volo-grpc's
/// `zlib`, and a response's `zlib` called `deflate` for a client that asked
/// for `deflate` alone), so a server behind it needs no `DeflateNameLayer`.
/// Responses are not touched otherwise.
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

// Over volo-grpc's own body type, the one its server hands tower layers:
// the body reaches the service as it came, with nothing wrapped around it.
impl<S> tower_service::Service<http::Request<BoxBody>> for BinaryMetadataService<S>
where
    S: tower_service::Service<http::Request<BoxBody>, Response = http::Response<BoxBody>>,
{
    type Response = http::Response<BoxBody>;
    type Error = S::Error;
    type Future = BinaryMetadataFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: http::Request<BoxBody>) -> Self::Future {
        // Before volo-grpc sees them: its opt-in server `TimeoutLayer`
        // overflows on a long `grpc-timeout`, and an unknown encoding gets
        // volo-grpc's own words without the list gRPC asks for.
        let head = match read_request_head(req.headers(), EncodingSet::supported()) {
            Ok(head) => head,
            Err(status) => {
                let status = call::refused(req.uri().path(), status);
                return BinaryMetadataFuture::Refused {
                    response: Some(refusal(status)),
                };
            }
        };
        if head.has_binary {
            let binary = take_binary(req.headers_mut());
            crate::observe::panic_shielded("request_binary_metadata", req.uri().path());
            req.extensions_mut().insert(BinaryMetadata(binary));
        }
        // DeflateNameLayer's renaming, here where the headers were read
        // anyway: a request that names no `deflate` is not walked again.
        let answer_deflate = head.names_deflate && rename_request_headers(req.headers_mut());
        let guard = guard_request(&req, head.timeout, answer_deflate);
        BinaryMetadataFuture::Inner {
            inner: Guarded::new(self.inner.call(req), guard),
        }
    }
}

pin_project! {
    /// The future of [`BinaryMetadataService`]: the service's, or the
    /// refusal of a request with malformed binary metadata.
    #[project = Projected]
    pub enum BinaryMetadataFuture<F> {
        /// The inner service's future.
        Inner { #[pin] inner: Guarded<F> },
        /// The `internal` answer, taken on the first poll.
        Refused { response: Option<http::Response<BoxBody>> },
    }
}

impl<F, E> Future for BinaryMetadataFuture<F>
where
    F: Future<Output = Result<http::Response<BoxBody>, E>>,
{
    type Output = Result<http::Response<BoxBody>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            Projected::Inner { inner } => inner.poll(cx),
            Projected::Refused { response } => match response.take() {
                Some(response) => Poll::Ready(Ok(response)),
                // Polled again after it was ready: a broken caller; answer
                // the same rather than panic.
                None => Poll::Ready(Ok(refusal(Status::internal("the request was refused")))),
            },
        }
    }
}

/// Whether the process has warned of a server without the layer.
static WARNED_UNSHIELDED: AtomicBool = AtomicBool::new(false);

/// The warning a server call without [`BinaryMetadataLayer`] logs, once per
/// process: volo-grpc's metadata scan panics on the first `-bin` request
/// header such a server receives.
const UNSHIELDED_WARNING: &str = "grpc-stream-codec: a volo-grpc server call reached \
     the adapter without BinaryMetadataLayer; volo-grpc kills the stream of any request with \
     binary (-bin) metadata. Add it: Server::new().layer_tower(BinaryMetadataLayer)";

/// Logs [`UNSHIELDED_WARNING`] the first time in this process that a
/// server's request stream is made outside a [`BinaryMetadataService`]
/// call. Called where generated code makes a request stream, which on a
/// server runs while volo-grpc serves the call, inside the layer if any.
pub(super) fn warn_unshielded() {
    if !WARNED_UNSHIELDED.swap(true, Ordering::Relaxed) {
        tracing::warn!("{UNSHIELDED_WARNING}");
    }
}

/// A trailers-only response with `status`.
fn refusal(status: Status) -> http::Response<BoxBody> {
    let mut response = http::Response::new(volo_grpc::body::empty_body());
    let headers = response.headers_mut();
    headers.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    status.write_headers(headers);
    response
}

/// Removes every `-bin` entry from `headers` and returns them, all values
/// of each.
pub(super) fn take_binary(headers: &mut HeaderMap) -> HeaderMap {
    let names: Vec<HeaderName> = headers
        .keys()
        .filter(|name| is_binary(name))
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

/// Whether `headers` hold binary (`-bin`) metadata, on which volo-grpc
/// 0.12.2's client panics.
pub(super) fn has_binary(headers: &HeaderMap) -> bool {
    headers.keys().any(is_binary)
}

fn is_binary(name: &HeaderName) -> bool {
    name.as_str().ends_with("-bin")
}
