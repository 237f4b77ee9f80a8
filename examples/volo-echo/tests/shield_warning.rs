//! A volo-grpc server whose calls reach the adapter without
//! `BinaryMetadataLayer` logs one warning naming the fix; behind the layer
//! it logs none. The warning is once per process, so one test serves both
//! servers in order: the shielded one first.

mod support;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Mutex;

use bytes::Bytes;
use grpc_stream_codec::volo::{BinaryMetadataLayer, DeflateNameLayer};
use http::Request;
use tokio::net::TcpStream;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};
use volo_echo::EchoService;
use volo_echo::adapter::EchoServer;
use volo_grpc::server::{Server, ServiceBuilder};

/// Every warning's message logged in this process.
static WARNINGS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// A subscriber that keeps the message of every `WARN` event.
struct Warnings;

struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl Subscriber for Warnings {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        *metadata.level() == tracing::Level::WARN
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut message = Message(String::new());
        event.record(&mut message);
        WARNINGS.lock().unwrap().push(message.0);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

fn shield_warnings() -> usize {
    WARNINGS
        .lock()
        .unwrap()
        .iter()
        .filter(|message| message.contains("layer_tower(BinaryMetadataLayer)"))
        .count()
}

/// An adapter server, behind the layer or not.
async fn serve(with_layer: bool) -> SocketAddr {
    let (listener, addr) = volo_echo::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .await
        .unwrap();
    let service = ServiceBuilder::new(EchoServer::new(EchoService::default())).build();
    let incoming = volo::net::incoming::DefaultIncoming::from(listener);
    let server = Server::new().layer_front(DeflateNameLayer);
    if with_layer {
        tokio::spawn(
            server
                .layer_tower(BinaryMetadataLayer)
                .add_service(service)
                .run(incoming),
        );
    } else {
        tokio::spawn(server.add_service(service).run(incoming));
    }
    addr
}

/// A Unary call echoing `hi`; its `grpc-status`.
async fn unary(addr: SocketAddr) -> String {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (client, connection) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let mut client = client.ready().await.unwrap();
    let request = Request::builder()
        .method("POST")
        .uri(format!("http://{addr}/streamcodec.echo.v1.Echo/Unary"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())
        .unwrap();
    let (response, mut send) = client.send_request(request, false).unwrap();
    // EchoRequest { payload: "hi" }
    send.send_data(support::envelope(false, b"\x0a\x02hi"), true)
        .unwrap();
    let mut body = response.await.unwrap().into_body();
    while let Some(chunk) = body.data().await {
        let chunk: Bytes = chunk.unwrap();
        let _ = body.flow_control().release_capacity(chunk.len());
    }
    let trailers = body.trailers().await.unwrap().unwrap_or_default();
    trailers
        .get("grpc-status")
        .map(|value| value.to_str().unwrap().to_owned())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_the_layer_warns_once_naming_it() {
    tracing::subscriber::set_global_default(Warnings).unwrap();

    let shielded = serve(true).await;
    assert_eq!(unary(shielded).await, "0");
    assert_eq!(shield_warnings(), 0, "{:?}", WARNINGS.lock().unwrap());

    let unshielded = serve(false).await;
    assert_eq!(unary(unshielded).await, "0");
    assert_eq!(shield_warnings(), 1, "{:?}", WARNINGS.lock().unwrap());
    assert_eq!(unary(unshielded).await, "0");
    assert_eq!(shield_warnings(), 1, "once per process");
}
