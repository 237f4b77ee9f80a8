//! The tonic full-framing Echo server (grpc-stream-codec's `Grpc` under
//! tonic's `Server`) against a hostile HTTP/2 client over an in-memory
//! duplex: arbitrary request headers, DATA, trailers and resets
//! (`h2_peer.rs`). Nothing may panic.
#![no_main]

#[path = "h2_peer.rs"]
mod h2_peer;

use libfuzzer_sys::fuzz_target;
use tonic::transport::Server;

fuzz_target!(|data: &[u8]| {
    let mut input = h2_peer::Input::new(data);
    h2_peer::runtime().block_on(async {
        let (client_io, server_io) = tokio::io::duplex(64 * 1024);
        let mut service = tonic_echo::full::echo_server::EchoServer::new(tonic_echo::EchoService);
        for encoding in tonic_echo::ENCODINGS {
            service = service
                .accept_compressed(encoding)
                .send_compressed(encoding);
        }
        let incoming = tokio_stream::once(Ok::<_, std::io::Error>(server_io));
        let server = tokio::spawn(
            Server::builder()
                .add_service(service)
                .serve_with_incoming(incoming),
        );
        let _ = tokio::time::timeout(
            h2_peer::RUN_LIMIT,
            h2_peer::client_side(client_io, &mut input),
        )
        .await;
        server.abort();
        let _ = server.await;
    });
});
