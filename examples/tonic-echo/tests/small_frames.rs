//! A client that streams 10,000 ten-byte messages, each in its own DATA
//! frame (as grpc-go and grpc-js send them), to a ClientStream handler that
//! reads late or slowly. h2 charges every buffered DATA frame under 256 bytes
//! against a connection-wide budget and closes the connection with
//! `GOAWAY(ENHANCE_YOUR_CALM)` once unread ones exceed it: stock tonic loses
//! the connection; full framing takes the frames out of h2 as they arrive
//! (up to its read-ahead bound) and serves every message.

use std::process::{Command, Stdio};

use h2::Reason;
use test_support::process::ListeningProcess;
use test_support::small_frames::{FRAME_LEN, MESSAGES, Outcome, READ_LATE, READ_SLOWLY, run};

fn server(arm: &str) -> ListeningProcess {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tonic-echo-server"));
    command
        .args(["--listen", "127.0.0.1:0", "--report-memory"])
        .args(arm.split_whitespace())
        .stdin(Stdio::piped())
        .stderr(Stdio::null());
    ListeningProcess::start(command)
}

const SERVED: Outcome = Outcome::Served {
    count: MESSAGES as u64,
};

#[test]
fn stock_tonic_loses_the_connection_to_a_handler_that_reads_late() {
    let (outcome, _) = run(&mut server("--stock"), &READ_LATE);
    assert_eq!(outcome, Outcome::Closed(Reason::ENHANCE_YOUR_CALM));
}

#[test]
fn stock_tonic_loses_the_connection_to_a_handler_that_reads_slowly() {
    let (outcome, _) = run(&mut server("--stock"), &READ_SLOWLY);
    assert_eq!(outcome, Outcome::Closed(Reason::ENHANCE_YOUR_CALM));
}

#[test]
fn full_framing_serves_every_message_to_a_handler_that_reads_late() {
    let (outcome, held) = run(&mut server("--framing full"), &READ_LATE);
    assert_eq!(outcome, SERVED);
    // What the server held unread: the frames' bytes, copied together into
    // 16 KiB chunks, and little else.
    let wire = MESSAGES * FRAME_LEN;
    println!("held unread: {held} bytes for {wire} bytes of frames");
    assert!(held <= wire + 64 * 1024, "held {held} bytes for {wire}");
}

#[test]
fn full_framing_serves_every_message_to_a_handler_that_reads_slowly() {
    let (outcome, _) = run(&mut server("--framing full"), &READ_SLOWLY);
    assert_eq!(outcome, SERVED);
}
