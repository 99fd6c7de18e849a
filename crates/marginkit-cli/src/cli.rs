//! The command line's top level: the subcommands, and LIBSVM's `-wLABEL WEIGHT` spelling.
//! Each subcommand's own flags are defined in its file under `cmd/`.

use clap::{Parser, Subcommand};
use std::ffi::OsString;

/// marginkit: support vector machines, LIBSVM/LIBLINEAR-compatible (flags, data and model files).
#[derive(Debug, Parser)]
#[command(
    name = "marginkit",
    version,
    propagate_version = true,
    after_help = "Examples:\n  marginkit demo\n  marginkit train -c 4 -g 0.5 heart_scale          # writes heart_scale.model\n  marginkit predict heart_scale.t heart_scale.model out.txt\n  marginkit train --linear -s 1 -B 1 data.txt\n  marginkit scale -l -1 -u 1 -s range train.txt > train.scale\n\nRun `marginkit <COMMAND> --help` for the flags of a command."
)]
pub struct Cli {
    /// The subcommand.
    #[command(subcommand)]
    pub cmd: Cmd,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Train a model (svm-train; with --linear, LIBLINEAR's train).
    Train(crate::cmd::train::TrainArgs),
    /// Predict with a model (svm-predict / LIBLINEAR's predict).
    Predict(crate::cmd::predict::PredictArgs),
    /// Scale features (svm-scale).
    Scale(crate::cmd::scale::ScaleArgs),
    /// Grid search over (C, gamma) by cross-validation (LIBSVM's grid.py).
    Grid(crate::cmd::grid::GridArgs),
    /// Train and evaluate on a small built-in data set (heart_scale).
    Demo(crate::cmd::demo::DemoArgs),
    /// Regularization path over C with safe sample screening (bias-free SVM).
    Path(crate::cmd::path::PathArgs),
    /// Aggregate and iterative disaggregate: exact LAD, SVM, S3VM on clustered data.
    Aid(crate::cmd::aid::AidArgs),
    /// Exact LAD regression on the full data (the LP, to compare with `aid lad`).
    Lad(crate::cmd::aid::LadArgs),
    /// Clustering: optimal margin distribution clustering (odmc) or k-means.
    Cluster(crate::cmd::cluster::ClusterArgs),
    /// Minimum enclosing ball, SVDD and 2-norm SVMs by distributed core-set consensus.
    Coreset(crate::cmd::coreset::CoresetArgs),
    /// Robust (ramp-loss) SVC / SVR by the outlier path or CCCP, with model selection.
    Robust(crate::cmd::robust::RobustArgs),
}

/// Rewrites LIBSVM's `-wLABEL WEIGHT` (label glued to the flag) into `--class-weight LABEL:WEIGHT`.
pub fn rewrite_libsvm_weights(argv: Vec<OsString>) -> Vec<OsString> {
    let mut out = Vec::with_capacity(argv.len());
    let mut it = argv.into_iter();
    while let Some(a) = it.next() {
        match a.to_str() {
            Some(s) if s.starts_with("-w") && s.len() > 2 => {
                let label = &s[2..];
                match it.next() {
                    Some(w) => {
                        out.push(OsString::from("--class-weight"));
                        let mut v = OsString::from(format!("{label}:"));
                        v.push(w);
                        out.push(v);
                    }
                    None => out.push(a.clone()),
                }
            }
            _ => out.push(a),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libsvm_weight_syntax_is_rewritten() {
        let v: Vec<OsString> = ["marginkit", "train", "-w-1", "0.5", "-w1", "2", "f"]
            .iter()
            .map(OsString::from)
            .collect();
        let r = rewrite_libsvm_weights(v);
        let r: Vec<&str> = r.iter().map(|s| s.to_str().unwrap()).collect();
        assert_eq!(
            r,
            [
                "marginkit",
                "train",
                "--class-weight",
                "-1:0.5",
                "--class-weight",
                "1:2",
                "f"
            ]
        );
    }
}
