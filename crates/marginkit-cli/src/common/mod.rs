//! What every subcommand shares: the error and outcome types, reading input, output paths,
//! reporting, threads, Ctrl-C and progress. Subcommands (`cmd/`) import from here and never
//! from each other.

pub mod input;
pub mod interrupt;
pub mod model;
pub mod output;
pub mod progress;
pub mod report;
pub mod resume;
pub mod run;

/// A user-facing failure: printed by `main` as `marginkit: error: <message>`, exit code 1.
#[derive(Debug)]
pub struct CliError(pub String);

impl<E: std::fmt::Display> From<E> for CliError {
    fn from(e: E) -> Self {
        CliError(e.to_string())
    }
}

/// Result type of the subcommands and their helpers.
pub type CliResult<T = ()> = Result<T, CliError>;

/// How a subcommand that did not fail ended; `main` turns it into the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The work is done (exit code 0).
    Done,
    /// Ctrl-C stopped the work after the partial outputs and the state file were written
    /// (exit code 130, 128 + SIGINT, as a shell reports an interrupted command).
    Interrupted,
}

/// What a subcommand returns.
pub type Exit = CliResult<Outcome>;
