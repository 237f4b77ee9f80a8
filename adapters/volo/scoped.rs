//! A value installed in a thread-local only while a layer polls the service
//! it wraps.
//!
//! volo-build's generated code creates every `RecvStream` and `encode` body
//! itself, with nothing but the body and the compression, so a layer cannot
//! hand them a setting. It can make the setting visible while it polls its
//! inner service, which is when the generated code runs: on a server
//! (`layer_front`) that is where request streams are made and responses
//! encoded, on a client (`layer_inner`) where the request is encoded and
//! the response stream made.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;

use crate::call::{Installed, Slot};


pin_project! {
    /// Polls `inner` with `value` installed in `slot`.
    pub(super) struct Scoped<T: 'static, F> {
        slot: &'static Slot<T>,
        value: Option<T>,
        #[pin]
        inner: F,
    }
}

impl<T: 'static, F> Scoped<T, F> {
    /// `inner`, polled with `value` in `slot`.
    pub(super) fn new(slot: &'static Slot<T>, value: T, inner: F) -> Self {
        Scoped {
            slot,
            value: Some(value),
            inner,
        }
    }
}

impl<T: 'static, F: Future> Future for Scoped<T, F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let _installed = Installed::swap(this.slot, this.value);
        this.inner.poll(cx)
    }
}

/// Runs `f` with `value` installed in `slot`.
pub(super) fn with<T: 'static, R>(slot: &'static Slot<T>, value: T, f: impl FnOnce() -> R) -> R {
    let mut value = Some(value);
    let _installed = Installed::swap(slot, &mut value);
    f()
}

/// The value the enclosing scope installed in `slot`, if any.
pub(super) fn current<T: Clone + 'static>(slot: &'static Slot<T>) -> Option<T> {
    slot.with(|cell| cell.borrow().clone())
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;

    thread_local! {
        static SLOT: RefCell<Option<u32>> = const { RefCell::new(None) };
    }

    #[test]
    fn the_value_is_seen_only_while_polling_and_nests() {
        let seen = futures_util::FutureExt::now_or_never(Scoped::new(&SLOT, 1, async {
            let before = current(&SLOT);
            let nested = Scoped::new(&SLOT, 2, async { current(&SLOT) }).await;
            (before, nested, current(&SLOT))
        }));
        assert_eq!(seen, Some((Some(1), Some(2), Some(1))));
        assert_eq!(current(&SLOT), None);
    }
}
