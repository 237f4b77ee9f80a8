//! The example servers' `--metrics-listen ADDR`: an OpenTelemetry
//! `SdkMeterProvider` whose reader is `opentelemetry-prometheus`'s exporter,
//! and `GET /metrics` on ADDR in Prometheus's text format; plus [`scrape`],
//! the tests' HTTP/1.1 reader of it, and what both servers' tests check
//! ([`checks`]).
//!
//! The exporter is pull-based: each scrape gathers the registry, which asks
//! the provider to collect, so nothing runs between scrapes.

pub mod checks;

use std::convert::Infallible;
use std::io::{self, Read, Write};
use std::net::SocketAddr;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use prometheus::{Encoder, Registry, TextEncoder};

/// The line a server prints after `listening on ADDR` when it serves
/// metrics, followed by the bound address (so a test can pass port 0).
pub const METRICS_LINE_PREFIX: &str = "metrics on ";

/// A meter provider exporting to Prometheus, and where it is scraped.
pub struct MetricsEndpoint {
    /// The provider to take the meter from. Kept by the caller for the
    /// life of the process: dropping it shuts the exporter down.
    pub provider: SdkMeterProvider,
    /// The address `/metrics` is served on (the bound one, for port 0).
    pub addr: SocketAddr,
}

impl MetricsEndpoint {
    /// A meter of the provider, for `grpc_stream_codec::observe::install`.
    pub fn meter(&self, scope: &'static str) -> opentelemetry::metrics::Meter {
        use opentelemetry::metrics::MeterProvider as _;
        self.provider.meter(scope)
    }
}

/// Binds `listen`, builds the provider with the Prometheus exporter on a
/// fresh registry, and serves `GET /metrics` from a spawned task (so it
/// needs a running Tokio runtime).
pub async fn start(listen: SocketAddr) -> io::Result<MetricsEndpoint> {
    let listener = tokio::net::TcpListener::bind(listen).await?;
    let addr = listener.local_addr()?;
    let registry = Registry::new();
    let exporter = opentelemetry_prometheus::exporter()
        .with_registry(registry.clone())
        .build()
        .map_err(io::Error::other)?;
    let provider = SdkMeterProvider::builder().with_reader(exporter).build();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _peer)) = listener.accept().await else {
                // An accept error (e.g. out of descriptors) is transient;
                // the gRPC server goes on either way.
                continue;
            };
            let registry = registry.clone();
            // One task per connection: a slow scraper does not hold others.
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| {
                    let registry = registry.clone();
                    async move { Ok::<_, Infallible>(answer(&req, &registry)) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok(MetricsEndpoint { provider, addr })
}

/// `GET /metrics`: the registry in the text format; anything else 404/405.
fn answer(req: &Request<Incoming>, registry: &Registry) -> Response<Full<Bytes>> {
    let status = match (req.method(), req.uri().path()) {
        (&Method::GET, "/metrics") => {
            let encoder = TextEncoder::new();
            let mut text = Vec::new();
            return match encoder.encode(&registry.gather(), &mut text) {
                Ok(()) => Response::builder()
                    .header(hyper::header::CONTENT_TYPE, encoder.format_type())
                    .body(Full::new(Bytes::from(text)))
                    .expect("a valid response"),
                Err(err) => Response::builder()
                    .status(StatusCode::INTERNAL_SERVER_ERROR)
                    .body(Full::new(Bytes::from(err.to_string())))
                    .expect("a valid response"),
            };
        }
        (_, "/metrics") => StatusCode::METHOD_NOT_ALLOWED,
        _ => StatusCode::NOT_FOUND,
    };
    Response::builder()
        .status(status)
        .body(Full::new(Bytes::new()))
        .expect("a valid response")
}

/// `GET /metrics` from `addr` over plain HTTP/1.1 (`Connection: close`, so
/// the body is everything up to the end of the stream): the status code and
/// the body. Blocking; for tests and scripts.
pub fn scrape(addr: SocketAddr) -> io::Result<(u16, String)> {
    let mut stream = std::net::TcpStream::connect(addr)?;
    write!(
        stream,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let (head, body) = response
        .split_once("\r\n\r\n")
        .ok_or_else(|| io::Error::other(format!("no end of headers in {response:?}")))?;
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| io::Error::other(format!("no status in {head:?}")))?;
    Ok((status, body.to_owned()))
}
