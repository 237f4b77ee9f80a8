//! A source that has a burst of messages ready, then nothing: one
//! long-lived stream fed bursts, as encoders see a busy peer.

use std::cell::Cell;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use futures_core::Stream;

/// Yields `item` while `left` is above zero (counting it down), then
/// `Pending` until the test refills `left`. It never wakes anyone: drive
/// it by polling.
pub struct Burst<T, E> {
    /// What every message is.
    pub item: T,
    /// Messages ready now; shared so the test can refill it.
    pub left: Rc<Cell<usize>>,
    /// The error type the consumer expects.
    pub error: std::marker::PhantomData<E>,
}

impl<T, E> Burst<T, E> {
    /// A source of `item`, `left` of them ready now.
    pub fn new(item: T, left: Rc<Cell<usize>>) -> Self {
        Burst {
            item,
            left,
            error: std::marker::PhantomData,
        }
    }
}

impl<T: Clone + Unpin, E> Stream for Burst<T, E> {
    type Item = Result<T, E>;

    fn poll_next(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match self.left.get() {
            0 => Poll::Pending,
            left => {
                self.left.set(left - 1);
                Poll::Ready(Some(Ok(self.item.clone())))
            }
        }
    }
}
