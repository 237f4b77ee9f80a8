//! The Echo service, written once and served through either generated
//! server trait.

use std::pin::Pin;

use bytes::{Bytes, BytesMut};
use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Response, Status, Streaming};

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

/// ServerStream: `response_count` responses (0 means 1), each with
/// `response_size` bytes, every byte equal to `seq % 251`, `seq` counting from 0.
pub fn server_stream(request: &EchoRequest) -> Result<ResponseStream, Status> {
    if request.response_size > MAX_RESPONSE_SIZE {
        return Err(Status::resource_exhausted(format!(
            "response_size {} exceeds {MAX_RESPONSE_SIZE}",
            request.response_size
        )));
    }
    let count = request.response_count.max(1);
    let size = request.response_size as usize;
    let responses = tokio_stream::iter(0..count).map(move |seq| {
        // `seq % 251` is below 251, so the cast keeps the value.
        let mut payload = BytesMut::zeroed(size);
        payload.fill((seq % 251) as u8);
        Ok(EchoResponse {
            payload: payload.freeze(),
            seq,
            ..EchoResponse::default()
        })
    });
    Ok(Box::pin(responses))
}

/// ClientStream: the sum of the payload lengths and the number of requests.
pub async fn client_stream(
    mut requests: impl Stream<Item = Result<EchoRequest, Status>> + Unpin,
) -> Result<EchoResponse, Status> {
    let mut total_bytes = 0u64;
    let mut count = 0u32;
    while let Some(request) = requests.next().await {
        total_bytes += request?.payload.len() as u64;
        count = count.saturating_add(1);
    }
    Ok(EchoResponse {
        total_bytes,
        count,
        ..EchoResponse::default()
    })
}

/// Bidi: echoes each request's payload as it arrives, `seq` counting from 0.
pub fn bidi(
    requests: impl Stream<Item = Result<EchoRequest, Status>> + Send + 'static,
) -> ResponseStream {
    let mut seq = 0u32;
    Box::pin(requests.map(move |request| {
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
    ($module:ident) => {
        #[tonic::async_trait]
        impl crate::$module::echo_server::Echo for EchoService {
            async fn unary(
                &self,
                request: Request<EchoRequest>,
            ) -> Result<Response<EchoResponse>, Status> {
                Ok(Response::new(unary(request.into_inner())))
            }

            type ServerStreamStream = ResponseStream;

            async fn server_stream(
                &self,
                request: Request<EchoRequest>,
            ) -> Result<Response<ResponseStream>, Status> {
                server_stream(request.get_ref()).map(Response::new)
            }

            async fn client_stream(
                &self,
                request: Request<Streaming<EchoRequest>>,
            ) -> Result<Response<EchoResponse>, Status> {
                client_stream(request.into_inner()).await.map(Response::new)
            }

            type BidiStream = ResponseStream;

            async fn bidi(
                &self,
                request: Request<Streaming<EchoRequest>>,
            ) -> Result<Response<ResponseStream>, Status> {
                Ok(Response::new(bidi(request.into_inner())))
            }
        }
    };
}

impl_echo!(adapter);
impl_echo!(stock);
