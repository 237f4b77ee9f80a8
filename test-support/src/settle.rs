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

/// What a test's runtime and process hold at a moment: the runtime's live
/// tasks and the process's live heap bytes ([`live_bytes`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footprint {
    /// Tasks spawned on the current runtime and not yet finished.
    pub tasks: usize,
    /// Live heap bytes of the whole process.
    pub live_bytes: isize,
}

impl Footprint {
    /// The footprint now. Call it inside a tokio runtime.
    pub fn now() -> Footprint {
        Footprint {
            tasks: tokio::runtime::Handle::current()
                .metrics()
                .num_alive_tasks(),
            live_bytes: live_bytes(),
        }
    }

    /// Waits until the footprint has not changed for 300 ms (at most 10 s)
    /// and returns it: tasks finishing, streams and their buffers dropped.
    pub async fn settled() -> Footprint {
        settle(
            Duration::from_millis(300),
            Duration::from_secs(10),
            Footprint::now,
        )
        .await
    }

    /// Panics naming what is left when `self` (a settled footprint after
    /// some work) holds a task more than `before`, or more than `slack`
    /// heap bytes more.
    pub fn assert_back_to(self, before: Footprint, slack: usize) {
        assert!(
            self.tasks <= before.tasks,
            "{} task(s) left behind: {before:?} then {self:?}",
            self.tasks - before.tasks
        );
        assert!(
            self.live_bytes <= before.live_bytes + slack as isize,
            "{} heap bytes left behind: {before:?} then {self:?}",
            self.live_bytes - before.live_bytes
        );
    }
}
