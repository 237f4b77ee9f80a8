//! The Rust half of the interop matrix in `cargo test`: the tonic and volo
//! clients against the tonic and volo servers, in one process over
//! loopback, every case. (`interop/testing_matrix.sh` adds grpcio on both
//! sides.)

use std::net::SocketAddr;

use grpc_interop::report::ClientArgs;
use grpc_interop::spec::CASES;
use grpc_interop::{tonic_client, tonic_server, volo_client, volo_server};

async fn start_tonic() -> SocketAddr {
    let (listener, addr) = tonic_server::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    tokio::spawn(tonic_server::serve(listener, Default::default()));
    addr
}

async fn start_volo() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(volo_server::serve(listener, Default::default()));
    addr
}

fn args(addr: SocketAddr) -> ClientArgs {
    ClientArgs {
        host: addr.ip().to_string(),
        port: addr.port(),
        cases: CASES.to_vec(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_case_passes_between_the_rust_clients_and_servers() {
    let servers = [("tonic", start_tonic().await), ("volo", start_volo().await)];
    let mut failures = Vec::new();
    for (server, addr) in servers {
        let tonic = tonic_client::Clients::connect(&args(addr)).await.unwrap();
        let volo = volo_client::clients(addr);
        for case in CASES {
            if let Err(why) = tonic_client::run_case(&tonic, case).await {
                failures.push(format!("tonic -> {server}: {case}: {why}"));
            }
            if let Err(why) = volo_client::run_case(&volo, case).await {
                failures.push(format!("volo -> {server}: {case}: {why}"));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The cases do fail when a server answers wrongly: a server without
/// TestService answers every method UNIMPLEMENTED, so every case but
/// unimplemented_service and unimplemented_method (which expect exactly
/// that) must fail. timeout_on_sleeping_server is left out: its 1 ms
/// deadline checks the client's deadline, and it ends any call whose answer
/// takes longer than that, so against this server it passes or fails by
/// which comes first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cases_fail_against_a_server_without_the_service() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let empty = tonic::service::Routes::default();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_routes(empty)
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );
    let tonic = tonic_client::Clients::connect(&args(addr)).await.unwrap();
    let volo = volo_client::clients(addr);
    for case in CASES
        .into_iter()
        .filter(|case| *case != "timeout_on_sleeping_server")
    {
        let expected_to_pass = matches!(case, "unimplemented_method" | "unimplemented_service");
        let by_tonic = tonic_client::run_case(&tonic, case).await;
        let by_volo = volo_client::run_case(&volo, case).await;
        assert_eq!(
            by_tonic.is_ok(),
            expected_to_pass,
            "tonic client, {case}: {by_tonic:?}"
        );
        assert_eq!(
            by_volo.is_ok(),
            expected_to_pass,
            "volo client, {case}: {by_volo:?}"
        );
    }
}
