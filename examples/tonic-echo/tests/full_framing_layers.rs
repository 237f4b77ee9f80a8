//! Everything at tonic's tower and service layer keeps working when the Echo
//! service and client run on grpc-stream-codec's full framing: interceptors
//! (server and client), `Routes` with tonic-health and a second Echo beside
//! the full-framing one, tonic-web (gRPC-Web over HTTP/1.1), `grpc-timeout`
//! deadlines and `Server::timeout`, and client cancellation (the server's
//! request stream ends, no task or memory is left behind). Real tonic servers
//! and clients over 127.0.0.1; every check runs against stock tonic too, in
//! the same test, so a difference between the two shows.

#[path = "support/raw.rs"]
mod raw;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes};
use http::HeaderMap;
use http_body_util::{BodyExt, Full};
use prost::Message;
use test_support::alloc::CountingAlloc;
use test_support::settle::settle_live_bytes;
use tokio::net::TcpListener;
use tokio::sync::{Notify, RwLock, RwLockReadGuard, RwLockWriteGuard, mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_stream::wrappers::{ReceiverStream, TcpListenerStream};
use tokio_stream::{Stream, StreamExt};
use tonic::body::Body;
use tonic::metadata::MetadataMap;
use tonic::server::NamedService;
use tonic::service::Routes;
use tonic::transport::{Channel, Endpoint, Server};
use tonic::{Code, Request, Response, Status};
use tonic_echo::adapter::{EchoRequest, EchoResponse};
use tonic_echo::{
    ClientStack, EchoClient, EchoService, FAIL_AFTER, FAIL_DETAIL, ResponseStream, check_bidi,
    check_client_stream, check_server_stream, check_unary, full, stock,
};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tower::Service;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::ALWAYS;

/// Every test holds this: shared by most, alone by the one that counts
/// process-wide live bytes, so no other test allocates while it measures.
static MEASURING: RwLock<()> = RwLock::const_new(());

async fn shared() -> RwLockReadGuard<'static, ()> {
    MEASURING.read().await
}

fn exclusive() -> RwLockWriteGuard<'static, ()> {
    MEASURING.blocking_write()
}

/// Which generated code a server and client run: stock tonic, or the same
/// code rewritten onto grpc-stream-codec's full framing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Arm {
    Stock,
    Full,
}

const ARMS: [Arm; 2] = [Arm::Stock, Arm::Full];

impl Arm {
    fn client_stack(self) -> ClientStack {
        match self {
            Arm::Stock => ClientStack::Stock,
            Arm::Full => ClientStack::Full,
        }
    }
}

/// `add_service` of the arm's generated Echo server wrapping `$service`,
/// built with `$ctor` (`new` or `with_interceptor`) from `$args`.
macro_rules! add_echo {
    ($arm:expr, $builder:expr, $ctor:ident($($args:expr),*)) => {
        match $arm {
            Arm::Stock => $builder.add_service(stock::echo_server::EchoServer::$ctor($($args),*)),
            Arm::Full => $builder.add_service(full::echo_server::EchoServer::$ctor($($args),*)),
        }
    };
}

/// Runs `$body` with `$client` bound to the arm's generated Echo client,
/// built with `$ctor` (`new` or `with_interceptor`) from `$args`.
macro_rules! with_stub {
    ($arm:expr, $ctor:ident($($args:expr),*), |$client:ident| $body:expr) => {
        match $arm {
            Arm::Stock => {
                #[allow(unused_mut)]
                let mut $client = stock::echo_client::EchoClient::$ctor($($args),*);
                $body
            }
            Arm::Full => {
                #[allow(unused_mut)]
                let mut $client = full::echo_client::EchoClient::$ctor($($args),*);
                $body
            }
        }
    };
}

async fn bind() -> (TcpListener, SocketAddr) {
    tonic_echo::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap()
}

fn incoming(listener: TcpListener) -> TcpListenerStream {
    TcpListenerStream::new(listener)
}

async fn channel(addr: SocketAddr) -> Channel {
    Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap()
}

/// Fails a test that would otherwise hang; never a speed assertion.
async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), future)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer in 30 s (hung)"))
}

// ---------------------------------------------------------------------------
// The probe: an Echo service that reports what its handlers saw.

/// Metadata that makes a probe handler wait until its call is dropped.
const WAIT: &str = "x-wait";
/// Metadata the client interceptor adds.
const CLIENT_TAG: &str = "x-client";
/// Metadata the server interceptor adds for the handler.
const CHECKED: &str = "x-checked";
const TOKEN: &str = "Bearer let-me-in";

/// What the server interceptor leaves in the request's extensions.
#[derive(Clone, Debug)]
struct Checked(&'static str);

/// What the probe's handlers saw and how their request streams ended. Fixed
/// counters only, so recording allocates nothing the memory check would see.
#[derive(Default)]
struct ProbeState {
    /// Request-stream readers started, and finished (stream ended or failed).
    readers_started: AtomicUsize,
    readers_finished: AtomicUsize,
    /// Readers whose stream ended cleanly, and errors by code.
    clean_ends: AtomicUsize,
    errors: [AtomicUsize; 17],
    /// Waiting handlers dropped by the server (deadline or cancellation).
    waits_dropped: AtomicUsize,
    /// A client-streaming reader got its first message.
    first_message: Notify,
    /// How the last reader's stream ended: a clean end, or an error's code.
    last_end: Mutex<Option<Result<(), Code>>>,
}

impl ProbeState {
    fn record(&self, end: &Result<(), Status>) {
        *self.last_end.lock().unwrap() = Some(end.as_ref().map(|_| ()).map_err(|s| s.code()));
        match end {
            Ok(()) => self.clean_ends.fetch_add(1, Ordering::SeqCst),
            Err(status) => self.errors[status.code() as usize].fetch_add(1, Ordering::SeqCst),
        };
        self.readers_finished.fetch_add(1, Ordering::SeqCst);
    }

    fn errors_with(&self, code: Code) -> usize {
        self.errors[code as usize].load(Ordering::SeqCst)
    }

    fn error_total(&self) -> usize {
        self.errors.iter().map(|n| n.load(Ordering::SeqCst)).sum()
    }
}

#[derive(Clone, Default)]
struct Probe {
    state: Arc<ProbeState>,
}

/// Counts a drop into `counter`.
struct DropCount(Arc<ProbeState>);

impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.waits_dropped.fetch_add(1, Ordering::SeqCst);
    }
}

impl Probe {
    /// What a handler saw: the token, the interceptors' metadata and the
    /// server interceptor's extension.
    fn seen<T>(request: &Request<T>) -> String {
        let value = |name| {
            request
                .metadata()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("-")
                .to_owned()
        };
        let extension = request.extensions().get::<Checked>().map_or("-", |c| c.0);
        format!(
            "authorization={};{CLIENT_TAG}={};{CHECKED}={};extension={extension}",
            value("authorization"),
            value(CLIENT_TAG),
            value(CHECKED),
        )
    }

    /// Waits until dropped if the request asks for it.
    async fn maybe_wait<T>(&self, request: &Request<T>) {
        if request.metadata().get(WAIT).is_some() {
            let _guard = DropCount(self.state.clone());
            std::future::pending::<()>().await;
        }
    }

    async fn unary(&self, request: Request<EchoRequest>) -> Result<Response<EchoResponse>, Status> {
        self.maybe_wait(&request).await;
        Ok(Response::new(EchoResponse {
            payload: Bytes::from(Probe::seen(&request)),
            ..EchoResponse::default()
        }))
    }

    /// Reads the request stream in a task of its own, so its end is seen
    /// even when the server drops the handler's future on cancellation.
    async fn client_stream<St>(
        &self,
        request: Request<St>,
    ) -> Result<Response<EchoResponse>, Status>
    where
        St: Stream<Item = Result<EchoRequest, Status>> + Send + Unpin + 'static,
    {
        self.maybe_wait(&request).await;
        let seen = Probe::seen(&request);
        let mut requests = request.into_inner();
        let state = self.state.clone();
        let (done, result) = oneshot::channel();
        state.readers_started.fetch_add(1, Ordering::SeqCst);
        tokio::spawn(async move {
            let (mut count, mut total_bytes) = (0u32, 0u64);
            let end = loop {
                match requests.next().await {
                    Some(Ok(request)) => {
                        count += 1;
                        total_bytes += request.payload.len() as u64;
                        if count == 1 {
                            state.first_message.notify_one();
                        }
                    }
                    Some(Err(status)) => break Err(status),
                    None => break Ok(()),
                }
            };
            state.record(&end);
            let _ = done.send(end.map(|()| EchoResponse {
                payload: Bytes::from(seen),
                count,
                total_bytes,
                ..EchoResponse::default()
            }));
        });
        let response = result
            .await
            .map_err(|_| Status::internal("the reader ended without an answer"))??;
        Ok(Response::new(response))
    }

    /// Echoes each request from a reader task of its own, which keeps
    /// reading after the response side is gone, to see how the stream ends.
    fn bidi<St>(&self, request: Request<St>) -> ResponseStream
    where
        St: Stream<Item = Result<EchoRequest, Status>> + Send + Unpin + 'static,
    {
        let mut requests = request.into_inner();
        let state = self.state.clone();
        let (responses, stream) = mpsc::channel(16);
        state.readers_started.fetch_add(1, Ordering::SeqCst);
        tokio::spawn(async move {
            let mut seq = 0;
            let end = loop {
                match requests.next().await {
                    Some(Ok(request)) => {
                        let response = EchoResponse {
                            payload: request.payload,
                            seq,
                            ..EchoResponse::default()
                        };
                        seq += 1;
                        let _ = responses.send(Ok(response)).await;
                    }
                    Some(Err(status)) => break Err(status),
                    None => break Ok(()),
                }
            };
            state.record(&end);
        });
        Box::pin(ReceiverStream::new(stream))
    }
}

macro_rules! impl_probe {
    ($module:ident, $streaming:ty) => {
        #[tonic::async_trait]
        impl $module::echo_server::Echo for Probe {
            async fn unary(
                &self,
                request: Request<EchoRequest>,
            ) -> Result<Response<EchoResponse>, Status> {
                Probe::unary(self, request).await
            }

            type ServerStreamStream = ResponseStream;

            async fn server_stream(
                &self,
                request: Request<EchoRequest>,
            ) -> Result<Response<ResponseStream>, Status> {
                let fail_after = tonic_echo::fail_after(request.metadata());
                tonic_echo::server_stream(request.get_ref(), fail_after).map(Response::new)
            }

            async fn client_stream(
                &self,
                request: Request<$streaming>,
            ) -> Result<Response<EchoResponse>, Status> {
                Probe::client_stream(self, request).await
            }

            type BidiStream = ResponseStream;

            async fn bidi(
                &self,
                request: Request<$streaming>,
            ) -> Result<Response<ResponseStream>, Status> {
                self.maybe_wait(&request).await;
                Ok(Response::new(Probe::bidi(self, request)))
            }
        }
    };
}

impl_probe!(stock, tonic::Streaming<EchoRequest>);
impl_probe!(full, grpc_stream_codec::tonic::Streaming<EchoRequest>);

fn echo_request(payload: &'static [u8]) -> EchoRequest {
    EchoRequest {
        payload: Bytes::from_static(payload),
        ..EchoRequest::default()
    }
}

fn three_requests() -> impl Stream<Item = EchoRequest> + Send + 'static {
    tokio_stream::iter([&b"a"[..], b"bb", b"ccc"]).map(echo_request)
}

// ---------------------------------------------------------------------------
// Interceptors.

/// The server interceptor: no token, no call; with one, metadata and an
/// extension for the handler.
fn require_token(mut request: Request<()>) -> Result<Request<()>, Status> {
    if request
        .metadata()
        .get("authorization")
        .is_none_or(|t| t != TOKEN)
    {
        return Err(Status::unauthenticated("a bearer token is required"));
    }
    request
        .metadata_mut()
        .insert(CHECKED, "by-interceptor".parse().unwrap());
    request.extensions_mut().insert(Checked("interceptor"));
    Ok(request)
}

/// The client interceptor: the token and a tag of its own on every call.
fn add_token(mut request: Request<()>) -> Result<Request<()>, Status> {
    request
        .metadata_mut()
        .insert("authorization", TOKEN.parse().unwrap());
    request
        .metadata_mut()
        .insert(CLIENT_TAG, "interceptor".parse().unwrap());
    Ok(request)
}

/// A client interceptor that refuses every call before it leaves.
fn refuse(_: Request<()>) -> Result<Request<()>, Status> {
    Err(Status::permission_denied("refused by the client"))
}

async fn start_token_checked_probe(arm: Arm) -> (SocketAddr, JoinHandle<()>) {
    let (listener, addr) = bind().await;
    let router = add_echo!(
        arm,
        Server::builder(),
        with_interceptor(Probe::default(), require_token)
    );
    let task = tokio::spawn(async move {
        router
            .serve_with_incoming(incoming(listener))
            .await
            .unwrap();
    });
    (addr, task)
}

/// What the four calls of one client answered, comparable across arms.
#[derive(Debug, PartialEq, Eq)]
struct Answers {
    unary: Result<String, (Code, String)>,
    server_stream: Result<usize, (Code, String)>,
    client_stream: Result<(String, u32, u64), (Code, String)>,
    bidi: Result<Vec<Bytes>, (Code, String)>,
}

fn failed(status: Status) -> (Code, String) {
    (status.code(), status.message().to_owned())
}

fn carrying<T>(message: T, metadata: &MetadataMap) -> Request<T> {
    let mut request = Request::new(message);
    *request.metadata_mut() = metadata.clone();
    request
}

/// Makes all four calls on a generated client (either arm's), each with
/// `metadata`, collecting the complete answers.
macro_rules! four_calls {
    ($client:ident, $metadata:expr) => {{
        let metadata: MetadataMap = $metadata;
        let request = |message| carrying(message, &metadata);
        let stream_request = |messages| carrying(messages, &metadata);
        let unary = $client
            .unary(request(echo_request(b"hi")))
            .await
            .map(|r| String::from_utf8(r.into_inner().payload.to_vec()).unwrap())
            .map_err(failed);
        let server_stream = match $client
            .server_stream(request(EchoRequest {
                response_count: 4,
                response_size: 2,
                ..EchoRequest::default()
            }))
            .await
        {
            Ok(response) => {
                let replies: Result<Vec<_>, _> = response.into_inner().collect().await;
                replies.map(|r| r.len()).map_err(failed)
            }
            Err(status) => Err(failed(status)),
        };
        let client_stream = $client
            .client_stream(stream_request(three_requests()))
            .await
            .map(|r| {
                let r = r.into_inner();
                (
                    String::from_utf8(r.payload.to_vec()).unwrap(),
                    r.count,
                    r.total_bytes,
                )
            })
            .map_err(failed);
        let bidi = match $client.bidi(stream_request(three_requests())).await {
            Ok(response) => {
                let replies: Result<Vec<_>, _> = response.into_inner().collect().await;
                replies
                    .map(|r| r.into_iter().map(|r| r.payload).collect())
                    .map_err(failed)
            }
            Err(status) => Err(failed(status)),
        };
        Answers {
            unary,
            server_stream,
            client_stream,
            bidi,
        }
    }};
}

fn with_token() -> MetadataMap {
    let mut metadata = MetadataMap::new();
    metadata.insert("authorization", TOKEN.parse().unwrap());
    metadata
}

fn echoed() -> Vec<Bytes> {
    [&b"a"[..], b"bb", b"ccc"]
        .into_iter()
        .map(Bytes::from_static)
        .collect()
}

/// `EchoServer::with_interceptor`: every call kind without a token is
/// `UNAUTHENTICATED` before the handler runs; with one it succeeds and the
/// handler sees the caller's metadata, the interceptor's metadata and its
/// extension, through the full framing's `Grpc` as through tonic's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_interceptor_rejects_without_a_token_and_hands_the_handler_its_metadata() {
    let _lock = shared().await;
    let mut answers = Vec::new();
    for arm in ARMS {
        let (addr, server) = start_token_checked_probe(arm).await;
        let channel = channel(addr).await;
        let (refused, admitted) = with_stub!(arm, new(channel.clone()), |client| {
            (
                four_calls!(client, MetadataMap::new()),
                four_calls!(client, with_token()),
            )
        });

        let unauthenticated = (
            Code::Unauthenticated,
            "a bearer token is required".to_owned(),
        );
        assert_eq!(refused.unary, Err(unauthenticated.clone()), "{arm:?}");
        assert_eq!(
            refused.server_stream,
            Err(unauthenticated.clone()),
            "{arm:?}"
        );
        assert_eq!(
            refused.client_stream,
            Err(unauthenticated.clone()),
            "{arm:?}"
        );
        assert_eq!(refused.bidi, Err(unauthenticated), "{arm:?}");

        let seen = format!(
            "authorization={TOKEN};{CLIENT_TAG}=-;{CHECKED}=by-interceptor;extension=interceptor"
        );
        assert_eq!(admitted.unary, Ok(seen.clone()), "{arm:?}");
        assert_eq!(admitted.server_stream, Ok(4), "{arm:?}");
        assert_eq!(admitted.client_stream, Ok((seen, 3, 6)), "{arm:?}");
        assert_eq!(admitted.bidi, Ok(echoed()), "{arm:?}");
        answers.push((refused, admitted));
        server.abort();
    }
    assert_eq!(answers[0], answers[1], "stock and full answers differ");
}

/// `EchoClient::with_interceptor`: the interceptor's metadata goes out on
/// every call kind (the server's interceptor admits it, the handler sees the
/// tag), and an interceptor's refusal is the call's status, not a request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_interceptor_metadata_reaches_the_server_and_its_refusal_fails_the_call() {
    let _lock = shared().await;
    let mut answers = Vec::new();
    for arm in ARMS {
        let (addr, server) = start_token_checked_probe(arm).await;
        let channel = channel(addr).await;
        let tagged = with_stub!(
            arm,
            with_interceptor(channel.clone(), add_token),
            |client| four_calls!(client, MetadataMap::new())
        );
        let seen = format!(
            "authorization={TOKEN};{CLIENT_TAG}=interceptor;{CHECKED}=by-interceptor;\
             extension=interceptor"
        );
        assert_eq!(tagged.unary, Ok(seen.clone()), "{arm:?}");
        assert_eq!(tagged.server_stream, Ok(4), "{arm:?}");
        assert_eq!(tagged.client_stream, Ok((seen, 3, 6)), "{arm:?}");
        assert_eq!(tagged.bidi, Ok(echoed()), "{arm:?}");

        let refused = with_stub!(arm, with_interceptor(channel.clone(), refuse), |client| {
            four_calls!(client, with_token())
        });
        let denied = (Code::PermissionDenied, "refused by the client".to_owned());
        assert_eq!(refused.unary, Err(denied.clone()), "{arm:?}");
        assert_eq!(refused.server_stream, Err(denied.clone()), "{arm:?}");
        assert_eq!(refused.client_stream, Err(denied.clone()), "{arm:?}");
        assert_eq!(refused.bidi, Err(denied), "{arm:?}");
        answers.push((tagged, refused));
        server.abort();
    }
    assert_eq!(answers[0], answers[1], "stock and full answers differ");
}

// ---------------------------------------------------------------------------
// Routes.

const RENAMED: &str = "streamcodec.echo.renamed.Echo";
const ECHO: &str = "streamcodec.echo.v1.Echo";

/// Rewrites `/from/...` paths to `/to/...`.
fn rename_path<B>(mut request: http::Request<B>, from: &str, to: &str) -> http::Request<B> {
    let path = request.uri().path();
    if let Some(method) = path
        .strip_prefix('/')
        .and_then(|p| p.strip_prefix(from))
        .and_then(|p| p.strip_prefix('/'))
    {
        let mut parts = request.uri().clone().into_parts();
        parts.path_and_query = Some(format!("/{to}/{method}").parse().unwrap());
        *request.uri_mut() = http::Uri::from_parts(parts).unwrap();
    }
    request
}

/// A generated Echo server routed under another package name ([`RENAMED`]),
/// counting the calls it takes; stands in for a second service of the same
/// shape from another package.
#[derive(Clone)]
struct Renamed<S> {
    inner: S,
    calls: Arc<AtomicUsize>,
}

impl<S> NamedService for Renamed<S> {
    const NAME: &'static str = RENAMED;
}

impl<S, B> Service<http::Request<B>> for Renamed<S>
where
    S: Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> S::Future {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inner.call(rename_path(request, RENAMED, ECHO))
    }
}

fn to_renamed(request: http::Request<Body>) -> http::Request<Body> {
    rename_path(request, ECHO, RENAMED)
}

async fn health(client: &mut HealthClient<Channel>, service: &str) -> Result<i32, Code> {
    client
        .check(HealthCheckRequest {
            service: service.to_owned(),
        })
        .await
        .map(|r| r.into_inner().status)
        .map_err(|s| s.code())
}

/// One server, one connection, three services in `Routes`: the arm's Echo
/// (stock or full framing), tonic-health beside it, and a stock Echo under
/// another package name. Each answers its own calls; health reports the
/// Echo services `SERVING`; an unknown service is `UNIMPLEMENTED`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routes_serve_the_echo_beside_tonic_health_and_another_echo() {
    let _lock = shared().await;
    for arm in ARMS {
        let (reporter, health_service) = tonic_health::server::health_reporter();
        match arm {
            Arm::Stock => {
                reporter
                    .set_serving::<stock::echo_server::EchoServer<EchoService>>()
                    .await
            }
            Arm::Full => {
                reporter
                    .set_serving::<full::echo_server::EchoServer<EchoService>>()
                    .await
            }
        }
        reporter
            .set_service_status(RENAMED, tonic_health::ServingStatus::Serving)
            .await;
        let renamed_calls = Arc::new(AtomicUsize::new(0));
        let mut routes = Routes::builder();
        routes.add_service(health_service);
        add_echo!(arm, routes, new(EchoService));
        routes.add_service(Renamed {
            inner: stock::echo_server::EchoServer::new(EchoService),
            calls: renamed_calls.clone(),
        });
        let (listener, addr) = bind().await;
        let router = Server::builder().add_routes(routes.routes());
        let server = tokio::spawn(async move {
            router
                .serve_with_incoming(incoming(listener))
                .await
                .unwrap();
        });

        let channel = channel(addr).await;
        let mut health_client = HealthClient::new(channel.clone());
        let serving = Ok(ServingStatus::Serving as i32);
        assert_eq!(health(&mut health_client, "").await, serving, "{arm:?}");
        assert_eq!(health(&mut health_client, ECHO).await, serving, "{arm:?}");
        assert_eq!(
            health(&mut health_client, RENAMED).await,
            serving,
            "{arm:?}"
        );
        assert_eq!(
            health(&mut health_client, "no.such.Service").await,
            Err(Code::NotFound),
            "{arm:?}"
        );

        let mut echo = EchoClient::with_stack(channel.clone(), arm.client_stack(), None);
        let mut renamed = stock::echo_client::EchoClient::new(
            tower::ServiceBuilder::new()
                .map_request(to_renamed as fn(_) -> _)
                .service(channel.clone()),
        );
        check_unary(&mut echo, 1024).await.unwrap();
        check_server_stream(&mut echo, 16, 50).await.unwrap();
        check_client_stream(&mut echo, 16, 50).await.unwrap();
        check_bidi(&mut echo, 16, 50).await.unwrap();
        assert_eq!(renamed_calls.load(Ordering::SeqCst), 0, "{arm:?}");
        let reply = renamed.unary(echo_request(b"renamed")).await.unwrap();
        assert_eq!(reply.into_inner().payload, &b"renamed"[..]);
        assert_eq!(renamed_calls.load(Ordering::SeqCst), 1, "{arm:?}");
        // The arm's Echo still answers after the other one took a call.
        check_unary(&mut echo, 0).await.unwrap();
        assert_eq!(renamed_calls.load(Ordering::SeqCst), 1, "{arm:?}");

        let mut unknown = stock::echo_client::EchoClient::new(
            tower::ServiceBuilder::new()
                .map_request(|r| rename_path(r, ECHO, "no.such.Service"))
                .service(channel.clone()),
        );
        let status = unknown.unary(echo_request(b"x")).await.unwrap_err();
        assert_eq!(status.code(), Code::Unimplemented, "{arm:?}");
        server.abort();
    }
}

// ---------------------------------------------------------------------------
// tonic-web.

/// A gRPC-Web answer over HTTP/1.1, as a browser client reads it.
#[derive(Debug, PartialEq)]
struct WebReply {
    /// The response's `content-type`.
    content_type: String,
    /// Data messages, in order.
    messages: Vec<Bytes>,
    /// From the trailers frame in the body, or `None` when the status came
    /// in the response headers (a trailers-only answer).
    trailers: Option<HeaderMap>,
    code: Code,
    message: String,
}

async fn start_grpc_web(arm: Arm) -> (SocketAddr, JoinHandle<()>) {
    let (listener, addr) = bind().await;
    let mut builder = Server::builder()
        .accept_http1(true)
        .layer(tonic_web::GrpcWebLayer::new());
    let router = add_echo!(arm, builder, new(EchoService));
    let server = tokio::spawn(async move {
        router
            .serve_with_incoming(incoming(listener))
            .await
            .unwrap();
    });
    (addr, server)
}

/// One gRPC-Web call (`application/grpc-web+proto`) over HTTP/1.1 with hyper.
async fn grpc_web_call(
    addr: SocketAddr,
    path: &str,
    extra: &[(&str, &str)],
    message: &EchoRequest,
) -> WebReply {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp))
            .await
            .unwrap();
    tokio::spawn(connection);
    let mut request = http::Request::post(format!("http://{addr}{path}"))
        .header("content-type", "application/grpc-web+proto")
        .header("x-grpc-web", "1");
    for (name, value) in extra {
        request = request.header(*name, *value);
    }
    let request = request
        .body(Full::new(Bytes::from(raw::message(message))))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    assert_eq!(response.status(), http::StatusCode::OK);
    assert_eq!(response.version(), http::Version::HTTP_11);
    let headers = response.headers().clone();
    let content_type = headers
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let mut data = response.into_body().collect().await.unwrap().to_bytes();
    let mut messages = Vec::new();
    let mut trailers = None;
    while data.has_remaining() {
        assert!(data.len() >= 5, "a cut frame header: {data:?}");
        let flags = data.get_u8();
        let len = data.get_u32() as usize;
        assert!(data.len() >= len, "a cut frame: {len} declared, {data:?}");
        let payload = data.split_to(len);
        if flags & 0x80 == 0 {
            assert!(trailers.is_none(), "a message after the trailers frame");
            messages.push(payload);
            continue;
        }
        let mut map = HeaderMap::new();
        for line in std::str::from_utf8(&payload).unwrap().split("\r\n") {
            if let Some((name, value)) = line.split_once(':') {
                map.insert(
                    http::HeaderName::from_bytes(name.trim().as_bytes()).unwrap(),
                    value.trim().parse().unwrap(),
                );
            }
        }
        trailers = Some(map);
    }
    let status = match &trailers {
        Some(map) => Status::from_header_map(map).expect("grpc-status in the trailers frame"),
        None => Status::from_header_map(&headers).expect("grpc-status in headers or trailers"),
    };
    WebReply {
        content_type,
        messages,
        trailers,
        code: status.code(),
        message: status.message().to_owned(),
    }
}

fn responses(reply: &WebReply) -> Vec<EchoResponse> {
    reply
        .messages
        .iter()
        .map(|m| EchoResponse::decode(m.clone()).unwrap())
        .collect()
}

/// `GrpcWebLayer` in front of the arm's Echo, over HTTP/1.1: unary and
/// server-streaming answers carry their messages and then a trailers frame in
/// the body with `grpc-status` (and a mid-stream error's message and
/// metadata); a handler error before any message answers in the headers.
/// Both arms give byte-identical messages and the same trailers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_web_over_http1_gets_messages_and_a_trailers_frame() {
    let _lock = shared().await;
    const UNARY: &str = "/streamcodec.echo.v1.Echo/Unary";
    const SERVER_STREAM: &str = "/streamcodec.echo.v1.Echo/ServerStream";
    let mut replies = Vec::new();
    for arm in ARMS {
        let (addr, server) = start_grpc_web(arm).await;

        let unary = grpc_web_call(addr, UNARY, &[], &echo_request(b"over http/1.1")).await;
        assert_eq!(unary.content_type, "application/grpc-web+proto", "{arm:?}");
        assert_eq!(
            (unary.code, unary.trailers.is_some()),
            (Code::Ok, true),
            "{arm:?}"
        );
        let echoed = responses(&unary);
        assert_eq!(echoed.len(), 1, "{arm:?}");
        assert_eq!(echoed[0].payload, &b"over http/1.1"[..], "{arm:?}");

        let request = EchoRequest {
            response_count: 20,
            response_size: 300,
            ..EchoRequest::default()
        };
        let streamed = grpc_web_call(addr, SERVER_STREAM, &[], &request).await;
        assert_eq!(
            (streamed.code, streamed.trailers.is_some()),
            (Code::Ok, true)
        );
        let streamed_messages = responses(&streamed);
        assert_eq!(streamed_messages.len(), 20, "{arm:?}");
        for (seq, response) in streamed_messages.iter().enumerate() {
            assert_eq!(response.seq as usize, seq, "{arm:?}");
            assert_eq!(response.payload, vec![(seq % 251) as u8; 300], "{arm:?}");
        }

        let failing = grpc_web_call(addr, SERVER_STREAM, &[(FAIL_AFTER, "3")], &request).await;
        assert_eq!(responses(&failing).len(), 3, "{arm:?}");
        assert_eq!(failing.code, Code::Aborted, "{arm:?}");
        assert_eq!(failing.message, "failed after 3 messages", "{arm:?}");
        let trailers = failing.trailers.as_ref().expect("a trailers frame");
        assert_eq!(trailers.get(FAIL_DETAIL).unwrap(), "3", "{arm:?}");

        let too_big = EchoRequest {
            response_size: tonic_echo::MAX_RESPONSE_SIZE + 1,
            ..EchoRequest::default()
        };
        let refused = grpc_web_call(addr, SERVER_STREAM, &[], &too_big).await;
        assert_eq!(refused.code, Code::ResourceExhausted, "{arm:?}");
        assert!(refused.messages.is_empty(), "{arm:?}");

        replies.push([unary, streamed, failing, refused]);
        server.abort();
    }
    let [stock, full] = <[_; 2]>::try_from(replies).unwrap();
    for (stock, full) in stock.iter().zip(&full) {
        assert_eq!(stock.messages, full.messages);
        assert_eq!((stock.code, &stock.message), (full.code, &full.message));
        // Both percent-encode `grpc-message` as the spec allows, tonic
        // more of it (spaces too); the decoded messages are compared above.
        let other_trailers = |reply: &WebReply| {
            reply.trailers.as_ref().map(|t| {
                let mut t = t.clone();
                t.remove("grpc-message");
                t
            })
        };
        assert_eq!(
            other_trailers(stock),
            other_trailers(full),
            "trailers differ"
        );
    }
}

// ---------------------------------------------------------------------------
// Deadlines.

fn waiting<T>(message: T, timeout: Option<Duration>) -> Request<T> {
    let mut request = Request::new(message);
    request.metadata_mut().insert(WAIT, "1".parse().unwrap());
    if let Some(timeout) = timeout {
        request.set_timeout(timeout);
    }
    request
}

/// How one waiting call ended: its code and message.
type Ending = (Code, String);

/// A waiting unary and client-streaming call on the arm's client, each with
/// `timeout` set on the request.
async fn waiting_calls(arm: Arm, addr: SocketAddr, timeout: Option<Duration>) -> [Ending; 2] {
    let channel = channel(addr).await;
    with_stub!(arm, new(channel), |client| {
        let unary = within("unary", client.unary(waiting(echo_request(b"x"), timeout)))
            .await
            .unwrap_err();
        let streaming = within(
            "client stream",
            client.client_stream(waiting(three_requests(), timeout)),
        )
        .await
        .unwrap_err();
        [failed(unary), failed(streaming)]
    })
}

/// The raw HTTP/2 view of the server's deadline: a unary call whose only
/// client is `h2`, so no client-side timer can answer for the server.
async fn raw_waiting_unary(addr: SocketAddr, grpc_timeout: Option<&str>) -> Ending {
    let client = raw::connect(addr).await;
    let mut headers = vec![(WAIT, "1")];
    headers.extend(grpc_timeout.map(|t| ("grpc-timeout", t)));
    let body = raw::message(&echo_request(b"x"));
    let reply = within("raw unary", raw::call(&client, raw::UNARY, &headers, body)).await;
    (reply.code(), reply.status.message().to_owned())
}

async fn start_probe(arm: Arm, timeout: Option<Duration>) -> (SocketAddr, Probe, JoinHandle<()>) {
    let probe = Probe::default();
    let (listener, addr) = bind().await;
    let mut builder = Server::builder();
    if let Some(timeout) = timeout {
        builder = builder.timeout(timeout);
    }
    let router = add_echo!(arm, builder, new(probe.clone()));
    let task = tokio::spawn(async move {
        router
            .serve_with_incoming(incoming(listener))
            .await
            .unwrap();
    });
    (addr, probe, task)
}

/// Waits until `probe` has seen `n` waiting handlers dropped.
async fn dropped_waits(probe: &Probe, n: usize) {
    within("the waiting handlers to be dropped", async {
        while probe.state.waits_dropped.load(Ordering::SeqCst) < n {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
}

/// `grpc-timeout` from `Request::set_timeout` and the server's own
/// `Server::timeout` end a handler that waits past them: tonic answers
/// `CANCELLED` "Timeout expired" on both arms (client timer and server
/// timer alike), and the server drops the waiting handler. A generous
/// deadline on a handler that answers at once is `OK`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadlines_end_waiting_handlers_as_tonic_does() {
    let _lock = shared().await;
    let expired = (Code::Cancelled, "Timeout expired".to_owned());
    let mut endings = Vec::new();
    for arm in ARMS {
        // Deadline from the client's request.
        let (addr, probe, server) = start_probe(arm, None).await;
        let client_deadline = waiting_calls(arm, addr, Some(Duration::from_millis(50))).await;
        assert_eq!(
            client_deadline,
            [expired.clone(), expired.clone()],
            "{arm:?}"
        );
        dropped_waits(&probe, 2).await;
        // The same deadline, seen only by the server.
        let raw = raw_waiting_unary(addr, Some("50m")).await;
        assert_eq!(raw, expired, "{arm:?} raw grpc-timeout");
        dropped_waits(&probe, 3).await;
        // A deadline that is not reached changes nothing.
        let channel = channel(addr).await;
        let answered = with_stub!(arm, new(channel), |client| {
            let mut request = Request::new(echo_request(b"in time"));
            request.set_timeout(Duration::from_secs(60));
            let unary = client.unary(request).await.map(|_| ()).map_err(failed);
            let mut request = Request::new(three_requests());
            request.set_timeout(Duration::from_secs(60));
            let streamed = client
                .client_stream(request)
                .await
                .map(|r| r.into_inner().count)
                .map_err(failed);
            (unary, streamed)
        });
        assert_eq!(answered, (Ok(()), Ok(3)), "{arm:?}");
        server.abort();

        // Deadline from `Server::timeout`, no grpc-timeout at all.
        let (addr, probe, server) = start_probe(arm, Some(Duration::from_millis(50))).await;
        let server_deadline = waiting_calls(arm, addr, None).await;
        assert_eq!(
            server_deadline,
            [expired.clone(), expired.clone()],
            "{arm:?}"
        );
        let raw_server = raw_waiting_unary(addr, None).await;
        assert_eq!(raw_server, expired, "{arm:?} raw, Server::timeout");
        dropped_waits(&probe, 3).await;
        server.abort();
        endings.push((client_deadline, raw, server_deadline, raw_server));
    }
    assert_eq!(endings[0], endings[1], "stock and full deadlines differ");
}

// ---------------------------------------------------------------------------
// Client cancellation.

/// Cancelled streams per arm, half client-streaming and half bidi.
const CANCELLED: usize = 1000;
const WARM_UP: usize = 100;

/// A client-streaming call that sends one message and then waits; dropped
/// once the server has read that message, so it is reset mid-stream.
async fn cancel_client_stream(arm: Arm, channel: &Channel, probe: &Probe) {
    let requests = tokio_stream::once(echo_request(b"first")).chain(tokio_stream::pending());
    let first = probe.state.first_message.notified();
    with_stub!(arm, new(channel.clone()), |client| {
        let call = client.client_stream(requests);
        tokio::select! {
            _ = call => panic!("{arm:?}: the client stream was answered"),
            () = within("the first message", first) => {}
        }
    });
}

/// A bidi call that is dropped (request sender and response stream) after
/// its first echo came back, as a client task that is aborted would.
async fn cancel_bidi(arm: Arm, channel: &Channel) {
    let (sender, requests) = mpsc::channel(4);
    sender.send(echo_request(b"first")).await.unwrap();
    with_stub!(arm, new(channel.clone()), |client| {
        let response = within("bidi", client.bidi(ReceiverStream::new(requests)))
            .await
            .unwrap();
        let mut responses = response.into_inner();
        let echo = within("the first echo", responses.next()).await;
        assert_eq!(echo.unwrap().unwrap().payload, &b"first"[..]);
        drop((responses, sender));
    });
}

async fn cancel_streams(arm: Arm, channel: &Channel, probe: &Probe, n: usize) {
    for _ in 0..n / 2 {
        cancel_client_stream(arm, channel, probe).await;
        cancel_bidi(arm, channel).await;
    }
}

/// What one arm left after the cancelled streams.
#[derive(Debug)]
struct Leftovers {
    readers: usize,
    clean_ends: usize,
    cancelled: usize,
    other_errors: usize,
    tasks_before: usize,
    tasks_after: usize,
    live_growth: isize,
}

fn cancelled_streams_on(arm: Arm) -> Leftovers {
    let server_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let client_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let probe = Probe::default();
    let (listener, addr) = server_runtime.block_on(bind());
    let router = add_echo!(arm, Server::builder(), new(probe.clone()));
    server_runtime.spawn(router.serve_with_incoming(incoming(listener)));
    let server = server_runtime.handle().clone();
    let state = probe.state.clone();

    let figures = client_runtime.block_on(async move {
        let channel = channel(addr).await;
        // Warm up, so lazily built state and grown slabs are not counted.
        cancel_streams(arm, &channel, &probe, WARM_UP).await;
        let settled = |expected: usize| {
            let state = state.clone();
            async move {
                within("every request stream to end", async {
                    while state.readers_finished.load(Ordering::SeqCst) < expected {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                })
                .await;
            }
        };
        settled(WARM_UP).await;
        let tasks_before = server.metrics().num_alive_tasks();
        let live_before = settle_live_bytes(16 * 1024).await;

        cancel_streams(arm, &channel, &probe, CANCELLED).await;
        settled(WARM_UP + CANCELLED).await;
        // The server's tasks for a reset stream end when it sees the reset;
        // give them the time to, then count.
        let mut tasks_after = server.metrics().num_alive_tasks();
        for _ in 0..200 {
            if tasks_after <= tasks_before {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            tasks_after = server.metrics().num_alive_tasks();
        }
        let live_after = settle_live_bytes(16 * 1024).await;
        drop(channel);
        let errors = state.error_total();
        let cancelled = state.errors_with(Code::Cancelled);
        Leftovers {
            readers: state.readers_finished.load(Ordering::SeqCst),
            clean_ends: state.clean_ends.load(Ordering::SeqCst),
            cancelled,
            other_errors: errors - cancelled,
            tasks_before,
            tasks_after,
            live_growth: live_after - live_before,
        }
    });
    drop(client_runtime);
    drop(server_runtime);
    figures
}

/// 1,000 client-streaming and bidi calls dropped mid-stream by their client:
/// every request stream on the server ends (a clean end or an error, never a
/// hang), the server's runtime is back to the tasks it had before, and live
/// heap does not grow — on the full framing as on stock tonic, whose readers
/// end the same way.
#[test]
fn cancelled_streams_end_on_the_server_and_leave_nothing_behind() {
    let _lock = exclusive();
    let mut all = Vec::new();
    for arm in ARMS {
        let left = cancelled_streams_on(arm);
        eprintln!("{arm:?}: {CANCELLED} cancelled streams after {WARM_UP} warm-up: {left:?}");
        assert_eq!(left.readers, WARM_UP + CANCELLED, "{arm:?}");
        assert_eq!(
            left.clean_ends + left.cancelled + left.other_errors,
            left.readers,
            "{arm:?}"
        );
        assert_eq!(left.other_errors, 0, "{arm:?}: {left:?}");
        assert!(left.tasks_after <= left.tasks_before, "{arm:?}: {left:?}");
        // Less than 64 bytes per cancelled stream: a leaked stream, reader
        // task or decoder holds far more than that.
        assert!(
            left.live_growth < (CANCELLED * 64) as isize,
            "{arm:?}: {left:?}"
        );
        all.push(left);
    }
    // The one intended difference: tonic's own `Streaming` turns a request
    // body reset with CANCEL into a clean end, so a client-streaming handler
    // cannot tell a cancelled upload from a complete one; the full framing
    // reports CANCELLED (as grpc-go and grpc-java servers do). Every
    // client-streaming call here was reset with its request stream open.
    let [stock, full] = <[_; 2]>::try_from(all).unwrap();
    assert_eq!(stock.clean_ends, stock.readers, "stock: {stock:?}");
    assert!(full.cancelled >= full.readers / 2, "full: {full:?}");
}

// ---------------------------------------------------------------------------
// Streams reset with an HTTP/2 reason, or cut with their connection.

/// How a peer gives up on a stream after its first message.
#[derive(Clone, Copy, Debug)]
enum Abandon {
    Reset(h2::Reason),
    DropConnection,
}

const ABANDONS: [Abandon; 5] = [
    Abandon::Reset(h2::Reason::CANCEL),
    Abandon::Reset(h2::Reason::INTERNAL_ERROR),
    Abandon::Reset(h2::Reason::REFUSED_STREAM),
    Abandon::Reset(h2::Reason::ENHANCE_YOUR_CALM),
    Abandon::DropConnection,
];

/// A raw HTTP/2 client-streaming call that sends one message and, once the
/// server's reader has it, abandons the stream as `how` says; returns how the
/// reader's request stream ended.
async fn abandoned_request(addr: SocketAddr, probe: &Probe, how: Abandon) -> Result<(), Code> {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (client, connection) = h2::client::handshake(tcp).await.unwrap();
    let connection = tokio::spawn(connection);
    let mut client = client.ready().await.unwrap();
    let (_response, mut stream) = client
        .send_request(raw::grpc_request(raw::CLIENT_STREAM, &[]), false)
        .unwrap();
    let finished = probe.state.readers_finished.load(Ordering::SeqCst);
    let first = probe.state.first_message.notified();
    stream
        .send_data(Bytes::from(raw::message(&echo_request(b"first"))), false)
        .unwrap();
    within("the first message", first).await;
    match how {
        Abandon::Reset(reason) => stream.send_reset(reason),
        Abandon::DropConnection => connection.abort(),
    }
    within("the reader to end", async {
        while probe.state.readers_finished.load(Ordering::SeqCst) == finished {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    let end = probe.state.last_end.lock().unwrap().take();
    end.expect("a recorded end")
}

/// A client-streaming request reset by its client with an HTTP/2 reason, or
/// cut with its connection: the handler's request stream ends with the code
/// tonic gives (`INTERNAL_ERROR` is `INTERNAL`, `REFUSED_STREAM` is
/// `UNAVAILABLE`, `ENHANCE_YOUR_CALM` is `RESOURCE_EXHAUSTED`, a lost
/// connection is `UNKNOWN`), with one intended difference: tonic ends the
/// stream cleanly on `CANCEL`, the full framing reports `CANCELLED`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_request_ends_the_handlers_stream_with_tonics_code() {
    let _lock = shared().await;
    let tonic_codes = [
        Ok(()),
        Err(Code::Internal),
        Err(Code::Unavailable),
        Err(Code::ResourceExhausted),
        Err(Code::Unknown),
    ];
    for arm in ARMS {
        let (addr, probe, server) = start_probe(arm, None).await;
        let mut ends = Vec::new();
        for how in ABANDONS {
            ends.push(abandoned_request(addr, &probe, how).await);
        }
        let mut expected = tonic_codes.to_vec();
        if arm == Arm::Full {
            expected[0] = Err(Code::Cancelled);
        }
        assert_eq!(ends, expected, "{arm:?}: {ABANDONS:?}");
        server.abort();
    }
}

/// A raw HTTP/2 server that answers every call with response headers and one
/// Echo message, then, once `received` is notified, abandons the stream as
/// `how` says.
async fn serve_abandoning(how: Abandon, received: Arc<Notify>) -> (SocketAddr, JoinHandle<()>) {
    let (listener, addr) = bind().await;
    let server = tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let received = received.clone();
            tokio::spawn(async move {
                let Ok(mut connection) = h2::server::handshake(tcp).await else {
                    return;
                };
                let Some(Ok((_request, mut respond))) = connection.accept().await else {
                    return;
                };
                let response = http::Response::builder()
                    .header("content-type", "application/grpc")
                    .body(())
                    .unwrap();
                let mut stream = respond.send_response(response, false).unwrap();
                let reply = EchoResponse {
                    payload: Bytes::from_static(b"first"),
                    ..EchoResponse::default()
                };
                stream
                    .send_data(Bytes::from(raw::message(&reply)), false)
                    .unwrap();
                let (done, wait) = oneshot::channel::<()>();
                let driver = tokio::spawn(async move {
                    let _keep = done;
                    while connection.accept().await.is_some() {}
                });
                // A reset drops what is still queued: give up only once the
                // client has the message.
                received.notified().await;
                match how {
                    Abandon::Reset(reason) => {
                        stream.send_reset(reason);
                        let _ = wait.await;
                    }
                    Abandon::DropConnection => {
                        // The connection goes first: were the stream dropped
                        // while it still ran, h2 could send RST_STREAM(CANCEL)
                        // ahead of the close, and the client would see that.
                        driver.abort();
                        let _ = driver.await;
                        drop(stream);
                    }
                }
            });
        }
    });
    (addr, server)
}

/// A server-streaming response reset by its server after one message, or
/// cut with its connection: the full client's response stream yields the
/// message and then the error tonic's client gives (`CANCEL` is `CANCELLED`,
/// `REFUSED_STREAM` is `UNAVAILABLE`, ...), never a clean end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_response_ends_the_clients_stream_with_tonics_code() {
    let _lock = shared().await;
    let tonic_codes = [
        Code::Cancelled,
        Code::Internal,
        Code::Unavailable,
        Code::ResourceExhausted,
        Code::Unknown,
    ];
    for arm in ARMS {
        let mut ends = Vec::new();
        for how in ABANDONS {
            let received = Arc::new(Notify::new());
            let (addr, server) = serve_abandoning(how, received.clone()).await;
            let mut client = EchoClient::with_stack(channel(addr).await, arm.client_stack(), None);
            let mut responses = client.server_stream(EchoRequest::default()).await.unwrap();
            let first = within("the first message", responses.next()).await;
            assert_eq!(first.unwrap().unwrap().payload, &b"first"[..], "{arm:?}");
            received.notify_one();
            let end = within("the end", responses.next()).await;
            ends.push(match end {
                Some(Err(status)) => status.code(),
                other => panic!("{arm:?} {how:?}: {other:?}, not an error"),
            });
            server.abort();
        }
        assert_eq!(ends, tonic_codes, "{arm:?}: {ABANDONS:?}");
    }
}
