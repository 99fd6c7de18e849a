//! `marginkit coreset meb|svdd|svm|oneclass DATA`: the minimum enclosing ball and its SVM
//! mappings by core-set consensus (Notarstefano, CDC 2015, Algorithm 1) over an in-process
//! network of nodes, each holding a contiguous shard of DATA.

use std::path::PathBuf;
use std::time::Instant;

use crate::common::progress::Progress;
use clap::{ArgAction, Args, ValueEnum};
use marginkit::coreset::consensus::{self, ConsensusData, Round};
use marginkit::coreset::quality::{coverage_ratio, reference_r2};
use marginkit::coreset::summary::{accuracy, consensus_svg, RunSummary};
use marginkit::coreset::{
    points_for, Activation, ConsensusParams, CoresetParams, Graph, Problem, StopRule,
};
use marginkit::data::write_output;
use marginkit::fit::Control;
use marginkit::svm::model_io::save_model;
use marginkit::svm::KernelParams;

use crate::common::input::read_data;
use crate::common::input::InputArgs;
use crate::common::{CliError, Exit, Outcome};

/// Which stopping rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Stop {
    /// Each node stops when its core-set has not changed for W rounds (W = 2 D + 1, D the
    /// graph's diameter; proven for static graphs with synchronous lossless rounds).
    Local,
    /// Stop at global quiescence (a diagnostic no node can check alone).
    Global,
}

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
#[command(
    disable_help_flag = true,
    after_help = "Stopping rule (the paper gives none). --stop local (default): a node stops once its \
core-set has not changed for W = 2D+1 rounds, D the flooding time of the schedule (the directed \
diameter of a static graph: ring, grid, complete, edges); the run ends when every node has stopped. \
On a static strongly connected graph with synchronous rounds, no --drop and no --delay, all nodes \
then hold the same core-set at a fixed point (proof in the library's coreset module docs). With \
er:P graphs, --async, --drop or --delay, D is the flooding time from round 0 of the seeded \
schedule: a heuristic (report keys window_proven, agreed). --stop global stops at global \
quiescence, a diagnostic evaluated every round anyway (keys quiescent, quiescent_round)."
)]
pub struct CoresetArgs {
    /// The problem.
    #[arg(value_enum)]
    pub problem: Kind,
    /// Training data (LIBSVM text, or CSV with --csv).
    pub data_file: PathBuf,
    #[command(flatten)]
    pub input: InputArgs,
    /// Tolerance eps in (0, 1): core-sets of ceil(1/eps) points, coverage within (1+eps)^2 r*^2.
    #[arg(long, default_value_t = CoresetParams::DEFAULT_EPS)]
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
    #[arg(long, default_value = ConsensusParams::DEFAULT_GRAPH)]
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
    #[arg(long, default_value_t = CoresetParams::DEFAULT_SEED)]
    pub seed: u64,
    /// Round budget.
    #[arg(long, default_value_t = ConsensusParams::DEFAULT_MAX_ROUNDS)]
    pub max_rounds: u64,
    /// Stopping rule: local (no change for W rounds) or global (quiescence diagnostic).
    #[arg(long, value_enum, default_value_t = Stop::Local)]
    pub stop: Stop,
    /// The local rule's window W (default 2 D + 1, D the graph's diameter / flooding time).
    #[arg(long)]
    pub window: Option<u64>,
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

/// Runs the subcommand.
pub fn run(a: CoresetArgs) -> Exit {
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
    let mut outputs: Vec<(&std::path::Path, &str)> = Vec::new();
    outputs.extend(a.model.as_deref().map(|p| (p, "--model")));
    outputs.extend(a.plot.as_deref().map(|p| (p, "--plot")));
    outputs.extend(a.trace.as_deref().map(|p| (p, "--trace")));
    crate::common::output::check_outputs(&outputs)?;
    let problem = match a.problem {
        Kind::Meb => Problem::Meb,
        Kind::Svdd => Problem::Svdd,
        Kind::Svm => Problem::L2Svm { c: a.cost },
        Kind::Oneclass => Problem::OneClassL2 { c: a.cost },
    };
    let kernel = KernelParams::from_libsvm(a.kernel_type, a.gamma, a.coef0, a.degree)?;
    if a.window.is_some() && a.stop == Stop::Global {
        return Err(CliError("--window is for --stop local".into()));
    }
    let params = ConsensusParams::new()
        .coreset(
            CoresetParams::new()
                .problem(problem)
                .kernel(kernel)
                .eps(a.eps)
                .seed(a.seed),
        )
        .graph(a.graph.parse::<Graph>()?)
        .activation(match a.async_p {
            Some(p) => Activation::Async { p },
            None => Activation::Sync,
        })
        .drop(a.drop)
        .max_delay(a.delay)
        .max_rounds(a.max_rounds)
        .record(a.plot.is_some() || a.trace.is_some())
        .stop(match a.stop {
            Stop::Local => StopRule::Local { window: a.window },
            Stop::Global => StopRule::Global,
        })
        .check()?;
    let data = read_data(&a.data_file, &a.input, false)?;
    let name = format!("{:?}", a.problem).to_lowercase();
    let (pts, labels) = points_for(&data, problem)?;
    let show = !a.quiet && !a.json;
    let mut progress = Progress::new(a.quiet, "coreset");
    let mut table: Vec<String> = Vec::new();
    let network = ConsensusData::InProcess {
        points: &pts,
        nodes: a.nodes,
    };
    let mut ctl = Control::default().on_part(|r: &Round| {
        let s = &r.summary;
        progress.set(&format!(
            "round {} r^2 min {:.6e} max {:.6e}",
            r.number, s.r2_min, s.r2_max
        ));
        if show {
            table.push(format!(
                "{:>6} {:>14.8e} {:>14.8e} {:>12.4e} {}",
                r.number,
                s.r2_min,
                s.r2_max,
                s.r2_max - s.r2_min,
                if s.fp_min == s.fp_max { "yes" } else { "no" }
            ));
        }
    });
    let fit = consensus::fit(&params, &network, &mut ctl);
    drop(ctl);
    progress.finish();
    let fit = fit?;
    let (rep, kern, final_set) = (&fit.report, &fit.model.kernel, &fit.model.set);
    let reference = reference_r2(&pts, kern, final_set);
    let cov = coverage_ratio(&pts, kern, final_set, reference.0);
    let mut out = RunSummary::new(&name, a.eps, rep, final_set, reference, cov, a.nodes);
    if problem != Problem::Meb {
        let model = fit.model.to_svm(labels)?;
        if a.problem == Kind::Svm {
            out.train_accuracy = Some(accuracy(&model, &data)?);
            if let Some(tp) = &a.test {
                let test = read_data(tp, &a.input, false)?;
                out.test_accuracy = Some(accuracy(&model, &test)?);
            }
        } else if a.test.is_some() {
            return Err(CliError("--test is for `coreset svm` only".into()));
        }
        if let Some(mp) = &a.model {
            if !rep.agreed {
                eprintln!(
                    "marginkit: warning: the nodes did not agree within {} rounds; {} holds the model of the last round",
                    rep.rounds,
                    mp.display()
                );
            }
            save_model(mp, &model).map_err(|e| CliError(format!("{}: {e}", mp.display())))?;
        }
    } else if a.model.is_some() || a.test.is_some() {
        return Err(CliError(
            "--model and --test need svdd, svm or oneclass (a ball of raw rows has no classifier)"
                .into(),
        ));
    }
    if let Some(pp) = &a.plot {
        let title = format!(
            "{}: {} nodes, {}, eps {}",
            crate::common::report::data_name(&a.data_file, "coreset"),
            a.nodes,
            a.graph,
            a.eps
        );
        let svg = consensus_svg(rep, &title);
        write_output(pp, |w| std::io::Write::write_all(w, svg.as_bytes()))
            .map_err(|e| CliError(format!("{}: {e}", pp.display())))?;
    }
    if let Some(tp) = &a.trace {
        write_output(tp, |w| {
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
    out.total_seconds = t0.elapsed().as_secs_f64();
    if a.json {
        println!("{}", out.to_json());
        return Ok(Outcome::Done);
    }
    if show {
        println!(" round       r2_min         r2_max      spread  agreed");
        for l in &table {
            println!("{l}");
        }
    }
    println!("{}", out.text());
    Ok(Outcome::Done)
}
