//! tonic's bodies as the core decoder reads them: `Bytes` chunks and
//! errors that are already gRPC statuses.

use bytes::{Buf, Bytes};
use http_body::Body;
use http_body_util::BodyExt;
use tonic::codegen::StdError;

use crate::status::Status;

/// `body` with `Bytes` data and [`Status`] errors. tonic's servers and
/// clients name bodies with any `Buf` data; for `Bytes` (what hyper and
/// tonic produce) the conversion is a move, for anything else one copy.
pub(crate) fn bytes_body<B>(body: B) -> impl Body<Data = Bytes, Error = Status>
where
    B: Body,
    B::Error: Into<StdError>,
{
    body.map_frame(|frame| frame.map_data(|mut data| data.copy_to_bytes(data.remaining())))
        .map_err(status_from_transport)
}

/// The code tonic gives a transport error: an HTTP/2 reset's reason maps as
/// the gRPC spec says (`CANCEL` is `cancelled`, `REFUSED_STREAM` is
/// `unavailable`, ...), hyper's timeouts and cancellations too, so handlers
/// and callers see the same code on either framing.
///
/// An error that already is this crate's status (a body read ahead of its
/// handler passes the transport's mapped errors on, and ends a call at its
/// deadline with one) stays as it is.
fn status_from_transport(error: impl Into<StdError>) -> Status {
    match error.into().downcast::<Status>() {
        Ok(status) => *status,
        Err(error) => tonic::Status::from_error(error).into(),
    }
}
