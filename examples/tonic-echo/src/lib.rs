//! The Echo service (`proto/echo.proto`) over tonic, twice: once generated
//! with `grpc_stream_codec::tonic::ProstCodec` ([`adapter`]) and once with
//! tonic's stock `tonic_prost::ProstCodec` ([`stock`]). Both share the message
//! types of [`adapter`], one service implementation ([`EchoService`]) and one
//! client ([`EchoClient`]), so any mix of codecs on the two sides can be run.

use std::net::SocketAddr;

use tokio::net::TcpListener;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::codec::CompressionEncoding;
use tonic::transport::Server;

mod client;
mod service;

/// Binary request metadata `Unary` sends back as sent, as binary response
/// metadata of the same name (as the volo Echo server does).
pub const ECHO_BIN: &str = "x-echo-bin";

pub use client::{
    ClientStack, EchoClient, Mismatch, check_bidi, check_client_stream, check_server_stream,
    check_server_stream_expecting, check_unary, request_payload,
};
pub use service::{
    EchoService, FAIL_AFTER, FAIL_DETAIL, MAX_RESPONSE_SIZE, PACE_MICROS, READ_DELAY_MILLIS,
    READ_PACE_MICROS, ReadPace, ResponseStream, bidi, client_stream, fail_after, failure, pace,
    paced, server_stream, unary,
};

/// Messages and services generated with grpc-stream-codec's tonic codec.
#[allow(missing_docs, clippy::all)]
pub mod adapter {
    include!(concat!(env!("OUT_DIR"), "/adapter/streamcodec.echo.v1.rs"));
}

/// Services generated with tonic's stock prost codec, over [`adapter`]'s
/// message types.
#[allow(missing_docs, clippy::all)]
pub mod stock {
    include!(concat!(env!("OUT_DIR"), "/stock/streamcodec.echo.v1.rs"));
}

/// Services generated for grpc-stream-codec's full framing (rewritten by its
/// build hook), over [`adapter`]'s message types.
#[allow(missing_docs, clippy::all)]
pub mod full {
    grpc_stream_codec::tonic::include_proto!("full/streamcodec.echo.v1");
}

/// Every compression encoding the example servers accept and can send.
pub const ENCODINGS: [CompressionEncoding; 3] = [
    CompressionEncoding::Gzip,
    CompressionEncoding::Deflate,
    CompressionEncoding::Zstd,
];

/// Serves the Echo service on `listener` until the future is dropped, with
/// the stock codec when `stock` is set and grpc-stream-codec's otherwise.
/// Requests may come compressed with any of [`ENCODINGS`]; responses are
/// compressed with one the client accepts.
pub async fn serve(listener: TcpListener, stock: bool) -> Result<(), tonic::transport::Error> {
    let options = ServeOptions {
        stock,
        ..ServeOptions::default()
    };
    serve_with(listener, options).await
}

/// How much of tonic's gRPC path grpc-stream-codec replaces.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Framing {
    /// Only the codec (`codec_path`): tonic keeps its own framing.
    #[default]
    Codec,
    /// The full framing: generated code rewritten by the build hook onto
    /// grpc-stream-codec's `Grpc` and `Streaming`.
    Full,
}

impl Framing {
    /// Parses `codec` or `full`, as the binaries' `--framing` takes it.
    pub fn parse(name: &str) -> Option<Framing> {
        match name {
            "codec" => Some(Framing::Codec),
            "full" => Some(Framing::Full),
            _ => None,
        }
    }
}

/// How [`serve_with`] serves.
#[derive(Clone, Copy, Debug, Default)]
pub struct ServeOptions {
    /// tonic's stock codec instead of grpc-stream-codec's.
    pub stock: bool,
    /// With grpc-stream-codec (not `stock`): codec only or full framing.
    pub framing: Framing,
    /// With the full framing: the soft batch threshold of every response in
    /// bytes (0: one message per batch); `None` keeps the 32 KiB default.
    /// Process-wide, through
    /// [`set_default_batch_threshold`](grpc_stream_codec::encode::set_default_batch_threshold).
    pub batch_threshold: Option<usize>,
    /// The HTTP/2 connection window; `None` keeps hyper's (1 MiB).
    pub connection_window: Option<u32>,
}

/// The example server's connection window: h2 closes a connection whose
/// unread DATA frames under 256 bytes cost more than half of it
/// (`256 - length` each), and a client may send a burst before the server's
/// stream task runs to take them out. 16 MiB covers about 34,000 unread
/// 10-byte messages (docs/connections.md), where hyper's 1 MiB covers 2,100.
pub const SMALL_FRAMES_CONNECTION_WINDOW: u32 = 16 << 20;

/// Serves the Echo service on `listener` as `options` say.
pub async fn serve_with(
    listener: TcpListener,
    options: ServeOptions,
) -> Result<(), tonic::transport::Error> {
    // tonic sets TCP_NODELAY only on sockets it accepts itself; without it
    // small streamed replies wait on Nagle's algorithm for the peer's ACK.
    let incoming = TcpListenerStream::new(listener).map(|accepted| {
        accepted.inspect(|stream| {
            let _ = stream.set_nodelay(true);
        })
    });
    if let Some(threshold) = options.batch_threshold {
        grpc_stream_codec::encode::set_default_batch_threshold(threshold);
    }
    let mut builder = Server::builder().initial_connection_window_size(options.connection_window);
    let router = if options.stock {
        let mut server = stock::echo_server::EchoServer::new(EchoService);
        for encoding in ENCODINGS {
            server = server.accept_compressed(encoding).send_compressed(encoding);
        }
        builder.add_service(server)
    } else if options.framing == Framing::Full {
        let mut server = full::echo_server::EchoServer::new(EchoService);
        for encoding in ENCODINGS {
            server = server.accept_compressed(encoding).send_compressed(encoding);
        }
        builder.add_service(server)
    } else {
        let mut server = adapter::echo_server::EchoServer::new(EchoService);
        for encoding in ENCODINGS {
            server = server.accept_compressed(encoding).send_compressed(encoding);
        }
        builder.add_service(server)
    };
    router.serve_with_incoming(incoming).await
}

/// Serves the Echo service with grpc-stream-codec's full framing behind
/// tonic-web's `GrpcWebLayer` on `listener`, over HTTP/1.1 as well as
/// HTTP/2: gRPC-Web requests (`application/grpc-web`, `+proto`, `-text`)
/// are translated to gRPC and back, gRPC ones pass through. The batch
/// threshold is the process-wide default
/// ([`set_default_batch_threshold`](grpc_stream_codec::encode::set_default_batch_threshold)).
pub async fn serve_grpc_web(listener: TcpListener) -> Result<(), tonic::transport::Error> {
    // As in `serve_with`: tonic sets TCP_NODELAY only on sockets it accepts.
    let incoming = TcpListenerStream::new(listener).map(|accepted| {
        accepted.inspect(|stream| {
            let _ = stream.set_nodelay(true);
        })
    });
    let mut server = full::echo_server::EchoServer::new(EchoService);
    for encoding in ENCODINGS {
        server = server.accept_compressed(encoding).send_compressed(encoding);
    }
    Server::builder()
        .accept_http1(true)
        .layer(tonic_web::GrpcWebLayer::new())
        .add_service(server)
        .serve_with_incoming(incoming)
        .await
}

/// The most streams one connection may have open on a server with a
/// receive budget: what its HTTP/2 windows are sized for
/// (`grpc_stream_codec::budget::Budget::http2_windows`). With a 256 MiB
/// budget that gives 64 KiB per stream and 65 x 64 KiB per connection
/// (tonic's defaults are 1 MiB and 1 MiB, which one waiting stream fills).
pub const BUDGET_STREAMS_PER_CONNECTION: u32 = 64;

/// Serves the Echo service with grpc-stream-codec's full framing on
/// `listener`, every request stream counted against `budget`
/// (`grpc_stream_codec::budget::ReceiveBudgetLayer`), with the HTTP/2 windows
/// and stream limit `budget.http2_windows(BUDGET_STREAMS_PER_CONNECTION)`
/// gives: a stream waiting for the budget leaves up to its stream window
/// unread, which counts against its connection's window too, and the
/// connection window keeps one stream window free for the streams that
/// hold the budget.
pub async fn serve_full_with_budget(
    listener: TcpListener,
    budget: grpc_stream_codec::budget::Budget,
) -> Result<(), tonic::transport::Error> {
    let windows = budget.http2_windows(BUDGET_STREAMS_PER_CONNECTION);
    serve_full_on_windows(listener, windows, Some(budget)).await
}

/// [`serve_full_with_budget`]'s server on `windows`, with `budget` or, for
/// `None`, none: the server binary's `--budget-windows BYTES`, the
/// like-for-like baseline of a budget server (the same HTTP/2 windows and
/// stream limit, no budget).
pub async fn serve_full_on_windows(
    listener: TcpListener,
    windows: grpc_stream_codec::budget::Http2Windows,
    budget: Option<grpc_stream_codec::budget::Budget>,
) -> Result<(), tonic::transport::Error> {
    let incoming = TcpListenerStream::new(listener).map(|accepted| {
        accepted.inspect(|stream| {
            let _ = stream.set_nodelay(true);
        })
    });
    let mut server = full::echo_server::EchoServer::new(EchoService);
    for encoding in ENCODINGS {
        server = server.accept_compressed(encoding).send_compressed(encoding);
    }
    let builder = Server::builder()
        .initial_stream_window_size(windows.stream)
        .initial_connection_window_size(windows.connection)
        .max_concurrent_streams(windows.max_concurrent_streams);
    match budget {
        Some(budget) => {
            builder
                .layer(grpc_stream_codec::budget::ReceiveBudgetLayer::new(budget))
                .add_service(server)
                .serve_with_incoming(incoming)
                .await
        }
        None => {
            let mut builder = builder;
            builder
                .add_service(server)
                .serve_with_incoming(incoming)
                .await
        }
    }
}

/// Binds `addr` (port 0 picks a free port) and returns the listener and the
/// address it is bound to.
pub async fn bind(addr: SocketAddr) -> std::io::Result<(TcpListener, SocketAddr)> {
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    Ok((listener, local))
}

/// Parses a compression name as the binaries take it: `gzip`, `deflate`,
/// `zstd`, or `none`/`identity` for none.
pub fn parse_compression(name: &str) -> Option<Option<CompressionEncoding>> {
    match name {
        "none" | "identity" => Some(None),
        "gzip" => Some(Some(CompressionEncoding::Gzip)),
        "deflate" => Some(Some(CompressionEncoding::Deflate)),
        "zstd" => Some(Some(CompressionEncoding::Zstd)),
        _ => None,
    }
}
