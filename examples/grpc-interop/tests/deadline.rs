//! The volo adapter's client and a deadline: a FullDuplexCall that carries
//! `grpc-timeout` but no client-side timer (so volo-grpc's own timeout
//! layer, which covers only the response headers, plays no part) is ended
//! by the server's DEADLINE_EXCEEDED in the trailers, after a first
//! response, and the adapter's `RecvStream` must hand that status to the
//! caller: not a clean end, not another code. Against both interop
//! servers. A guard of seconds turns "nothing ended the call" into a
//! failure instead of a hang.

use std::net::SocketAddr;

use futures::StreamExt;
use grpc_interop::spec::DEADLINE_GUARD;
use grpc_interop::volo_gen::{
    ResponseParameters, StreamingOutputCallRequest, TestServiceClientBuilder,
};
use grpc_interop::{tonic_server, volo_server};
use grpc_stream_codec::volo::ClientCompressionLayer;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use volo_grpc::metadata::MetadataValue;
use volo_grpc::{Code, Request};

async fn start_tonic() -> SocketAddr {
    let (listener, addr) = tonic_server::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    tokio::spawn(tonic_server::serve(listener, Default::default()));
    addr
}

async fn start_volo() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(volo_server::serve(listener, Default::default()));
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_volo_client_gets_the_servers_deadline_exceeded_mid_stream() {
    for (server, addr) in [("tonic", start_tonic().await), ("volo", start_volo().await)] {
        let client = TestServiceClientBuilder::new("deadline")
            .address(addr)
            .rpc_timeout(None)
            .layer_inner(ClientCompressionLayer::new(None, None))
            .build();
        let (requests, stream) = mpsc::channel(1);
        requests
            .send(StreamingOutputCallRequest {
                response_parameters: vec![ResponseParameters {
                    size: 8,
                    ..ResponseParameters::default()
                }],
                ..StreamingOutputCallRequest::default()
            })
            .await
            .unwrap();
        let mut request = Request::new(ReceiverStream::new(stream));
        // Long enough for the first response to come back first.
        request
            .metadata_mut()
            .insert("grpc-timeout", MetadataValue::from_static("500m"));
        let call = async {
            let mut responses = client
                .full_duplex_call(request)
                .await
                .expect("response headers")
                .into_inner();
            let mut received = 0;
            while let Some(response) = responses.next().await {
                if let Err(status) = response {
                    return (received, Some(status));
                }
                received += 1;
            }
            (received, None)
        };
        let (received, status) = tokio::time::timeout(DEADLINE_GUARD, call)
            .await
            .unwrap_or_else(|_| panic!("{server}: nothing ended the call in {DEADLINE_GUARD:?}"));
        drop(requests);
        let Some(status) = status else {
            panic!("{server}: the call ended OK after {received} responses");
        };
        assert_eq!(
            received, 1,
            "{server}: the status came after the first response"
        );
        assert_eq!(
            (status.code(), status.message()),
            (Code::DeadlineExceeded, "Deadline Exceeded"),
            "{server}: {status:?}"
        );
    }
}
