//! Checkpoints of a regularization path: what [`super::run_path_resumable`] needs to continue an
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
//! File form ([`PathCheckpoint::to_bytes`]), little-endian, floats as their IEEE bits: magic
//! `MKPATHC2` (`C1` files, from before the linear secant start, are refused), a fingerprint of the data, the validation data and the parameters that change the
//! points (not the cache size, the limits or the thread count), the engine byte, `C_min`, the
//! finished points, the reference, the point before it (linear engine: `C`, `alpha`, `w` of the
//! secant warm start), the sketch, `perm`, and an 8-byte checksum (FNV-1a 64 of every
//! byte before it), verified first.

use crate::data::Dataset;
use crate::solver::smo::ByteReader;
use crate::svm::checkpoint::{hash_dataset, seal, status_code, status_from, unseal, Fnv};

use super::{PathParams, PathPoint};

const MAGIC: &[u8; 8] = b"MKPATHC2";

/// The reference solution a path continues from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RefState {
    pub c: f64,
    pub alpha: Vec<f64>,
    pub g: Vec<f64>,
    /// Primal weights (linear engine).
    pub w: Option<Vec<f64>>,
}

/// Where a stopped path is, to be continued by [`super::run_path_resumable`].
#[derive(Debug, Clone, PartialEq)]
pub struct PathCheckpoint {
    pub(crate) fingerprint: u64,
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
pub(crate) fn fingerprint(params: &PathParams, train: &Dataset, valid: Option<&Dataset>) -> u64 {
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
    // Appended only when not the default, so that state files written before the option
    // existed still resume.
    if params.linear_start != super::LinearStart::Auto {
        h.bytes(format!("|{:?}", params.linear_start).as_bytes());
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

fn put_u64(b: &mut Vec<u8>, v: u64) {
    b.extend_from_slice(&v.to_le_bytes());
}
fn put_f64(b: &mut Vec<u8>, v: f64) {
    put_u64(b, v.to_bits());
}
fn put_vec(b: &mut Vec<u8>, v: &[f64]) {
    put_u64(b, v.len() as u64);
    for &x in v {
        put_f64(b, x);
    }
}
fn put_opt_f64(b: &mut Vec<u8>, v: Option<f64>) {
    match v {
        Some(x) => {
            b.push(1);
            put_f64(b, x);
        }
        None => b.push(0),
    }
}
fn put_opt_vec(b: &mut Vec<u8>, v: Option<&[f64]>) {
    match v {
        Some(x) => {
            b.push(1);
            put_vec(b, x);
        }
        None => b.push(0),
    }
}

fn get_byte(r: &mut ByteReader<'_>) -> Result<u8, String> {
    Ok(r.take(1)?[0])
}
/// A length that the remaining bytes can hold at `each` bytes per entry.
fn get_len(r: &mut ByteReader<'_>, each: u64) -> Result<usize, String> {
    let len = r.u64()?;
    let left = (r.b.len() - r.pos) as u64;
    if len.checked_mul(each).is_none_or(|need| need > left) {
        return Err("path checkpoint: truncated array".into());
    }
    Ok(len as usize)
}
fn get_vec(r: &mut ByteReader<'_>) -> Result<Vec<f64>, String> {
    let len = get_len(r, 8)?;
    (0..len).map(|_| r.f64()).collect()
}
fn get_tag(r: &mut ByteReader<'_>) -> Result<bool, String> {
    match get_byte(r)? {
        0 => Ok(false),
        1 => Ok(true),
        t => Err(format!("path checkpoint: bad tag {t}")),
    }
}
fn get_opt_f64(r: &mut ByteReader<'_>) -> Result<Option<f64>, String> {
    Ok(if get_tag(r)? { Some(r.f64()?) } else { None })
}
fn get_opt_vec(r: &mut ByteReader<'_>) -> Result<Option<Vec<f64>>, String> {
    Ok(if get_tag(r)? { Some(get_vec(r)?) } else { None })
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
        let mut b = Vec::new();
        b.extend_from_slice(MAGIC);
        put_u64(&mut b, self.fingerprint);
        b.push(u8::from(self.linear));
        put_opt_f64(&mut b, self.c_min_trivial);
        put_u64(&mut b, self.points.len() as u64);
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
                put_f64(&mut b, v);
            }
            for v in [
                p.n_sv,
                p.n_bsv,
                p.screened_r,
                p.screened_l,
                p.kkt_violators_freed,
                p.solves,
            ] {
                put_u64(&mut b, v as u64);
            }
            put_u64(&mut b, p.iterations);
            b.push(status_code(p.status));
            put_opt_f64(&mut b, p.valid_accuracy);
            put_vec(&mut b, &p.alpha);
            put_opt_vec(&mut b, p.w.as_deref());
        }
        match &self.reference {
            Some(r) => {
                b.push(1);
                put_f64(&mut b, r.c);
                put_vec(&mut b, &r.alpha);
                put_vec(&mut b, &r.g);
                put_opt_vec(&mut b, r.w.as_deref());
            }
            None => b.push(0),
        }
        match &self.previous {
            Some(r) => {
                b.push(1);
                put_f64(&mut b, r.c);
                put_vec(&mut b, &r.alpha);
                put_opt_vec(&mut b, r.w.as_deref());
            }
            None => b.push(0),
        }
        put_u64(&mut b, self.sketch_s.len() as u64);
        b.extend(self.sketch_s.iter().map(|&v| u8::from(v)));
        put_vec(&mut b, &self.sketch_a);
        put_vec(&mut b, &self.sketch_b);
        put_u64(&mut b, self.flips);
        put_u64(&mut b, self.perm.len() as u64);
        for &k in &self.perm {
            put_u64(&mut b, k as u64);
        }
        seal(b)
    }

    /// Reads [`PathCheckpoint::to_bytes`]' form.
    ///
    /// # Errors
    /// A message naming what is wrong (magic, checksum, truncation, a bad value); never a panic.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, String> {
        if bytes.len() < 8 || &bytes[..8] != MAGIC {
            return Err("not a marginkit path checkpoint (bad magic)".into());
        }
        let body = unseal(bytes, "path checkpoint")?;
        let mut r = ByteReader { b: body, pos: 8 };
        let fingerprint = r.u64()?;
        let linear = get_tag(&mut r)?;
        let c_min_trivial = get_opt_f64(&mut r)?;
        // A point takes at least 7*8 + 7*8 + 1 + 1 + 8 + 1 bytes.
        let n_points = get_len(&mut r, 123)?;
        let mut points = Vec::with_capacity(n_points);
        for _ in 0..n_points {
            let mut f = [0.0; 7];
            for v in &mut f {
                *v = r.f64()?;
            }
            let mut u = [0usize; 6];
            for v in &mut u {
                *v = usize::try_from(r.u64()?)
                    .map_err(|_| "path checkpoint: a count out of range".to_string())?;
            }
            let iterations = r.u64()?;
            let status = status_from(get_byte(&mut r)?)?;
            let valid_accuracy = get_opt_f64(&mut r)?;
            let alpha = get_vec(&mut r)?;
            let w = get_opt_vec(&mut r)?;
            points.push(PathPoint {
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
                valid_accuracy,
                alpha,
                w,
            });
        }
        let reference = if get_tag(&mut r)? {
            Some(RefState {
                c: r.f64()?,
                alpha: get_vec(&mut r)?,
                g: get_vec(&mut r)?,
                w: get_opt_vec(&mut r)?,
            })
        } else {
            None
        };
        let previous = if get_tag(&mut r)? {
            Some(RefState {
                c: r.f64()?,
                alpha: get_vec(&mut r)?,
                g: Vec::new(),
                w: get_opt_vec(&mut r)?,
            })
        } else {
            None
        };
        let ns = get_len(&mut r, 1)?;
        let sketch_s = r
            .take(ns)?
            .iter()
            .map(|&v| match v {
                0 => Ok(false),
                1 => Ok(true),
                t => Err(format!("path checkpoint: bad sketch entry {t}")),
            })
            .collect::<Result<Vec<bool>, String>>()?;
        let sketch_a = get_vec(&mut r)?;
        let sketch_b = get_vec(&mut r)?;
        let flips = r.u64()?;
        let np = get_len(&mut r, 8)?;
        let mut perm = Vec::with_capacity(np);
        for _ in 0..np {
            perm.push(
                usize::try_from(r.u64()?)
                    .map_err(|_| "path checkpoint: an index out of range".to_string())?,
            );
        }
        if r.pos != body.len() {
            return Err("path checkpoint: trailing bytes".into());
        }
        Ok(Self {
            fingerprint,
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
    pub(crate) fn check_fits(&self, linear: bool, n: usize, d: usize) -> Result<(), &'static str> {
        if self.linear != linear {
            return Err("the path checkpoint was made with the other engine");
        }
        let bad = "the path checkpoint does not fit the problem (array lengths)";
        if let Some(r) = &self.reference {
            if r.alpha.len() != n || r.g.len() != n {
                return Err(bad);
            }
            match (&r.w, linear) {
                (Some(w), true) if w.len() == d => {}
                (None, false) => {}
                _ => return Err(bad),
            }
        }
        if let Some(r) = &self.previous {
            if !linear || r.alpha.len() != n || r.w.as_ref().is_none_or(|w| w.len() != d) {
                return Err(bad);
            }
        }
        for p in &self.points {
            if !(p.alpha.is_empty() || p.alpha.len() == n) {
                return Err(bad);
            }
            if p.w.as_ref().is_some_and(|w| w.len() != d) {
                return Err(bad);
            }
        }
        if self.sketch_s.len() != n {
            return Err(bad);
        }
        if linear {
            if self.sketch_a.len() != d || self.sketch_b.len() != n || !self.perm.is_empty() {
                return Err(bad);
            }
        } else {
            if self.sketch_a.len() != n || !self.sketch_b.is_empty() || self.perm.len() != n {
                return Err(bad);
            }
            let mut seen = vec![false; n];
            for &k in &self.perm {
                if k >= n || seen[k] {
                    return Err("the path checkpoint's solver order is not a permutation");
                }
                seen[k] = true;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{DenseMatrix, Features};
    use crate::kernel::KernelSpec;
    use crate::path::{run_path_resumable, Grid};
    use crate::solver::{Control, IterStats, NoObserver, Observer};
    use crate::svm::checkpoint::resealed_variants;

    struct StopAt(usize);
    impl Observer for StopAt {
        fn on_iter(&mut self, _: &IterStats) -> Control {
            if self.0 == 0 {
                return Control::Stop;
            }
            self.0 -= 1;
            Control::Continue
        }
    }

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
            let (_, ck) = run_path_resumable(
                &params.clone().check().unwrap(),
                &d,
                None,
                &mut |_| {},
                &mut StopAt(3),
                None,
            )
            .unwrap();
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
                let _ =
                    run_path_resumable(&params, &d, None, &mut |_| {}, &mut NoObserver, Some(&c));
            }
            assert!(tried > 50, "{tried}");
        }
    }
}
