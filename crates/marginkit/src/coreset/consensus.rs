//! Core-set consensus (the paper's Algorithm 1) over a [`Transport`], and the in-process network.
//!
//! Every node `i` holds its shard `S_i` and a candidate core-set `C_i` of `k` points. One round
//! `t` (universal time, paper Section IV-B):
//! 1. every active node sends `C_i` to its out-neighbours in `G_c(t)` (a message may be dropped, or
//!    delayed by a number of rounds, both decided by the seeded [`Schedule`]);
//! 2. every active node takes the messages delivered to it, pools
//!    `S_tmp = S_i + C_i + received sets` (deduplicated by id), warm-starts from the set of largest
//!    key `(r^2, ids)` and runs `coreset(S_tmp, C_i0)` ([`super::bc::coreset`]).
//!
//! `r^2(C_i)` never decreases (the warm start has the largest key and the routine only accepts
//! increases). Activation is synchronous (every node, every round) or asynchronous (each node
//! independently with probability `p` per round, seeded). Everything random is a counter-based hash
//! of `(seed, round, node, node)`, so every process knows the graph, drops and delays of any round
//! without communication, and a run is reproducible bit for bit for any thread count or rank count.
//!
//! Stopping rule (the paper gives none; see [`super`] for the proof): by default the local rule,
//! a node stops once its core-set has been unchanged for `W = 2 D + 1` rounds (`D`: the
//! schedule's flooding time, the directed diameter of a static graph) and the run ends when all
//! have stopped; the global quiescence check is evaluated every round as a diagnostic (or used
//! as the rule with [`StopRule::Global`]). The round budget bounds every run, with `agreed`
//! telling whether the sets coincide.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use rayon::prelude::*;

use super::bc::{self, coreset, meb_of, Pool};
pub use super::model::CoreSetMsg;
use super::model::CoresetModel;
use super::space::{param, FeatureKernel, PointSet};
use super::{hash4, unif4, CoresetError, CoresetParams, CoresetValidParams};
use crate::error::{DataError, ParamError};
use crate::fit::{Control, Fit, Report};
use crate::solver::{IterStats, Status};

/// The communication graph `G_c(t)`.
#[derive(Debug, Clone, PartialEq)]
pub enum Graph {
    /// A fresh directed Erdos-Renyi graph every round: each ordered pair is an edge with
    /// probability `p` (the paper's simulation: `p = 0.01`).
    ErdosRenyi {
        /// Edge probability in (0, 1].
        p: f64,
    },
    /// The directed ring `i -> i+1 (mod N)`.
    Ring,
    /// A grid of `ceil(sqrt N)` columns filled row by row, edges both ways between 4-neighbours.
    Grid,
    /// Every ordered pair.
    Complete,
    /// A static directed edge list `(from, to)`, 0-based.
    Edges(Vec<(usize, usize)>),
}

impl std::str::FromStr for Graph {
    type Err = CoresetError;

    /// Parses the graph flag both command lines take (`--graph`): `er:P`, `ring`, `grid`,
    /// `complete` or `edges:FILE` (one `FROM TO` pair of 0-based nodes per line; `#` starts a
    /// comment; the file is read).
    ///
    /// # Errors
    /// [`CoresetError::Edges`] naming the file, line and field; [`ParamError::OutOfRange`]
    /// for `P` outside [0, 1].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(p) = s.strip_prefix("er:") {
            let p: f64 = p
                .parse()
                .map_err(|_| CoresetError::Edges(format!("--graph er:P: {p:?} is not a number")))?;
            if !(p.is_finite() && (0.0..=1.0).contains(&p)) {
                return Err(param("er probability", p, "(0, 1]"));
            }
            return Ok(Graph::ErdosRenyi { p });
        }
        if let Some(file) = s.strip_prefix("edges:") {
            let text = std::fs::read_to_string(std::path::Path::new(file))
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
}

/// When nodes run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Activation {
    /// Every node every round.
    Sync,
    /// Each node runs (and sends) in a round with probability `p` (seeded).
    Async {
        /// Activation probability in (0, 1].
        p: f64,
    },
}

/// When a node stops (the paper gives no rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopRule {
    /// The local rule: a node stops (freezes its core-set, ignores what it receives, keeps
    /// sending its set) once its core-set has not changed for `W` consecutive rounds;
    /// `window: None` takes `W = 2 D + 1` with `D` from [`Schedule::flooding_time`] (the directed
    /// diameter for a static graph). The run ends when every node has stopped. Proven for static
    /// strongly connected graphs with synchronous activation, no loss and no delay (see the
    /// module docs); a heuristic otherwise.
    Local {
        /// `W`, or `None` for `2 D + 1`.
        window: Option<u64>,
    },
    /// The global quiescence check (a diagnostic no node can evaluate alone): stop when all
    /// nodes hold the same set, every node has run since the last change with only that set in
    /// its inbox and no older message is in flight.
    Global,
}

impl Default for StopRule {
    fn default() -> Self {
        StopRule::Local { window: None }
    }
}

/// Checked parameters of a consensus run, the only form [`Schedule::new`] and the consensus
/// fit accept: made by [`ConsensusParams::check`], read through the getters.
#[derive(Debug, Clone, PartialEq)]
pub struct ConsensusValidParams {
    pub(crate) coreset: CoresetValidParams,
    pub(crate) graph: Graph,
    pub(crate) activation: Activation,
    pub(crate) drop: f64,
    pub(crate) max_delay: u32,
    pub(crate) max_rounds: u64,
    pub(crate) record: bool,
    pub(crate) stop: StopRule,
}

impl ConsensusValidParams {
    /// The core-set routine's parameters (its seed also drives the network).
    pub fn coreset(&self) -> &CoresetValidParams {
        &self.coreset
    }
    /// The communication graph.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }
    /// When nodes run.
    pub fn activation(&self) -> Activation {
        self.activation
    }
    /// Probability that a message is lost.
    pub fn drop(&self) -> f64 {
        self.drop
    }
    /// Messages are delayed by `0..=max_delay` rounds.
    pub fn max_delay(&self) -> u32 {
        self.max_delay
    }
    /// Round budget.
    pub fn max_rounds(&self) -> u64 {
        self.max_rounds
    }
    /// Whether every node's `r^2` and centre norm are kept after every round.
    pub fn record(&self) -> bool {
        self.record
    }
    /// The stopping rule.
    pub fn stop(&self) -> StopRule {
        self.stop
    }
}

/// Parameters of a consensus run, unchecked: a builder whose
/// [`check`](ConsensusParams::check) gives the [`ConsensusValidParams`] a run accepts.
///
/// ```
/// use marginkit::coreset::{ConsensusParams, CoresetParams, Graph};
///
/// let p = ConsensusParams::new()
///     .coreset(CoresetParams::new().eps(0.05))
///     .graph(Graph::Ring)
///     .check()?;
/// assert_eq!(p.coreset().k(), 20);
/// assert!(ConsensusParams::new().drop(f64::NAN).check().is_err());
/// # Ok::<(), marginkit::error::ParamError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ConsensusParams {
    coreset: CoresetParams,
    graph: Graph,
    activation: Activation,
    drop: f64,
    max_delay: u32,
    max_rounds: u64,
    record: bool,
    stop: StopRule,
}

impl Default for ConsensusParams {
    /// [`CoresetParams`]'s defaults, a fresh Erdos-Renyi graph with `p = 0.1` every round
    /// ([`Self::DEFAULT_GRAPH`]),
    /// synchronous lossless rounds without delay, 10 000 rounds, nothing recorded, the local
    /// stopping rule with `W = 2 D + 1`.
    fn default() -> Self {
        Self {
            coreset: CoresetParams::default(),
            graph: Graph::ErdosRenyi { p: 0.1 },
            activation: Activation::Sync,
            drop: 0.0,
            max_delay: 0,
            max_rounds: Self::DEFAULT_MAX_ROUNDS,
            record: false,
            stop: StopRule::default(),
        }
    }
}

impl ConsensusParams {
    /// Default round budget.
    pub const DEFAULT_MAX_ROUNDS: u64 = 10_000;
    /// The default graph as the front ends' `--graph` / `graph=` text ([`Graph`]'s `FromStr`).
    pub const DEFAULT_GRAPH: &'static str = "er:0.1";

    /// The defaults (see [`Default`]).
    pub fn new() -> Self {
        Self::default()
    }
    /// Core-set routine parameters (problem, kernel, eps, tol, seed; the seed also drives the
    /// network).
    #[must_use]
    pub fn coreset(mut self, p: CoresetParams) -> Self {
        self.coreset = p;
        self
    }
    /// Communication graph.
    #[must_use]
    pub fn graph(mut self, g: Graph) -> Self {
        self.graph = g;
        self
    }
    /// Activation (default synchronous).
    #[must_use]
    pub fn activation(mut self, a: Activation) -> Self {
        self.activation = a;
        self
    }
    /// Probability that a message is lost, in [0, 1) (default 0).
    #[must_use]
    pub fn drop(mut self, p: f64) -> Self {
        self.drop = p;
        self
    }
    /// Messages are delayed by `0..=max_delay` rounds (uniform, seeded; default 0).
    #[must_use]
    pub fn max_delay(mut self, d: u32) -> Self {
        self.max_delay = d;
        self
    }
    /// Round budget, at least 1 (default 10 000).
    #[must_use]
    pub fn max_rounds(mut self, r: u64) -> Self {
        self.max_rounds = r;
        self
    }
    /// Keep `r^2` and the centre norm of every node after every round (for the figures).
    #[must_use]
    pub fn record(mut self, r: bool) -> Self {
        self.record = r;
        self
    }
    /// Stopping rule (default: the local rule with `W = 2 D + 1`).
    #[must_use]
    pub fn stop(mut self, s: StopRule) -> Self {
        self.stop = s;
        self
    }

    /// Checks every parameter (NaN-safe): the core-set parameters, the Erdos-Renyi probability
    /// in [0, 1], the loss probability in [0, 1), the activation probability in (0, 1] and a
    /// round budget of at least 1. What depends on the number of nodes (their count, edges
    /// naming nodes that do not exist, a graph that is not strongly connected) is checked by
    /// [`Schedule::new`].
    ///
    /// # Errors
    /// [`ParamError`] naming the first invalid parameter.
    pub fn check(self) -> Result<ConsensusValidParams, ParamError> {
        let coreset = self.coreset.check()?;
        let range = |name, value, range| ParamError::OutOfRange { name, value, range };
        if !(self.drop.is_finite() && (0.0..1.0).contains(&self.drop)) {
            return Err(range("drop", self.drop, "[0, 1)"));
        }
        if let Activation::Async { p } = self.activation {
            if !(p.is_finite() && p > 0.0 && p <= 1.0) {
                return Err(range("async activation probability", p, "(0, 1]"));
            }
        }
        if self.max_rounds == 0 {
            return Err(ParamError::Incompatible("max_rounds must be at least 1"));
        }
        if let Graph::ErdosRenyi { p } = self.graph {
            if !(p.is_finite() && (0.0..=1.0).contains(&p)) {
                return Err(range("er probability", p, "(0, 1]"));
            }
        }
        Ok(ConsensusValidParams {
            coreset,
            graph: self.graph,
            activation: self.activation,
            drop: self.drop,
            max_delay: self.max_delay,
            max_rounds: self.max_rounds,
            record: self.record,
            stop: self.stop,
        })
    }
}

const TAG_EDGE: u64 = 0xE1;
const TAG_DROP: u64 = 0xD2;
const TAG_DELAY: u64 = 0xDE;
const TAG_ACT: u64 = 0xAC;

/// Who talks to whom in every round, and which messages are lost or delayed: a pure function of
/// the parameters and the seed.
#[derive(Debug, Clone)]
pub struct Schedule {
    n: usize,
    seed: u64,
    graph: Graph,
    activation: Activation,
    drop: f64,
    max_delay: u32,
    out: Vec<Vec<usize>>,
    inn: Vec<Vec<usize>>,
}

/// The most nodes a [`Schedule`] takes.
pub const MAX_NODES: usize = 100_000;
/// The most nodes of a [`Graph::Complete`] (its `n (n - 1)` edges are stored twice).
pub const MAX_COMPLETE_NODES: usize = 4_096;

impl Schedule {
    /// The schedule of `params` on `n` nodes, checking what depends on `n`.
    ///
    /// # Errors
    /// [`CoresetError::Disconnected`] for a static graph that is not strongly connected or an
    /// Erdos-Renyi probability of 0 (consensus is impossible); [`CoresetError::Edges`] for an
    /// edge naming a node outside `0..n`; [`ParamError`] for no nodes or too many.
    pub fn new(n: usize, params: &ConsensusValidParams) -> Result<Self, CoresetError> {
        if n == 0 {
            return Err(ParamError::Incompatible("nodes must be at least 1").into());
        }
        // The adjacency lists take memory per node (and per edge): a node count far beyond
        // any network is an error, not an allocation that fails.
        if n > MAX_NODES {
            return Err(param("nodes", n as f64, "1..=100000"));
        }
        if params.graph == Graph::Complete && n > MAX_COMPLETE_NODES {
            return Err(param(
                "nodes of a complete graph",
                n as f64,
                "1..=4096 (n (n - 1) edges)",
            ));
        }
        let mut out = vec![Vec::new(); n];
        match &params.graph {
            Graph::ErdosRenyi { p } => {
                if *p == 0.0 && n > 1 {
                    return Err(CoresetError::Disconnected {
                        reason: "Erdos-Renyi graphs with p = 0 have no edges".into(),
                    });
                }
            }
            Graph::Ring => {
                for (i, o) in out.iter_mut().enumerate() {
                    if n > 1 {
                        o.push((i + 1) % n);
                    }
                }
            }
            Graph::Grid => {
                let cols = (n as f64).sqrt().ceil() as usize;
                for (i, nb) in out.iter_mut().enumerate() {
                    let (r, c) = (i / cols, i % cols);
                    if c > 0 {
                        nb.push(i - 1);
                    }
                    if c + 1 < cols && i + 1 < n {
                        nb.push(i + 1);
                    }
                    if r > 0 {
                        nb.push(i - cols);
                    }
                    if i + cols < n {
                        nb.push(i + cols);
                    }
                    nb.sort_unstable();
                }
            }
            Graph::Complete => {
                for (i, o) in out.iter_mut().enumerate() {
                    *o = (0..n).filter(|&j| j != i).collect();
                }
            }
            Graph::Edges(edges) => {
                for (e, &(a, b)) in edges.iter().enumerate() {
                    if a >= n || b >= n {
                        return Err(CoresetError::Edges(format!(
                            "edge {} ({a} -> {b}) names a node outside 0..{n}",
                            e + 1
                        )));
                    }
                    if a != b && !out[a].contains(&b) {
                        out[a].push(b);
                    }
                }
                for o in out.iter_mut() {
                    o.sort_unstable();
                }
            }
        }
        let mut inn = vec![Vec::new(); n];
        for (i, o) in out.iter().enumerate() {
            for &j in o {
                inn[j].push(i);
            }
        }
        let s = Self {
            n,
            seed: params.coreset.seed,
            graph: params.graph.clone(),
            activation: params.activation,
            drop: params.drop,
            max_delay: params.max_delay,
            out,
            inn,
        };
        if !matches!(s.graph, Graph::ErdosRenyi { .. }) {
            if let Some(reason) = s.static_disconnection() {
                return Err(CoresetError::Disconnected { reason });
            }
        }
        Ok(s)
    }

    fn static_disconnection(&self) -> Option<String> {
        for (adj, dir) in [(&self.out, "from"), (&self.inn, "to")] {
            let mut seen = vec![false; self.n];
            let mut stack = vec![0];
            seen[0] = true;
            while let Some(u) = stack.pop() {
                for &v in &adj[u] {
                    if !seen[v] {
                        seen[v] = true;
                        stack.push(v);
                    }
                }
            }
            if let Some(v) = seen.iter().position(|s| !s) {
                return Some(format!(
                    "no directed path {dir} node 0 {} node {v}",
                    if dir == "from" { "to" } else { "from" }
                ));
            }
        }
        None
    }

    /// Number of nodes.
    pub fn n(&self) -> usize {
        self.n
    }

    /// True when the local stopping rule's window is proven: a static graph (ring, grid,
    /// complete, edge list), synchronous activation, no loss, no delay.
    pub fn window_is_proven(&self) -> bool {
        !matches!(self.graph, Graph::ErdosRenyi { .. })
            && self.activation == Activation::Sync
            && self.drop == 0.0
            && self.max_delay == 0
    }

    /// The number of rounds `D`, from round `start`, after which every node's state before
    /// round `start` has reached every node through this schedule's messages (activations,
    /// losses and delays included; a message counts when its receiver next runs), or `None`
    /// when that takes more than `limit` rounds. For a static graph with synchronous lossless
    /// rounds this is the directed diameter. Every process computes it alone (the schedule is a
    /// function of the seed). Cost: `D` rounds of bit-set unions along the delivered edges
    /// (`N^2 / 64` words per round at most), plus `N^2` edge hashes per round for Erdos-Renyi.
    pub fn flooding_time(&self, start: u64, limit: u64) -> Option<u64> {
        let n = self.n;
        if n <= 1 {
            return Some(0);
        }
        let words = n.div_ceil(64);
        let mut reach = vec![0u64; n * words];
        for j in 0..n {
            reach[j * words + j / 64] |= 1 << (j % 64);
        }
        let last = (n - 1) % 64 + 1;
        let full_word = |w: usize| {
            if w + 1 < words || last == 64 {
                u64::MAX
            } else {
                (1u64 << last) - 1
            }
        };
        let mut pending: Vec<(u64, usize, Vec<u64>)> = Vec::new();
        for t in start..start.saturating_add(limit) {
            for i in 0..n {
                if !self.active(t, i) {
                    continue;
                }
                for j in self.out_edges(t, i) {
                    if let Some(at) = self.delivery(t, i, j) {
                        pending.push((at, j, reach[i * words..(i + 1) * words].to_vec()));
                    }
                }
            }
            pending.retain(|(at, j, bits)| {
                if *at <= t && self.active(t, *j) {
                    for (w, b) in bits.iter().enumerate() {
                        reach[j * words + w] |= b;
                    }
                    false
                } else {
                    true
                }
            });
            let done = (0..n).all(|j| (0..words).all(|w| reach[j * words + w] == full_word(w)));
            if done {
                return Some(t - start + 1);
            }
        }
        None
    }

    /// The local rule's window `W = 2 D + 1` with `D = flooding_time(0, limit)`, or `u64::MAX`
    /// (never stop locally) when `D` exceeds `limit`.
    pub fn local_window(&self, limit: u64) -> u64 {
        self.flooding_time(0, limit)
            .map_or(u64::MAX, |d| d.saturating_mul(2).saturating_add(1))
    }

    /// True when node `i` runs in round `t`.
    pub fn active(&self, t: u64, i: usize) -> bool {
        match self.activation {
            Activation::Sync => true,
            Activation::Async { p } => unif4(self.seed, t, i as u64, TAG_ACT) < p,
        }
    }

    fn edge(&self, t: u64, i: usize, j: usize) -> bool {
        match &self.graph {
            Graph::ErdosRenyi { p } => {
                i != j && unif4(self.seed, t, ((i as u64) << 32) | j as u64, TAG_EDGE) < *p
            }
            _ => self.out[i].binary_search(&j).is_ok(),
        }
    }

    /// The out-neighbours `N_i^O(t)`.
    pub fn out_edges(&self, t: u64, i: usize) -> Vec<usize> {
        match &self.graph {
            Graph::ErdosRenyi { .. } => (0..self.n).filter(|&j| self.edge(t, i, j)).collect(),
            _ => self.out[i].clone(),
        }
    }

    /// Round at which a message `i -> j` sent in round `t` arrives, or `None` when it is lost.
    pub fn delivery(&self, t: u64, i: usize, j: usize) -> Option<u64> {
        let key = ((i as u64) << 32) | j as u64;
        if self.drop > 0.0 && unif4(self.seed, t, key, TAG_DROP) < self.drop {
            return None;
        }
        let delay = if self.max_delay == 0 {
            0
        } else {
            hash4(self.seed, t, key, TAG_DELAY) % (self.max_delay as u64 + 1)
        };
        Some(t + delay)
    }

    /// The nodes that send a (not lost) message to `j` in round `t`, in increasing order.
    pub fn senders_to(&self, t: u64, j: usize) -> Vec<usize> {
        let cands: Vec<usize> = match &self.graph {
            Graph::ErdosRenyi { .. } => (0..self.n).filter(|&i| self.edge(t, i, j)).collect(),
            _ => self.inn[j].clone(),
        };
        cands
            .into_iter()
            .filter(|&i| self.active(t, i) && self.delivery(t, i, j).is_some())
            .collect()
    }
}

/// One network node: its shard and its candidate core-set.
#[derive(Debug)]
pub struct Node {
    /// Node number.
    pub id: usize,
    own: PointSet,
    index: HashMap<u64, usize>,
    /// Current candidate core-set.
    pub state: Arc<CoreSetMsg>,
    inbox: Vec<(u64, usize, u64, Arc<CoreSetMsg>)>,
    clean: bool,
    monotone: bool,
    history: Vec<(f64, f64)>,
    stable: u64,
    stopped_at: Option<u64>,
}

impl Node {
    /// A node with shard `own` (non-empty, distinct ids) and core-set size `k` (the same on
    /// every node: [`CoresetParams::k_for`] of the total number of points), initial set as in
    /// Algorithm 1 / Remark IV.2.
    pub fn new(
        id: usize,
        own: PointSet,
        kern: &FeatureKernel,
        params: &CoresetValidParams,
        k: usize,
    ) -> Self {
        let index: HashMap<u64, usize> =
            own.ids().iter().enumerate().map(|(i, &v)| (v, i)).collect();
        let init = bc::initial_members(own.len(), k.max(1), params.seed, id as u64);
        let state = {
            let pool = Pool::new(&own, Some(&index));
            let members = bc::canonical(&pool, init);
            let meb = meb_of(&pool, kern, &members);
            let res = bc::CoresetResult {
                members,
                meb,
                swaps: 0,
            };
            CoreSetMsg::from_result(&pool, &res, id, own.dim())
        };
        Self {
            id,
            own,
            index,
            state: Arc::new(state),
            inbox: Vec::new(),
            clean: false,
            monotone: true,
            history: Vec::new(),
            stable: 0,
            stopped_at: None,
        }
    }

    /// Runs the local routine on the messages delivered by round `t`; returns `(changed, clean)`.
    fn step(&mut self, t: u64, kern: &FeatureKernel, tol: f64) -> (bool, bool) {
        let mut received: Vec<(usize, u64, Arc<CoreSetMsg>)> = Vec::new();
        self.inbox.retain(|(deliver, from, sent, m)| {
            if *deliver <= t {
                received.push((*from, *sent, m.clone()));
                false
            } else {
                true
            }
        });
        received.sort_by_key(|(from, sent, _)| (*sent, *from));
        let mut pool = Pool::new(&self.own, Some(&self.index));
        let map = |pool: &mut Pool<'_>, m: &CoreSetMsg| -> Vec<usize> {
            let idx: Vec<usize> = (0..m.points.len())
                .map(|i| pool.add(&m.points, i))
                .collect();
            m.ids
                .iter()
                .map(|id| {
                    let j = m.points.ids().binary_search(id).unwrap_or(0);
                    idx[j]
                })
                .collect()
        };
        let mut warm = map(&mut pool, &self.state);
        let mut warm_key = (self.state.r2, self.state.ids.clone());
        for (_, _, m) in &received {
            let members = map(&mut pool, m);
            if bc::key_cmp(m.r2, &m.ids, warm_key.0, &warm_key.1) == std::cmp::Ordering::Greater {
                warm = members;
                warm_key = (m.r2, m.ids.clone());
            }
        }
        let res = coreset(&pool, kern, warm, tol);
        let next = CoreSetMsg::from_result(&pool, &res, self.id, self.own.dim());
        let changed = next.ids != self.state.ids;
        let clean = !changed
            && received.iter().all(|(_, _, m)| {
                m.ids == self.state.ids && m.r2.to_bits() == self.state.r2.to_bits()
            });
        if next.r2 < self.state.r2 {
            self.monotone = false;
        }
        if changed {
            self.state = Arc::new(next);
        }
        (changed, clean)
    }

    fn record(&mut self) {
        self.history.push((self.state.r2, self.state.c2.sqrt()));
    }

    fn oldest_in_flight(&self) -> u64 {
        self.inbox.iter().map(|e| e.2).min().unwrap_or(u64::MAX)
    }
}

/// The network-wide state after a round (a reduction over all nodes); how a run ended is
/// [`ConsensusReport`]'s [`Report::status`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoundSummary {
    /// Some node changed its set this round.
    pub changed: bool,
    /// Every node has run cleanly since the last change.
    pub clean: bool,
    /// Smallest and largest set fingerprint.
    pub fp_min: u64,
    /// Largest fingerprint.
    pub fp_max: u64,
    /// Send round of the oldest undelivered message (`u64::MAX`: none).
    pub oldest_in_flight: u64,
    /// Bytes sent this round.
    pub bytes: u64,
    /// Smallest `r^2` over nodes.
    pub r2_min: f64,
    /// Largest `r^2` over nodes.
    pub r2_max: f64,
    /// Every node's `r^2` has been monotone so far.
    pub monotone: bool,
    /// Number of nodes stopped by the local rule.
    pub stopped: u64,
}

impl RoundSummary {
    /// The neutral element of [`RoundSummary::combine`].
    pub fn identity() -> Self {
        Self {
            changed: false,
            clean: true,
            fp_min: u64::MAX,
            fp_max: 0,
            oldest_in_flight: u64::MAX,
            bytes: 0,
            r2_min: f64::INFINITY,
            r2_max: f64::NEG_INFINITY,
            monotone: true,
            stopped: 0,
        }
    }
    /// Combines two partial reductions (associative and commutative).
    pub fn combine(self, o: Self) -> Self {
        Self {
            changed: self.changed || o.changed,
            clean: self.clean && o.clean,
            fp_min: self.fp_min.min(o.fp_min),
            fp_max: self.fp_max.max(o.fp_max),
            oldest_in_flight: self.oldest_in_flight.min(o.oldest_in_flight),
            bytes: self.bytes + o.bytes,
            r2_min: self.r2_min.min(o.r2_min),
            r2_max: self.r2_max.max(o.r2_max),
            monotone: self.monotone && o.monotone,
            stopped: self.stopped + o.stopped,
        }
    }
    /// Length of [`RoundSummary::to_words`].
    pub const WORDS: usize = 10;
    /// As [`RoundSummary::WORDS`] words (for transports that move bytes).
    pub fn to_words(&self) -> [u64; Self::WORDS] {
        [
            self.changed as u64,
            self.clean as u64,
            self.fp_min,
            self.fp_max,
            self.oldest_in_flight,
            self.bytes,
            self.r2_min.to_bits(),
            self.r2_max.to_bits(),
            self.monotone as u64,
            self.stopped,
        ]
    }
    /// Inverse of [`RoundSummary::to_words`].
    pub fn from_words(w: &[u64; Self::WORDS]) -> Self {
        Self {
            changed: w[0] != 0,
            clean: w[1] != 0,
            fp_min: w[2],
            fp_max: w[3],
            oldest_in_flight: w[4],
            bytes: w[5],
            r2_min: f64::from_bits(w[6]),
            r2_max: f64::from_bits(w[7]),
            monotone: w[8] != 0,
            stopped: w[9],
        }
    }
}

/// Messages delivered to each local node in one round: `(sender, set)`.
pub type Inboxes = Vec<Vec<(usize, Arc<CoreSetMsg>)>>;

/// How nodes exchange messages. The in-process network ([`InProcess`]) hosts all nodes; the MPI
/// transport (crate `marginkit-mpi`) hosts one node per rank. Both follow the same [`Schedule`].
pub trait Transport {
    /// The nodes hosted by this process.
    fn local_nodes(&self) -> Vec<usize>;
    /// Round `t`: sends `outgoing` (the sets of the local nodes active in round `t`) to their
    /// out-neighbours that the schedule does not drop, and returns, for each local node (in
    /// [`Transport::local_nodes`] order), the messages sent to it in round `t` as
    /// `(sender, message)`. Delays are applied by the caller.
    ///
    /// # Errors
    /// [`CoresetError::Transport`].
    fn exchange(
        &self,
        t: u64,
        schedule: &Schedule,
        outgoing: &[(usize, Arc<CoreSetMsg>)],
    ) -> Result<Inboxes, CoresetError>;
    /// Reduces the local nodes' statuses over all processes.
    ///
    /// # Errors
    /// [`CoresetError::Transport`].
    fn reduce(&self, local: RoundSummary) -> Result<RoundSummary, CoresetError>;
    /// The sum of `local` over all processes (once, before the first round: the total number of
    /// points, which caps the core-set size identically on every node).
    ///
    /// # Errors
    /// [`CoresetError::Transport`].
    fn sum(&self, local: u64) -> Result<u64, CoresetError>;
}

/// All nodes in this process: message passing is a move of `Arc`s.
#[derive(Debug, Clone)]
pub struct InProcess {
    n: usize,
}

impl InProcess {
    /// A network of `n` nodes.
    pub fn new(n: usize) -> Self {
        Self { n }
    }
}

impl Transport for InProcess {
    fn local_nodes(&self) -> Vec<usize> {
        (0..self.n).collect()
    }
    fn exchange(
        &self,
        t: u64,
        schedule: &Schedule,
        outgoing: &[(usize, Arc<CoreSetMsg>)],
    ) -> Result<Inboxes, CoresetError> {
        let mut inbox: Vec<Vec<(usize, Arc<CoreSetMsg>)>> = vec![Vec::new(); self.n];
        let sends: Vec<Vec<usize>> = outgoing
            .par_iter()
            .map(|(i, _)| {
                schedule
                    .out_edges(t, *i)
                    .into_iter()
                    .filter(|&j| schedule.delivery(t, *i, j).is_some())
                    .collect()
            })
            .collect();
        for ((i, m), to) in outgoing.iter().zip(sends) {
            for j in to {
                inbox[j].push((*i, m.clone()));
            }
        }
        Ok(inbox)
    }
    fn reduce(&self, local: RoundSummary) -> Result<RoundSummary, CoresetError> {
        Ok(local)
    }
    fn sum(&self, local: u64) -> Result<u64, CoresetError> {
        Ok(local)
    }
}

/// What a consensus run did (for the nodes of this process).
#[derive(Debug, Clone)]
pub struct ConsensusReport {
    /// Rounds run.
    pub rounds: u64,
    /// Core-set size used by every node: `min(ceil(1/eps), total points)`.
    pub k: usize,
    /// All nodes hold the same core-set at the end.
    pub agreed: bool,
    /// The global quiescence check held at the end (a diagnostic: a fixed point of all nodes).
    pub quiescent: bool,
    /// First round after which the global quiescence check held.
    pub quiescent_round: Option<u64>,
    /// The local rule's window `W` (`None` under [`StopRule::Global`]; `u64::MAX`: never).
    pub window: Option<u64>,
    /// True when `W` is proven for this schedule ([`Schedule::window_is_proven`]).
    pub window_proven: bool,
    /// Per local node, the round after which it stopped by the local rule.
    pub stop_rounds: Vec<(usize, Option<u64>)>,
    /// Every node stopped by the local rule (or the global check fired under
    /// [`StopRule::Global`]); otherwise the round budget ran out or the observer stopped the
    /// run.
    pub stopped: bool,
    /// The observer stopped the run before the rule or the round budget did.
    pub interrupted: bool,
    /// First round from which all nodes held the same set until the end.
    pub consensus_round: Option<u64>,
    /// Final sets of the local nodes `(node, set)`.
    pub states: Vec<(usize, Arc<CoreSetMsg>)>,
    /// Per local node: `(r^2, centre norm)` initially and after every round (when recorded).
    pub history: Vec<(usize, Vec<(f64, f64)>)>,
    /// Per round: smallest and largest `r^2` over all nodes (the disagreement).
    pub spread: Vec<(f64, f64)>,
    /// Bytes sent by all nodes.
    pub bytes_sent: u64,
    /// Average bytes sent per node per round.
    pub bytes_per_node_round: f64,
    /// Every node's `r^2` was non-decreasing.
    pub monotone: bool,
    /// Wall time of the rounds.
    pub seconds: f64,
}

impl Report for ConsensusReport {
    /// [`Status::Converged`] when every node stopped by the local rule (or the global check
    /// fired under [`StopRule::Global`]), [`Status::Interrupted`] when the observer stopped the
    /// run, [`Status::MaxIterations`] when the round budget ran out first.
    fn status(&self) -> Status {
        if self.stopped {
            Status::Converged
        } else if self.interrupted {
            Status::Interrupted
        } else {
            Status::MaxIterations
        }
    }
}

/// One round of a consensus run, as [`fit`] hands it to [`Control::on_part`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Round {
    /// Rounds run so far (1 after the first).
    pub number: u64,
    /// The network-wide state after it.
    pub summary: RoundSummary,
}

/// What a consensus run works on: the points of its nodes, and how the nodes talk.
#[derive(Clone, Copy)]
pub enum ConsensusData<'a> {
    /// `nodes` nodes in this process, node `i` holding the `i`-th contiguous shard of `points`
    /// ([`shard_ranges`]); a message is a move of an `Arc` ([`InProcess`]).
    InProcess {
        /// All the points.
        points: &'a PointSet,
        /// Number of nodes.
        nodes: usize,
    },
    /// The nodes of this process, `(node, shard)` in the order of the transport's
    /// [`Transport::local_nodes`], among `nodes` nodes in all, exchanging their sets over
    /// `transport` (crate `marginkit-mpi`: one node per MPI rank). Every process runs the fit
    /// with the same parameters; the shards have rows of the same width on every process.
    Distributed {
        /// Number of nodes over all processes.
        nodes: usize,
        /// This process's nodes and their points.
        shards: &'a [(usize, PointSet)],
        /// The network.
        transport: &'a dyn Transport,
    },
}

impl std::fmt::Debug for ConsensusData<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::InProcess { points, nodes } => f
                .debug_struct("InProcess")
                .field("points", &points.len())
                .field("nodes", nodes)
                .finish(),
            Self::Distributed { nodes, shards, .. } => f
                .debug_struct("Distributed")
                .field("nodes", nodes)
                .field("local", &shards.iter().map(|(i, _)| *i).collect::<Vec<_>>())
                .finish_non_exhaustive(),
        }
    }
}

/// Runs Algorithm 1 on `data` (see the module doc).
///
/// The kernel's gamma `Auto` is resolved against the width of the points. The model is the
/// final core-set of this process's first node (on every node when the report says `agreed`);
/// the report holds every local node's set, the rounds and the stopping diagnostics. After
/// every round `ctl`'s part callback receives a [`Round`], and its observer is asked whether to
/// go on (a stop ends the run with [`Status::Interrupted`]; with a transport over several
/// processes it must decide alike on every process, as the round's summary does). A run has
/// no state to resume from.
///
/// # Errors
/// [`CoresetError::EmptyNode`] for fewer points than nodes (or a node without points),
/// [`CoresetError::NonConstantDiagonal`] for the SVM mappings on points whose kernel diagonal
/// varies, [`Schedule::new`]'s errors for the node count and graph, transport errors.
pub fn fit(
    params: &ConsensusValidParams,
    data: &ConsensusData<'_>,
    ctl: &mut Control<'_, (), Round>,
) -> Result<Fit<CoresetModel, ConsensusReport>, CoresetError> {
    let (rep, kern) = match *data {
        ConsensusData::InProcess { points, nodes } => {
            let kern = params.coreset.feature_kernel(points.dim());
            kern.check_points(points)?;
            // First: `split` refuses more nodes than points before any per-node allocation
            // (`--nodes 1000000000000` would otherwise abort on the schedule's adjacency lists).
            let shards = split(points, nodes)?;
            let schedule = Schedule::new(nodes, params)?;
            let rep = run_nodes(
                &InProcess::new(nodes),
                &kern,
                shards,
                &schedule,
                params,
                ctl,
            )?;
            (rep, kern)
        }
        ConsensusData::Distributed {
            nodes,
            shards,
            transport,
        } => {
            let dim = shards.first().ok_or(DataError::Empty)?.1.dim();
            let kern = params.coreset.feature_kernel(dim);
            let schedule = Schedule::new(nodes, params)?;
            let rep = run_nodes(transport, &kern, shards.to_vec(), &schedule, params, ctl)?;
            (rep, kern)
        }
    };
    let set = rep
        .states
        .first()
        .map(|(_, m)| (**m).clone())
        .ok_or(DataError::Empty)?;
    Ok(Fit {
        model: CoresetModel { set, kernel: kern },
        report: rep,
        checkpoint: None,
    })
}

/// Algorithm 1 for the local nodes `shards` (`(node, points)`) over `transport`.
// One piece: the setup of the local nodes and the rounds of Algorithm 1, which share every local
// node's state.
fn run_nodes(
    transport: &dyn Transport,
    kern: &FeatureKernel,
    shards: Vec<(usize, PointSet)>,
    schedule: &Schedule,
    params: &ConsensusValidParams,
    ctl: &mut Control<'_, (), Round>,
) -> Result<ConsensusReport, CoresetError> {
    let total: usize = shards.iter().map(|(_, s)| s.len()).sum();
    for (node, s) in &shards {
        if s.is_empty() {
            return Err(CoresetError::EmptyNode {
                node: *node,
                n: total,
                nodes: schedule.n(),
            });
        }
        kern.check_points(s)?;
    }
    let start = Instant::now();
    let cp = params.coreset;
    // One cap for every node: k = min(ceil(1/eps), total points), the total summed over the
    // processes, so in-process and MPI runs use the same k (a per-shard cap would shrink the
    // global core-set; no cap would allocate ceil(1/eps) entries for eps = 1e-12).
    let total_n = transport.sum(total as u64)?;
    let k = cp.k_for(usize::try_from(total_n).unwrap_or(usize::MAX));
    let mut nodes: Vec<Node> = shards
        .into_par_iter()
        .map(|(id, s)| Node::new(id, s, kern, &cp, k))
        .collect();
    if params.record {
        nodes.iter_mut().for_each(Node::record);
    }
    let window = match params.stop {
        StopRule::Global => None,
        StopRule::Local { window: Some(w) } => Some(w.max(1)),
        StopRule::Local { window: None } => Some(schedule.local_window(params.max_rounds)),
    };
    let mut quiescent_round = None;
    let mut stopped = false;
    let mut last_change = 0u64;
    let mut spread = Vec::new();
    let mut bytes_sent = 0u64;
    let mut consensus_round = None;
    let mut rounds = 0;
    let mut quiescent = false;
    let mut agreed = false;
    let mut monotone = true;
    let mut interrupted = false;
    for t in 0..params.max_rounds {
        rounds = t + 1;
        let outgoing: Vec<(usize, Arc<CoreSetMsg>)> = nodes
            .iter()
            .filter(|nd| schedule.active(t, nd.id))
            .map(|nd| (nd.id, nd.state.clone()))
            .collect();
        let delivered = transport.exchange(t, schedule, &outgoing)?;
        let mut bytes = 0u64;
        for (i, m) in &outgoing {
            let sent = schedule
                .out_edges(t, *i)
                .into_iter()
                .filter(|&j| schedule.delivery(t, *i, j).is_some())
                .count();
            bytes += (sent * m.encoded_len()) as u64;
        }
        for (nd, msgs) in nodes.iter_mut().zip(delivered) {
            if nd.stopped_at.is_some() {
                // A stopped node ignores what it receives.
                continue;
            }
            for (from, m) in msgs {
                let at = schedule.delivery(t, from, nd.id).unwrap_or(t);
                nd.inbox.push((at, from, t, m));
            }
        }
        let outcomes: Vec<(bool, bool)> = nodes
            .par_iter_mut()
            .map(|nd| {
                if schedule.active(t, nd.id) && nd.stopped_at.is_none() {
                    nd.step(t, kern, cp.tol)
                } else {
                    (false, false)
                }
            })
            .collect();
        let mut local = RoundSummary::identity();
        local.bytes = bytes;
        for (nd, (changed, clean)) in nodes.iter_mut().zip(outcomes) {
            if clean {
                nd.clean = true;
            }
            if nd.stopped_at.is_none() {
                nd.stable = if changed { 0 } else { nd.stable + 1 };
                if window.is_some_and(|w| nd.stable >= w) {
                    nd.stopped_at = Some(t + 1);
                }
            }
            if params.record {
                nd.record();
            }
            let fp = nd.state.fingerprint();
            local = local.combine(RoundSummary {
                changed,
                // A stopped node never changes again.
                clean: nd.clean || nd.stopped_at.is_some(),
                fp_min: fp,
                fp_max: fp,
                oldest_in_flight: nd.oldest_in_flight(),
                bytes: 0,
                r2_min: nd.state.r2,
                r2_max: nd.state.r2,
                monotone: nd.monotone,
                stopped: nd.stopped_at.is_some() as u64,
            });
        }
        let g = transport.reduce(local)?;
        ctl.part_done(&Round {
            number: t + 1,
            summary: g,
        });
        bytes_sent += g.bytes;
        monotone = g.monotone;
        spread.push((g.r2_min, g.r2_max));
        agreed = g.fp_min == g.fp_max;
        if agreed {
            consensus_round.get_or_insert(t + 1);
        } else {
            consensus_round = None;
        }
        if g.changed {
            last_change = t;
            nodes.iter_mut().for_each(|nd| nd.clean = false);
            quiescent = false;
            quiescent_round = None;
        } else {
            let old_in_flight = g.oldest_in_flight != u64::MAX && g.oldest_in_flight <= last_change;
            quiescent = agreed && g.clean && !old_in_flight;
            if quiescent {
                quiescent_round.get_or_insert(t + 1);
            } else {
                quiescent_round = None;
            }
        }
        stopped = match window {
            None => quiescent,
            Some(_) => g.stopped == schedule.n() as u64,
        };
        if stopped {
            break;
        }
        let seen = IterStats {
            iterations: t + 1,
            max_violation: g.r2_max - g.r2_min,
            active: schedule.n() - g.stopped as usize,
        };
        if ctl.observer().on_iter(&seen).is_break() {
            interrupted = true;
            break;
        }
    }
    let n = schedule.n() as f64;
    Ok(ConsensusReport {
        rounds,
        k,
        agreed,
        quiescent,
        quiescent_round,
        window,
        window_proven: schedule.window_is_proven(),
        stop_rounds: nodes.iter().map(|nd| (nd.id, nd.stopped_at)).collect(),
        stopped,
        interrupted,
        consensus_round,
        states: nodes.iter().map(|nd| (nd.id, nd.state.clone())).collect(),
        history: nodes
            .iter_mut()
            .map(|nd| (nd.id, std::mem::take(&mut nd.history)))
            .collect(),
        spread,
        bytes_sent,
        bytes_per_node_round: bytes_sent as f64 / (n * rounds as f64),
        monotone,
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// Contiguous shards: node `i` gets rows `[i n / N, (i+1) n / N)`.
pub fn shard_ranges(n: usize, nodes: usize) -> Vec<std::ops::Range<usize>> {
    (0..nodes)
        .map(|i| (i * n / nodes)..((i + 1) * n / nodes))
        .collect()
}

/// Splits `pts` into `nodes` contiguous shards.
///
/// # Errors
/// [`CoresetError::EmptyNode`] when there are fewer points than nodes.
pub fn split(pts: &PointSet, nodes: usize) -> Result<Vec<(usize, PointSet)>, CoresetError> {
    if nodes > pts.len() {
        return Err(CoresetError::EmptyNode {
            node: 0,
            n: pts.len(),
            nodes,
        });
    }
    let mut out = Vec::with_capacity(nodes);
    for (node, r) in shard_ranges(pts.len(), nodes).into_iter().enumerate() {
        if r.is_empty() {
            return Err(CoresetError::EmptyNode {
                node,
                n: pts.len(),
                nodes,
            });
        }
        let mut s = PointSet::new(pts.dim());
        for i in r {
            s.push_from(pts, i);
        }
        out.push((node, s));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The centralized core-set of `pts` (minimum enclosing ball, default parameters).
    fn central(pts: &PointSet) -> CoreSetMsg {
        let p = CoresetParams::default().check().unwrap();
        crate::coreset::fit(&p, pts, &mut Control::default())
            .unwrap()
            .model
            .set
    }

    #[test]
    fn the_default_graph_text_parses_to_the_default_graph() {
        let g: Graph = ConsensusParams::DEFAULT_GRAPH.parse().unwrap();
        assert_eq!(g, ConsensusParams::default().graph);
    }

    #[test]
    fn wire_format_round_trips_and_rejects_garbage() {
        let mut pts = PointSet::new(3);
        for i in 0..12u64 {
            let v = i as f64;
            pts.push(i * 7, 1.0, &[v.sin(), v.cos(), 0.1 * v]);
        }
        let msg = central(&pts);
        let bytes = msg.encode();
        assert_eq!(bytes.len(), msg.encoded_len());
        let back = CoreSetMsg::decode(&bytes).unwrap();
        assert_eq!(back, msg);
        assert_eq!(back.fingerprint(), msg.fingerprint());
        for cut in [0, 10, bytes.len() - 1] {
            assert!(CoreSetMsg::decode(&bytes[..cut]).is_err());
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(CoreSetMsg::decode(&longer).is_err());
        // An id that is not among the points.
        let mut bad = msg.clone();
        bad.ids[0] = 5;
        bad.ids.sort_unstable();
        assert!(CoreSetMsg::decode(&bad.encode()).is_err());
    }

    #[test]
    fn decode_checks_header_sizes_before_allocating() {
        let mut pts = PointSet::new(2);
        for i in 0..5u64 {
            pts.push(i, 1.0, &[i as f64, 1.0 - i as f64]);
        }
        let msg = central(&pts);
        let good = msg.encode();
        let set_u32 = |b: &mut Vec<u8>, at: usize, v: u32| {
            b[at..at + 4].copy_from_slice(&v.to_le_bytes());
        };
        // Huge k, m or d (would be terabytes) on a short buffer: an error, at once.
        for (field, v) in [(1, u32::MAX), (2, u32::MAX), (3, u32::MAX), (2, 0), (1, 0)] {
            let mut b = good.clone();
            set_u32(&mut b, 4 * field, v);
            let e = CoreSetMsg::decode(&b).unwrap_err();
            assert!(matches!(e, CoresetError::Transport(_)), "{e}");
        }
        // Sizes whose product overflows 64 bits.
        let mut b = good.clone();
        set_u32(&mut b, 8, u32::MAX);
        set_u32(&mut b, 12, u32::MAX);
        assert!(CoreSetMsg::decode(&b).is_err());
        // A header alone, and every truncation, are errors, never panics.
        for cut in 0..good.len() {
            assert!(CoreSetMsg::decode(&good[..cut]).is_err(), "cut {cut}");
        }
        // Sizes consistent with the length but contents inconsistent (m = 0 points with k = 0 ids).
        let mut empty = vec![0u8; 32];
        set_u32(&mut empty, 0, 3);
        assert!(CoreSetMsg::decode(&empty).is_err());
        // Non-finite r^2.
        let mut b = good.clone();
        b[16..24].copy_from_slice(&f64::NAN.to_le_bytes());
        assert!(CoreSetMsg::decode(&b).is_err());
        // Random bytes never panic.
        for seed in 0..200u64 {
            let len = (hash4(seed, 1, 2, 3) % 200) as usize;
            let junk: Vec<u8> = (0..len)
                .map(|i| hash4(seed, i as u64, 0, 9) as u8)
                .collect();
            let _ = CoreSetMsg::decode(&junk);
        }
        assert_eq!(CoreSetMsg::decode(&good).unwrap(), msg);
    }

    #[test]
    fn schedules_are_pure_functions_of_the_seed() {
        let p = ConsensusParams::new()
            .graph(Graph::ErdosRenyi { p: 0.3 })
            .activation(Activation::Async { p: 0.5 })
            .drop(0.2)
            .max_delay(3)
            .check()
            .unwrap();
        let (a, b) = (
            Schedule::new(20, &p).unwrap(),
            Schedule::new(20, &p).unwrap(),
        );
        for t in 0..5 {
            for i in 0..20 {
                assert_eq!(a.out_edges(t, i), b.out_edges(t, i));
                // senders_to is the transpose of out_edges restricted to active, delivered sends.
                let s = a.senders_to(t, i);
                for j in 0..20 {
                    let sends = a.active(t, j)
                        && a.out_edges(t, j).contains(&i)
                        && a.delivery(t, j, i).is_some();
                    assert_eq!(s.contains(&j), sends);
                    if let Some(at) = a.delivery(t, j, i) {
                        assert!(at >= t && at <= t + 3);
                    }
                }
            }
        }
        let grid = Schedule::new(
            7,
            &ConsensusParams::new().graph(Graph::Grid).check().unwrap(),
        )
        .unwrap();
        assert_eq!(grid.out_edges(0, 0), vec![1, 3]);
        assert_eq!(grid.out_edges(0, 4), vec![1, 3, 5]);
    }

    /// A huge node count is an error at once, never an allocation of per-node lists that
    /// aborts (`coreset --nodes 1000000000000` did).
    #[test]
    fn huge_node_counts_are_errors_not_aborts() {
        let mut pts = PointSet::new(1);
        for i in 0..5u64 {
            pts.push(i, 1.0, &[i as f64]);
        }
        let p = ConsensusParams::default().check().unwrap();
        for nodes in [6, 1 << 40, usize::MAX] {
            let data = ConsensusData::InProcess {
                points: &pts,
                nodes,
            };
            let e = fit(&p, &data, &mut Control::default()).unwrap_err();
            assert!(
                matches!(e, CoresetError::EmptyNode { node: 0, n: 5, .. }),
                "{e}"
            );
            assert!(split(&pts, nodes).is_err());
        }
        for nodes in [MAX_NODES + 1, usize::MAX] {
            assert!(matches!(
                Schedule::new(nodes, &p),
                Err(CoresetError::Param(ParamError::OutOfRange { .. }))
            ));
        }
        let complete = ConsensusParams::new()
            .graph(Graph::Complete)
            .check()
            .unwrap();
        assert!(Schedule::new(MAX_COMPLETE_NODES + 1, &complete).is_err());
        assert!(Schedule::new(16, &complete).is_ok());
    }
}
