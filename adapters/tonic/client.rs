//! Full framing for tonic clients: [`Grpc`] in place of `tonic::client::Grpc`.
//!
//! Generated clients reach it through the [build hook](super::build). The
//! transport below it (a `tonic::transport::Channel`, interceptors, any tower
//! service) is tonic's and works as before.

use std::future::poll_fn;

use futures_core::Stream;
use http::uri::{PathAndQuery, Uri};
use http_body::Body as HttpBody;
use tonic::body::Body;
use tonic::client::GrpcService;
use tonic::codec::CompressionEncoding as TonicEncoding;
use tonic::codegen::StdError;
use tonic::metadata::MetadataMap;

use super::ProstMessageEncoder;
use super::recv::bytes_body;
use super::budget::tagged_budget;
use super::compression::{accept_and_limits, encoding_from_tonic};
use super::framing_codec::FramingCodec;
use super::metadata::merge_metadata;
use super::recv::Streaming;
use super::send::OkItems;
use crate::compression::{
    Compression, CompressionEncoding, EncodingList,
};
use crate::call::{AtDeadline, ClientCall, MISSING_RESPONSE_MESSAGE, request_headers};
use crate::encode::{EncodeBody, EncodeConfig, EncodeStream, default_batch_threshold};
use crate::envelope::Limits;
use crate::observe;

/// Makes gRPC calls over a tonic transport on this crate's framing: the same
/// API as `tonic::client::Grpc`, which generated clients use after the
/// [build hook](super::build) has pointed them here.
///
/// - Request messages go out through [`EncodeStream`]: what the request
///   stream has ready is batched (up to 32 KiB), each message encoded into an
///   exact reservation.
/// - Responses are read by the frame-fed decoder: the receive limit
///   (`max_decoding_message_size`, default 4 MiB) is checked on each header
///   before anything is allocated, decompression is bounded by it, and a
///   response cut inside a message is `internal` — never a silent `OK`.
/// - A trailers-only error answers the call itself; a response without a
///   `grpc-status` is an error.
#[derive(Clone, Debug)]
pub struct Grpc<T> {
    inner: T,
    origin: Uri,
    send: Option<CompressionEncoding>,
    accept: EncodingList,
    limits: Limits,
}

impl<T> Grpc<T> {
    /// A client over `inner`, sending requests to the URI's path only (the
    /// transport supplies scheme and authority, as a `Channel` does).
    pub fn new(inner: T) -> Self {
        Self::with_origin(inner, Uri::default())
    }

    /// A client over `inner` whose requests go to `origin` (scheme,
    /// authority, and a path prefix if it has one).
    pub fn with_origin(inner: T, origin: Uri) -> Self {
        Grpc {
            inner,
            origin,
            send: None,
            accept: EncodingList::empty(),
            limits: Limits::default(),
        }
    }

    /// Compresses requests with `encoding`; the server must accept it.
    pub fn send_compressed(mut self, encoding: TonicEncoding) -> Self {
        self.send = encoding_from_tonic(encoding);
        self
    }

    accept_and_limits! {
        /// Asks the server to compress responses with `encoding`. Calls are an
        /// order of preference: `grpc-accept-encoding` lists the encodings in
        /// the order of the calls, then `identity` (`zstd,gzip,identity` after
        /// `accept_compressed(Zstd)` and `accept_compressed(Gzip)`), as stock
        /// tonic does, and servers answer with the first they may send.
        accept_compressed;
        /// The largest response message accepted, after decompression (default
        /// 4 MiB).
        max_decoding_message_size;
        /// The largest request message sent (default unlimited).
        max_encoding_message_size;
    }

    /// Waits until the transport can take a call.
    pub async fn ready(&mut self) -> Result<(), T::Error>
    where
        T: GrpcService<Body>,
    {
        poll_fn(|cx| self.inner.poll_ready(cx)).await
    }
}

/// The calls, over a transport that takes tonic's request body.
impl<T> Grpc<T>
where
    T: GrpcService<Body>,
    T::ResponseBody: HttpBody + Send + 'static,
    <T::ResponseBody as HttpBody>::Error: Into<StdError>,
{
    /// Makes a unary call.
    pub async fn unary<M1, M2, C>(
        &mut self,
        request: tonic::Request<M1>,
        path: PathAndQuery,
        codec: C,
    ) -> Result<tonic::Response<M2>, tonic::Status>
    where
        C: FramingCodec<Encode = M1, Decode = M2>,
        M1: prost::Message + Send + Sync + 'static,
        M2: prost::Message + Default + Send + Sync + 'static,
    {
        let request = request.map(tonic::codegen::tokio_stream::once);
        self.client_streaming(request, path, codec).await
    }

    /// Makes a client-streaming call.
    pub async fn client_streaming<S, M1, M2, C>(
        &mut self,
        request: tonic::Request<S>,
        path: PathAndQuery,
        codec: C,
    ) -> Result<tonic::Response<M2>, tonic::Status>
    where
        S: Stream<Item = M1> + Send + 'static,
        C: FramingCodec<Encode = M1, Decode = M2>,
        M1: prost::Message + Send + Sync + 'static,
        M2: prost::Message + Default + Send + Sync + 'static,
    {
        let (mut metadata, mut messages, extensions) =
            self.streaming(request, path, codec).await?.into_parts();
        let message = match messages.message().await {
            Ok(Some(message)) => message,
            Ok(None) => return Err(tonic::Status::internal(MISSING_RESPONSE_MESSAGE)),
            Err(mut status) => {
                // The response headers are part of what the call answered.
                merge_metadata(status.metadata_mut(), metadata);
                return Err(status);
            }
        };
        if let Some(trailers) = messages.trailers().await? {
            merge_metadata(&mut metadata, trailers);
        }
        Ok(tonic::Response::from_parts(metadata, message, extensions))
    }

    /// Makes a server-streaming call.
    pub async fn server_streaming<M1, M2, C>(
        &mut self,
        request: tonic::Request<M1>,
        path: PathAndQuery,
        codec: C,
    ) -> Result<tonic::Response<Streaming<M2>>, tonic::Status>
    where
        C: FramingCodec<Encode = M1, Decode = M2>,
        M1: prost::Message + Send + Sync + 'static,
        M2: prost::Message + Default + Send + Sync + 'static,
    {
        let request = request.map(tonic::codegen::tokio_stream::once);
        self.streaming(request, path, codec).await
    }

    /// Makes a bidi-streaming call.
    pub async fn streaming<S, M1, M2, C>(
        &mut self,
        request: tonic::Request<S>,
        path: PathAndQuery,
        _codec: C,
    ) -> Result<tonic::Response<Streaming<M2>>, tonic::Status>
    where
        S: Stream<Item = M1> + Send + 'static,
        C: FramingCodec<Encode = M1, Decode = M2>,
        M1: prost::Message + Send + Sync + 'static,
        M2: prost::Message + Default + Send + Sync + 'static,
    {
        let request = self.http_request::<S, M1>(request, path)?;
        let (parts, body) = request.into_parts();
        let method = observe::Method::of(parts.uri.path());
        let (body, attempt) = observe::client_call(&parts, body);
        let (body, mut call) = ClientCall::start(&parts.headers, body);
        let request = http::Request::from_parts(parts, Body::new(body));
        let sent = async {
            let response = self.inner.call(request).await;
            response.map_err(|error| tonic::Status::from_error(error.into()))
        };
        // tonic's own timer answers with its own status (`CANCELLED`):
        // only what tonic could not name is the transport's.
        let is_transport = |status: &tonic::Status| {
            matches!(status.code(), tonic::Code::Internal | tonic::Code::Unknown)
        };
        let response = match call.response(sent, is_transport).await {
            Ok(response) => response,
            Err(AtDeadline::Error(status)) => {
                attempt.end(crate::status::Code::from_i32(status.code() as i32));
                return Err(status);
            }
            Err(AtDeadline::Exceeded(status)) => {
                attempt.end(status.code());
                return Err(status.into());
            }
        };
        let (parts, body) = response.into_parts();
        if let Err(status) = ClientCall::check_response_headers(&parts.headers) {
            attempt.end(status.code());
            return Err(status.into());
        }
        let body = attempt.response(&parts.headers, call.response_body(bytes_body(body)));
        let messages = Streaming::new_response(
            parts.status,
            &parts.headers,
            body,
            self.limits,
        )
        .observed(method)
        .with_optional_budget(tagged_budget(&parts.extensions));
        Ok(tonic::Response::from_parts(
            MetadataMap::from_headers(parts.headers),
            messages,
            parts.extensions,
        ))
    }

    fn http_request<S, M1>(
        &self,
        request: tonic::Request<S>,
        path: PathAndQuery,
    ) -> Result<http::Request<Body>, tonic::Status>
    where
        S: Stream<Item = M1> + Send + 'static,
        M1: prost::Message + Send + 'static,
    {
        let (metadata, extensions, messages) = request.into_parts();
        let config = EncodeConfig::default()
            .with_batch_threshold(default_batch_threshold())
            .with_compression(self.send.map(Compression::new))
            .with_limits(self.limits);
        let body = EncodeBody::client(EncodeStream::new(
            OkItems::new(messages),
            ProstMessageEncoder::<M1>::default(),
            config,
        ));

        let mut request = http::Request::new(Body::new(body));
        *request.method_mut() = http::Method::POST;
        *request.version_mut() = http::Version::HTTP_2;
        *request.uri_mut() = self.uri(path)?;
        *request.extensions_mut() = extensions;
        *request.headers_mut() = request_headers(
            metadata.into_headers(),
            self.send.map(CompressionEncoding::header_value),
            self.accept.accept_header_value(),
        );
        Ok(request)
    }

    /// The request URI: the origin with `path` appended to its own path.
    fn uri(&self, path: PathAndQuery) -> Result<Uri, tonic::Status> {
        let mut parts = self.origin.clone().into_parts();
        parts.path_and_query = match &parts.path_and_query {
            Some(prefix) if prefix != "/" => {
                let joined = format!("{}{}", prefix.path().trim_end_matches('/'), path);
                Some(joined.parse().map_err(|_| invalid_uri())?)
            }
            _ => Some(path),
        };
        Uri::from_parts(parts).map_err(|_| invalid_uri())
    }
}

fn invalid_uri() -> tonic::Status {
    tonic::Status::internal("the origin and method path do not form a valid URI")
}
