//! The tonic full-framing Echo client (grpc-stream-codec's `Grpc` and
//! `Streaming` under a tonic `Channel`) against a hostile HTTP/2 server over
//! an in-memory duplex: arbitrary status, response headers (trailers-only
//! or not), DATA, trailers and resets (`h2_peer.rs`). Nothing may panic.
#![no_main]

#[path = "h2_peer.rs"]
mod h2_peer;

use std::sync::Mutex;

use bytes::Bytes;
use futures_util::StreamExt;
use hyper_util::rt::TokioIo;
use libfuzzer_sys::fuzz_target;
use tonic::transport::Endpoint;
use tonic_echo::adapter::EchoRequest;
use tonic_echo::full::echo_client::EchoClient;

fuzz_target!(|data: &[u8]| {
    let mut input = h2_peer::Input::new(data);
    h2_peer::runtime().block_on(async {
        let (client_io, server_io) = tokio::io::duplex(64 * 1024);
        let client_io = Mutex::new(Some(client_io));
        let connector = tower::service_fn(move |_: http::Uri| {
            let io = client_io.lock().ok().and_then(|mut io| io.take());
            async move {
                io.map(TokioIo::new)
                    .ok_or_else(|| std::io::Error::other("one connection per run"))
            }
        });
        let Ok(channel) = Endpoint::from_static("http://fuzz")
            .connect_with_connector(connector)
            .await
        else {
            return;
        };
        let method = input.byte() % 4;
        let call = async move {
            let mut client = EchoClient::new(channel);
            let request = || EchoRequest {
                payload: Bytes::from_static(b"hi"),
                ..EchoRequest::default()
            };
            match method {
                0 => {
                    let _ = client.unary(request()).await;
                }
                1 => {
                    if let Ok(response) = client.server_stream(request()).await {
                        let mut stream = response.into_inner();
                        while let Some(Ok(_)) = stream.next().await {}
                    }
                }
                2 => {
                    let _ = client
                        .client_stream(tokio_stream::iter([request(), request()]))
                        .await;
                }
                _ => {
                    if let Ok(response) = client.bidi(tokio_stream::iter([request()])).await {
                        let mut stream = response.into_inner();
                        while let Some(Ok(_)) = stream.next().await {}
                    }
                }
            }
        };
        let (_, tasks) = tokio::join!(
            tokio::time::timeout(h2_peer::RUN_LIMIT, call),
            h2_peer::server_side(server_io, &mut input)
        );
        for task in tasks {
            task.abort();
        }
    });
});
