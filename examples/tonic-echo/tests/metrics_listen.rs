//! `tonic-echo-server --metrics-listen`: the binary serves A66's metrics in
//! Prometheus's text format, scraped over HTTP/1.1 after one real call (the
//! checks are test-support's, shared with the other example server).

use std::net::SocketAddr;
use std::process::Command;

use test_support::metrics_listen::checks;
use test_support::process::ListeningProcess;

/// Starts the server with `extra` and `--metrics-listen 127.0.0.1:0`.
fn start(extra: &[&str]) -> (ListeningProcess, SocketAddr) {
    // The full framing: the codec-only path is inside tonic's framing and
    // records no calls.
    checks::start(
        env!("CARGO_BIN_EXE_tonic-echo-server"),
        &["--listen", "127.0.0.1:0", "--framing", "full"],
        extra,
    )
}

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
    checks::assert_one_unary_recorded(metrics_addr);
}

#[test]
fn a_budget_is_scraped_as_the_crate_s_gauges() {
    let (_server, metrics_addr) = start(&["--receive-budget", "1048576"]);
    checks::assert_budget_gauges(metrics_addr);
}

#[test]
fn anything_but_get_metrics_is_refused() {
    let (_server, metrics_addr) = start(&[]);
    checks::assert_other_paths_refused(metrics_addr);
}
