//! The workspace's counting allocator (`test_support::alloc`), installed
//! switched off: benches time their arms with it in place, so counting must
//! cost next to nothing outside [`count`] (one relaxed load per call); arms
//! that allocate more are not timed with a counting tax.

use test_support::alloc::CountingAlloc;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::SWITCHED;

pub use test_support::alloc::Usage;

/// Runs `f` with counting on and reports what it allocated (the benches
/// run `f` on the calling thread).
pub fn count<R>(f: impl FnOnce() -> R) -> (R, Usage) {
    test_support::alloc::counting(f)
}
