//! The transport [`ClientBuilder`](super::ClientBuilder) puts in place of
//! volo-grpc's: it sends the request as volo-grpc's does and reads the
//! response headers without panicking (see the [`client`](super::client)
//! module docs for the inputs it guards against), then hands them to the
//! response's [`RecvStream`](super::RecvStream).
//!
//! Its types are public only so that the builder's `build` bounds can name
//! them; the module is private, so no user can.

use std::marker::PhantomData;
use std::pin::Pin;
use std::task::Context;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue};
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use hyper_util::rt::{TokioExecutor, TokioTimer};
use motore::layer::Layer;
use motore::service::Service;
use pin_project_lite::pin_project;
use volo::net::Address;
use volo::net::dial::{DefaultMakeTransport, MakeTransport};
use volo_grpc::client::MetaService;
use volo_grpc::codec::compression::CompressionEncoding as VoloEncoding;
use volo_grpc::codec::decode::Kind;
use volo_grpc::context::ClientContext;
use volo_grpc::transport::ClientTransport;
use volo_grpc::{RecvEntryMessage, Request, Response, SendEntryMessage};

use super::call_guard::volo_status;
use super::call_scope::with_response_headers;
use super::client_connect::Connector;
use super::metadata;
use super::service::wrap_service;
use crate::PolledFrame;
use crate::call::{AtDeadline, ClientCall, ClientDeadline, request_headers};
use crate::observe;
use crate::status::{Code, Status};

/// What volo-grpc's transport is built from, recorded as the builder's
/// methods are called (volo-grpc keeps its copy private).
#[derive(Clone, Debug)]
pub(super) struct TransportSettings {
    pub(super) stream_window: u32,
    pub(super) connection_window: u32,
    pub(super) adaptive_window: bool,
    pub(super) max_frame_size: u32,
    pub(super) keepalive_interval: Option<Duration>,
    pub(super) keepalive_timeout: Duration,
    pub(super) keepalive_while_idle: bool,
    pub(super) max_concurrent_reset_streams: usize,
    pub(super) max_send_buf_size: usize,
    pub(super) connect_timeout: Option<Duration>,
    pub(super) read_timeout: Option<Duration>,
    pub(super) write_timeout: Option<Duration>,
    pub(super) send_compressions: Vec<VoloEncoding>,
    pub(super) accept_compressions: Option<Vec<VoloEncoding>>,
}

impl Default for TransportSettings {
    /// volo-grpc 0.12's defaults (`client/mod.rs`, `context.rs`).
    fn default() -> Self {
        TransportSettings {
            stream_window: 2 * 1024 * 1024,
            connection_window: 5 * 1024 * 1024,
            adaptive_window: false,
            max_frame_size: 16 * 1024,
            keepalive_interval: None,
            keepalive_timeout: Duration::from_secs(20),
            keepalive_while_idle: false,
            max_concurrent_reset_streams: 10,
            max_send_buf_size: 1024 * 1024,
            connect_timeout: None,
            read_timeout: None,
            write_timeout: None,
            send_compressions: Vec::new(),
            accept_compressions: None,
        }
    }
}
/// The service volo-grpc's inner layers wrap once [`ClientBuilder::build`](super::ClientBuilder::build)
/// replaced the transport.
pub type ShieldedTransport<U> = RestoreBinaryService<MetaService<Transport<U>>>;

type StockTransport<U> = MetaService<ClientTransport<U>>;
/// Put innermost by [`ClientBuilder::build`](super::ClientBuilder::build): drops volo-grpc's transport
/// and puts this module's in its place, under volo-grpc's metadata service.
pub(super) struct TransportLayer<U> {
    settings: TransportSettings,
    _marker: PhantomData<fn(U)>,
}

impl<U> TransportLayer<U> {
    /// The layer that builds a transport from `settings`.
    pub(super) fn new(settings: TransportSettings) -> Self {
        TransportLayer {
            settings,
            _marker: PhantomData,
        }
    }
}

impl<U> Layer<StockTransport<U>> for TransportLayer<U> {
    type Service = ShieldedTransport<U>;

    fn layer(self, _stock: StockTransport<U>) -> Self::Service {
        RestoreBinaryService {
            inner: MetaService::new(Transport::new(self.settings)),
        }
    }
}

/// The response headers a volo-grpc client must not see, moved out of the
/// response by [`Transport`] and put back by [`RestoreBinaryService`].
#[derive(Clone, Debug)]
struct StashedBinary(HeaderMap);

/// Puts the valid binary response headers [`Transport`] took out (so that
/// volo-grpc's metadata service would not panic on them) back into the
/// response's metadata.
#[derive(Clone, Debug)]
pub struct RestoreBinaryService<S> {
    inner: S,
}

wrap_service!(RestoreBinaryService on ClientContext, |this, cx, req| {
    let mut response = this.inner.call(cx, req).await?;
    if let Some(StashedBinary(binary)) = response.extensions_mut().remove() {
        let headers = response.metadata_mut().headers_mut();
        for (name, value) in binary {
            if let Some(name) = name {
                headers.append(name, value);
            }
        }
    }
    Ok(response)
});

/// volo-grpc's client transport, reading the response headers safely.
pub struct Transport<U> {
    http: hyper_util::client::legacy::Client<Connector, RequestBody>,
    send_compression: Option<VoloEncoding>,
    accept_header: Option<HeaderValue>,
    _marker: PhantomData<fn(U)>,
}

/// The request body, failed at the call's deadline when it has one.
type RequestBody = ClientDeadline<observe::Counted<EndAwareBody>>;

pin_project! {
    /// volo-grpc's request body (`StreamBody` of the message stream) that
    /// tells hyper when the stream has ended: a stream whose `size_hint` is
    /// `(0, Some(0))` after a frame (this crate's encoder, once its source
    /// has ended) gets that frame sent with END_STREAM, instead of an empty
    /// DATA frame of its own after it.
    struct EndAwareBody {
        #[pin]
        inner: StreamBody<volo_grpc::BoxStream<'static, Result<Frame<Bytes>, volo_grpc::Status>>>,
    }
}

impl http_body::Body for EndAwareBody {
    type Data = Bytes;
    type Error = volo_grpc::Status;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> PolledFrame<volo_grpc::Status> {
        self.project().inner.poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        futures_core::Stream::size_hint(&self.inner) == (0, Some(0))
    }
}

impl<U> Clone for Transport<U> {
    fn clone(&self) -> Self {
        Transport {
            http: self.http.clone(),
            send_compression: self.send_compression,
            accept_header: self.accept_header.clone(),
            _marker: PhantomData,
        }
    }
}

impl<U> Transport<U> {
    fn new(settings: TransportSettings) -> Self {
        let mut make = DefaultMakeTransport::new();
        make.set_connect_timeout(settings.connect_timeout);
        make.set_read_timeout(settings.read_timeout);
        make.set_write_timeout(settings.write_timeout);
        let http = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
            .timer(TokioTimer::new())
            .http2_only(true)
            .http2_initial_stream_window_size(settings.stream_window)
            .http2_initial_connection_window_size(settings.connection_window)
            .http2_max_frame_size(settings.max_frame_size)
            .http2_adaptive_window(settings.adaptive_window)
            .http2_keep_alive_interval(settings.keepalive_interval)
            .http2_keep_alive_timeout(settings.keepalive_timeout)
            .http2_keep_alive_while_idle(settings.keepalive_while_idle)
            .http2_max_concurrent_reset_streams(settings.max_concurrent_reset_streams)
            .http2_max_send_buf_size(settings.max_send_buf_size)
            .build(Connector::new(make));
        let accept_header = settings
            .accept_compressions
            .as_ref()
            .and_then(|list| list.first().map(|first| (first, list)))
            .and_then(|(first, list)| first.into_accept_encoding_header_value(list));
        Transport {
            http,
            send_compression: settings.send_compressions.first().copied(),
            accept_header,
            _marker: PhantomData,
        }
    }
}

impl<T, U> Service<ClientContext, Request<T>> for Transport<U>
where
    T: SendEntryMessage + Send + 'static,
    U: RecvEntryMessage + 'static,
{
    type Response = Response<U>;
    type Error = volo_grpc::Status;

    async fn call(
        &self,
        cx: &mut ClientContext,
        req: Request<T>,
    ) -> Result<Response<U>, volo_grpc::Status> {
        let target = cx.rpc_info.callee().address().ok_or_else(|| {
            volo_grpc::Status::from(Status::new(Code::Unavailable, "address is required"))
        })?;
        let path = cx.rpc_info.method().clone();
        let (metadata, extensions, message) = req.into_parts();
        let body = EndAwareBody {
            inner: StreamBody::new(message.into_body(self.send_compression)),
        };
        let mut request = http::Request::builder()
            .version(http::Version::HTTP_2)
            .method(http::Method::POST)
            .uri(uri(&target, &path)?)
            .extension(extensions)
            .body(body)
            .map_err(|err| Status::internal(format!("building the request: {err}")))?;
        *request.headers_mut() = request_headers(
            metadata.into_headers(),
            self.send_compression.map(VoloEncoding::into_header_value),
            self.accept_header.clone(),
        );

        let (parts, body) = request.into_parts();
        let (body, attempt) = observe::client_call(&parts, body);
        let (body, mut call) = ClientCall::start(&parts.headers, body);
        let request = http::Request::from_parts(parts, body);
        cx.stats.record_make_transport_start_at();
        // Every error here is the transport's: this transport has no timer.
        let response = match call.response(self.http.request(request), |_| true).await {
            Ok(response) => response,
            Err(AtDeadline::Exceeded(status)) => {
                attempt.end(status.code());
                return Err(status.into());
            }
            Err(AtDeadline::Error(error)) => {
                let status = volo_grpc::Status::from_error(error.into());
                attempt.end(super::code_from_volo(status.code()));
                return Err(status);
            }
        };
        cx.stats.record_make_transport_end_at();

        let (mut parts, body) = response.into_parts();
        if let Err(status) = ClientCall::check_response_headers(&parts.headers) {
            if metadata::has_binary(&parts.headers) {
                crate::observe::panic_shielded("response_binary_metadata", path.as_str());
            }
            attempt.end(status.code());
            return Err(status.into());
        }
        let body = attempt.response(&parts.headers, call.response_body(body));
        let binary = metadata::take_binary(&mut parts.headers);
        // volo-grpc's `Status` is large: boxed while it crosses the scope.
        let method = crate::observe::Method::of(path.as_str());
        let message = with_response_headers(&parts.headers, || {
            crate::observe::with_client_method(method, || {
                U::from_body(
                    Some(path.as_str()),
                    // One conversion: `boxed` would wrap a second one
                    // around errors that are volo-grpc's already.
                    body.map_err(volo_status).boxed_unsync(),
                    Kind::Response(parts.status),
                    None,
                )
                .map_err(Box::new)
            })
        })
        .map_err(|status| *status)?;
        if !binary.is_empty() {
            crate::observe::panic_shielded("response_binary_metadata", path.as_str());
            parts.extensions.insert(StashedBinary(binary));
        }
        let response = http::Response::from_parts(parts, message);
        Ok(Response::from_http(response))
    }
}

fn uri(target: &Address, path: &str) -> Result<http::Uri, Status> {
    let built = match target {
        Address::Ip(ip) => http::Uri::builder()
            .scheme(http::uri::Scheme::HTTP)
            .authority(ip.to_string())
            .path_and_query(path)
            .build(),
        #[allow(unreachable_patterns)]
        _ => {
            return Err(Status::new(
                Code::Unimplemented,
                "grpc-stream-codec's volo client connects to IP addresses only",
            ));
        }
    };
    built.map_err(|err| Status::internal(format!("invalid request URI: {err}")))
}
