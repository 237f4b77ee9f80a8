//! One client call's rules, written once for both adapters: the deadline it
//! sends bounds its request body, its wait for the response headers and its
//! response body; a trailers-only error answers the call; binary response
//! metadata must be base64.

use std::future::Future;

use http::header::{CONTENT_TYPE, TE};
use http::{HeaderMap, HeaderValue};

use tokio::time::Instant;

use super::deadline::{ClientDeadline, deadline_exceeded, passed, timeout_from_headers};
use crate::binary_metadata::{first_malformed_binary, malformed_binary_message};
use crate::compression::{GRPC_ACCEPT_ENCODING, GRPC_ENCODING};
use crate::status::{Code, Status};

/// Request headers that belong to the framing, never to the caller's
/// metadata (the ones tonic drops too).
const RESERVED_REQUEST_HEADERS: [&str; 5] = [
    "te",
    "content-type",
    "grpc-message",
    "grpc-message-type",
    "grpc-status",
];

/// The headers of a call's request: the caller's `metadata` without the
/// names that belong to the framing, then the framing's own, with the
/// encoding the request is compressed with and the list of those its
/// response may be (each as the framework names them).
pub fn request_headers(
    mut metadata: HeaderMap,
    encoding: Option<HeaderValue>,
    accept: Option<HeaderValue>,
) -> HeaderMap {
    for name in RESERVED_REQUEST_HEADERS {
        metadata.remove(name);
    }
    metadata.insert(TE, HeaderValue::from_static("trailers"));
    metadata.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    if let Some(encoding) = encoding {
        metadata.insert(GRPC_ENCODING, encoding);
    }
    if let Some(accept) = accept {
        metadata.insert(GRPC_ACCEPT_ENCODING, accept);
    }
    metadata
}

/// A client call between sending its request and reading its response.
///
/// The frameworks bound a call by its `grpc-timeout` only until the
/// response headers; this bounds both bodies too, each with a timer of its
/// own (nothing else polls the request body's).
pub struct ClientCall {
    deadline: Option<Instant>,
}

impl ClientCall {
    /// Starts the call whose request carries `headers`, returning its
    /// request body, which fails at the deadline they carry.
    pub fn start<B>(headers: &HeaderMap, request_body: B) -> (ClientDeadline<B>, ClientCall) {
        // One instant for both timers: see `timer_at`.
        let deadline = timeout_from_headers(headers).map(|timeout| Instant::now() + timeout);
        (
            ClientDeadline::at(request_body, deadline),
            ClientCall { deadline },
        )
    }

    /// Awaits the response headers. An error of the transport (one
    /// `is_transport` says carries no status of the framework's own) that
    /// arrives once the deadline has passed is `DEADLINE_EXCEEDED`: it is
    /// the reset the request body made when it reached the same deadline,
    /// not what the caller should see. Any other error is returned as it is.
    pub async fn response<T, E>(
        &mut self,
        response: impl Future<Output = Result<T, E>>,
        is_transport: impl FnOnce(&E) -> bool,
    ) -> Result<T, AtDeadline<E>> {
        match response.await {
            Ok(response) => Ok(response),
            Err(error) if is_transport(&error) && passed(self.deadline) => {
                Err(AtDeadline::Exceeded(deadline_exceeded()))
            }
            Err(error) => Err(AtDeadline::Error(error)),
        }
    }

    /// Checks the response headers: a trailers-only error status answers the
    /// call, and a binary header that is not base64 fails it with
    /// `internal`, as grpc-go does.
    pub fn check_response_headers(headers: &HeaderMap) -> Result<(), Status> {
        if let Some(status) = Status::from_header_map(headers)
            && status.code() != Code::Ok
        {
            return Err(status);
        }
        match first_malformed_binary(headers) {
            Some(name) => Err(Status::internal(malformed_binary_message(name))),
            None => Ok(()),
        }
    }

    /// The response body, failed at the deadline.
    pub fn response_body<B>(self, body: B) -> ClientDeadline<B> {
        ClientDeadline::at(body, self.deadline)
    }
}

/// Why a call got no response headers.
#[derive(Debug)]
pub enum AtDeadline<E> {
    /// The deadline passed: `DEADLINE_EXCEEDED`.
    Exceeded(Status),
    /// The error as it came.
    Error(E),
}
