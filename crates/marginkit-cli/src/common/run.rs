//! Threads, time limits, Ctrl-C and the command outcome shared by every subcommand.

use crate::common::{CliError, CliResult};

/// The most worker threads `--threads` may ask for.
pub const MAX_THREADS: usize = 1024;

/// Sets the size of rayon's global pool (default: all cores), with the calling (main) thread
/// as worker 0: the solvers then run on a worker, so their parallel sections are pushed to its
/// own deque and stolen by the other workers, instead of being injected from outside the pool
/// with the main thread blocked on a lock each time.
pub fn init_threads(n: Option<usize>) -> CliResult {
    if n == Some(0) {
        return Err(CliError("--threads must be at least 1".into()));
    }
    // Each thread is an OS thread with its own stack: 100,000 of them take minutes to start
    // and spin, so a count far beyond any machine is refused.
    if let Some(n) = n.filter(|&n| n > MAX_THREADS) {
        return Err(CliError(format!(
            "--threads {n} exceeds the limit of {MAX_THREADS}"
        )));
    }
    // 0: rayon's default (RAYON_NUM_THREADS, else all cores).
    let built = rayon::ThreadPoolBuilder::new()
        .num_threads(n.unwrap_or(0))
        .use_current_thread()
        .build_global();
    match (built, n) {
        (Err(e), Some(n)) => Err(CliError(format!("cannot start {n} threads: {e}"))),
        // Without --threads, a pool that already exists (an earlier call) is just as good.
        _ => Ok(()),
    }
}

/// Parses a `--NAME` seconds value into a [`std::time::Duration`]: it must be finite, > 0 and
/// representable (at most about 1.8e19 seconds); anything else is a CLI error, never a panic.
pub fn seconds_flag(name: &str, t: f64) -> CliResult<std::time::Duration> {
    if !(t.is_finite() && t > 0.0) {
        return Err(CliError(format!("--{name} must be > 0 seconds, got {t}")));
    }
    std::time::Duration::try_from_secs_f64(t).map_err(|_| {
        CliError(format!(
            "--{name} {t} is too large (at most {} seconds; omit the flag for no limit)",
            u64::MAX
        ))
    })
}

/// CPU seconds used so far by this process, all threads (Linux: the sum of every thread's
/// on-CPU nanoseconds in `/proc/self/task/*/schedstat`, else the clock-tick `utime + stime` of
/// `/proc/self/stat`); `None` where neither can be read.
pub fn process_cpu_seconds() -> Option<f64> {
    let schedstat = || -> Option<f64> {
        let mut ns = 0u64;
        for t in std::fs::read_dir("/proc/self/task").ok()? {
            let text = std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok()?;
            ns += text.split_whitespace().next()?.parse::<u64>().ok()?;
        }
        Some(ns as f64 * 1e-9)
    };
    let stat = || -> Option<f64> {
        let text = std::fs::read_to_string("/proc/self/stat").ok()?;
        // Fields after the parenthesized command name: state is field 3, utime 14, stime 15.
        let rest = &text[text.rfind(')')? + 1..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
        // USER_HZ is 100 on every Linux ABI.
        Some(ticks as f64 / 100.0)
    };
    schedstat().or_else(stat)
}
