//! The Echo service of `proto/echo.proto` on volo-grpc, generated twice by
//! `build.rs`:
//!
//! - [`adapter`]: volo-build's output rewritten by
//!   `grpc_stream_codec::volo::build`, so requests and responses go through
//!   grpc-stream-codec's batching encoder and bounded decoder;
//! - [`stock`]: the same service exactly as volo-build writes it.
//!
//! Both modules have the same items: the generated types (`EchoRequest`,
//! `EchoServer`, `EchoClientBuilder`, ...), [`EchoService`]'s handlers,
//! `serve` and `client` helpers, and `calls`, which run one RPC and check
//! every reply. The binaries and the end-to-end tests use them.

use std::net::SocketAddr;

use bytes::Bytes;
use volo_grpc::codec::compression::{CompressionEncoding, GzipConfig, ZlibConfig, ZstdConfig};

/// The handlers of the Echo service, for both flavours.
///
/// `ServerStream` follows the proto: `response_count` responses (0 means 1),
/// each of `response_size` bytes all equal to `seq % 251`, `seq` counting
/// from 0 (a `response_size` above [`MAX_RESPONSE_SIZE`] is refused with
/// `resource_exhausted`). `Bidi` echoes each request's payload with its
/// `seq`; `ClientStream` returns the number of requests and their total
/// payload.
///
/// Errors mid-stream, as the Python and tonic example servers do them:
/// request metadata `x-fail-after: K` ([`FAIL_AFTER`]) makes `ServerStream`
/// send `min(K, count)` responses and `Bidi` echo K requests, then fail
/// (`Bidi` when request K+1 arrives) with [`failure`]: `aborted`,
/// `failed after K messages`, trailing metadata `x-fail-detail: K`.
///
/// Request metadata `x-pace-micros: G` ([`PACE_MICROS`]) makes
/// `ServerStream` produce its responses one at a time, G µs apart.
#[derive(Clone, Copy, Debug, Default)]
pub struct EchoService {
    /// K for calls without `x-fail-after` metadata; the metadata wins.
    pub fail_after: Option<u32>,
}

/// Request metadata that makes `ServerStream` and `Bidi` fail after that
/// many responses.
pub const FAIL_AFTER: &str = "x-fail-after";

/// Trailing metadata sent with that failure; its value is the count.
pub const FAIL_DETAIL: &str = "x-fail-detail";

/// Request metadata that paces `ServerStream`: the first response is ready
/// at once, each later one only this many microseconds after the one before
/// (the benchmark's source whose messages are not all ready).
pub const PACE_MICROS: &str = "x-pace-micros";

/// The gap a call's [`PACE_MICROS`] metadata asks for, if it holds a
/// number above 0.
pub fn pace_for(metadata: &volo_grpc::metadata::MetadataMap) -> Option<std::time::Duration> {
    metadata
        .get(PACE_MICROS)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<u64>().ok())
        .filter(|&micros| micros > 0)
        .map(std::time::Duration::from_micros)
}

/// ClientStream request metadata: milliseconds the handler waits before it
/// reads its first request (a slow start).
pub const READ_DELAY_MILLIS: &str = "x-read-delay-millis";

/// ClientStream request metadata: microseconds the handler waits after
/// each request it reads (a slow reader).
pub const READ_PACE_MICROS: &str = "x-read-pace-micros";

/// The wait before the first read and after each read that a ClientStream
/// call's metadata asks for ([`READ_DELAY_MILLIS`], [`READ_PACE_MICROS`]).
pub fn read_pace(
    metadata: &volo_grpc::metadata::MetadataMap,
) -> (Option<std::time::Duration>, Option<std::time::Duration>) {
    let number = |name: &str| {
        metadata
            .get(name)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.trim().parse::<u64>().ok())
            .filter(|&number| number > 0)
    };
    (
        number(READ_DELAY_MILLIS).map(std::time::Duration::from_millis),
        number(READ_PACE_MICROS).map(std::time::Duration::from_micros),
    )
}

/// Binary request metadata `Unary` sends back, decoded and re-encoded, as
/// binary response metadata of the same name: how the tests see that a
/// valid `-bin` request header reaches a handler (through
/// `grpc_stream_codec::volo::BinaryMetadataLayer`, decoded) and a `-bin`
/// response header reaches a client.
pub const ECHO_BIN: &str = "x-echo-bin";

/// The decoded value of a request's [`ECHO_BIN`] metadata, if the server's
/// `BinaryMetadataLayer` passed one on.
pub fn echo_bin<T>(req: &volo_grpc::Request<T>) -> Option<Vec<u8>> {
    req.extensions()
        .get::<grpc_stream_codec::volo::BinaryMetadata>()?
        .get_bin(ECHO_BIN)
}

/// The largest `response_size` `ServerStream` honours: a gRPC peer's
/// default receive limit, so no request makes the server allocate more per
/// response than a client could take.
pub const MAX_RESPONSE_SIZE: u32 = 4 * 1024 * 1024;

/// The status a stream fails with after `sent` responses: `aborted`,
/// `failed after K messages`, trailing metadata `x-fail-detail: K`.
pub fn failure(sent: u32) -> volo_grpc::Status {
    let mut status = volo_grpc::Status::new(
        volo_grpc::Code::Aborted,
        format!("failed after {sent} messages"),
    );
    status
        .metadata_mut()
        .headers_mut()
        .insert(FAIL_DETAIL, http::HeaderValue::from(sent));
    status
}

impl EchoService {
    /// K for a call: its `x-fail-after` metadata, else [`Self::fail_after`].
    /// A value that is not a number is ignored.
    pub fn fail_after_for(&self, metadata: &volo_grpc::metadata::MetadataMap) -> Option<u32> {
        metadata
            .get(FAIL_AFTER)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.trim().parse().ok())
            .or(self.fail_after)
    }
}

/// The payload of `ServerStream` response `seq`.
pub fn server_stream_payload(seq: u32, size: u32) -> Bytes {
    Bytes::from(vec![(seq % 251) as u8; size as usize])
}

/// A request payload the client can recognise in the echo: position `seq`,
/// `size` bytes.
pub fn request_payload(seq: u32, size: usize) -> Bytes {
    let salt = seq.wrapping_mul(31) as usize;
    Bytes::from(
        (0..size)
            .map(|i| (i.wrapping_mul(7).wrapping_add(salt) % 256) as u8)
            .collect::<Vec<u8>>(),
    )
}

/// A volo-grpc compression config by gRPC name (`gzip`, `deflate`/`zlib`,
/// `zstd`), always with a level: stock volo-grpc writes nothing for a config
/// of `None`.
pub fn compression_by_name(name: &str) -> Option<CompressionEncoding> {
    match name {
        "gzip" => Some(CompressionEncoding::Gzip(Some(GzipConfig::default()))),
        "deflate" | "zlib" => Some(CompressionEncoding::Zlib(Some(ZlibConfig::default()))),
        "zstd" => Some(CompressionEncoding::Zstd(Some(ZstdConfig::default()))),
        _ => None,
    }
}

/// Every compression volo-grpc knows, for a server's send/accept lists.
pub fn all_compressions() -> Vec<CompressionEncoding> {
    ["gzip", "zlib", "zstd"]
        .into_iter()
        .filter_map(compression_by_name)
        .collect()
}

/// The example server's connection window: h2 closes a connection whose
/// unread DATA frames under 256 bytes cost more than half of it
/// (`256 - length` each), and a client may send a burst before the server's
/// stream task runs to take them out. 16 MiB covers about 34,000 unread
/// 10-byte messages (docs/connections.md), where volo-grpc's 1 MiB covers
/// 2,100.
pub const SMALL_FRAMES_CONNECTION_WINDOW: u32 = 16 << 20;

/// The most streams one connection may have open on a server with a
/// receive budget: what its HTTP/2 windows are sized for
/// (`grpc_stream_codec::budget::Budget::http2_windows`). With a 256 MiB
/// budget that gives 64 KiB per stream and 65 x 64 KiB per connection
/// (volo-grpc's defaults are 1 MiB and 1 MiB, which one waiting stream
/// fills).
pub const BUDGET_STREAMS_PER_CONNECTION: u32 = 64;

/// Which RPC to call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rpc {
    /// `Unary`.
    Unary,
    /// `ServerStream`.
    ServerStream,
    /// `ClientStream`.
    ClientStream,
    /// `Bidi`.
    Bidi,
}

impl Rpc {
    /// All four, in proto order.
    pub const ALL: [Rpc; 4] = [Rpc::Unary, Rpc::ServerStream, Rpc::ClientStream, Rpc::Bidi];
}

/// What went wrong in a checked call.
#[derive(Debug)]
pub enum CallError {
    /// The call failed with a status (boxed: volo-grpc's is 176 bytes).
    Status(Box<volo_grpc::Status>),
    /// A reply was not what the service must send.
    Mismatch(String),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Status(status) => write!(f, "call failed: {status:?}"),
            CallError::Mismatch(what) => write!(f, "wrong reply: {what}"),
        }
    }
}

impl std::error::Error for CallError {}

impl From<volo_grpc::Status> for CallError {
    fn from(status: volo_grpc::Status) -> Self {
        CallError::Status(Box::new(status))
    }
}

fn ended_ok(status: Option<volo_grpc::Status>) -> Result<(), CallError> {
    match status {
        Some(status) => Err(status.into()),
        None => Ok(()),
    }
}

fn check(ok: bool, what: impl FnOnce() -> String) -> Result<(), CallError> {
    if ok {
        Ok(())
    } else {
        Err(CallError::Mismatch(what()))
    }
}

/// How the flavours' `client_with` (and `adapter::grpc_client`) build a
/// client.
#[derive(Clone, Debug, Default)]
pub struct ClientOptions {
    /// Compress requests with this, and accept responses compressed with it.
    pub compression: Option<CompressionEncoding>,
    /// Metadata sent with every request.
    pub metadata: MetadataLayer,
}

/// A client layer that adds fixed metadata to every request (the binaries'
/// `--metadata KEY=VALUE`).
#[derive(Clone, Debug, Default)]
pub struct MetadataLayer {
    pairs: std::sync::Arc<Vec<(http::HeaderName, http::HeaderValue)>>,
}

impl MetadataLayer {
    /// The layer for these `(key, value)` pairs; fails on a name or value
    /// that cannot be a header.
    pub fn new<K: AsRef<str>, V: AsRef<str>>(pairs: &[(K, V)]) -> Result<Self, String> {
        let pairs = pairs
            .iter()
            .map(|(key, value)| {
                let (key, value) = (key.as_ref(), value.as_ref());
                let name = http::HeaderName::try_from(key)
                    .map_err(|err| format!("metadata key {key:?}: {err}"))?;
                let value = http::HeaderValue::try_from(value)
                    .map_err(|err| format!("metadata value {value:?}: {err}"))?;
                Ok((name, value))
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(MetadataLayer {
            pairs: std::sync::Arc::new(pairs),
        })
    }
}

impl<S> volo::Layer<S> for MetadataLayer {
    type Service = MetadataService<S>;

    fn layer(self, inner: S) -> MetadataService<S> {
        MetadataService { inner, layer: self }
    }
}

/// The service of [`MetadataLayer`].
#[derive(Clone, Debug)]
pub struct MetadataService<S> {
    inner: S,
    layer: MetadataLayer,
}

impl<S, T> volo::Service<volo_grpc::context::ClientContext, volo_grpc::Request<T>>
    for MetadataService<S>
where
    S: volo::Service<volo_grpc::context::ClientContext, volo_grpc::Request<T>> + Sync,
    T: Send,
{
    type Response = S::Response;
    type Error = S::Error;

    async fn call(
        &self,
        cx: &mut volo_grpc::context::ClientContext,
        mut req: volo_grpc::Request<T>,
    ) -> Result<S::Response, S::Error> {
        let headers = req.metadata_mut().headers_mut();
        for (name, value) in self.layer.pairs.iter() {
            headers.append(name.clone(), value.clone());
        }
        self.inner.call(cx, req).await
    }
}

/// Binds `addr` (port 0 for any free port) for [`adapter::serve`] or
/// [`stock::serve`], returning the listener and the bound address.
pub async fn bind(addr: SocketAddr) -> std::io::Result<(tokio::net::TcpListener, SocketAddr)> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    Ok((listener, local))
}

/// The items of one flavour; `$recv` is the receiving stream type its
/// generated code uses.
macro_rules! flavour {
    ($recv:ident, deflate_names: $deflate_names:expr, serve_doc: $serve_doc:literal) => {
        use std::net::SocketAddr;

        use futures::{StreamExt, stream};
        use volo_grpc::codec::compression::CompressionEncoding;
        use volo_grpc::server::{Server, ServiceBuilder};
        use volo_grpc::{BoxStream, Request, Response, Status};

        use crate::{CallError, EchoService, Rpc, check, ended_ok};

        impl Echo for EchoService {
            async fn unary(
                &self,
                req: Request<EchoRequest>,
            ) -> Result<Response<EchoResponse>, Status> {
                let echo_bin = crate::echo_bin(&req);
                let req = req.into_inner();
                let mut response = Response::new(EchoResponse {
                    payload: req.payload,
                    ..Default::default()
                });
                if let Some(value) = echo_bin {
                    response.metadata_mut().insert_bin(
                        crate::ECHO_BIN,
                        volo_grpc::metadata::MetadataValue::from_bytes(&value),
                    );
                }
                Ok(response)
            }

            async fn server_stream(
                &self,
                req: Request<EchoRequest>,
            ) -> Result<Response<BoxStream<'static, Result<EchoResponse, Status>>>, Status> {
                let fail_after = self.fail_after_for(req.metadata());
                let pace = crate::pace_for(req.metadata());
                let req = req.into_inner();
                if req.response_size > crate::MAX_RESPONSE_SIZE {
                    return Err(Status::resource_exhausted(format!(
                        "response_size {} exceeds {}",
                        req.response_size,
                        crate::MAX_RESPONSE_SIZE
                    )));
                }
                let count = req.response_count.max(1);
                let size = req.response_size;
                let sent = fail_after.map_or(count, |k| k.min(count));
                let failed = stream::iter(
                    fail_after
                        .map(|_| crate::failure(sent))
                        .map(Err::<EchoResponse, Status>),
                );
                if let Some(gap) = pace {
                    // One response at a time: the encoder finds the source
                    // pending between them.
                    let paced = stream::unfold(0u32, move |seq| async move {
                        if seq >= sent {
                            return None;
                        }
                        if seq > 0 {
                            tokio::time::sleep(gap).await;
                        }
                        let response = EchoResponse {
                            payload: crate::server_stream_payload(seq, size),
                            seq,
                            ..Default::default()
                        };
                        Some((Ok(response), seq + 1))
                    });
                    return Ok(Response::new(paced.chain(failed).boxed()));
                }
                // A plain iterator: every response is ready at once, which is
                // what batching is for.
                let responses = stream::iter(0..sent)
                    .map(move |seq| EchoResponse {
                        payload: crate::server_stream_payload(seq, size),
                        seq,
                        ..Default::default()
                    })
                    .map(Ok);
                Ok(Response::new(responses.chain(failed).boxed()))
            }

            async fn client_stream(
                &self,
                req: Request<$recv<EchoRequest>>,
            ) -> Result<Response<EchoResponse>, Status> {
                let (delay, gap) = crate::read_pace(req.metadata());
                let mut requests = req.into_inner();
                let (mut count, mut total_bytes) = (0u32, 0u64);
                if let Some(delay) = delay {
                    tokio::time::sleep(delay).await;
                }
                while let Some(request) = requests.next().await {
                    let request = request?;
                    count += 1;
                    total_bytes += request.payload.len() as u64;
                    if let Some(gap) = gap {
                        tokio::time::sleep(gap).await;
                    }
                }
                Ok(Response::new(EchoResponse {
                    total_bytes,
                    count,
                    ..Default::default()
                }))
            }

            async fn bidi(
                &self,
                req: Request<$recv<EchoRequest>>,
            ) -> Result<Response<BoxStream<'static, Result<EchoResponse, Status>>>, Status> {
                let fail_after = self.fail_after_for(req.metadata());
                let requests = req.into_inner();
                // (requests, seq, failed): the request after the K-th echo
                // is read, and its arrival is what fails the stream.
                let state = (requests, 0u32, false);
                let responses =
                    stream::unfold(state, move |(mut requests, seq, failed)| async move {
                        if failed {
                            return None;
                        }
                        let request = requests.next().await?;
                        if Some(seq) == fail_after {
                            return Some((Err(crate::failure(seq)), (requests, seq, true)));
                        }
                        let response = request.map(|request| EchoResponse {
                            payload: request.payload,
                            seq,
                            ..Default::default()
                        });
                        Some((response, (requests, seq + 1, false)))
                    });
                Ok(Response::new(responses.boxed()))
            }
        }

        /// Serves `service` on `listener` until the task is dropped, sending
        /// and accepting gzip, zlib (deflate) and zstd.
        ///
        #[doc = $serve_doc]
        pub async fn serve(
            listener: tokio::net::TcpListener,
            service: EchoService,
        ) -> Result<(), volo_grpc::BoxError> {
            serve_with_connection_window(listener, service, None).await
        }

        /// [`serve`] with an HTTP/2 connection window of `window` bytes
        /// (`None`: volo-grpc's 1 MiB).
        pub async fn serve_with_connection_window(
            listener: tokio::net::TcpListener,
            service: EchoService,
            window: Option<u32>,
        ) -> Result<(), volo_grpc::BoxError> {
            let codec = ServiceBuilder::new(EchoServer::new(service))
                .send_compressions(crate::all_compressions())
                .accept_compressions(crate::all_compressions())
                .build();
            let incoming = volo::net::incoming::DefaultIncoming::from(listener);
            let server = match window {
                Some(window) => Server::new().http2_init_connection_window_size(window),
                None => Server::new(),
            };
            if $deflate_names {
                server
                    .layer_tower(grpc_stream_codec::volo::BinaryMetadataLayer)
                    .add_service(codec)
                    .run(incoming)
                    .await
            } else {
                server.add_service(codec).run(incoming).await
            }
        }

        /// A client for `addr` that compresses its requests with
        /// `compression` and asks for compressed responses the same way,
        /// configured the volo-grpc way (deflate is called `zlib`).
        pub fn client(addr: SocketAddr, compression: Option<CompressionEncoding>) -> EchoClient {
            client_with(
                addr,
                &crate::ClientOptions {
                    compression,
                    ..Default::default()
                },
            )
        }

        /// [`client`] with request metadata on every call.
        pub fn client_with(addr: SocketAddr, options: &crate::ClientOptions) -> EchoClient {
            let mut builder = EchoClientBuilder::new("echo")
                .address(addr)
                .layer_outer(options.metadata.clone());
            if let Some(compression) = options.compression {
                builder = builder
                    .send_compressions(vec![compression])
                    .accept_compressions(vec![compression]);
            }
            builder.build()
        }

        /// Calls `rpc` and checks every reply: payloads of `size` bytes,
        /// `count` messages on the streaming side(s).
        pub async fn call(
            client: &EchoClient,
            rpc: Rpc,
            size: usize,
            count: u32,
        ) -> Result<(), CallError> {
            match rpc {
                Rpc::Unary => calls::unary(client, size).await,
                Rpc::ServerStream => {
                    let (received, status) = calls::server_stream(client, size, count).await?;
                    ended_ok(status)?;
                    check(received == count.max(1), || {
                        format!("{received} responses, expected {}", count.max(1))
                    })
                }
                Rpc::ClientStream => calls::client_stream(client, size, count).await,
                Rpc::Bidi => {
                    let (received, status) = calls::bidi(client, size, count).await?;
                    ended_ok(status)?;
                    check(received == count, || {
                        format!("{received} responses, expected {count}")
                    })
                }
            }
        }

        /// The four calls, each checking what comes back.
        pub mod calls {
            use futures::StreamExt;

            use super::*;

            /// `Unary` with a `size`-byte payload; the echo must match.
            pub async fn unary(client: &EchoClient, size: usize) -> Result<(), CallError> {
                let payload = crate::request_payload(0, size);
                let reply = client
                    .unary(EchoRequest {
                        payload: payload.clone(),
                        ..Default::default()
                    })
                    .await?
                    .into_inner();
                check(reply.payload == payload, || {
                    format!("unary echo of {size} bytes differs")
                })
            }

            /// `ServerStream` asking for `count` responses of `size` bytes.
            /// Returns how many correct responses, in order, came before the
            /// end, and the status the stream ended with if not OK.
            pub async fn server_stream(
                client: &EchoClient,
                size: usize,
                count: u32,
            ) -> Result<(u32, Option<Status>), CallError> {
                let mut responses = client
                    .server_stream(EchoRequest {
                        response_count: count,
                        response_size: size as u32,
                        ..Default::default()
                    })
                    .await?
                    .into_inner();
                read_in_order(&mut responses, "response", |seq| {
                    crate::server_stream_payload(seq, size as u32)
                })
                .await
            }

            /// `ClientStream` with `count` requests of `size` bytes; the
            /// totals must match.
            pub async fn client_stream(
                client: &EchoClient,
                size: usize,
                count: u32,
            ) -> Result<(), CallError> {
                let requests = futures::stream::iter(0..count).map(move |seq| EchoRequest {
                    payload: crate::request_payload(seq, size),
                    ..Default::default()
                });
                let reply = client.client_stream(requests).await?.into_inner();
                check(reply.count == count, || {
                    format!("count {} != {count}", reply.count)
                })?;
                check(reply.total_bytes == u64::from(count) * size as u64, || {
                    format!(
                        "total_bytes {} != {}",
                        reply.total_bytes,
                        u64::from(count) * size as u64
                    )
                })
            }

            /// `Bidi` with `count` requests of `size` bytes. Returns how many
            /// correct echoes, in order, came before the end, and the status
            /// the stream ended with if not OK.
            pub async fn bidi(
                client: &EchoClient,
                size: usize,
                count: u32,
            ) -> Result<(u32, Option<Status>), CallError> {
                let requests = futures::stream::iter(0..count).map(move |seq| EchoRequest {
                    payload: crate::request_payload(seq, size),
                    ..Default::default()
                });
                let mut responses = client.bidi(requests).await?.into_inner();
                read_in_order(&mut responses, "echo", |seq| {
                    crate::request_payload(seq, size)
                })
                .await
            }

            /// Reads responses until the end, checking that each has the
            /// next `seq` and the payload `expected(seq)`. Returns how many
            /// were correct and the status the stream ended with if not OK.
            async fn read_in_order(
                responses: &mut (impl futures::Stream<Item = Result<EchoResponse, Status>> + Unpin),
                what: &str,
                expected: impl Fn(u32) -> bytes::Bytes,
            ) -> Result<(u32, Option<Status>), CallError> {
                let mut seq = 0u32;
                while let Some(response) = responses.next().await {
                    let response = match response {
                        Ok(response) => response,
                        Err(status) => return Ok((seq, Some(status))),
                    };
                    check(response.seq == seq, || {
                        format!("{what} {seq} has seq {}", response.seq)
                    })?;
                    check(response.payload == expected(seq), || {
                        format!(
                            "{what} {seq}: payload of {} bytes differs",
                            response.payload.len()
                        )
                    })?;
                    seq += 1;
                }
                Ok((seq, None))
            }
        }
    };
}

/// The Echo service through grpc-stream-codec's volo adapter.
pub mod adapter {
    mod generated {
        grpc_stream_codec::volo::include_service!("adapter/volo_gen.rs");
    }
    pub use generated::volo_gen::streamcodec::echo::v1::*;

    use grpc_stream_codec::volo::RecvStream;
    flavour!(
        RecvStream,
        deflate_names: true,
        serve_doc: "Peers that call deflate `deflate` (grpcio, tonic) are understood too: the server runs behind `grpc_stream_codec::volo::BinaryMetadataLayer`, which also does `DeflateNameLayer`'s renaming."
    );

    /// [`serve`] with every request stream counted against `budget`
    /// (`grpc_stream_codec::budget`), through the adapter's
    /// `ReceiveBudgetLayer`: the server binary's `--receive-budget BYTES`.
    ///
    /// HTTP/2 windows and stream limit from
    /// `budget.http2_windows(`[`crate::BUDGET_STREAMS_PER_CONNECTION`]`)`:
    /// a stream waiting for the budget leaves up to its stream window
    /// unread, and that counts against its connection's window too, so the
    /// connection window must exceed what its waiting streams leave unread
    /// or the streams that hold the budget cannot receive the rest of their
    /// messages.
    pub async fn serve_with_budget(
        listener: tokio::net::TcpListener,
        service: EchoService,
        budget: grpc_stream_codec::budget::Budget,
    ) -> Result<(), volo_grpc::BoxError> {
        let windows = budget.http2_windows(crate::BUDGET_STREAMS_PER_CONNECTION);
        serve_on_windows(listener, service, windows, Some(budget)).await
    }

    /// [`serve_with_budget`]'s server on `windows`, with `budget` or, for
    /// `None`, none: the server binary's `--budget-windows BYTES`, the
    /// like-for-like baseline of a budget server (the same HTTP/2 windows
    /// and stream limit, no budget).
    pub async fn serve_on_windows(
        listener: tokio::net::TcpListener,
        service: EchoService,
        windows: grpc_stream_codec::budget::Http2Windows,
        budget: Option<grpc_stream_codec::budget::Budget>,
    ) -> Result<(), volo_grpc::BoxError> {
        let codec = ServiceBuilder::new(EchoServer::new(service))
            .send_compressions(crate::all_compressions())
            .accept_compressions(crate::all_compressions())
            .build();
        let incoming = volo::net::incoming::DefaultIncoming::from(listener);
        let server = Server::new()
            .layer_tower(grpc_stream_codec::volo::BinaryMetadataLayer)
            .http2_init_stream_window_size(windows.stream)
            .http2_init_connection_window_size(windows.connection)
            .http2_max_concurrent_streams(windows.max_concurrent_streams);
        match budget {
            Some(budget) => {
                server
                    .layer_front(grpc_stream_codec::budget::ReceiveBudgetLayer::new(budget))
                    .add_service(codec)
                    .run(incoming)
                    .await
            }
            None => server.add_service(codec).run(incoming).await,
        }
    }

    /// A client for `addr` that compresses and accepts `options.compression`
    /// under gRPC's names (`deflate`, not `zlib`) through
    /// `grpc_stream_codec::volo::ClientCompressionLayer`, as grpcio, tonic
    /// and a volo adapter server behind `BinaryMetadataLayer` expect. (A stock
    /// volo-grpc server only knows `zlib`: use [`client_with`] there.)
    pub fn grpc_client(addr: SocketAddr, options: &crate::ClientOptions) -> EchoClient {
        let compression = options.compression;
        EchoClientBuilder::new("echo")
            .address(addr)
            .layer_outer(options.metadata.clone())
            .layer_inner(grpc_stream_codec::volo::ClientCompressionLayer::new(
                compression,
                compression,
            ))
            .build()
    }
}

/// [`adapter`] again, generated with `split_generated_files(true)` (one file
/// per item) and rewritten the same way; kept to test that layout.
#[doc(hidden)]
pub mod adapter_split {
    mod generated {
        grpc_stream_codec::volo::include_service!("adapter_split/volo_gen.rs");
    }
    pub use generated::volo_gen::streamcodec::echo::v1::*;

    use grpc_stream_codec::volo::RecvStream;
    flavour!(RecvStream, deflate_names: true, serve_doc: "");
}

/// The Echo service exactly as volo-build generates it.
pub mod stock {
    mod generated {
        include!(concat!(env!("OUT_DIR"), "/stock/volo_gen.rs"));
    }
    pub use generated::volo_gen::streamcodec::echo::v1::*;

    use volo_grpc::RecvStream;
    flavour!(RecvStream, deflate_names: false, serve_doc: "");
}
