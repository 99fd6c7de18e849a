//! One file per subcommand: its flags (clap) and its run function, which maps the flags to the
//! library's parameters, calls the library and reports. Subcommands share only `common/`.

pub mod aid;
pub mod cluster;
pub mod coreset;
pub mod demo;
pub mod grid;
pub mod path;
pub mod predict;
pub mod robust;
pub mod scale;
pub mod train;

use crate::cli::Cmd;
use crate::common::Exit;

/// Runs one subcommand.
pub fn run(cmd: Cmd) -> Exit {
    match cmd {
        Cmd::Train(a) => train::run(a),
        Cmd::Predict(a) => predict::run(a),
        Cmd::Scale(a) => scale::run(a),
        Cmd::Grid(a) => grid::run(a),
        Cmd::Demo(a) => demo::run(a),
        Cmd::Path(a) => path::run(a),
        Cmd::Aid(a) => aid::run(a),
        Cmd::Lad(a) => aid::run_full_lad(a),
        Cmd::Cluster(a) => cluster::run(a),
        Cmd::Coreset(a) => coreset::run(a),
        Cmd::Robust(a) => robust::run(a),
    }
}
