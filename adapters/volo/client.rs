//! The client the build hook gives generated volo-grpc clients: volo-grpc's
//! `ClientBuilder` with a transport that reads what the peer sends without
//! panicking, and that hands the response headers to the adapter's
//! [`RecvStream`](super::RecvStream).
//!
//! volo-grpc 0.12.2's client transport and its metadata service parse the
//! response headers before any layer sees them, and three peer inputs panic
//! the calling task there (or abort the process under `panic = "abort"`):
//!
//! - any binary (`-bin`) response header (`client/meta.rs`, `unreachable!()`);
//! - a trailers-only response whose `grpc-status-details-bin` is not base64
//!   (`status.rs`, `.expect` in `Status::from_header_map`).
//!
//! Both run below every layer a user can add, so the hook rewrites
//! `::volo_grpc::client::ClientBuilder` in the generated `*ClientBuilder::new`
//! to [`ClientBuilder`], which builds volo-grpc's client (every layer, load
//! balancer and option as before) with one layer put innermost at `build()`:
//! it replaces volo-grpc's transport with this module's, which
//!
//! - answers a trailers-only response with the status this crate reads
//!   from its headers (an invalid `grpc-status-details-bin` is `internal`),
//! - refuses a binary response header that is not base64 with `internal`
//!   (as grpc-go does) and keeps valid ones in the response's metadata, where
//!   `metadata().get_bin(..)` decodes them,
//! - gives the response's headers to the adapter's `RecvStream`, so a
//!   trailers-only `OK` (grpcio's and grpc-go's answer to a call with no
//!   messages) ends the stream `OK` with no layer added by the user,
//!
//! and otherwise does what volo-grpc's does (same HTTP/2 settings, timeouts,
//! compression headers, and volo-grpc's own metadata service around it).
//!
//! Limits: it dials IP addresses only (a Unix-socket `Address` fails the
//! call with `unimplemented`); TLS is not forwarded
//! ([`ClientBuilder::into_volo`] gives volo-grpc's builder back); settings are
//! taken from the builder, so a `CallOpt` that changes a call's compression
//! or connect/read/write timeouts is not seen (volo-grpc keeps those fields
//! private).

use std::future::Future;
use std::io;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::header::{CONTENT_TYPE, TE};
use http::{HeaderMap, HeaderValue};
use http_body::Frame;
use http_body_util::StreamBody;
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use motore::layer::{Layer, Stack};
use motore::service::Service;
use pin_project_lite::pin_project;
use volo::FastStr;
use volo::net::Address;
use volo::net::dial::{DefaultMakeTransport, MakeTransport};
use volo_grpc::body::boxed;
use volo_grpc::client::MetaService;
use volo_grpc::codec::compression::CompressionEncoding as VoloEncoding;
use volo_grpc::codec::decode::Kind;
use volo_grpc::context::ClientContext;
use volo_grpc::transport::ClientTransport;
use volo_grpc::{RecvEntryMessage, Request, Response, SendEntryMessage};

use super::client_compression::with_response_headers;
use super::metadata;
use crate::compression::{GRPC_ACCEPT_ENCODING, GRPC_ENCODING};
use crate::status::{Code, Status};

/// volo-grpc's `ClientBuilder` as generated clients get it after the
/// [build hook](super::build): the same methods, and a transport that no
/// response header can panic (see the [module docs](self)).
///
/// Generated code creates it (`EchoClientBuilder::new("echo")`); nothing in
/// a user's code names it.
pub struct ClientBuilder<IL, OL, C, LB, T, U> {
    inner: volo_grpc::client::ClientBuilder<IL, OL, C, LB, T, U>,
    settings: TransportSettings,
}

/// What volo-grpc's transport is built from, recorded as the builder's
/// methods are called (volo-grpc keeps its copy private).
#[derive(Clone, Debug)]
struct TransportSettings {
    stream_window: u32,
    connection_window: u32,
    adaptive_window: bool,
    max_frame_size: u32,
    keepalive_interval: Option<Duration>,
    keepalive_timeout: Duration,
    keepalive_while_idle: bool,
    max_concurrent_reset_streams: usize,
    max_send_buf_size: usize,
    connect_timeout: Option<Duration>,
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
    send_compressions: Vec<VoloEncoding>,
    accept_compressions: Option<Vec<VoloEncoding>>,
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

impl<C, T, U>
    ClientBuilder<
        motore::layer::Identity,
        motore::layer::Identity,
        C,
        volo_grpc::layer::loadbalance::LbConfig<
            volo::loadbalance::random::WeightedRandomBalance<FastStr>,
            volo_grpc::client::dns::DnsResolver,
        >,
        T,
        U,
    >
{
    /// `volo_grpc::client::ClientBuilder::new`, as generated code calls it.
    pub fn new(service_client: C, service_name: impl AsRef<str>) -> Self {
        ClientBuilder {
            inner: volo_grpc::client::ClientBuilder::new(service_client, service_name),
            settings: TransportSettings::default(),
        }
    }
}

/// Methods that return the builder unchanged: forwarded (the argument
/// converted as volo-grpc converts it), and recorded where the transport
/// needs the value.
macro_rules! forward {
    ($($(#[$doc:meta])* fn $name:ident($arg:ident: $ty:ty) $(=> $field:ident $(= $wrap:ident)?)?;)*) => {
        $(
            $(#[$doc])*
            pub fn $name(mut self, $arg: impl Into<$ty>) -> Self {
                let $arg: $ty = $arg.into();
                $( self.settings.$field = $($wrap)?($arg.clone()); )?
                self.inner = self.inner.$name($arg);
                self
            }
        )*
    };
}

/// Methods that change a type parameter: forwarded.
macro_rules! forward_typed {
    ($($(#[$doc:meta])* fn $name:ident<$new:ident>($arg:ident: $ty:ty) -> <$($out:ty),*>;)*) => {
        $(
            $(#[$doc])*
            pub fn $name<$new>(self, $arg: $ty) -> ClientBuilder<$($out),*> {
                ClientBuilder {
                    inner: self.inner.$name($arg),
                    settings: self.settings,
                }
            }
        )*
    };
}

impl<IL, OL, C, LB, T, U, DISC>
    ClientBuilder<IL, OL, C, volo_grpc::layer::loadbalance::LbConfig<LB, DISC>, T, U>
{
    forward_typed! {
        /// volo-grpc's `load_balance`.
        fn load_balance<NLB>(load_balance: NLB)
            -> <IL, OL, C, volo_grpc::layer::loadbalance::LbConfig<NLB, DISC>, T, U>;
        /// volo-grpc's `discover`.
        fn discover<NDISC>(discover: NDISC)
            -> <IL, OL, C, volo_grpc::layer::loadbalance::LbConfig<LB, NDISC>, T, U>;
    }
}

impl<IL, OL, C, LB, T, U> ClientBuilder<IL, OL, C, LB, T, U> {
    forward! {
        /// volo-grpc's `rpc_timeout`.
        fn rpc_timeout(timeout: Option<Duration>);
        /// volo-grpc's `http2_init_stream_window_size`.
        fn http2_init_stream_window_size(size: u32) => stream_window;
        /// volo-grpc's `http2_init_connection_window_size`.
        fn http2_init_connection_window_size(size: u32) => connection_window;
        /// volo-grpc's `http2_adaptive_window`.
        fn http2_adaptive_window(enabled: bool) => adaptive_window;
        /// volo-grpc's `http2_max_frame_size`.
        fn http2_max_frame_size(size: u32) => max_frame_size;
        /// volo-grpc's `http2_keepalive_interval`.
        fn http2_keepalive_interval(interval: Option<Duration>) => keepalive_interval;
        /// volo-grpc's `http2_keepalive_timeout`.
        fn http2_keepalive_timeout(timeout: Duration) => keepalive_timeout;
        /// volo-grpc's `http2_keepalive_while_idle`.
        fn http2_keepalive_while_idle(enabled: bool) => keepalive_while_idle;
        /// volo-grpc's `http2_max_concurrent_reset_streams`.
        fn http2_max_concurrent_reset_streams(max: usize) => max_concurrent_reset_streams;
        /// volo-grpc's `http2_max_send_buf_size`.
        fn http2_max_send_buf_size(max: usize) => max_send_buf_size;
        /// volo-grpc's `connect_timeout`.
        fn connect_timeout(timeout: Duration) => connect_timeout = Some;
        /// volo-grpc's `read_timeout`.
        fn read_timeout(timeout: Duration) => read_timeout = Some;
        /// volo-grpc's `write_timeout`.
        fn write_timeout(timeout: Duration) => write_timeout = Some;
        /// volo-grpc's `send_compressions`: the first is used.
        fn send_compressions(config: Vec<VoloEncoding>) => send_compressions;
        /// volo-grpc's `accept_compressions`.
        fn accept_compressions(config: Vec<VoloEncoding>) => accept_compressions = Some;
    }

    /// volo-grpc's `caller_name`.
    pub fn caller_name(mut self, name: impl AsRef<str>) -> Self {
        self.inner = self.inner.caller_name(name);
        self
    }

    /// volo-grpc's own builder, for what this one does not forward (e.g.
    /// `tls_config` when volo-grpc's TLS feature is on): the client it
    /// builds runs on volo-grpc's transport, with the panics and the
    /// trailers-only gap this module's transport closes (add
    /// [`ClientCompressionLayer`](super::ClientCompressionLayer) there).
    pub fn into_volo(self) -> volo_grpc::client::ClientBuilder<IL, OL, C, LB, T, U> {
        self.inner
    }

    /// volo-grpc's `address`: the client skips discovery and load balancing.
    pub fn address<A: Into<Address>>(mut self, target: A) -> Self {
        self.inner = self.inner.address(target);
        self
    }

    forward_typed! {
        /// volo-grpc's `mk_load_balance`.
        fn mk_load_balance<NLB>(mk_load_balance: NLB) -> <IL, OL, C, NLB, T, U>;
        /// volo-grpc's `layer_inner`: `layer` runs after the inner layers
        /// added before it (the transport stays innermost).
        fn layer_inner<Inner>(layer: Inner) -> <Stack<Inner, IL>, OL, C, LB, T, U>;
        /// volo-grpc's `layer_inner_front`.
        fn layer_inner_front<Inner>(layer: Inner) -> <Stack<IL, Inner>, OL, C, LB, T, U>;
        /// volo-grpc's `layer_outer`.
        fn layer_outer<Outer>(layer: Outer) -> <IL, Stack<Outer, OL>, C, LB, T, U>;
        /// volo-grpc's `layer_outer_front`.
        fn layer_outer_front<Outer>(layer: Outer) -> <IL, Stack<OL, Outer>, C, LB, T, U>;
    }
}

/// The service volo-grpc's inner layers wrap once [`ClientBuilder::build`]
/// replaced the transport.
pub type ShieldedTransport<U> = RestoreBinaryService<MetaService<Transport<U>>>;

type StockTransport<U> = MetaService<ClientTransport<U>>;

impl<IL, OL, C, LB, T, U> ClientBuilder<IL, OL, C, LB, T, U>
where
    C: volo::client::MkClient<
            volo_grpc::Client<
                motore::service::BoxCloneService<
                    ClientContext,
                    Request<T>,
                    Response<U>,
                    volo_grpc::Status,
                >,
            >,
        >,
    LB: volo::loadbalance::MkLbLayer,
    LB::Layer: Layer<IL::Service>,
    <LB::Layer as Layer<IL::Service>>::Service:
        Service<ClientContext, Request<T>, Response = Response<U>> + 'static + Send + Clone + Sync,
    <<LB::Layer as Layer<IL::Service>>::Service as Service<ClientContext, Request<T>>>::Error:
        Into<volo_grpc::Status>,
    IL: Layer<ShieldedTransport<U>>,
    IL::Service:
        Service<ClientContext, Request<T>, Response = Response<U>> + 'static + Send + Clone + Sync,
    <IL::Service as Service<ClientContext, Request<T>>>::Error: Into<volo_grpc::Status>,
    OL:
        Layer<
            motore::service::BoxCloneService<
                ClientContext,
                Request<T>,
                Response<U>,
                <<LB::Layer as Layer<IL::Service>>::Service as Service<
                    ClientContext,
                    Request<T>,
                >>::Error,
            >,
        >,
    OL::Service:
        Service<ClientContext, Request<T>, Response = Response<U>> + 'static + Send + Clone + Sync,
    <OL::Service as Service<ClientContext, Request<T>>>::Error: Send + Into<volo_grpc::Status>,
    T: SendEntryMessage + Send + 'static,
    U: RecvEntryMessage + Send + 'static,
{
    /// Builds the client, as volo-grpc's `build` does, on this module's
    /// transport.
    pub fn build(self) -> C::Target {
        let transport = TransportLayer {
            settings: self.settings,
            _marker: PhantomData,
        };
        self.inner.layer_inner(transport).build()
    }
}

/// Put innermost by [`ClientBuilder::build`]: drops volo-grpc's transport
/// and puts this module's in its place, under volo-grpc's metadata service.
struct TransportLayer<U> {
    settings: TransportSettings,
    _marker: PhantomData<fn(U)>,
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

impl<S, T, U> Service<ClientContext, Request<T>> for RestoreBinaryService<S>
where
    S: Service<ClientContext, Request<T>, Response = Response<U>> + Sync,
    T: Send,
    U: Send,
{
    type Response = Response<U>;
    type Error = S::Error;

    async fn call(&self, cx: &mut ClientContext, req: Request<T>) -> Result<Response<U>, S::Error> {
        let mut response = self.inner.call(cx, req).await?;
        if let Some(StashedBinary(binary)) = response.extensions_mut().remove() {
            let headers = response.metadata_mut().headers_mut();
            for (name, value) in binary {
                if let Some(name) = name {
                    headers.append(name, value);
                }
            }
        }
        Ok(response)
    }
}

/// volo-grpc's client transport, reading the response headers safely.
pub struct Transport<U> {
    http: hyper_util::client::legacy::Client<Connector, RequestBody>,
    send_compression: Option<VoloEncoding>,
    accept_header: Option<HeaderValue>,
    _marker: PhantomData<fn(U)>,
}

type RequestBody = EndAwareBody;

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

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, volo_grpc::Status>>> {
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
            .build(Connector { make });
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
        *request.headers_mut() = metadata.into_headers();
        let headers = request.headers_mut();
        headers.insert(TE, HeaderValue::from_static("trailers"));
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
        if let Some(send) = self.send_compression {
            headers.insert(GRPC_ENCODING, send.into_header_value());
        }
        if let Some(accept) = &self.accept_header {
            headers.insert(GRPC_ACCEPT_ENCODING, accept.clone());
        }

        cx.stats.record_make_transport_start_at();
        let response = self
            .http
            .request(request)
            .await
            .map_err(|err| volo_grpc::Status::from_error(err.into()))?;
        cx.stats.record_make_transport_end_at();

        let (mut parts, body) = response.into_parts();
        // A trailers-only status first: its `grpc-status-details-bin` is one
        // of the binary headers taken out below.
        if let Some(status) = Status::from_header_map(&parts.headers)
            && status.code() != Code::Ok
        {
            return Err(status.into());
        }
        let binary = take_binary(&mut parts.headers)?;
        // volo-grpc's `Status` is its error type; it is not ours to shrink.
        #[allow(clippy::result_large_err)]
        let message = with_response_headers(&parts.headers, || {
            U::from_body(
                Some(path.as_str()),
                boxed(body),
                Kind::Response(parts.status),
                None,
            )
        })?;
        if !binary.is_empty() {
            parts.extensions.insert(StashedBinary(binary));
        }
        let response = http::Response::from_parts(parts, message);
        Ok(Response::from_http(response))
    }
}

/// Takes every `-bin` header out of `headers`; one whose value is not
/// base64 fails the call with `internal`, as grpc-go does.
fn take_binary(headers: &mut HeaderMap) -> Result<HeaderMap, Status> {
    let binary = metadata::take_binary(headers);
    match metadata::first_malformed(&binary) {
        Some(name) => Err(Status::internal(metadata::malformed_message(&name))),
        None => Ok(binary),
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

/// Connects to the request's authority with volo's transport maker.
#[derive(Clone)]
struct Connector {
    make: DefaultMakeTransport,
}

impl tower_service::Service<http::Uri> for Connector {
    type Response = ConnectedIo;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<ConnectedIo>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        let make = self.make.clone();
        Box::pin(async move {
            let addr = uri
                .authority()
                .and_then(|authority| authority.as_str().parse::<std::net::SocketAddr>().ok())
                .ok_or_else(|| {
                    io::Error::new(io::ErrorKind::InvalidInput, "authority must be an IP:port")
                })?;
            let conn = motore::service::UnaryService::call(&make, Address::Ip(addr)).await?;
            Ok(ConnectedIo {
                io: TokioIo::new(conn),
            })
        })
    }
}

pin_project! {
    /// A connection made by [`Connector`], as hyper reads and writes it.
    struct ConnectedIo {
        #[pin]
        io: TokioIo<volo::net::conn::Conn>,
    }
}

impl Connection for ConnectedIo {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

impl hyper::rt::Read for ConnectedIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        hyper::rt::Read::poll_read(self.project().io, cx, buf)
    }
}

impl hyper::rt::Write for ConnectedIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        hyper::rt::Write::poll_write(self.project().io, cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        hyper::rt::Write::poll_flush(self.project().io, cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        hyper::rt::Write::poll_shutdown(self.project().io, cx)
    }

    // Forwarded so h2 writes a frame and the body bytes it chains to it in
    // one `writev`: without, it writes each on its own (three or four
    // `sendto` per call where one `writev` does).
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        hyper::rt::Write::poll_write_vectored(self.project().io, cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        hyper::rt::Write::is_write_vectored(&self.io)
    }
}
