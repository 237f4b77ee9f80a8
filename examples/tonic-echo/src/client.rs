//! A client over either generated stub, and checks that run one RPC and
//! verify every reply.

use std::fmt;

use bytes::Bytes;
use tokio_stream::{Stream, StreamExt};
use tonic::codec::CompressionEncoding;
use tonic::metadata::MetadataMap;
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Status};

use crate::ResponseStream;
use crate::adapter::{EchoRequest, EchoResponse};
use crate::{adapter, full, stock};

/// An Echo client using grpc-stream-codec's codec or full framing, or
/// tonic's stock codec, optionally sending the same metadata with every call.
#[derive(Debug, Clone)]
pub struct EchoClient {
    stub: Stub,
    metadata: MetadataMap,
}

#[derive(Debug, Clone)]
enum Stub {
    /// Generated with `grpc_stream_codec::tonic::ProstCodec`.
    Adapter(adapter::echo_client::EchoClient<Channel>),
    /// Generated with `tonic_prost::ProstCodec`.
    Stock(stock::echo_client::EchoClient<Channel>),
    /// Generated for grpc-stream-codec's full framing.
    Full(full::echo_client::EchoClient<Channel>),
}

/// Which client stack an [`EchoClient`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientStack {
    /// tonic's stock codec and framing.
    Stock,
    /// grpc-stream-codec's codec inside tonic's framing.
    Codec,
    /// grpc-stream-codec's full framing.
    Full,
}

macro_rules! with_client {
    ($self:ident, $client:ident => $body:expr) => {
        match &mut $self.stub {
            Stub::Adapter($client) => $body,
            Stub::Stock($client) => $body,
            Stub::Full($client) => $body,
        }
    };
}

impl EchoClient {
    /// Connects to `addr` (e.g. `http://127.0.0.1:50051`). With `compression`
    /// set, requests are sent compressed with it and compressed responses
    /// are accepted in it.
    pub async fn connect(
        addr: String,
        stock: bool,
        compression: Option<CompressionEncoding>,
    ) -> Result<EchoClient, tonic::transport::Error> {
        let channel = Endpoint::from_shared(addr)?.connect().await?;
        Ok(EchoClient::new(channel, stock, compression))
    }

    /// A client over an existing channel.
    pub fn new(channel: Channel, stock: bool, compression: Option<CompressionEncoding>) -> Self {
        let stack = if stock {
            ClientStack::Stock
        } else {
            ClientStack::Codec
        };
        EchoClient::with_stack(channel, stack, compression)
    }

    /// Connects to `addr` with the given client stack.
    pub async fn connect_with(
        addr: String,
        stack: ClientStack,
        compression: Option<CompressionEncoding>,
    ) -> Result<EchoClient, tonic::transport::Error> {
        let channel = Endpoint::from_shared(addr)?.connect().await?;
        Ok(EchoClient::with_stack(channel, stack, compression))
    }

    /// A client over an existing channel with the given stack.
    pub fn with_stack(
        channel: Channel,
        stack: ClientStack,
        compression: Option<CompressionEncoding>,
    ) -> Self {
        macro_rules! compressed {
            ($client:expr) => {
                match compression {
                    Some(encoding) => $client
                        .send_compressed(encoding)
                        .accept_compressed(encoding),
                    None => $client,
                }
            };
        }
        let stub = match stack {
            ClientStack::Stock => {
                Stub::Stock(compressed!(stock::echo_client::EchoClient::new(channel)))
            }
            ClientStack::Codec => {
                Stub::Adapter(compressed!(adapter::echo_client::EchoClient::new(channel)))
            }
            ClientStack::Full => {
                Stub::Full(compressed!(full::echo_client::EchoClient::new(channel)))
            }
        };
        EchoClient {
            stub,
            metadata: MetadataMap::new(),
        }
    }

    /// Sends `metadata` with every call from now on.
    pub fn with_metadata(mut self, metadata: MetadataMap) -> Self {
        self.metadata = metadata;
        self
    }

    fn request<T>(&self, message: T) -> Request<T> {
        let mut request = Request::new(message);
        if !self.metadata.is_empty() {
            *request.metadata_mut() = self.metadata.clone();
        }
        request
    }

    /// Calls Unary.
    pub async fn unary(&mut self, request: EchoRequest) -> Result<EchoResponse, Status> {
        let request = self.request(request);
        with_client!(self, client => client.unary(request).await.map(|r| r.into_inner()))
    }

    /// Calls ServerStream.
    pub async fn server_stream(&mut self, request: EchoRequest) -> Result<ResponseStream, Status> {
        let request = self.request(request);
        with_client!(self, client => client.server_stream(request).await.map(|r| boxed(r.into_inner())))
    }

    /// Calls ClientStream.
    pub async fn client_stream(
        &mut self,
        requests: impl Stream<Item = EchoRequest> + Send + 'static,
    ) -> Result<EchoResponse, Status> {
        let requests = self.request(requests);
        with_client!(self, client => client.client_stream(requests).await.map(|r| r.into_inner()))
    }

    /// Calls Bidi.
    pub async fn bidi(
        &mut self,
        requests: impl Stream<Item = EchoRequest> + Send + 'static,
    ) -> Result<ResponseStream, Status> {
        let requests = self.request(requests);
        with_client!(self, client => client.bidi(requests).await.map(|r| boxed(r.into_inner())))
    }
}

fn boxed(
    responses: impl Stream<Item = Result<EchoResponse, Status>> + Send + 'static,
) -> ResponseStream {
    Box::pin(responses)
}

/// Why a check failed.
#[derive(Debug)]
pub enum Mismatch {
    /// The call or one of its streams failed.
    Status(Status),
    /// A reply differed from what the proto promises.
    Reply(String),
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mismatch::Status(status) => write!(f, "call failed: {status}"),
            Mismatch::Reply(what) => write!(f, "wrong reply: {what}"),
        }
    }
}

impl std::error::Error for Mismatch {}

impl From<Status> for Mismatch {
    fn from(status: Status) -> Self {
        Mismatch::Status(status)
    }
}

fn ensure(ok: bool, what: impl FnOnce() -> String) -> Result<(), Mismatch> {
    if ok {
        Ok(())
    } else {
        Err(Mismatch::Reply(what()))
    }
}

/// The payload of the `seq`-th request of a check: `size` bytes that differ
/// from one `seq` to the next, so reordering or mixing shows.
pub fn request_payload(seq: u32, size: usize) -> Bytes {
    let offset = (seq as usize).wrapping_mul(131);
    (0..size)
        .map(|i| (offset.wrapping_add(i) % 256) as u8)
        .collect()
}

fn requests(size: usize, count: u32) -> impl Stream<Item = EchoRequest> + Send + 'static {
    tokio_stream::iter(0..count).map(move |seq| EchoRequest {
        payload: request_payload(seq, size),
        ..EchoRequest::default()
    })
}

/// Unary with a `size`-byte payload: the payload comes back unchanged.
pub async fn check_unary(client: &mut EchoClient, size: usize) -> Result<(), Mismatch> {
    let payload = request_payload(0, size);
    let reply = client
        .unary(EchoRequest {
            payload: payload.clone(),
            ..EchoRequest::default()
        })
        .await?;
    ensure(reply.payload == payload, || {
        format!(
            "unary payload of {} bytes, sent {size}",
            reply.payload.len()
        )
    })?;
    ensure(
        reply.seq == 0 && reply.total_bytes == 0 && reply.count == 0,
        || format!("unary set other fields: {reply:?}"),
    )
}

/// ServerStream of `count` responses of `size` bytes: `max(count, 1)`
/// responses in order, each byte equal to `seq % 251`.
pub async fn check_server_stream(
    client: &mut EchoClient,
    size: u32,
    count: u32,
) -> Result<(), Mismatch> {
    check_server_stream_expecting(client, size, count, count.max(1)).await
}

/// ServerStream asking for `count` responses of `size` bytes, of which
/// exactly `expected` must arrive, in order (a server may be told by
/// metadata to send another number, e.g. grpcio's `x-response-count`).
pub async fn check_server_stream_expecting(
    client: &mut EchoClient,
    size: u32,
    count: u32,
    expected: u32,
) -> Result<(), Mismatch> {
    let mut responses = client
        .server_stream(EchoRequest {
            response_count: count,
            response_size: size,
            ..EchoRequest::default()
        })
        .await?;
    let mut received = 0u32;
    while let Some(response) = responses.next().await {
        let response = response?;
        let seq = received;
        ensure(response.seq == seq, || {
            format!("response {seq} has seq {}", response.seq)
        })?;
        ensure(response.payload.len() == size as usize, || {
            format!(
                "response {seq} has {} bytes, asked {size}",
                response.payload.len()
            )
        })?;
        let fill = (seq % 251) as u8;
        ensure(response.payload.iter().all(|&b| b == fill), || {
            format!("response {seq} has a byte other than {fill}")
        })?;
        received += 1;
    }
    ensure(received == expected, || {
        format!("{received} responses, expected {expected}")
    })
}

/// ClientStream of `count` requests of `size` bytes: the totals come back.
pub async fn check_client_stream(
    client: &mut EchoClient,
    size: usize,
    count: u32,
) -> Result<(), Mismatch> {
    let reply = client.client_stream(requests(size, count)).await?;
    let total = size as u64 * u64::from(count);
    ensure(reply.total_bytes == total && reply.count == count, || {
        format!(
            "client stream totals {} bytes / {} messages, sent {total} / {count}",
            reply.total_bytes, reply.count
        )
    })
}

/// Bidi with `count` requests of `size` bytes: each payload comes back, in
/// order, with its `seq`.
pub async fn check_bidi(client: &mut EchoClient, size: usize, count: u32) -> Result<(), Mismatch> {
    let mut responses = client.bidi(requests(size, count)).await?;
    let mut received = 0u32;
    while let Some(response) = responses.next().await {
        let response = response?;
        let seq = received;
        ensure(received < count, || format!("more than {count} responses"))?;
        ensure(response.seq == seq, || {
            format!("response {seq} has seq {}", response.seq)
        })?;
        ensure(response.payload == request_payload(seq, size), || {
            format!("response {seq} does not echo request {seq}")
        })?;
        received += 1;
    }
    ensure(received == count, || {
        format!("{received} responses, expected {count}")
    })
}
