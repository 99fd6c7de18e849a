//! State files over MPI: `--resume STATE` and `--state-file FILE`, with the flags, defaults and
//! file forms of the single-process commands, so that a state file written by `mpirun ...
//! marginkit-mpi` is continued by `marginkit` and the other way round.
//!
//! * Before the work starts, rank 0 checks that the state file can be written, as the model
//!   file ([`check`]).
//! * Every rank reads STATE itself, like TRAIN (it must be on a path every rank sees), with the
//!   state type's parser; a rank that cannot read it or refuses it fails every rank with one
//!   error naming the file ([`StateArgs::read`]).
//! * A run that stops early writes its state on rank 0 with the library's atomic output writer,
//!   the model file's ([`write`]).
//!
//! Generic over the state: a command passes its state type's `from_bytes` and `to_bytes`.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use marginkit::data::{check_output, same_file, write_output};
use marginkit::error::CheckpointError;
use mpi::topology::{Communicator, SimpleCommunicator};

use crate::train::{agree, Res};

/// The flags of a run that can stop early and be continued.
#[derive(Debug, Args, Clone, Default)]
pub struct StateArgs {
    /// Continue the run saved in this state file (written when a run stops early: Ctrl-C,
    /// --max-iter), at any number of ranks; a state file of the single-process `marginkit`
    /// command is continued too, and that command continues this one's. Same data and
    /// parameters; limits may change. Every rank reads it: it must be on a path every rank sees.
    #[arg(long, value_name = "STATE")]
    pub resume: Option<PathBuf>,
    /// Where rank 0 writes the state file of a run that stops early (default: MODEL.state).
    #[arg(long, value_name = "FILE")]
    pub state_file: Option<PathBuf>,
}

impl StateArgs {
    /// The state file of a run that writes `model`: `--state-file`, else `MODEL.state`.
    pub fn path(&self, model: &Path) -> PathBuf {
        self.state_file.clone().unwrap_or_else(|| {
            let mut s = model.as_os_str().to_owned();
            s.push(".state");
            PathBuf::from(s)
        })
    }

    /// The state of `--resume`, read and parsed by every rank; when any rank cannot, every rank
    /// fails with the error of the lowest such rank, naming the file.
    pub fn read<T>(
        &self,
        world: &SimpleCommunicator,
        parse: impl FnOnce(&[u8]) -> Result<T, CheckpointError>,
    ) -> Res<Option<T>> {
        let Some(p) = &self.resume else {
            return Ok(None);
        };
        let local = std::fs::read(p)
            .map_err(|e| e.to_string())
            .and_then(|b| parse(&b).map_err(|e| e.to_string()))
            .map_err(|e| format!("{}: {e}", p.display()));
        agree(world, local).map(Some)
    }

    /// An error of the run, prefixed with the state file's name when the run was resumed (a
    /// fit that refuses its state says why; the user needs to know which file).
    pub fn err(&self, e: impl std::fmt::Display) -> String {
        match &self.resume {
            Some(p) => format!("{}: {e}", p.display()),
            None => e.to_string(),
        }
    }
}

/// Rank 0's checks of the state file `state` of a run that writes `model` (and continues
/// `resume`), before the work starts: the model file is not the state to continue, the state
/// file is not the model file, and it is writable (as `marginkit train` checks them).
pub fn check(
    world: &SimpleCommunicator,
    state: &Path,
    model: &Path,
    resume: Option<&Path>,
) -> Res<()> {
    let local = if world.rank() == 0 {
        if resume.is_some_and(|r| same_file(r, model)) {
            Err(format!(
                "{} is the --resume state file: writing it would overwrite that input; give another output path",
                model.display()
            ))
        } else if same_file(state, model) {
            Err(format!(
                "--state-file {} is the model file: the state would overwrite the model; give another path",
                state.display()
            ))
        } else {
            check_output(state).map_err(|e| format!("{}: {e}", state.display()))
        }
    } else {
        Ok(())
    };
    agree(world, local)
}

/// Writes `bytes` (a state's `to_bytes`, made on rank 0 only) to `path` on rank 0 with the
/// atomic output writer; an error there is every rank's.
pub fn write(world: &SimpleCommunicator, path: &Path, bytes: impl FnOnce() -> Vec<u8>) -> Res<()> {
    let local = if world.rank() == 0 {
        let b = bytes();
        write_output(path, |w| w.write_all(&b)).map_err(|e| format!("{}: {e}", path.display()))
    } else {
        Ok(())
    };
    agree(world, local)
}
