//! What the benchmark reads off the machine: CPU affinity, a process's CPU
//! time and resident memory.

/// Number of CPUs this process may run on.
pub fn cpu_count() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Pins the current process (and the threads it starts later) to one CPU, if
/// the machine has more than one.
pub fn pin_current_process(cpu: usize) {
    if cpu_count() <= cpu {
        return;
    }
    // SAFETY: `set` is a plain bit mask owned by this frame; the call only
    // reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// User plus system CPU time of a process, in microseconds.
pub fn process_cpu_micros(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name, which may itself hold spaces.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 here.
    let ticks: u64 = fields
        .get(11..13)
        .map(|both| both.iter().filter_map(|f| f.parse::<u64>().ok()).sum())
        .unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    ticks * 1_000_000 / per_second
}

/// Resident set size of a process, in bytes.
pub fn process_rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

/// The median of some samples (the lower middle for an even count).
pub fn median(mut samples: Vec<f64>) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    samples.sort_by(f64::total_cmp);
    samples[(samples.len() - 1) / 2]
}
