//! The report of a core-set consensus run as the command lines print it (`marginkit coreset`
//! and `marginkit-mpi`, one node per MPI rank): [`RunSummary`] with its JSON object and text
//! line, the accuracy of the core-set's classifier, and the paper's Figures 1-2 as SVG. One
//! type for both binaries, so that an MPI run prints the keys of an in-process one and the two
//! can be compared field by field.

use super::consensus::ConsensusReport;
use super::model::CoreSetMsg;
use crate::data::Dataset;
use crate::error::DataError;
use crate::plot::{stack_svg, Axis, LineChart, Scale};
use crate::svm::SvmModel;

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
