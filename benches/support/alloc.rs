//! A global allocator that counts allocations only while asked to.
//!
//! Benches time their arms with this allocator installed, so the counting
//! must cost next to nothing when it is off: one relaxed load per call.
//! That keeps arms that allocate more from being timed with a counting tax
//! (the test suite's allocator counts always, which is right for tests and
//! wrong for timings). A `realloc` counts as one allocation of its new size,
//! as in the tests.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Forwards to the system allocator; counts while [`count`] runs.
pub struct CountingAlloc;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);
static BYTES: AtomicUsize = AtomicUsize::new(0);

#[inline]
fn on_alloc(size: usize) {
    if COUNTING.load(Ordering::Relaxed) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(size, Ordering::Relaxed);
    }
}

unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        on_alloc(layout.size());
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        on_alloc(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        on_alloc(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// What was allocated while [`count`] ran.
#[derive(Clone, Copy, Debug, Default)]
pub struct Usage {
    /// Allocations, a `realloc` counting as one.
    pub allocations: usize,
    /// Bytes those allocations asked for.
    pub bytes: usize,
}

/// Runs `f` and counts the process's allocations meanwhile. The benches are
/// single-threaded, so these are `f`'s.
pub fn count<R>(f: impl FnOnce() -> R) -> (R, Usage) {
    let before = (
        ALLOCATIONS.load(Ordering::Relaxed),
        BYTES.load(Ordering::Relaxed),
    );
    COUNTING.store(true, Ordering::SeqCst);
    let result = f();
    COUNTING.store(false, Ordering::SeqCst);
    let usage = Usage {
        allocations: ALLOCATIONS.load(Ordering::Relaxed) - before.0,
        bytes: BYTES.load(Ordering::Relaxed) - before.1,
    };
    (result, usage)
}
