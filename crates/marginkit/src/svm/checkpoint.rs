//! Checkpoints of a kernel-SVM fit: what [`super::train::fit_resumable`] needs to continue an
//! interrupted (or limit-stopped) fit to exactly the model an uninterrupted fit gives.
//!
//! A fit is a sequence of subproblems (one per class pair, or one). A checkpoint records, per
//! subproblem: finished (its coefficients, threshold, report and Platt pair, bit-exact), stopped
//! (the SMO solver's [`SmoSnapshot`]: its permuted arrays, gradient, `G_bar`, active set and
//! loop counters, so the continuation replays the very iterations the uninterrupted solve
//! would have made), or not started. It also records a fingerprint of the data and of every
//! parameter that changes the result (not the cache size, the thread count or the limits), so a
//! checkpoint is never continued on other data.
//!
//! File form ([`FitCheckpoint::to_bytes`]): magic `MKFITCK2`, the fingerprint, the number of
//! subproblems, then per subproblem a tag byte and its fields, little-endian, floats as their
//! IEEE bits, and last an 8-byte checksum (FNV-1a, 64 bit, of every byte before it).
//! [`FitCheckpoint::from_bytes`] verifies the checksum first (a damaged or edited file is
//! refused as such), then checks every length and value, and never panics. (`MKFITCK1`, the
//! form without the checksum, is no longer read.)

use crate::data::Dataset;
use crate::solver::smo::{ByteReader, SmoSnapshot};
use crate::solver::Status;

use super::params::SvmValidParams;
use super::train::SubproblemReport;

/// A finished subproblem, kept bit-exact.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DoneSub {
    /// Signed coefficients over the subproblem's samples.
    pub coef: Vec<f64>,
    pub rho: f64,
    pub report: SubproblemReport,
    /// Platt's (A, B) of the pair when `-b 1`.
    pub prob: Option<(f64, f64)>,
}

/// The state of one subproblem in a checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SubState {
    Done(DoneSub),
    Stopped {
        snap: Box<SmoSnapshot>,
        prob: Option<(f64, f64)>,
    },
    NotStarted,
}

/// Where a stopped kernel-SVM fit is, to be continued by [`super::train::fit_resumable`].
#[derive(Debug, Clone, PartialEq)]
pub struct FitCheckpoint {
    pub(crate) fingerprint: u64,
    pub(crate) subs: Vec<SubState>,
}

const MAGIC: &[u8; 8] = b"MKFITCK2";

/// Appends the body checksum (FNV-1a of every byte so far).
pub(crate) fn seal(mut b: Vec<u8>) -> Vec<u8> {
    let mut h = Fnv::new();
    h.bytes(&b);
    b.extend_from_slice(&h.0.to_le_bytes());
    b
}

/// Verifies and strips the trailing checksum of a [`seal`]ed file.
pub(crate) fn unseal<'a>(bytes: &'a [u8], what: &str) -> Result<&'a [u8], String> {
    if bytes.len() < 8 {
        return Err(format!("{what}: truncated (no checksum)"));
    }
    let (body, sum) = bytes.split_at(bytes.len() - 8);
    let mut h = Fnv::new();
    h.bytes(body);
    let mut want = [0u8; 8];
    want.copy_from_slice(sum);
    if h.0 != u64::from_le_bytes(want) {
        return Err(format!(
            "{what}: checksum mismatch (the file is damaged or was edited)"
        ));
    }
    Ok(body)
}

/// FNV-1a, 64 bit: a stable fingerprint (not a cryptographic hash).
pub(crate) struct Fnv(pub(crate) u64);

impl Fnv {
    pub fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    pub fn bytes(&mut self, b: &[u8]) {
        for &x in b {
            self.0 ^= u64::from(x);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
    pub fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }
    pub fn f64(&mut self, v: f64) {
        self.u64(v.to_bits());
    }
}

/// Fingerprint of the data and of the parameters that change the fitted model.
pub(crate) fn fingerprint(params: &SvmValidParams, data: &Dataset) -> u64 {
    let mut h = Fnv::new();
    let p = format!(
        "{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}",
        params.svm_type,
        params.kernel.resolve(data.n_features()),
        params.c,
        params.nu,
        params.epsilon,
        params.solver.tol,
        params.solver.shrinking,
        params.probability,
        params.class_weights,
        params.seed
    );
    h.bytes(p.as_bytes());
    hash_dataset(&mut h, data);
    h.0
}

/// Adds the data set (sizes, labels, weights, every non-zero feature) to a fingerprint.
pub(crate) fn hash_dataset(h: &mut Fnv, data: &Dataset) {
    h.u64(data.len() as u64);
    h.u64(data.n_features() as u64);
    for i in 0..data.len() {
        h.f64(data.y[i]);
        h.f64(data.weight(i));
        for (k, v) in data.x.row(i).iter() {
            if v != 0.0 {
                h.u64(k as u64);
                h.f64(v);
            }
        }
        h.u64(u64::MAX);
    }
}

impl FitCheckpoint {
    /// Number of subproblems the fit has.
    pub fn n_subproblems(&self) -> usize {
        self.subs.len()
    }

    /// Number of finished subproblems.
    pub fn n_done(&self) -> usize {
        self.subs
            .iter()
            .filter(|s| matches!(s, SubState::Done(_)))
            .count()
    }

    /// The binary form (see the module documentation).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(MAGIC);
        b.extend_from_slice(&self.fingerprint.to_le_bytes());
        b.extend_from_slice(&(self.subs.len() as u64).to_le_bytes());
        let f = |b: &mut Vec<u8>, v: f64| b.extend_from_slice(&v.to_bits().to_le_bytes());
        let u = |b: &mut Vec<u8>, v: u64| b.extend_from_slice(&v.to_le_bytes());
        let prob = |b: &mut Vec<u8>, p: &Option<(f64, f64)>| match p {
            Some((a, c)) => {
                b.push(1);
                f(b, *a);
                f(b, *c);
            }
            None => b.push(0),
        };
        for s in &self.subs {
            match s {
                SubState::NotStarted => b.push(0),
                SubState::Stopped { snap, prob: p } => {
                    b.push(1);
                    prob(&mut b, p);
                    b.extend_from_slice(&snap.to_bytes());
                }
                SubState::Done(d) => {
                    b.push(2);
                    prob(&mut b, &d.prob);
                    f(&mut b, d.rho);
                    u(&mut b, d.coef.len() as u64);
                    for &c in &d.coef {
                        f(&mut b, c);
                    }
                    let r = &d.report;
                    match r.classes {
                        Some((x, y)) => {
                            b.push(1);
                            f(&mut b, x);
                            f(&mut b, y);
                        }
                        None => b.push(0),
                    }
                    for v in [r.objective, r.rho, r.max_violation, r.gap] {
                        f(&mut b, v);
                    }
                    for v in [r.iterations, r.n_sv as u64, r.n_bsv as u64] {
                        u(&mut b, v);
                    }
                    b.push(status_code(r.status));
                }
            }
        }
        seal(b)
    }

    /// Reads [`FitCheckpoint::to_bytes`]' form.
    ///
    /// # Errors
    /// A message naming what is wrong (magic, truncation, a bad value); never a panic.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, String> {
        if bytes.len() < 8 || &bytes[..8] != MAGIC {
            return Err("not a marginkit fit checkpoint (bad magic)".into());
        }
        let bytes = unseal(bytes, "checkpoint")?;
        let mut r = ByteReader { b: bytes, pos: 0 };
        r.take(8)?;
        let fingerprint = r.u64()?;
        let n = r.u64()?;
        if n > (bytes.len() as u64) {
            return Err("checkpoint: too many subproblems for its size".into());
        }
        let mut subs = Vec::with_capacity(n as usize);
        let byte = |r: &mut ByteReader<'_>| -> Result<u8, String> { Ok(r.take(1)?[0]) };
        let prob = |r: &mut ByteReader<'_>| -> Result<Option<(f64, f64)>, String> {
            match byte(r)? {
                0 => Ok(None),
                1 => Ok(Some((finite(r.f64()?)?, finite(r.f64()?)?))),
                t => Err(format!("checkpoint: bad probability tag {t}")),
            }
        };
        for _ in 0..n {
            let s = match byte(&mut r)? {
                0 => SubState::NotStarted,
                1 => {
                    let p = prob(&mut r)?;
                    let (snap, used) = SmoSnapshot::from_bytes(&bytes[r.pos..])?;
                    r.pos += used;
                    SubState::Stopped {
                        snap: Box::new(snap),
                        prob: p,
                    }
                }
                2 => {
                    let p = prob(&mut r)?;
                    let rho = finite(r.f64()?)?;
                    let len = r.u64()?;
                    if len
                        .checked_mul(8)
                        .is_none_or(|need| need > (bytes.len() - r.pos) as u64)
                    {
                        return Err("checkpoint: truncated coefficients".into());
                    }
                    let mut coef = Vec::with_capacity(len as usize);
                    for _ in 0..len {
                        coef.push(finite(r.f64()?)?);
                    }
                    let classes = match byte(&mut r)? {
                        0 => None,
                        1 => Some((finite(r.f64()?)?, finite(r.f64()?)?)),
                        t => return Err(format!("checkpoint: bad class tag {t}")),
                    };
                    let objective = r.f64()?;
                    let rho2 = r.f64()?;
                    let max_violation = r.f64()?;
                    let gap = r.f64()?;
                    let iterations = r.u64()?;
                    let n_sv = r.u64()? as usize;
                    let n_bsv = r.u64()? as usize;
                    let status = status_from(byte(&mut r)?)?;
                    SubState::Done(DoneSub {
                        coef,
                        rho,
                        report: SubproblemReport {
                            classes,
                            objective,
                            rho: rho2,
                            iterations,
                            status,
                            max_violation,
                            gap,
                            n_sv,
                            n_bsv,
                        },
                        prob: p,
                    })
                }
                t => return Err(format!("checkpoint: bad subproblem tag {t}")),
            };
            subs.push(s);
        }
        if r.pos != bytes.len() {
            return Err("checkpoint: trailing bytes".into());
        }
        Ok(Self { fingerprint, subs })
    }
}

fn finite(v: f64) -> Result<f64, String> {
    if v.is_finite() {
        Ok(v)
    } else {
        Err("checkpoint: a non-finite value".into())
    }
}

pub(crate) fn status_code(s: Status) -> u8 {
    match s {
        Status::Converged => 0,
        Status::MaxIterations => 1,
        Status::TimeLimit => 2,
        Status::Interrupted => 3,
    }
}

pub(crate) fn status_from(c: u8) -> Result<Status, String> {
    Ok(match c {
        0 => Status::Converged,
        1 => Status::MaxIterations,
        2 => Status::TimeLimit,
        3 => Status::Interrupted,
        _ => return Err(format!("checkpoint: bad status code {c}")),
    })
}

/// Variants of a [`seal`]ed state file as an editor could make them: one body byte (after the
/// 8-byte magic) XORed with 0x01, 0x80 or 0xff, the checksum recomputed. Every byte of the
/// first `dense` is changed, then every `stride`-th (tests of the readers and resumes).
#[cfg(test)]
pub(crate) fn resealed_variants(bytes: &[u8], dense: usize, stride: usize) -> Vec<Vec<u8>> {
    let body = &bytes[..bytes.len() - 8];
    let mut out = Vec::new();
    let mut i = 8;
    while i < body.len() {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut b = body.to_vec();
            b[i] ^= flip;
            out.push(seal(b));
        }
        i += if i < dense { 1 } else { stride };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{DenseMatrix, Features};
    use crate::solver::NoObserver;
    use crate::svm::{fit_resumable, SvmParams};

    /// A crafted state file (a body byte changed and the checksum recomputed, as an editor
    /// could) is refused or continued without a panic: three classes, so the file holds
    /// finished, stopped and unstarted subproblems.
    #[test]
    fn resealed_crafted_bodies_never_panic() {
        let n = 45;
        let v = (0..n)
            .flat_map(|i| [(i as f64 * 1.3).sin(), (i as f64 * 0.7).cos()])
            .collect();
        let y = (0..n).map(|i| (i % 3) as f64).collect();
        let d = Dataset::new(Features::Dense(DenseMatrix::new(n, 2, v).unwrap()), y, None).unwrap();
        let stop = SvmParams::new().c(1000.0).max_iter(20).check().unwrap();
        let (_, _, ck) = fit_resumable(&stop, &d, &mut NoObserver, None).unwrap();
        let bytes = ck.expect("max_iter stops the fit").to_bytes();
        let mut tried = 0;
        for b in resealed_variants(&bytes, 96, 3) {
            let Ok(c) = FitCheckpoint::from_bytes(&b) else {
                continue;
            };
            tried += 1;
            // Ok or Err: either is fine, a panic is not (the iteration limit keeps a resume
            // from a crafted, inconsistent gradient short).
            let _ = fit_resumable(&stop, &d, &mut NoObserver, Some(&c));
        }
        assert!(tried > 50, "{tried}");
    }
}
