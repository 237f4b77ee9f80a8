//! `tonic-echo-server --metrics-listen`: the binary serves A66's metrics in
//! Prometheus's text format, scraped over HTTP/1.1 after one real call.

use std::io::BufRead;
use std::net::SocketAddr;
use std::process::{Command, Stdio};

use test_support::metrics_listen::{METRICS_LINE_PREFIX, scrape};
use test_support::process::ListeningProcess;

/// Starts the server with `extra` and `--metrics-listen 127.0.0.1:0`; the
/// process and the metrics address from its second line.
fn start(extra: &[&str]) -> (ListeningProcess, SocketAddr) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tonic-echo-server"));
    command
        // The full framing: the codec-only path is inside tonic's framing
        // and records no calls.
        .args(["--listen", "127.0.0.1:0", "--framing", "full"])
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
fn metrics(addr: SocketAddr) -> String {
    let (status, body) = scrape(addr).expect("scrape /metrics");
    assert_eq!(status, 200, "{body}");
    body
}

/// The sample line of `name` whose labels include every one of `labels`.
fn sample<'a>(text: &'a str, name: &str, labels: &[&str]) -> Option<&'a str> {
    text.lines().find(|line| {
        line.strip_prefix(name)
            .is_some_and(|rest| rest.starts_with('{'))
            && labels.iter().all(|label| line.contains(label))
    })
}

const UNARY: &str = r#"grpc_method="streamcodec.echo.v1.Echo/Unary""#;

#[test]
fn a_unary_call_shows_in_the_scrape_with_its_method() {
    let (server, metrics_addr) = start(&[]);
    let output = Command::new(env!("CARGO_BIN_EXE_tonic-echo-client"))
        .args([
            "--addr",
            &format!("http://{}", server.addr),
            "--rpc",
            "unary",
        ])
        .output()
        .expect("run the client");
    assert!(output.status.success(), "{output:?}");

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

#[test]
fn a_budget_is_scraped_as_the_crate_s_gauges() {
    let (_server, metrics_addr) = start(&["--receive-budget", "1048576"]);
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

#[test]
fn anything_but_get_metrics_is_refused() {
    let (_server, metrics_addr) = start(&[]);
    let mut stream = std::net::TcpStream::connect(metrics_addr).unwrap();
    use std::io::{Read, Write};
    write!(
        stream,
        "GET /other HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 404"), "{response}");
}
