//! A counting global allocator for memory and allocation tests.
//!
//! Each test binary that uses it declares
//! `#[global_allocator] static ALLOC: CountingAlloc = CountingAlloc;`.
//! Counts are kept per thread (so parallel tests do not disturb each other)
//! and, for live bytes, also process-wide. A `realloc` counts as one
//! allocation of its new size replacing the old block (the measure the
//! project's memory targets are stated in): live bytes move from the old
//! size to the new one.
#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The counting allocator; forwards to the system allocator.
pub struct CountingAlloc;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
    static ALLOCATED_BYTES: Cell<usize> = const { Cell::new(0) };
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

static GLOBAL_LIVE: AtomicUsize = AtomicUsize::new(0);
static GLOBAL_PEAK: AtomicUsize = AtomicUsize::new(0);

fn on_alloc(size: usize) {
    // `try_with`: thread-locals may be gone while a thread shuts down.
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
    let _ = ALLOCATED_BYTES.try_with(|c| c.set(c.get() + size));
    let _ = LIVE.try_with(|live| {
        live.set(live.get() + size as isize);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(live.get())));
    });
    let now = GLOBAL_LIVE.fetch_add(size, Ordering::Relaxed) + size;
    GLOBAL_PEAK.fetch_max(now, Ordering::Relaxed);
}

fn on_free(size: usize) {
    let _ = LIVE.try_with(|live| live.set(live.get() - size as isize));
    GLOBAL_LIVE.fetch_sub(size, Ordering::Relaxed);
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
        on_free(layout.size());
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        on_free(layout.size());
        on_alloc(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// What the current thread allocated between two points.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Number of allocations (a `realloc` counts as one).
    pub allocations: usize,
    /// Total bytes requested by those allocations.
    pub allocated_bytes: usize,
    /// Live bytes at the end minus live bytes at the start.
    pub live_delta: isize,
    /// Highest live bytes reached, relative to the start.
    pub peak: isize,
}

/// Runs `f` and reports what the current thread allocated while it ran.
pub fn measure<R>(f: impl FnOnce() -> R) -> (R, Usage) {
    let allocations = ALLOCATIONS.with(Cell::get);
    let bytes = ALLOCATED_BYTES.with(Cell::get);
    let live = LIVE.with(Cell::get);
    let old_peak = PEAK.with(|peak| peak.replace(live));
    let result = f();
    let usage = Usage {
        allocations: ALLOCATIONS.with(Cell::get) - allocations,
        allocated_bytes: ALLOCATED_BYTES.with(Cell::get) - bytes,
        live_delta: LIVE.with(Cell::get) - live,
        peak: PEAK.with(Cell::get) - live,
    };
    PEAK.with(|peak| peak.set(old_peak.max(peak.get())));
    (result, usage)
}

/// Live bytes across the whole process.
pub fn global_live() -> usize {
    GLOBAL_LIVE.load(Ordering::Relaxed)
}

/// Resets the process-wide peak to the current live bytes and returns it.
pub fn reset_global_peak() -> usize {
    let live = global_live();
    GLOBAL_PEAK.store(live, Ordering::Relaxed);
    live
}

/// The process-wide peak of live bytes since the last reset.
pub fn global_peak() -> usize {
    GLOBAL_PEAK.load(Ordering::Relaxed)
}
