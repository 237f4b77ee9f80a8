//! A response body read without [`ClientCompressionLayer`]: one that ends
//! without trailers is an error naming the layer.
//!
//! Such a body is either a trailers-only response (its `grpc-status` was in
//! the headers, which volo-grpc's transport keeps from the codec) or a
//! response with no `grpc-status` at all. Only the layer can tell them
//! apart; without it, answering `OK` could be wrong and answering "no
//! grpc-status" sends the user looking at the server, so the error says what
//! is missing on the client.
//!
//! [`ClientCompressionLayer`]: super::ClientCompressionLayer

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http_body::{Body, SizeHint};

use crate::PolledFrame;
use crate::status::Status;

/// The error of a response body that ended without trailers outside a
/// [`ClientCompressionLayer`](super::ClientCompressionLayer) call.
pub(super) const MISSING_LAYER: &str = "protocol error: response ended without a grpc-status; \
     a trailers-only response (grpc-status in the headers, as grpcio and grpc-go answer a call \
     with no messages) reaches grpc_stream_codec's volo RecvStream only through \
     grpc_stream_codec::volo::ClientCompressionLayer: add \
     `.layer_inner(ClientCompressionLayer::default())` to the client builder";

pin_project_lite::pin_project! {
    /// `inner`, failing with [`MISSING_LAYER`] if it ends before a trailers
    /// frame.
    pub(super) struct WithoutLayer<B> {
        #[pin]
        inner: B,
        saw_trailers: bool,
        ended: bool,
    }
}

impl<B> WithoutLayer<B> {
    pub(super) fn new(inner: B) -> Self {
        WithoutLayer {
            inner,
            saw_trailers: false,
            ended: false,
        }
    }
}

impl<B> Body for WithoutLayer<B>
where
    B: Body<Data = Bytes, Error = Status>,
{
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> PolledFrame<Status> {
        let this = self.project();
        if *this.ended {
            return Poll::Ready(None);
        }
        match ready!(this.inner.poll_frame(cx)) {
            Some(Ok(frame)) => {
                *this.saw_trailers |= frame.is_trailers();
                Poll::Ready(Some(Ok(frame)))
            }
            Some(Err(status)) => Poll::Ready(Some(Err(status))),
            None => {
                *this.ended = true;
                if *this.saw_trailers {
                    Poll::Ready(None)
                } else {
                    Poll::Ready(Some(Err(Status::internal(MISSING_LAYER))))
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        // Not before the missing trailers have been reported.
        self.ended
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
