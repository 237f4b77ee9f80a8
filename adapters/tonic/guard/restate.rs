//! tonic's own receive-limit refusals, restated as the guard's.
//!
//! A server guard set by hand (`Server::builder().layer(..)`, which sees no
//! service's tonic limits) may sit above a service's
//! `max_decoding_message_size`. A message between the two passes the guard
//! and tonic refuses it in its own words: `OUT_OF_RANGE` "Error, decoded
//! message length too large: found N bytes, the limit is: M bytes", or, for a
//! compressed message, `RESOURCE_EXHAUSTED` "Error decompressing: size limit,
//! of M bytes, exceeded while decompressing message". The guard rewrites
//! either, in the response headers (a trailers-only answer) or in its
//! trailers, to its own `RESOURCE_EXHAUSTED` "message size N exceeds limit
//! M", so a peer sees one refusal whichever of the two limits was lower.
//!
//! Only these two texts are touched: a status a handler makes up itself is
//! forwarded as it is.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http::HeaderMap;
use http::header::HeaderValue;
use http_body::{Body, Frame};
use http_body_util::BodyExt;

use super::BoxError;
use crate::Code;
use crate::envelope::too_large;
use crate::status::{decode_message, encode_message};

const GRPC_STATUS: &str = "grpc-status";
const GRPC_MESSAGE: &str = "grpc-message";

/// tonic's refusal of a declared length above its limit (`OUT_OF_RANGE`).
const DECLARED_PREFIX: &str = "Error, decoded message length too large: found ";
/// tonic's refusal of a message that decompresses past its limit
/// (`RESOURCE_EXHAUSTED`).
const DECOMPRESSED_PREFIX: &str = "Error decompressing: size limit, of ";

/// Rewrites a tonic receive-limit status in `headers` (response headers or
/// trailers) to the guard's; leaves anything else alone.
pub(super) fn restate(headers: &mut HeaderMap) {
    let Some(code) = headers.get(GRPC_STATUS) else {
        return;
    };
    let code = match code.to_str().ok().and_then(|c| c.parse::<i32>().ok()) {
        Some(code) => Code::from_i32(code),
        None => return,
    };
    if !matches!(code, Code::OutOfRange | Code::ResourceExhausted) {
        return;
    }
    let Some(message) = headers.get(GRPC_MESSAGE) else {
        return;
    };
    let Some((size, limit)) = tonic_refusal(code, &decode_message(message.as_bytes())) else {
        return;
    };
    let status = too_large(size, limit);
    headers.insert(
        GRPC_STATUS,
        HeaderValue::from(Code::ResourceExhausted as i32),
    );
    headers.insert(GRPC_MESSAGE, encode_message(status.message()));
}

/// The message size and limit of one of tonic's receive-limit refusals.
///
/// tonic stops decompressing at the first byte past its limit, so that is
/// the size known for a compressed message (as with the guard's own check,
/// where the size is how far decompression got).
fn tonic_refusal(code: Code, message: &str) -> Option<(usize, usize)> {
    match code {
        Code::OutOfRange => {
            let rest = message.strip_prefix(DECLARED_PREFIX)?;
            let (size, rest) = rest.split_once(" bytes, the limit is: ")?;
            let limit = rest.strip_suffix(" bytes")?;
            Some((size.parse().ok()?, limit.parse().ok()?))
        }
        Code::ResourceExhausted => {
            let rest = message.strip_prefix(DECOMPRESSED_PREFIX)?;
            let limit: usize = rest
                .strip_suffix(" bytes, exceeded while decompressing message")?
                .parse()
                .ok()?;
            Some((limit.checked_add(1)?, limit))
        }
        _ => None,
    }
}

/// Restates the status in a response body's trailers frame.
fn restate_trailers(frame: Frame<Bytes>) -> Frame<Bytes> {
    match frame.into_trailers() {
        Ok(mut trailers) => {
            restate(&mut trailers);
            Frame::trailers(trailers)
        }
        Err(data) => data,
    }
}

pin_project_lite::pin_project! {
    /// The future of [`RequestGuard`](super::RequestGuard): the inner
    /// service's response, with tonic's receive-limit refusals restated as
    /// the guard's when the request was gRPC.
    pub struct RequestFuture<F> {
        #[pin]
        inner: F,
        grpc: bool,
    }
}

impl<F> RequestFuture<F> {
    pub(super) fn new(inner: F, grpc: bool) -> Self {
        Self { inner, grpc }
    }
}

impl<F, ResBody, E> std::future::Future for RequestFuture<F>
where
    F: std::future::Future<Output = Result<http::Response<ResBody>, E>>,
    ResBody: Body<Data = Bytes> + Send + 'static,
    ResBody::Error: Into<BoxError>,
{
    type Output = Result<http::Response<tonic::body::Body>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let mut response = ready!(this.inner.poll(cx))?;
        if !*this.grpc {
            return Poll::Ready(Ok(response.map(tonic::body::Body::new)));
        }
        restate(response.headers_mut());
        Poll::Ready(Ok(response.map(|body| {
            tonic::body::Body::new(body.map_frame(restate_trailers))
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(code: &str, message: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(GRPC_STATUS, HeaderValue::from_str(code).unwrap());
        headers.insert(GRPC_MESSAGE, encode_message(message));
        headers
    }

    fn status_of(headers: &HeaderMap) -> (String, String) {
        (
            headers[GRPC_STATUS].to_str().unwrap().to_owned(),
            decode_message(headers[GRPC_MESSAGE].as_bytes()),
        )
    }

    #[test]
    fn tonic_declared_length_refusal_becomes_the_guards() {
        let mut headers = headers(
            "11",
            "Error, decoded message length too large: found 5242885 bytes, the limit is: 4194304 bytes",
        );
        restate(&mut headers);
        assert_eq!(
            status_of(&headers),
            (
                "8".to_owned(),
                "message size 5242885 exceeds limit 4194304".to_owned()
            )
        );
    }

    #[test]
    fn tonic_decompression_refusal_becomes_the_guards() {
        let mut headers = headers(
            "8",
            "Error decompressing: size limit, of 4194304 bytes, exceeded while decompressing message",
        );
        restate(&mut headers);
        assert_eq!(
            status_of(&headers),
            (
                "8".to_owned(),
                "message size 4194305 exceeds limit 4194304".to_owned()
            )
        );
    }

    #[test]
    fn other_statuses_pass_unchanged() {
        for (code, message) in [
            // A handler's own OUT_OF_RANGE.
            ("11", "seq 12 is past the end"),
            // tonic's text under another code.
            (
                "13",
                "Error, decoded message length too large: found 5 bytes, the limit is: 4 bytes",
            ),
            // tonic's text, cut short.
            (
                "11",
                "Error, decoded message length too large: found 5 bytes",
            ),
            ("0", ""),
            ("not a code", "x"),
        ] {
            let mut restated = headers(code, message);
            restate(&mut restated);
            assert_eq!(restated, headers(code, message), "{code} {message}");
        }
    }

    #[test]
    fn headers_without_a_status_pass_unchanged() {
        let mut headers = HeaderMap::new();
        headers.insert("content-type", HeaderValue::from_static("application/grpc"));
        let before = headers.clone();
        restate(&mut headers);
        assert_eq!(headers, before);
    }
}
