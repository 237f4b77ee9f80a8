//! [`EncodeConfig`]: batching threshold, compression and send limit.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::compression::Compression;
use crate::envelope::Limits;

/// Default soft batch threshold: 32 KiB, the size tonic batches ready
/// messages up to.
pub const DEFAULT_BATCH_THRESHOLD: usize = 32 * 1024;

static BATCH_THRESHOLD: AtomicUsize = AtomicUsize::new(DEFAULT_BATCH_THRESHOLD);

/// Sets the soft batch threshold of every stream the adapters encode from
/// now on (default [`DEFAULT_BATCH_THRESHOLD`]): responses of servers and
/// requests of clients, on tonic and volo-grpc alike.
///
/// Generated code builds its encoders itself for every call, so this
/// process-wide default is how a service or client configures them. Ready
/// messages are gathered into one batch until it holds at least this many
/// bytes; 0 sends every message as a batch of its own, as an unbatched
/// encoder would. An [`EncodeConfig`] built by hand keeps its own threshold.
///
/// ```
/// use grpc_stream_codec::encode::{default_batch_threshold, set_default_batch_threshold};
///
/// set_default_batch_threshold(0);
/// assert_eq!(default_batch_threshold(), 0);
/// # set_default_batch_threshold(grpc_stream_codec::encode::DEFAULT_BATCH_THRESHOLD);
/// ```
pub fn set_default_batch_threshold(threshold: usize) {
    BATCH_THRESHOLD.store(threshold, Ordering::Relaxed);
}

/// The batch threshold the adapters' encoders get now; see
/// [`set_default_batch_threshold`].
pub fn default_batch_threshold() -> usize {
    BATCH_THRESHOLD.load(Ordering::Relaxed)
}

/// The HTTP/2 DATA frame size batches are cut to fill: the protocol's
/// default `SETTINGS_MAX_FRAME_SIZE`, which most peers keep.
pub const FRAME_SIZE: usize = 16 * 1024;

/// How an [`EncodeStream`](super::EncodeStream) frames messages.
///
/// ```
/// use grpc_stream_codec::encode::EncodeConfig;
/// use grpc_stream_codec::{compression::{Compression, CompressionEncoding}, envelope::Limits};
///
/// let config = EncodeConfig::new()
///     .with_batch_threshold(64 * 1024)
///     .with_compression(Some(Compression::new(CompressionEncoding::Zstd)))
///     .with_limits(Limits::new().with_max_send(1 << 20));
/// assert_eq!(config.max_send(), 1 << 20);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EncodeConfig {
    batch_threshold: usize,
    compression: Option<Compression>,
    max_send: usize,
}

impl Default for EncodeConfig {
    fn default() -> Self {
        Self {
            batch_threshold: DEFAULT_BATCH_THRESHOLD,
            compression: None,
            max_send: usize::MAX,
        }
    }
}

impl EncodeConfig {
    /// Threshold 32 KiB, no compression, no send limit.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the soft batch threshold in bytes.
    ///
    /// While the source has messages ready they are appended to one batch
    /// until it holds at least this many bytes; a message is never split to
    /// meet it. `0` yields one message per batch.
    ///
    /// With a threshold of at least [`FRAME_SIZE`] (16 KiB; the default is
    /// 32 KiB), a full batch's last node (its copied-in bytes) is cut on a
    /// 16 KiB boundary and the bytes after it, the start of the next frame,
    /// open the next batch, so that HTTP/2, which sends each body chunk as
    /// its own DATA frames, fills every frame while messages are ready. A batch may then end inside a
    /// message; the next one continues it. When the source has nothing ready
    /// the carried bytes go out at once, as any batch does.
    pub fn with_batch_threshold(mut self, threshold: usize) -> Self {
        self.batch_threshold = threshold;
        self
    }

    /// Sets the per-message compression. `None` and `Some(Identity)` both
    /// send the raw payload with flag 0.
    pub fn with_compression(mut self, compression: Option<Compression>) -> Self {
        self.compression = compression;
        self
    }

    /// Sets the largest wire length (after compression) of one message.
    pub fn with_max_send(mut self, limit: usize) -> Self {
        self.max_send = limit;
        self
    }

    /// Takes the send limit from `limits`.
    pub fn with_limits(self, limits: Limits) -> Self {
        self.with_max_send(limits.max_send())
    }

    /// The soft batch threshold in bytes.
    pub fn batch_threshold(&self) -> usize {
        self.batch_threshold
    }

    /// The configured compression.
    pub fn compression(&self) -> Option<Compression> {
        self.compression
    }

    /// The send limit in bytes (`usize::MAX` when unlimited).
    pub fn max_send(&self) -> usize {
        self.max_send
    }

    /// The compression actually applied: `Identity` is no compression.
    #[inline]
    pub(crate) fn effective_compression(&self) -> Option<Compression> {
        self.compression.filter(|c| !c.encoding.is_identity())
    }
}
