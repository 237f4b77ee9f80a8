//! What both example servers' `--metrics-listen` tests check, written once:
//! start a server binary with the flag, scrape it, find samples.

use std::io::{BufRead, Read, Write};
use std::net::SocketAddr;
use std::process::{Command, Stdio};

use crate::metrics_listen::{METRICS_LINE_PREFIX, scrape};
use crate::process::ListeningProcess;

/// The `grpc.method` label of the Echo service's `Unary`.
pub const UNARY: &str = r#"grpc_method="streamcodec.echo.v1.Echo/Unary""#;

/// Starts `server` (a binary) with `args`, `--metrics-listen 127.0.0.1:0`
/// and `extra`; the process and the metrics address from its second line.
pub fn start(server: &str, args: &[&str], extra: &[&str]) -> (ListeningProcess, SocketAddr) {
    let mut command = Command::new(server);
    command
        .args(args)
        .args(["--metrics-listen", "127.0.0.1:0"])
        .args(extra)
        .stderr(Stdio::null());
    let mut server = ListeningProcess::start(command);
    let mut line = String::new();
    server
        .stdout
        .read_line(&mut line)
        .expect("the metrics line");
    let metrics = line
        .trim()
        .strip_prefix(METRICS_LINE_PREFIX)
        .and_then(|addr| addr.parse().ok())
        .unwrap_or_else(|| panic!("not `{METRICS_LINE_PREFIX}ADDR`: {line:?}"));
    (server, metrics)
}

/// The body of a successful scrape.
pub fn metrics(addr: SocketAddr) -> String {
    let (status, body) = scrape(addr).expect("scrape /metrics");
    assert_eq!(status, 200, "{body}");
    body
}

/// The sample line of `name` whose labels include every one of `labels`.
pub fn sample<'a>(text: &'a str, name: &str, labels: &[&str]) -> Option<&'a str> {
    text.lines().find(|line| {
        line.strip_prefix(name)
            .is_some_and(|rest| rest.starts_with('{'))
            && labels.iter().all(|label| line.contains(label))
    })
}

/// After one `Unary` call answered: it shows as started, and (once the
/// server's response body has finished) with its duration and sizes,
/// status `OK`.
pub fn assert_one_unary_recorded(metrics_addr: SocketAddr) {
    let started = metrics(metrics_addr);
    // Recorded when the call starts, so it is there once the client has its
    // answer.
    assert_eq!(
        sample(&started, "grpc_server_call_started_total", &[UNARY])
            .and_then(|line| line.rsplit(' ').next()),
        Some("1"),
        "{started}"
    );
    // The end of the call is recorded when the server's response body
    // finishes, which may be just after the client has read the status:
    // scrape until it shows (the test fails on the bound, not on timing).
    let ended = (0..200)
        .map(|_| {
            let text = metrics(metrics_addr);
            std::thread::sleep(std::time::Duration::from_millis(25));
            text
        })
        .find(|text| {
            sample(
                text,
                "grpc_server_call_duration_seconds_count",
                &[UNARY, r#"grpc_status="OK""#],
            )
            .is_some()
        })
        .expect("the call's duration, status OK, within the scrapes");
    for name in [
        "grpc_server_call_sent_total_compressed_message_size_bytes_count",
        "grpc_server_call_rcvd_total_compressed_message_size_bytes_count",
    ] {
        assert!(
            sample(&ended, name, &[UNARY, r#"grpc_status="OK""#]).is_some(),
            "{name}: {ended}"
        );
    }
}

/// A server started with `--receive-budget 1048576` shows the budget's
/// capacity and bytes in use.
pub fn assert_budget_gauges(metrics_addr: SocketAddr) {
    let text = metrics(metrics_addr);
    let budget = r#"grpc_stream_codec_budget="server""#;
    assert_eq!(
        sample(
            &text,
            "grpc_stream_codec_receive_budget_capacity_bytes",
            &[budget]
        )
        .and_then(|line| line.rsplit(' ').next()),
        Some("1048576"),
        "{text}"
    );
    assert!(
        sample(
            &text,
            "grpc_stream_codec_receive_budget_in_use_bytes",
            &[budget]
        )
        .is_some(),
        "{text}"
    );
}

/// Any path but `/metrics` is `404`.
pub fn assert_other_paths_refused(metrics_addr: SocketAddr) {
    let mut stream = std::net::TcpStream::connect(metrics_addr).expect("connect");
    write!(
        stream,
        "GET /other HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .expect("write the request");
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .expect("read the response");
    assert!(response.starts_with("HTTP/1.1 404"), "{response}");
}
