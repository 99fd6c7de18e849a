//! Checkpoints of an AID run: what the fits ([`super::lad::fit`], [`super::svm::fit`],
//! [`super::s3vm::fit`]) need, through [`crate::fit::Control::resume_from`], to continue an
//! interrupted run to exactly the iterates an uninterrupted run makes.
//!
//! The unit of resumption is the AID iteration (one aggregated solve and one pass). A checkpoint
//! holds the loop's state *at the start* of the iteration that was stopped: the clusters (the
//! permutation of the rows and the cluster starts: the order of the rows inside a cluster fixes
//! the order of every per-cluster sum), the parent map and the previous solution (the warm
//! start), the best solution and objective so far, the best lower bound, the records of the
//! finished iterations, and the model's incremental state (kernel AID-SVM: the cluster-pair
//! kernel sums and the stored cluster kernel rows, which are updated by subtraction and so
//! depend on the history; the cluster sizes the warm start scales by). An aggregated solve that
//! is stopped is discarded and re-run from its start on resume; as every solve is
//! deterministic, the continued run is bit-identical to an uninterrupted one (tested:
//! `tests/aid_resume.rs`).
//!
//! File form ([`AidCheckpoint::to_bytes`], conventions in [`crate::persist`]): magic
//! `MKAIDCK2`, the fingerprint (data and every parameter that changes the iterates; not the
//! iteration or time limits), the run record (those parameters by flag and the data's shape
//! and hash, so that a refused resume names what differs; absent in the previous form
//! `MKAIDCK1`, which is still read and continued), the model byte (0 LAD, 1 SVM, 2 S3VM), the iteration index, the
//! initial clustering's seconds, the clusters, the parent map, the previous and the best
//! solution, the bound, the records, the model state, and the checksum, verified first.
//! [`AidCheckpoint::from_bytes`] checks every length and tag and never panics;
//! [`AidCheckpoint::to_bytes`] of an accepted file gives back the same bytes.

use crate::data::Dataset;
use crate::persist::{
    self, hash_rows, hash_shape, CheckpointError, DataShape, Dec, Enc, Fnv, RunRecord,
};

use super::cluster::Clusters;
use super::state::{IterRecord, S3vmSolution, SvmSolution};

const MAGIC: &str = "MKAIDCK2";
/// The previous form: no run record (still read and continued).
const PREV_MAGIC: &str = "MKAIDCK1";
/// The kind of state file, in messages.
const FILE: &str = "AID state file";

/// The model whose run a checkpoint holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AidModel {
    /// AID-LAD.
    Lad,
    /// AID-SVM (linear or kernel).
    Svm,
    /// AID-S3VM.
    S3vm,
}

impl AidModel {
    fn code(self) -> u8 {
        match self {
            AidModel::Lad => 0,
            AidModel::Svm => 1,
            AidModel::S3vm => 2,
        }
    }
    /// The model's name in messages.
    fn name(self) -> &'static str {
        match self {
            AidModel::Lad => "AID-LAD",
            AidModel::Svm => "AID-SVM",
            AidModel::S3vm => "AID-S3VM",
        }
    }
    /// `"lad"`, `"svm"` or `"s3vm"`.
    pub fn as_str(self) -> &'static str {
        match self {
            AidModel::Lad => "lad",
            AidModel::Svm => "svm",
            AidModel::S3vm => "s3vm",
        }
    }
}

/// A solution of one of the models (the checkpoint is not generic).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Sol {
    Lad(Vec<f64>),
    Svm(SvmSolution),
    S3vm(S3vmSolution),
}

/// Converts a model's solution to and from [`Sol`].
pub(crate) trait CheckpointSolution: Sized + Clone {
    const MODEL: AidModel;
    fn wrap(self) -> Sol;
    fn unwrap(s: Sol) -> Option<Self>;
}

impl CheckpointSolution for Vec<f64> {
    const MODEL: AidModel = AidModel::Lad;
    fn wrap(self) -> Sol {
        Sol::Lad(self)
    }
    fn unwrap(s: Sol) -> Option<Self> {
        match s {
            Sol::Lad(v) => Some(v),
            _ => None,
        }
    }
}

impl CheckpointSolution for SvmSolution {
    const MODEL: AidModel = AidModel::Svm;
    fn wrap(self) -> Sol {
        Sol::Svm(self)
    }
    fn unwrap(s: Sol) -> Option<Self> {
        match s {
            Sol::Svm(v) => Some(v),
            _ => None,
        }
    }
}

impl CheckpointSolution for S3vmSolution {
    const MODEL: AidModel = AidModel::S3vm;
    fn wrap(self) -> Sol {
        Sol::S3vm(self)
    }
    fn unwrap(s: Sol) -> Option<Self> {
        match s {
            Sol::S3vm(v) => Some(v),
            _ => None,
        }
    }
}

fn put_sol(e: &mut Enc, s: &Sol) {
    match s {
        Sol::Lad(b) => e.f64s(b),
        Sol::Svm(s) => {
            e.f64s(&s.w);
            e.f64(s.b);
            e.f64s(&s.alpha);
            e.usize(s.expansion.len());
            for &(i, c) in &s.expansion {
                e.u32(i);
                e.f64(c);
            }
            e.f64(s.w_sq);
            e.f64s(&s.decision);
        }
        Sol::S3vm(s) => {
            e.f64s(&s.w);
            e.f64(s.b);
            e.bool(s.bnb_optimal);
            e.usize(s.bnb_nodes);
        }
    }
}

fn get_sol(d: &mut Dec<'_>, model: AidModel) -> Result<Sol, CheckpointError> {
    Ok(match model {
        AidModel::Lad => Sol::Lad(d.f64s()?),
        AidModel::Svm => {
            let w = d.f64s()?;
            let b = d.f64()?;
            let alpha = d.f64s()?;
            let ne = d.len(12)?;
            let mut expansion = Vec::with_capacity(ne);
            for _ in 0..ne {
                let i = d.u32()?;
                expansion.push((i, d.f64()?));
            }
            let w_sq = d.f64()?;
            let decision = d.f64s()?;
            Sol::Svm(SvmSolution {
                w,
                b,
                alpha,
                expansion,
                w_sq,
                decision,
            })
        }
        AidModel::S3vm => Sol::S3vm(S3vmSolution {
            w: d.f64s()?,
            b: d.f64()?,
            bnb_optimal: d.bool()?,
            bnb_nodes: d.usize()?,
        }),
    })
}

/// A model's incremental state between iterations (see the module documentation).
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct ProblemState {
    /// Cluster sizes of the last finished aggregated solve (the warm start scales by them).
    pub sizes: Vec<usize>,
    /// Kernel AID-SVM: cluster-pair kernel sums (row-major).
    pub gram: Vec<f64>,
    /// Kernel AID-SVM: stored cluster kernel rows.
    pub vrows: Vec<Option<Vec<f32>>>,
    /// Kernel AID-SVM: `gram` and `vrows` already describe the current clusters (the stopped
    /// iteration had updated them before its solve).
    pub prepared: bool,
    /// AID-LAD: whether the last aggregated solve was certified.
    pub last_certified: bool,
}

/// The AID loop's state at the start of an iteration.
#[derive(Debug, Clone)]
pub(crate) struct LoopState<S> {
    pub t: usize,
    pub clusters: Clusters,
    pub parent: Vec<usize>,
    pub prev: Option<S>,
    pub best: Option<(S, f64)>,
    pub lower: f64,
    pub has_bound: bool,
    pub records: Vec<IterRecord>,
}

/// Where a stopped AID run is, to be continued by the model's fit.
#[derive(Debug, Clone, PartialEq)]
pub struct AidCheckpoint {
    pub(crate) fingerprint: u64,
    /// What the run was made with (`None` in a file of the previous version).
    pub(crate) run: Option<RunRecord>,
    pub(crate) model: AidModel,
    pub(crate) init_seconds: f64,
    pub(crate) t: usize,
    pub(crate) clusters: Clusters,
    pub(crate) parent: Vec<usize>,
    pub(crate) prev: Option<Sol>,
    pub(crate) best: Option<(Sol, f64)>,
    pub(crate) lower: f64,
    pub(crate) has_bound: bool,
    pub(crate) records: Vec<IterRecord>,
    pub(crate) problem: ProblemState,
}

fn put_record(e: &mut Enc, r: &IterRecord) {
    e.usize(r.t);
    e.usize(r.clusters);
    for v in [
        r.r,
        r.lower_bound,
        r.bound_t,
        r.aggregated_objective,
        r.objective,
        r.best_objective,
        r.gap,
    ] {
        e.f64(v);
    }
    e.usize(r.violating);
    e.f64(r.seconds);
}

fn get_record(d: &mut Dec<'_>) -> Result<IterRecord, CheckpointError> {
    let t = d.usize()?;
    let clusters = d.usize()?;
    let mut f = [0.0; 7];
    for v in &mut f {
        *v = d.f64()?;
    }
    Ok(IterRecord {
        t,
        clusters,
        r: f[0],
        lower_bound: f[1],
        bound_t: f[2],
        aggregated_objective: f[3],
        objective: f[4],
        best_objective: f[5],
        gap: f[6],
        violating: d.usize()?,
        seconds: d.f64()?,
    })
}

impl AidCheckpoint {
    /// The model the run fits.
    pub fn model(&self) -> AidModel {
        self.model
    }

    /// Number of finished iterations (the run continues with the next one).
    pub fn n_iterations(&self) -> usize {
        self.records.len()
    }

    /// The records of the finished iterations.
    pub fn iterations(&self) -> &[IterRecord] {
        &self.records
    }

    /// The best full-data objective so far (`None` before the first finished iteration).
    pub fn best_objective(&self) -> Option<f64> {
        self.best.as_ref().map(|b| b.1)
    }

    pub(crate) fn from_loop<S: CheckpointSolution>(
        (fingerprint, run): Stamp,
        init_seconds: f64,
        st: LoopState<S>,
        problem: ProblemState,
    ) -> Self {
        Self {
            fingerprint,
            run: Some(run),
            model: S::MODEL,
            init_seconds,
            t: st.t,
            clusters: st.clusters,
            parent: st.parent,
            prev: st.prev.map(S::wrap),
            best: st.best.map(|(s, e)| (s.wrap(), e)),
            lower: st.lower,
            has_bound: st.has_bound,
            records: st.records,
            problem,
        }
    }

    /// The loop state for a continuation (after [`AidCheckpoint::check`]).
    ///
    /// # Errors
    /// [`CheckpointError::WrongModel`] when the solutions are not `S`'s.
    pub(crate) fn to_loop<S: CheckpointSolution>(&self) -> Result<LoopState<S>, CheckpointError> {
        let wrong = || CheckpointError::WrongModel {
            file: FILE,
            expected: S::MODEL.name(),
            found: self.model.name(),
        };
        let prev = match &self.prev {
            Some(s) => Some(S::unwrap(s.clone()).ok_or_else(wrong)?),
            None => None,
        };
        let best = match &self.best {
            Some((s, e)) => Some((S::unwrap(s.clone()).ok_or_else(wrong)?, *e)),
            None => None,
        };
        Ok(LoopState {
            t: self.t,
            clusters: self.clusters.clone(),
            parent: self.parent.clone(),
            prev,
            best,
            lower: self.lower,
            has_bound: self.has_bound,
            records: self.records.clone(),
        })
    }

    /// The binary form (see the module documentation).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut e = Enc::new(if self.run.is_some() {
            MAGIC
        } else {
            PREV_MAGIC
        });
        e.u64(self.fingerprint);
        if let Some(r) = &self.run {
            r.encode(&mut e);
        }
        e.u8(self.model.code());
        e.f64(self.init_seconds);
        e.usize(self.t);
        e.u32s(self.clusters.members_all());
        e.usizes(self.clusters.starts());
        e.usizes(&self.parent);
        match &self.prev {
            Some(s) => {
                e.u8(1);
                put_sol(&mut e, s);
            }
            None => e.u8(0),
        }
        match &self.best {
            Some((s, v)) => {
                e.u8(1);
                put_sol(&mut e, s);
                e.f64(*v);
            }
            None => e.u8(0),
        }
        e.f64(self.lower);
        e.bool(self.has_bound);
        e.usize(self.records.len());
        self.records.iter().for_each(|r| put_record(&mut e, r));
        let p = &self.problem;
        e.usizes(&p.sizes);
        e.f64s(&p.gram);
        e.usize(p.vrows.len());
        for v in &p.vrows {
            match v {
                Some(v) => {
                    e.u8(1);
                    e.f32s(v);
                }
                None => e.u8(0),
            }
        }
        e.bool(p.prepared);
        e.bool(p.last_certified);
        persist::seal(e.finish())
    }

    /// Reads [`AidCheckpoint::to_bytes`]' form.
    ///
    /// # Errors
    /// A [`CheckpointError`] naming what is wrong (magic, checksum, truncation, a bad tag or
    /// partition); never a panic.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, CheckpointError> {
        let (mut d, current) = persist::open_either(bytes, MAGIC, PREV_MAGIC, FILE)?;
        let fingerprint = d.u64()?;
        let run = if current {
            Some(RunRecord::decode(&mut d)?)
        } else {
            None
        };
        let model = match d.u8()? {
            0 => AidModel::Lad,
            1 => AidModel::Svm,
            2 => AidModel::S3vm,
            t => return Err(d.bad_tag("model byte", t)),
        };
        let init_seconds = d.f64()?;
        let t = d.usize()?;
        let members = d.u32s()?;
        let start = d.usizes()?;
        let clusters =
            Clusters::from_parts(members, start).map_err(|m| d.invalid("clusters", m))?;
        let parent = d.usizes()?;
        let prev = if d.bool()? {
            Some(get_sol(&mut d, model)?)
        } else {
            None
        };
        let best = if d.bool()? {
            let s = get_sol(&mut d, model)?;
            Some((s, d.f64()?))
        } else {
            None
        };
        let lower = d.f64()?;
        let has_bound = d.bool()?;
        // A record takes 11 * 8 bytes.
        let nr = d.len(88)?;
        let mut records = Vec::with_capacity(nr);
        for _ in 0..nr {
            records.push(get_record(&mut d)?);
        }
        let sizes = d.usizes()?;
        let gram = d.f64s()?;
        let nv = d.len(1)?;
        let mut vrows = Vec::with_capacity(nv);
        for _ in 0..nv {
            vrows.push(if d.bool()? { Some(d.f32s()?) } else { None });
        }
        let prepared = d.bool()?;
        let last_certified = d.bool()?;
        d.finish()?;
        Ok(Self {
            fingerprint,
            run,
            model,
            init_seconds,
            t,
            clusters,
            parent,
            prev,
            best,
            lower,
            has_bound,
            records,
            problem: ProblemState {
                sizes,
                gram,
                vrows,
                prepared,
                last_certified,
            },
        })
    }

    /// Checks the checkpoint against the run about to continue it: the model, the run record
    /// and the fingerprint of the data and parameters (`now`), and every length the continuation indexes by (`n` rows,
    /// `width` coefficients of a linear solution, `kernel`: kernel AID-SVM).
    pub(crate) fn check(
        &self,
        model: AidModel,
        now: &Stamp,
        n: usize,
        width: usize,
        kernel: bool,
    ) -> Result<(), CheckpointError> {
        if self.model != model {
            return Err(CheckpointError::WrongModel {
                file: FILE,
                expected: model.name(),
                found: self.model.name(),
            });
        }
        persist::check_resume(FILE, (self.fingerprint, self.run.as_ref()), (now.0, &now.1))?;
        let bad = || CheckpointError::Mismatch {
            file: FILE,
            reason: "array lengths",
        };
        let k = self.clusters.len();
        if self.clusters.n_rows() != n {
            return Err(bad());
        }
        let sol_ok = |s: &Sol| match s {
            Sol::Lad(b) => b.len() == width,
            Sol::S3vm(s) => s.w.len() == width,
            Sol::Svm(s) => {
                if kernel {
                    s.w.is_empty()
                        && s.decision.len() == n
                        && s.expansion.iter().all(|&(i, _)| (i as usize) < n)
                } else {
                    s.w.len() == width && s.decision.is_empty() && s.expansion.is_empty()
                }
            }
        };
        if let Some(s) = &self.prev {
            if !sol_ok(s) {
                return Err(bad());
            }
        }
        if let Some((s, _)) = &self.best {
            if !sol_ok(s) {
                return Err(bad());
            }
        }
        let p = &self.problem;
        let old_k = p.sizes.len();
        if model == AidModel::Svm && !self.parent.is_empty() {
            // The warm start reads prev.alpha[parent[c]] and sizes[parent[c]].
            let prev_k = match &self.prev {
                Some(Sol::Svm(s)) => s.alpha.len(),
                _ => old_k,
            };
            if self.parent.len() != k
                || self.parent.iter().any(|&a| a >= old_k || a >= prev_k)
                || p.sizes.contains(&0)
            {
                return Err(bad());
            }
        }
        if kernel {
            let gk = if p.prepared { k } else { old_k };
            if !(p.gram.len() == gk * gk && (p.vrows.len() == gk || p.vrows.is_empty() && gk == 0))
            {
                return Err(bad());
            }
            if p.vrows.iter().flatten().any(|v| v.len() != n) {
                return Err(bad());
            }
        } else if !p.gram.is_empty() || !p.vrows.is_empty() || p.prepared {
            return Err(bad());
        }
        Ok(())
    }
}

/// The fingerprint of a run and its run record.
pub(crate) type Stamp = (u64, RunRecord);

/// Fingerprint of an AID run (the data set and `params`, a description of every parameter that
/// changes the iterates) and its run record (`settings`, those parameters by flag, with the
/// data's shape and hash added).
pub(crate) fn fingerprint(params: &str, settings: RunRecord, data: &Dataset) -> Stamp {
    let mut h = stamp_start(params, data.len(), data.n_features());
    stamp_rows(&mut h, data);
    stamp_end(h, settings, data.len(), data.n_features())
}

/// The two running hashes of a [`Stamp`] (the fingerprint's and the data shape's) before any
/// row of a data set of `n` rows and `d` features. A data set split by rows is hashed by
/// [`stamp_rows`] on every part in row order, each on the states the previous part left.
pub(crate) fn stamp_start(params: &str, n: usize, d: usize) -> [u64; 2] {
    let mut fp = Fnv::new();
    fp.bytes(b"aid|");
    fp.bytes(params.as_bytes());
    hash_shape(&mut fp, n, d);
    let mut shape = Fnv::new();
    hash_shape(&mut shape, n, d);
    [fp.0, shape.0]
}

/// Adds `rows` (a part of the data set, in row order) to the running hashes of [`stamp_start`].
pub(crate) fn stamp_rows(h: &mut [u64; 2], rows: &Dataset) {
    for s in h.iter_mut() {
        let mut f = Fnv(*s);
        hash_rows(&mut f, rows);
        *s = f.0;
    }
}

/// The [`Stamp`] from the running hashes after every row.
pub(crate) fn stamp_end(h: [u64; 2], mut settings: RunRecord, n: usize, d: usize) -> Stamp {
    settings.data_shape("training data", DataShape::new(n, d, h[1]));
    (h[0], settings)
}

/// The settings every AID model shares: `--r0` (`None`: the paper's rule), `--gap-tol`,
/// `--seed`.
pub(crate) fn common_settings(r0: Option<f64>, gap_tol: f64, seed: u64) -> RunRecord {
    let mut r = RunRecord::new();
    r.set(
        "--r0",
        r0.map_or_else(|| "auto".to_owned(), |v| v.to_string()),
    )
    .set("--gap-tol", gap_tol)
    .set("--seed", seed);
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aid::lad::{fit, AidLadParams};
    use crate::data::{DenseMatrix, Features};
    use crate::fit::Control;
    use crate::persist::StopAt;

    /// A linear model with heavy-tailed deterministic noise and gross outliers.
    fn regression(n: usize) -> Dataset {
        let x: Vec<f64> = (0..n)
            .flat_map(|i| [(i as f64 * 1.3).sin() * 2.0, (i as f64 * 0.37).cos() * 2.0])
            .collect();
        let y = (0..n)
            .map(|i| {
                let u = (i as f64 * 2.9).sin();
                let v = 0.5 + x[2 * i] - 2.0 * x[2 * i + 1] + 3.0 * u * u * u;
                if i % 20 == 7 {
                    v + 50.0 * u.signum()
                } else {
                    v
                }
            })
            .collect();
        Dataset::new(Features::Dense(DenseMatrix::new(n, 2, x).unwrap()), y, None).unwrap()
    }

    /// A state file of the previous version (no run record) still reads, writes back byte for
    /// byte and resumes to the iterates of an uninterrupted run.
    #[test]
    fn the_previous_version_still_resumes() {
        let d = regression(3000);
        let params = AidLadParams::new().r0(0.004).check().unwrap();
        let want = fit(&params, &d, &mut Control::default()).unwrap();
        let want = want.report.run.unwrap();
        assert!(want.iterations.len() >= 2, "{}", want.iterations.len());
        let mut ck = fit(&params, &d, &mut Control::new(StopAt(1)))
            .unwrap()
            .checkpoint
            .unwrap();
        let current = ck.to_bytes();
        ck.run = None;
        let back = persist::check_previous_version(
            &current,
            &ck.to_bytes(),
            (MAGIC, PREV_MAGIC),
            AidCheckpoint::from_bytes,
            AidCheckpoint::to_bytes,
            |c| c.run.is_some(),
        );
        let got = fit(&params, &d, &mut Control::default().resume_from(&back)).unwrap();
        let got = got.report.run.unwrap();
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got.best), bits(&want.best));
        assert_eq!(got.best_objective.to_bits(), want.best_objective.to_bits());
        assert_eq!(got.iterations.len(), want.iterations.len());
    }
}
