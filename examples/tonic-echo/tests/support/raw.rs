//! The workspace's raw HTTP/2 gRPC peer (`test_support::raw_h2`), with the
//! Echo service's paths and replies read as `tonic::Status`.
#![allow(dead_code)]

use bytes::Bytes;
use h2::RecvStream;
use h2::client::SendRequest;
use http::{HeaderMap, Response};
use prost::Message;

#[allow(unused_imports)] // each test binary uses part of this
pub use test_support::raw_h2::{
    connect, envelope, grpc_request, header, serve_raw, serve_raw_with,
};

/// The default receive limit, as the crate's standard text states it.
pub const LIMIT: usize = 4 * 1024 * 1024;

/// The Echo methods the tests call raw.
pub const UNARY: &str = "/streamcodec.echo.v1.Echo/Unary";
pub const SERVER_STREAM: &str = "/streamcodec.echo.v1.Echo/ServerStream";
pub const CLIENT_STREAM: &str = "/streamcodec.echo.v1.Echo/ClientStream";

/// An uncompressed envelope holding `message`.
pub fn message(message: &impl Message) -> Vec<u8> {
    envelope(0, &message.encode_to_vec())
}

/// How a call ended, as the client reads it off the wire.
#[derive(Debug)]
pub struct Reply {
    /// From the trailers, or from the headers of a trailers-only response.
    pub status: tonic::Status,
    /// The response body's bytes.
    pub data: Vec<u8>,
    /// The response headers, with the trailers added.
    pub metadata: HeaderMap,
    /// Whether the request body went out (`RawResponse::body_sent`).
    pub body_sent: bool,
}

impl Reply {
    /// The status code.
    pub fn code(&self) -> tonic::Code {
        self.status.code()
    }
}

impl From<test_support::raw_h2::RawResponse> for Reply {
    fn from(raw: test_support::raw_h2::RawResponse) -> Self {
        assert_eq!(raw.http_status, http::StatusCode::OK, "{raw:?}");
        let metadata = raw.metadata();
        let status = match tonic::Status::from_header_map(&raw.headers) {
            Some(trailers_only) => trailers_only,
            None => {
                let trailers = raw
                    .trailers
                    .as_ref()
                    .expect("a gRPC response ends with trailers");
                tonic::Status::from_header_map(trailers).expect("grpc-status in the trailers")
            }
        };
        Reply {
            status,
            data: raw.body(),
            metadata,
            body_sent: raw.body_sent,
        }
    }
}

/// Sends `body` to `path` as the whole request and reads the reply.
pub async fn call(
    client: &SendRequest<Bytes>,
    path: &str,
    extra: &[(&str, &str)],
    body: Vec<u8>,
) -> Reply {
    test_support::raw_h2::send(client, path, extra, body)
        .await
        .into()
}

/// Reads a gRPC response to its end.
pub async fn read_reply(response: Response<RecvStream>) -> Reply {
    test_support::raw_h2::read_response(response).await.into()
}
