//! An HTTP body whose data chunks are `Bytes` and whose errors are already
//! gRPC statuses, whatever they were.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use tonic::codegen::StdError;

use crate::Status;

pin_project! {
    /// Hands the core decoder `Bytes` chunks and [`Status`] errors. tonic's
    /// servers and clients name bodies with any `Buf` data; for `Bytes` (what
    /// hyper and tonic produce) the conversion is a move, for anything else
    /// one copy.
    pub(crate) struct BytesBody<B> {
        #[pin]
        inner: B,
    }
}

impl<B> BytesBody<B> {
    pub(crate) fn new(inner: B) -> Self {
        BytesBody { inner }
    }
}

impl<B> Body for BytesBody<B>
where
    B: Body,
    B::Error: Into<StdError>,
{
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        self.project().inner.poll_frame(cx).map(|frame| {
            frame.map(|frame| {
                frame
                    .map(|frame| frame.map_data(|mut data| data.copy_to_bytes(data.remaining())))
                    .map_err(status_from_transport)
            })
        })
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The code tonic gives a transport error: an HTTP/2 reset's reason maps as
/// the gRPC spec says (`CANCEL` is `cancelled`, `REFUSED_STREAM` is
/// `unavailable`, ...), hyper's timeouts and cancellations too, so handlers
/// and callers see the same code on either framing.
fn status_from_transport(error: impl Into<StdError>) -> Status {
    tonic::Status::from_error(error.into()).into()
}
