//! The Echo service, written once and served through either generated
//! server trait.

use std::pin::Pin;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use grpc_stream_codec::tonic::Streaming as FullStreaming;
use tokio_stream::{Stream, StreamExt};
use tonic::metadata::{MetadataMap, MetadataValue};
use tonic::{Code, Request, Response, Status, Streaming};

use crate::adapter::{EchoRequest, EchoResponse};

/// The largest `response_size` ServerStream honours: the default receive
/// limit of a gRPC peer, so no request can make the server allocate more per
/// response than any client could take.
pub const MAX_RESPONSE_SIZE: u32 = 4 * 1024 * 1024;

/// A boxed response stream, the associated stream type of both server traits.
pub type ResponseStream = Pin<Box<dyn Stream<Item = Result<EchoResponse, Status>> + Send>>;

/// Unary: echoes the request's payload.
pub fn unary(request: EchoRequest) -> EchoResponse {
    EchoResponse {
        payload: request.payload,
        ..EchoResponse::default()
    }
}

/// Request metadata that makes ServerStream and Bidi fail after that many
/// responses, for interop checks of errors in the middle of a stream.
pub const FAIL_AFTER: &str = "x-fail-after";

/// Trailing metadata sent with that failure; its value is the count.
pub const FAIL_DETAIL: &str = "x-fail-detail";

/// Request metadata that paces ServerStream: the first response is ready at
/// once, each later one only this many microseconds after the one before
/// (the benchmark's source whose messages are not all ready).
pub const PACE_MICROS: &str = "x-pace-micros";

/// ClientStream request metadata: milliseconds the handler waits before it
/// reads its first request (a slow start: an auth look-up, say).
pub const READ_DELAY_MILLIS: &str = "x-read-delay-millis";

/// ClientStream request metadata: microseconds the handler waits after each
/// request it reads (a slow reader: a database write per message, say).
pub const READ_PACE_MICROS: &str = "x-read-pace-micros";

/// The number above 0 that request metadata `name` holds, if any.
fn metadata_number(metadata: &MetadataMap, name: &str) -> Option<u64> {
    let number: u64 = metadata.get(name)?.to_str().ok()?.trim().parse().ok()?;
    (number > 0).then_some(number)
}

/// The gap a request's [`PACE_MICROS`] metadata asks for, if it holds a
/// number above 0.
pub fn pace(metadata: &MetadataMap) -> Option<Duration> {
    metadata_number(metadata, PACE_MICROS).map(Duration::from_micros)
}

/// How a ClientStream handler reads, as its request metadata asks
/// ([`READ_DELAY_MILLIS`], [`READ_PACE_MICROS`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct ReadPace {
    /// Waited before the first read.
    pub delay: Option<Duration>,
    /// Waited after each request read.
    pub per_message: Option<Duration>,
}

impl ReadPace {
    /// The pace `metadata` asks for.
    pub fn from_metadata(metadata: &MetadataMap) -> ReadPace {
        ReadPace {
            delay: metadata_number(metadata, READ_DELAY_MILLIS).map(Duration::from_millis),
            per_message: metadata_number(metadata, READ_PACE_MICROS).map(Duration::from_micros),
        }
    }
}

/// `responses`, produced one at a time `gap` apart when a gap is given (the
/// first at once), so an encoder finds the stream pending between them.
pub fn paced(responses: ResponseStream, gap: Option<Duration>) -> ResponseStream {
    match gap {
        Some(gap) => Box::pin(responses.throttle(gap)),
        None => responses,
    }
}

/// The `x-fail-after` count of a request, if it has a valid one.
pub fn fail_after(metadata: &MetadataMap) -> Option<u32> {
    metadata.get(FAIL_AFTER)?.to_str().ok()?.parse().ok()
}

/// The status a stream fails with after `sent` responses: `ABORTED`,
/// `failed after K messages`, and trailing metadata `x-fail-detail: K`.
pub fn failure(sent: u32) -> Status {
    let mut metadata = MetadataMap::new();
    metadata.insert(FAIL_DETAIL, MetadataValue::from(sent));
    Status::with_metadata(
        Code::Aborted,
        format!("failed after {sent} messages"),
        metadata,
    )
}

/// ServerStream: `response_count` responses (0 means 1), each with
/// `response_size` bytes, every byte equal to `seq % 251`, `seq` counting from 0.
/// With `fail_after = Some(k)`, at most `k` responses and then [`failure`].
pub fn server_stream(
    request: &EchoRequest,
    fail_after: Option<u32>,
) -> Result<ResponseStream, Status> {
    if request.response_size > MAX_RESPONSE_SIZE {
        return Err(Status::resource_exhausted(format!(
            "response_size {} exceeds {MAX_RESPONSE_SIZE}",
            request.response_size
        )));
    }
    let count = request.response_count.max(1);
    let size = request.response_size as usize;
    let sent = fail_after.map_or(count, |k| k.min(count));
    let responses = tokio_stream::iter(0..sent).map(move |seq| {
        // `seq % 251` is below 251, so the cast keeps the value.
        let mut payload = BytesMut::zeroed(size);
        payload.fill((seq % 251) as u8);
        Ok(EchoResponse {
            payload: payload.freeze(),
            seq,
            ..EchoResponse::default()
        })
    });
    let failed = tokio_stream::iter(fail_after.map(|_| Err(failure(sent))));
    Ok(Box::pin(responses.chain(failed)))
}

/// ClientStream: the sum of the payload lengths and the number of requests.
/// Read at the pace `read` asks for.
pub async fn client_stream(
    mut requests: impl Stream<Item = Result<EchoRequest, Status>> + Unpin,
    read: ReadPace,
) -> Result<EchoResponse, Status> {
    let mut total_bytes = 0u64;
    let mut count = 0u32;
    if let Some(delay) = read.delay {
        tokio::time::sleep(delay).await;
    }
    while let Some(request) = requests.next().await {
        total_bytes += request?.payload.len() as u64;
        count = count.saturating_add(1);
        if let Some(gap) = read.per_message {
            tokio::time::sleep(gap).await;
        }
    }
    Ok(EchoResponse {
        total_bytes,
        count,
        ..EchoResponse::default()
    })
}

/// Bidi: echoes each request's payload as it arrives, `seq` counting from 0.
/// With `fail_after = Some(k)`, the request after the `k`-th echo is answered
/// with [`failure`] and the stream ends.
pub fn bidi(
    requests: impl Stream<Item = Result<EchoRequest, Status>> + Send + 'static,
    fail_after: Option<u32>,
) -> ResponseStream {
    let mut seq = 0u32;
    let limit = fail_after.map_or(usize::MAX, |k| k as usize + 1);
    Box::pin(requests.take(limit).map(move |request| {
        if Some(seq) == fail_after {
            return Err(failure(seq));
        }
        let payload: Bytes = request?.payload;
        let response = EchoResponse {
            payload,
            seq,
            ..EchoResponse::default()
        };
        seq = seq.wrapping_add(1);
        Ok(response)
    }))
}

/// The Echo service; implements the server trait of both generated modules.
#[derive(Debug, Clone, Copy, Default)]
pub struct EchoService;

macro_rules! impl_echo {
    ($module:ident, $streaming:ident) => {
        #[tonic::async_trait]
        impl crate::$module::echo_server::Echo for EchoService {
            async fn unary(
                &self,
                request: Request<EchoRequest>,
            ) -> Result<Response<EchoResponse>, Status> {
                // Binary request metadata comes back as sent: how tests see
                // a valid `-bin` header reach a handler and a client.
                let echo_bin = request.metadata().get_bin($crate::ECHO_BIN).cloned();
                let mut response = Response::new(unary(request.into_inner()));
                if let Some(value) = echo_bin {
                    response.metadata_mut().insert_bin($crate::ECHO_BIN, value);
                }
                Ok(response)
            }

            type ServerStreamStream = ResponseStream;

            async fn server_stream(
                &self,
                request: Request<EchoRequest>,
            ) -> Result<Response<ResponseStream>, Status> {
                let gap = pace(request.metadata());
                server_stream(request.get_ref(), fail_after(request.metadata()))
                    .map(|responses| Response::new(paced(responses, gap)))
            }

            async fn client_stream(
                &self,
                request: Request<$streaming<EchoRequest>>,
            ) -> Result<Response<EchoResponse>, Status> {
                let read = ReadPace::from_metadata(request.metadata());
                client_stream(request.into_inner(), read)
                    .await
                    .map(Response::new)
            }

            type BidiStream = ResponseStream;

            async fn bidi(
                &self,
                request: Request<$streaming<EchoRequest>>,
            ) -> Result<Response<ResponseStream>, Status> {
                let fail_after = fail_after(request.metadata());
                Ok(Response::new(bidi(request.into_inner(), fail_after)))
            }
        }
    };
}

impl_echo!(adapter, Streaming);
impl_echo!(stock, Streaming);
impl_echo!(full, FullStreaming);
