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

/// Exit code of a run whose standard output was closed by its reader (128 + SIGPIPE), as a C
/// program killed by SIGPIPE reports it (`marginkit ... | head`).
pub const EXIT_BROKEN_PIPE: i32 = 141;

fn main() -> ExitCode {
    // Rust ignores SIGPIPE, so a write to a closed pipe fails and `println!` panics; the reader
    // is gone, so the run ends quietly instead, as LIBSVM's tools do.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let msg = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.contains("failed printing to stdout") && msg.contains("Broken pipe") {
            std::process::exit(EXIT_BROKEN_PIPE);
        }
        default_hook(info);
    }));
    let argv = cli::rewrite_libsvm_weights(std::env::args_os().collect());
    let args = cli::Cli::parse_from(argv);
    match cmd::run(args.cmd) {
        Ok(Outcome::Done) => ExitCode::SUCCESS,
        Ok(Outcome::Interrupted) => ExitCode::from(EXIT_INTERRUPTED),
        // A write to a pipe whose reader is gone, returned as an error rather than a panic
        // (`marginkit scale big | head -1`): the same quiet end as above.
        Err(CliError(msg)) if msg.ends_with("Broken pipe (os error 32)") => {
            ExitCode::from(EXIT_BROKEN_PIPE as u8)
        }
        Err(CliError(msg)) => {
            eprintln!("marginkit: error: {msg}");
            ExitCode::from(1)
        }
    }
}
