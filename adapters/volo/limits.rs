//! Process-wide limits and batch threshold for the code volo-build
//! generates, which constructs every [`RecvStream`](super::RecvStream) and
//! [`encode`](super::encode) body itself and so cannot be handed a per-call
//! configuration.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::encode::DEFAULT_BATCH_THRESHOLD;
use crate::envelope::{DEFAULT_MAX_RECEIVE_SIZE, Limits};

static MAX_RECEIVE: AtomicUsize = AtomicUsize::new(DEFAULT_MAX_RECEIVE_SIZE);
static MAX_SEND: AtomicUsize = AtomicUsize::new(usize::MAX);
static BATCH_THRESHOLD: AtomicUsize = AtomicUsize::new(DEFAULT_BATCH_THRESHOLD);

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

/// Sets the soft batch threshold of every [`encode`](super::encode) body
/// created from now on (default 32 KiB,
/// [`DEFAULT_BATCH_THRESHOLD`](crate::encode::DEFAULT_BATCH_THRESHOLD)).
///
/// Ready messages are gathered into one batch until it holds at least this
/// many bytes; 0 sends every message as a batch of its own, as an unbatched
/// encoder would. A body built with
/// [`encode_with_config`](super::encode_with_config) uses its own
/// configuration instead.
///
/// ```
/// use grpc_stream_codec::volo::{default_batch_threshold, set_default_batch_threshold};
///
/// set_default_batch_threshold(0);
/// assert_eq!(default_batch_threshold(), 0);
/// # set_default_batch_threshold(grpc_stream_codec::encode::DEFAULT_BATCH_THRESHOLD);
/// ```
pub fn set_default_batch_threshold(threshold: usize) {
    BATCH_THRESHOLD.store(threshold, Ordering::Relaxed);
}

/// The batch threshold new `encode` bodies get; see
/// `set_default_batch_threshold`.
pub fn default_batch_threshold() -> usize {
    BATCH_THRESHOLD.load(Ordering::Relaxed)
}
