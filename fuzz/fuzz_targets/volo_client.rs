//! The volo adapter Echo client, built as the README shows (the generated
//! `EchoClientBuilder`, rewritten by grpc-stream-codec's hook, no layer
//! added), against a hostile HTTP/2 server (`h2_peer.rs`): arbitrary status,
//! response headers (trailers-only or not), DATA, trailers and resets.
//! Nothing may panic.
//!
//! The client only dials socket addresses, so the peer listens on loopback
//! (one connection per run) instead of an in-memory duplex.
#![no_main]

#[path = "h2_peer.rs"]
mod h2_peer;

use bytes::Bytes;
use futures_util::StreamExt;
use libfuzzer_sys::fuzz_target;
use tokio::net::TcpListener;
use volo_echo::adapter::EchoRequest;

fuzz_target!(|data: &[u8]| {
    let mut input = h2_peer::Input::new(data);
    h2_peer::runtime().block_on(async {
        let Ok(listener) = TcpListener::bind(("127.0.0.1", 0)).await else {
            return;
        };
        let Ok(addr) = listener.local_addr() else {
            return;
        };
        let method = input.byte() % 4;
        let call = async move {
            let client = volo_echo::adapter::client(addr, None);
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
                        .client_stream(futures_util::stream::iter([request(), request()]))
                        .await;
                }
                _ => {
                    if let Ok(response) = client.bidi(futures_util::stream::iter([request()])).await
                    {
                        let mut stream = response.into_inner();
                        while let Some(Ok(_)) = stream.next().await {}
                    }
                }
            }
        };
        let peer = async {
            match listener.accept().await {
                Ok((tcp, _)) => h2_peer::server_side(tcp, &mut input).await,
                Err(_) => Vec::new(),
            }
        };
        let (_, tasks) = tokio::join!(tokio::time::timeout(h2_peer::RUN_LIMIT, call), async {
            tokio::time::timeout(h2_peer::RUN_LIMIT, peer)
                .await
                .unwrap_or_default()
        });
        for task in tasks {
            task.abort();
        }
    });
});
