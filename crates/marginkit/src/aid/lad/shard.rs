//! AID-LAD on rows split across processes ("shards"): every shard holds a block of consecutive
//! rows (the blocks in shard order make the data set, some may be empty), and every shard ends
//! with the model of the single-process [`super::fit`], bit for bit.
//!
//! # What is computed where
//!
//! The partition is kept as one cluster id per local row; the cluster order is the one of
//! [`Clusters`](crate::aid::cluster::Clusters) in the single-process run (ids by the k-means
//! centre, a split cluster's pieces in side-code order), and the rows of a cluster are added in
//! global row order, as the single-process sums do. The communication goes through
//! [`LadComm`]:
//!
//! | stage | each shard | reduction |
//! |---|---|---|
//! | layout | its row count and width | pipeline: rows before it, `n`, widths |
//! | sample (`beta^init`) | the same seeded draws over the global row numbers | its sampled rows gathered to the root; the root's exact LAD on them broadcast |
//! | standardization | `r_i = y_i - xt_i beta^init` | pipeline: `sum r`, `sum y`, then the squared deviations |
//! | k-means (one iteration) | nearest centre of its points | the seed rows' points from their owners; per centre the sums and counts (pipeline); the non-empty centres (OR) |
//! | iteration `t` | cluster sums of its rows; residual sides; its share of `E^t` | sums pipelined to the root, which solves the aggregated LP and broadcasts `beta`, `F^t`, the certificate; `E^t` pipelined in the single-process chunks; per cluster the side codes seen (OR) |
//!
//! A *pipeline* runs shard 0 from the starting value, passes the running value to shard 1,
//! which adds its rows, and so on: every floating-point addition happens in the order of one
//! process holding all the rows, so the aggregated problems, `E^t`, the splits and the model do
//! not depend on the number of shards. The OR of the side codes is exact in any order, so every
//! shard makes the same split; the time limit is the root's clock, sent with the side codes.
//!
//! # Cost
//!
//! Per iteration, on each shard: one pass over its rows for the cluster sums and one for the
//! residuals (`O(nnz)`); the root also solves the aggregated LP. Communication: `K (d + 2)`
//! doubles along the pipeline to the root, `p + 4` doubles broadcast, 2 doubles along the
//! pipeline, `K + 1` bytes OR-reduced (and one byte for the collective memory check). Memory per
//! shard: its rows, a cluster id per row and the `K (d + 2)` sums.

use std::collections::HashMap;
use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;

use super::{
    check_rows, fit_lad, initial_k, kmeans_seed, model_from, sample_size, side_of, solve_design,
    stamp_parts, AidLadValidParams, LadModel, LadSolution, EVAL_CHUNK,
};
use crate::aid::checkpoint::{self, AidCheckpoint, AidModel, LoopState, ProblemState, Stamp};
use crate::aid::cluster::{add_row, assign_nearest, Clusters};
use crate::aid::{rel_gap, stop_requested, stop_rule, IterRecord, Termination};
use crate::data::design::{DenseRows, DesignRows, FeatureRows};
use crate::data::{CsrMatrix, Dataset, DenseMatrix, Features, Row};
use crate::error::{DataError, FitError, ParamError, SolveError};
use crate::fit::{Control, Fit, Report};
use crate::solver::Status;

/// The reductions of a sharded AID-LAD fit (see the module docs). The shards are numbered
/// `0..P` in row order; shard 0 is the root. Every method is collective: all shards call it in
/// the same sequence with buffers of the same length.
pub trait LadComm {
    /// Leaves in `buf`, on every shard, the value after every shard's `add_local` in shard
    /// order: shard 0 runs `add_local(buf, true)` (it sets the starting value itself), each
    /// other shard `add_local(buf, false)` on the previous shard's result.
    fn sum(&mut self, buf: &mut [f64], add_local: &mut dyn FnMut(&mut [f64], bool));
    /// [`LadComm::sum`] whose result only the root needs (elsewhere `buf` is left undefined).
    fn sum_to_root(&mut self, buf: &mut [f64], add_local: &mut dyn FnMut(&mut [f64], bool));
    /// Replaces `flags` on every shard by their element-wise bitwise OR over the shards.
    fn or(&mut self, flags: &mut [u8]);
    /// Replaces `buf` on every shard by the root's.
    fn broadcast(&mut self, buf: &mut [f64]);
    /// On the root: every shard's `local` concatenated in shard order; elsewhere: anything
    /// (ignored).
    fn gather(&mut self, local: &[f64]) -> Vec<f64>;
    /// Whether this shard is the root (shard 0).
    fn is_root(&self) -> bool;
    /// Called on every shard after the initial clustering and after every iteration, for
    /// transports that report their traffic per stage.
    fn stage_done(&mut self) {}
}

/// [`LadComm`] of a fit that holds all the rows (one shard): the single-process arithmetic.
#[derive(Debug, Clone, Copy, Default)]
pub struct InProcess;

impl LadComm for InProcess {
    fn sum(&mut self, buf: &mut [f64], add_local: &mut dyn FnMut(&mut [f64], bool)) {
        add_local(buf, true);
    }
    fn sum_to_root(&mut self, buf: &mut [f64], add_local: &mut dyn FnMut(&mut [f64], bool)) {
        add_local(buf, true);
    }
    fn or(&mut self, _flags: &mut [u8]) {}
    fn broadcast(&mut self, _buf: &mut [f64]) {}
    fn gather(&mut self, local: &[f64]) -> Vec<f64> {
        local.to_vec()
    }
    fn is_root(&self) -> bool {
        true
    }
}

/// What a sharded AID-LAD fit did (the same on every shard, but for the timings).
#[derive(Debug, Clone)]
pub struct AidLadShardReport {
    /// Rows over all shards.
    pub n: usize,
    /// The global number of this shard's first row.
    pub first_row: usize,
    /// Features of the data set (the largest over the shards).
    pub n_features: usize,
    /// The model's full-data objective `E^best = sum_i |y_i - prediction_i|` (NaN without a model).
    pub best_objective: f64,
    /// The best lower bound.
    pub lower_bound: f64,
    /// How the loop ended ([`Status::Converged`], [`Status::MaxIterations`],
    /// [`Status::TimeLimit`] or [`Status::Interrupted`]).
    pub status: Status,
    /// The stopping rule of a converged run.
    pub termination: Option<Termination>,
    /// One record per iteration (as the single-process run's, but for `seconds`).
    pub iterations: Vec<IterRecord>,
    /// Seconds of the initial clustering (sample fit, residuals, k-means).
    pub init_seconds: f64,
    /// Whether the last aggregated solve was certified by the simplex test.
    pub last_certified: bool,
}

impl AidLadShardReport {
    /// How the run ended, for reports (as [`crate::aid::AidRun::stop_name`]).
    pub fn stop_name(&self) -> &'static str {
        self.termination
            .map_or_else(|| self.status.as_str(), |t| t.as_str())
    }
    /// Whether the result is the certified optimum: stopped by the certificate, and the last
    /// aggregated solve a certified vertex.
    pub fn certified(&self) -> bool {
        self.termination == Some(Termination::Optimal) && self.last_certified
    }
}

impl Report for AidLadShardReport {
    fn status(&self) -> Status {
        self.status
    }
}

/// What [`fit_shard`] returns: the model (the same on every shard; `None` when stopped before
/// the first iteration), the report, and on the root of a stopped run the state file.
pub type AidLadShardFit = Fit<Option<LadModel>, AidLadShardReport, AidCheckpoint>;

/// Makes a local check collective: when it failed on any shard, every shard returns an error
/// (its own, or one naming another shard).
fn agree<T>(comm: &mut dyn LadComm, local: Result<T, FitError>) -> Result<T, FitError> {
    let mut bad = [u8::from(local.is_err())];
    comm.or(&mut bad);
    let v = local?;
    if bad[0] != 0 {
        return Err(SolveError::Dimensions("the input of another shard is invalid").into());
    }
    Ok(v)
}

/// The identity of the standard library's floating-point `sum` (its starting value), so that
/// sums pipelined here equal `iter().sum()` bit for bit.
fn sum_start() -> f64 {
    std::iter::empty::<f64>().sum()
}

/// The first `k` entries of a partial Fisher-Yates shuffle of `0..n` driven by `rng` (the
/// draws of the single-process fit, which shuffles the whole array): only displaced entries
/// are stored.
fn partial_shuffle(n: usize, k: usize, rng: &mut Xoshiro256PlusPlus) -> Vec<usize> {
    let mut moved: HashMap<usize, usize> = HashMap::new();
    let mut out = Vec::with_capacity(k);
    for i in 0..k {
        let j = rng.gen_range(i..n);
        let vi = moved.get(&i).copied().unwrap_or(i);
        let vj = moved.get(&j).copied().unwrap_or(j);
        moved.insert(j, vi);
        out.push(vj);
    }
    out
}

/// Words of one row for [`LadComm::gather`]: `y`, the count of entries, then `(column, value)`
/// pairs (every column of a dense row).
fn encode_row(row: Row<'_>, y: f64, out: &mut Vec<f64>) {
    out.push(y);
    match row {
        Row::Dense(v) => {
            out.push(v.len() as f64);
            for (k, &a) in v.iter().enumerate() {
                out.push(k as f64);
                out.push(a);
            }
        }
        Row::Sparse { indices, values } => {
            out.push(indices.len() as f64);
            for (&k, &a) in indices.iter().zip(values) {
                out.push(f64::from(k));
                out.push(a);
            }
        }
    }
}

/// The rows of [`encode_row`] as a data set stored like `like` with `d` features.
fn decode_rows(words: &[f64], d: usize, like: &Features) -> Result<Dataset, FitError> {
    let bad = || SolveError::Dimensions("the sampled rows of the shards");
    let mut y = Vec::new();
    let (mut indptr, mut indices, mut values) = (vec![0usize], Vec::new(), Vec::new());
    let mut at = 0;
    while at < words.len() {
        let cnt = *words.get(at + 1).ok_or_else(bad)? as usize;
        y.push(words[at]);
        let body = words.get(at + 2..at + 2 + 2 * cnt).ok_or_else(bad)?;
        for pair in body.chunks_exact(2) {
            indices.push(pair[0] as u32);
            values.push(pair[1]);
        }
        indptr.push(indices.len());
        at += 2 + 2 * cnt;
    }
    let n = y.len();
    let x = match like {
        Features::Dense(_) => {
            let mut v = vec![0.0; n * d];
            for i in 0..n {
                for e in indptr[i]..indptr[i + 1] {
                    let k = indices[e] as usize;
                    if k >= d {
                        return Err(bad().into());
                    }
                    v[i * d + k] = values[e];
                }
            }
            Features::Dense(DenseMatrix::new(n, d, v)?)
        }
        Features::Sparse(_) => Features::Sparse(CsrMatrix::new(d, indptr, indices, values)?),
    };
    Ok(Dataset::new(x, y, None)?)
}

/// This shard's place in the data set: the rows of all shards, the global number of its first
/// row, the feature count.
pub(crate) struct Layout {
    pub n: usize,
    pub first: usize,
    pub d: usize,
}

fn layout(data: &Dataset, comm: &mut dyn LadComm) -> Result<Layout, FitError> {
    let (local_n, width) = (data.len(), data.n_features() as f64);
    let mut first = 0usize;
    // Rows (exact in f64 below 2^53), the largest width and minus the smallest.
    let mut b = [0.0; 3];
    comm.sum(&mut b, &mut |b, start| {
        if start {
            b.copy_from_slice(&[0.0, f64::NEG_INFINITY, f64::NEG_INFINITY]);
        }
        first = b[0] as usize;
        b[0] += local_n as f64;
        b[1] = b[1].max(width);
        b[2] = b[2].max(-width);
    });
    if b[1] != -b[2] {
        return Err(DataError::Shape {
            what: "features of the shards",
            expected: b[1] as usize,
            found: (-b[2]) as usize,
        }
        .into());
    }
    Ok(Layout {
        n: b[0] as usize,
        first,
        d: b[1] as usize,
    })
}

/// AID-LAD (see [`super::fit`]) on this shard's rows `data` (every shard stores its rows the
/// same way, dense or sparse, with the data set's feature count). Every shard returns the model
/// of [`super::fit`] on the whole data set, bit for bit. The parameters' time limit is measured
/// on the root.
///
/// `ctl`'s part callback receives every iteration's record. Its observer is asked on every
/// shard before every aggregated solve (as in [`super::fit`]); when it asks to stop on any
/// shard, every shard stops there with [`Status::Interrupted`] and the best model so far
/// (`None` before the first iteration): the requests are ORed over the shards. The root's fit
/// then carries the state file ([`AidCheckpoint`]) that [`super::fit`] would have written,
/// but for the measured seconds in it. A state to resume ([`Control::resume_from`], on every
/// shard) is continued at any number of shards, and so is one written by [`super::fit`].
///
/// # Errors
/// On every shard: [`DataError::Empty`] when no shard holds a row, [`ParamError::Incompatible`]
/// when there are fewer rows than coefficients or only some shards resume, [`DataError::Shape`]
/// when the shards' feature counts differ, [`FitError::Checkpoint`] when the state to resume
/// was written for another model, data or parameters, the aggregated solve's error (on the
/// root; the other shards name it), a memory limit of the aggregated rows.
pub fn fit_shard(
    params: &AidLadValidParams,
    data: &Dataset,
    comm: &mut dyn LadComm,
    ctl: &mut Control<'_, AidCheckpoint, IterRecord>,
) -> Result<AidLadShardFit, FitError> {
    let lay = layout(data, comm)?;
    let p = lay.d + usize::from(params.intercept);
    check_rows(lay.n, p)?;
    let Run {
        end,
        at,
        init_seconds,
        checkpoint,
    } = run(params, data, &lay, comm, ctl)?;
    let (status, termination) = end.unwrap_or((Status::Interrupted, None));
    Ok(Fit {
        model: at
            .best
            .as_ref()
            .map(|(b, _)| model_from(b, lay.d, params.intercept)),
        report: AidLadShardReport {
            n: lay.n,
            first_row: lay.first,
            n_features: lay.d,
            best_objective: at.best.as_ref().map_or(f64::NAN, |b| b.1),
            lower_bound: at.lower,
            status,
            termination,
            iterations: at.records,
            init_seconds,
            last_certified: at.last_certified,
        },
        checkpoint,
    })
}

/// A (sharded) run: how the loop ended (as [`iterate`]), the state there, the seconds of the
/// initial clustering, and on the root of a stopped run the state file to continue it.
pub(crate) struct Run {
    pub end: Option<(Status, Option<Termination>)>,
    pub at: LoopAt,
    pub init_seconds: f64,
    pub checkpoint: Option<AidCheckpoint>,
}

/// The initial clustering, or the state `ctl` resumes (every shard must resume the same state
/// file: the run's [`AidCheckpoint`], which does not depend on the number of shards), then the
/// loop. When the observer stops the loop, the root's [`Run::checkpoint`] is the state file of
/// one process holding all the rows stopped at the same point, but for the measured seconds in
/// it (the cluster ids are gathered to the root).
pub(crate) fn run(
    params: &AidLadValidParams,
    data: &Dataset,
    lay: &Layout,
    comm: &mut dyn LadComm,
    ctl: &mut Control<'_, AidCheckpoint, IterRecord>,
) -> Result<Run, FitError> {
    let p = lay.d + usize::from(params.intercept);
    let mut resuming = [u8::from(ctl.resume().is_some())];
    comm.or(&mut resuming);
    let mut stamped = None;
    let (at, init_seconds) = if resuming[0] != 0 {
        let st = stamp(params, data, lay, comm);
        let local = match ctl.resume() {
            Some(ck) => LoopAt::resume(ck, &st, lay, data.len(), p),
            None => Err(ParamError::Incompatible(
                "another shard continues a state file and this one does not",
            )
            .into()),
        };
        stamped = Some(st);
        agree(comm, local)?
    } else {
        let t0 = Instant::now();
        let (labels, k) = initial_labels(params, data, lay, comm)?;
        (LoopAt::start(labels, k), t0.elapsed().as_secs_f64())
    };
    comm.stage_done();
    let (end, at) = iterate(params, data, lay, comm, ctl, at)?;
    let checkpoint = if end.is_none() {
        let st = match stamped {
            Some(st) => st,
            None => stamp(params, data, lay, comm),
        };
        let labels: Vec<f64> = at.labels.iter().map(|&l| f64::from(l)).collect();
        let all = comm.gather(&labels);
        comm.is_root()
            .then(|| at.checkpoint(&all, st, init_seconds))
    } else {
        None
    };
    Ok(Run {
        end,
        at,
        init_seconds,
        checkpoint,
    })
}

/// The fingerprint and run record of a LAD run on the whole data set (a collective): FNV-1a
/// over the rows in row order, the running hashes passed from shard to shard as the bits of two
/// doubles.
fn stamp(
    params: &AidLadValidParams,
    data: &Dataset,
    lay: &Layout,
    comm: &mut dyn LadComm,
) -> Stamp {
    let (what, settings) = stamp_parts(params);
    let start = checkpoint::stamp_start(&what, lay.n, lay.d);
    let mut b = [0.0; 2];
    comm.sum(&mut b, &mut |b, first| {
        let mut h = if first {
            start
        } else {
            [b[0].to_bits(), b[1].to_bits()]
        };
        checkpoint::stamp_rows(&mut h, data);
        b[0] = f64::from_bits(h[0]);
        b[1] = f64::from_bits(h[1]);
    });
    checkpoint::stamp_end([b[0].to_bits(), b[1].to_bits()], settings, lay.n, lay.d)
}

/// The AID-LAD loop at the start of iteration `t`, in a shard's form (what a checkpoint of
/// [`super::fit`] holds, with the partition as a cluster id per local row).
#[derive(Debug, Clone)]
pub(crate) struct LoopAt {
    pub t: usize,
    /// Cluster id of every local row (`0..k`, every id used over the shards).
    pub labels: Vec<u32>,
    pub k: usize,
    /// The best `beta` so far and its objective `E`.
    pub best: Option<(Vec<f64>, f64)>,
    pub lower: f64,
    pub records: Vec<IterRecord>,
    pub last_certified: bool,
    /// The previous iteration's `beta` and, per cluster, the cluster it was split from: AID-LAD
    /// does not use them, the single-process checkpoint format stores them.
    pub prev: Option<Vec<f64>>,
    pub parent: Vec<usize>,
}

impl LoopAt {
    /// The state of `ck` for this shard's rows (`local_n` rows from `lay.first`) after checking
    /// that it was written for this run (`st`) and data (`n` rows, `p` coefficients); with the
    /// initial clustering's seconds.
    fn resume(
        ck: &AidCheckpoint,
        st: &Stamp,
        lay: &Layout,
        local_n: usize,
        p: usize,
    ) -> Result<(Self, f64), FitError> {
        ck.check(AidModel::Lad, st, lay.n, p, false)?;
        let s = ck.to_loop::<Vec<f64>>()?;
        let mut labels = vec![0u32; local_n];
        let mine = lay.first..lay.first + local_n;
        for c in 0..s.clusters.len() {
            for &i in s.clusters.members(c) {
                if mine.contains(&(i as usize)) {
                    labels[i as usize - lay.first] = c as u32;
                }
            }
        }
        let at = Self {
            t: s.t,
            labels,
            k: s.clusters.len(),
            best: s.best,
            lower: s.lower,
            records: s.records,
            last_certified: ck.problem.last_certified,
            prev: s.prev,
            parent: s.parent,
        };
        Ok((at, ck.init_seconds))
    }

    /// The state file of this state, given every shard's cluster ids in row order (`all`).
    fn checkpoint(&self, all: &[f64], st: Stamp, init_seconds: f64) -> AidCheckpoint {
        let labels: Vec<u32> = all.iter().map(|&l| l as u32).collect();
        let loop_state = LoopState {
            t: self.t,
            has_bound: !self.records.is_empty(),
            clusters: Clusters::from_assignment(&labels, self.k),
            parent: self.parent.clone(),
            prev: self.prev.clone(),
            best: self.best.clone(),
            lower: self.lower,
            records: self.records.clone(),
        };
        let ps = ProblemState {
            last_certified: self.last_certified,
            ..ProblemState::default()
        };
        AidCheckpoint::from_loop(st, init_seconds, loop_state, ps)
    }

    pub(crate) fn start(labels: Vec<u32>, k: usize) -> Self {
        Self {
            t: 0,
            labels,
            k,
            best: None,
            lower: f64::NEG_INFINITY,
            records: Vec::new(),
            last_certified: false,
            prev: None,
            parent: Vec::new(),
        }
    }
}

/// How [`iterate`] ended (`Some` stopping rule, or `None` for a stop request) and the loop's
/// state there.
pub(crate) type Ended = (Option<(Status, Option<Termination>)>, LoopAt);

/// Runs the loop from `at` until a stopping rule (then `Some` of it) or a stop request (`None`),
/// and returns the state where it ended: after the last iteration, or at the start of the
/// iteration the observer stopped.
pub(crate) fn iterate<C>(
    params: &AidLadValidParams,
    data: &Dataset,
    lay: &Layout,
    comm: &mut dyn LadComm,
    ctl: &mut Control<'_, C, IterRecord>,
    mut at: LoopAt,
) -> Result<Ended, FitError> {
    let (n, d, local_n) = (lay.n, lay.d, data.len());
    let p = d + usize::from(params.intercept);
    let design = FeatureRows::new(&data.x, params.intercept.then_some(1.0));
    let y = &data.y;
    let settings = &params.settings;
    let loop_start = Instant::now();
    let mut side_code = vec![0u8; local_n];
    let mut abs_r = vec![0.0; local_n];
    loop {
        let it_start = Instant::now();
        // A stop asked on any shard, before the aggregated solve.
        let mut stop_now = [u8::from(stop_requested(ctl.observer(), at.t))];
        comm.or(&mut stop_now);
        if stop_now[0] != 0 {
            return Ok((None, at));
        }
        let k = at.k;
        // The aggregated rows: per cluster the sums of x (k x d), of y and the size.
        let room = data
            .x
            .check_dense_rows("the aggregated (per-cluster) rows", k)
            .map_err(FitError::from);
        agree(comm, room)?;
        let mut sums = vec![0.0; k * (d + 2)];
        let (rows, starts) = rows_by_cluster(&at.labels, k);
        comm.sum_to_root(&mut sums, &mut |b, start| {
            if start {
                b.fill(0.0);
                if d == 0 {
                    // The single-process `sy` is then an iterator sum.
                    b[..k].fill(sum_start());
                }
            }
            // Each cluster's rows in row order, the clusters in parallel.
            let (sx, rest) = b.split_at_mut(k * d);
            let (sy, size) = rest.split_at_mut(k);
            let add = |c: usize, out: &mut [f64], oy: &mut f64, os: &mut f64| {
                for &r in &rows[starts[c]..starts[c + 1]] {
                    let r = r as usize;
                    if !out.is_empty() {
                        add_row(data.x.row(r), out);
                    }
                    *oy += y[r];
                    *os += 1.0;
                }
            };
            let each = sy.par_iter_mut().zip(size.par_iter_mut()).enumerate();
            if d > 0 {
                sx.par_chunks_mut(d)
                    .zip(each)
                    .for_each(|(out, (c, (oy, os)))| add(c, out, oy, os));
            } else {
                each.for_each(|(c, (oy, os))| add(c, &mut [], oy, os));
            }
        });
        // The root solves; [ok, objective, lower bound, certified, beta].
        let mut sol = vec![0.0; p + 4];
        let mut root_err = None;
        if comm.is_root() {
            match solve_aggregated(&sums, k, d, p) {
                Ok(s) => {
                    sol[0] = 1.0;
                    sol[1] = s.objective;
                    sol[2] = s.lower_bound;
                    sol[3] = f64::from(u8::from(s.certified));
                    sol[4..].copy_from_slice(&s.beta);
                }
                Err(e) => root_err = Some(e),
            }
        }
        comm.broadcast(&mut sol);
        if let Some(e) = root_err {
            return Err(e);
        }
        if sol[0] != 1.0 {
            return Err(SolveError::Dimensions("the aggregated problem failed on the root").into());
        }
        let (agg_objective, bound) = (sol[1], sol[2]);
        at.last_certified = sol[3] == 1.0;
        let beta = sol[4..].to_vec();
        at.lower = at.lower.max(bound);

        // One pass: side codes and |r_i|; E^t in the single-process chunks of rows.
        side_code
            .par_iter_mut()
            .zip(abs_r.par_iter_mut())
            .enumerate()
            .for_each(|(i, (s, a))| {
                (*s, *a) = side_of(y[i], design.dot(i, &beta));
            });
        let e = full_objective(comm, &abs_r, lay.first);
        if at.best.as_ref().is_none_or(|(_, b)| e < *b) {
            at.best = Some((beta.clone(), e));
        }
        let e_best = at.best.as_ref().map_or(f64::INFINITY, |b| b.1);
        let gap = rel_gap(e_best, at.lower);

        // Per cluster the codes seen (bit c for code c); the last byte is the root's clock.
        let mut seen = vec![0u8; k + 1];
        for (&l, &code) in at.labels.iter().zip(&side_code) {
            seen[l as usize] |= 1 << code;
        }
        if comm.is_root()
            && settings
                .time_limit
                .is_some_and(|l| loop_start.elapsed() >= l)
        {
            seen[k] = 1;
        }
        comm.or(&mut seen);
        let violating = seen[..k].iter().filter(|&&s| s == 3).count();
        let rec = IterRecord {
            t: at.t,
            clusters: k,
            r: k as f64 / n.max(1) as f64,
            lower_bound: at.lower,
            bound_t: bound,
            aggregated_objective: agg_objective,
            objective: e,
            best_objective: e_best,
            gap,
            violating,
            seconds: 0.0,
        };
        // The aggregated LP always gives a bound.
        let stop = stop_rule(violating, true, gap, settings, at.t, || seen[k] != 0);
        if stop.is_none() {
            // A violating cluster becomes its code-0 rows, then its code-1 rows.
            let mut base = vec![0u32; k];
            let mut next = 0u32;
            at.parent.clear();
            for (c, (b, &s)) in base.iter_mut().zip(&seen[..k]).enumerate() {
                *b = next;
                let pieces = if s == 3 { 2 } else { 1 };
                next += pieces;
                at.parent.extend(std::iter::repeat_n(c, pieces as usize));
            }
            at.labels.par_iter_mut().enumerate().for_each(|(i, l)| {
                let c = *l as usize;
                *l = base[c]
                    + if seen[c] == 3 {
                        u32::from(side_code[i])
                    } else {
                        0
                    };
            });
            at.k = next as usize;
        }
        at.prev = Some(beta);
        let rec = IterRecord {
            seconds: it_start.elapsed().as_secs_f64(),
            ..rec
        };
        ctl.part_done(&rec);
        at.records.push(rec);
        comm.stage_done();
        if stop.is_some() {
            if at.best.is_none() {
                return Err(SolveError::NonFinite {
                    what: "AID objective",
                }
                .into());
            }
            return Ok((stop, at));
        }
        at.t += 1;
    }
}

/// The local rows of every cluster in row order: `rows[starts[c]..starts[c + 1]]` for cluster
/// `c < k` (empty when this shard has none of its rows).
fn rows_by_cluster(labels: &[u32], k: usize) -> (Vec<u32>, Vec<usize>) {
    let mut starts = vec![0usize; k + 1];
    for &l in labels {
        starts[l as usize + 1] += 1;
    }
    for c in 0..k {
        starts[c + 1] += starts[c];
    }
    let mut at = starts.clone();
    let mut rows = vec![0u32; labels.len()];
    for (i, &l) in labels.iter().enumerate() {
        rows[at[l as usize]] = i as u32;
        at[l as usize] += 1;
    }
    (rows, starts)
}

/// The aggregated LP from the cluster sums `[sx (k x d), sy (k), size (k)]`, as the
/// single-process fit builds it.
fn solve_aggregated(sums: &[f64], k: usize, d: usize, p: usize) -> Result<LadSolution, FitError> {
    let (sx, rest) = sums.split_at(k * d);
    let (sy, size) = rest.split_at(k);
    let mut rows = vec![0.0; k * p];
    for c in 0..k {
        rows[c * p..c * p + d].copy_from_slice(&sx[c * d..(c + 1) * d]);
        if p > d {
            rows[c * p + d] = size[c];
        }
    }
    let rows = DenseMatrix::new(k, p, rows)?;
    solve_design(&DenseRows::new(&rows, None), sy, None)
}

/// `sum_i |r_i|` over all shards, added as the single-process pass adds it: per chunk of
/// 4096 global rows from zero, the chunks' sums in order.
fn full_objective(comm: &mut dyn LadComm, abs_r: &[f64], first: usize) -> f64 {
    // [sum of the finished chunks, the open chunk].
    let mut b = [0.0; 2];
    comm.sum(&mut b, &mut |b, start| {
        if start {
            b.copy_from_slice(&[sum_start(), 0.0]);
        }
        for (o, &a) in abs_r.iter().enumerate() {
            let g = first + o;
            if g % EVAL_CHUNK == 0 && g > 0 {
                b[0] += b[1];
                b[1] = 0.0;
            }
            b[1] += a;
        }
    });
    b[0] + b[1]
}

/// The initial partition (see [`super::fit`]): a cluster id per local row and the number of
/// clusters.
pub(crate) fn initial_labels(
    params: &AidLadValidParams,
    data: &Dataset,
    lay: &Layout,
    comm: &mut dyn LadComm,
) -> Result<(Vec<u32>, usize), FitError> {
    let (n, d, first, local_n) = (lay.n, lay.d, lay.first, data.len());
    let p = d + usize::from(params.intercept);
    let k0 = initial_k(params, n, p);
    if k0 >= n {
        return Ok(((first..first + local_n).map(|g| g as u32).collect(), n));
    }
    let mine = first..first + local_n;
    // The sample: the single-process draws, the rows gathered on the root in row order.
    let s = sample_size(n, p);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(params.seed);
    let mut sample = partial_shuffle(n, s, &mut rng);
    sample.sort_unstable();
    let mut words = Vec::new();
    for &g in sample.iter().filter(|&&g| mine.contains(&g)) {
        encode_row(data.x.row(g - first), data.y[g - first], &mut words);
    }
    let gathered = comm.gather(&words);
    // [beta^init, ok]; the sample's LAD failing gives beta = 0, as in the single-process fit.
    let mut beta0 = vec![0.0; p + 1];
    let mut root_err = None;
    if comm.is_root() {
        match decode_rows(&gathered, d, &data.x) {
            Ok(sub) => {
                if let Ok((_, sol)) = fit_lad(&sub, params.intercept, None) {
                    beta0[..p].copy_from_slice(&sol.beta);
                }
                beta0[p] = 1.0;
            }
            Err(e) => root_err = Some(e),
        }
    }
    comm.broadcast(&mut beta0);
    if let Some(e) = root_err {
        return Err(e);
    }
    if beta0[p] != 1.0 {
        return Err(SolveError::Dimensions("the sampled rows of the shards").into());
    }
    let beta0 = &beta0[..p];
    let design = FeatureRows::new(&data.x, params.intercept.then_some(1.0));
    let r: Vec<f64> = (0..local_n)
        .into_par_iter()
        .map(|i| data.y[i] - design.dot(i, beta0))
        .collect();
    // Standard deviations of r and y (population), summed in row order.
    let mut m = [0.0; 2];
    comm.sum(&mut m, &mut |b, start| {
        if start {
            b.fill(sum_start());
        }
        for &v in &r {
            b[0] += v;
        }
        for &v in &data.y {
            b[1] += v;
        }
    });
    let (mr, my) = (m[0] / n as f64, m[1] / n as f64);
    let mut v = [0.0; 2];
    comm.sum(&mut v, &mut |b, start| {
        if start {
            b.fill(sum_start());
        }
        for &v in &r {
            b[0] += (v - mr) * (v - mr);
        }
        for &v in &data.y {
            b[1] += (v - my) * (v - my);
        }
    });
    let sd = |var: f64| {
        let var = var / n as f64;
        if var > 0.0 {
            var.sqrt()
        } else {
            1.0
        }
    };
    let (sr, sy) = (sd(v[0]), sd(v[1]));
    let mut pts = vec![0.0; 2 * local_n];
    pts.par_chunks_mut(2).enumerate().for_each(|(i, q)| {
        q[0] = r[i] / sr;
        q[1] = data.y[i] / sy;
    });
    // One k-means iteration (`kmeans_one_iteration` on the whole data set).
    let k = k0.clamp(1, n);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(kmeans_seed(params.seed));
    let seeds = partial_shuffle(n, k, &mut rng);
    let mut centres = vec![0.0; 2 * k];
    comm.sum(&mut centres, &mut |b, start| {
        if start {
            b.fill(0.0);
        }
        for (c, &g) in seeds.iter().enumerate() {
            if mine.contains(&g) {
                let o = g - first;
                b[2 * c..2 * c + 2].copy_from_slice(&pts[2 * o..2 * o + 2]);
            }
        }
    });
    let mut assign = vec![0u32; local_n];
    assign_nearest(&pts, 2, &centres, &mut assign);
    // Update step: per centre the sums of its points and the count, in row order.
    let mut acc = vec![0.0; 3 * k];
    comm.sum(&mut acc, &mut |b, start| {
        if start {
            b.fill(0.0);
        }
        let (sum, cnt) = b.split_at_mut(2 * k);
        for (i, &a) in assign.iter().enumerate() {
            let a = a as usize;
            cnt[a] += 1.0;
            sum[2 * a] += pts[2 * i];
            sum[2 * a + 1] += pts[2 * i + 1];
        }
    });
    for c in 0..k {
        let cnt = acc[2 * k + c];
        if cnt > 0.0 {
            centres[2 * c] = acc[2 * c] / cnt;
            centres[2 * c + 1] = acc[2 * c + 1] / cnt;
        }
    }
    assign_nearest(&pts, 2, &centres, &mut assign);
    // Empty centres are dropped; the others keep their order.
    let mut used = vec![0u8; k];
    for &a in &assign {
        used[a as usize] = 1;
    }
    comm.or(&mut used);
    let mut id = vec![0u32; k];
    let mut next = 0u32;
    for (i, &u) in id.iter_mut().zip(&used) {
        *i = next;
        next += u32::from(u);
    }
    let labels = assign.iter().map(|&a| id[a as usize]).collect();
    Ok((labels, next as usize))
}
