//! The process's resident memory, from `/proc/self/status` (Linux): a
//! measure that sees what the counting allocator ([`crate::alloc`]) cannot,
//! such as a C library's own `malloc` (zstd's contexts and windows).
//!
//! [`reset_peak`] first hands free heap pages back to the kernel
//! (`malloc_trim`, glibc) so that what is allocated next needs fresh pages
//! and shows in the peak, then resets the kernel's peak (`VmHWM`) to the
//! current resident size. RSS counts pages touched, not bytes asked for,
//! and includes everything in the process: read it as an upper bound of
//! what a step cost, in a test that runs alone.
//! On other systems every function returns `None`.

/// Resident bytes now (`VmRSS`).
pub fn current() -> Option<u64> {
    field("VmRSS:")
}

/// The highest resident bytes since the last [`reset_peak`] (`VmHWM`).
pub fn peak() -> Option<u64> {
    field("VmHWM:")
}

/// Returns free heap memory to the kernel, resets the peak to the current
/// resident size and returns that size.
pub fn reset_peak() -> Option<u64> {
    trim();
    std::fs::write("/proc/self/clear_refs", "5").ok()?;
    current()
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim() {
    unsafe extern "C" {
        fn malloc_trim(pad: usize) -> i32;
    }
    // SAFETY: glibc's malloc_trim only releases free memory.
    unsafe {
        malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() {}

fn field(name: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix(name))?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Touched pages show in the peak; the reset brings it back down.
    #[test]
    #[cfg(target_os = "linux")]
    fn the_peak_sees_touched_memory_and_resets() {
        const SIZE: usize = 64 << 20;
        let before = reset_peak().unwrap();
        let block = vec![1u8; SIZE];
        std::hint::black_box(&block);
        let grown = peak().unwrap() - before;
        // Other tests of the process run on other threads and may free
        // memory meanwhile, lowering the resident baseline: half is plenty
        // to tell 64 MiB of touched pages from none.
        assert!(grown >= SIZE as u64 / 2, "peak grew {grown} bytes");
        drop(block);
        let after = reset_peak().unwrap();
        assert!(
            peak().unwrap() - after < SIZE as u64 / 2,
            "peak not reset: {:?} after {after}",
            peak()
        );
    }
}
