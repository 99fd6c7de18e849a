//! Ctrl-C over MPI: every rank stops at the same point.
//!
//! `mpirun` answers Ctrl-C (SIGINT) by sending SIGTERM to every rank, and SIGKILL about a second
//! later (Open MPI's `odls_base_sigkill_timeout`, 1 s by default: `mpirun --mca
//! odls_base_sigkill_timeout 30 ...` gives the ranks longer to finish); a rank started some other
//! way may get SIGINT itself. Either signal only sets this rank's flag ([`install`]). A rank that
//! stopped on its own would leave the others waiting in their next collective, so the flag is
//! acted on through a collective: the solver's observer ORs it across the ranks at a point every
//! rank reaches in the same order (AID-LAD sends it with the side codes of every iteration), and
//! all ranks stop together. A second signal ends the process at once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use mpi::collective::SystemOperation;
use mpi::topology::SimpleCommunicator;
use mpi::traits::CommunicatorCollectives;

/// Exit status of a run stopped by Ctrl-C (the shell's 128 + SIGINT, as `marginkit`).
pub const EXIT_INTERRUPTED: u8 = 130;

static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Installs the handler (once per process) and returns this rank's flag. If no handler can be
/// installed, the flag is never set and the signal ends the process as usual.
pub fn install() -> Arc<AtomicBool> {
    Arc::clone(FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        let f = Arc::clone(&flag);
        let _ = ctrlc::set_handler(move || {
            if f.swap(true, Ordering::SeqCst) {
                // A second signal: the user does not want to wait. A signal handler has no
                // caller to return an error to.
                std::process::exit(i32::from(EXIT_INTERRUPTED));
            }
        });
        flag
    }))
}

/// Whether any rank's flag is set: a collective (an all-reduce of one byte), to be called at the
/// same point of the computation on every rank.
pub fn any(world: &SimpleCommunicator, flag: &AtomicBool) -> bool {
    let local = u8::from(flag.load(Ordering::SeqCst));
    let mut any = 0u8;
    world.all_reduce_into(&local, &mut any, SystemOperation::bitwise_or());
    any != 0
}

/// Rank 0's message after a stopped fit whose partial model was written to `model` and whose
/// state, for a run that has one, to `state`.
pub fn report(model: &std::path::Path, state: Option<&std::path::Path>) {
    match state {
        Some(s) => eprintln!(
            "marginkit-mpi: interrupted: {} holds the model at the point where every rank stopped and {} its state; continue with --resume {} (same data and flags, at any number of ranks, or with marginkit train)",
            model.display(),
            s.display(),
            s.display()
        ),
        None => eprintln!(
            "marginkit-mpi: interrupted: {} holds the model at the point where every rank stopped; a linear fit has no state file (the run starts over)",
            model.display()
        ),
    }
}
