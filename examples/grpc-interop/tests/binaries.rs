//! The four binaries as CI and other implementations run them: the servers
//! take `--port`/`--host` and print `listening on ADDR`; the clients take
//! the standard flags, print one `PASS`/`FAIL` line per case and the
//! totals, and exit 0, 1 (a case failed) or 2 (bad flags).

use std::process::{Command, Output};

use test_support::process::ListeningProcess;

/// Starts `binary --port 0` and returns it with the port it printed.
fn start(binary: &str) -> (ListeningProcess, u16) {
    let mut command = Command::new(binary);
    command.args(["--port", "0", "--host", "127.0.0.1"]);
    let server = ListeningProcess::start(command);
    let port = server.addr.port();
    (server, port)
}

fn run_client(binary: &str, args: &[String]) -> Output {
    Command::new(binary).args(args).output().unwrap()
}

fn stdout_lines(output: &Output) -> Vec<String> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

const SERVERS: [&str; 2] = [
    env!("CARGO_BIN_EXE_tonic-interop-server"),
    env!("CARGO_BIN_EXE_volo-interop-server"),
];
const CLIENTS: [&str; 2] = [
    env!("CARGO_BIN_EXE_tonic-interop-client"),
    env!("CARGO_BIN_EXE_volo-interop-client"),
];

#[test]
fn clients_report_each_case_and_the_totals_against_each_server() {
    for server in SERVERS {
        let (_server, port) = start(server);
        for client in CLIENTS {
            let output = run_client(
                client,
                &[
                    format!("--server_port={port}"),
                    "--server_host".to_owned(),
                    "127.0.0.1".to_owned(),
                    "--test_case=empty_unary,unimplemented_service".to_owned(),
                    "--use_tls=false".to_owned(),
                ],
            );
            assert_eq!(
                stdout_lines(&output),
                [
                    "PASS empty_unary",
                    "PASS unimplemented_service",
                    "2 passed, 0 failed"
                ],
                "{client} -> {server}"
            );
            assert_eq!(output.status.code(), Some(0), "{client} -> {server}");
        }
    }
}

#[test]
fn a_failed_case_is_reported_and_exits_1() {
    // A gRPC server without TestService: every method is UNIMPLEMENTED.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    runtime.spawn(
        tonic::transport::Server::builder()
            .add_routes(tonic::service::Routes::default())
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );
    for client in CLIENTS {
        let output = run_client(
            client,
            &[
                format!("--server_port={port}"),
                "--test_case=large_unary,unimplemented_method".to_owned(),
            ],
        );
        let lines = stdout_lines(&output);
        assert_eq!(lines.len(), 3, "{client}: {lines:?}");
        assert!(
            lines[0].starts_with("FAIL large_unary: status Unimplemented"),
            "{client}: {lines:?}"
        );
        assert_eq!(lines[1], "PASS unimplemented_method", "{client}");
        assert_eq!(lines[2], "1 passed, 1 failed", "{client}");
        assert_eq!(output.status.code(), Some(1), "{client}");
    }
}

#[test]
fn bad_flags_exit_2() {
    for client in CLIENTS {
        for args in [
            &["--server_port=1", "--use_tls=true"][..],
            &["--test_case=all"],
            &["--server_port=1", "--test_case=no_such_case"],
        ] {
            let args: Vec<String> = args.iter().map(|arg| (*arg).to_owned()).collect();
            let output = run_client(client, &args);
            assert_eq!(output.status.code(), Some(2), "{client} {args:?}");
        }
    }
    for server in SERVERS {
        let output = Command::new(server)
            .arg("--host")
            .arg("127.0.0.1")
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{server} without --port");
    }
}
