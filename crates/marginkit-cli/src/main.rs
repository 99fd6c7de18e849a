//! `marginkit`: LIBSVM/LIBLINEAR-compatible command line for the marginkit library.
//!
//! `main` only parses, builds parameters, calls the library and writes results; defaults and
//! validation live in the library.

mod aid;
mod args;
mod cluster;
mod coreset;
mod demo;
mod grid;
mod input;
mod interrupt;
mod path;
mod predict;
mod progress;
mod robust;
mod scale;
mod train;
mod train_linear;
mod train_odm;

use std::process::ExitCode;

use clap::Parser;

/// A user-facing failure: printed as `marginkit: <message>` with exit code 1.
#[derive(Debug)]
pub struct CliError(pub String);

impl<E: std::fmt::Display> From<E> for CliError {
    fn from(e: E) -> Self {
        CliError(e.to_string())
    }
}

/// Result type of the subcommands.
pub type CliResult<T = ()> = Result<T, CliError>;

fn main() -> ExitCode {
    let argv = args::rewrite_libsvm_weights(std::env::args_os().collect());
    if train_odm::is_odm_train(&argv) {
        return finish(train_odm::run_argv(argv));
    }
    let cli = args::Cli::parse_from(argv);
    let result = match cli.cmd {
        args::Cmd::Train(a) => train::run(a),
        args::Cmd::Predict(a) => predict::run(a),
        args::Cmd::Scale(a) => scale::run(a),
        args::Cmd::Grid(a) => grid::run(a),
        args::Cmd::Demo(a) => demo::run(a),
        args::Cmd::Path(a) => path::run(a),
        args::Cmd::Aid(a) => aid::run(a),
        args::Cmd::Lad(a) => aid::run_full_lad(a),
        args::Cmd::Cluster(a) => cluster::run(a),
        args::Cmd::Coreset(a) => coreset::run(a),
        args::Cmd::Robust(a) => robust::run(a),
    };
    finish(result)
}

fn finish(result: CliResult) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError(msg)) => {
            eprintln!("marginkit: error: {msg}");
            ExitCode::from(1)
        }
    }
}
