//! The crate's `tracing` events as a real server writes them: calls over
//! 127.0.0.1 to the example server (tonic's full framing), then what a
//! capturing subscriber holds.

#[path = "support/raw.rs"]
mod raw;

use std::net::SocketAddr;

use test_support::events::Captured;
use tonic_echo::{Framing, ServeOptions};

use raw::{LIMIT, UNARY, envelope, header};

async fn start_server() -> SocketAddr {
    let (listener, addr) = tonic_echo::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let options = ServeOptions {
        framing: Framing::Full,
        ..ServeOptions::default()
    };
    tokio::spawn(tonic_echo::serve_with(listener, options));
    addr
}

// The current-thread runtime runs the server's tasks on this thread, where
// the subscriber is the default.
#[tokio::test(flavor = "current_thread")]
async fn a_refused_message_is_a_debug_event_with_the_rpc_fields_and_the_answer() {
    let captured = Captured::default();
    let _default = tracing::subscriber::set_default(captured.clone());
    let addr = start_server().await;

    let mut body = header(0, LIMIT as u32 + 1);
    body.extend_from_slice(&[0; 64]);
    let reply = raw::call(&raw::connect(addr).await, UNARY, &[], body).await;
    assert_eq!(reply.code(), tonic::Code::ResourceExhausted, "{reply:?}");

    let event = captured.one("refused a message");
    event.assert_rpc(tracing::Level::DEBUG, "Unary", Some(8));
    assert_eq!(event.field("reason"), Some("over_limit"));
    assert_eq!(event.field("side"), Some("server"));
    assert_eq!(
        event.field("status_message"),
        Some(reply.status.message()),
        "the message the peer was sent"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_refused_request_is_a_debug_event_with_the_rpc_fields() {
    let captured = Captured::default();
    let _default = tracing::subscriber::set_default(captured.clone());
    let addr = start_server().await;

    let reply = raw::call(
        &raw::connect(addr).await,
        UNARY,
        &[("grpc-timeout", "123456789S")],
        envelope(0, b""),
    )
    .await;
    assert_eq!(reply.code(), tonic::Code::Internal, "{reply:?}");

    let event = captured.one("refused a request");
    event.assert_rpc(tracing::Level::DEBUG, "Unary", Some(13));
    assert_eq!(
        event.field("status_message"),
        Some("malformed grpc-timeout")
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_peer_that_resets_its_stream_is_a_debug_event() {
    let captured = Captured::default();
    let _default = tracing::subscriber::set_default(captured.clone());
    let addr = start_server().await;

    let mut client = raw::connect(addr).await.ready().await.unwrap();
    let (response, mut stream) = client
        .send_request(
            test_support::raw_h2::grpc_request(raw::CLIENT_STREAM, &[]),
            false,
        )
        .unwrap();
    // Half a message, then the peer gives up on the stream.
    stream
        .send_data(bytes::Bytes::from(header(0, 100)), false)
        .unwrap();
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    stream.send_reset(h2::Reason::CANCEL);
    drop(response);

    let mut events = Vec::new();
    for _ in 0..500 {
        events = captured.with_message("the peer's stream failed");
        if !events.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let [event] = &events[..] else {
        panic!("one peer error: {events:?}");
    };
    event.assert_rpc(tracing::Level::DEBUG, "ClientStream", None);
    assert_eq!(event.field("side"), Some("server"));
}
