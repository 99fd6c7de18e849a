//! `marginkit coreset meb|svdd|svm|oneclass DATA`: the minimum enclosing ball and its SVM
//! mappings by core-set consensus (Notarstefano, CDC 2015, Algorithm 1) over an in-process
//! network of nodes, each holding a contiguous shard of DATA.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::{ArgAction, Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use marginkit::coreset::consensus::{run_in_process, Status};
use marginkit::coreset::experiment::{
    consensus_svg, coverage_ratio, parse_graph, points_for, reference_r2,
};
use marginkit::coreset::model::to_model;
use marginkit::coreset::{Activation, ConsensusParams, CoresetParams, FeatureKernel, Problem};
use marginkit::data::write_atomically;
use marginkit::solver::Status as SolveStatus;
use marginkit::svm::model_io::save_model_with_status;
use marginkit::{Dataset, KernelSpec};
use serde_json::{json, Value};

use crate::args::InputArgs;
use crate::input::read_data;
use crate::{CliError, CliResult};

/// Which problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Kind {
    /// Minimum enclosing ball of the rows (labels ignored).
    Meb,
    /// Hard-margin SVDD: the ball in the kernel's feature space (labels ignored).
    Svdd,
    /// 2-norm soft-margin SVM, two classes (core vector machine mapping).
    Svm,
    /// One-class L2-SVM (labels ignored).
    Oneclass,
}

/// `marginkit coreset`.
#[derive(Debug, Args)]
#[command(disable_help_flag = true)]
pub struct CoresetArgs {
    /// The problem.
    #[arg(value_enum)]
    pub problem: Kind,
    /// Training data (LIBSVM text, or CSV with --csv).
    pub data_file: PathBuf,
    #[command(flatten)]
    pub input: InputArgs,
    /// Tolerance eps in (0, 1): core-sets of ceil(1/eps) points, coverage within (1+eps)^2 r*^2.
    #[arg(long, default_value_t = 0.1)]
    pub eps: f64,
    /// kernel_type (svdd, svm, oneclass): 0 linear, 1 polynomial, 2 RBF, 3 sigmoid. The SVM
    /// mappings need a constant diagonal K(x,x) (RBF, or normalized rows).
    #[arg(short = 't', default_value_t = 2)]
    pub kernel_type: u8,
    /// gamma (default 1/num_features).
    #[arg(short = 'g')]
    pub gamma: Option<f64>,
    /// degree of the polynomial kernel.
    #[arg(short = 'd', default_value_t = 3)]
    pub degree: u32,
    /// coef0 of the polynomial and sigmoid kernels.
    #[arg(short = 'r', default_value_t = 0.0, allow_negative_numbers = true)]
    pub coef0: f64,
    /// C of the 2-norm SVMs (svm, oneclass).
    #[arg(short = 'c', default_value_t = 1.0, allow_negative_numbers = true)]
    pub cost: f64,
    /// Number of network nodes (the data is split into contiguous shards).
    #[arg(long, default_value_t = 10)]
    pub nodes: usize,
    /// Communication graph: er:P (a fresh directed Erdos-Renyi graph every round), ring, grid,
    /// complete, or edges:FILE (lines "FROM TO", 0-based nodes).
    #[arg(long, default_value = "er:0.1")]
    pub graph: String,
    /// Asynchronous activation: each node runs in a round with this probability.
    #[arg(long = "async", num_args = 0..=1, default_missing_value = "0.5")]
    pub async_p: Option<f64>,
    /// Probability that a message is lost.
    #[arg(long, default_value_t = 0.0)]
    pub drop: f64,
    /// Messages are delayed by 0..=D rounds (uniform).
    #[arg(long, default_value_t = 0)]
    pub delay: u32,
    /// Seed of the graphs, losses, delays, activations and initial sets.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Round budget.
    #[arg(long, default_value_t = 10_000)]
    pub max_rounds: u64,
    /// Test data (svm): test accuracy.
    #[arg(long)]
    pub test: Option<PathBuf>,
    /// Write the model (svdd, svm, oneclass) in LIBSVM's format; `marginkit predict` reads it.
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Write the paper's Figures 1-2 (r^2 and centre norm per node per round) as SVG.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Write r^2 and the centre norm per node per round as CSV (node,round,r2,centre_norm).
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// Quiet: no progress and no per-round table.
    #[arg(short = 'q')]
    pub quiet: bool,
    /// Print help.
    #[arg(long, action = ArgAction::Help)]
    pub help: Option<bool>,
}

/// The kernel of `-t -g -d -r` for data with `n_features` columns.
///
/// # Errors
/// An unknown kernel type.
pub fn kernel_of(
    t: u8,
    gamma: Option<f64>,
    degree: u32,
    coef0: f64,
    n_features: usize,
) -> CliResult<KernelSpec> {
    let gamma = gamma.unwrap_or(1.0 / n_features.max(1) as f64);
    Ok(match t {
        0 => KernelSpec::Linear,
        1 => KernelSpec::Poly {
            gamma,
            coef0,
            degree,
        },
        2 => KernelSpec::Rbf { gamma },
        3 => KernelSpec::Sigmoid { gamma, coef0 },
        4 => {
            return Err(CliError(
                "-t 4: a precomputed kernel cannot be used by core-sets (they need K between any two points)".into(),
            ))
        }
        other => return Err(CliError(format!("-t {other}: expected 0, 1, 2 or 3"))),
    })
}

fn problem_of(kind: Kind, c: f64) -> Problem {
    match kind {
        Kind::Meb => Problem::Meb,
        Kind::Svdd => Problem::Svdd,
        Kind::Svm => Problem::L2Svm { c },
        Kind::Oneclass => Problem::OneClassL2 { c },
    }
}

fn accuracy(model: &marginkit::svm::SvmModel, data: &Dataset) -> CliResult<f64> {
    let pred = model.predict(&data.x)?;
    let ok = pred.iter().zip(&data.y).filter(|(a, b)| a == b).count();
    Ok(100.0 * ok as f64 / data.len().max(1) as f64)
}

/// Runs the subcommand.
pub fn run(a: CoresetArgs) -> CliResult {
    let t0 = Instant::now();
    // Flag combinations that cannot be honoured fail before the run, not after it.
    if a.problem == Kind::Meb && (a.model.is_some() || a.test.is_some()) {
        return Err(CliError(
            "--model and --test need svdd, svm or oneclass (a ball of raw rows has no classifier)"
                .into(),
        ));
    }
    if a.test.is_some() && a.problem != Kind::Svm && a.problem != Kind::Meb {
        return Err(CliError("--test is for `coreset svm` only".into()));
    }
    let data = read_data(&a.data_file, &a.input, false)?;
    let kernel = kernel_of(a.kernel_type, a.gamma, a.degree, a.coef0, data.n_features())?;
    let problem = problem_of(a.problem, a.cost);
    let kern = FeatureKernel::new(problem, kernel)?;
    let (pts, labels) = points_for(&data, problem)?;
    let params = ConsensusParams {
        coreset: CoresetParams {
            eps: a.eps,
            seed: a.seed,
            ..CoresetParams::default()
        },
        graph: parse_graph(&a.graph)?,
        activation: match a.async_p {
            Some(p) => Activation::Async { p },
            None => Activation::Sync,
        },
        drop: a.drop,
        max_delay: a.delay,
        max_rounds: a.max_rounds,
        record: a.plot.is_some() || a.trace.is_some(),
    };
    params.coreset.check()?;
    let show = !a.quiet && !a.json;
    let bar = (show && std::io::stderr().is_terminal()).then(|| {
        let b = ProgressBar::new_spinner();
        b.set_style(
            ProgressStyle::with_template("{spinner} {elapsed} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        b.enable_steady_tick(Duration::from_millis(120));
        b
    });
    let mut table: Vec<String> = Vec::new();
    let rep = run_in_process(&pts, &kern, a.nodes, &params, &mut |t, s: &Status| {
        if let Some(b) = &bar {
            b.set_message(format!(
                "round {} r^2 min {:.6e} max {:.6e}",
                t + 1,
                s.r2_min,
                s.r2_max
            ));
        }
        if show {
            table.push(format!(
                "{:>6} {:>14.8e} {:>14.8e} {:>12.4e} {}",
                t + 1,
                s.r2_min,
                s.r2_max,
                s.r2_max - s.r2_min,
                if s.fp_min == s.fp_max { "yes" } else { "no" }
            ));
        }
    })?;
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let (_, final_set) = rep
        .states
        .first()
        .ok_or_else(|| CliError("no nodes".into()))?;
    let (r_star2, exact) = reference_r2(&pts, &kern, final_set);
    let cov = coverage_ratio(&pts, &kern, final_set, r_star2);
    let mut core: Vec<u64> = final_set.points.ids().to_vec();
    core.sort_unstable();
    let mut out = json!({
        "problem": format!("{:?}", a.problem).to_lowercase(),
        "nodes": a.nodes,
        "k": params.coreset.k(),
        "eps": a.eps,
        "rounds": rep.rounds,
        "consensus_round": rep.consensus_round,
        "quiescent": rep.quiescent,
        "agreed": rep.agreed,
        "monotone": rep.monotone,
        "radius": final_set.r2.sqrt(),
        "radius2": final_set.r2,
        "reference_radius": r_star2.sqrt(),
        "reference": if exact { "exact" } else { "best-known (the core-set radius)" },
        "coverage_ratio": cov,
        "coverage_bound": (1.0 + a.eps).powi(2),
        "core_set": core,
        "core_set_multiset": final_set.ids,
        "support": final_set.support(),
        "bytes_per_node_round": rep.bytes_per_node_round,
        "bytes_total": rep.bytes_sent,
        "consensus_seconds": rep.seconds,
    });
    if problem != Problem::Meb {
        let model = to_model(final_set, &kern, labels)?;
        if a.problem == Kind::Svm {
            out["train_accuracy"] = json!(accuracy(&model, &data)?);
            if let Some(tp) = &a.test {
                let test = read_data(tp, &a.input, false)?;
                out["test_accuracy"] = json!(accuracy(&model, &test)?);
            }
        } else if a.test.is_some() {
            return Err(CliError("--test is for `coreset svm` only".into()));
        }
        if let Some(mp) = &a.model {
            // A model from sets that never agreed is flagged in its header (and warned about).
            let status = if rep.agreed {
                SolveStatus::Converged
            } else {
                eprintln!(
                    "marginkit: warning: the nodes did not agree within {} rounds; {} is flagged max_iterations",
                    rep.rounds,
                    mp.display()
                );
                SolveStatus::MaxIterations
            };
            save_model_with_status(mp, &model, status)
                .map_err(|e| CliError(format!("{}: {e}", mp.display())))?;
        }
    } else if a.model.is_some() || a.test.is_some() {
        return Err(CliError(
            "--model and --test need svdd, svm or oneclass (a ball of raw rows has no classifier)"
                .into(),
        ));
    }
    if let Some(pp) = &a.plot {
        let title = format!("{} nodes, {}, eps {}", a.nodes, a.graph, a.eps);
        let svg = consensus_svg(&rep, &title);
        write_atomically(pp, |w| std::io::Write::write_all(w, svg.as_bytes()))
            .map_err(|e| CliError(format!("{}: {e}", pp.display())))?;
    }
    if let Some(tp) = &a.trace {
        write_atomically(tp, |w| {
            use std::io::Write;
            writeln!(w, "node,round,r2,centre_norm")?;
            for (node, h) in &rep.history {
                for (t, (r2, c)) in h.iter().enumerate() {
                    writeln!(w, "{node},{t},{r2:e},{c:e}")?;
                }
            }
            Ok(())
        })
        .map_err(|e| CliError(format!("{}: {e}", tp.display())))?;
    }
    out["total_seconds"] = json!(t0.elapsed().as_secs_f64());
    if a.json {
        println!("{out}");
        return Ok(());
    }
    if show {
        println!(" round       r2_min         r2_max      spread  agreed");
        for l in &table {
            println!("{l}");
        }
    }
    println!(
        "rounds {} agreed {} radius {:.10e} coverage_ratio {:.6} (bound {:.4}, {} r*) k {} bytes/node/round {:.1} seconds {:.3}",
        rep.rounds,
        rep.agreed,
        final_set.r2.sqrt(),
        cov,
        (1.0 + a.eps).powi(2),
        if exact { "exact" } else { "best-known" },
        params.coreset.k(),
        rep.bytes_per_node_round,
        t0.elapsed().as_secs_f64()
    );
    if let Some(v) = out.get("train_accuracy").and_then(Value::as_f64) {
        print!("train_accuracy {v:.4}%");
        if let Some(t) = out.get("test_accuracy").and_then(Value::as_f64) {
            print!(" test_accuracy {t:.4}%");
        }
        println!();
    }
    Ok(())
}
