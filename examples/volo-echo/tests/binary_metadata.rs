//! `BinaryMetadataLayer` against a real volo-grpc adapter server over
//! loopback: volo-grpc 0.12.2's server kills the stream of any request with
//! `-bin` metadata (a panic in its metadata scan, `RST_STREAM` on the wire);
//! behind the layer the same request is answered.

mod support;

use std::net::{Ipv4Addr, SocketAddr};

use bytes::Bytes;
use grpc_stream_codec::volo::{BinaryMetadataLayer, DeflateNameLayer};
use http::Request;
use tokio::net::TcpStream;
use volo_echo::EchoService;
use volo_echo::adapter::EchoServer;
use volo_grpc::server::{Server, ServiceBuilder};

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

/// A Unary call echoing `hi` with binary metadata: the response's
/// `grpc-status` and body, or the HTTP/2 error that ended the stream.
async fn unary_with_binary_metadata(addr: SocketAddr) -> Result<(String, Vec<u8>), h2::Error> {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (client, connection) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let mut client = client.ready().await?;
    let request = Request::builder()
        .method("POST")
        .uri(format!("http://{addr}/streamcodec.echo.v1.Echo/Unary"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .header("x-trace-bin", "AQID")
        .body(())
        .unwrap();
    let (response, mut send) = client.send_request(request, false)?;
    // EchoRequest { payload: "hi" }
    send.send_data(support::envelope(false, b"\x0a\x02hi"), true)?;
    let mut body = response.await?.into_body();
    let mut data = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk: Bytes = chunk?;
        let _ = body.flow_control().release_capacity(chunk.len());
        data.extend_from_slice(&chunk);
    }
    let trailers = body.trailers().await?.unwrap_or_default();
    let status = trailers
        .get("grpc-status")
        .map(|value| value.to_str().unwrap().to_owned())
        .unwrap_or_default();
    Ok((status, data))
}

#[tokio::test]
async fn binary_metadata_is_served_behind_the_layer() {
    let addr = serve(true).await;
    let (status, body) = unary_with_binary_metadata(addr).await.unwrap();
    assert_eq!(status, "0");
    assert_eq!(support::uncompressed_payloads(&body), [b"\x0a\x02hi"]);
}

#[tokio::test]
async fn without_the_layer_volo_grpc_resets_the_stream() {
    // What the layer exists for; if volo-grpc fixes its scan this fails,
    // and the layer can go.
    let addr = serve(false).await;
    let err = unary_with_binary_metadata(addr)
        .await
        .expect_err("volo-grpc 0.12.2 kills streams with -bin metadata");
    assert!(err.is_reset() || err.is_io() || err.is_go_away(), "{err:?}");
}
