//! What the `coreset` command lines (in-process and MPI) share: turning a data set into points
//! and a problem kernel, parsing graphs, the coverage ratio against the exact (or best-known)
//! radius, and the paper's Figures 1-2 as SVG.

use std::path::Path;

use super::bc::{dist2, meb_of, Pool};
use super::consensus::{ConsensusReport, CoreSetMsg, Graph};
use super::meb::{solve_simplex_capped, Start};
use super::space::{two_classes, FeatureKernel, PointSet, Problem};
use super::CoresetError;
use crate::data::Dataset;
use crate::kernel::qmatrix::DenseQ;
use crate::plot::{stack_svg, Axis, LineChart, Scale};
use crate::solver::{smo, BoxQp, Equality, NoObserver, SolverSettings};

/// Largest number of points for which the reference radius is the exact MEB.
pub const EXACT_LIMIT: usize = 50_000;

/// The points of `data` for `problem` (SVM: two classes, the first in LIBSVM order is `+1`) and
/// the class labels (`[1, -1]` when there are none).
///
/// # Errors
/// [`CoresetError::Data`] for an SVM data set without exactly two classes.
pub fn points_for(data: &Dataset, problem: Problem) -> Result<(PointSet, [f64; 2]), CoresetError> {
    let all: Vec<usize> = (0..data.len()).collect();
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
        return Some(sol.r2);
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
    (info.status == crate::solver::Status::Converged).then_some((lin - quad / 2.0).max(0.0))
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
