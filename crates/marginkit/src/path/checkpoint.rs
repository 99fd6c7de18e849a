//! Checkpoints of a regularization path: what [`super::fit`] needs to continue an
//! interrupted path to exactly the points an uninterrupted run gives.
//!
//! A path is a sequence of points, each computed from the state the previous ones left: the
//! reference solution `(C, alpha, g = Q alpha)` (plus `w` on the linear engine), the screening
//! sketch (`s`, `h = Q s`, or `z_s` and `h` on the linear engine) and, on the kernel engine, the
//! order the SMO solver left the kernel matrix in (`perm`: the next solve starts from it, and its
//! iterations depend on it). A checkpoint stores that state as it was *before* the interrupted
//! point, with every finished point; continuing re-runs the interrupted point from its start,
//! so each point's solve is the one an uninterrupted run makes, bit for bit (tested:
//! `tests/screening_path.rs`). The unit of resumption is the point (the partial SMO state of the
//! interrupted point is not kept: a point is one warm-started solve, short next to a path).
//!
//! File form ([`PathCheckpoint::to_bytes`], conventions in [`crate::persist`]): magic
//! `MKPATHC3`, a fingerprint of the data, the validation data and the parameters that change
//! the points (not the cache size, the limits or the thread count), the run record (those
//! parameters by flag and the shapes and hashes of the data sets, so that a refused resume
//! names what differs; absent in the previous form `MKPATHC2`, which is still read and
//! continued), the engine byte, `C_min`,
//! the finished points, the reference, the point before it (linear engine: `C`, `alpha`, `w` of
//! the secant warm start), the sketch, `perm`, and the checksum, verified first. The form
//! without the secant warm start, `MKPATHC1`, is refused by name.

use crate::data::Dataset;
use crate::persist::{self, hash_dataset, CheckpointError, Dec, Enc, Fnv, RunRecord};
use crate::solver::Status;

use super::params::{Engine, Grid, LinearStart, PathValidParams};
use super::result::PathPoint;
use crate::solver::{Shrinking, SvmSolver};

const MAGIC: &str = "MKPATHC3";
/// The previous form: no run record (still read and continued).
const PREV_MAGIC: &str = "MKPATHC2";
/// The form without the secant warm start (refused by name).
const OLD_MAGIC: &str = "MKPATHC1";
/// The kind of state file, in messages.
pub(crate) const FILE: &str = "path checkpoint";

/// The reference solution a path continues from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RefState {
    pub c: f64,
    pub alpha: Vec<f64>,
    pub g: Vec<f64>,
    /// Primal weights (linear engine).
    pub w: Option<Vec<f64>>,
}

/// Where a stopped path is, to be continued by [`super::fit`].
#[derive(Debug, Clone, PartialEq)]
pub struct PathCheckpoint {
    pub(crate) fingerprint: u64,
    /// What the path was run with (`None` in a file of the previous version).
    pub(crate) run: Option<RunRecord>,
    pub(crate) linear: bool,
    pub(crate) c_min_trivial: Option<f64>,
    pub(crate) points: Vec<PathPoint>,
    pub(crate) reference: Option<RefState>,
    /// Linear engine: the solution before the reference (`g` empty), for the secant warm start.
    pub(crate) previous: Option<RefState>,
    pub(crate) sketch_s: Vec<bool>,
    /// Kernel: `h`; linear: `z_s`.
    pub(crate) sketch_a: Vec<f64>,
    /// Kernel: empty; linear: `h`.
    pub(crate) sketch_b: Vec<f64>,
    pub(crate) flips: u64,
    /// Kernel: the solver order of the matrix; linear: empty.
    pub(crate) perm: Vec<usize>,
}

/// Fingerprint of the path's data, validation data and result-changing parameters.
pub(crate) fn fingerprint(
    params: &PathValidParams,
    train: &Dataset,
    valid: Option<&Dataset>,
) -> u64 {
    let mut h = Fnv::new();
    let p = format!(
        "path|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}",
        params.engine,
        params.grid,
        params.screening,
        params.bias,
        params.tol,
        params.shrinking,
        params.seed,
        params.keep_solutions
    );
    h.bytes(p.as_bytes());
    // Appended only when not the default: the default's fingerprint does not depend on the
    // option, so state files that do not record it stay valid.
    if params.linear_start != super::LinearStart::Auto {
        h.bytes(format!("|{:?}", params.linear_start).as_bytes());
    }
    // The block engine reaches the same points to the tolerance, not the pair engine's bits
    // (`smo` and `auto` run the pair engine, so they share the fingerprint).
    if params.qp_engine == SvmSolver::Block {
        h.bytes(b"|block");
    }
    hash_dataset(&mut h, train);
    match valid {
        Some(v) => {
            h.u64(1);
            hash_dataset(&mut h, v);
        }
        None => h.u64(0),
    }
    h.0
}

/// The settings (`marginkit path`'s flags) and the data of a path, for [`PathCheckpoint`]'s
/// run record: every parameter [`fingerprint`] covers.
pub(crate) fn record(
    params: &PathValidParams,
    train: &Dataset,
    valid: Option<&Dataset>,
) -> RunRecord {
    let list = |v: &[f64]| {
        v.iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    let mut r = RunRecord::new();
    match &params.engine {
        Engine::Kernel(k) => r.set("--linear", "no").kernel(k),
        Engine::Linear => r.set("--linear", "yes"),
    };
    r.set(
        "-B",
        params
            .bias
            .map_or_else(|| "-1".to_owned(), |b| b.to_string()),
    );
    match &params.grid {
        Grid::Log {
            c_min,
            c_max,
            points,
        } => r
            .set("--c-min", c_min)
            .set("--c-max", c_max)
            .set("--grid", points),
        Grid::List(cs) => r.set("--c-list", list(cs)),
        Grid::Epsilon {
            eps,
            c_max,
            max_points,
        } => r
            .set("--eps-path", eps)
            .set("--c-max", c_max)
            .set("max_points", max_points),
    };
    r.set("--screening", params.screening.map_or("none", |s| s.name()))
        .set("-e", params.tol)
        .set("-h", u8::from(params.shrinking == Shrinking::On))
        .set("--seed", params.seed)
        .set(
            "--start",
            match params.linear_start {
                LinearStart::Auto => "auto",
                LinearStart::Scaled => "scaled",
                LinearStart::Secant => "secant",
                LinearStart::Cold => "cold",
            },
        )
        .set(
            "--save-models/--best-model",
            if params.keep_solutions {
                "given"
            } else {
                "not given"
            },
        )
        .data("training data", train);
    // Recorded for the block engine only, as in the fingerprint.
    if params.qp_engine == SvmSolver::Block {
        r.set("--solver", SvmSolver::Block.as_str());
    }
    if let Some(v) = valid {
        r.data("validation data", v);
    }
    r
}

impl PathCheckpoint {
    /// Number of finished points (the path continues at the next one).
    pub fn n_points(&self) -> usize {
        self.points.len()
    }

    /// The finished points.
    pub fn points(&self) -> &[PathPoint] {
        &self.points
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
        e.bool(self.linear);
        e.opt_f64(self.c_min_trivial);
        e.usize(self.points.len());
        for p in &self.points {
            for v in [
                p.c,
                p.objective,
                p.screening_rate,
                p.rule_seconds,
                p.solve_seconds,
                p.max_violation,
                p.solver_violation,
            ] {
                e.f64(v);
            }
            for v in [
                p.n_sv,
                p.n_bsv,
                p.screened_r,
                p.screened_l,
                p.kkt_violators_freed,
                p.solves,
            ] {
                e.usize(v);
            }
            e.u64(p.iterations);
            e.u8(p.status.code());
            e.opt_f64(p.valid_accuracy);
            e.f64s(&p.alpha);
            e.opt_f64s(p.w.as_deref());
        }
        match &self.reference {
            Some(r) => {
                e.u8(1);
                e.f64(r.c);
                e.f64s(&r.alpha);
                e.f64s(&r.g);
                e.opt_f64s(r.w.as_deref());
            }
            None => e.u8(0),
        }
        match &self.previous {
            Some(r) => {
                e.u8(1);
                e.f64(r.c);
                e.f64s(&r.alpha);
                e.opt_f64s(r.w.as_deref());
            }
            None => e.u8(0),
        }
        e.bools(&self.sketch_s);
        e.f64s(&self.sketch_a);
        e.f64s(&self.sketch_b);
        e.u64(self.flips);
        e.usizes(&self.perm);
        persist::seal(e.finish())
    }

    /// Reads [`PathCheckpoint::to_bytes`]' form.
    ///
    /// # Errors
    /// A [`CheckpointError`] naming what is wrong (magic, checksum, truncation, a bad value);
    /// never a panic.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, CheckpointError> {
        if bytes.starts_with(OLD_MAGIC.as_bytes()) {
            return Err(CheckpointError::Version {
                file: FILE,
                found: OLD_MAGIC,
                reason: "without the linear engine's secant warm start",
            });
        }
        let (mut d, current) = persist::open_either(bytes, MAGIC, PREV_MAGIC, FILE)?;
        let fingerprint = d.u64()?;
        let run = if current {
            Some(RunRecord::decode(&mut d)?)
        } else {
            None
        };
        let linear = d.bool()?;
        let c_min_trivial = d.opt_f64()?;
        // A point takes at least 7*8 + 7*8 + 1 + 1 + 8 + 1 bytes.
        let n_points = d.len(123)?;
        let mut points = Vec::with_capacity(n_points);
        for _ in 0..n_points {
            points.push(get_point(&mut d)?);
        }
        let reference = if d.bool()? {
            Some(RefState {
                c: d.f64()?,
                alpha: d.f64s()?,
                g: d.f64s()?,
                w: d.opt_f64s()?,
            })
        } else {
            None
        };
        let previous = if d.bool()? {
            Some(RefState {
                c: d.f64()?,
                alpha: d.f64s()?,
                g: Vec::new(),
                w: d.opt_f64s()?,
            })
        } else {
            None
        };
        let sketch_s = d.bools()?;
        let sketch_a = d.f64s()?;
        let sketch_b = d.f64s()?;
        let flips = d.u64()?;
        let perm = d.usizes()?;
        d.finish()?;
        Ok(Self {
            fingerprint,
            run,
            linear,
            c_min_trivial,
            points,
            reference,
            previous,
            sketch_s,
            sketch_a,
            sketch_b,
            flips,
            perm,
        })
    }

    /// Checks the state against a problem of `n` samples and `d` primal weights (linear
    /// engine), so that continuing cannot index out of range: the lengths, and that `perm` is a
    /// permutation of `0..n`.
    pub(crate) fn check_fits(
        &self,
        linear: bool,
        n: usize,
        d: usize,
    ) -> Result<(), CheckpointError> {
        let engine = |linear: bool| {
            if linear {
                "the linear engine"
            } else {
                "the kernel engine"
            }
        };
        if self.linear != linear {
            return Err(CheckpointError::WrongModel {
                file: FILE,
                expected: engine(linear),
                found: engine(self.linear),
            });
        }
        let bad = || CheckpointError::Mismatch {
            file: FILE,
            reason: "array lengths",
        };
        if let Some(r) = &self.reference {
            if r.alpha.len() != n || r.g.len() != n {
                return Err(bad());
            }
            match (&r.w, linear) {
                (Some(w), true) if w.len() == d => {}
                (None, false) => {}
                _ => return Err(bad()),
            }
        }
        if let Some(r) = &self.previous {
            if !linear || r.alpha.len() != n || r.w.as_ref().is_none_or(|w| w.len() != d) {
                return Err(bad());
            }
        }
        for p in &self.points {
            if !(p.alpha.is_empty() || p.alpha.len() == n) {
                return Err(bad());
            }
            if p.w.as_ref().is_some_and(|w| w.len() != d) {
                return Err(bad());
            }
        }
        if self.sketch_s.len() != n {
            return Err(bad());
        }
        if linear {
            if self.sketch_a.len() != d || self.sketch_b.len() != n || !self.perm.is_empty() {
                return Err(bad());
            }
        } else {
            if self.sketch_a.len() != n || !self.sketch_b.is_empty() || self.perm.len() != n {
                return Err(bad());
            }
            let mut seen = vec![false; n];
            for &k in &self.perm {
                if k >= n || seen[k] {
                    return Err(CheckpointError::Mismatch {
                        file: FILE,
                        reason: "the solver order is not a permutation",
                    });
                }
                seen[k] = true;
            }
        }
        Ok(())
    }
}

/// One finished point of [`PathCheckpoint::to_bytes`]' form.
fn get_point(d: &mut Dec<'_>) -> Result<PathPoint, CheckpointError> {
    let mut f = [0.0; 7];
    for v in &mut f {
        *v = d.f64()?;
    }
    let mut u = [0usize; 6];
    for v in &mut u {
        *v = d.usize()?;
    }
    let iterations = d.u64()?;
    let code = d.u8()?;
    let status = Status::from_code(code).ok_or(d.bad_tag("status code", code))?;
    Ok(PathPoint {
        c: f[0],
        objective: f[1],
        screening_rate: f[2],
        rule_seconds: f[3],
        solve_seconds: f[4],
        max_violation: f[5],
        solver_violation: f[6],
        n_sv: u[0],
        n_bsv: u[1],
        screened_r: u[2],
        screened_l: u[3],
        kkt_violators_freed: u[4],
        solves: u[5],
        iterations,
        status,
        valid_accuracy: d.opt_f64()?,
        alpha: d.f64s()?,
        w: d.opt_f64s()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{DenseMatrix, Features};
    use crate::fit::Control;
    use crate::kernel::KernelSpec;
    use crate::path::{fit, Grid, PathData, PathParams};
    use crate::persist::resealed_variants;
    use crate::persist::StopAt;

    fn data() -> Dataset {
        let n = 40;
        let v = (0..n)
            .flat_map(|i| [(i as f64 * 1.3).sin(), (i as f64 * 0.7).cos()])
            .collect();
        let y = (0..n)
            .map(|i| {
                if (i as f64 * 2.1).sin() + (i as f64 * 1.3).sin() > 0.0 {
                    1.0
                } else {
                    -1.0
                }
            })
            .collect();
        Dataset::new(Features::Dense(DenseMatrix::new(n, 2, v).unwrap()), y, None).unwrap()
    }

    /// A crafted state file (any body byte changed and the checksum recomputed, as an editor
    /// could) is refused or continued without a panic, on both engines.
    #[test]
    fn resealed_crafted_bodies_never_panic() {
        let d = data();
        let grid = Grid::Log {
            c_min: 0.1,
            c_max: 100.0,
            points: 6,
        };
        for params in [
            PathParams::kernel(KernelSpec::Rbf { gamma: 2.0 }).grid(grid.clone()),
            PathParams::linear().grid(grid.clone()),
        ] {
            let ck = fit(
                &params.clone().check().unwrap(),
                &PathData::new(&d),
                &mut Control::new(StopAt(3)),
            )
            .unwrap()
            .checkpoint;
            // Limits are not in the fingerprint: the resumes below stay short even from a
            // crafted, inconsistent state.
            let params = params.max_iter(Some(200)).check().unwrap();
            let bytes = ck.expect("the observer stops the path").to_bytes();
            let mut tried = 0;
            for b in resealed_variants(&bytes, 96, 7) {
                let Ok(c) = PathCheckpoint::from_bytes(&b) else {
                    continue;
                };
                tried += 1;
                // Ok or Err: either is fine, a panic is not.
                let _ = fit(
                    &params,
                    &PathData::new(&d),
                    &mut Control::default().resume_from(&c),
                );
            }
            assert!(tried > 50, "{tried}");
        }
    }

    /// A state file of the previous version (no run record) still reads, writes back byte for
    /// byte and resumes to the points of an uninterrupted path.
    #[test]
    fn the_previous_version_still_resumes() {
        let d = data();
        let params = PathParams::kernel(KernelSpec::Rbf { gamma: 2.0 })
            .grid(Grid::Log {
                c_min: 0.1,
                c_max: 100.0,
                points: 6,
            })
            .check()
            .unwrap();
        let mut ck = fit(&params, &PathData::new(&d), &mut Control::new(StopAt(3)))
            .unwrap()
            .checkpoint
            .unwrap();
        let current = ck.to_bytes();
        ck.run = None;
        let back = persist::check_previous_version(
            &current,
            &ck.to_bytes(),
            (MAGIC, PREV_MAGIC),
            PathCheckpoint::from_bytes,
            PathCheckpoint::to_bytes,
            |c| c.run.is_some(),
        );
        let key = |p: &PathPoint| {
            (
                p.c.to_bits(),
                p.objective.to_bits(),
                p.n_sv,
                p.alpha.clone(),
            )
        };
        let want: Vec<_> = fit(&params, &PathData::new(&d), &mut Control::default())
            .unwrap()
            .model
            .points
            .iter()
            .map(key)
            .collect();
        let got = fit(
            &params,
            &PathData::new(&d),
            &mut Control::default().resume_from(&back),
        )
        .unwrap();
        assert_eq!(got.model.points.iter().map(key).collect::<Vec<_>>(), want);
    }
}
