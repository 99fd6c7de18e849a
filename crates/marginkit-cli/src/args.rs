//! Command-line syntax: LIBSVM's short flags plus long flags for everything new.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{ArgAction, Args, Parser, Subcommand};

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
    Train(TrainArgs),
    /// Predict with a model (svm-predict / LIBLINEAR's predict).
    Predict(PredictArgs),
    /// Scale features (svm-scale).
    Scale(ScaleArgs),
    /// Grid search over (C, gamma) by cross-validation (LIBSVM's grid.py).
    Grid(GridArgs),
    /// Train and evaluate on a small built-in data set (heart_scale).
    Demo(DemoArgs),
    /// Regularization path over C with safe sample screening (bias-free SVM).
    Path(crate::path::PathArgs),
    /// Aggregate and iterative disaggregate: exact LAD, SVM, S3VM on clustered data.
    Aid(crate::aid::AidArgs),
    /// Exact LAD regression on the full data (the LP, to compare with `aid lad`).
    Lad(crate::aid::LadArgs),
    /// Clustering: optimal margin distribution clustering (odmc) or k-means.
    Cluster(crate::cluster::ClusterArgs),
    /// Minimum enclosing ball, SVDD and 2-norm SVMs by distributed core-set consensus.
    Coreset(crate::coreset::CoresetArgs),
    /// Robust (ramp-loss) SVC / SVR by the outlier path or CCCP, with model selection.
    Robust(crate::robust::RobustArgs),
}

/// Options shared by every command that reads a data file.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Input")]
pub struct InputArgs {
    /// Read the data as CSV instead of LIBSVM text.
    #[arg(long)]
    pub csv: bool,
    /// CSV label column: first, last, a 0-based index or a header name.
    #[arg(long, default_value = "last", requires = "csv")]
    pub label_column: String,
    /// CSV field delimiter.
    #[arg(long, default_value = ",", requires = "csv")]
    pub delimiter: char,
}

/// Model parameters of `train` and `grid` (LIBSVM's and LIBLINEAR's flags).
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Model (LIBSVM's flags; LIBLINEAR's with --linear)")]
pub struct ModelArgs {
    /// svm_type (LIBSVM): 0 C-SVC, 1 nu-SVC, 2 one-class, 3 epsilon-SVR, 4 nu-SVR.
    /// With --linear (LIBLINEAR): 1 L2-loss dual SVC, 2 L2-loss primal SVC (Newton, uses all threads),
    /// 3 L1-loss dual SVC, 11 L2-loss primal SVR (Newton, all threads), 12 L2-loss dual SVR, 13 L1-loss dual SVR.
    #[arg(short = 's')]
    pub svm_type: Option<u8>,
    /// kernel_type: 0 linear, 1 polynomial, 2 RBF, 3 sigmoid, 4 precomputed.
    #[arg(short = 't', default_value_t = 2)]
    pub kernel_type: u8,
    /// degree of the polynomial kernel.
    #[arg(short = 'd', default_value_t = 3)]
    pub degree: u32,
    /// gamma of the kernel (default 1/num_features).
    #[arg(short = 'g', allow_negative_numbers = true)]
    pub gamma: Option<f64>,
    /// coef0 of the polynomial and sigmoid kernels.
    #[arg(short = 'r', default_value_t = 0.0, allow_negative_numbers = true)]
    pub coef0: f64,
    /// C of C-SVC, epsilon-SVR, nu-SVR and the linear models.
    #[arg(short = 'c', default_value_t = 1.0, allow_negative_numbers = true)]
    pub cost: f64,
    /// nu of nu-SVC, one-class and nu-SVR.
    #[arg(short = 'n', default_value_t = 0.5, allow_negative_numbers = true)]
    pub nu: f64,
    /// epsilon of the epsilon-insensitive loss (SVR).
    #[arg(short = 'p', default_value_t = 0.1, allow_negative_numbers = true)]
    pub epsilon: f64,
    /// Kernel cache size in MB, or `auto`: half of the available memory (MemAvailable in
    /// /proc/meminfo), at least 64 MB.
    #[arg(short = 'm', default_value = "200", allow_negative_numbers = true, value_parser = parse_cache_mb)]
    pub cache_mb: f64,
    /// Stopping tolerance (default 0.001; LIBLINEAR's with --linear: 0.1, -s 2 0.01, -s 11 0.0001).
    #[arg(short = 'e', allow_negative_numbers = true)]
    pub eps: Option<f64>,
    /// Shrinking heuristics: 1 on, 0 off.
    #[arg(short = 'h', default_value_t = 1, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub shrinking: u8,
    /// Probability estimates: 1 fit a probability model, 0 not.
    #[arg(short = 'b', default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub probability: u8,
    /// Multiply C of class LABEL by WEIGHT; repeatable. LIBSVM's `-wLABEL WEIGHT` (e.g. `-w-1 0.5`)
    /// is accepted too.
    #[arg(
        long = "class-weight",
        value_name = "LABEL:WEIGHT",
        allow_hyphen_values = true
    )]
    pub class_weights: Vec<String>,
    /// Linear model (LIBLINEAR's solvers and numbering for -s).
    #[arg(long)]
    pub linear: bool,
    /// Bias term of linear models: B > 0 appends a constant feature B; -1 none.
    #[arg(short = 'B', default_value_t = -1.0, allow_negative_numbers = true)]
    pub bias: f64,
    /// Iteration limit of the solver (passes with --linear; Newton iterations with --linear
    /// -s 2/11); the run then ends with status max_iterations and a warning.
    #[arg(long, help_heading = "Solver and run")]
    pub max_iter: Option<u64>,
    /// Time limit of each solve, in seconds (finite, > 0, at most ~1.8e19; larger is an error).
    #[arg(long, help_heading = "Solver and run")]
    pub time_limit: Option<f64>,
    /// Seed of every random choice (folds, permutations).
    #[arg(long, default_value_t = 0, help_heading = "Solver and run")]
    pub seed: u64,
    /// Worker threads for kernel computations (default: all cores); results do not depend on it.
    #[arg(long, help_heading = "Solver and run")]
    pub threads: Option<usize>,
}

/// `marginkit train`.
#[derive(Debug, Args)]
#[command(
    disable_help_flag = true,
    override_usage = "marginkit train [OPTIONS] TRAIN_FILE [MODEL_FILE]\n       marginkit train --linear [OPTIONS] TRAIN_FILE [MODEL_FILE]",
    after_help = "-h is LIBSVM's shrinking flag here; use --help for this text.\nTRAIN_FILE may be `-` (standard input) or gzip-compressed.\n`-s odm` trains an optimal margin distribution machine: see `marginkit train -s odm --help`."
)]
pub struct TrainArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub input: InputArgs,
    /// n-fold cross-validation instead of training a model (n >= 2).
    #[arg(short = 'v', help_heading = "Output")]
    pub folds: Option<usize>,
    /// Quiet: no progress and no solver summary.
    #[arg(short = 'q', help_heading = "Output")]
    pub quiet: bool,
    /// Print one JSON object with the results on stdout at the end (human lines go to stderr).
    #[arg(long, help_heading = "Output")]
    pub json: bool,
    /// Continue the fit saved in this state file (written when a fit stops before convergence:
    /// Ctrl-C, --max-iter, --time-limit); same data and parameters, limits may change.
    #[arg(long, value_name = "STATE", help_heading = "Solver and run")]
    pub resume: Option<PathBuf>,
    /// Where to write the state file of a fit that stops early (default: MODEL_FILE.state).
    #[arg(long, value_name = "FILE", help_heading = "Solver and run")]
    pub state_file: Option<PathBuf>,
    /// Per-sample weights: a text file with one non-negative weight per line, in the order of
    /// the training samples (LIBSVM's weights extension); C_i = C * w_i.
    #[arg(
        short = 'W',
        long = "weights",
        value_name = "FILE",
        help_heading = "Solver and run"
    )]
    pub weights: Option<PathBuf>,
    /// Print help.
    #[arg(long, action = ArgAction::Help, help_heading = "Output")]
    pub help: Option<bool>,
    /// Training data (LIBSVM format, `.gz` or `-` for stdin).
    #[arg(help_heading = "Arguments", display_order = 1)]
    pub train_file: PathBuf,
    /// Model file to write (default: TRAIN's file name + ".model").
    #[arg(help_heading = "Arguments", display_order = 2)]
    pub model_file: Option<PathBuf>,
}

/// `marginkit predict`.
#[derive(Debug, Args)]
pub struct PredictArgs {
    /// Output probability estimates: 1 yes, 0 no (the model must be trained with -b 1).
    #[arg(short = 'b', default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub probability: u8,
    /// Quiet.
    #[arg(short = 'q')]
    pub quiet: bool,
    /// Print one JSON object with the results on stdout.
    #[arg(long)]
    pub json: bool,
    /// Worker threads (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    #[command(flatten)]
    pub input: InputArgs,
    /// Test data (LIBSVM format, `.gz` or `-` for stdin).
    #[arg(help_heading = "Arguments", display_order = 1)]
    pub test_file: PathBuf,
    /// Model file (LIBSVM or LIBLINEAR format).
    #[arg(help_heading = "Arguments", display_order = 2)]
    pub model_file: PathBuf,
    /// Where to write one prediction per line (`-`: standard output; the summary then goes to
    /// stderr).
    #[arg(help_heading = "Arguments", display_order = 3)]
    pub output_file: PathBuf,
}

/// `marginkit scale`.
#[derive(Debug, Args)]
pub struct ScaleArgs {
    /// Lower bound of the scaled features.
    #[arg(short = 'l', default_value_t = -1.0, allow_negative_numbers = true)]
    pub lower: f64,
    /// Upper bound of the scaled features.
    #[arg(short = 'u', default_value_t = 1.0, allow_negative_numbers = true)]
    pub upper: f64,
    /// Scale the labels too, to [Y_LOWER, Y_UPPER].
    #[arg(short = 'y', num_args = 2, value_names = ["Y_LOWER", "Y_UPPER"], allow_negative_numbers = true)]
    pub y_range: Option<Vec<f64>>,
    /// Save the scaling parameters to this file (svm-scale's format, with exact numbers: `-r` on
    /// the same data reproduces the output byte for byte).
    #[arg(short = 's')]
    pub save: Option<PathBuf>,
    /// Restore the scaling parameters from this file (-l, -u and -y are then taken from it).
    #[arg(short = 'r', conflicts_with = "save")]
    pub restore: Option<PathBuf>,
    /// Write the scaled data here instead of stdout.
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    /// Data to scale (`.gz` or `-` for stdin).
    pub data_file: PathBuf,
}

/// `marginkit grid`.
#[derive(Debug, Args)]
#[command(
    disable_help_flag = true,
    after_help = "-h is LIBSVM's shrinking flag here; use --help for this text.\nWith -t 0 (linear) or -t 4 (precomputed) only C is searched.\nPrints `C gamma score` of the best point last (score: accuracy in %, or MSE for -s 3/4)."
)]
pub struct GridArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub input: InputArgs,
    /// log2(C) range: begin,end,step.
    #[arg(
        long = "log2c",
        default_value = "-5,15,2",
        allow_hyphen_values = true,
        help_heading = "Grid"
    )]
    pub log2c: String,
    /// log2(gamma) range: begin,end,step (ignored for -t 0 and -t 4).
    #[arg(
        long = "log2g",
        default_value = "3,-15,-2",
        allow_hyphen_values = true,
        help_heading = "Grid"
    )]
    pub log2g: String,
    /// Folds of the cross-validation.
    #[arg(short = 'v', default_value_t = 5, help_heading = "Grid")]
    pub folds: usize,
    /// Quiet: only the final line.
    #[arg(short = 'q', help_heading = "Output")]
    pub quiet: bool,
    /// Print one JSON object with every grid point on stdout.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
    /// Print help.
    #[arg(long, action = ArgAction::Help, help_heading = "Output")]
    pub help: Option<bool>,
    /// Training data.
    #[arg(help_heading = "Arguments", display_order = 1)]
    pub train_file: PathBuf,
}

/// `marginkit demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Print one JSON object with the results.
    #[arg(long)]
    pub json: bool,
    /// Worker threads (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
}

/// `-m`: a number of MB, or `auto` (resolved here, from /proc/meminfo).
fn parse_cache_mb(s: &str) -> Result<f64, String> {
    if s == "auto" {
        let b = marginkit::svm::params::auto_cache_bytes()
            .map_err(|e| format!("-m auto: cannot read the available memory: {e}"))?;
        return Ok(b as f64 / 1048576.0);
    }
    s.parse::<f64>()
        .map_err(|_| format!("expected a size in MB or 'auto', found '{s}'"))
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

/// Parses a `--NAME` seconds value into a [`std::time::Duration`]: it must be finite, > 0 and
/// representable (at most about 1.8e19 seconds); anything else is a CLI error, never a panic.
pub fn seconds_flag(name: &str, t: f64) -> crate::CliResult<std::time::Duration> {
    if !(t.is_finite() && t > 0.0) {
        return Err(crate::CliError(format!(
            "--{name} must be > 0 seconds, got {t}"
        )));
    }
    std::time::Duration::try_from_secs_f64(t).map_err(|_| {
        crate::CliError(format!(
            "--{name} {t} is too large (at most {} seconds; omit the flag for no limit)",
            u64::MAX
        ))
    })
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
