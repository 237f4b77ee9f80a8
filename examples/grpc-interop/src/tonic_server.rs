//! `grpc.testing.TestService` on tonic with grpc-stream-codec's full
//! framing: the generated code is rewritten by the build hook, so requests
//! and responses go through this crate's decoder and batching encoder.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt, future, stream};
use grpc_stream_codec::tonic::Streaming;
use tokio::net::TcpListener;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::codec::CompressionEncoding;
use tonic::transport::Server;
use tonic::{Code, Request, Response, Status};

use crate::echo_metadata::TonicEcho;
use crate::spec::{MAX_HALF_DUPLEX_REQUESTS, NOT_COMPRESSED, request_compressed, zeros};
use crate::stats::{Held, StreamStats};
use crate::tonic_gen::test_service_server::{TestService, TestServiceServer};
use crate::tonic_gen::{
    BoolValue, EchoStatus, Empty, Payload, ResponseParameters, SimpleRequest, SimpleResponse,
    StreamingInputCallRequest, StreamingInputCallResponse, StreamingOutputCallRequest,
    StreamingOutputCallResponse,
};

/// The response stream of the streaming methods.
pub type ResponseStream =
    Pin<Box<dyn Stream<Item = Result<StreamingOutputCallResponse, Status>> + Send>>;

/// The handlers, as grpc's interop descriptions require them.
#[derive(Clone, Debug, Default)]
pub struct TonicTestService {
    stats: Arc<StreamStats>,
}

impl TonicTestService {
    /// A service whose streaming handlers count into `stats`.
    pub fn with_stats(stats: Arc<StreamStats>) -> Self {
        TonicTestService { stats }
    }
}

fn echo_status(status: Option<&EchoStatus>) -> Option<Status> {
    status
        .filter(|status| status.code != 0)
        .map(|status| Status::new(Code::from_i32(status.code), status.message.clone()))
}

/// A COMPRESSABLE payload of `size` zeros; `INVALID_ARGUMENT` for a size
/// the server will not build.
fn payload(size: i32) -> Result<Payload, Box<Status>> {
    let body = zeros(size).ok_or_else(|| {
        Box::new(Status::invalid_argument(format!(
            "response size {size} refused"
        )))
    })?;
    Ok(Payload { r#type: 0, body })
}

/// `INVALID_ARGUMENT` when the request asked to be checked for compression
/// and was not compressed.
fn check_compressed(expect: Option<&BoolValue>, compressed: bool) -> Result<(), Box<Status>> {
    if expect.is_some_and(|expect| expect.value) && !compressed {
        return Err(Box::new(Status::invalid_argument(NOT_COMPRESSED)));
    }
    Ok(())
}

/// The responses `parameters` ask for, each after its interval.
fn responses(
    parameters: Vec<ResponseParameters>,
) -> impl Stream<Item = Result<StreamingOutputCallResponse, Status>> + Send {
    stream::iter(parameters).then(|parameters| async move {
        if parameters.interval_us > 0 {
            tokio::time::sleep(Duration::from_micros(parameters.interval_us as u64)).await;
        }
        Ok(StreamingOutputCallResponse {
            payload: Some(payload(parameters.size).map_err(|status| *status)?),
        })
    })
}

/// A request's responses, or its `response_status` if it asks for one.
fn answer(request: StreamingOutputCallRequest) -> ResponseStream {
    // As grpc-go's reference server: a request that asks for a status gets
    // that status instead of its responses.
    match echo_status(request.response_status.as_ref()) {
        Some(status) => stream::iter([Err(status)]).boxed(),
        None => responses(request.response_parameters).boxed(),
    }
}

/// Ends `responses` after its first error, as a call ends with its status.
fn until_error<T: Send + 'static>(
    responses: impl Stream<Item = Result<T, Status>> + Send + 'static,
) -> Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>> {
    responses
        .scan(false, |failed, item| {
            let next = (!*failed).then_some(item);
            *failed = next.as_ref().is_some_and(Result::is_err);
            future::ready(next)
        })
        .boxed()
}

#[tonic::async_trait]
impl TestService for TonicTestService {
    async fn empty_call(&self, _request: Request<Empty>) -> Result<Response<Empty>, Status> {
        Ok(Response::new(Empty {}))
    }

    async fn unary_call(
        &self,
        request: Request<SimpleRequest>,
    ) -> Result<Response<SimpleResponse>, Status> {
        let compressed = request_compressed(request.metadata().as_ref());
        let request = request.into_inner();
        check_compressed(request.expect_compressed.as_ref(), compressed)
            .map_err(|status| *status)?;
        if let Some(status) = echo_status(request.response_status.as_ref()) {
            return Err(status);
        }
        let mut response = Response::new(SimpleResponse {
            payload: Some(payload(request.response_size).map_err(|status| *status)?),
            ..SimpleResponse::default()
        });
        // Compressed only when asked: the client checks both ways.
        if !request.response_compressed.is_some_and(|c| c.value) {
            response.disable_compression();
        }
        Ok(response)
    }

    async fn cacheable_unary_call(
        &self,
        request: Request<SimpleRequest>,
    ) -> Result<Response<SimpleResponse>, Status> {
        self.unary_call(request).await
    }

    type StreamingOutputCallStream = ResponseStream;

    async fn streaming_output_call(
        &self,
        request: Request<StreamingOutputCallRequest>,
    ) -> Result<Response<ResponseStream>, Status> {
        Ok(Response::new(until_error(answer(request.into_inner()))))
    }

    async fn streaming_input_call(
        &self,
        request: Request<Streaming<StreamingInputCallRequest>>,
    ) -> Result<Response<StreamingInputCallResponse>, Status> {
        let _open = self.stats.open();
        let compressed = request_compressed(request.metadata().as_ref());
        let mut requests = request.into_inner();
        let mut total = 0i32;
        while let Some(request) = requests.message().await? {
            self.stats.received();
            check_compressed(request.expect_compressed.as_ref(), compressed)
                .map_err(|status| *status)?;
            let size = request.payload.map_or(0, |payload| payload.body.len());
            total = i32::try_from(size)
                .ok()
                .and_then(|size| total.checked_add(size))
                .ok_or_else(|| Status::invalid_argument("aggregated payload size overflows"))?;
        }
        Ok(Response::new(StreamingInputCallResponse {
            aggregated_payload_size: total,
        }))
    }

    type FullDuplexCallStream = ResponseStream;

    async fn full_duplex_call(
        &self,
        request: Request<Streaming<StreamingOutputCallRequest>>,
    ) -> Result<Response<ResponseStream>, Status> {
        let open = self.stats.open();
        let stats = self.stats.clone();
        let mut requests = request.into_inner();
        // As the reference servers: the first request is read before the
        // call answers, so a status it asks for fails the call itself
        // (trailers-only), before any response.
        let first = requests.message().await?;
        if let Some(status) = first
            .as_ref()
            .and_then(|first| echo_status(first.response_status.as_ref()))
        {
            return Err(status);
        }
        let responses = stream::iter(first.map(Ok))
            .chain(requests)
            .flat_map(move |request| match request {
                Ok(request) => {
                    stats.received();
                    answer(request)
                }
                Err(status) => stream::iter([Err(status)]).boxed(),
            });
        // The adapter ends the call at its `grpc-timeout`.
        let responses = until_error(responses);
        // The guard lives as long as the response stream does.
        Ok(Response::new(Held::new(responses, open).boxed()))
    }

    type HalfDuplexCallStream = ResponseStream;

    async fn half_duplex_call(
        &self,
        request: Request<Streaming<StreamingOutputCallRequest>>,
    ) -> Result<Response<ResponseStream>, Status> {
        let _open = self.stats.open();
        let mut requests = request.into_inner();
        let mut buffered = Vec::new();
        while let Some(request) = requests.message().await? {
            self.stats.received();
            if buffered.len() == MAX_HALF_DUPLEX_REQUESTS {
                return Err(Status::resource_exhausted(format!(
                    "HalfDuplexCall buffers at most {MAX_HALF_DUPLEX_REQUESTS} requests"
                )));
            }
            buffered.push(request);
        }
        let responses = stream::iter(buffered).flat_map(answer);
        Ok(Response::new(until_error(responses)))
    }

    async fn unimplemented_call(
        &self,
        _request: Request<Empty>,
    ) -> Result<Response<Empty>, Status> {
        Err(Status::unimplemented(
            "grpc.testing.TestService/UnimplementedCall is not implemented",
        ))
    }
}

/// Every encoding the server accepts and may answer with.
pub const ENCODINGS: [CompressionEncoding; 3] = [
    CompressionEncoding::Gzip,
    CompressionEncoding::Deflate,
    CompressionEncoding::Zstd,
];

/// The generated server around `service`, accepting and sending every
/// encoding of [`ENCODINGS`]. `UnimplementedService` is left out on
/// purpose: calls to it get `UNIMPLEMENTED` from tonic's router.
pub fn test_service(service: TonicTestService) -> TestServiceServer<TonicTestService> {
    ENCODINGS
        .into_iter()
        .fold(TestServiceServer::new(service), |server, encoding| {
            server.accept_compressed(encoding).send_compressed(encoding)
        })
}

/// Serves `service` on `listener` until the future is dropped.
pub async fn serve(
    listener: TcpListener,
    service: TonicTestService,
) -> Result<(), tonic::transport::Error> {
    // tonic sets TCP_NODELAY only on sockets it accepts itself.
    let incoming = TcpListenerStream::new(listener).map(|accepted| {
        accepted.inspect(|stream| {
            let _ = stream.set_nodelay(true);
        })
    });
    Server::builder()
        .layer(tower::layer::layer_fn(TonicEcho))
        .add_service(test_service(service))
        .serve_with_incoming(incoming)
        .await
}

/// Binds `addr` (port 0 picks one) and returns the listener and its address.
pub async fn bind(addr: SocketAddr) -> std::io::Result<(TcpListener, SocketAddr)> {
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    Ok((listener, local))
}
