//! One counting global allocator for tests, benches and example servers.
//!
//! A binary installs it once:
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOC: test_support::alloc::CountingAlloc = test_support::alloc::CountingAlloc::ALWAYS;
//! ```
//!
//! - [`CountingAlloc::ALWAYS`] (tests) counts every allocation, per thread
//!   (so parallel tests do not disturb each other, read with [`measure`])
//!   and process-wide ([`global_live`], [`global_peak`]).
//! - [`CountingAlloc::SWITCHED`] (benches, example servers) counts only
//!   after [`enable`] and while [`counting`] runs, so timed code pays one
//!   relaxed load per allocation and nothing more.
//!
//! A `realloc` counts as one allocation of its new size replacing the old
//! block (the measure the project's memory targets are stated in): live
//! bytes move from the old size to the new one.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering};

/// Forwards to the system allocator, counting as its mode says.
pub struct CountingAlloc {
    always: bool,
}

impl CountingAlloc {
    /// Counts from the first allocation on.
    pub const ALWAYS: CountingAlloc = CountingAlloc { always: true };
    /// Counts only after [`enable`] (or inside [`counting`]).
    pub const SWITCHED: CountingAlloc = CountingAlloc { always: false };

    #[inline]
    fn on(&self) -> bool {
        self.always || ENABLED.load(Ordering::Relaxed)
    }
}

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
    static ALLOCATED_BYTES: Cell<usize> = const { Cell::new(0) };
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

static ENABLED: AtomicBool = AtomicBool::new(false);
// Signed: with a switched allocator, blocks allocated before `enable` are
// freed later and take the count below its starting point.
static GLOBAL_LIVE: AtomicIsize = AtomicIsize::new(0);
static GLOBAL_PEAK: AtomicIsize = AtomicIsize::new(0);
static GLOBAL_ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

fn on_alloc(size: usize) {
    // `try_with`: thread-locals may be gone while a thread shuts down.
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
    let _ = ALLOCATED_BYTES.try_with(|c| c.set(c.get() + size));
    let _ = LIVE.try_with(|live| {
        live.set(live.get() + size as isize);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(live.get())));
    });
    GLOBAL_ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    let now = GLOBAL_LIVE.fetch_add(size as isize, Ordering::Relaxed) + size as isize;
    GLOBAL_PEAK.fetch_max(now, Ordering::Relaxed);
}

fn on_free(size: usize) {
    let _ = LIVE.try_with(|live| live.set(live.get() - size as isize));
    GLOBAL_LIVE.fetch_sub(size as isize, Ordering::Relaxed);
}

unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if self.on() {
            on_alloc(layout.size());
        }
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if self.on() {
            on_alloc(layout.size());
        }
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if self.on() {
            on_free(layout.size());
        }
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if self.on() {
            on_free(layout.size());
            on_alloc(new_size);
        }
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

/// Runs `f` and reports what the current thread allocated while it ran
/// (with a switched allocator: only what was counted meanwhile).
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

/// Runs `f` with counting switched on and reports what the current thread
/// allocated meanwhile: [`measure`] for a switched allocator. Counting stays
/// on afterwards if [`enable`] had switched it on before.
pub fn counting<R>(f: impl FnOnce() -> R) -> (R, Usage) {
    let was_on = ENABLED.swap(true, Ordering::SeqCst);
    let measured = measure(f);
    ENABLED.store(was_on, Ordering::SeqCst);
    measured
}

/// Switches a [`CountingAlloc::SWITCHED`] allocator on for good. Blocks
/// allocated before are not counted, and freeing them later lowers the
/// count: read differences, not absolutes.
pub fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// Live bytes across the whole process (since [`enable`] for a switched
/// allocator), net of frees; negative when more was freed than counted.
pub fn live_bytes() -> isize {
    GLOBAL_LIVE.load(Ordering::Relaxed)
}

/// Live bytes across the whole process, as a size (0 if below zero).
pub fn global_live() -> usize {
    live_bytes().max(0) as usize
}

/// Allocations across the whole process so far.
pub fn global_allocations() -> usize {
    GLOBAL_ALLOCATIONS.load(Ordering::Relaxed)
}

/// Resets the process-wide peak to the current live bytes and returns it.
pub fn reset_global_peak() -> usize {
    let live = live_bytes();
    GLOBAL_PEAK.store(live, Ordering::Relaxed);
    live.max(0) as usize
}

/// The process-wide peak of live bytes since the last reset.
pub fn global_peak() -> usize {
    GLOBAL_PEAK.load(Ordering::Relaxed).max(0) as usize
}

/// Whether [`enable`] was called (a [`CountingAlloc::ALWAYS`] allocator
/// counts whatever this says).
pub fn is_enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}
