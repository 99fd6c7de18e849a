//! Checkpoints of an AID run: what the `*_resumable` fits ([`super::lad::fit_aid_lad_resumable`],
//! [`super::svm::fit_aid_svm_resumable`], [`super::s3vm::fit_aid_s3vm_resumable`]) need to
//! continue an interrupted run to exactly the iterates an uninterrupted run makes.
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
//! File form ([`AidCheckpoint::to_bytes`]), little-endian, floats as their IEEE bits: magic
//! `MKAIDCK1`, the fingerprint (data and every parameter that changes the iterates; not the
//! iteration or time limits), the model byte (0 LAD, 1 SVM, 2 S3VM), the iteration index, the
//! initial clustering's seconds, the clusters, the parent map, the previous and the best
//! solution, the bound, the records, the model state, and an 8-byte FNV-1a checksum of every
//! byte before it, verified first. [`AidCheckpoint::from_bytes`] checks every length and tag and
//! never panics; [`AidCheckpoint::to_bytes`] of an accepted file gives back the same bytes.

use crate::data::Dataset;
use crate::solver::smo::ByteReader;
use crate::svm::checkpoint::{seal, unseal};

use super::cluster::Clusters;
use super::s3vm::S3vmSolution;
use super::svm::SvmSolution;
use super::IterRecord;

const MAGIC: &[u8; 8] = b"MKAIDCK1";

/// Appends little-endian fields to a state file body.
#[derive(Debug, Default)]
pub(crate) struct Enc(pub Vec<u8>);

impl Enc {
    pub fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub fn bool(&mut self, v: bool) {
        self.0.push(u8::from(v));
    }
    pub fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub fn usize(&mut self, v: usize) {
        self.u64(v as u64);
    }
    pub fn f64(&mut self, v: f64) {
        self.u64(v.to_bits());
    }
    pub fn f64s(&mut self, v: &[f64]) {
        self.usize(v.len());
        v.iter().for_each(|&x| self.f64(x));
    }
    pub fn usizes(&mut self, v: &[usize]) {
        self.usize(v.len());
        v.iter().for_each(|&x| self.usize(x));
    }
    pub fn u32s(&mut self, v: &[u32]) {
        self.usize(v.len());
        v.iter()
            .for_each(|&x| self.0.extend_from_slice(&x.to_le_bytes()));
    }
    pub fn f32s(&mut self, v: &[f32]) {
        self.usize(v.len());
        v.iter()
            .for_each(|&x| self.0.extend_from_slice(&x.to_bits().to_le_bytes()));
    }
    pub fn i8s(&mut self, v: &[i8]) {
        self.usize(v.len());
        self.0.extend(v.iter().map(|&x| x as u8));
    }
    pub fn opt_f64(&mut self, v: Option<f64>) {
        match v {
            Some(x) => {
                self.u8(1);
                self.f64(x);
            }
            None => self.u8(0),
        }
    }
}

/// Reads [`Enc`]'s fields; every error names the file kind (`what`).
pub(crate) struct Dec<'a> {
    r: ByteReader<'a>,
    pub what: &'static str,
}

impl<'a> Dec<'a> {
    pub fn new(body: &'a [u8], pos: usize, what: &'static str) -> Self {
        Self {
            r: ByteReader { b: body, pos },
            what,
        }
    }
    pub fn err(&self, msg: &str) -> String {
        format!("{}: {msg}", self.what)
    }
    fn take(&mut self, k: usize) -> Result<&'a [u8], String> {
        self.r.take(k).map_err(|_| self.err("truncated"))
    }
    pub fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    pub fn bool(&mut self) -> Result<bool, String> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            t => Err(self.err(&format!("bad flag byte {t}"))),
        }
    }
    pub fn u64(&mut self) -> Result<u64, String> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }
    pub fn usize(&mut self) -> Result<usize, String> {
        let v = self.u64()?;
        usize::try_from(v).map_err(|_| self.err("a count out of range"))
    }
    pub fn f64(&mut self) -> Result<f64, String> {
        self.u64().map(f64::from_bits)
    }
    pub fn u32(&mut self) -> Result<u32, String> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    /// A length that the remaining bytes can hold at `each` bytes per entry.
    pub fn len(&mut self, each: usize) -> Result<usize, String> {
        let len = self.u64()?;
        let left = (self.r.b.len() - self.r.pos) as u64;
        if len.checked_mul(each as u64).is_none_or(|need| need > left) {
            return Err(self.err("truncated array"));
        }
        Ok(len as usize)
    }
    pub fn f64s(&mut self) -> Result<Vec<f64>, String> {
        let n = self.len(8)?;
        (0..n).map(|_| self.f64()).collect()
    }
    pub fn usizes(&mut self) -> Result<Vec<usize>, String> {
        let n = self.len(8)?;
        (0..n).map(|_| self.usize()).collect()
    }
    pub fn u32s(&mut self) -> Result<Vec<u32>, String> {
        let n = self.len(4)?;
        let b = self.take(4 * n)?;
        Ok(b.chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }
    pub fn f32s(&mut self) -> Result<Vec<f32>, String> {
        let n = self.len(4)?;
        let b = self.take(4 * n)?;
        Ok(b.chunks_exact(4)
            .map(|c| f32::from_bits(u32::from_le_bytes([c[0], c[1], c[2], c[3]])))
            .collect())
    }
    pub fn i8s(&mut self) -> Result<Vec<i8>, String> {
        let n = self.len(1)?;
        Ok(self.take(n)?.iter().map(|&b| b as i8).collect())
    }
    pub fn opt_f64(&mut self) -> Result<Option<f64>, String> {
        Ok(if self.bool()? {
            Some(self.f64()?)
        } else {
            None
        })
    }
    /// Errors unless every byte was read.
    pub fn finish(&self) -> Result<(), String> {
        if self.r.pos == self.r.b.len() {
            Ok(())
        } else {
            Err(self.err("trailing bytes"))
        }
    }
}

/// Checks the magic and the checksum; returns the body (magic included).
pub(crate) fn open<'a>(
    bytes: &'a [u8],
    magic: &[u8; 8],
    what: &'static str,
) -> Result<&'a [u8], String> {
    if bytes.len() < 8 || &bytes[..8] != magic {
        return Err(format!("not a marginkit {what} (bad magic)"));
    }
    unseal(bytes, what)
}

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
                e.0.extend_from_slice(&i.to_le_bytes());
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

fn get_sol(d: &mut Dec<'_>, model: AidModel) -> Result<Sol, String> {
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

/// Where a stopped AID run is, to be continued by the model's `*_resumable` fit.
#[derive(Debug, Clone, PartialEq)]
pub struct AidCheckpoint {
    pub(crate) fingerprint: u64,
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

fn get_record(d: &mut Dec<'_>) -> Result<IterRecord, String> {
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
        fingerprint: u64,
        init_seconds: f64,
        st: LoopState<S>,
        problem: ProblemState,
    ) -> Self {
        Self {
            fingerprint,
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
    pub(crate) fn to_loop<S: CheckpointSolution>(&self) -> Option<LoopState<S>> {
        let prev = match &self.prev {
            Some(s) => Some(S::unwrap(s.clone())?),
            None => None,
        };
        let best = match &self.best {
            Some((s, e)) => Some((S::unwrap(s.clone())?, *e)),
            None => None,
        };
        Some(LoopState {
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
        let mut e = Enc(MAGIC.to_vec());
        e.u64(self.fingerprint);
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
        seal(e.0)
    }

    /// Reads [`AidCheckpoint::to_bytes`]' form.
    ///
    /// # Errors
    /// A message naming what is wrong (magic, checksum, truncation, a bad tag or partition);
    /// never a panic.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, String> {
        const WHAT: &str = "AID state file";
        let body = open(bytes, MAGIC, WHAT)?;
        let mut d = Dec::new(body, 8, WHAT);
        let fingerprint = d.u64()?;
        let model = match d.u8()? {
            0 => AidModel::Lad,
            1 => AidModel::Svm,
            2 => AidModel::S3vm,
            t => return Err(d.err(&format!("bad model byte {t}"))),
        };
        let init_seconds = d.f64()?;
        let t = d.usize()?;
        let members = d.u32s()?;
        let start = d.usizes()?;
        let clusters = Clusters::from_parts(members, start)
            .map_err(|m| d.err(&format!("bad clusters: {m}")))?;
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

    /// Checks the checkpoint against the run about to continue it: the model, the fingerprint
    /// of the data and parameters, and every length the continuation indexes by (`n` rows,
    /// `width` coefficients of a linear solution, `kernel`: kernel AID-SVM).
    pub(crate) fn check(
        &self,
        model: AidModel,
        fingerprint: u64,
        n: usize,
        width: usize,
        kernel: bool,
    ) -> Result<(), &'static str> {
        if self.model != model {
            return Err("the state file was made by another AID model");
        }
        if self.fingerprint != fingerprint {
            return Err("the state file was made with other data or other parameters");
        }
        let bad = "the state file does not fit the problem (array lengths)";
        let k = self.clusters.len();
        if self.clusters.n_rows() != n {
            return Err(bad);
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
                return Err(bad);
            }
        }
        if let Some((s, _)) = &self.best {
            if !sol_ok(s) {
                return Err(bad);
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
                return Err(bad);
            }
        }
        if kernel {
            let gk = if p.prepared { k } else { old_k };
            if !(p.gram.len() == gk * gk && (p.vrows.len() == gk || p.vrows.is_empty() && gk == 0))
            {
                return Err(bad);
            }
            if p.vrows.iter().flatten().any(|v| v.len() != n) {
                return Err(bad);
            }
        } else if !p.gram.is_empty() || !p.vrows.is_empty() || p.prepared {
            return Err(bad);
        }
        Ok(())
    }
}

/// Fingerprint of an AID run: the data set and a description of every parameter that changes
/// the iterates.
pub(crate) fn fingerprint(params: &str, data: &Dataset) -> u64 {
    let mut h = crate::svm::checkpoint::Fnv::new();
    h.bytes(b"aid|");
    h.bytes(params.as_bytes());
    crate::svm::checkpoint::hash_dataset(&mut h, data);
    h.0
}
