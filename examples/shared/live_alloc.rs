//! A global allocator for the example servers that can count live heap
//! bytes, so the end-to-end benchmark can compare what each server holds.
//!
//! Counting is off unless [`enable`] is called (the servers' `--report-memory`
//! flag), so the benchmark's speed arms pay one predictable branch per
//! allocation and nothing more. Included by path from both example servers.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};

/// Forwards to the system allocator, counting live bytes when enabled.
pub struct LiveAlloc;

static ENABLED: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicIsize = AtomicIsize::new(0);

/// Starts counting. Blocks allocated before this call are not counted, and
/// freeing them later lowers the count: read differences, not absolutes.
pub fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// Live bytes allocated since [`enable`], net of frees.
pub fn live_bytes() -> isize {
    LIVE.load(Ordering::Relaxed)
}

fn count(delta: isize) {
    if ENABLED.load(Ordering::Relaxed) {
        LIVE.fetch_add(delta, Ordering::Relaxed);
    }
}

unsafe impl GlobalAlloc for LiveAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize);
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize);
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as isize));
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size as isize - layout.size() as isize);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Answers `memory` lines on standard input with `live_bytes N` on standard
/// output, from a plain thread so it works whatever the runtime is doing.
pub fn serve_reports_on_stdin() {
    enable();
    std::thread::spawn(|| {
        use std::io::{BufRead, Write};
        let stdin = std::io::stdin();
        for line in stdin.lock().lines() {
            let Ok(line) = line else { break };
            if line.trim() == "memory" {
                let mut stdout = std::io::stdout().lock();
                let _ = writeln!(stdout, "live_bytes {}", live_bytes().max(0));
                let _ = stdout.flush();
            }
        }
    });
}
