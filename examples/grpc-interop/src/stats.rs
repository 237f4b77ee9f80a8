//! Counters a server's streaming handlers keep, so a test can see that
//! every stream a client abandoned has ended on the server. Atomics only:
//! counting allocates nothing a memory check would see.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Request streams opened and closed by the streaming handlers, and the
/// request messages they read.
#[derive(Debug, Default)]
pub struct StreamStats {
    opened: AtomicUsize,
    closed: AtomicUsize,
    messages: AtomicUsize,
}

/// Held by a streaming handler (or its response stream) for as long as the
/// call is served; dropping it, by an end or by cancellation, closes it.
#[derive(Debug)]
pub struct OpenStream(Arc<StreamStats>);

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.0.closed.fetch_add(1, Ordering::SeqCst);
    }
}

impl StreamStats {
    /// Counts a stream as open until the returned guard is dropped.
    pub fn open(self: &Arc<Self>) -> OpenStream {
        self.opened.fetch_add(1, Ordering::SeqCst);
        OpenStream(self.clone())
    }

    /// Counts one request message read.
    pub fn received(&self) {
        self.messages.fetch_add(1, Ordering::SeqCst);
    }

    /// Streams opened so far.
    pub fn opened(&self) -> usize {
        self.opened.load(Ordering::SeqCst)
    }

    /// Streams closed so far.
    pub fn closed(&self) -> usize {
        self.closed.load(Ordering::SeqCst)
    }

    /// Request messages read so far.
    pub fn messages(&self) -> usize {
        self.messages.load(Ordering::SeqCst)
    }
}

/// A response stream that holds its call's [`OpenStream`] for as long as
/// it lives, so dropping the stream (the call ended or was cancelled)
/// closes it.
pub struct Held<S> {
    inner: S,
    _open: OpenStream,
}

impl<S> Held<S> {
    /// `inner`, holding `open`.
    pub fn new(inner: S, open: OpenStream) -> Self {
        Held { inner, _open: open }
    }
}

impl<S: futures::Stream + Unpin> futures::Stream for Held<S> {
    type Item = S::Item;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<S::Item>> {
        std::pin::Pin::new(&mut self.inner).poll_next(cx)
    }
}
