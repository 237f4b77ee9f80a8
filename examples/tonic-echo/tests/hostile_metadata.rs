//! The header and status values that panic volo-grpc 0.12.2 (and stock
//! tonic 0.14's client, on an invalid trailers-only
//! `grpc-status-details-bin`), against tonic full framing over loopback.
//! Each case gets a status or `OK`, never a panic:
//!
//! - the full-framing server, from a raw HTTP/2 client: valid `-bin` request
//!   metadata is served, invalid is `internal` (as grpc-go answers);
//! - the full-framing client, against a raw HTTP/2 server: valid `-bin`
//!   response headers reach the caller, invalid ones are `internal`; an
//!   invalid `grpc-status-details-bin` trailers-only or in trailers is
//!   `internal`; binary trailers end the call.
//!
//! `scripts/abort_bad_input.sh` runs these with `panic = "abort"`.

use std::net::SocketAddr;

use bytes::Bytes;
use prost::Message;
use test_support::raw_h2::{Script, call, envelope, serve_script};
use tokio::task::JoinHandle;
use tokio_stream::StreamExt;
use tonic::Code;
use tonic_echo::adapter::{EchoRequest, EchoResponse};
use tonic_echo::full::echo_client::EchoClient;
use tonic_echo::{Framing, ServeOptions};

const NOT_BASE64: &str = "%%not*base64%%";

async fn start_full() -> (SocketAddr, JoinHandle<()>) {
    let (listener, addr) = tonic_echo::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("bind 127.0.0.1:0");
    let options = ServeOptions {
        framing: Framing::Full,
        ..ServeOptions::default()
    };
    let server = tokio::spawn(async move {
        tonic_echo::serve_with(listener, options)
            .await
            .expect("the server runs");
    });
    (addr, server)
}

fn hi() -> Bytes {
    let request = EchoRequest {
        payload: Bytes::from_static(b"hi"),
        ..EchoRequest::default()
    };
    Bytes::from(envelope(0, &request.encode_to_vec()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_full_server_serves_valid_binary_metadata_and_refuses_invalid_with_internal() {
    let (addr, server) = start_full().await;
    for method in ["Unary", "ServerStream", "ClientStream", "Bidi"] {
        let path = format!("/streamcodec.echo.v1.Echo/{method}");
        let response = call(addr, &path, &[("x-trace-bin", "AAEC")], hi()).await;
        assert_eq!(response.grpc_status(), Some(0), "{method}: {response:?}");

        for headers in [
            &[("x-hostile-bin", NOT_BASE64)][..],
            &[("x-trace-bin", "AAEC"), ("x-hostile-bin", "A")][..],
            &[("grpc-status-details-bin", NOT_BASE64)][..],
        ] {
            let response = call(addr, &path, headers, hi()).await;
            assert_eq!(
                response.grpc_status(),
                Some(Code::Internal as i32),
                "{method} {headers:?}: {response:?}"
            );
            assert!(
                response
                    .grpc_message()
                    .contains("malformed binary metadata"),
                "{response:?}"
            );
        }
    }
    let response = call(addr, "/streamcodec.echo.v1.Echo/Unary", &[], hi()).await;
    assert_eq!(
        response.grpc_status(),
        Some(0),
        "still serving: {response:?}"
    );
    server.abort();
}

/// What the full-framing client made of one scripted response: the unary
/// call's result, and the server stream's (messages, then its status).
async fn client_outcomes(
    script: Script,
) -> (
    Result<tonic::Response<EchoResponse>, tonic::Status>,
    Result<usize, tonic::Status>,
) {
    let (addr, server) = serve_script(script).await;
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .expect("valid URI")
        .connect()
        .await
        .expect("connect");
    let mut client = EchoClient::new(channel);
    let unary = client.unary(EchoRequest::default()).await;
    let stream = async {
        let mut responses = client
            .server_stream(EchoRequest::default())
            .await?
            .into_inner();
        let mut count = 0;
        while let Some(response) = responses.next().await {
            response?;
            count += 1;
        }
        Ok(count)
    }
    .await;
    server.abort();
    (unary, stream)
}

fn one_message() -> Vec<u8> {
    envelope(0, &EchoResponse::default().encode_to_vec())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_valid_binary_response_header_reaches_the_full_client() {
    let (unary, stream) = client_outcomes(Script::full(
        &[("x-echo-bin", "AAEC")],
        &one_message(),
        &[("grpc-status", "0")],
    ))
    .await;
    let response = unary.expect("the call succeeds");
    let value = response
        .metadata()
        .get_bin("x-echo-bin")
        .expect("the -bin header is in the response metadata")
        .to_bytes()
        .expect("base64");
    assert_eq!(&value[..], [0, 1, 2]);
    assert_eq!(stream.expect("the stream ends OK"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_binary_response_header_is_internal() {
    for headers in [
        &[("x-hostile-bin", NOT_BASE64)][..],
        &[("x-echo-bin", "AAEC"), ("x-hostile-bin", "A")][..],
    ] {
        let (unary, stream) = client_outcomes(Script::full(
            headers,
            &one_message(),
            &[("grpc-status", "0")],
        ))
        .await;
        for status in [unary.err(), stream.err()] {
            let status = status.expect("the call fails");
            assert_eq!(status.code(), Code::Internal, "{status:?}");
            assert!(
                status.message().contains("malformed binary metadata"),
                "{status:?}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_grpc_status_details_bin_is_internal_trailers_only_or_not() {
    let scripts = [
        Script::trailers_only(&[
            ("grpc-status", "3"),
            ("grpc-message", "bad"),
            ("grpc-status-details-bin", NOT_BASE64),
        ]),
        Script::trailers_only(&[
            ("grpc-status", "0"),
            ("grpc-status-details-bin", NOT_BASE64),
        ]),
        Script::full(
            &[],
            &one_message(),
            &[
                ("grpc-status", "3"),
                ("grpc-status-details-bin", NOT_BASE64),
            ],
        ),
    ];
    for script in scripts {
        let case = format!("{script:?}");
        let (unary, stream) = client_outcomes(script).await;
        for status in [unary.err(), stream.err()] {
            let status = status.unwrap_or_else(|| panic!("{case}: the call fails"));
            assert_eq!(status.code(), Code::Internal, "{case}: {status:?}");
            assert!(
                status.message().contains("invalid grpc-status-details-bin"),
                "{case}: {status:?}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_trailers_valid_or_not_end_the_call() {
    for trailers in [
        &[("grpc-status", "0"), ("x-t-bin", "AAEC")][..],
        &[("grpc-status", "0"), ("x-t-bin", NOT_BASE64)][..],
        &[("grpc-status", "9"), ("x-t-bin", NOT_BASE64)][..],
    ] {
        let (unary, stream) = client_outcomes(Script::full(&[], &one_message(), trailers)).await;
        let ok = trailers[0].1 == "0";
        assert_eq!(unary.is_ok(), ok, "{trailers:?}: {:?}", unary.err());
        assert_eq!(stream.is_ok(), ok, "{trailers:?}: {stream:?}");
    }
}
