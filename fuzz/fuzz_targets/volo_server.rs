//! The volo adapter Echo server (volo-grpc's server stack, the generated
//! service rewritten by grpc-stream-codec's hook, behind `BinaryMetadataLayer`
//! and `DeflateNameLayer` as the example serves it) against a hostile HTTP/2
//! client over an in-memory duplex (`h2_peer.rs`). Nothing may panic.
//!
//! volo-grpc's `Server::run` only takes sockets, so the target composes the
//! same stack `run` does (hyper's HTTP/2 connection, the connection's
//! request boxing, tower layers, volo-grpc's `MetaService`, motore layers,
//! the `Router`) over the duplex.
#![no_main]

#[path = "h2_peer.rs"]
mod h2_peer;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use libfuzzer_sys::fuzz_target;
use motore::layer::Layer as _;
use tower::Layer as _;
use volo_echo::EchoService;
use volo_echo::adapter::EchoServer;
use volo_grpc::server::{MetaService, Router, ServiceBuilder};

fuzz_target!(|data: &[u8]| {
    let mut input = h2_peer::Input::new(data);
    h2_peer::runtime().block_on(async {
        let (client_io, server_io) = tokio::io::duplex(64 * 1024);
        let service = ServiceBuilder::new(EchoServer::new(EchoService::default()))
            .send_compressions(volo_echo::all_compressions())
            .accept_compressions(volo_echo::all_compressions())
            .build();
        let router = Router::new().add_service(service);
        let inner = grpc_stream_codec::volo::DeflateNameLayer.layer(router);
        let meta = MetaService::new(inner, volo_grpc::tracing::DefaultProvider);
        let stack = grpc_stream_codec::volo::BinaryMetadataLayer.layer(meta);
        let serve = hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
            let mut stack = stack.clone();
            async move { tower::Service::call(&mut stack, req.map(volo_grpc::body::boxed)).await }
        });
        let server = tokio::spawn(async move {
            let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                .timer(TokioTimer::new())
                .serve_connection(TokioIo::new(server_io), serve)
                .await;
        });
        let _ = tokio::time::timeout(
            h2_peer::RUN_LIMIT,
            h2_peer::client_side(client_io, &mut input),
        )
        .await;
        server.abort();
        let _ = server.await;
    });
});
