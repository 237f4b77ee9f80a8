//! Process-wide limits for the code volo-build generates, which constructs
//! every [`RecvStream`](super::RecvStream) and [`encode`](super::encode)
//! body itself and so cannot be handed a per-call configuration.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::envelope::{DEFAULT_MAX_RECEIVE_SIZE, Limits};

static MAX_RECEIVE: AtomicUsize = AtomicUsize::new(DEFAULT_MAX_RECEIVE_SIZE);
static MAX_SEND: AtomicUsize = AtomicUsize::new(usize::MAX);

/// Sets the limits used by every `RecvStream` and `encode` body created
/// from now on (default: receive 4 MiB, send unlimited).
///
/// A single stream can still override its receive limit with
/// [`RecvStream::with_limits`](super::RecvStream::with_limits) before
/// reading from it.
///
/// ```
/// use grpc_stream_codec::Limits;
/// use grpc_stream_codec::volo::{default_limits, set_default_limits};
///
/// set_default_limits(Limits::new().with_max_receive(16 << 20));
/// assert_eq!(default_limits().max_receive(), 16 << 20);
/// # set_default_limits(Limits::default());
/// ```
pub fn set_default_limits(limits: Limits) {
    MAX_RECEIVE.store(limits.max_receive(), Ordering::Relaxed);
    MAX_SEND.store(limits.max_send(), Ordering::Relaxed);
}

/// The limits new streams get; see `set_default_limits`.
pub fn default_limits() -> Limits {
    Limits::new()
        .with_max_receive(MAX_RECEIVE.load(Ordering::Relaxed))
        .with_max_send(MAX_SEND.load(Ordering::Relaxed))
}
