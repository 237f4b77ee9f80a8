//! `volo-echo-server --metrics-listen`: the binary serves A66's metrics in
//! Prometheus's text format, scraped over HTTP/1.1 after one real call (the
//! checks are test-support's, shared with the other example server).

use std::net::SocketAddr;
use std::process::Command;

use test_support::metrics_listen::checks::{self, metrics};
use test_support::process::ListeningProcess;

/// Starts the server with `extra` and `--metrics-listen 127.0.0.1:0`.
fn start(extra: &[&str]) -> (ListeningProcess, SocketAddr) {
    checks::start(
        env!("CARGO_BIN_EXE_volo-echo-server"),
        &["--listen", "127.0.0.1:0"],
        extra,
    )
}

#[test]
fn a_unary_call_shows_in_the_scrape_with_its_method() {
    let (server, metrics_addr) = start(&[]);
    let output = Command::new(env!("CARGO_BIN_EXE_volo-echo-client"))
        .args(["--addr", &server.addr.to_string(), "--rpc", "unary"])
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

/// The scrape behind `docs/observability.md`'s "Prometheus" sample, not a
/// check: a server with a 16 MiB budget, 100 ClientStream calls each sending
/// 900,000 bytes of a 1,000,000-byte message and holding the rest, a scrape
/// while they are held, then the rest, the answers, and a scrape once the
/// budget is back to 0. Prints the budget's and the ClientStream calls'
/// lines of both scrapes. Run with
/// `cargo test -p volo-echo --test metrics_listen -- --ignored --nocapture`.
#[test]
#[ignore = "prints a sample scrape for the docs; not a check"]
fn scrape_a_budget_stall() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use bytes::Bytes;
    use test_support::behaviour::wire::sized_request;
    use test_support::raw_h2;

    const STREAMS: usize = 100;
    // Each connection takes at most `BUDGET_STREAMS_PER_CONNECTION`
    // concurrent streams; four keep 100 well inside that.
    const CONNECTIONS: usize = 4;
    const HELD_AT: usize = 900_000;

    let (server, metrics_addr) = start(&["--receive-budget", "16777216"]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (wire, _) = sized_request(1_000_000);
    let sent = Arc::new(AtomicUsize::new(0));
    let (go, going) = tokio::sync::watch::channel(false);

    // The connections are returned too: kept open until the calls end.
    let (calls, _clients) = runtime.block_on(async {
        let mut clients = Vec::new();
        for _ in 0..CONNECTIONS {
            clients.push(raw_h2::connect(server.addr).await);
        }
        let mut calls = Vec::new();
        for i in 0..STREAMS {
            let mut client = clients[i % CONNECTIONS].clone().ready().await.unwrap();
            let (response, mut stream) = client
                .send_request(
                    raw_h2::grpc_request("/streamcodec.echo.v1.Echo/ClientStream", &[]),
                    false,
                )
                .unwrap();
            let (wire, sent, mut going) = (wire.clone(), sent.clone(), going.clone());
            calls.push(tokio::spawn(async move {
                send_granted(&mut stream, wire.slice(..HELD_AT), &sent).await;
                let _ = going.wait_for(|go| *go).await;
                send_granted(&mut stream, wire.slice(HELD_AT..), &sent).await;
                stream.send_data(Bytes::new(), true).unwrap();
                raw_h2::read_response(response.await.unwrap()).await
            }));
        }
        // Held: what flow control lets the clients send stops growing.
        test_support::settle::settle(Duration::from_secs(1), Duration::from_secs(120), || {
            sent.load(Ordering::SeqCst)
        })
        .await;
        (calls, clients)
    });
    let held = metrics(metrics_addr);

    go.send(true).unwrap();
    let answers = runtime.block_on(futures::future::join_all(calls));
    let ok = answers
        .into_iter()
        .filter(|answer| answer.as_ref().unwrap().grpc_status() == Some(0))
        .count();
    // The budget is given back as each call's messages are dropped, just
    // after its answer: scrape until in-use reads 0.
    let in_use =
        r#"grpc_stream_codec_receive_budget_in_use_bytes{grpc_stream_codec_budget="server""#;
    let done = (0..400)
        .map(|_| {
            std::thread::sleep(Duration::from_millis(25));
            metrics(metrics_addr)
        })
        .find(|text| {
            text.lines()
                .any(|line| line.starts_with(in_use) && line.ends_with(" 0"))
        })
        .expect("in-use back to 0");

    let relevant = |text: &str| {
        text.lines()
            .filter(|line| {
                !line.contains("_bucket")
                    && (line.starts_with("grpc_stream_codec_")
                        || (line.starts_with("grpc_server_call") && line.contains("ClientStream")))
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    println!("{ok} of {STREAMS} calls OK");
    println!(
        "# while held\n{}\n# after\n{}",
        relevant(&held),
        relevant(&done)
    );

    /// Sends `data` as flow control grants room, counting it in `sent`.
    async fn send_granted(stream: &mut h2::SendStream<Bytes>, mut data: Bytes, sent: &AtomicUsize) {
        while !data.is_empty() {
            stream.reserve_capacity(data.len().min(16_384));
            let mut granted = stream.capacity();
            while granted == 0 {
                granted = std::future::poll_fn(|cx| stream.poll_capacity(cx))
                    .await
                    .expect("the stream is open")
                    .expect("flow control");
            }
            let chunk = data.split_to(granted.min(data.len()));
            sent.fetch_add(chunk.len(), Ordering::SeqCst);
            stream.send_data(chunk, false).unwrap();
        }
    }
}
