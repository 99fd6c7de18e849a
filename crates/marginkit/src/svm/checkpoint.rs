//! Checkpoints of a kernel-SVM fit: what [`super::train::fit`] needs to continue an
//! interrupted (or limit-stopped) fit to exactly the model an uninterrupted fit gives.
//!
//! A fit is a sequence of subproblems (one per class pair, or one). A checkpoint records, per
//! subproblem: finished (its coefficients, threshold, report and Platt pair, bit-exact), stopped
//! (the [`SmoSnapshot`] of the engine that ran it, pair or block: its permuted arrays,
//! gradient, `G_bar`, active set and loop counters, and the block engine's working set, so the
//! continuation replays the very iterations the uninterrupted solve would have made), or not
//! started. It also records a fingerprint of the data and of every
//! parameter that changes the result (not the cache size, the thread count or the limits), so a
//! checkpoint is never continued on other data.
//!
//! File form ([`FitCheckpoint::to_bytes`], conventions in [`crate::persist`]): magic
//! `MKFITCK3`, the fingerprint, the run record (the `-s -t -g -r -d -c -n -p -e -h -b -w
//! --platt --seed` values and the data's shape and hash, so that a refused resume names what
//! differs), the number of subproblems, then per subproblem a tag byte and its fields (a
//! stopped one embeds its [`SmoSnapshot`]), and the checksum. [`FitCheckpoint::from_bytes`]
//! verifies the checksum first (a damaged or edited file is refused as such), then checks every
//! length and value, and never panics. The previous form, `MKFITCK2`, is the same without the
//! run record: it is still read and continued (and written back as it was read). The form
//! without a checksum, `MKFITCK1`, is refused by name.

use crate::data::Dataset;
use crate::persist::{self, hash_dataset, CheckpointError, Dec, Enc, Fnv, RunRecord};
use crate::solver::smo::SmoSnapshot;
use crate::solver::Status;

use super::params::{PlattFit, Probability, SvmValidParams};
use super::report::SubproblemReport;
use crate::solver::Shrinking;

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

/// Where a stopped kernel-SVM fit is, to be continued by [`super::train::fit`].
#[derive(Debug, Clone, PartialEq)]
pub struct FitCheckpoint {
    pub(crate) fingerprint: u64,
    /// What the fit was run with (`None` in a file of the previous version).
    pub(crate) run: Option<RunRecord>,
    pub(crate) subs: Vec<SubState>,
}

const MAGIC: &str = "MKFITCK3";
/// The previous form: no run record (still read and continued).
const PREV_MAGIC: &str = "MKFITCK2";
/// The form without a checksum (refused by name).
const OLD_MAGIC: &str = "MKFITCK1";
/// The kind of state file, in messages.
pub(crate) const FILE: &str = "fit checkpoint";
/// The role of the data set in the run record.
pub(crate) const DATA_ROLE: &str = "training data";

/// Fingerprint of the data and of the parameters that change the fitted model.
pub(crate) fn fingerprint(params: &SvmValidParams, data: &Dataset) -> u64 {
    let mut h = params_hash(params, data.n_features());
    hash_dataset(&mut h, data);
    h.0
}

/// The parameters' part of [`fingerprint`] (the data's follows), for data `n_features` wide.
pub(crate) fn params_hash(params: &SvmValidParams, n_features: usize) -> Fnv {
    let mut h = Fnv::new();
    let p = format!(
        "{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}",
        params.svm_type,
        params.kernel.resolve(n_features),
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
    // Only the non-default fit enters, so the default's fingerprint is the one it always had.
    if params.platt == PlattFit::WithIntercept {
        h.bytes(b"|platt with intercept");
    }
    h
}

/// The settings (LIBSVM's flags) and the data of a fit, for [`FitCheckpoint`]'s run record:
/// every parameter [`fingerprint`] covers.
pub(crate) fn record(params: &SvmValidParams, data: &Dataset) -> RunRecord {
    let mut r = settings(params, data.n_features());
    r.data(DATA_ROLE, data);
    r
}

/// The settings' part of [`record`] (the data's follows), for data `n_features` wide.
pub(crate) fn settings(params: &SvmValidParams, n_features: usize) -> RunRecord {
    let mut r = RunRecord::new();
    let weights: Vec<String> = params
        .class_weights
        .iter()
        .map(|(label, w)| format!("{label}={w}"))
        .collect();
    let weights = if weights.is_empty() {
        "none".to_owned()
    } else {
        weights.join(",")
    };
    r.set("-s", params.svm_type.code())
        .kernel(&params.kernel.resolve(n_features))
        .set("-c", params.c)
        .set("-n", params.nu)
        .set("-p", params.epsilon)
        .set("-e", params.solver.tol)
        .set("-h", u8::from(params.solver.shrinking == Shrinking::On))
        .set("-b", u8::from(params.probability == Probability::On))
        .set("-w", weights)
        .set(
            "--platt",
            match params.platt {
                PlattFit::ThroughOrigin => "origin",
                PlattFit::WithIntercept => "libsvm",
            },
        )
        .set("--seed", params.seed);
    r
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
        let mut e = Enc::new(if self.run.is_some() {
            MAGIC
        } else {
            PREV_MAGIC
        });
        e.u64(self.fingerprint);
        if let Some(r) = &self.run {
            r.encode(&mut e);
        }
        e.usize(self.subs.len());
        let prob = |e: &mut Enc, p: &Option<(f64, f64)>| match p {
            Some((a, c)) => {
                e.u8(1);
                e.f64(*a);
                e.f64(*c);
            }
            None => e.u8(0),
        };
        for s in &self.subs {
            match s {
                SubState::NotStarted => e.u8(0),
                SubState::Stopped { snap, prob: p } => {
                    e.u8(1);
                    prob(&mut e, p);
                    snap.encode(&mut e);
                }
                SubState::Done(d) => {
                    e.u8(2);
                    prob(&mut e, &d.prob);
                    e.f64(d.rho);
                    e.f64s(&d.coef);
                    let r = &d.report;
                    prob(&mut e, &r.classes);
                    for v in [r.objective, r.rho, r.max_violation, r.gap] {
                        e.f64(v);
                    }
                    e.u64(r.iterations);
                    e.usize(r.n_sv);
                    e.usize(r.n_bsv);
                    e.u8(r.status.code());
                }
            }
        }
        persist::seal(e.finish())
    }

    /// Reads [`FitCheckpoint::to_bytes`]' form.
    ///
    /// # Errors
    /// A [`CheckpointError`] naming what is wrong (magic, checksum, truncation, a bad value);
    /// never a panic.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, CheckpointError> {
        if bytes.starts_with(OLD_MAGIC.as_bytes()) {
            return Err(CheckpointError::Version {
                file: FILE,
                found: OLD_MAGIC,
                reason: "without a checksum",
            });
        }
        let (mut d, current) = persist::open_either(bytes, MAGIC, PREV_MAGIC, FILE)?;
        let fingerprint = d.u64()?;
        let run = if current {
            Some(RunRecord::decode(&mut d)?)
        } else {
            None
        };
        // A subproblem takes at least its tag byte.
        let n = d.len(1)?;
        let mut subs = Vec::with_capacity(n);
        let finite = |d: &Dec<'_>, v: f64| {
            if v.is_finite() {
                Ok(v)
            } else {
                Err(d.invalid("value", "not finite"))
            }
        };
        let pair = |d: &mut Dec<'_>, field: &'static str| -> Result<_, CheckpointError> {
            match d.u8()? {
                0 => Ok(None),
                1 => {
                    let a = d.f64()?;
                    let a = finite(d, a)?;
                    let b = d.f64()?;
                    Ok(Some((a, finite(d, b)?)))
                }
                t => Err(d.bad_tag(field, t)),
            }
        };
        for _ in 0..n {
            let s = match d.u8()? {
                0 => SubState::NotStarted,
                1 => {
                    let p = pair(&mut d, "probability tag")?;
                    let snap = SmoSnapshot::decode(&mut d)?;
                    SubState::Stopped {
                        snap: Box::new(snap),
                        prob: p,
                    }
                }
                2 => {
                    let p = pair(&mut d, "probability tag")?;
                    let rho = d.f64()?;
                    let rho = finite(&d, rho)?;
                    let len = d.len(8)?;
                    let mut coef = Vec::with_capacity(len);
                    for _ in 0..len {
                        let c = d.f64()?;
                        coef.push(finite(&d, c)?);
                    }
                    let classes = pair(&mut d, "class tag")?;
                    let objective = d.f64()?;
                    let rho2 = d.f64()?;
                    let max_violation = d.f64()?;
                    let gap = d.f64()?;
                    let iterations = d.u64()?;
                    let n_sv = d.u64()? as usize;
                    let n_bsv = d.u64()? as usize;
                    let code = d.u8()?;
                    let status = Status::from_code(code).ok_or(d.bad_tag("status code", code))?;
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
                t => return Err(d.bad_tag("subproblem tag", t)),
            };
            subs.push(s);
        }
        d.finish()?;
        Ok(Self {
            fingerprint,
            run,
            subs,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{DenseMatrix, Features};
    use crate::fit::Control;
    use crate::svm::{fit, SvmParams, SvmSolver};

    /// A crafted state file (a body byte changed and the checksum recomputed, as an editor
    /// could) is refused or continued without a panic: three classes, so the file holds
    /// finished, stopped and unstarted subproblems; stopped by the pair and by the block engine.
    #[test]
    fn resealed_crafted_bodies_never_panic() {
        let n = 45;
        let v = (0..n)
            .flat_map(|i| [(i as f64 * 1.3).sin(), (i as f64 * 0.7).cos()])
            .collect();
        let y = (0..n).map(|i| (i % 3) as f64).collect();
        let d = Dataset::new(Features::Dense(DenseMatrix::new(n, 2, v).unwrap()), y, None).unwrap();
        let pair = SvmParams::new().c(1000.0).max_iter(20);
        // A working set of 4 of a pair's 30 variables: many outer iterations.
        let block = pair
            .clone()
            .engine(SvmSolver::Block)
            .cache_bytes(2 * 4 * 4 * 30);
        for (params, stride) in [(pair, 3), (block, 5)] {
            let stop = params.check().unwrap();
            let ck = fit(&stop, &d, &mut Control::default()).unwrap().checkpoint;
            let bytes = ck.expect("max_iter stops the fit").to_bytes();
            let mut tried = 0;
            for b in crate::persist::resealed_variants(&bytes, 96, stride) {
                let Ok(c) = FitCheckpoint::from_bytes(&b) else {
                    continue;
                };
                tried += 1;
                assert_eq!(c.to_bytes(), b);
                // Ok or Err: either is fine, a panic is not (the iteration limit keeps a resume
                // from a crafted, inconsistent gradient short).
                let _ = fit(&stop, &d, &mut Control::default().resume_from(&c));
            }
            assert!(tried > 50, "{tried}");
        }
    }

    /// A fit stopped on the block engine records its subproblems' block snapshots and resumes
    /// (through the file's bytes) to the uninterrupted fit's model, also when the fit is resumed
    /// with the pair engine asked for: a snapshot continues on its own engine.
    #[test]
    fn block_engine_fits_resume_to_the_uninterrupted_model() {
        let n = 60;
        let v = (0..n)
            .flat_map(|i| [(i as f64 * 1.3).sin(), (i as f64 * 0.7).cos()])
            .collect();
        let y = (0..n).map(|i| (i % 3) as f64).collect();
        let d = Dataset::new(Features::Dense(DenseMatrix::new(n, 2, v).unwrap()), y, None).unwrap();
        let full = SvmParams::new()
            .c(1000.0)
            .engine(SvmSolver::Block)
            .cache_bytes(2 * 4 * 4 * 40);
        let want = fit(&full.clone().check().unwrap(), &d, &mut Control::default())
            .unwrap()
            .model;
        for limit in [1, 30, 200] {
            let stop = full.clone().max_iter(limit).check().unwrap();
            let ck = fit(&stop, &d, &mut Control::default())
                .unwrap()
                .checkpoint
                .expect("the limit stops the fit");
            let blocks = ck
                .subs
                .iter()
                .filter(|s| matches!(s, SubState::Stopped { snap, .. } if snap.block.is_some()))
                .count();
            assert!(blocks > 0, "limit {limit}");
            let back = FitCheckpoint::from_bytes(&ck.to_bytes()).unwrap();
            assert_eq!(back, ck);
            for engine in [SvmSolver::Block, SvmSolver::Smo] {
                let p = full.clone().engine(engine).check().unwrap();
                let got = fit(&p, &d, &mut Control::default().resume_from(&back)).unwrap();
                assert_eq!(got.model, want, "limit {limit}, resumed with {engine:?}");
            }
        }
    }

    /// A state file of the previous version (no run record) still reads, writes back byte for
    /// byte and resumes to the model of an uninterrupted fit; a mismatch against it can only
    /// say that the data or parameters differ.
    #[test]
    fn the_previous_version_still_resumes() {
        let n = 45;
        let v = (0..n)
            .flat_map(|i| [(i as f64 * 1.3).sin(), (i as f64 * 0.7).cos()])
            .collect();
        let y = (0..n).map(|i| (i % 3) as f64).collect();
        let d = Dataset::new(Features::Dense(DenseMatrix::new(n, 2, v).unwrap()), y, None).unwrap();
        let stop = SvmParams::new().c(1000.0).max_iter(20).check().unwrap();
        let mut ck = fit(&stop, &d, &mut Control::default())
            .unwrap()
            .checkpoint
            .unwrap();
        let current = ck.to_bytes();
        ck.run = None;
        let back = persist::check_previous_version(
            &current,
            &ck.to_bytes(),
            (MAGIC, PREV_MAGIC),
            FitCheckpoint::from_bytes,
            FitCheckpoint::to_bytes,
            |c| c.run.is_some(),
        );
        let full = SvmParams::new().c(1000.0).check().unwrap();
        let want = fit(&full, &d, &mut Control::default()).unwrap().model;
        let got = fit(&full, &d, &mut Control::default().resume_from(&back)).unwrap();
        assert_eq!(got.model, want);
        assert!(got.checkpoint.is_none());
        let other = SvmParams::new().c(10.0).check().unwrap();
        let e = fit(&other, &d, &mut Control::default().resume_from(&back)).unwrap_err();
        assert!(
            matches!(
                e,
                crate::FitError::Checkpoint(CheckpointError::Fingerprint { .. })
            ),
            "{e}"
        );
    }
}
