//! The README's volo-grpc code does what the README says: the binary serves
//! and calls all four RPC kinds through the adapter over loopback.

use std::process::Command;

#[test]
fn the_readme_example_serves_and_calls_every_rpc_kind() {
    let output = Command::new(env!("CARGO_BIN_EXE_readme-volo"))
        .output()
        .expect("run readme-volo");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("unary, server stream, client stream and bidi OK"),
        "{stdout}"
    );
}
