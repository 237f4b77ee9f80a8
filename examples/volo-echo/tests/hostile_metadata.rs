//! Header and status values that panic volo-grpc 0.12.2, against the volo
//! adapter's server and client over loopback. Each case gets a
//! status or `OK`, never a panic:
//!
//! - server (the example server, behind `BinaryMetadataLayer`), from a raw
//!   HTTP/2 client: valid and invalid `-bin` request metadata (volo-grpc's
//!   `server/meta.rs` `unreachable!()` on any of them);
//! - client (built as the README shows, no layer added), against a raw
//!   HTTP/2 server: valid and invalid `-bin` response headers (`client/meta.rs`
//!   `unreachable!()`), trailers-only and trailers with an invalid
//!   `grpc-status-details-bin` (`status.rs` `.expect` on the trailers-only
//!   one);
//! - both together: a valid `-bin` request header reaches the handler
//!   decoded, and the `-bin` response header it sends back reaches the
//!   client.
//!
//! `scripts/abort_bad_input.sh` runs these with `panic = "abort"`, where a
//! framework panic kills the test process instead of one task.

mod support;

use bytes::Bytes;
use support::{Flavour, envelope, raw_call, start};
use test_support::raw_h2::{Script, serve_script};
use volo_echo::adapter::{self, EchoRequest, calls};
use volo_echo::{CallError, ECHO_BIN, EchoService};

const INTERNAL: i32 = 13;

/// `EchoRequest { payload: "hi" }`.
fn hi() -> Bytes {
    envelope(false, b"\x0a\x02hi")
}

/// An empty `EchoResponse` in an envelope.
const ONE_MESSAGE: &[u8] = b"\0\0\0\0\0";

const NOT_BASE64: &str = "%%not*base64%%";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_serves_valid_binary_metadata_and_refuses_invalid_with_internal() {
    let server = start(Flavour::Adapter, EchoService::default()).await;

    // Valid: served, and the handler saw it decoded (it sends it back).
    let response = raw_call(
        server.addr,
        "Unary",
        &[(ECHO_BIN, "AAEC"), ("x-other-bin", "AQ==")],
        hi(),
    )
    .await;
    assert_eq!(response.grpc_status(), Some(0), "{response:?}");
    assert_eq!(response.headers[ECHO_BIN], "AAEC", "{response:?}");
    assert_eq!(
        support::uncompressed_payloads(&response.body()),
        [b"\x0a\x02hi"]
    );

    // The streaming methods too.
    for method in ["ClientStream", "Bidi"] {
        let response = raw_call(server.addr, method, &[("x-trace-bin", "AAEC")], hi()).await;
        assert_eq!(response.grpc_status(), Some(0), "{method}: {response:?}");
    }

    // Invalid, alone or next to valid ones, and a `-bin` name of gRPC's own:
    // `internal`, trailers-only, as grpc-go answers.
    for headers in [
        &[("x-hostile-bin", NOT_BASE64)][..],
        &[(ECHO_BIN, "AAEC"), ("x-hostile-bin", "A")][..],
        &[("grpc-status-details-bin", NOT_BASE64)][..],
    ] {
        for method in ["Unary", "ServerStream", "ClientStream", "Bidi"] {
            let response = raw_call(server.addr, method, headers, hi()).await;
            assert_eq!(
                response.grpc_status(),
                Some(INTERNAL),
                "{method} {headers:?}: {response:?}"
            );
            assert!(
                response
                    .grpc_message()
                    .contains("malformed binary metadata"),
                "{response:?}"
            );
            assert!(response.trailers.is_none(), "trailers-only: {response:?}");
        }
    }

    // And the server goes on serving.
    let response = raw_call(server.addr, "Unary", &[], hi()).await;
    assert_eq!(response.grpc_status(), Some(0), "{response:?}");
}

/// A valid `-bin` request header from the adapter's own client reaches the
/// adapter server's handler decoded; the `-bin` response header the handler
/// sends back reaches the client, which decodes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_metadata_goes_both_ways_between_adapter_client_and_server() {
    let server = start(Flavour::Adapter, EchoService::default()).await;
    let client = adapter::client(server.addr, None);
    let value: &[u8] = b"\xff\x00\x07\x80binary";
    let mut request = volo_grpc::Request::new(EchoRequest {
        payload: Bytes::from_static(b"hi"),
        ..Default::default()
    });
    request.metadata_mut().insert_bin(
        ECHO_BIN,
        volo_grpc::metadata::MetadataValue::from_bytes(value),
    );
    let response = client.unary(request).await.expect("the call succeeds");
    let echoed = response
        .metadata()
        .get_bin(ECHO_BIN)
        .expect("the handler sent the value back")
        .to_bytes()
        .expect("base64");
    assert_eq!(&echoed[..], value);
    assert_eq!(&response.into_inner().payload[..], b"hi");
}

/// What the adapter's client made of one scripted response: the `Unary`
/// call's result, and `ServerStream`'s (messages, then the status it ended
/// with if not OK).
type Outcome = (
    Result<volo_grpc::Response<adapter::EchoResponse>, volo_grpc::Status>,
    Result<(u32, Option<volo_grpc::Status>), CallError>,
);

/// The [`Outcome`] of one scripted response.
async fn client_outcomes(script: Script) -> Outcome {
    let (addr, server) = serve_script(script).await;
    // As the README builds a client: no layer added.
    let client = adapter::client(addr, None);
    let unary = client.unary(EchoRequest::default()).await;
    let stream = calls::server_stream(&client, 0, 1).await;
    server.abort();
    (unary, stream)
}

/// The status a call failed with, from either shape of outcome.
fn failed(outcome: &Outcome) -> [Option<(volo_grpc::Code, String)>; 2] {
    let status = |status: &volo_grpc::Status| (status.code(), status.message().to_owned());
    let unary = outcome.0.as_ref().err().map(status);
    let stream = match &outcome.1 {
        Ok((_, Some(s))) => Some(status(s)),
        Err(CallError::Status(s)) => Some(status(s)),
        Ok((_, None)) | Err(CallError::Mismatch(_)) => None,
    };
    [unary, stream]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_valid_binary_response_header_reaches_the_client() {
    let outcome = client_outcomes(Script::full(
        &[(ECHO_BIN, "AAEC")],
        ONE_MESSAGE,
        &[("grpc-status", "0")],
    ))
    .await;
    let response = outcome.0.expect("the call succeeds");
    let value = response
        .metadata()
        .get_bin(ECHO_BIN)
        .expect("the -bin header is in the response metadata")
        .to_bytes()
        .expect("base64");
    assert_eq!(&value[..], [0, 1, 2]);
    assert!(matches!(outcome.1, Ok((1, None))), "{:?}", outcome.1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_binary_response_header_is_internal() {
    for headers in [
        &[("x-hostile-bin", NOT_BASE64)][..],
        &[(ECHO_BIN, "AAEC"), ("x-hostile-bin", "A")][..],
    ] {
        let outcome =
            client_outcomes(Script::full(headers, ONE_MESSAGE, &[("grpc-status", "0")])).await;
        for failure in failed(&outcome) {
            let (code, message) = failure.expect("the call fails");
            assert_eq!(code, volo_grpc::Code::Internal, "{message}");
            assert!(message.contains("malformed binary metadata"), "{message}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_grpc_status_details_bin_is_internal_trailers_only_or_not() {
    let scripts = [
        // Trailers-only, with an error status and with OK.
        Script::trailers_only(&[
            ("grpc-status", "3"),
            ("grpc-message", "bad"),
            ("grpc-status-details-bin", NOT_BASE64),
        ]),
        Script::trailers_only(&[
            ("grpc-status", "0"),
            ("grpc-status-details-bin", NOT_BASE64),
        ]),
        // In ordinary trailers.
        Script::full(
            &[],
            ONE_MESSAGE,
            &[
                ("grpc-status", "3"),
                ("grpc-status-details-bin", NOT_BASE64),
            ],
        ),
    ];
    for script in scripts {
        let case = format!("{script:?}");
        let outcome = client_outcomes(script).await;
        for failure in failed(&outcome) {
            let (code, message) = failure.unwrap_or_else(|| panic!("{case}: the call fails"));
            assert_eq!(code, volo_grpc::Code::Internal, "{case}: {message}");
            assert!(
                message.contains("invalid grpc-status-details-bin"),
                "{case}: {message}"
            );
        }
    }
}

/// Binary metadata in the trailers (volo-grpc's metadata scan never sees
/// trailers; the adapter's stream reads them): a status or `OK`, no panic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_trailers_valid_or_not_end_the_call() {
    for trailers in [
        &[("grpc-status", "0"), ("x-t-bin", "AAEC")][..],
        &[("grpc-status", "0"), ("x-t-bin", NOT_BASE64)][..],
        &[("grpc-status", "9"), ("x-t-bin", NOT_BASE64)][..],
    ] {
        let outcome = client_outcomes(Script::full(&[], ONE_MESSAGE, trailers)).await;
        let ok = trailers[0].1 == "0";
        assert_eq!(outcome.0.is_ok(), ok, "{trailers:?}: {:?}", outcome.0.err());
        assert_eq!(
            failed(&outcome)[1].is_none(),
            ok,
            "{trailers:?}: {:?}",
            outcome.1
        );
    }
}
