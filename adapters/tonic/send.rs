//! Adapting tonic's message streams to the core encoder's source shape.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use futures_core::Stream;
use pin_project_lite::pin_project;

use crate::status::Status;

pin_project! {
    /// A handler's response stream, its errors converted to this crate's
    /// [`Status`] (metadata moved, not copied).
    pub(crate) struct StatusErrors<S> {
        #[pin]
        inner: S,
    }
}

impl<S> StatusErrors<S> {
    pub(crate) fn new(inner: S) -> Self {
        StatusErrors { inner }
    }
}

impl<S, T> Stream for StatusErrors<S>
where
    S: Stream<Item = Result<T, tonic::Status>>,
{
    type Item = Result<T, Status>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let item = ready!(self.project().inner.poll_next(cx));
        Poll::Ready(item.map(|result| result.map_err(Status::from)))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

pin_project! {
    /// A stream of plain items as encoder input: each item wrapped in `Ok`
    /// (a client's request stream cannot fail).
    pub(crate) struct OkItems<S> {
        #[pin]
        inner: S,
    }
}

impl<S> OkItems<S> {
    pub(crate) fn new(inner: S) -> Self {
        OkItems { inner }
    }
}

impl<S: Stream> Stream for OkItems<S> {
    type Item = Result<S::Item, Status>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let item = ready!(self.project().inner.poll_next(cx));
        Poll::Ready(item.map(Ok))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}
