//! Finished server calls, kept on the thread that finished them and handed
//! to the meter's bound histograms in batches.
//!
//! Recording one call on its three histograms walks the SDK's bound
//! handles, locks each histogram and searches its buckets: code and data
//! that are cold again by the next call on a busy server, where they cost
//! more cache misses than the call's own record. A thread's batch puts
//! them back to back, so they are loaded once per batch. Nothing is lost
//! or late: every collection runs [`flush_all`] first (from a callback of
//! an instrument on the same meter, which the SDK runs before it reads
//! any histogram), and a thread's batch is flushed when the thread ends.

use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use super::instruments::Instruments;
use super::lock;
use crate::status::Code;

/// Most finished calls a thread keeps before it records them.
const BATCH: usize = 32;

/// One finished server call, as its histograms will record it.
pub(super) struct Finished {
    /// The method name's number (`codec::intern_numbered`).
    pub(super) number: usize,
    /// The status it ended with.
    pub(super) code: Code,
    /// When its request headers were read.
    pub(super) started: Instant,
    /// When it ended, with its status.
    // The two clock readings, not their difference: the subtraction and
    // the conversion to seconds wait for the batch, where they are warm.
    pub(super) ended: Instant,
    /// Response message bytes, as on the wire.
    pub(super) sent: u64,
    /// Request message bytes, as on the wire.
    pub(super) received: u64,
}

/// A thread's finished calls, all for the instruments it holds.
struct Batch {
    instruments: Option<Arc<Instruments>>,
    finished: Vec<Finished>,
}

impl Batch {
    #[inline(never)]
    fn flush(&mut self) {
        let Some(instruments) = &self.instruments else {
            return;
        };
        for call in self.finished.drain(..) {
            if let Some(bound) = instruments.server_bound(call.number, call.code) {
                bound.duration.record(
                    call.ended
                        .saturating_duration_since(call.started)
                        .as_secs_f64(),
                );
                bound.sent.record(call.sent);
                bound.rcvd.record(call.received);
            }
        }
    }

    /// Moves the batch on to `instruments`, recording the calls it kept for
    /// instruments an earlier install made on those first.
    #[cold]
    #[inline(never)]
    fn rebind(&mut self, instruments: &Arc<Instruments>) {
        self.flush();
        self.instruments = Some(instruments.clone());
    }
}

/// A thread's batch, reachable from the collecting thread through
/// [`BATCHES`].
struct ThreadBatch(Arc<Mutex<Batch>>);

impl Drop for ThreadBatch {
    fn drop(&mut self) {
        lock(&self.0).flush();
    }
}

thread_local! {
    static THREAD_BATCH: ThreadBatch = ThreadBatch::register();
}

/// Every thread's batch; a thread that has ended leaves a dead entry,
/// removed when the next thread registers.
static BATCHES: Mutex<Vec<Weak<Mutex<Batch>>>> = Mutex::new(Vec::new());

impl ThreadBatch {
    fn register() -> ThreadBatch {
        let batch = Arc::new(Mutex::new(Batch {
            instruments: None,
            finished: Vec::with_capacity(BATCH),
        }));
        let mut all = lock(&BATCHES);
        all.retain(|kept| kept.strong_count() > 0);
        all.push(Arc::downgrade(&batch));
        ThreadBatch(batch)
    }
}

/// Keeps `call`, which ended with `instruments` installed, to be recorded
/// with this thread's next batch; recorded at once while the thread is
/// being torn down.
// The common case, a call pushed on a batch for the same instruments, is
// kept to a few straight lines: every other path is out of line.
pub(super) fn record(instruments: &Arc<Instruments>, call: Finished) {
    let mut call = Some(call);
    let _ = THREAD_BATCH.try_with(|batch| {
        let mut batch = lock(&batch.0);
        let same = batch
            .instruments
            .as_ref()
            .is_some_and(|held| Arc::ptr_eq(held, instruments));
        if !same {
            batch.rebind(instruments);
        }
        batch.finished.extend(call.take());
        if batch.finished.len() >= BATCH {
            batch.flush();
        }
    });
    if let Some(call) = call {
        record_alone(instruments, call);
    }
}

/// Records `call` on its own, from a thread whose batch is gone.
#[cold]
#[inline(never)]
fn record_alone(instruments: &Arc<Instruments>, call: Finished) {
    Batch {
        instruments: Some(instruments.clone()),
        finished: vec![call],
    }
    .flush();
}

/// Records every thread's kept calls now.
pub(super) fn flush_all() {
    let all: Vec<Arc<Mutex<Batch>>> = lock(&BATCHES).iter().filter_map(Weak::upgrade).collect();
    for batch in all {
        lock(&batch).flush();
    }
}
