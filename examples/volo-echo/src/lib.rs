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
/// from 0. `Bidi` echoes each request's payload with its `seq`;
/// `ClientStream` returns the number of requests and their total payload.
#[derive(Clone, Copy, Debug, Default)]
pub struct EchoService {
    /// When set, `ServerStream` and `Bidi` end with an `aborted` status after
    /// this many responses (for tests of errors mid-stream).
    pub fail_after: Option<u32>,
}

/// The message of the status [`EchoService::fail_after`] ends a stream with.
pub const FAIL_MESSAGE: &str = "failing as configured";

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
    ($recv:ident) => {
        use std::net::SocketAddr;

        use futures::{StreamExt, TryStreamExt, stream};
        use volo_grpc::codec::compression::CompressionEncoding;
        use volo_grpc::server::{Server, ServiceBuilder};
        use volo_grpc::{BoxStream, Request, Response, Status};

        use crate::{CallError, EchoService, FAIL_MESSAGE, Rpc, check, ended_ok};

        impl Echo for EchoService {
            async fn unary(
                &self,
                req: Request<EchoRequest>,
            ) -> Result<Response<EchoResponse>, Status> {
                let req = req.into_inner();
                Ok(Response::new(EchoResponse {
                    payload: req.payload,
                    ..Default::default()
                }))
            }

            async fn server_stream(
                &self,
                req: Request<EchoRequest>,
            ) -> Result<Response<BoxStream<'static, Result<EchoResponse, Status>>>, Status> {
                let req = req.into_inner();
                let count = req.response_count.max(1);
                let size = req.response_size;
                let sent = self.fail_after.map_or(count, |k| k.min(count));
                // A plain iterator: every response is ready at once, which is
                // what batching is for.
                let responses = stream::iter(0..sent)
                    .map(move |seq| EchoResponse {
                        payload: crate::server_stream_payload(seq, size),
                        seq,
                        ..Default::default()
                    })
                    .map(Ok);
                Ok(Response::new(with_failure(responses, self.fail_after)))
            }

            async fn client_stream(
                &self,
                req: Request<$recv<EchoRequest>>,
            ) -> Result<Response<EchoResponse>, Status> {
                let mut requests = req.into_inner();
                let (mut count, mut total_bytes) = (0u32, 0u64);
                while let Some(request) = requests.next().await {
                    let request = request?;
                    count += 1;
                    total_bytes += request.payload.len() as u64;
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
                let requests = req.into_inner();
                let limit = self.fail_after.map_or(usize::MAX, |k| k as usize);
                let mut seq = 0;
                let responses = requests.take(limit).map_ok(move |request| {
                    let response = EchoResponse {
                        payload: request.payload,
                        seq,
                        ..Default::default()
                    };
                    seq += 1;
                    response
                });
                Ok(Response::new(with_failure(responses, self.fail_after)))
            }
        }

        fn with_failure<S>(
            responses: S,
            fail_after: Option<u32>,
        ) -> BoxStream<'static, Result<EchoResponse, Status>>
        where
            S: futures::Stream<Item = Result<EchoResponse, Status>> + Send + 'static,
        {
            match fail_after {
                None => responses.boxed(),
                Some(_) => responses
                    .chain(stream::iter([Err(Status::aborted(FAIL_MESSAGE))]))
                    .boxed(),
            }
        }

        /// Serves `service` on `listener` until the task is dropped, sending
        /// and accepting gzip, zlib (deflate) and zstd.
        pub async fn serve(
            listener: tokio::net::TcpListener,
            service: EchoService,
        ) -> Result<(), volo_grpc::BoxError> {
            let codec = ServiceBuilder::new(EchoServer::new(service))
                .send_compressions(crate::all_compressions())
                .accept_compressions(crate::all_compressions())
                .build();
            Server::new()
                .add_service(codec)
                .run(volo::net::incoming::DefaultIncoming::from(listener))
                .await
        }

        /// A client for `addr` that compresses its requests with
        /// `compression` and asks for compressed responses the same way.
        pub fn client(addr: SocketAddr, compression: Option<CompressionEncoding>) -> EchoClient {
            let mut builder = EchoClientBuilder::new("echo").address(addr);
            if let Some(compression) = compression {
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
                let mut seq = 0u32;
                while let Some(response) = responses.next().await {
                    let response = match response {
                        Ok(response) => response,
                        Err(status) => return Ok((seq, Some(status))),
                    };
                    check(response.seq == seq, || {
                        format!("response {seq} has seq {}", response.seq)
                    })?;
                    check(
                        response.payload == crate::server_stream_payload(seq, size as u32),
                        || {
                            format!(
                                "response {seq}: payload of {} bytes differs",
                                response.payload.len()
                            )
                        },
                    )?;
                    seq += 1;
                }
                Ok((seq, None))
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
                let mut seq = 0u32;
                while let Some(response) = responses.next().await {
                    let response = match response {
                        Ok(response) => response,
                        Err(status) => return Ok((seq, Some(status))),
                    };
                    check(response.seq == seq, || {
                        format!("echo {seq} has seq {}", response.seq)
                    })?;
                    check(
                        response.payload == crate::request_payload(seq, size),
                        || {
                            format!(
                                "echo {seq}: payload of {} bytes differs",
                                response.payload.len()
                            )
                        },
                    )?;
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
        include!(concat!(env!("OUT_DIR"), "/adapter/volo_gen.rs"));
    }
    pub use generated::volo_gen::streamcodec::echo::v1::*;

    use grpc_stream_codec::volo::RecvStream;
    flavour!(RecvStream);
}

/// [`adapter`] again, generated with `split_generated_files(true)` (one file
/// per item) and rewritten the same way; kept to test that layout.
#[doc(hidden)]
pub mod adapter_split {
    mod generated {
        include!(concat!(env!("OUT_DIR"), "/adapter_split/volo_gen.rs"));
    }
    pub use generated::volo_gen::streamcodec::echo::v1::*;

    use grpc_stream_codec::volo::RecvStream;
    flavour!(RecvStream);
}

/// The Echo service exactly as volo-build generates it.
pub mod stock {
    mod generated {
        include!(concat!(env!("OUT_DIR"), "/stock/volo_gen.rs"));
    }
    pub use generated::volo_gen::streamcodec::echo::v1::*;

    use volo_grpc::RecvStream;
    flavour!(RecvStream);
}
