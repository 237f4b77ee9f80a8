//! The message bytes a body carries, read off its envelope prefixes as the
//! frames pass: what A66 calls the compressed message size, counted on the
//! wire bytes themselves, whichever side made them.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use bytes::Buf;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;

use crate::call::MessageBytes;

pin_project! {
    /// A body whose message bytes are added to a call's count as its
    /// frames pass: a server's request, a client's request.
    pub struct Counted<B> {
        #[pin]
        inner: B,
        count: Option<(MessageBytes, Arc<AtomicU64>)>,
    }
}

impl<B> Counted<B> {
    pub(crate) fn new(inner: B, total: Option<Arc<AtomicU64>>) -> Self {
        Counted {
            inner,
            count: total.map(|total| (MessageBytes::default(), total)),
        }
    }
}

impl<B> Body for Counted<B>
where
    B: Body,
    B::Data: Buf,
{
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let this = self.project();
        let polled = this.inner.poll_frame(cx);
        if let (Poll::Ready(Some(Ok(frame))), Some((bytes, total))) = (&polled, this.count)
            && let Some(data) = frame.data_ref()
        {
            let before = bytes.total();
            bytes.feed_buf(data);
            total.fetch_add(bytes.total() - before, Ordering::Relaxed);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
