//! `--metrics-listen` of both example servers, included by each
//! (`#[path]`): the Prometheus endpoint, and the library recording on it
//! when the example's `metrics-listen` feature is on.

/// `--metrics-listen`: the Prometheus endpoint, A66 recording on its meter,
/// and the budget's gauges when there is a budget. Prints `metrics on ADDR`.
/// Built with `exporter` alone (the library's `opentelemetry` off), the
/// endpoint is served and the library records nothing on it.
#[cfg(feature = "exporter")]
pub(crate) async fn serve_metrics(
    listen: std::net::SocketAddr,
    budget: Option<&grpc_stream_codec::budget::SharedBudget>,
) -> std::io::Result<test_support::metrics_listen::MetricsEndpoint> {
    let endpoint = test_support::metrics_listen::start(listen).await?;
    #[cfg(feature = "metrics-listen")]
    {
        let meter = endpoint.meter("grpc-stream-codec");
        grpc_stream_codec::observe::install(&meter);
        if let Some(budget) = budget {
            // The same budget the server serves with: a clone shares its counts.
            grpc_stream_codec::observe::observe_budget(&meter, "server", &budget.clone().into());
        }
    }
    #[cfg(not(feature = "metrics-listen"))]
    let _ = budget;
    println!(
        "{}{}",
        test_support::metrics_listen::METRICS_LINE_PREFIX,
        endpoint.addr
    );
    Ok(endpoint)
}

/// Built without the `metrics-listen` and `exporter` features: the flag is
/// refused.
#[cfg(not(feature = "exporter"))]
pub(crate) async fn serve_metrics(
    _listen: std::net::SocketAddr,
    _budget: Option<&grpc_stream_codec::budget::SharedBudget>,
) -> std::io::Result<std::convert::Infallible> {
    Err(std::io::Error::other(concat!(
        "this build has no metrics: build ",
        env!("CARGO_PKG_NAME"),
        " with its `metrics-listen` feature (on by default)"
    )))
}
