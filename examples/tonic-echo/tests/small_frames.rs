//! A client that streams small messages, each in its own DATA frame (as
//! grpc-go and grpc-js send them), to a ClientStream handler that reads late
//! or slowly. h2 charges every buffered DATA frame under 256 bytes against a
//! connection-wide budget and closes the connection with
//! `GOAWAY(ENHANCE_YOUR_CALM)` once unread ones exceed it: stock tonic loses
//! the connection; full framing takes the frames out of h2 as they arrive
//! (up to its read-ahead bound) and serves every message.

use std::io::{BufRead, Write};
use std::process::{Command, Stdio};

use bytes::Bytes;
use h2::Reason;
use prost::Message;
use test_support::process::ListeningProcess;
use test_support::raw_h2::{envelope, grpc_request, read_response};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tonic_echo::adapter::{EchoRequest, EchoResponse};

/// The client writes its frames in bursts of this many, [`BURST_GAP`]
/// apart: a fast peer (50,000 messages a second) whose frames reach the
/// server no faster than its connection task reads them. A single burst of
/// more than about 2,000 small frames, read by h2 in one go, closes the
/// connection whatever reads the stream: docs/tonic.md ("Small DATA
/// frames") gives the window settings that keep it out of reach.
const BURST: usize = 500;
const BURST_GAP: std::time::Duration = std::time::Duration::from_millis(10);
const CLIENT_STREAM: &str = "/streamcodec.echo.v1.Echo/ClientStream";
const MESSAGES: usize = 10_000;
/// Each message's payload: one 8-byte `bytes` field, 10 bytes encoded.
const PAYLOAD: usize = 8;

fn start_server(arm: &[&str]) -> ListeningProcess {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tonic-echo-server"));
    command
        .args(["--listen", "127.0.0.1:0", "--report-memory"])
        .args(arm)
        .stdin(Stdio::piped());
    ListeningProcess::start(command)
}

/// The server's live heap, as its `--report-memory` answers.
fn live_bytes(server: &mut ListeningProcess) -> usize {
    let stdin = server.child.stdin.as_mut().expect("piped stdin");
    writeln!(stdin, "memory").expect("ask for memory");
    stdin.flush().expect("flush");
    let mut line = String::new();
    server.stdout.read_line(&mut line).expect("memory line");
    line.trim()
        .strip_prefix("live_bytes ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("not a memory line: {line:?}"))
}

/// What the call came to.
#[derive(Debug)]
enum Outcome {
    /// The handler's answer: how many requests it read.
    Served { count: u32 },
    /// The connection went away with this reason.
    Closed(Reason),
}

/// One ClientStream call of [`MESSAGES`] small messages, each its own DATA
/// frame, with `metadata` telling the handler how to read; `sample` is
/// called while the handler has not read them yet.
async fn small_frames_call(
    addr: std::net::SocketAddr,
    metadata: &[(&str, &str)],
    mut sample: impl FnMut(),
) -> Outcome {
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let (client, connection) = h2::client::handshake(tcp).await.expect("h2 handshake");
    let (closed_tx, closed) = oneshot::channel();
    tokio::spawn(async move {
        let _ = closed_tx.send(connection.await.err().and_then(|error| error.reason()));
    });
    let outcome = stream_small_frames(client, metadata, &mut sample).await;
    match outcome {
        Some(outcome) => outcome,
        // The stream failed: the connection's own error says why.
        None => match closed.await {
            Ok(Some(reason)) => Outcome::Closed(reason),
            other => panic!("the call failed, the connection ended with {other:?}"),
        },
    }
}

/// The call itself; `None` when the stream failed.
async fn stream_small_frames(
    client: h2::client::SendRequest<Bytes>,
    metadata: &[(&str, &str)],
    sample: &mut impl FnMut(),
) -> Option<Outcome> {
    let mut client = client.ready().await.ok()?;
    let (response, mut stream) = client
        .send_request(grpc_request(CLIENT_STREAM, metadata), false)
        .ok()?;
    let message = EchoRequest {
        payload: Bytes::from_static(&[7; PAYLOAD]),
        ..EchoRequest::default()
    }
    .encode_to_vec();
    let frame = Bytes::from(envelope(0, &message));
    for i in 0..MESSAGES {
        if i % BURST == 0 {
            tokio::time::sleep(BURST_GAP).await;
        }
        stream.send_data(frame.clone(), false).ok()?;
    }
    // The handler waits 2 s (or reads one message a millisecond): a second
    // in, every frame has long crossed loopback and the server holds what
    // it took ahead.
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    sample();
    let _ = stream.send_data(Bytes::new(), true);
    let response = read_response(response.await.ok()?).await;
    assert_eq!(response.grpc_status(), Some(0), "{response:?}");
    let body = response.body();
    let reply = EchoResponse::decode(&body[5..]).expect("an EchoResponse");
    // The connection is still up: a second call on it is served.
    let second = test_support::raw_h2::send(
        &client,
        "/streamcodec.echo.v1.Echo/Unary",
        &[],
        envelope(0, &message),
    )
    .await;
    assert_eq!(second.grpc_status(), Some(0), "{second:?}");
    Some(Outcome::Served { count: reply.count })
}

fn run(arm: &[&str], metadata: &[(&str, &str)]) -> (Outcome, usize) {
    let mut server = start_server(arm);
    let addr = server.addr;
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    // A first call warms the server up (its runtime's and allocator's
    // lazily made parts), so what is measured next is the call's.
    runtime.block_on(small_frames_call(addr, &[], || {}));
    let before = live_bytes(&mut server);
    let mut held = 0;
    let outcome = runtime.block_on(small_frames_call(addr, metadata, || {
        held = live_bytes(&mut server).saturating_sub(before);
    }));
    (outcome, held)
}

const DELAYED: [(&str, &str); 1] = [("x-read-delay-millis", "2000")];
const SLOW: [(&str, &str); 1] = [("x-read-pace-micros", "1000")];

#[test]
fn stock_tonic_loses_the_connection_to_a_handler_that_reads_late() {
    let (outcome, _) = run(&["--stock"], &DELAYED);
    assert!(
        matches!(outcome, Outcome::Closed(Reason::ENHANCE_YOUR_CALM)),
        "{outcome:?}"
    );
}

#[test]
fn full_framing_serves_every_message_to_a_handler_that_reads_late() {
    let (outcome, held) = run(&["--framing", "full"], &DELAYED);
    assert!(
        matches!(outcome, Outcome::Served { count } if count as usize == MESSAGES),
        "{outcome:?}"
    );
    // What the server held unread: the frames' bytes (15 each), copied
    // together into 16 KiB chunks, and little else.
    let wire = MESSAGES * (5 + PAYLOAD + 2);
    println!("held unread: {held} bytes for {wire} bytes on the wire");
    assert!(held <= wire + 64 * 1024, "held {held} bytes for {wire}");
}

#[test]
fn full_framing_serves_every_message_to_a_handler_that_reads_slowly() {
    let (outcome, _) = run(&["--framing", "full"], &SLOW);
    assert!(
        matches!(outcome, Outcome::Served { count } if count as usize == MESSAGES),
        "{outcome:?}"
    );
}

#[test]
fn stock_tonic_loses_the_connection_to_a_handler_that_reads_slowly() {
    let (outcome, _) = run(&["--stock"], &SLOW);
    assert!(
        matches!(outcome, Outcome::Closed(Reason::ENHANCE_YOUR_CALM)),
        "{outcome:?}"
    );
}
