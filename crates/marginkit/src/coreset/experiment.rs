//! What the `coreset` command lines (in-process `marginkit coreset` and `marginkit-mpi`) share:
//! turning a data set into points, parsing graphs, the coverage
//! ratio against the exact (or best-known) radius, accuracies, the report ([`RunSummary`]: its
//! JSON object and text line), and the paper's Figures 1-2 as SVG.

use std::path::Path;

use super::bc::{dist2, meb_of, Pool};
use super::consensus::{ConsensusReport, CoreSetMsg, Graph};
use super::meb::{solve_simplex_capped, Start};
use super::space::{two_classes, FeatureKernel, PointSet, Problem};
use super::CoresetError;
use crate::data::Dataset;
use crate::error::DataError;
use crate::kernel::qmatrix::DenseQ;
use crate::plot::{stack_svg, Axis, LineChart, Scale};
use crate::solver::{smo, BoxQp, Equality, NoObserver, SolverSettings};
use crate::svm::SvmModel;

/// Largest number of points for which the reference radius is the exact MEB.
pub const EXACT_LIMIT: usize = 50_000;

/// The points of `data` for `problem` (SVM: two classes, the first in LIBSVM order is `+1`) and
/// the class labels (`[1, -1]` when there are none).
///
/// # Errors
/// [`CoresetError::Data`] for an SVM data set without exactly two classes.
pub fn points_for(data: &Dataset, problem: Problem) -> Result<(PointSet, [f64; 2]), CoresetError> {
    let all: Vec<usize> = (0..data.len()).collect();
    data.x.check_dense_rows("the dense points", data.len())?;
    match problem {
        Problem::L2Svm { .. } => {
            let labels = two_classes(data)?;
            Ok((PointSet::from_dataset(data, &all, Some(labels[0])), labels))
        }
        _ => Ok((PointSet::from_dataset(data, &all, None), [1.0, -1.0])),
    }
}

/// Parses `er:P`, `ring`, `grid`, `complete` or `edges:FILE` (one `FROM TO` pair of 0-based nodes
/// per line; `#` starts a comment).
///
/// # Errors
/// [`CoresetError::Edges`] naming the file, line and field; parameter errors.
pub fn parse_graph(s: &str) -> Result<Graph, CoresetError> {
    if let Some(p) = s.strip_prefix("er:") {
        let p: f64 = p
            .parse()
            .map_err(|_| CoresetError::Edges(format!("--graph er:P: {p:?} is not a number")))?;
        if !(p.is_finite() && (0.0..=1.0).contains(&p)) {
            return Err(super::space::param("er probability", p, "(0, 1]"));
        }
        return Ok(Graph::ErdosRenyi { p });
    }
    if let Some(file) = s.strip_prefix("edges:") {
        let text = std::fs::read_to_string(Path::new(file))
            .map_err(|e| CoresetError::Edges(format!("{file}: {e}")))?;
        let mut edges = Vec::new();
        for (ln, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() != 2 {
                return Err(CoresetError::Edges(format!(
                    "{file}:{}: expected two node numbers FROM TO, found {} fields",
                    ln + 1,
                    f.len()
                )));
            }
            let mut pair = [0usize; 2];
            for (k, name) in ["FROM", "TO"].iter().enumerate() {
                pair[k] = f[k].parse().map_err(|_| {
                    CoresetError::Edges(format!(
                        "{file}:{}: field {name} {:?} is not a node number",
                        ln + 1,
                        f[k]
                    ))
                })?;
            }
            edges.push((pair[0], pair[1]));
        }
        if edges.is_empty() {
            return Err(CoresetError::Edges(format!("{file}: no edges")));
        }
        return Ok(Graph::Edges(edges));
    }
    match s {
        "ring" => Ok(Graph::Ring),
        "grid" => Ok(Graph::Grid),
        "complete" => Ok(Graph::Complete),
        other => Err(CoresetError::Edges(format!(
            "--graph {other:?}: expected er:P, ring, grid, complete or edges:FILE"
        ))),
    }
}

/// Largest number of points for which [`exact_r2`] falls back to the SMO engine on a dense `Q`.
pub const SMO_LIMIT: usize = 4_000;

/// The exact MEB `r^2` of all points, or `None` when it is out of reach:
/// - MEB and SVDD: the active set ([`solve_simplex_capped`], kernel columns on demand, memory
///   `O(n |support|)`) while the support stays within 300 points, up to [`EXACT_LIMIT`] points;
/// - otherwise, up to [`SMO_LIMIT`] points, the simplex QP as a [`BoxQp`]
///   (`Q = 2 K~`, `p = -diag K~`, `1'a = 1`, `0 <= a <= 1`) solved by the SMO engine at tolerance
///   1e-9 (the SVM mappings, where every point is a support point); `Q` is stored in f32, so this
///   `r^2` is exact to about 1e-7 relative.
pub fn exact_r2(pts: &PointSet, kern: &FeatureKernel) -> Option<f64> {
    exact_solution(pts, kern).map(|(_, r2)| r2)
}

/// The exact MEB of all points as a set carrying every point with its optimal weight (for the
/// L2-SVM mapping: the exact 2-norm SVM, whose [`super::model::to_model`] is the full-data
/// classifier the core-set approximates), when [`exact_r2`] reaches it.
pub fn exact_set(pts: &PointSet, kern: &FeatureKernel) -> Option<CoreSetMsg> {
    let (x, r2) = exact_solution(pts, kern)?;
    let n = pts.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| pts.id(i));
    let mut points = PointSet::new(pts.dim());
    let mut weights = Vec::with_capacity(n);
    for &i in &order {
        points.push_from(pts, i);
        weights.push(x[i]);
    }
    let mut c2 = 0.0;
    for i in 0..n {
        if x[i] != 0.0 {
            for j in 0..n {
                if x[j] != 0.0 {
                    c2 += x[i] * x[j] * kern.eval(pts.get(i), pts.get(j));
                }
            }
        }
    }
    Some(CoreSetMsg {
        node: 0,
        ids: points.ids().to_vec(),
        points,
        weights,
        r2,
        c2,
    })
}

/// Weights and `r^2` of the exact MEB (see [`exact_r2`]).
fn exact_solution(pts: &PointSet, kern: &FeatureKernel) -> Option<(Vec<f64>, f64)> {
    let n = pts.len();
    if n > EXACT_LIMIT {
        return None;
    }
    let diag: Vec<f64> = (0..n).map(|i| kern.eval(pts.get(i), pts.get(i))).collect();
    // The SVM mappings make (almost) every point a support point: straight to SMO.
    let svm = matches!(
        kern.problem,
        Problem::L2Svm { .. } | Problem::OneClassL2 { .. }
    );
    if svm && n > SMO_LIMIT {
        return None;
    }
    let sol = solve_simplex_capped(
        &diag,
        |i, j| kern.eval(pts.get(i), pts.get(j)),
        Start::Farthest,
        if svm { 0 } else { 300 },
    );
    if sol.converged {
        return Some((sol.x, sol.r2));
    }
    if n > SMO_LIMIT {
        return None;
    }
    let mut q = vec![0.0; n * n];
    for i in 0..n {
        for j in i..n {
            let v = 2.0 * kern.eval(pts.get(i), pts.get(j));
            q[i * n + j] = v;
            q[j * n + i] = v;
        }
    }
    let mut qm = DenseQ::new(n, &q).ok()?;
    let p: Vec<f64> = diag.iter().map(|d| -d).collect();
    let y = vec![1i8; n];
    let upper = vec![1.0; n];
    let qp = BoxQp {
        p: &p,
        y: &y,
        upper: &upper,
        equality: Equality::Sum { delta: 1.0 },
        fixed: None,
    };
    let mut alpha = vec![1.0 / n as f64; n];
    let settings = SolverSettings {
        tol: 1e-9,
        ..SolverSettings::default()
    };
    let info = smo::solve(&mut qm, &qp, &mut alpha, &settings, &mut NoObserver).ok()?;
    // Recompute the objective in f64 from the solution.
    let mut quad = 0.0;
    for i in 0..n {
        if alpha[i] != 0.0 {
            let mut row = 0.0;
            for j in 0..n {
                row += q[i * n + j] * alpha[j];
            }
            quad += alpha[i] * row;
        }
    }
    let lin: f64 = diag.iter().zip(&alpha).map(|(d, a)| d * a).sum();
    (info.status == crate::solver::Status::Converged).then(|| (alpha, (lin - quad / 2.0).max(0.0)))
}

/// The reference radius `r*^2` for the coverage ratio: the exact one when [`exact_r2`] reaches it,
/// else the best known, `r^2` of the core-set found (a lower bound on `r*^2`, so the ratio is then
/// an upper bound: the Badoiu-Clarkson test `max |s - c|^2 <= (1+eps)^2 r(C)^2`). Returns
/// `(r*^2, exact?)`.
pub fn reference_r2(pts: &PointSet, kern: &FeatureKernel, found: &CoreSetMsg) -> (f64, bool) {
    match exact_r2(pts, kern) {
        Some(r2) => (r2.max(found.r2), true),
        None => (found.r2, false),
    }
}

/// `max_s |s - c(C)|^2 / r*^2` over all points.
pub fn coverage_ratio(pts: &PointSet, kern: &FeatureKernel, set: &CoreSetMsg, r_star2: f64) -> f64 {
    let mut pool = Pool::new(pts, None);
    let members: Vec<usize> = (0..set.points.len())
        .map(|i| pool.add(&set.points, i))
        .collect();
    let m = meb_of(&pool, kern, &members);
    let far = (0..pts.len())
        .map(|p| dist2(&pool, kern, &m, p))
        .fold(0.0, f64::max);
    far / r_star2
}

const PALETTE: [&str; 10] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];

/// The paper's Figures 1-2 from a recorded run: `r^2(C_i(t))` and `|c(C_i(t))|` per node per
/// round (round 0 is the initial set), one line per node (the legend names at most 10).
pub fn consensus_figures(rep: &ConsensusReport, title: &str) -> [LineChart; 2] {
    let mut fig1 = LineChart::new(
        &format!("{title}: r^2(C_i(t)) per node (Fig. 1)"),
        Axis {
            label: "round t".into(),
            scale: Scale::Linear,
        },
        Axis {
            label: "r^2".into(),
            scale: Scale::Linear,
        },
    );
    let mut fig2 = LineChart::new(
        &format!("{title}: |c(C_i(t))| per node (Fig. 2)"),
        Axis {
            label: "round t".into(),
            scale: Scale::Linear,
        },
        Axis {
            label: "centre norm".into(),
            scale: Scale::Linear,
        },
    );
    for (k, (node, h)) in rep.history.iter().enumerate() {
        let name = if k < 10 {
            format!("node {node}")
        } else {
            String::new()
        };
        let color = PALETTE[k % PALETTE.len()];
        fig1 = fig1.add(
            &name,
            color,
            h.iter().enumerate().map(|(t, v)| (t as f64, v.0)).collect(),
        );
        fig2 = fig2.add(
            &name,
            color,
            h.iter().enumerate().map(|(t, v)| (t as f64, v.1)).collect(),
        );
    }
    for f in [&mut fig1, &mut fig2] {
        f.width = 900.0;
        f.height = 420.0;
    }
    [fig1, fig2]
}

/// Both figures stacked in one SVG document.
pub fn consensus_svg(rep: &ConsensusReport, title: &str) -> String {
    stack_svg(&consensus_figures(rep, title))
}

/// Number of rows of `data` whose label `model` predicts.
///
/// # Errors
/// [`DataError`] when the data does not fit the model.
pub fn correct_count(model: &SvmModel, data: &Dataset) -> Result<usize, DataError> {
    let pred = model.predict(&data.x)?;
    Ok(pred.iter().zip(&data.y).filter(|(a, b)| a == b).count())
}

/// Accuracy of `model` on `data` in percent.
///
/// # Errors
/// As [`correct_count`].
pub fn accuracy(model: &SvmModel, data: &Dataset) -> Result<f64, DataError> {
    Ok(100.0 * correct_count(model, data)? as f64 / data.len().max(1) as f64)
}

/// What `marginkit coreset` and `marginkit-mpi` report (one JSON object with `--json`).
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    /// `meb`, `svdd`, `svm` or `oneclass`.
    pub problem: String,
    /// Nodes (or ranks).
    pub nodes: usize,
    /// Core-set size used: `min(ceil(1/eps), n)`.
    pub k: usize,
    /// Tolerance.
    pub eps: f64,
    /// Rounds run.
    pub rounds: u64,
    /// First round from which all nodes held the same set.
    pub consensus_round: Option<u64>,
    /// `local` or `global`.
    pub stop_rule: &'static str,
    /// The local rule's window (`None`: global rule, or never).
    pub window: Option<u64>,
    /// The window is proven for the schedule.
    pub window_proven: bool,
    /// The rule stopped the run (otherwise the round budget did).
    pub stopped: bool,
    /// The global quiescence check held at the end.
    pub quiescent: bool,
    /// First round after which it held.
    pub quiescent_round: Option<u64>,
    /// All nodes hold the same core-set.
    pub agreed: bool,
    /// Every node's `r^2` was non-decreasing.
    pub monotone: bool,
    /// `r^2` of the final core-set (node 0's).
    pub radius2: f64,
    /// Reference `r*^2`.
    pub reference_r2: f64,
    /// The reference is the exact MEB (otherwise the core-set's own radius).
    pub reference_exact: bool,
    /// `max_s |s - c|^2 / r*^2`.
    pub coverage_ratio: f64,
    /// Distinct core-set ids, sorted.
    pub core_set: Vec<u64>,
    /// The `k` ids with multiplicity.
    pub core_set_multiset: Vec<u64>,
    /// Ids of positive weight.
    pub support: Vec<u64>,
    /// Average bytes sent per node per round.
    pub bytes_per_node_round: f64,
    /// Bytes sent in total.
    pub bytes_total: u64,
    /// Wall time of the rounds.
    pub consensus_seconds: f64,
    /// Training accuracy in percent (svm).
    pub train_accuracy: Option<f64>,
    /// Test accuracy in percent (svm with test data).
    pub test_accuracy: Option<f64>,
    /// Wall time of the whole command (set by the caller at the end).
    pub total_seconds: f64,
}

impl RunSummary {
    /// The summary of run `rep` whose final set is `set`, with reference `r*^2` (`exact` or
    /// best-known) and coverage ratio `coverage`; accuracies and total time are left empty.
    pub fn new(
        problem: &str,
        eps: f64,
        rep: &ConsensusReport,
        set: &CoreSetMsg,
        reference: (f64, bool),
        coverage: f64,
        nodes: usize,
    ) -> Self {
        let mut core = set.points.ids().to_vec();
        core.sort_unstable();
        Self {
            problem: problem.to_string(),
            nodes,
            k: rep.k,
            eps,
            rounds: rep.rounds,
            consensus_round: rep.consensus_round,
            stop_rule: if rep.window.is_some() {
                "local"
            } else {
                "global"
            },
            window: rep.window.filter(|&w| w != u64::MAX),
            window_proven: rep.window_proven,
            stopped: rep.stopped,
            quiescent: rep.quiescent,
            quiescent_round: rep.quiescent_round,
            agreed: rep.agreed,
            monotone: rep.monotone,
            radius2: set.r2,
            reference_r2: reference.0,
            reference_exact: reference.1,
            coverage_ratio: coverage,
            core_set: core,
            core_set_multiset: set.ids.clone(),
            support: set.support(),
            bytes_per_node_round: rep.bytes_per_node_round,
            bytes_total: rep.bytes_sent,
            consensus_seconds: rep.seconds,
            train_accuracy: None,
            test_accuracy: None,
            total_seconds: 0.0,
        }
    }

    /// One JSON object (numbers in shortest round-trip form; non-finite values as `null`).
    pub fn to_json(&self) -> String {
        fn num(v: f64) -> String {
            if v.is_finite() {
                format!("{v:?}")
            } else {
                "null".into()
            }
        }
        fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
            v.map_or("null".into(), |x| x.to_string())
        }
        fn ids(v: &[u64]) -> String {
            let s: Vec<String> = v.iter().map(u64::to_string).collect();
            format!("[{}]", s.join(","))
        }
        let mut f: Vec<(&str, String)> = vec![
            ("problem", format!("{:?}", self.problem)),
            ("nodes", self.nodes.to_string()),
            ("k", self.k.to_string()),
            ("eps", num(self.eps)),
            ("rounds", self.rounds.to_string()),
            ("consensus_round", opt(self.consensus_round)),
            ("stop_rule", format!("{:?}", self.stop_rule)),
            ("window", opt(self.window)),
            ("window_proven", self.window_proven.to_string()),
            ("stopped", self.stopped.to_string()),
            ("quiescent", self.quiescent.to_string()),
            ("quiescent_round", opt(self.quiescent_round)),
            ("agreed", self.agreed.to_string()),
            ("monotone", self.monotone.to_string()),
            ("radius", num(self.radius2.sqrt())),
            ("radius2", num(self.radius2)),
            ("reference_radius", num(self.reference_r2.sqrt())),
            (
                "reference",
                if self.reference_exact {
                    "\"exact\"".into()
                } else {
                    "\"best-known (the core-set radius)\"".into()
                },
            ),
            ("coverage_ratio", num(self.coverage_ratio)),
            ("coverage_bound", num((1.0 + self.eps).powi(2))),
            ("core_set", ids(&self.core_set)),
            ("core_set_multiset", ids(&self.core_set_multiset)),
            ("support", ids(&self.support)),
            ("bytes_per_node_round", num(self.bytes_per_node_round)),
            ("bytes_total", self.bytes_total.to_string()),
            ("consensus_seconds", num(self.consensus_seconds)),
        ];
        if let Some(a) = self.train_accuracy {
            f.push(("train_accuracy", num(a)));
        }
        if let Some(a) = self.test_accuracy {
            f.push(("test_accuracy", num(a)));
        }
        f.push(("total_seconds", num(self.total_seconds)));
        let body: Vec<String> = f.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
        format!("{{{}}}", body.join(","))
    }

    /// The one-line human summary (plus a line of accuracies for `svm`).
    pub fn text(&self) -> String {
        let mut s = format!(
            "nodes {} rounds {} agreed {} stop {}{} radius {:.10e} coverage_ratio {:.6} (bound {:.4}, {} r*) k {} bytes/node/round {:.1} seconds {:.3}",
            self.nodes,
            self.rounds,
            self.agreed,
            self.stop_rule,
            match self.window {
                Some(w) => format!(
                    " (window {w}{})",
                    if self.window_proven { ", proven" } else { ", heuristic" }
                ),
                None => String::new(),
            },
            self.radius2.sqrt(),
            self.coverage_ratio,
            (1.0 + self.eps).powi(2),
            if self.reference_exact {
                "exact"
            } else {
                "best-known"
            },
            self.k,
            self.bytes_per_node_round,
            self.total_seconds
        );
        if let Some(v) = self.train_accuracy {
            s.push_str(&format!("\ntrain_accuracy {v:.4}%"));
            if let Some(t) = self.test_accuracy {
                s.push_str(&format!(" test_accuracy {t:.4}%"));
            }
        }
        s
    }
}
