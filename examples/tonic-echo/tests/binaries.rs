//! The two binaries against each other: the server prints its bound address
//! on one line, the client verifies every RPC and reports failure by its
//! exit code.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the server on port 0 and reads back the address it bound.
fn start_server(stock: bool) -> (Server, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tonic-echo-server"));
    command.args(["--listen", "127.0.0.1:0"]);
    if stock {
        command.arg("--stock");
    }
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let server = Server(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned();
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
