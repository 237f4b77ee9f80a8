//! The README's codec-only tonic snippets, compiled and run: the server
//! serves the Echo service on 127.0.0.1 and the client calls it.
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

/// The README's codec-only server: tonic's server and framing, this
/// crate's codec (named by `codec_path` in build.rs).
async fn serve(incoming: TcpIncoming) -> Result<(), tonic::transport::Error> {
    // snippet server
    use tonic::codec::CompressionEncoding;
    use tonic::transport::Server;

    // Limits are tonic's on this path: its framing reads the envelopes.
    let echo = EchoServer::new(MyEcho)
        .accept_compressed(CompressionEncoding::Gzip)
        .max_decoding_message_size(8 * 1024 * 1024);
    Server::builder()
        .add_service(echo)
        .serve_with_incoming(incoming)
        .await
    // end snippet
}

/// The README's codec-only client: one unary call to `addr`, the echoed bytes.
async fn call(addr: SocketAddr, payload: &'static str) -> Result<Vec<u8>, Box<dyn Error>> {
    // snippet client
    use tonic::codec::CompressionEncoding;
    use tonic::transport::Endpoint;

    let channel = Endpoint::from_shared(format!("http://{addr}"))?
        .connect()
        .await?;
    let mut client = EchoClient::new(channel)
        .send_compressed(CompressionEncoding::Gzip)
        .max_decoding_message_size(8 * 1024 * 1024);
    let reply = client
        .unary(EchoRequest {
            payload: payload.into(),
            ..EchoRequest::default()
        })
        .await?;
    // end snippet
    Ok(reply.into_inner().payload.to_vec())
}

/// Serves the README server on an ephemeral port and calls it with the
/// README client.
async fn run() -> Result<(), Box<dyn Error>> {
    let incoming = TcpIncoming::bind(SocketAddr::from(([127, 0, 0, 1], 0)))?;
    let addr = incoming.local_addr()?;
    let server = tokio::spawn(serve(incoming));
    let echoed = call(addr, "hello").await?;
    server.abort();
    if echoed != b"hello" {
        return Err(format!("echoed {echoed:?}").into());
    }
    println!("echoed {:?}", String::from_utf8_lossy(&echoed));
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    run().await
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn the_readme_server_serves_the_readme_client() {
        super::run().await.unwrap();
    }
}
