//! What the interop servers do beyond the client cases: HalfDuplexCall
//! answers after the request stream ends, in order, and refuses to buffer
//! more than `MAX_HALF_DUPLEX_REQUESTS`; sizes the server will not build
//! are `INVALID_ARGUMENT`. Each against the tonic and the volo server.

use std::net::SocketAddr;

use futures::stream;
use grpc_interop::spec::MAX_HALF_DUPLEX_REQUESTS;
use grpc_interop::tonic_gen::test_service_client::TestServiceClient;
use grpc_interop::tonic_gen::{ResponseParameters, SimpleRequest, StreamingOutputCallRequest};
use grpc_interop::{tonic_server, volo_server};
use tonic::Code;
use tonic::transport::Channel;

async fn servers() -> [(&'static str, SocketAddr); 2] {
    let (listener, tonic) = tonic_server::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    tokio::spawn(tonic_server::serve(listener, Default::default()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let volo = listener.local_addr().unwrap();
    tokio::spawn(volo_server::serve(listener, Default::default()));
    [("tonic", tonic), ("volo", volo)]
}

async fn client(addr: SocketAddr) -> TestServiceClient<Channel> {
    TestServiceClient::connect(format!("http://{addr}"))
        .await
        .unwrap()
}

fn asking_for(size: i32) -> StreamingOutputCallRequest {
    StreamingOutputCallRequest {
        response_parameters: vec![ResponseParameters {
            size,
            ..ResponseParameters::default()
        }],
        ..StreamingOutputCallRequest::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_duplex_answers_every_request_in_order_after_the_stream_ends() {
    for (server, addr) in servers().await {
        let requests = stream::iter([3, 1, 2].map(asking_for));
        let mut responses = client(addr)
            .await
            .half_duplex_call(requests)
            .await
            .unwrap()
            .into_inner();
        let mut sizes = Vec::new();
        while let Some(response) = responses.message().await.unwrap() {
            sizes.push(response.payload.unwrap().body.len());
        }
        assert_eq!(sizes, [3, 1, 2], "{server}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_duplex_refuses_to_buffer_without_bound() {
    for (server, addr) in servers().await {
        let at_cap = stream::iter((0..MAX_HALF_DUPLEX_REQUESTS).map(|_| asking_for(0)));
        let mut responses = client(addr)
            .await
            .half_duplex_call(at_cap)
            .await
            .unwrap()
            .into_inner();
        let mut count = 0;
        while responses.message().await.unwrap().is_some() {
            count += 1;
        }
        assert_eq!(count, MAX_HALF_DUPLEX_REQUESTS, "{server}");

        let over = stream::iter((0..=MAX_HALF_DUPLEX_REQUESTS).map(|_| asking_for(0)));
        let outcome = async {
            let mut responses = client(addr)
                .await
                .half_duplex_call(over)
                .await?
                .into_inner();
            while responses.message().await?.is_some() {}
            Ok::<(), tonic::Status>(())
        }
        .await;
        let status = outcome.expect_err("one request over the cap was answered");
        assert_eq!(
            status.code(),
            Code::ResourceExhausted,
            "{server}: {status:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sizes_the_server_will_not_build_are_invalid_argument() {
    for (server, addr) in servers().await {
        for size in [-1, i32::MAX] {
            let request = SimpleRequest {
                response_size: size,
                ..SimpleRequest::default()
            };
            let status = client(addr).await.unary_call(request).await.unwrap_err();
            assert_eq!(
                status.code(),
                Code::InvalidArgument,
                "{server}, {size}: {status:?}"
            );
            // The error may come in the trailers or as a trailers-only
            // answer; either way it is the call's status.
            let outcome = async {
                let mut client = client(addr).await;
                let mut responses = client.streaming_output_call(asking_for(size)).await?;
                responses.get_mut().message().await
            }
            .await;
            let status = outcome.expect_err("a response of a refused size");
            assert_eq!(
                status.code(),
                Code::InvalidArgument,
                "{server}, {size}: {status:?}"
            );
        }
    }
}

/// tonic's interop client's `status_code_and_message`, streaming half: the
/// first request of a FullDuplexCall asks for a status, and the call itself
/// (not its first message) fails with it, as against grpc-go's server: the
/// status comes back trailers-only, before any response.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_asked_for_by_the_first_duplex_request_fails_the_call_itself() {
    use grpc_interop::tonic_gen::EchoStatus;
    for (server, addr) in servers().await {
        let first = StreamingOutputCallRequest {
            response_status: Some(EchoStatus {
                code: 2,
                message: "test status message".to_owned(),
            }),
            ..asking_for(1)
        };
        let called = client(addr)
            .await
            .full_duplex_call(stream::iter([first]))
            .await;
        let status = match called {
            Err(status) => status,
            Ok(_) => panic!("{server}: the call answered OK; its first message carries the status"),
        };
        assert_eq!(status.code(), Code::Unknown, "{server}");
        assert_eq!(status.message(), "test status message", "{server}");
    }
}
