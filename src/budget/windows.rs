//! [`Http2Windows`]: the HTTP/2 flow-control settings a receive budget needs.

/// HTTP/2 flow-control settings that suit a receive budget; see
/// [`SharedBudget::http2_windows`](super::SharedBudget::http2_windows) for the rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Http2Windows {
    /// The initial stream window (`SETTINGS_INITIAL_WINDOW_SIZE`): tonic's
    /// `initial_stream_window_size`, volo-grpc's
    /// `http2_init_stream_window_size`.
    pub stream: u32,
    /// The connection window: tonic's `initial_connection_window_size`,
    /// volo-grpc's `http2_init_connection_window_size`.
    pub connection: u32,
    /// `SETTINGS_MAX_CONCURRENT_STREAMS`, the streams per connection the
    /// windows are sized for: tonic's `max_concurrent_streams`, volo-grpc's
    /// `http2_max_concurrent_streams`.
    pub max_concurrent_streams: u32,
}

impl Http2Windows {
    /// HTTP/2's default stream window, rounded: the largest stream window
    /// the rule gives.
    const STREAM_MAX: u64 = 64 * 1024;
    /// One default HTTP/2 frame: the smallest stream window the rule gives
    /// for a small budget.
    const STREAM_MIN: u64 = 16 * 1024;
    /// The protocol's largest window.
    const WINDOW_MAX: u64 = (1 << 31) - 1;
    /// The most streams per connection the rule is computed for.
    const STREAMS_MAX: u32 = 1 << 16;

    pub(crate) fn for_capacity(capacity: usize, streams_per_connection: u32) -> Self {
        let streams = streams_per_connection.clamp(1, Self::STREAMS_MAX);
        let windows = u64::from(streams) + 1;
        let capacity = u64::try_from(capacity).unwrap_or(u64::MAX);
        let stream = (capacity / windows)
            .clamp(Self::STREAM_MIN, Self::STREAM_MAX)
            .min(Self::WINDOW_MAX / windows);
        // Both fit: stream ≤ 64 KiB, connection ≤ 2^31 − 1.
        Http2Windows {
            stream: stream as u32,
            connection: (stream * windows) as u32,
            max_concurrent_streams: streams,
        }
    }
}
