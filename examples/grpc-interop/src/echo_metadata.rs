//! The metadata echo of the interop servers: `x-grpc-test-echo-initial`
//! comes back in the response headers and `x-grpc-test-echo-trailing-bin`
//! in the trailers, for every method. A layer around the service, as
//! grpc's own interop servers do it with interceptors, so the handlers stay
//! about payloads and the trailers checked are the framing's own, with one
//! entry added.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue};
use http_body::{Body, Frame};
use http_body_util::BodyExt;

use crate::spec::{ECHO_INITIAL, ECHO_TRAILING_BIN};
use crate::volo_binary_metadata::BinaryMetadata;

/// The two echoed values of one request.
#[derive(Clone, Debug, Default)]
struct Echo {
    initial: Option<HeaderValue>,
    trailing: Option<HeaderValue>,
}

impl Echo {
    fn from_request(headers: &HeaderMap) -> Echo {
        Echo {
            initial: headers.get(ECHO_INITIAL).cloned(),
            trailing: headers.get(ECHO_TRAILING_BIN).cloned(),
        }
    }

    /// On volo-grpc the binary entries were moved to an extension first
    /// (see [`crate::volo_binary_metadata`]).
    fn from_volo_request<B>(req: &volo_grpc::Request<B>) -> Echo {
        let mut echo = Echo::from_request(req.metadata().headers());
        if let Some(BinaryMetadata(binary)) = req.extensions().get() {
            echo.trailing = echo
                .trailing
                .or_else(|| binary.get(ECHO_TRAILING_BIN).cloned());
        }
        echo
    }

    /// Puts the initial value in `headers`, and the trailing one too when
    /// the response is trailers-only (its status already in the headers).
    /// Returns what is left for the body's trailers.
    fn apply(self, headers: &mut HeaderMap) -> Option<HeaderValue> {
        if let Some(initial) = self.initial {
            headers.insert(ECHO_INITIAL, initial);
        }
        match self.trailing {
            Some(trailing) if headers.contains_key("grpc-status") => {
                headers.insert(ECHO_TRAILING_BIN, trailing);
                None
            }
            trailing => trailing,
        }
    }
}

/// `body` with `trailing` (if any) added to its trailers frame.
pub fn echo_trailers<B>(
    body: B,
    mut trailing: Option<HeaderValue>,
) -> impl Body<Data = Bytes, Error = B::Error> + Send + 'static
where
    B: Body<Data = Bytes> + Send + 'static,
{
    body.map_frame(move |frame| match frame.into_trailers() {
        Ok(mut trailers) => {
            if let Some(trailing) = trailing.take() {
                trailers.insert(ECHO_TRAILING_BIN, trailing);
            }
            Frame::trailers(trailers)
        }
        Err(frame) => frame,
    })
}

/// The echo for a tonic server, around the service it wraps:
/// `Server::builder().layer(tower::layer::layer_fn(TonicEcho))`.
#[derive(Clone, Debug)]
pub struct TonicEcho<S>(pub S);

impl<S, B> tower::Service<http::Request<B>> for TonicEcho<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<tonic::body::Body>>,
    S::Future: Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let echo = Echo::from_request(req.headers());
        let response = self.0.call(req);
        Box::pin(async move {
            let mut response = response.await?;
            let trailing = echo.apply(response.headers_mut());
            Ok(response.map(|inner| tonic::body::Body::new(echo_trailers(inner, trailing))))
        })
    }
}

/// The echo for a volo-grpc server, around the service it wraps:
/// `Server::new().layer_front(volo::layer::layer_fn(VoloEcho))`, with
/// [`crate::volo_binary_metadata::BinaryMetadataLayer`] in front.
#[derive(Clone, Debug)]
pub struct VoloEcho<S>(pub S);

impl<S, B> volo::Service<volo_grpc::context::ServerContext, volo_grpc::Request<B>> for VoloEcho<S>
where
    S: volo::Service<
            volo_grpc::context::ServerContext,
            volo_grpc::Request<B>,
            Response = volo_grpc::Response<volo_grpc::body::BoxBody>,
        > + Sync,
    B: Send,
{
    type Response = volo_grpc::Response<volo_grpc::body::BoxBody>;
    type Error = S::Error;

    async fn call(
        &self,
        cx: &mut volo_grpc::context::ServerContext,
        req: volo_grpc::Request<B>,
    ) -> Result<Self::Response, Self::Error> {
        let echo = Echo::from_volo_request(&req);
        let mut response = self.0.call(cx, req).await?;
        let trailing = echo.apply(response.metadata_mut().headers_mut());
        Ok(response.map(|inner| volo_grpc::body::boxed(echo_trailers(inner, trailing))))
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    fn request_headers() -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(ECHO_INITIAL, HeaderValue::from_static("hello"));
        headers.insert(ECHO_TRAILING_BIN, HeaderValue::from_static("q6ur"));
        headers
    }

    #[tokio::test]
    async fn trailing_value_joins_the_bodys_trailers() {
        let mut trailers = HeaderMap::new();
        trailers.insert("grpc-status", HeaderValue::from_static("0"));
        let frames: Vec<Result<Frame<Bytes>, std::convert::Infallible>> = vec![
            Ok(Frame::data(Bytes::from_static(b"abc"))),
            Ok(Frame::trailers(trailers)),
        ];
        let inner = http_body_util::StreamBody::new(futures::stream::iter(frames));
        let mut headers = HeaderMap::new();
        let trailing = Echo::from_request(&request_headers()).apply(&mut headers);
        assert_eq!(headers[ECHO_INITIAL], "hello");
        assert!(!headers.contains_key(ECHO_TRAILING_BIN));
        let collected = echo_trailers(inner, trailing).collect().await.unwrap();
        let trailers = collected.trailers().cloned().unwrap();
        assert_eq!(trailers[ECHO_TRAILING_BIN], "q6ur");
        assert_eq!(trailers["grpc-status"], "0");
        assert_eq!(collected.to_bytes(), &b"abc"[..]);
    }

    #[test]
    fn a_trailers_only_answer_gets_both_in_its_headers() {
        let mut headers = HeaderMap::new();
        headers.insert("grpc-status", HeaderValue::from_static("2"));
        let left = Echo::from_request(&request_headers()).apply(&mut headers);
        assert!(left.is_none());
        assert_eq!(headers[ECHO_INITIAL], "hello");
        assert_eq!(headers[ECHO_TRAILING_BIN], "q6ur");
    }
}
