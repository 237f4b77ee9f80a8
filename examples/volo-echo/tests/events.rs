//! The crate's `tracing` events as a real volo-grpc server behind
//! `BinaryMetadataLayer` writes them: calls over 127.0.0.1 to the example
//! server, then what a capturing subscriber holds.

mod support;

use support::{Flavour, envelope, raw_call, start};
use test_support::events::Captured;
use volo_echo::EchoService;

// The current-thread runtime runs the server's tasks on this thread, where
// the subscriber is the default. One test: the shielded-panic event is
// logged at most once a second for the process.
#[tokio::test(flavor = "current_thread")]
async fn refusals_and_shielded_panics_are_events_with_the_rpc_fields() {
    let captured = Captured::default();
    let _default = tracing::subscriber::set_default(captured.clone());
    let server = start(Flavour::Adapter, EchoService::default()).await;

    // A message with a reserved flag bit: the request stream knows its
    // method through the call's read-ahead.
    let bad = bytes::Bytes::from(test_support::raw_h2::envelope(2, b"hi"));
    let response = raw_call(server.addr, "ClientStream", &[], bad).await;
    assert_eq!(response.grpc_status(), Some(13), "{response:?}");
    let event = captured.one("refused a message");
    event.assert_rpc(tracing::Level::DEBUG, "ClientStream", Some(13));
    assert_eq!(event.field("reason"), Some("bad_envelope"));
    assert_eq!(
        event.field("status_message").map(str::to_owned),
        Some(response.grpc_message()),
        "the message the peer was sent"
    );

    // volo-grpc 0.12.2 panics on any binary request header.
    for _ in 0..3 {
        let response = raw_call(
            server.addr,
            "Unary",
            &[("x-trace-bin", "AAEC")],
            envelope(false, &[]),
        )
        .await;
        assert_eq!(response.grpc_status(), Some(0), "{response:?}");
    }
    let events = captured.with_message("kept the framework from panicking");
    assert!(
        matches!(events.len(), 1 | 2),
        "one a second, not one a call: {events:?}"
    );
    let event = &events[0];
    event.assert_rpc(tracing::Level::WARN, "Unary", None);
    assert_eq!(event.field("trigger"), Some("request_binary_metadata"));
}
