//! `grpc.server.call.started`'s counts, by method number, each kept by the
//! thread that starts the calls: counting a call is a load and a store on
//! memory no other thread writes, where one count shared by every thread
//! moved between the cores on each call. A collection adds them up.

// Without a server adapter nothing counts, and every total stays 0.
#![cfg_attr(not(any(feature = "tonic", feature = "volo")), allow(dead_code))]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::codec::NUMBERS;
use super::lock;

/// One thread's counts, by method number.
type Counts = Arc<[AtomicU64]>;

/// The counts of the threads that run, and the sums of those that ended.
struct Threads {
    running: Vec<Counts>,
    ended: [u64; NUMBERS],
}

static THREADS: Mutex<Threads> = Mutex::new(Threads {
    running: Vec::new(),
    ended: [0; NUMBERS],
});

/// This thread's counts, registered while it runs; what it counted is added
/// to the ended threads' sums when it ends.
struct ThreadCounts(Counts);

impl ThreadCounts {
    fn register() -> ThreadCounts {
        let counts: Counts = (0..NUMBERS).map(|_| AtomicU64::new(0)).collect();
        lock(&THREADS).running.push(counts.clone());
        ThreadCounts(counts)
    }
}

impl Drop for ThreadCounts {
    fn drop(&mut self) {
        let mut threads = lock(&THREADS);
        threads
            .running
            .retain(|counts| !Arc::ptr_eq(counts, &self.0));
        for (sum, count) in threads.ended.iter_mut().zip(self.0.iter()) {
            *sum += count.load(Ordering::Relaxed);
        }
    }
}

thread_local! {
    static HERE: ThreadCounts = ThreadCounts::register();
}

/// Counts a call to the method numbered `number` started on this thread.
#[inline]
pub(super) fn count(number: usize) {
    let counted = HERE.try_with(|here| {
        if let Some(count) = here.0.get(number) {
            // This thread is the one writer: no locked add.
            count.store(count.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        }
    });
    if counted.is_err() {
        count_on_ended(number);
    }
}

/// Counts a call started while this thread is being torn down.
#[cold]
#[inline(never)]
fn count_on_ended(number: usize) {
    if let Some(sum) = lock(&THREADS).ended.get_mut(number) {
        *sum += 1;
    }
}

/// Calls started so far, by method number, over every thread.
pub(super) fn totals() -> Vec<u64> {
    let threads = lock(&THREADS);
    let mut totals = threads.ended.to_vec();
    for counts in &threads.running {
        for (total, count) in totals.iter_mut().zip(counts.iter()) {
            *total += count.load(Ordering::Relaxed);
        }
    }
    totals
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_of_ended_threads_are_kept() {
        // Method numbers no other test of this binary counts.
        let (here, there) = (NUMBERS - 2, NUMBERS - 3);
        let before = totals();
        count(here);
        std::thread::spawn(move || {
            count(there);
            count(there);
        })
        .join()
        .expect("counting thread");
        count(here);
        let after = totals();
        assert_eq!(after[here] - before[here], 2);
        assert_eq!(after[there] - before[there], 2);
    }
}
