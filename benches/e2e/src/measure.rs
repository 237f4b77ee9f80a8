//! What the benchmark reads off the machine: CPU affinity, a process's CPU
//! time and resident memory.

/// Number of CPUs online on the machine.
///
/// Not `available_parallelism`: that follows this process's affinity, which
/// is one CPU once the client has pinned itself, and the servers, started
/// after that, would then inherit the client's CPU instead of getting their
/// own.
pub fn cpu_count() -> usize {
    // SAFETY: sysconf has no preconditions.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(online).ok().filter(|&n| n > 0).unwrap_or(1)
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

/// CPU time of a process, in microseconds, summed over its live threads
/// from `/proc/<pid>/task/*/schedstat` (nanosecond scheduler accounting,
/// where `stat`'s utime/stime are 10 ms tick samples). Falls back to
/// [`process_cpu_micros`] when schedstat is not available.
pub fn process_cpu_micros_precise(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return process_cpu_micros(pid);
    };
    let mut nanos = 0u64;
    let mut read_any = false;
    for task in tasks.flatten() {
        let path = task.path().join("schedstat");
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        if let Some(on_cpu) = text
            .split_whitespace()
            .next()
            .and_then(|n| n.parse::<u64>().ok())
        {
            nanos += on_cpu;
            read_any = true;
        }
    }
    if read_any {
        nanos / 1000
    } else {
        process_cpu_micros(pid)
    }
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

/// CPU time of both sides over a window, read at its start and end.
#[derive(Clone, Copy, Debug)]
pub struct CpuWindow {
    server_pid: u32,
    server_start: u64,
    client_start: u64,
    started: std::time::Instant,
}

/// CPU use of both sides over a window, in CPU-seconds per second.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuUse {
    /// Server CPU time over the window, µs.
    pub server_us: f64,
    /// Server CPU-seconds per second of the window.
    pub server_share: f64,
    /// Client (this process) CPU-seconds per second of the window.
    pub client_share: f64,
    /// Window length, seconds.
    pub seconds: f64,
}

impl CpuWindow {
    /// Starts a window now.
    pub fn start(server_pid: u32) -> CpuWindow {
        CpuWindow {
            server_pid,
            server_start: process_cpu_micros_precise(server_pid),
            client_start: process_cpu_micros_precise(std::process::id()),
            started: std::time::Instant::now(),
        }
    }

    /// Ends the window now.
    pub fn finish(self) -> CpuUse {
        let seconds = self.started.elapsed().as_secs_f64();
        let server_us =
            process_cpu_micros_precise(self.server_pid).saturating_sub(self.server_start) as f64;
        let client_us =
            process_cpu_micros_precise(std::process::id()).saturating_sub(self.client_start) as f64;
        CpuUse {
            server_us,
            server_share: server_us / 1e6 / seconds,
            client_share: client_us / 1e6 / seconds,
            seconds,
        }
    }
}

/// Limits a process to a share of one CPU the way a CFS bandwidth quota
/// does (`cpu.max`): it runs for `share` of every 10 ms period and is
/// stopped (SIGSTOP) for the rest. Used where no cgroup can be made, so a
/// fast server is the bottleneck rather than the client.
pub struct Throttle {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    pid: u32,
}

impl Throttle {
    /// Starts throttling `pid` to `share` (0 < share < 1) of a CPU.
    pub fn start(pid: u32, share: f64) -> Throttle {
        use std::sync::atomic::Ordering;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let period = std::time::Duration::from_millis(10);
        let running = period.mul_f64(share.clamp(0.05, 0.95));
        let stopped = period - running;
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(running);
                signal(pid, libc::SIGSTOP);
                std::thread::sleep(stopped);
                signal(pid, libc::SIGCONT);
            }
        });
        Throttle {
            stop,
            thread: Some(thread),
            pid,
        }
    }
}

impl Drop for Throttle {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        signal(self.pid, libc::SIGCONT);
    }
}

fn signal(pid: u32, signal: libc::c_int) {
    // SAFETY: kill has no memory preconditions; `pid` is our own child.
    unsafe {
        libc::kill(pid as libc::pid_t, signal);
    }
}

/// The `q`-quantile (0..=1) of some samples, nearest rank.
pub fn quantile(sorted: &[u32], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1] as f64
}
