//! Kernel SVMs (C-SVC, one-class, epsilon-SVR) on a data set split by rows across processes:
//! each process (shard) holds a contiguous block of rows, builds the formulation's box QP over
//! its own variables exactly as [`super::train`] builds it over all of them, and the
//! row-partitioned SMO ([`crate::solver::smo::shard`], or the block engine's
//! [`crate::solver::block::shard`] with `--solver block`) solves the whole problem with its
//! reductions through a [`Collective`].
//!
//! | formulation | local variables | key of local variable (the single process's position) |
//! |---|---|---|
//! | C-SVC, pair (s, t) | rows of class s, then of class t, in row order | class s: rows of class s on earlier shards + rank within; class t: all of class s + the same within t |
//! | one-class | the rows | global row |
//! | epsilon-SVR | `a` of the rows, then `a*` | `a_i`: global row; `a*_i`: `n` + global row |
//!
//! Multiclass C-SVC is one-vs-one over the pairs in LIBSVM's order, as [`super::train`]. The
//! one-class start (`nu sum(w)` spread over the first rows) needs every bound before a shard's
//! rows: the bounds are all-gathered once (`n` doubles).
//!
//! The model is assembled on every shard: the support vectors of all shards are all-gathered
//! (their rows and coefficients, `O(#SV d)` doubles) and ordered as one process orders them (by
//! class in label order, then by row).
//!
//! **Stop and resume.** A fit stopped early (the observer, an iteration or time limit) returns
//! the single process's [`FitCheckpoint`] on every shard, built by the same functions as
//! [`super::train::fit`]'s: finished subproblems with their coefficients over the subproblem's
//! samples (in key order), the stopped one with the sharded solver's snapshot in the single
//! process's form, the rest not started. Its fingerprint and run record hash the whole data set
//! in row order: each shard in turn continues the two hashes over its rows and broadcasts them
//! (`P` broadcasts of two doubles). A shard continues such a checkpoint at any number of shards,
//! and one process continues it, as it continues its own (see [`crate::solver::smo::shard`] for
//! what is exact).

use super::checkpoint::{self, DoneSub, FitCheckpoint, SubState};
use super::model::SvmModel;
use super::params::{Probability, SvmType, SvmValidParams};
use super::report::SubproblemReport;
use super::train::{
    check_classes, check_finite, check_weights, class_order, class_weight, sub_state, Bounds,
    DecisionFunction, FitReport, DAMAGED_CHECKPOINT,
};
use crate::data::{CsrMatrix, Dataset, DenseMatrix, Features};
use crate::error::{CheckpointError, DataError, FitError, ParamError, SolveError};
use crate::fit::{Control, Fit};
use crate::kernel::cache::CacheStats;
use crate::kernel::qmatrix::ShardQ;
use crate::kernel::KernelSpec;
use crate::persist::{self, DataShape, Fnv, RunRecord};
use crate::solver::block;
use crate::solver::engine;
use crate::solver::smo::shard::{self, Collective, ShardProblem};
use crate::solver::smo::{Smo, SmoSnapshot};
use crate::solver::{BoxQp, Equality, Observer, SolveInfo, Status};

/// One process's view of a data set split by rows across processes (row blocks in process
/// order), for [`fit_shard`].
pub struct KernelShard<'a> {
    /// Number of rows of all the shards.
    pub n_samples: usize,
    /// Global number of this shard's first row (the rows of earlier shards).
    pub first: usize,
    /// The labels of all the shards in order of first appearance:
    /// [`crate::data::first_appearances`] of the shards' own labels in order of first
    /// appearance, concatenated in row order (read for C-SVC only).
    pub labels: Vec<f64>,
    /// The collective operations across the shards.
    pub comm: &'a mut dyn Collective,
}

/// Fits a C-SVC (`-s 0`), one-class (`-s 2`) or epsilon-SVR (`-s 3`) kernel SVM on this
/// process's shard of a data set split by rows: every shard calls it with its own rows (`data.x`
/// as wide as the whole data set's, in the storage a single process would choose) and the same
/// parameters; every shard gets the same model and report. The engine is planned as
/// [`super::fit`] plans it ([`super::SvmSolver`]): with the pair engine (`Smo`, `Auto`) and
/// shrinking off (`-h 0`) the model is the one [`super::fit`] gives bit for bit; with shrinking
/// on, the same optimum to the solver's tolerance (see [`crate::solver::smo::shard`]); with the
/// block engine (`Block`, [`crate::solver::block::shard`], the working-set size that of the
/// whole problem; the shards do not shrink) the model is [`super::fit`]'s with the same engine
/// and shrinking off bit for bit, and with shrinking on the same optimum to the tolerance.
/// The observer and the time limit are consulted on every shard and their decisions agreed, so
/// every shard stops at the same iteration; a fit stopped early returns the checkpoint of
/// [`super::fit`] (the same on every shard; a stopped block solve is recorded as not started,
/// where one process keeps its block snapshot, and a block snapshot starts over on the shards),
/// and [`Control::resume_from`] continues one, made
/// by shards (at any number of them) or by one process (see the module documentation). Every
/// shard must be given the same checkpoint.
///
/// # Errors
/// As [`super::fit`], on every shard when any shard's input is invalid;
/// [`ParamError::Incompatible`] for nu-SVC, nu-SVR, probability estimates (`-b 1`) or a
/// precomputed kernel; [`FitError::Checkpoint`] when the shards were given different
/// checkpoints, or one made with other data or parameters.
pub fn fit_shard(
    params: &SvmValidParams,
    data: &Dataset,
    shard: KernelShard<'_>,
    ctl: &mut Control<'_, FitCheckpoint>,
) -> Result<Fit<SvmModel, FitReport, FitCheckpoint>, FitError> {
    let incompatible =
        |m: &'static str| -> Result<_, FitError> { Err(ParamError::Incompatible(m).into()) };
    match params.svm_type {
        SvmType::CSvc | SvmType::OneClass | SvmType::EpsSvr => {}
        SvmType::NuSvc | SvmType::NuSvr => {
            return incompatible(
                "a data set split across processes is trained by C-SVC, one-class and epsilon-SVR (-s 0, 2, 3)",
            )
        }
    }
    if params.probability == Probability::On {
        return incompatible("probability estimates (-b 1) are not computed across processes");
    }
    if params.kernel.resolve(1) == KernelSpec::Precomputed {
        return incompatible("a precomputed kernel cannot be split across processes");
    }
    if shard.n_samples == 0 {
        return Err(DataError::Empty.into());
    }
    let KernelShard {
        n_samples,
        first,
        labels,
        comm,
    } = shard;
    // Local checks, made collective (no shard waits in an operation another has left).
    let mut local: Result<(), FitError> = Ok(());
    if let Some(w) = &data.weights {
        local = check_weights(w, data.len()).map_err(FitError::from);
        if local.is_ok() && w.contains(&0.0) {
            local = Err(ParamError::Incompatible(
                "samples of weight 0 cannot be dropped from a data set split across processes",
            )
            .into());
        }
    }
    if local.is_ok() && first.saturating_add(data.len()) > n_samples {
        local = Err(DataError::Shape {
            what: "rows of the shards",
            expected: n_samples,
            found: first.saturating_add(data.len()),
        }
        .into());
    }
    agree(comm, local)?;
    let resume = ctl.resume();
    same_resume(comm, resume)?;
    let kernel = params.kernel.resolve(data.n_features());
    // The engine is planned from the whole data set's rows, the same on every process.
    let totals = sum_counts(comm, &[engine::stored_values(&data.x), data.len()]);
    let row_cost = engine::cost_of(kernel, totals[0], totals[1]);
    let mut ctx = Ctx {
        params,
        data,
        kernel,
        row_cost,
        first,
        n_samples,
        comm,
        obs: ctl.observer(),
        cache: CacheStats::default(),
        resume,
        subs: Vec::new(),
    };
    // A pass over the data (and P broadcasts): only when a checkpoint is checked or written.
    let mut id = None;
    if let Some(c) = resume {
        let (fp, run) = ctx.identity();
        persist::check_resume(
            checkpoint::FILE,
            (c.fingerprint, c.run.as_ref()),
            (fp, &run),
        )?;
        id = Some((fp, run));
    }
    let mut report = FitReport::default();
    let model = match params.svm_type {
        SvmType::CSvc => ctx.classifier(&labels, &mut report)?,
        _ => ctx.single(&mut report)?,
    };
    report.cache = ctx.cache;
    for w in &report.warnings {
        log::warn!("{w}");
    }
    // The status is the same on every shard, so all of them take part in the hashing or none.
    let checkpoint = if report.status() == Status::Converged {
        None
    } else {
        let (fingerprint, run) = match id {
            Some(id) => id,
            None => ctx.identity(),
        };
        Some(FitCheckpoint {
            fingerprint,
            run: Some(run),
            subs: std::mem::take(&mut ctx.subs),
        })
    };
    Ok(Fit {
        model,
        report,
        checkpoint,
    })
}

/// Refuses shards given different checkpoints (or some one and others none): they would solve
/// different problems. Compares the checkpoints' checksums (one all-gather).
fn same_resume(comm: &mut dyn Collective, resume: Option<&FitCheckpoint>) -> Result<(), FitError> {
    let mine = match resume {
        None => [0.0, 0.0],
        Some(c) => {
            let bytes = c.to_bytes();
            let mut sum = [0u8; 8];
            sum.copy_from_slice(&bytes[bytes.len().saturating_sub(8)..]);
            [1.0, f64::from_bits(u64::from_le_bytes(sum))]
        }
    };
    let mut all = vec![0.0; 2 * comm.size()];
    comm.all_gather(&mine, &mut all);
    let same = all
        .chunks_exact(2)
        .all(|r| r[0].to_bits() == mine[0].to_bits() && r[1].to_bits() == mine[1].to_bits());
    if same {
        Ok(())
    } else {
        Err(CheckpointError::Mismatch {
            file: checkpoint::FILE,
            reason: "the shards were given different states to continue from",
        }
        .into())
    }
}

/// An error on any shard is an error on every shard (this shard's own error first).
fn agree<T, E: Into<FitError>>(
    comm: &mut dyn Collective,
    local: Result<T, E>,
) -> Result<T, FitError> {
    let mut all = vec![0.0; comm.size()];
    let bad = if local.is_err() { 1.0 } else { 0.0 };
    comm.all_gather(&[bad], &mut all);
    let v = local.map_err(Into::into)?;
    if all.iter().any(|&b| b != 0.0) {
        return Err(SolveError::Dimensions(shard::OTHER_SHARD).into());
    }
    Ok(v)
}

/// Sums of counts over the shards.
fn sum_counts(comm: &mut dyn Collective, mine: &[usize]) -> Vec<usize> {
    let k = mine.len();
    let v: Vec<f64> = mine.iter().map(|&c| c as f64).collect();
    let mut all = vec![0.0; k * comm.size()];
    comm.all_gather(&v, &mut all);
    (0..k)
        .map(|c| {
            all.iter()
                .skip(c)
                .step_by(k.max(1))
                .map(|&x| x as usize)
                .sum()
        })
        .collect()
}

/// What every solve of a fit shares.
struct Ctx<'a, 'o, 'r> {
    params: &'a SvmValidParams,
    data: &'a Dataset,
    kernel: KernelSpec,
    /// [`engine::row_cost`] of the whole data set.
    row_cost: usize,
    first: usize,
    n_samples: usize,
    comm: &'a mut dyn Collective,
    obs: &'o mut dyn Observer,
    cache: CacheStats,
    /// The checkpoint to continue.
    resume: Option<&'r FitCheckpoint>,
    /// The checkpoint's subproblems of this fit, as [`super::train::fit`] records them.
    subs: Vec<SubState>,
}

/// One local support vector: `(class, global row, coefficients)`.
type LocalSv = (usize, usize, Vec<f64>);

/// A solved local problem: the local solution, the solver's account, the solution of all
/// shards by key and the snapshot of a stopped solve.
struct Solved {
    alpha: Vec<f64>,
    info: SolveInfo,
    all: Vec<f64>,
    snapshot: Option<SmoSnapshot>,
}

/// The report of a solve as a decision function for [`sub_state`]: `coef` over the
/// subproblem's samples in key order (as one process keeps it).
fn decision(info: &SolveInfo, coef: Vec<f64>, n_sv: usize, n_bsv: usize) -> DecisionFunction {
    DecisionFunction {
        coef,
        rho: info.rho,
        report: SubproblemReport::of(info, n_sv, n_bsv),
        cache: CacheStats::default(),
    }
}

impl Ctx<'_, '_, '_> {
    /// Solves one formulation of `samples` samples (of all shards) on this shard: local
    /// variables on local samples `sample` with signs, keys, `p`, bounds and start, the
    /// equality's right-hand side `delta` of the whole problem, continuing from `resume` when
    /// given. The engine and the memory are planned as one process plans them
    /// ([`crate::solver::engine::plan`]): the block engine when asked for or when `resume` is
    /// a block snapshot. The sharded block engine keeps no snapshot: it solves a block
    /// snapshot's problem from the start.
    #[allow(clippy::too_many_arguments)] // the local box QP, one array per field
    fn solve(
        &mut self,
        samples: usize,
        sample: Vec<u32>,
        y: &[i8],
        keys: &[usize],
        p: &[f64],
        upper: &[f64],
        mut alpha: Vec<f64>,
        delta: f64,
        resume: Option<&SmoSnapshot>,
    ) -> Result<Solved, FitError> {
        let plan = engine::plan(
            self.params.planned_engine(resume),
            self.params.cache_bytes,
            samples,
            self.row_cost,
        );
        let q = ShardQ::new(
            &self.data.x,
            self.kernel,
            self.first,
            self.n_samples,
            sample,
            y.to_vec(),
            plan.cache_bytes,
        );
        let mut q = agree(self.comm, q)?;
        let prob = ShardProblem {
            qp: BoxQp {
                p,
                y,
                upper,
                equality: Equality::Sum { delta },
                fixed: None,
            },
            keys,
        };
        let out = match &plan.block {
            Some(b) => block::shard::solve(
                &mut q,
                &prob,
                &mut alpha,
                &self.params.solver,
                b,
                self.obs,
                self.comm,
            )?,
            None => {
                let smo = Smo::new(&self.params.solver)
                    .resume(resume)
                    .keep_snapshot(true);
                shard::solve(&mut q, &prob, &mut alpha, &smo, self.obs, self.comm)?
            }
        };
        let c = out.cache;
        self.cache.hits += c.hits;
        self.cache.misses += c.misses;
        check_finite(&out.info)?;
        Ok(Solved {
            alpha,
            info: out.info,
            all: out.alpha,
            snapshot: out.snapshot,
        })
    }

    /// The fingerprint and run record of [`FitCheckpoint`] for the whole data set: the hashes
    /// of one process, continued by each shard over its rows in turn.
    fn identity(&mut self) -> (u64, RunRecord) {
        let width = self.data.n_features();
        let mut fp = checkpoint::params_hash(self.params, width);
        let mut rows = Fnv::new();
        persist::hash_shape(&mut fp, self.n_samples, width);
        persist::hash_shape(&mut rows, self.n_samples, width);
        let rank = self.comm.rank();
        for r in 0..self.comm.size() {
            if r == rank {
                persist::hash_rows(&mut fp, self.data);
                persist::hash_rows(&mut rows, self.data);
            }
            // The states as bits: the broadcast copies them unchanged.
            let mut buf = [f64::from_bits(fp.0), f64::from_bits(rows.0)];
            self.comm.broadcast(r, &mut buf);
            fp.0 = buf[0].to_bits();
            rows.0 = buf[1].to_bits();
        }
        let mut run = checkpoint::settings(self.params, width);
        run.data_shape(
            checkpoint::DATA_ROLE,
            DataShape::new(self.n_samples, width, rows.0),
        );
        (fp.0, run)
    }

    /// C-SVC, one binary problem per pair of classes.
    fn classifier(
        &mut self,
        all_labels: &[f64],
        report: &mut FitReport,
    ) -> Result<SvmModel, FitError> {
        let params = self.params;
        let data = self.data;
        let labels = class_order(all_labels);
        check_classes(&labels, params, report)?;
        let nc = labels.len();
        let mut members: Vec<Vec<u32>> = vec![Vec::new(); nc];
        let mut local: Result<(), FitError> = Ok(());
        for (i, &v) in data.y.iter().enumerate() {
            match labels.iter().position(|&l| l == v) {
                Some(c) => members[c].push(i as u32),
                None => {
                    local = Err(SolveError::Dimensions(
                        "a label of this shard is missing from the shards' labels",
                    )
                    .into())
                }
            }
        }
        agree(self.comm, local)?;
        // Rows of each class on earlier shards, and in all.
        let counts: Vec<f64> = members.iter().map(|m| m.len() as f64).collect();
        let mut all = vec![0.0; nc * self.comm.size()];
        self.comm.all_gather(&counts, &mut all);
        let rank = self.comm.rank();
        let before: Vec<usize> = (0..nc)
            .map(|c| (0..rank).map(|r| all[r * nc + c] as usize).sum())
            .collect();
        let total: Vec<usize> = (0..nc)
            .map(|c| {
                (0..self.comm.size())
                    .map(|r| all[r * nc + c] as usize)
                    .sum()
            })
            .collect();
        let cw: Vec<f64> = labels.iter().map(|&l| class_weight(params, l)).collect();
        // Coefficients per local row: row k of class c holds `nc - 1` of them, as in the model.
        let mut coef = vec![vec![0.0; nc - 1]; data.len()];
        let mut nonzero = vec![false; data.len()];
        let mut rho = Vec::with_capacity(nc * (nc - 1) / 2);
        let mut interrupted = false;
        for i in 0..nc {
            for j in i + 1..nc {
                let pair = rho.len();
                let mut sub = SubproblemReport::not_reached(Some((labels[i], labels[j])));
                if interrupted {
                    rho.push(0.0);
                    report.subproblems.push(sub);
                    self.subs.push(SubState::NotStarted);
                    continue;
                }
                let (mi, mj) = (&members[i], &members[j]);
                let sample: Vec<u32> = mi.iter().chain(mj).copied().collect();
                let keys: Vec<usize> = (0..mi.len())
                    .map(|k| before[i] + k)
                    .chain((0..mj.len()).map(|k| total[i] + before[j] + k))
                    .collect();
                // Class i's rows take pair (i, j) in coefficient row j - 1; class j's rows in
                // row i.
                let mut put = |k: usize, r: u32, c: f64| {
                    let slot = if k < mi.len() { j - 1 } else { i };
                    coef[r as usize][slot] = c;
                    if c != 0.0 {
                        nonzero[r as usize] = true;
                    }
                };
                let saved = self.resume.and_then(|c| c.subs.get(pair));
                if let Some(SubState::Done(d)) = saved {
                    if d.coef.len() != total[i] + total[j] {
                        return Err(DAMAGED_CHECKPOINT.into());
                    }
                    for (k, &r) in sample.iter().enumerate() {
                        put(k, r, d.coef[keys[k]]);
                    }
                    sub = SubproblemReport {
                        classes: sub.classes,
                        ..d.report.clone()
                    };
                    rho.push(d.rho);
                    report.subproblems.push(sub);
                    self.subs.push(SubState::Done(d.clone()));
                    continue;
                }
                let snap = match saved {
                    Some(SubState::Stopped { snap, .. }) => Some(&**snap),
                    _ => None,
                };
                let y: Vec<i8> = (0..sample.len())
                    .map(|k| if k < mi.len() { 1 } else { -1 })
                    .collect();
                let upper: Vec<f64> = sample
                    .iter()
                    .zip(&y)
                    .map(|(&r, &s)| {
                        let class_w = if s > 0 { cw[i] } else { cw[j] };
                        params.c * class_w * data.weight(r as usize)
                    })
                    .collect();
                let p = vec![-1.0; sample.len()];
                let alpha0 = vec![0.0; sample.len()];
                let out = self.solve(
                    total[i] + total[j],
                    sample.clone(),
                    &y,
                    &keys,
                    &p,
                    &upper,
                    alpha0,
                    0.0,
                    snap,
                )?;
                let info = out.info;
                let c: Vec<f64> = out
                    .alpha
                    .iter()
                    .zip(&y)
                    .map(|(a, &s)| a * f64::from(s))
                    .collect();
                let (n_sv, n_bsv) = Bounds::new(out.alpha, upper).counts(SvmType::CSvc, &c);
                let n = sum_counts(self.comm, &[n_sv, n_bsv]);
                for (k, &r) in sample.iter().enumerate() {
                    put(k, r, c[k]);
                }
                // The pair's coefficients by key, as one process keeps them: class i's
                // variables come first.
                let all: Vec<f64> = out
                    .all
                    .iter()
                    .enumerate()
                    .map(|(k, a)| a * if k < total[i] { 1.0 } else { -1.0 })
                    .collect();
                let f = decision(&info, all, n[0], n[1]);
                self.subs.push(sub_state(&f, out.snapshot, None));
                sub = SubproblemReport {
                    classes: sub.classes,
                    ..f.report
                };
                if info.status == Status::Interrupted {
                    interrupted = true;
                }
                rho.push(info.rho);
                report.subproblems.push(sub);
            }
        }
        let class_of: Vec<usize> = {
            let mut c = vec![0; data.len()];
            for (k, m) in members.iter().enumerate() {
                for &r in m {
                    c[r as usize] = k;
                }
            }
            c
        };
        let svs: Vec<LocalSv> = (0..data.len())
            .filter(|&r| nonzero[r])
            .map(|r| (class_of[r], self.first + r, std::mem::take(&mut coef[r])))
            .collect();
        let (sv, idx, class, sv_coef) = self.gather_svs(&svs, nc - 1)?;
        let mut n_sv = vec![0usize; nc];
        for &c in &class {
            n_sv[c] += 1;
        }
        Ok(SvmModel {
            svm_type: params.svm_type,
            kernel: self.kernel,
            labels,
            n_sv,
            sv,
            sv_indices: Some(idx),
            sv_coef,
            rho,
            prob_a: Vec::new(),
            prob_b: Vec::new(),
            sv_norms: Vec::new(),
        }
        .with_norms())
    }

    /// One-class and epsilon-SVR: one problem over all rows.
    fn single(&mut self, report: &mut FitReport) -> Result<SvmModel, FitError> {
        let params = self.params;
        let l = self.data.len();
        let (first, n) = (self.first, self.n_samples);
        let (coef, rho, sub) = match self.resume.and_then(|c| c.subs.first()) {
            Some(SubState::Done(d)) if d.coef.len() != n => {
                return Err(DAMAGED_CHECKPOINT.into());
            }
            Some(SubState::Done(d)) => {
                // As one process records a finished single problem: without Platt's pair.
                self.subs.push(SubState::Done(DoneSub {
                    prob: None,
                    ..d.clone()
                }));
                (d.coef[first..first + l].to_vec(), d.rho, d.report.clone())
            }
            other => {
                let snap = match other {
                    Some(SubState::Stopped { snap, .. }) => Some(&**snap),
                    _ => None,
                };
                self.solve_single(snap)?
            }
        };
        report.subproblems.push(sub);
        let svs: Vec<LocalSv> = (0..l)
            .filter(|&i| coef[i] != 0.0)
            .map(|i| (0, self.first + i, vec![coef[i]]))
            .collect();
        let (sv, idx, _, sv_coef) = self.gather_svs(&svs, 1)?;
        Ok(SvmModel {
            svm_type: params.svm_type,
            kernel: self.kernel,
            labels: Vec::new(),
            n_sv: Vec::new(),
            sv,
            sv_coef,
            sv_indices: Some(idx),
            rho: vec![rho],
            prob_a: Vec::new(),
            prob_b: Vec::new(),
            sv_norms: Vec::new(),
        }
        .with_norms())
    }

    /// Solves the one-class or epsilon-SVR problem (from `resume` when given): the local
    /// coefficients, rho and the report; records the subproblem's state.
    fn solve_single(
        &mut self,
        resume: Option<&SmoSnapshot>,
    ) -> Result<(Vec<f64>, f64, SubproblemReport), FitError> {
        let params = self.params;
        let data = self.data;
        let l = data.len();
        let c: Vec<f64> = (0..l).map(|i| params.c * data.weight(i)).collect();
        let keys: Vec<usize>;
        let sample: Vec<u32>;
        let y: Vec<i8>;
        let (p, upper, alpha0): (Vec<f64>, Vec<f64>, Vec<f64>);
        let delta;
        if params.svm_type == SvmType::OneClass {
            // As one process: bounds w_i (= c_i / C), the start nu sum(w) spread over the
            // first rows; every shard replays the loop over all the bounds.
            let u: Vec<f64> = c.iter().map(|v| v / params.c).collect();
            let mut all = Vec::new();
            self.comm.all_gather_var(&u, &mut all);
            let sum: f64 = all.iter().sum();
            delta = params.nu * sum;
            let mut left = delta;
            let mut start = vec![0.0; all.len()];
            for (a, &ui) in start.iter_mut().zip(&all) {
                *a = ui.min(left);
                left -= *a;
            }
            let mine = self.first.min(start.len())..(self.first + l).min(start.len());
            alpha0 = start[mine].to_vec();
            let whole = if alpha0.len() == l {
                Ok(())
            } else {
                Err(SolveError::Dimensions(
                    "the shards' rows must add up to n_samples",
                ))
            };
            agree(self.comm, whole)?;
            keys = (0..l).map(|k| self.first + k).collect();
            sample = (0..l as u32).collect();
            y = vec![1; l];
            p = vec![0.0; l];
            upper = u;
        } else {
            let eps = params.epsilon;
            let z = &data.y;
            keys = (0..l)
                .map(|k| self.first + k)
                .chain((0..l).map(|k| self.n_samples + self.first + k))
                .collect();
            sample = (0..l as u32).chain(0..l as u32).collect();
            y = (0..2 * l).map(|k| if k < l { 1 } else { -1 }).collect();
            p = (0..2 * l)
                .map(|k| if k < l { eps - z[k] } else { eps + z[k - l] })
                .collect();
            upper = c.iter().chain(&c).copied().collect();
            alpha0 = vec![0.0; 2 * l];
            delta = 0.0;
        }
        let n = self.n_samples;
        let out = self.solve(n, sample, &y, &keys, &p, &upper, alpha0, delta, resume)?;
        let info = out.info;
        let alpha = out.alpha;
        let one_class = params.svm_type == SvmType::OneClass;
        let coef: Vec<f64> = if one_class {
            alpha.clone()
        } else {
            (0..l).map(|i| alpha[i] - alpha[i + l]).collect()
        };
        let (n_sv, n_bsv) = Bounds::new(alpha, upper).counts(params.svm_type, &coef);
        let counts = sum_counts(self.comm, &[n_sv, n_bsv]);
        // The coefficients of all rows, as one process keeps them.
        let all: Vec<f64> = if one_class {
            out.all
        } else {
            (0..n).map(|i| out.all[i] - out.all[i + n]).collect()
        };
        let f = decision(&info, all, counts[0], counts[1]);
        self.subs.push(sub_state(&f, out.snapshot, None));
        Ok((coef, info.rho, f.report))
    }

    /// The support vectors of all shards, ordered by class and row: their rows (dense when
    /// every one arrives dense), global rows, classes and coefficient rows (`k` per vector,
    /// transposed to the model's `k` rows).
    #[allow(clippy::type_complexity)] // the model's four parts, built together
    fn gather_svs(
        &mut self,
        svs: &[LocalSv],
        k: usize,
    ) -> Result<(Features, Vec<usize>, Vec<usize>, Vec<Vec<f64>>), FitError> {
        let width = self.data.n_features();
        // Per vector: class, row, dense flag, row length, k coefficients, the row.
        let mut send = Vec::new();
        for (class, row, coef) in svs {
            let local = row - self.first;
            let at = send.len();
            send.extend_from_slice(&[*class as f64, *row as f64, 0.0, 0.0]);
            send.extend_from_slice(coef);
            let start = send.len();
            let dense = match self.data.x.row(local) {
                crate::data::Row::Dense(v) => {
                    send.extend_from_slice(v);
                    true
                }
                crate::data::Row::Sparse { indices, values } => {
                    send.extend(indices.iter().map(|&c| f64::from(c)));
                    send.extend_from_slice(values);
                    false
                }
            };
            send[at + 2] = if dense { 1.0 } else { 0.0 };
            send[at + 3] = (send.len() - start) as f64;
        }
        let mut all = Vec::new();
        self.comm.all_gather_var(&send, &mut all);
        let mut items: Vec<(usize, usize, bool, &[f64], &[f64])> = Vec::new();
        let mut at = 0;
        while at + 4 + k <= all.len() {
            let h = &all[at..at + 4];
            let len = h[3] as usize;
            let c0 = at + 4;
            let r0 = c0 + k;
            let end = (r0 + len).min(all.len());
            items.push((
                h[0] as usize,
                h[1] as usize,
                h[2] != 0.0,
                &all[c0..r0],
                &all[r0..end],
            ));
            at = end;
        }
        items.sort_by_key(|it| (it.0, it.1));
        let dense = items.iter().all(|it| it.2);
        let mut sv_coef = vec![Vec::with_capacity(items.len()); k];
        for it in &items {
            for (row, &c) in sv_coef.iter_mut().zip(it.3) {
                row.push(c);
            }
        }
        let features = if dense {
            let mut v = Vec::with_capacity(items.len() * width);
            for it in &items {
                let mut row = it.4.to_vec();
                row.resize(width, 0.0);
                v.extend_from_slice(&row);
            }
            Features::Dense(DenseMatrix::new(items.len(), width, v)?)
        } else {
            let (mut ptr, mut ix, mut vals) = (vec![0], Vec::new(), Vec::new());
            for it in &items {
                if it.2 {
                    for (c, &v) in it.4.iter().enumerate() {
                        if v != 0.0 {
                            ix.push(c as u32);
                            vals.push(v);
                        }
                    }
                } else {
                    let nnz = it.4.len() / 2;
                    ix.extend(it.4[..nnz].iter().map(|&c| c as u32));
                    vals.extend_from_slice(&it.4[nnz..2 * nnz]);
                }
                ptr.push(ix.len());
            }
            Features::Sparse(CsrMatrix::new(width, ptr, ix, vals)?)
        };
        let idx = items.iter().map(|it| it.1).collect();
        let class = items.iter().map(|it| it.0).collect();
        Ok((features, idx, class, sv_coef))
    }
}
