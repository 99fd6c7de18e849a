//! Keeping the rayon pool awake during a solve made of many short parallel sections.
//!
//! One SMO iteration on n = 20,000 takes about 200 us and holds three to five parallel
//! sections (kernel column fills, the fused gradient update and first WSS3 pass, the second
//! pass). Between two sections rayon's idle workers yield a few dozen times and then sleep on a
//! futex; waking them costs 20-50 us of scheduler time per section, more than the section
//! saves. [`with_hot_pool`] runs a body while the other workers of the current pool execute a
//! *spinner* job: it polls for stolen work with [`rayon::yield_now`] (so a section pushed by the
//! solver thread starts within a microsecond), spins briefly when there is none, and falls back
//! to the OS scheduler's yield after that, so a loaded machine gets the core when the pool has
//! nothing to do. The spinners stop as soon as the body returns.
//!
//! The spinners change only the scheduling: every parallel section computes the same values in
//! the same reduction order as without them, so results stay independent of the thread count.
//!
//! The body must run on a worker of the pool (for the CLI, whose main thread is worker 0 of the
//! global pool, see `ThreadPoolBuilder::use_current_thread`): from outside a pool, sections are
//! injected and the caller blocks on a lock, and the spinners would only add load, so nothing is
//! spawned then.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// Idle polls of a spinner before it starts yielding its core to the OS scheduler: a few
/// milliseconds, longer than the serial stretches of an SMO iteration (with 2,000 polls the
/// spinner yields inside them and 20,000 x 20 RBF takes about 7% longer at 2 threads).
const SPINS_BEFORE_YIELD: u32 = 20_000;

/// Problems with fewer variables than this have (almost) no parallel section: their solves
/// run without spinners.
pub(crate) const HOT_MIN_VARS: usize = 2048;

/// Cores of the machine (read once: `available_parallelism` reads cgroup files on Linux).
fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}

/// Runs `body` with the other workers of the current rayon pool kept awake (see the module
/// docs) when `hot`. Spawns at most one spinner per core beyond the caller's, never more than
/// the pool's other workers; with a one-thread pool, outside a pool, or when not `hot`, it just
/// runs `body`.
pub(crate) fn with_hot_pool<R>(hot: bool, body: impl FnOnce() -> R) -> R {
    let Some(me) = rayon::current_thread_index() else {
        return body();
    };
    let spinners = (rayon::current_num_threads().min(cores())).saturating_sub(1);
    if !hot || spinners == 0 {
        return body();
    }
    let done = Arc::new(AtomicBool::new(false));
    for _ in 0..spinners {
        let done = Arc::clone(&done);
        rayon::spawn(move || spin(&done, me));
    }
    /// Stops the spinners also when `body` unwinds.
    struct Stop(Arc<AtomicBool>);
    impl Drop for Stop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Release);
        }
    }
    let _stop = Stop(done);
    body()
}

/// The spinner job: runs stolen work until `done`. It returns at once on the caller's own
/// thread (worker `owner`), which can pop it from its deque while waiting inside `body`: it
/// must not spin there, since `body` cannot finish below it on the same stack.
fn spin(done: &AtomicBool, owner: usize) {
    if rayon::current_thread_index() == Some(owner) {
        return;
    }
    let mut idle = 0u32;
    while !done.load(Ordering::Acquire) {
        match rayon::yield_now() {
            Some(rayon::Yield::Executed) => idle = 0,
            Some(rayon::Yield::Idle) => {
                if idle < SPINS_BEFORE_YIELD {
                    idle += 1;
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
            None => return,
        }
    }
}
