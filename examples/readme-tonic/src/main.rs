//! The README's tonic snippets ("Codec only" and "The guard layer"),
//! compiled and run: each way of guarding a server shown there serves the
//! Echo service on 127.0.0.1, and the README's guarded client calls it.
//! The README's code blocks are copied from the marked regions of this file,
//! `build.rs` and `Cargo.toml`, and a test checks they stay equal.

use std::error::Error;
use std::net::SocketAddr;

use tonic::codegen::BoxStream;
use tonic::transport::server::TcpIncoming;
use tonic::{Request, Response, Status, Streaming};

// snippet include
/// The code tonic-prost-build generated in build.rs.
pub mod pb {
    tonic::include_proto!("streamcodec.echo.v1");
}
// end snippet

use pb::echo_client::EchoClient;
use pb::echo_server::{Echo, EchoServer};
use pb::{EchoRequest, EchoResponse};

/// Echoes unary requests; the streaming methods are not part of the README.
#[derive(Clone, Copy, Debug, Default)]
pub struct MyEcho;

#[tonic::async_trait]
impl Echo for MyEcho {
    async fn unary(&self, request: Request<EchoRequest>) -> Result<Response<EchoResponse>, Status> {
        // With `.bytes(".")` the payload is a `bytes::Bytes`.
        let payload = request.into_inner().payload;
        Ok(Response::new(EchoResponse {
            payload,
            ..EchoResponse::default()
        }))
    }

    type ServerStreamStream = BoxStream<EchoResponse>;

    async fn server_stream(
        &self,
        _request: Request<EchoRequest>,
    ) -> Result<Response<Self::ServerStreamStream>, Status> {
        Err(Status::unimplemented("not part of the README example"))
    }

    async fn client_stream(
        &self,
        _request: Request<Streaming<EchoRequest>>,
    ) -> Result<Response<EchoResponse>, Status> {
        Err(Status::unimplemented("not part of the README example"))
    }

    type BidiStream = BoxStream<EchoResponse>;

    async fn bidi(
        &self,
        _request: Request<Streaming<EchoRequest>>,
    ) -> Result<Response<Self::BidiStream>, Status> {
        Err(Status::unimplemented("not part of the README example"))
    }
}

/// The guard for every service of a server.
async fn serve_every_service(incoming: TcpIncoming) -> Result<(), tonic::transport::Error> {
    // snippet guard-server
    use grpc_stream_codec::tonic::guard::{GuardMode, RequestGuardLayer};
    use tonic::transport::Server;

    // Every request body of every service, at the guard's default limit,
    // 4 MiB, which is also tonic's default.
    Server::builder()
        .layer(RequestGuardLayer::new().with_mode(GuardMode::PassThrough))
        .add_service(EchoServer::new(MyEcho))
        .serve_with_incoming(incoming)
        .await
    // end snippet
}

/// The guard for one service, with one limit for the guard and tonic.
async fn serve_one_service(incoming: TcpIncoming) -> Result<(), tonic::transport::Error> {
    // snippet guard-service
    use grpc_stream_codec::Limits;
    use grpc_stream_codec::tonic::guard::{RequestGuardLayer, guarded_server};
    use tonic::codec::CompressionEncoding;
    use tonic::transport::Server;

    // guarded_server! sets the service's max_decoding_message_size and
    // max_encoding_message_size from the guard's limits: one limit.
    let limits = Limits::new().with_max_receive(8 * 1024 * 1024);
    let echo = guarded_server!(
        RequestGuardLayer::new().with_limits(limits),
        EchoServer::new(MyEcho).accept_compressed(CompressionEncoding::Gzip)
    );
    Server::builder()
        .add_service(echo)
        .serve_with_incoming(incoming)
        .await
    // end snippet
}

/// The guard for one service through `tower::ServiceBuilder`.
async fn serve_through_service_builder(
    incoming: TcpIncoming,
) -> Result<(), tonic::transport::Error> {
    // snippet guard-service-builder
    use grpc_stream_codec::tonic::guard::RequestGuardLayer;
    use tonic::transport::Server;
    use tower::ServiceBuilder;

    // A guarded generated server is a NamedService, so it goes into
    // add_service as it is. Limits are then yours to keep equal.
    let echo = ServiceBuilder::new()
        .layer(RequestGuardLayer::new())
        .service(EchoServer::new(MyEcho));
    Server::builder()
        .add_service(echo)
        .serve_with_incoming(incoming)
        .await
    // end snippet
}

/// The README's guarded client: one unary call to `addr`, the echoed bytes.
async fn call(addr: SocketAddr, payload: &'static str) -> Result<Vec<u8>, Box<dyn Error>> {
    // snippet guard-client
    use grpc_stream_codec::Limits;
    use grpc_stream_codec::tonic::guard::{ResponseGuardLayer, guarded_client};
    use tonic::transport::Endpoint;

    let channel = Endpoint::from_shared(format!("http://{addr}"))?
        .connect()
        .await?;
    // guarded_client! wraps the channel in the guard and sets the client's
    // tonic limits from the guard's.
    let limits = Limits::new().with_max_receive(8 * 1024 * 1024);
    let mut client = guarded_client!(
        ResponseGuardLayer::new().with_limits(limits),
        EchoClient::new,
        channel
    );
    let reply = client
        .unary(EchoRequest {
            payload: payload.into(),
            ..EchoRequest::default()
        })
        .await?;
    // end snippet
    Ok(reply.into_inner().payload.to_vec())
}

/// Serves with each README server setup in turn on an ephemeral port and
/// calls it with the README client.
async fn run() -> Result<(), Box<dyn Error>> {
    for setup in ["every service", "one service", "ServiceBuilder"] {
        let incoming = TcpIncoming::bind(SocketAddr::from(([127, 0, 0, 1], 0)))?;
        let addr = incoming.local_addr()?;
        let server = tokio::spawn(async move {
            match setup {
                "every service" => serve_every_service(incoming).await,
                "one service" => serve_one_service(incoming).await,
                _ => serve_through_service_builder(incoming).await,
            }
        });
        let echoed = call(addr, "hello").await?;
        if echoed != b"hello" {
            return Err(format!("{setup}: echoed {echoed:?}").into());
        }
        println!("{setup}: echoed {:?}", String::from_utf8_lossy(&echoed));
        server.abort();
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    run().await
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn every_readme_setup_serves_the_readme_client() {
        super::run().await.unwrap();
    }
}
