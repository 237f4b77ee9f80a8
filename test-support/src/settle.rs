//! Waiting for counters to come to rest after the load that moved them, so
//! tests read a steady state instead of a moment.

use std::time::{Duration, Instant};

use crate::alloc::live_bytes;

/// Polls `sample` every 50 ms until it has not changed for `quiet` (or
/// `limit` has passed) and returns the last value.
pub async fn settle<T: PartialEq + Copy>(
    quiet: Duration,
    limit: Duration,
    mut sample: impl FnMut() -> T,
) -> T {
    let start = Instant::now();
    let mut last = sample();
    let mut since = Instant::now();
    while start.elapsed() < limit {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let now = sample();
        if now != last {
            last = now;
            since = Instant::now();
        } else if since.elapsed() >= quiet {
            break;
        }
    }
    last
}

/// Waits until the process's live heap bytes ([`live_bytes`]) move by
/// less than `tolerance` over ten polls 50 ms apart (at most ~20 s), and
/// returns them: background tasks finishing, connections closing.
pub async fn settle_live_bytes(tolerance: usize) -> isize {
    let mut last = live_bytes();
    let mut stable = 0;
    for _ in 0..400 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let now = live_bytes();
        if now.abs_diff(last) < tolerance {
            stable += 1;
            if stable == 10 {
                return now;
            }
        } else {
            stable = 0;
        }
        last = now;
    }
    last
}
