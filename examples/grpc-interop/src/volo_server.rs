//! `grpc.testing.TestService` on volo-grpc with grpc-stream-codec's volo
//! adapter (the generated code rewritten by its build hook), behind
//! `DeflateNameLayer` so gRPC's `deflate` works.
//!
//! volo-grpc picks a response's compression from the client's
//! `grpc-accept-encoding` before the handler runs and gives the handler no
//! way to turn it off, so `response_compressed: false` cannot be honoured
//! here: a client that accepts gzip gets every response compressed.
//!
//! volo-grpc 0.12.2 panics on binary request metadata; the server runs
//! behind [`BinaryMetadataLayer`] (see [`crate::volo_binary_metadata`]).

use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt, future, stream};
use grpc_stream_codec::volo::{DeflateNameLayer, RecvStream};
use volo_grpc::codec::compression::{CompressionEncoding, GzipConfig, ZlibConfig, ZstdConfig};
use volo_grpc::server::{Server, ServiceBuilder};
use volo_grpc::{BoxStream, Code, Request, Response, Status};

use crate::echo_metadata::VoloEcho;
use crate::spec::{MAX_HALF_DUPLEX_REQUESTS, NOT_COMPRESSED, request_compressed, zeros};
use crate::stats::{Held, StreamStats};
use crate::volo_binary_metadata::BinaryMetadataLayer;
use crate::volo_gen::{
    BoolValue, EchoStatus, Empty, Payload, PayloadType, ResponseParameters, SimpleRequest,
    SimpleResponse, StreamingInputCallRequest, StreamingInputCallResponse,
    StreamingOutputCallRequest, StreamingOutputCallResponse, TestService, TestServiceServer,
};

/// The response stream of the streaming methods.
pub type ResponseStream = BoxStream<'static, Result<StreamingOutputCallResponse, Status>>;

/// The handlers, as grpc's interop descriptions require them.
#[derive(Clone, Debug, Default)]
pub struct VoloTestService {
    stats: Arc<StreamStats>,
}

impl VoloTestService {
    /// A service whose streaming handlers count into `stats`.
    pub fn with_stats(stats: Arc<StreamStats>) -> Self {
        VoloTestService { stats }
    }
}

fn echo_status(status: Option<&EchoStatus>) -> Option<Status> {
    status
        .filter(|status| status.code != 0)
        .map(|status| Status::new(Code::from_i32(status.code), status.message.to_string()))
}

/// A COMPRESSABLE payload of `size` zeros; `INVALID_ARGUMENT` for a size
/// the server will not build.
fn payload(size: i32) -> Result<Payload, Box<Status>> {
    let body = zeros(size).ok_or_else(|| {
        Box::new(Status::invalid_argument(format!(
            "response size {size} refused"
        )))
    })?;
    Ok(Payload {
        r#type: PayloadType::default(),
        body,
    })
}

/// `INVALID_ARGUMENT` when the request asked to be checked for compression
/// and was not compressed.
fn check_compressed(expect: Option<&BoolValue>, compressed: bool) -> Result<(), Box<Status>> {
    if expect.is_some_and(|expect| expect.value) && !compressed {
        return Err(Box::new(Status::invalid_argument(NOT_COMPRESSED)));
    }
    Ok(())
}

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

fn answer(request: StreamingOutputCallRequest) -> ResponseStream {
    // As grpc-go's reference server: a request that asks for a status gets
    // that status instead of its responses.
    match echo_status(request.response_status.as_ref()) {
        Some(status) => stream::iter([Err(status)]).boxed(),
        None => responses(request.response_parameters).boxed(),
    }
}

fn until_error<T: Send + 'static>(
    responses: impl Stream<Item = Result<T, Status>> + Send + 'static,
) -> BoxStream<'static, Result<T, Status>> {
    responses
        .scan(false, |failed, item| {
            let next = (!*failed).then_some(item);
            *failed = next.as_ref().is_some_and(Result::is_err);
            future::ready(next)
        })
        .boxed()
}

impl TestService for VoloTestService {
    async fn empty_call(&self, _req: Request<Empty>) -> Result<Response<Empty>, Status> {
        Ok(Response::new(Empty {}))
    }

    async fn unary_call(
        &self,
        req: Request<SimpleRequest>,
    ) -> Result<Response<SimpleResponse>, Status> {
        let compressed = request_compressed(req.metadata().headers());
        let request = req.into_inner();
        check_compressed(request.expect_compressed.as_ref(), compressed)
            .map_err(|status| *status)?;
        if let Some(status) = echo_status(request.response_status.as_ref()) {
            return Err(status);
        }
        Ok(Response::new(SimpleResponse {
            payload: Some(payload(request.response_size).map_err(|status| *status)?),
            ..SimpleResponse::default()
        }))
    }

    async fn cacheable_unary_call(
        &self,
        req: Request<SimpleRequest>,
    ) -> Result<Response<SimpleResponse>, Status> {
        self.unary_call(req).await
    }

    async fn streaming_output_call(
        &self,
        req: Request<StreamingOutputCallRequest>,
    ) -> Result<Response<ResponseStream>, Status> {
        Ok(Response::new(until_error(answer(req.into_inner()))))
    }

    async fn streaming_input_call(
        &self,
        req: Request<RecvStream<StreamingInputCallRequest>>,
    ) -> Result<Response<StreamingInputCallResponse>, Status> {
        let _open = self.stats.open();
        let compressed = request_compressed(req.metadata().headers());
        let mut requests = req.into_inner();
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

    async fn full_duplex_call(
        &self,
        req: Request<RecvStream<StreamingOutputCallRequest>>,
    ) -> Result<Response<ResponseStream>, Status> {
        let open = self.stats.open();
        let stats = self.stats.clone();
        let mut requests = req.into_inner();
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

    async fn half_duplex_call(
        &self,
        req: Request<RecvStream<StreamingOutputCallRequest>>,
    ) -> Result<Response<ResponseStream>, Status> {
        let _open = self.stats.open();
        let mut requests = req.into_inner();
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

    async fn unimplemented_call(&self, _req: Request<Empty>) -> Result<Response<Empty>, Status> {
        Err(Status::unimplemented(
            "grpc.testing.TestService/UnimplementedCall is not implemented",
        ))
    }
}

/// Every compression the server accepts and may answer with; volo-grpc's
/// `Zlib` is gRPC's `deflate` behind `DeflateNameLayer`. Always with a
/// level: volo-grpc writes nothing for a config of `None`.
pub fn compressions() -> Vec<CompressionEncoding> {
    vec![
        CompressionEncoding::Gzip(Some(GzipConfig::default())),
        CompressionEncoding::Zlib(Some(ZlibConfig::default())),
        CompressionEncoding::Zstd(Some(ZstdConfig::default())),
    ]
}

/// Serves `service` on `listener` until the future is dropped.
/// `UnimplementedService` is left out on purpose.
pub async fn serve(
    listener: tokio::net::TcpListener,
    service: VoloTestService,
) -> Result<(), volo_grpc::BoxError> {
    let codec = ServiceBuilder::new(TestServiceServer::new(service))
        .send_compressions(compressions())
        .accept_compressions(compressions())
        .build();
    let incoming = volo::net::incoming::DefaultIncoming::from(listener);
    Server::new()
        .layer_front(DeflateNameLayer)
        .layer_front(volo::layer::layer_fn(VoloEcho))
        .layer_tower(BinaryMetadataLayer)
        .add_service(codec)
        .run(incoming)
        .await
}
