//! An HTTP body whose data chunks are `Bytes`, whatever they were.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;

pin_project! {
    /// Hands the core decoder `Bytes` chunks. tonic's servers and clients
    /// name bodies with any `Buf` data; for `Bytes` (what hyper and tonic
    /// produce) the conversion is a move, for anything else one copy.
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

impl<B: Body> Body for BytesBody<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        self.project().inner.poll_frame(cx).map(|frame| {
            frame.map(|frame| {
                frame.map(|frame| frame.map_data(|mut data| data.copy_to_bytes(data.remaining())))
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
