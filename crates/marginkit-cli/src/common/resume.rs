//! `--resume` and `--state-file`, shared by every command whose run can stop early and be
//! continued (train, path, robust, aid): the flags, the state file's path, reading the state to
//! continue, and naming the state file in errors.

use std::path::{Path, PathBuf};

use clap::Args;
use marginkit::error::CheckpointError;

use crate::common::{CliError, CliResult};

/// The flags of a resumable run.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Stop and resume")]
pub struct ResumeArgs {
    /// Continue the run saved in this state file (written when a run stops early: Ctrl-C,
    /// --max-iter, --time-limit). Same data and parameters; limits may change. The continued
    /// run ends where an uninterrupted run would.
    #[arg(long, value_name = "STATE")]
    pub resume: Option<PathBuf>,
    /// Where to write the state file of a run that stops early (default: MODEL_FILE.state for
    /// train and aid; the training file's name + .path.state or .robust.state, in the current
    /// directory, for path and robust).
    #[arg(long, value_name = "FILE")]
    pub state_file: Option<PathBuf>,
}

impl ResumeArgs {
    /// `--state-file`, else `default`.
    pub fn state_path(&self, default: PathBuf) -> PathBuf {
        self.state_file.clone().unwrap_or(default)
    }

    /// The state of `--resume`, read by `parse` (a state type's `from_bytes`); errors name the
    /// file.
    pub fn read<T>(
        &self,
        parse: impl FnOnce(&[u8]) -> Result<T, CheckpointError>,
    ) -> CliResult<Option<T>> {
        let Some(p) = &self.resume else {
            return Ok(None);
        };
        let bytes = std::fs::read(p).map_err(|e| CliError(format!("{}: {e}", p.display())))?;
        parse(&bytes)
            .map(Some)
            .map_err(|e| CliError(format!("{}: {e}", p.display())))
    }

    /// An error of the run, prefixed with the state file's name when the run was resumed (a
    /// fit that refuses its state says why, and the user needs to know which file).
    pub fn err(&self, e: impl std::fmt::Display) -> CliError {
        match &self.resume {
            Some(p) => CliError(format!("{}: {e}", p.display())),
            None => CliError(e.to_string()),
        }
    }

    /// True when either flag is given.
    pub fn any(&self) -> bool {
        self.resume.is_some() || self.state_file.is_some()
    }
}

/// `NAME.SUFFIX` in the current directory, NAME the file name of `train` (`stdin` for `-`).
pub fn beside_name(train: &Path, suffix: &str) -> PathBuf {
    let name = train
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| n != "-")
        .unwrap_or_else(|| "stdin".into());
    PathBuf::from(format!("{name}{suffix}"))
}

/// `MODEL.state`: the default state file of a run that writes `model`.
pub fn after_model(model: &Path) -> PathBuf {
    let mut s = model.as_os_str().to_owned();
    s.push(".state");
    PathBuf::from(s)
}
