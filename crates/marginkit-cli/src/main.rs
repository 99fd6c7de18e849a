//! `marginkit`: LIBSVM/LIBLINEAR-compatible command line for the marginkit library.
//!
//! `main` parses the arguments, hands them to one subcommand (`cmd/`, one file each) and turns
//! its outcome into the exit code: 0 done, 1 error, 2 usage error (clap), 130 interrupted.
//! Defaults and validation live in the library; shared helpers in `common/`.

mod cli;
mod cmd;
mod common;

use std::process::ExitCode;

use clap::Parser;

use common::{CliError, Outcome};

/// Exit code of a run stopped by Ctrl-C (128 + SIGINT).
pub const EXIT_INTERRUPTED: u8 = 130;

fn main() -> ExitCode {
    let argv = cli::rewrite_libsvm_weights(std::env::args_os().collect());
    let args = cli::Cli::parse_from(argv);
    match cmd::run(args.cmd) {
        Ok(Outcome::Done) => ExitCode::SUCCESS,
        Ok(Outcome::Interrupted) => ExitCode::from(EXIT_INTERRUPTED),
        Err(CliError(msg)) => {
            eprintln!("marginkit: error: {msg}");
            ExitCode::from(1)
        }
    }
}
