//! The two binaries against each other: the server prints its bound address
//! on one line, the client verifies every RPC and reports failure by its
//! exit code.

use std::process::{Command, Stdio};

use test_support::process::ListeningProcess;

/// Starts the server on port 0 and reads back the address it bound.
fn start_server(stock: bool) -> (ListeningProcess, String) {
    start_server_with(if stock { &["--stock"] } else { &[] })
}

fn start_server_with(extra: &[&str]) -> (ListeningProcess, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tonic-echo-server"));
    command
        .args(["--listen", "127.0.0.1:0"])
        .args(extra)
        .stderr(Stdio::null());
    let server = ListeningProcess::start(command);
    let addr = server.addr.to_string();
    (server, addr)
}

fn client(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tonic-echo-client"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn client_verifies_every_rpc_against_either_server() {
    for stock_server in [false, true] {
        let (_server, addr) = start_server(stock_server);
        let url = format!("http://{addr}");
        for extra in [
            &["--stock"][..],
            &["--compression", "gzip"],
            &["--compression", "zstd"],
        ] {
            let mut args = vec![
                "--addr",
                url.as_str(),
                "--rpc",
                "all",
                "--size",
                "3000",
                "--count",
                "50",
            ];
            args.extend_from_slice(extra);
            let output = client(&args);
            let stdout = String::from_utf8_lossy(&output.stdout);
            assert!(output.status.success(), "{args:?}: {output:?}");
            for rpc in ["unary", "server", "client", "bidi"] {
                assert!(stdout.contains(&format!("{rpc}: ok")), "{args:?}: {stdout}");
            }
        }
    }
}

#[test]
fn client_exits_non_zero_when_it_cannot_verify() {
    let (server, addr) = start_server(false);
    drop(server);
    let output = client(&["--addr", &format!("http://{addr}"), "--rpc", "unary"]);
    assert!(!output.status.success());
    let output = client(&["--addr", "http://127.0.0.1:1", "--rpc", "nonsense"]);
    assert_eq!(output.status.code(), Some(2));
}

/// Runs the client against `url` with `args`; its exit code.
fn client_code(url: &str, args: &[&str]) -> Option<i32> {
    let mut all = vec!["--addr", url];
    all.extend_from_slice(args);
    let output = client(&all);
    eprintln!(
        "{args:?}: {:?}\n{}{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output.status.code()
}

#[test]
fn metadata_reaches_the_server_on_every_call() {
    let (_server, addr) = start_server(false);
    let url = format!("http://{addr}");
    // `x-fail-after: 2` makes the server's streams fail with ABORTED.
    let fail = ["--metadata", "x-fail-after=2", "--count", "5"];
    for rpc in ["server", "bidi"] {
        let mut args = vec!["--rpc", rpc];
        args.extend_from_slice(&fail);
        assert_eq!(client_code(&url, &args), Some(1), "{rpc} fails");
        args.extend_from_slice(&["--expect-code", "ABORTED"]);
        assert_eq!(client_code(&url, &args), Some(0), "{rpc} fails as expected");
    }
    // Repeated flags all go out; a binary key takes the bytes.
    let args = [
        "--rpc",
        "server",
        "--metadata",
        "x-other=1",
        "--metadata",
        "x-trace-bin=abc",
        "--metadata",
        "x-fail-after=0",
        "--expect-code",
        "ABORTED",
    ];
    assert_eq!(client_code(&url, &args), Some(0));
}

#[test]
fn expect_code_demands_exactly_that_code() {
    let (_server, addr) = start_server(false);
    let url = format!("http://{addr}");
    let aborted = ["--rpc", "server", "--metadata", "x-fail-after=1"];
    // Another code than the one expected.
    let mut args = aborted.to_vec();
    args.extend_from_slice(&["--expect-code", "INTERNAL"]);
    assert_eq!(client_code(&url, &args), Some(1));
    // A call that succeeds.
    assert_eq!(
        client_code(&url, &["--rpc", "unary", "--expect-code", "ABORTED"]),
        Some(1)
    );
    // Every chosen RPC must fail so: unary does not.
    assert_eq!(
        client_code(
            &url,
            &[
                "--rpc",
                "all",
                "--metadata",
                "x-fail-after=1",
                "--expect-code",
                "ABORTED"
            ]
        ),
        Some(1)
    );
    // Usage errors.
    assert_eq!(
        client_code(&url, &["--expect-code", "RESOURCE_EXHAUSTED_OOPS"]),
        Some(2)
    );
    assert_eq!(
        client_code(&url, &["--metadata", "no-equals-sign"]),
        Some(2)
    );
    assert_eq!(client_code(&url, &["--metadata", "Bad Key=1"]), Some(2));
}

#[test]
fn expect_code_tells_the_full_framing_server_from_stock_tonic_on_an_oversized_message() {
    // 5,000,000 bytes: above the 4 MiB receive limit.
    let args = [
        "--rpc",
        "unary",
        "--size",
        "5000000",
        "--expect-code",
        "RESOURCE_EXHAUSTED",
    ];
    let (_full, addr) = start_server_with(&["--framing", "full"]);
    assert_eq!(client_code(&format!("http://{addr}"), &args), Some(0));
    // tonic's own framing answers OUT_OF_RANGE.
    let (_stock, addr) = start_server(true);
    assert_eq!(client_code(&format!("http://{addr}"), &args), Some(1));
    let mut out_of_range = args.to_vec();
    out_of_range[5] = "OUT_OF_RANGE";
    assert_eq!(
        client_code(&format!("http://{addr}"), &out_of_range),
        Some(0)
    );
}
