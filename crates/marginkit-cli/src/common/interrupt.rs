//! Ctrl-C (SIGINT) handling: the first Ctrl-C sets a [`Cancel`] flag that the running solver
//! polls (it then returns its current point as `interrupted`, and the command writes a partial
//! model and a state file); a second Ctrl-C exits at once with code 130.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use marginkit::solver::Cancel;

/// The process-wide flag; the handler can only be installed once per process.
static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Installs the handler (once) and returns a cancellation observer tied to it. If no handler
/// can be installed, the returned flag is simply never set (Ctrl-C then kills the process as
/// usual).
pub fn install() -> Cancel {
    let flag = FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        let f = Arc::clone(&flag);
        let _ = ctrlc::set_handler(move || {
            if f.swap(true, Ordering::SeqCst) {
                // Second Ctrl-C: the user does not want to wait for the partial results. This
                // is the one exit outside `main`: a signal handler has no caller to return to.
                std::process::exit(i32::from(crate::EXIT_INTERRUPTED));
            }
            eprintln!(
                "\nmarginkit: interrupted: stopping the solver (Ctrl-C again to quit at once)"
            );
        });
        flag
    });
    Cancel::from_flag(Arc::clone(flag))
}
