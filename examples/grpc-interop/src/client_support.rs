//! What both Rust clients share: the request stream that tells when a call
//! is on the wire, and payload checks.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;
use tokio::sync::oneshot;

/// A request stream that signals the first time the transport polls it:
/// by then the call's headers have been handed to HTTP/2, so the call has
/// begun and cancelling it is cancelling a live call.
pub struct SignalFirstPoll<S> {
    inner: S,
    polled: Option<oneshot::Sender<()>>,
}

impl<S> SignalFirstPoll<S> {
    /// `inner`, and the receiver that resolves on its first poll.
    pub fn new(inner: S) -> (Self, oneshot::Receiver<()>) {
        let (polled, first_poll) = oneshot::channel();
        let stream = SignalFirstPoll {
            inner,
            polled: Some(polled),
        };
        (stream, first_poll)
    }
}

impl<S: Stream + Unpin> Stream for SignalFirstPoll<S> {
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        if let Some(polled) = self.polled.take() {
            // The receiver may be gone already; nothing to tell then.
            let _ = polled.send(());
        }
        Pin::new(&mut self.inner).poll_next(cx)
    }
}

/// Checks that `body` is `size` zero bytes (a COMPRESSABLE payload).
pub fn check_zeros(body: Option<&[u8]>, size: usize, what: &str) -> Result<(), String> {
    let body = body.ok_or_else(|| format!("{what}: no payload"))?;
    if body.len() != size {
        return Err(format!("{what}: {} bytes, expected {size}", body.len()));
    }
    if body.iter().any(|byte| *byte != 0) {
        return Err(format!("{what}: payload is not all zeros"));
    }
    Ok(())
}

/// A payload body of `size` zeros for a request.
pub fn zeros(size: usize) -> bytes::Bytes {
    bytes::Bytes::from(vec![0u8; size])
}

/// timeout_on_sleeping_server's failure when no status came within
/// [`crate::spec::DEADLINE_GUARD`].
pub fn deadline_not_enforced() -> String {
    format!(
        "no status {:?} after a {:?} deadline: neither client nor server enforced it",
        crate::spec::DEADLINE_GUARD,
        crate::spec::SLEEPING_SERVER_DEADLINE
    )
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;

    #[tokio::test]
    async fn the_signal_fires_on_the_first_poll_only() {
        let (mut stream, mut first_poll) = SignalFirstPoll::new(futures::stream::iter([1, 2]));
        assert!(first_poll.try_recv().is_err(), "fired before any poll");
        assert_eq!(stream.next().await, Some(1));
        assert!(first_poll.try_recv().is_ok());
        assert_eq!(stream.next().await, Some(2));
        assert_eq!(stream.next().await, None);
    }

    #[test]
    fn payload_checks_size_and_content() {
        assert!(check_zeros(Some(&[0, 0]), 2, "x").is_ok());
        assert!(
            check_zeros(Some(&[0]), 2, "x")
                .unwrap_err()
                .contains("1 bytes")
        );
        assert!(
            check_zeros(Some(&[0, 1]), 2, "x")
                .unwrap_err()
                .contains("zeros")
        );
        assert!(check_zeros(None, 0, "x").is_err());
    }
}
