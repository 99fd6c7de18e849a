//! The path's linear engine: dual coordinate descent ([`dcd`]) on the data, warm-started from
//! the scaled previous solution or the secant through the two previous ones ([`LinearStart`]).

use std::ops::ControlFlow;

use super::checkpoint::{self, PathCheckpoint, RefState};
use super::engine::{free_violators, params_c_max, Account, Ctx, PathEngine, Reference, Solved};
use super::params::LinearStart;
use super::result::PathPoint;
use crate::data::Features;
use crate::error::{CheckpointError, FitError};
use crate::screening::{self, LinearDesignRef, LinearSketch, RuleInputs};
use crate::solver::dcd::{self, LinearDesign, SvcDual};
use crate::solver::{BoxQp, Equality, IterStats, Observer, Status, VarFix};

/// DCD on the rows of `x` (with the bias feature, if any) signed by the labels.
pub(super) struct LinearEngine<'a> {
    design: LinearDesignRef<'a>,
    x: &'a Features,
    bias: Option<f64>,
    /// `|z_i|^2`.
    qd: Vec<f64>,
    /// The weight dimension (features, plus the bias feature).
    dim: usize,
    sketch: LinearSketch,
    /// The solution before the reference, `(C, alpha, w)`, for the secant warm start.
    previous: Option<(f64, Vec<f64>, Vec<f64>)>,
    /// The linear term `-1` and the zero diagonal shift of the hinge-loss dual.
    p: Vec<f64>,
    zero: Vec<f64>,
}

impl<'a> LinearEngine<'a> {
    /// # Errors
    /// [`FitError::Data`] when the weight and screening vectors would not fit in memory.
    pub fn new(ctx: &'a Ctx<'_>) -> Result<Self, FitError> {
        let n = ctx.train.len();
        let bias = ctx.params.bias;
        let design = LinearDesignRef {
            x: &ctx.train.x,
            y: &ctx.y,
            bias,
        };
        let qd = design.sq_norms();
        // The weight vector, the screening sketch's z_s and the reference point's weights.
        ctx.train
            .x
            .check_dense_rows("the linear path's weight and screening vectors", 3)?;
        let sketch = LinearSketch::new(&design);
        let dim = LinearDesign {
            x: &ctx.train.x,
            bias,
        }
        .dim();
        Ok(Self {
            design,
            x: &ctx.train.x,
            bias,
            qd,
            dim,
            sketch,
            previous: None,
            p: vec![-1.0; n],
            zero: vec![0.0; n],
        })
    }

    /// The warm start at `c` and its `w`: the scaled reference or the secant (see
    /// [`LinearStart`]), or zero.
    fn start(&self, ctx: &Ctx<'_>, reference: Option<&Reference>, c: f64) -> (Vec<f64>, Vec<f64>) {
        let n = self.qd.len();
        let dim = self.dim;
        let params = ctx.params;
        match reference {
            Some(r) if params.linear_start != LinearStart::Cold => {
                let w_ref = &r.w;
                let s = c / r.c;
                let w0 = if w_ref.len() == dim {
                    w_ref.iter().map(|v| v * s).collect()
                } else {
                    Vec::new()
                };
                let scaled = (warm_start_scaled(&r.alpha, r.c, c), w0);
                match self.previous.as_ref() {
                    Some((c0, a0, w0))
                        if params.linear_start != LinearStart::Scaled
                            && w_ref.len() == dim
                            && w0.len() == dim
                            && *c0 < r.c
                            && r.c < c =>
                    {
                        let sec = warm_start_secant(
                            &self.design,
                            (*c0, a0, w0),
                            (r.c, &r.alpha, w_ref),
                            c,
                        );
                        // Auto: the secant where it starts lower on the dual objective (an
                        // O(n + d) comparison: both candidates carry their w). It loses where
                        // the two previous solutions differ along directions the tolerance
                        // leaves loose (degenerate faces), which the secant amplifies.
                        let better =
                            dual_objective(&sec.0, &sec.1) < dual_objective(&scaled.0, &scaled.1);
                        if params.linear_start == LinearStart::Secant || better {
                            sec
                        } else {
                            scaled
                        }
                    }
                    _ => scaled,
                }
            }
            _ => (vec![0.0; n], vec![0.0; dim]),
        }
    }
}

impl PathEngine for LinearEngine<'_> {
    type Before = LinearSketch;

    fn initial_reference(
        &mut self,
        ctx: &Ctx<'_>,
        grid: &mut Option<Vec<f64>>,
        c_min: &mut Option<f64>,
    ) -> Option<Reference> {
        // Lemma 9 (cheap for linear models): Q1 = Z (Z'1).
        let n = self.qd.len();
        let ones = vec![1.0; n];
        let sum_z = self.design.weights(&ones);
        let q1 = self.design.margins(&sum_z);
        let m = q1.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        if m > 0.0 && (1.0 / m).is_finite() {
            let c0 = 1.0 / m;
            *c_min = Some(c0);
            Some(Reference {
                c: c0,
                alpha: vec![c0; n],
                g: q1.iter().map(|v| c0 * v).collect(),
                w: sum_z.iter().map(|v| c0 * v).collect(),
            })
        } else {
            if grid.is_none() {
                *grid = Some(vec![1.0, params_c_max(&ctx.params.grid)]);
            }
            None
        }
    }

    fn resume(
        &mut self,
        _ctx: &Ctx<'_>,
        ck: &PathCheckpoint,
    ) -> Result<Option<Reference>, FitError> {
        // Checked by `check_fits`: the lengths.
        let reference = ck.reference.as_ref().map(|r| Reference {
            c: r.c,
            alpha: r.alpha.clone(),
            g: r.g.clone(),
            w: r.w.clone().unwrap_or_default(),
        });
        self.previous = ck
            .previous
            .as_ref()
            .map(|r| (r.c, r.alpha.clone(), r.w.clone().unwrap_or_default()));
        // `w = Z' alpha` must hold (the warm-started DCD trusts it): a crafted, resealed file
        // whose weights disagree with its coefficients is an error, not a wrong path.
        // So must `0 <= alpha <= C` (the scaled start clips alpha without correcting w).
        let design = &self.design;
        let consistent = |c: f64, alpha: &[f64], w: &[f64]| {
            if !(c.is_finite() && c > 0.0 && alpha.iter().all(|&a| (0.0..=c).contains(&a))) {
                return false;
            }
            let r = design.weights(alpha);
            let scale = 1.0 + r.iter().map(|v| v.abs()).sum::<f64>();
            let diff: f64 = r.iter().zip(w).map(|(a, b)| (a - b).abs()).sum();
            diff <= 1e-8 * scale
        };
        let refs = reference.iter().map(|r| (r.c, &r.alpha, &r.w));
        if !refs
            .chain(self.previous.iter().map(|(c, a, w)| (*c, a, w)))
            .all(|(c, a, w)| consistent(c, a, w))
        {
            return Err(CheckpointError::Mismatch {
                file: checkpoint::FILE,
                reason: "coefficients out of bounds or not matching their weights",
            }
            .into());
        }
        self.sketch = LinearSketch::from_parts(
            ck.sketch_s.clone(),
            ck.sketch_a.clone(),
            ck.sketch_b.clone(),
        );
        Ok(reference)
    }

    fn before(&self) -> Self::Before {
        self.sketch.clone()
    }

    fn checkpoint(
        &mut self,
        points: &[PathPoint],
        reference: Option<Reference>,
        sketch: Self::Before,
    ) -> PathCheckpoint {
        let (s, zs, h) = sketch.parts();
        PathCheckpoint {
            fingerprint: 0,
            run: None,
            linear: true,
            c_min_trivial: None,
            points: points.to_vec(),
            reference: reference.map(|r| RefState {
                c: r.c,
                alpha: r.alpha,
                g: r.g,
                w: Some(r.w),
            }),
            previous: self.previous.take().map(|(c, alpha, w)| RefState {
                c,
                alpha,
                g: Vec::new(),
                w: Some(w),
            }),
            sketch_s: s.to_vec(),
            sketch_a: zs.to_vec(),
            sketch_b: h.to_vec(),
            flips: 0,
            perm: Vec::new(),
        }
    }

    fn screen(
        &mut self,
        ctx: &Ctx<'_>,
        reference: Option<&Reference>,
        c: f64,
        fix: &mut Vec<VarFix>,
    ) -> (usize, usize) {
        let (Some(rule), Some(r)) = (ctx.params.screening, reference) else {
            return (0, 0);
        };
        if !(c > r.c && r.w.len() == self.dim) {
            return (0, 0);
        }
        // Only z_s is updated here; `h_i = z_i'z_s` is computed inside the rule for the
        // samples BT1 leaves undecided (IT's verdicts are unchanged, see `screen_fixes`).
        if rule.needs_s() {
            self.sketch.update_zs(&self.design, &r.g, r.c, c);
        }
        let (a2, hinge) = screening::reference_scalars(&r.alpha, &r.g);
        let (wz, zz, cnt) = self.sketch.scalars(&r.w);
        screening::screen_fixes(
            rule,
            &RuleInputs {
                c_ref: r.c,
                c,
                g: &r.g,
                qd: &self.qd,
                h: None,
                ref_norm2: a2,
                ref_dot_s: wz,
                s_norm2: zz,
                s_count: cnt,
                hinge_ref: hinge,
            },
            |i| self.sketch.h_at(&self.design, i),
            fix,
        )
    }

    fn solve(
        &mut self,
        ctx: &Ctx<'_>,
        reference: Option<&Reference>,
        c: f64,
        fix: &mut [VarFix],
        obs: &mut dyn Observer,
    ) -> Result<Option<Solved>, FitError> {
        let n = self.qd.len();
        // The warm start, its screened variables already at their values, and its `w` without
        // a pass over the data: the reference's `w` scaled like `alpha`, plus the rows whose
        // value the screening changed (the solver rebuilds `w` from `alpha` at its end as
        // always).
        let (mut alpha, mut w_start) = self.start(ctx, reference, c);
        if w_start.len() == self.dim {
            for (i, f) in fix.iter().enumerate() {
                let target = match f {
                    VarFix::Free => continue,
                    VarFix::AtZero => 0.0,
                    VarFix::AtUpper => c,
                };
                let delta = target - alpha[i];
                if delta != 0.0 {
                    self.design.z_axpy(i, delta, &mut w_start);
                    alpha[i] = target;
                }
            }
        } else {
            // A resumed reference without weights: one rebuild.
            for (i, f) in fix.iter().enumerate() {
                match f {
                    VarFix::Free => {}
                    VarFix::AtZero => alpha[i] = 0.0,
                    VarFix::AtUpper => alpha[i] = c,
                }
            }
            w_start = self.design.weights(&alpha);
        }
        let upper = vec![c; n];
        let (mut freed, mut solves, mut iterations) = (0usize, 0usize, 0u64);
        loop {
            let prob = SvcDual {
                design: LinearDesign {
                    x: self.x,
                    bias: self.bias,
                },
                qp: BoxQp {
                    p: &self.p,
                    y: &ctx.y,
                    upper: &upper,
                    equality: Equality::None,
                    fixed: Some(fix),
                },
                diag_shift: &self.zero,
            };
            let res = dcd::solve_svc_warm(
                &prob,
                &ctx.settings,
                ctx.params.seed,
                &mut alpha,
                dcd::SvcWarm {
                    qd: &self.qd,
                    w: &w_start,
                },
                &mut Fwd(obs),
            )?;
            if res.info.status == Status::Interrupted {
                // As the kernel engine: the unfinished point is not reported.
                return Ok(None);
            }
            solves += 1;
            iterations += res.info.iterations;
            // Margins z_i'w from the solver's last pass (the same arithmetic as
            // `design.margins(&res.w)`, without another pass over the data).
            let g: Vec<f64> = res
                .xw
                .iter()
                .zip(&ctx.y)
                .map(|(&v, &yi)| f64::from(yi) * v)
                .collect();
            let f = free_violators(fix, &g, &alpha, c, ctx.params.tol, true);
            freed += f;
            if f == 0 || res.info.status != Status::Converged {
                return Ok(Some(Solved {
                    alpha,
                    g,
                    w: Some(res.w),
                    account: Account {
                        status: res.info.status,
                        solver_violation: res.info.max_violation,
                        freed,
                        solves,
                        iterations,
                    },
                }));
            }
            // The freed variables keep their values: `w` is the solver's (rebuilt) one.
            w_start = res.w;
        }
    }

    fn retire(&mut self, old: Option<Reference>) {
        self.previous = old.map(|r| (r.c, r.alpha, r.w));
    }
}

/// The linear engine's warm start at `c` from the solution at `c_ref`: the scaled point
/// `(c / c_ref) a`, clipped to `[0, c]` (a no-op on an increasing path). It scales `w` by the
/// same factor; on the hinge-loss dual `w` grows about in proportion to `C` once the data
/// cannot be separated, and DCD, which moves one variable at a time, reaches the new optimum
/// far sooner from there. Measured on the 31-point log grid (2^-5..2^10, tol 0.1): digits_oe
/// takes 47,436 passes in total against 110,265 from the unscaled start, and the eight points
/// with C >= 90 that run into the 10,000-pass limit from the unscaled start all converge
/// (3,185-5,296 passes). (The kernel path keeps its unscaled warm start: there the scaled point was
/// measured slower.)
fn warm_start_scaled(alpha: &[f64], c_ref: f64, c: f64) -> Vec<f64> {
    let s = c / c_ref;
    alpha.iter().map(|&a| (a * s).clamp(0.0, c)).collect()
}

/// The linear engine's warm start at `c` from the two previous solutions `(c0, a0, w0)` and
/// `(c1, a1, w1)`, `c0 < c1 < c`: the secant `a1 + t (a1 - a0)`, `t = (c - c1) / (c1 - c0)`,
/// clipped to `[0, c]`, with `w = w1 + t (w1 - w0)` corrected by the clipped rows.
///
/// Why: on a stretch of the path where the sets of free, zero and bounded variables do not
/// change, the bias-free dual solution is affine in `C` (the free block solves
/// `Q_FF a_F = 1 - C Q_FL 1`), so the secant is exact there, while the scaled start `(c / c1) a1`
/// is off by the constant part of `a_F`. Bounded variables (`a = C` at both points) land on the
/// new bound, zeros stay at zero. It is only a starting point: the solve runs to the same
/// tolerance from wherever it starts.
fn warm_start_secant(
    design: &LinearDesignRef<'_>,
    (c0, a0, w0): (f64, &[f64], &[f64]),
    (c1, a1, w1): (f64, &[f64], &[f64]),
    c: f64,
) -> (Vec<f64>, Vec<f64>) {
    let t = (c - c1) / (c1 - c0);
    let mut w: Vec<f64> = w1
        .iter()
        .zip(w0)
        .map(|(v1, v0)| v1 + t * (v1 - v0))
        .collect();
    let alpha = a1
        .iter()
        .zip(a0)
        .enumerate()
        .map(|(i, (&x1, &x0))| {
            let e = x1 + t * (x1 - x0);
            let a = e.clamp(0.0, c);
            // Rounding-level clips (a bounded variable at c1 and c0 lands on c up to an ulp)
            // need no row operation: the solver rebuilds `w` from `alpha` at its end.
            if (a - e).abs() > 1e-12 * c {
                design.z_axpy(i, a - e, &mut w);
            }
            a
        })
        .collect();
    (alpha, w)
}

/// `1/2 |w|^2 - 1'a`, the bias-free hinge-loss dual at `a` with `w = Z'a`.
fn dual_objective(alpha: &[f64], w: &[f64]) -> f64 {
    0.5 * w.iter().map(|v| v * v).sum::<f64>() - alpha.iter().sum::<f64>()
}

/// Forwards a `dyn Observer` to the generic DCD entry point.
struct Fwd<'a>(&'a mut dyn Observer);

impl Observer for Fwd<'_> {
    fn on_iter(&mut self, s: &IterStats) -> ControlFlow<()> {
        self.0.on_iter(s)
    }
}
