//! One limit for the tonic guard and tonic: real tonic servers and clients
//! over 127.0.0.1, messages over the limit sent plain and gzip-compressed.
//!
//! Before, the guard checked only wire lengths, so a compressed message over
//! the guard's limit but under tonic's was accepted while the same message
//! plain was refused; and a guard limit above tonic's let tonic's own
//! `OUT_OF_RANGE` through. Now compressed and plain messages over the guard's
//! limit get the same status, and `guarded_server!` / `guarded_client!` set
//! tonic's limits from the guard's so the two cannot differ.

use std::net::SocketAddr;

use bytes::Bytes;
use grpc_stream_codec::Limits;
use grpc_stream_codec::tonic::guard::{
    GuardMode, RequestGuardLayer, ResponseGuardLayer, guarded_client, guarded_server,
};
use tokio::task::JoinHandle;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::Code;
use tonic::codec::CompressionEncoding;
use tonic::transport::{Channel, Endpoint, Server};
use tonic_echo::EchoService;
use tonic_echo::adapter::EchoRequest;
use tonic_echo::adapter::echo_client::EchoClient;
use tonic_echo::adapter::echo_server::EchoServer;

const MIB: usize = 1024 * 1024;
/// Room for any message these tests send, for the side not under test.
const ROOMY: usize = 64 * MIB;

/// How a request or response travels.
const WIRE: [Option<CompressionEncoding>; 2] = [None, Some(CompressionEncoding::Gzip)];
const MODES: [GuardMode; 2] = [GuardMode::PassThrough, GuardMode::Assembling];

/// A listener on an ephemeral 127.0.0.1 port, and its address.
async fn listen() -> (TcpListenerStream, SocketAddr) {
    let (listener, addr) = tonic_echo::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    (TcpListenerStream::new(listener), addr)
}

/// Serves `router` on an ephemeral port (a `Router` of any layer stack).
macro_rules! serve {
    ($router:expr) => {{
        let router = $router;
        let (incoming, addr) = listen().await;
        let server: JoinHandle<()> = tokio::spawn(async move {
            router.serve_with_incoming(incoming).await.unwrap();
        });
        (addr, server)
    }};
}

async fn channel(addr: SocketAddr) -> Channel {
    Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap()
}

/// A request whose encoding is `payload` bytes of zeros plus 5 bytes of
/// field tag and length (for payloads of 2 MiB and more).
fn request(payload: usize) -> EchoRequest {
    EchoRequest {
        payload: Bytes::from(vec![0; payload]),
        ..EchoRequest::default()
    }
}

/// Unary echo of `payload` bytes: the echoed length or the status.
async fn echo<T>(client: &mut EchoClient<T>, payload: usize) -> Result<usize, tonic::Status>
where
    T: tonic::client::GrpcService<tonic::body::Body>,
    T::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    T::ResponseBody: http_body::Body<Data = Bytes> + Send + 'static,
    <T::ResponseBody as http_body::Body>::Error:
        Into<Box<dyn std::error::Error + Send + Sync>> + Send,
{
    let response = client.unary(request(payload)).await?;
    Ok(response.into_inner().payload.len())
}

/// The guard's refusal of a message over `limit`: `resource_exhausted` and
/// `message size N exceeds limit M`, N above M. (For a compressed message N
/// is how far decompression got, so only its bound is checked.)
fn assert_refused(status: &tonic::Status, limit: usize, what: &str) {
    assert_eq!(status.code(), Code::ResourceExhausted, "{what}: {status:?}");
    let size = status
        .message()
        .strip_prefix("message size ")
        .and_then(|rest| rest.strip_suffix(&format!(" exceeds limit {limit}")))
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or_else(|| panic!("{what}: not the guard's text: {status:?}"));
    assert!(size > limit, "{what}: {size} <= {limit}");
}

/// A client that sends `wire`-compressed requests (the server side is under
/// test) and takes any response.
fn sending_client(channel: &Channel, wire: Option<CompressionEncoding>) -> EchoClient<Channel> {
    let client = EchoClient::new(channel.clone()).max_decoding_message_size(ROOMY);
    match wire {
        Some(encoding) => client.send_compressed(encoding),
        None => client,
    }
}

fn what(side: &str, wire: Option<CompressionEncoding>, mib: usize) -> String {
    format!("{side}, {wire:?}, {mib} MiB")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_guard_below_tonic_refuses_compressed_like_plain() {
    for mode in MODES {
        // The mismatch as users wrote it: the guard at its 4 MiB default for
        // the whole server, the service raised to 8 MiB in tonic.
        let service = EchoServer::new(EchoService)
            .accept_compressed(CompressionEncoding::Gzip)
            .max_decoding_message_size(8 * MIB);
        let router = Server::builder()
            .layer(RequestGuardLayer::new().with_mode(mode))
            .add_service(service);
        let (addr, server) = serve!(router);
        server_refuses_over_4_mib(addr, mode).await;
        server.abort();
    }
}

async fn server_refuses_over_4_mib(addr: SocketAddr, mode: GuardMode) {
    let channel = channel(addr).await;
    for wire in WIRE {
        let mut client = sending_client(&channel, wire);
        let what = format!("{mode:?} {}", what("server", wire, 5));
        let status = echo(&mut client, 5 * MIB).await.unwrap_err();
        assert_refused(&status, 4 * MIB, &what);
        // Under the guard's limit both ways still pass.
        assert_eq!(echo(&mut client, 3 * MIB).await.unwrap(), 3 * MIB, "{what}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guarded_server_macro_gives_guard_and_tonic_one_limit() {
    let limits = Limits::new().with_max_receive(8 * MIB);
    let service = guarded_server!(
        RequestGuardLayer::new().with_limits(limits),
        EchoServer::new(EchoService).accept_compressed(CompressionEncoding::Gzip)
    );
    let (addr, server) = serve!(Server::builder().add_service(service));
    let channel = channel(addr).await;
    for wire in WIRE {
        let mut client = sending_client(&channel, wire);
        // Above tonic's 4 MiB default: tonic took the guard's limit.
        let accepted = echo(&mut client, 5 * MIB).await;
        assert_eq!(accepted.unwrap(), 5 * MIB, "{}", what("server", wire, 5));
        // Above the one limit: the guard's status, never tonic's OUT_OF_RANGE.
        let status = echo(&mut client, 9 * MIB).await.unwrap_err();
        assert_refused(&status, 8 * MIB, &what("server", wire, 9));
    }
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_guard_above_tonic_restates_tonics_refusal_as_its_own() {
    for mode in MODES {
        // The other mismatch: the guard raised to 8 MiB for the whole
        // server by hand, the service left at tonic's 4 MiB default. tonic
        // refuses what passes the guard; the peer must still see the guard's
        // status, in a trailers-only answer and in trailers after responses.
        let service = EchoServer::new(EchoService).accept_compressed(CompressionEncoding::Gzip);
        let guard = RequestGuardLayer::new()
            .with_limits(Limits::new().with_max_receive(8 * MIB))
            .with_mode(mode);
        let (addr, server) = serve!(Server::builder().layer(guard).add_service(service));
        let channel = channel(addr).await;
        for wire in WIRE {
            let mut client = sending_client(&channel, wire);
            let what = format!("{mode:?} {}", what("server", wire, 5));
            let status = echo(&mut client, 5 * MIB).await.unwrap_err();
            assert_refused(&status, 4 * MIB, &format!("unary {what}"));

            let requests = tokio_stream::iter([request(16), request(5 * MIB)]);
            let mut responses = client.bidi(requests).await.unwrap().into_inner();
            let first = responses.message().await.unwrap().unwrap();
            assert_eq!(first.payload.len(), 16, "bidi {what}");
            let status = responses.message().await.unwrap_err();
            assert_refused(&status, 4 * MIB, &format!("bidi {what}"));
        }
        server.abort();
    }
}

/// An echo server that takes and sends anything these tests send, gzip on
/// request.
async fn roomy_server() -> (SocketAddr, JoinHandle<()>) {
    let service = EchoServer::new(EchoService)
        .accept_compressed(CompressionEncoding::Gzip)
        .send_compressed(CompressionEncoding::Gzip)
        .max_decoding_message_size(ROOMY);
    serve!(Server::builder().add_service(service))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_guard_below_tonic_refuses_compressed_like_plain() {
    let (addr, server) = roomy_server().await;
    let channel = channel(addr).await;
    for (mode, wire) in MODES.into_iter().flat_map(|m| WIRE.map(|w| (m, w))) {
        // The guard at its default, the client raised to 8 MiB in tonic.
        let guarded = tower::ServiceBuilder::new()
            .layer(ResponseGuardLayer::new().with_mode(mode))
            .service(channel.clone());
        let mut client = EchoClient::new(guarded).max_decoding_message_size(8 * MIB);
        if let Some(encoding) = wire {
            client = client.accept_compressed(encoding);
        }
        let what = format!("{mode:?} {}", what("client", wire, 5));
        let status = echo(&mut client, 5 * MIB).await.unwrap_err();
        assert_refused(&status, 4 * MIB, &what);
        assert_eq!(echo(&mut client, 3 * MIB).await.unwrap(), 3 * MIB, "{what}");
    }
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guarded_client_macro_gives_guard_and_tonic_one_limit() {
    let (addr, server) = roomy_server().await;
    let channel = channel(addr).await;
    let limits = Limits::new().with_max_receive(8 * MIB);
    for wire in WIRE {
        let mut client = guarded_client!(
            ResponseGuardLayer::new().with_limits(limits),
            EchoClient::new,
            channel.clone()
        );
        if let Some(encoding) = wire {
            client = client.accept_compressed(encoding);
        }
        let accepted = echo(&mut client, 5 * MIB).await;
        assert_eq!(accepted.unwrap(), 5 * MIB, "{}", what("client", wire, 5));
        let status = echo(&mut client, 9 * MIB).await.unwrap_err();
        assert_refused(&status, 8 * MIB, &what("client", wire, 9));
    }
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_send_limit_reaches_tonic_through_the_macros() {
    // Server: responses above its send limit are refused by tonic's encoder.
    let limits = Limits::new().with_max_send(MIB);
    let service = guarded_server!(
        RequestGuardLayer::new().with_limits(limits),
        EchoServer::new(EchoService)
    );
    let (addr, server) = serve!(Server::builder().add_service(service));
    let mut client = EchoClient::new(channel(addr).await);
    assert_eq!(echo(&mut client, MIB - 16).await.unwrap(), MIB - 16);
    let status = echo(&mut client, 2 * MIB).await.unwrap_err();
    assert_eq!(status.code(), Code::OutOfRange, "{status:?}");
    server.abort();

    // Client: requests above its send limit never leave.
    let (addr, server) = roomy_server().await;
    let mut client = guarded_client!(
        ResponseGuardLayer::new().with_limits(limits),
        EchoClient::new,
        channel(addr).await
    );
    assert_eq!(echo(&mut client, MIB - 16).await.unwrap(), MIB - 16);
    let status = echo(&mut client, 2 * MIB).await.unwrap_err();
    // tonic's client encoder fails the request body, and h2 resets the
    // stream: tonic reports that as INTERNAL, not its encoder's OUT_OF_RANGE.
    assert_eq!(status.code(), Code::Internal, "{status:?}");
    assert!(status.message().contains("h2 protocol error"), "{status:?}");
    server.abort();
}
