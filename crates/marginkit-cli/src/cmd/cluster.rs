//! `marginkit cluster odmc|kmeans DATA`: optimal margin distribution clustering (Zhang & Zhou,
//! AAAI 2018) and the k-means baseline. Writes one cluster label (0..k-1) per line; when DATA
//! carries at least two distinct labels, prints the clustering accuracy and the Rand index.

use std::io::Write;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::common::progress::Progress;
use clap::{Args, Subcommand};
use marginkit::cluster::kmeans::{self, KMeansParams};
use marginkit::cluster::metrics::{clustering_accuracy, rand_index};
use marginkit::cluster::Points;
use marginkit::data::write_output;
use marginkit::fit::Control;
use marginkit::odm::odmc::{fit, OdmcData, OdmcKernel, OdmcParams, Readout, RoundStats};
use marginkit::odm::pool::PoolSpec;
use marginkit::plot::{stack_svg, Axis, LineChart, Scale};
use marginkit::solver::{IterStats, Observer, Status};
use serde_json::{json, Value};

use crate::common::input::read_data;
use crate::common::input::InputArgs;
use crate::common::report::{self, choice};
use crate::common::run::init_threads;
use crate::common::{CliError, CliResult, Exit, Outcome};

/// `marginkit cluster`.
#[derive(Debug, Args)]
pub struct ClusterArgs {
    /// The method.
    #[command(subcommand)]
    pub method: Method,
}

/// Clustering methods.
#[derive(Debug, Subcommand)]
pub enum Method {
    /// Optimal margin distribution clustering (stochastic mirror descent over a generated
    /// candidate pool with label generation; k > 2 by recursive bisection).
    Odmc(OdmcArgs),
    /// k-means with k-means++ seeding (the baseline).
    Kmeans(KmeansArgs),
}

/// Options shared by both methods.
#[derive(Debug, Args)]
pub struct CommonArgs {
    /// Number of clusters.
    #[arg(short = 'k', default_value_t = 2)]
    pub k: usize,
    /// Seed of every random choice (same seed, same clusters).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Where to write one cluster label per line (default: DATA's file name + ".clusters" in
    /// the current directory; `-` for standard output).
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    /// Worker threads (default: all cores); results do not depend on it.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Quiet: no progress, no summary lines.
    #[arg(short = 'q')]
    pub quiet: bool,
    /// Print one JSON object on stdout (keys: accuracy, rand_index when DATA has labels,
    /// iterations, total_seconds, cluster_sizes, ...).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub input: InputArgs,
    /// Data (LIBSVM format or CSV); its labels, if they take at least two values, are used only
    /// to score the clustering.
    pub data_file: PathBuf,
}

/// `marginkit cluster odmc`.
#[derive(Debug, Args)]
#[command(
    after_help = "Features are standardized (centred, unit variance). Gaussian kernel: exp(-|u-v|^2 / (2 sigma^2)),\n\
                  sigma = SIGMA * sqrt(mean squared distance between points) (the paper's grid: 0.25, 0.5, 1, 2, 4).\n\
                  Example: marginkit cluster odmc heart_scale --kernel gaussian --sigma 1 --lambda 10 --json"
)]
pub struct OdmcArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Kernel: linear or gaussian.
    #[arg(long, value_enum, default_value_t = OdmcKernelArg::Linear)]
    pub kernel: OdmcKernelArg,
    /// Gaussian width multiplier of sqrt(mean squared distance).
    #[arg(long, default_value_t = 1.0)]
    pub sigma: f64,
    /// ODM lambda (the paper's grid: 1, 10, 100, 1000).
    #[arg(long, default_value_t = OdmcParams::DEFAULT_LAMBDA)]
    pub lambda: f64,
    /// ODM nu (0.2 .. 0.8 in the paper).
    #[arg(long, default_value_t = OdmcParams::DEFAULT_NU)]
    pub nu: f64,
    /// ODM theta in [0, 1) (0.2 .. 0.8 in the paper).
    #[arg(long, default_value_t = OdmcParams::DEFAULT_THETA)]
    pub theta: f64,
    /// Balance |e'y| <= beta * n as a fraction of the points (paper: 0.03 balanced, 0.3 imbalanced).
    #[arg(long, default_value_t = OdmcParams::DEFAULT_BETA)]
    pub beta: f64,
    /// Stochastic mirror-descent iterations per round.
    #[arg(long, default_value_t = OdmcParams::DEFAULT_ITERATIONS)]
    pub iterations: usize,
    /// Label-generation rounds at most.
    #[arg(long, default_value_t = OdmcParams::DEFAULT_MAX_ROUNDS)]
    pub rounds: usize,
    /// Relative duality-gap tolerance.
    #[arg(long, default_value_t = OdmcParams::DEFAULT_TOL)]
    pub tol: f64,
    /// Readout: decision (default; the mixture classifier cut at the widest admissible gap),
    /// sign (the paper's sign(sum mu_k y_k)), heaviest, min-g.
    #[arg(long, value_enum, default_value_t = ReadoutArg::Decision)]
    pub readout: ReadoutArg,
    /// Candidate generators: k-means runs, principal components, random projections.
    #[arg(long, value_delimiter = ',', num_args = 3, default_values_t = [PoolSpec::DEFAULT.kmeans, PoolSpec::DEFAULT.components, PoolSpec::DEFAULT.random])]
    pub pool: Vec<usize>,
    /// Write an SVG plot of the duality-gap estimate per round.
    #[arg(long)]
    pub plot: Option<PathBuf>,
}

/// `marginkit cluster kmeans`.
#[derive(Debug, Args)]
#[command(
    after_help = "Features are standardized (centred, unit variance) as for odmc, unless --raw."
)]
pub struct KmeansArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Seeded k-means++ restarts (the lowest inertia wins); at least 1.
    #[arg(long, default_value_t = KMeansParams::DEFAULT_N_INIT)]
    pub n_init: usize,
    /// Lloyd iterations per restart at most; at least 1.
    #[arg(long, default_value_t = KMeansParams::DEFAULT_MAX_ITER)]
    pub max_iter: usize,
    /// Cluster the raw features (no standardization).
    #[arg(long)]
    pub raw: bool,
    /// Write an SVG plot of the inertia after each Lloyd iteration of the winning restart.
    #[arg(long)]
    pub plot: Option<PathBuf>,
}

/// k-means' Lloyd iterations on the command's progress line (its solver report counts the
/// points that changed cluster).
struct LloydProgress(Progress);

impl Observer for LloydProgress {
    fn on_iter(&mut self, s: &IterStats) -> ControlFlow<()> {
        self.0.set(&format!(
            "Lloyd iteration {}: {} points changed cluster",
            s.iterations, s.max_violation
        ));
        ControlFlow::Continue(())
    }
}

/// Runs `marginkit cluster`.
pub fn run(a: ClusterArgs) -> Exit {
    match a.method {
        Method::Odmc(o) => run_odmc(o),
        Method::Kmeans(k) => run_kmeans(k),
    }
}

/// A summary line through the shared reporter ([`report::say`]): nothing with `-q`; standard
/// error when standard output carries the JSON object or the labels (`-o -`).
fn say(c: &CommonArgs, text: &str) {
    let stdout_taken = c.json || c.output.as_deref() == Some(Path::new("-"));
    report::say(stdout_taken, c.quiet, text);
}

fn load(c: &CommonArgs) -> CliResult<(Points, Option<Vec<f64>>)> {
    if c.json && c.output.as_deref() == Some(Path::new("-")) {
        return Err(CliError(
            "--json and -o - would both write to standard output; give -o a file".into(),
        ));
    }
    init_threads(c.threads)?;
    let labels = output_path(c);
    crate::common::output::check_outputs(&[(&labels, "-o")])?;
    let data = read_data(&c.data_file, &c.input, false)?;
    if data.is_empty() {
        return Err(CliError(format!("{}: no data", c.data_file.display())));
    }
    let x = Points::from_features(&data.x)?;
    let first = data.y[0];
    let labelled = data.y.iter().any(|&v| v != first);
    Ok((x, labelled.then_some(data.y)))
}

fn output_path(c: &CommonArgs) -> PathBuf {
    c.output.clone().unwrap_or_else(|| {
        let name = c
            .data_file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .filter(|n| n != "-")
            .unwrap_or_else(|| "stdin".into());
        PathBuf::from(format!("{name}.clusters"))
    })
}

fn write_labels(c: &CommonArgs, labels: &[usize]) -> CliResult<PathBuf> {
    let path = output_path(c);
    let body = |w: &mut dyn Write| -> std::io::Result<()> {
        for l in labels {
            writeln!(w, "{l}")?;
        }
        Ok(())
    };
    if path == Path::new("-") {
        let out = std::io::stdout();
        let mut lock = out.lock();
        body(&mut lock).map_err(|e| CliError(format!("standard output: {e}")))?;
    } else {
        write_output(&path, |w| body(w))
            .map_err(|e| CliError(format!("{}: {e}", path.display())))?;
    }
    Ok(path)
}

/// What every clustering method reports: its name, the cluster of every point, the cluster
/// sizes, the iterations and the seconds it took.
struct Clustering<'a> {
    method: &'a str,
    labels: &'a [usize],
    sizes: &'a [usize],
    iterations: u64,
    seconds: f64,
}

/// Writes the labels, prints the metrics lines (against `truth` when given) and the JSON object
/// (the common fields and the method's `extra`).
fn finish(c: &CommonArgs, run: Clustering<'_>, truth: Option<&[f64]>, extra: Value) -> Exit {
    let Clustering {
        method,
        labels,
        sizes,
        iterations,
        seconds,
    } = run;
    let path = write_labels(c, labels)?;
    let mut out = json!({
        "method": method,
        "k": c.k,
        "n": labels.len(),
        "iterations": iterations,
        "total_seconds": seconds,
        "cluster_sizes": sizes,
        "output": path.display().to_string(),
        "seed": c.seed,
    });
    if let Some(t) = truth {
        let acc = clustering_accuracy(labels, t);
        let ri = rand_index(labels, t);
        say(
            c,
            &format!(
                "Acc = {:.4}% (best cluster-to-class matching)\nRI = {:.4}",
                100.0 * acc,
                ri
            ),
        );
        out["accuracy"] = json!(acc);
        out["rand_index"] = json!(ri);
    }
    say(
        c,
        &format!("cluster sizes {sizes:?}, {iterations} iterations, {seconds:.3} s"),
    );
    if let (Value::Object(o), Value::Object(e)) = (&mut out, extra) {
        o.extend(e);
    }
    if c.json {
        println!("{out}");
    }
    Ok(Outcome::Done)
}

/// A number for `--json`; null when it is not finite.
fn finite(v: f64) -> Value {
    if v.is_finite() {
        json!(v)
    } else {
        Value::Null
    }
}

/// An ODMC round on the command's progress line.
fn show_round(progress: &mut Progress, s: &RoundStats) {
    progress.set(&format!(
        "split {} round {} iter {} gap {:.3e} (relative {:.2e}) pool {}",
        s.split, s.round, s.iterations, s.gap, s.relative_gap, s.pool
    ));
}

fn run_odmc(a: OdmcArgs) -> Exit {
    let c = &a.common;
    if let Some(p) = &a.plot {
        crate::common::output::check_outputs(&[(p, "--plot")])?;
    }
    let kernel = match a.kernel {
        OdmcKernelArg::Gaussian => OdmcKernel::Gaussian {
            sigma_scale: a.sigma,
        },
        OdmcKernelArg::Linear => OdmcKernel::Linear,
    };
    let readout = match a.readout {
        ReadoutArg::Decision => Readout::Decision,
        ReadoutArg::Sign => Readout::Sign,
        ReadoutArg::Heaviest => Readout::Heaviest,
        ReadoutArg::MinG => Readout::MinG,
    };
    let params = OdmcParams::new()
        .k(c.k)
        .lambda(a.lambda)
        .nu(a.nu)
        .theta(a.theta)
        .kernel(kernel)
        .beta(a.beta)
        .iterations(a.iterations)
        .max_rounds(a.rounds)
        .tol(a.tol)
        .pool(PoolSpec {
            kmeans: a.pool[0],
            components: a.pool[1],
            random: a.pool[2],
        })
        .readout(readout)
        .seed(c.seed)
        .check()?;
    let (x, truth) = load(c)?;
    let t0 = Instant::now();
    let mut progress = Progress::new(c.quiet, "cluster odmc");
    let fit = fit(
        &params,
        &OdmcData::Points(&x),
        &mut Control::default().on_part(|s: &RoundStats| show_round(&mut progress, s)),
    )
    .map_err(|e| CliError(format!("{}: {e}", c.data_file.display())))?;
    drop(progress);
    let (m, r) = (fit.model, fit.report);
    let seconds = t0.elapsed().as_secs_f64();
    // Each bisection has its own status and gap: name the ones that stopped early.
    for b in &r.bisections {
        if b.status != Status::Converged {
            eprintln!(
                "marginkit: warning: ODMC bisection {} of {} ({} points into {} clusters) stopped \
                 before the gap tolerance was met ({}, relative gap {:.3e} > --tol {}); raise \
                 --rounds or --iterations",
                b.split + 1,
                r.bisections.len(),
                b.points,
                b.clusters,
                b.status.as_str(),
                b.relative_gap,
                a.tol
            );
        }
    }
    for b in &r.bisections {
        say(
            c,
            &format!(
                "bisection {}: {} points into {} clusters, {} rounds, {}, gap {:.3e} (relative {:.3e})",
                b.split + 1,
                b.points,
                b.clusters,
                b.rounds,
                b.status.as_str(),
                b.gap,
                b.relative_gap
            ),
        );
    }
    if let Some(p) = &a.plot {
        let title = crate::common::report::data_name(&c.data_file, "ODMC");
        let mut chart = LineChart::new(
            &format!("{title}: ODMC relative duality-gap estimate after each round"),
            Axis {
                label: "SMD iterations".into(),
                scale: Scale::Linear,
            },
            Axis {
                label: "gap / |max_alpha phi|".into(),
                scale: Scale::Log10,
            },
        );
        // One curve per bisection (k > 2); "(limit)" marks one that stopped before the
        // tolerance.
        const COLORS: [&str; 6] = [
            "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
        ];
        for (k, b) in r.bisections.iter().enumerate() {
            let pts: Vec<(f64, f64)> = r
                .history
                .iter()
                .filter(|h| h.split == b.split)
                .map(|h| (h.iterations as f64, h.relative_gap))
                .collect();
            let name = if r.bisections.len() == 1 {
                "relative gap".to_string()
            } else {
                let end = match b.status {
                    Status::Converged => "",
                    Status::Interrupted => " (stopped)",
                    _ => " (limit)",
                };
                format!("bisection {}{end}", b.split + 1)
            };
            chart = chart.add(&name, COLORS[k % COLORS.len()], pts);
        }
        let svg = stack_svg(&[chart]);
        write_output(p, |w| w.write_all(svg.as_bytes()))
            .map_err(|e| CliError(format!("{}: {e}", p.display())))?;
    }
    let last = r.history.last();
    // The top-level gap is the worst bisection's: below the tolerance only when every
    // bisection's is.
    let worst = r
        .bisections
        .iter()
        .max_by(|x, y| x.relative_gap.total_cmp(&y.relative_gap));
    let bisections: Vec<Value> = r
        .bisections
        .iter()
        .map(|b| {
            json!({
                "split": b.split,
                "points": b.points,
                "clusters": b.clusters,
                "rounds": b.rounds,
                "status": b.status.as_str(),
                "gap": finite(b.gap),
                "relative_gap": finite(b.relative_gap),
            })
        })
        .collect();
    let smd: f64 = r.history.iter().map(|h| h.smd_seconds).sum();
    let extra = json!({
        "kernel": choice(&a.kernel),
        "sigma": a.sigma,
        "lambda": a.lambda,
        "nu": a.nu,
        "theta": a.theta,
        "beta": a.beta,
        "readout": choice(&a.readout),
        "rounds": r.rounds,
        "status": r.status.as_str(),
        "converged": r.status == Status::Converged,
        "gap": worst.map_or(Value::Null, |b| finite(b.gap)),
        "relative_gap": worst.map_or(Value::Null, |b| finite(b.relative_gap)),
        "bisections": bisections,
        "pool": last.map(|h| h.pool),
        "smd_seconds": smd,
        "seconds_per_iteration": smd / (r.iterations.max(1) as f64),
    });
    let run = Clustering {
        method: "odmc",
        labels: &m.labels,
        sizes: &m.cluster_sizes,
        iterations: r.iterations,
        seconds,
    };
    finish(c, run, truth.as_deref(), extra)
}

fn run_kmeans(a: KmeansArgs) -> Exit {
    let c = &a.common;
    if let Some(p) = &a.plot {
        crate::common::output::check_outputs(&[(p, "--plot")])?;
    }
    let (x, truth) = load(c)?;
    if c.k < 2 || c.k > x.n {
        return Err(CliError(format!(
            "{}: k = {} clusters cannot be formed from {} points (need 2 <= k <= n)",
            c.data_file.display(),
            c.k,
            x.n
        )));
    }
    if a.n_init == 0 || a.max_iter == 0 {
        return Err(CliError(format!(
            "--n-init and --max-iter must be >= 1, got --n-init {} --max-iter {}",
            a.n_init, a.max_iter
        )));
    }
    let t0 = Instant::now();
    let pts = if a.raw {
        x
    } else {
        x.standardized()
            .map_err(|e| CliError(format!("{}: {e}", c.data_file.display())))?
    };
    let p = KMeansParams::new(c.k)
        .max_iter(a.max_iter)
        .n_init(a.n_init)
        .seed(c.seed)
        .check()?;
    let mut progress = LloydProgress(Progress::new(c.quiet, "cluster kmeans"));
    let fit = kmeans::fit(&p, &pts, &mut Control::new(&mut progress))
        .map_err(|e| CliError(format!("{}: {e}", c.data_file.display())))?;
    drop(progress);
    let (r, report) = (fit.model, fit.report);
    let seconds = t0.elapsed().as_secs_f64();
    if let Some(plot) = &a.plot {
        let title = crate::common::report::data_name(&c.data_file, "k-means");
        let pts = (1..)
            .zip(&report.inertia_trace)
            .map(|(i, &v)| (f64::from(i), v))
            .collect();
        let chart = LineChart::new(
            &format!("{title}: k-means inertia (best of {} restarts)", p.n_init()),
            Axis {
                label: "Lloyd iteration".into(),
                scale: Scale::Linear,
            },
            Axis {
                label: "sum of squared distances to the centres".into(),
                scale: Scale::Linear,
            },
        )
        .add("inertia", "#1f77b4", pts);
        let svg = stack_svg(&[chart]);
        write_output(plot, |w| w.write_all(svg.as_bytes()))
            .map_err(|e| CliError(format!("{}: {e}", plot.display())))?;
    }
    let mut sizes = vec![0usize; c.k];
    for &l in &r.labels {
        sizes[l] += 1;
    }
    let empty = sizes.iter().filter(|&&s| s == 0).count();
    if empty > 0 {
        eprintln!(
            "marginkit: warning: {empty} of the k = {} clusters are empty: the data has fewer than k distinct points",
            c.k
        );
    }
    let run = Clustering {
        method: "kmeans",
        labels: &r.labels,
        sizes: &sizes,
        iterations: report.total_iterations as u64,
        seconds,
    };
    let extra =
        json!({ "inertia": r.inertia, "converged": report.converged, "n_init": p.n_init() });
    finish(c, run, truth.as_deref(), extra)
}

/// `--kernel` of `cluster odmc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OdmcKernelArg {
    /// Linear kernel.
    Linear,
    /// Gaussian kernel of width --sigma times sqrt(mean squared distance).
    Gaussian,
}

/// `--readout` of `cluster odmc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReadoutArg {
    /// The mixture classifier cut at the widest admissible gap.
    Decision,
    /// The paper's sign(sum mu_k y_k).
    Sign,
    /// The heaviest candidate labelling.
    Heaviest,
    /// The labelling of least g.
    MinG,
}
