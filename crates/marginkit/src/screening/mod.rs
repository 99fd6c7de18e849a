//! Safe sample screening for the SVM without bias (Ogawa, Suzuki, Suzumura, Takeuchi 2014).
//!
//! # Problem
//!
//! ```text
//! primal:  min_w 1/2 |w|^2 + C sum_i max(0, 1 - z_i'w),      z_i = y_i Phi(x_i)
//! dual:    min_a 1/2 a'Qa - 1'a   s.t. 0 <= a_i <= C,       Q_ij = z_i'z_j
//! ```
//! (no equality constraint: no bias). At the optimum, `z_i'w* > 1` implies `a_i = 0` (set R) and
//! `z_i'w* < 1` implies `a_i = C` (set L). From a reference solution at `C_ref`, a region
//! `Theta` containing the unknown `w*` at `C` gives per-sample bounds
//! `l_i <= z_i'w* <= u_i`; `l_i > 1` screens `i` into R and `u_i < 1` into L (strict inequalities,
//! eq. 9, applied with a margin of [`SAFETY_MARGIN`] against rounding). The screened problem is the same [`crate::solver::BoxQp`] with
//! [`VarFix::AtZero`] / [`VarFix::AtUpper`]: the solvers fold the fixed columns into `p`, which
//! gives exactly the corrected reduced problem of the digest (sec. 1.5):
//! `p_i = -1 + C sum_{j in L'} Q_ij = -(1 - y_i d_i)`.
//!
//! # Rules
//!
//! * [`Rule::Bt1`] (Theorem 6, = DVI): ball with centre `m1 = k w_ref`, `k = (C + C_ref) / (2 C_ref)`,
//!   radius `r1 = |C - C_ref| / (2 C_ref) |w_ref|`. Needs the reference to be *optimal*.
//! * [`Rule::Bt2`] (Theorem 7): ball with centre `m2 = (w_ref + C z_s) / 2`, radius
//!   `r2 = sqrt(|m2|^2 + C (xi_ref - |s|))`, with `z_s = sum_i s_i z_i` for the binary `s` of
//!   eq. 25 (`s_i = [z_i'w_ref < 1/k]`) and `xi_ref` the hinge loss of `w_ref`. Needs only
//!   feasibility, so it is safe for any `w_ref`.
//! * [`Rule::It`] (Theorem 8): the intersection of both balls, bounds by the three-case formula of
//!   eqs. 20 and 24.
//!
//! # Symbols
//!
//! | paper | code ([`RuleInputs`]) |
//! |---|---|
//! | `C_ref`, `C` | `c_ref`, `c` |
//! | `z_i'w_ref = (Q a)_i` | `g[i]` |
//! | `|z_i|^2 = Q_ii` | `qd[i]` |
//! | `z_i'z_s = (Q s)_i` | `h[i]` |
//! | `|w_ref|^2 = a'Qa` | `ref_norm2` |
//! | `w_ref'z_s = a'Qs` | `ref_dot_s` |
//! | `|z_s|^2 = s'Qs` | `s_norm2` |
//! | `1's` | `s_count` |
//! | `xi_ref` | `hinge_ref` |
//!
//! Every quantity is an inner product, so the same code serves kernels (from `g = Qa`, kept by the
//! path driver, and `h = Qs`, updated incrementally by [`KernelSketch`]) and linear models (from
//! `w_ref` and `z_s` held explicitly, [`LinearSketch`]).
//!
//! # Cost
//!
//! `O(n)` for the bounds once the inputs exist. Inputs: kernel `O(n |Delta s|)` kernel entries
//! for `h` (BT2, IT), nothing else (`g` is a by-product of the previous solve); linear `O(nnz(X))`.
//!
//! # Safety and guards
//!
//! BT1 and IT assume an exactly optimal reference; solvers stop at a tolerance, so the path driver
//! re-checks the KKT conditions of every screened sample after the solve (see [`crate::path`]).
//! Numerical guards: negative squared radii are clamped to 0; the IT bounds fall back to
//! `max(l1, l2)` / `min(u1, u2)` (always valid for the intersection) when a ball is a point, the
//! centres coincide, one ball contains the other, or the balls do not meet (possible only by
//! rounding or an inexact reference); the IT bounds are never looser than that fallback.
//! A sample with `z_i = 0` has `l_i = u_i = 0` and goes to L.
//!
//! # Bias
//!
//! The rules need the problem without the equality constraint. A bias is offered as in the paper's
//! footnote 1: a constant feature `B` appended to every `Phi(x)`, i.e. the kernel `K + B^2` (the
//! bias `b = B^2 sum_i y_i a_i` is then regularized).
//!
//! # Citation
//!
//! K. Ogawa, Y. Suzuki, S. Suzumura, I. Takeuchi, "Safe sample screening for support vector
//! machines", arXiv:1401.6740 (2014): Lemma 1 (eq. 10), Theorems 6-8 (eqs. 16, 20, 24), eq. 25,
//! sec. IV-D.

use crate::data::design::{DesignRows, FeatureRows, LinearDesign};
use crate::data::{ops, Features};
use crate::kernel::qmatrix::QMatrix;
use crate::solver::VarFix;

/// A screening rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rule {
    /// Ball Test 1 (Theorem 6; equivalent to DVI).
    Bt1,
    /// Ball Test 2 (Theorem 7; safe for any feasible reference).
    Bt2,
    /// Intersection Test (Theorem 8): BT1 and BT2 together.
    It,
}

impl Rule {
    /// Lower-case name (`bt1`, `bt2`, `it`).
    pub fn name(self) -> &'static str {
        match self {
            Rule::Bt1 => "bt1",
            Rule::Bt2 => "bt2",
            Rule::It => "it",
        }
    }
    /// Parses [`Rule::name`].
    pub fn from_name(s: &str) -> Option<Self> {
        match s {
            "bt1" => Some(Rule::Bt1),
            "bt2" => Some(Rule::Bt2),
            "it" => Some(Rule::It),
            _ => None,
        }
    }
    /// True when the rule needs `h = Q s` (BT2 and IT).
    pub fn needs_s(self) -> bool {
        self != Rule::Bt1
    }
}

/// Everything the rules read (see the symbol table in the module docs).
#[derive(Debug, Clone, Copy)]
pub struct RuleInputs<'a> {
    /// The reference regularization parameter `C_ref > 0`.
    pub c_ref: f64,
    /// The target `C > 0`.
    pub c: f64,
    /// Reference margins `g_i = z_i'w_ref`.
    pub g: &'a [f64],
    /// Squared norms `|z_i|^2`.
    pub qd: &'a [f64],
    /// `h_i = z_i'z_s` (needed by BT2 and IT; ignored by BT1).
    pub h: Option<&'a [f64]>,
    /// `|w_ref|^2`.
    pub ref_norm2: f64,
    /// `w_ref'z_s`.
    pub ref_dot_s: f64,
    /// `|z_s|^2`.
    pub s_norm2: f64,
    /// `1's`.
    pub s_count: f64,
    /// Hinge loss of `w_ref` over all samples, `sum_i max(0, 1 - g_i)`.
    pub hinge_ref: f64,
}

/// Which set a sample is screened into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Not screened.
    Unknown,
    /// `z_i'w* > 1`: `a_i = 0`.
    R,
    /// `z_i'w* < 1`: `a_i = C`.
    L,
}

/// Per-sample bounds and verdicts of one rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Screening {
    /// Lower bounds `l_i` on `z_i'w*`.
    pub lower: Vec<f64>,
    /// Upper bounds `u_i` on `z_i'w*`.
    pub upper: Vec<f64>,
    /// Verdicts.
    pub verdict: Vec<Verdict>,
    /// Samples screened into R.
    pub n_r: usize,
    /// Samples screened into L.
    pub n_l: usize,
}

impl Screening {
    /// The fixings for [`crate::solver::BoxQp::fixed`]: R -> `AtZero`, L -> `AtUpper`.
    pub fn fixes(&self) -> Vec<VarFix> {
        self.verdict
            .iter()
            .map(|v| match v {
                Verdict::Unknown => VarFix::Free,
                Verdict::R => VarFix::AtZero,
                Verdict::L => VarFix::AtUpper,
            })
            .collect()
    }
}

/// Safety margin of the verdicts: R needs `l_i > 1 + SAFETY_MARGIN`, L needs
/// `u_i < 1 - SAFETY_MARGIN`. The paper's rule is strict (margin 0); samples exactly on the
/// margin can have `l_i = 1` in exact arithmetic (the ball tangent to the hyperplane), and the f32
/// kernel cache perturbs bounds by about 1e-7, so a zero margin screens such samples by rounding.
pub const SAFETY_MARGIN: f64 = 1e-6;

/// The `s` of eq. 25: `s_i = 1` iff `g_i < 2 C_ref / (C + C_ref)`.
pub fn s_threshold(c_ref: f64, c: f64) -> f64 {
    2.0 * c_ref / (c + c_ref)
}

/// Geometry of the two balls shared by all samples.
#[derive(Debug, Clone, Copy)]
struct Balls {
    /// `k = (C + C_ref) / (2 C_ref)`: `z'm1 = k g`.
    k: f64,
    r1: f64,
    r2: f64,
    /// `C / 2`: `z'm2 = g/2 + (C/2) h`.
    half_c: f64,
    /// `C / (2 C_ref)`: `z'phi = (C/(2 C_ref)) g - (C/2) h`.
    phi_g: f64,
    /// `|phi|`.
    phi: f64,
    /// Signed distance from m2 to the plane of the spheres' intersection, along phi.
    zeta: f64,
    /// Radius of the intersection circle.
    kappa: f64,
    /// The three-case formula applies (a proper lens); else the fallback.
    lens: bool,
}

impl Balls {
    fn new(inp: &RuleInputs<'_>) -> Self {
        let (c, cr) = (inp.c, inp.c_ref);
        let k = (c + cr) / (2.0 * cr);
        let a = inp.ref_norm2.max(0.0);
        let r1 = ((c - cr).abs() / (2.0 * cr)) * a.sqrt();
        // |m2|^2 = (A + 2 C B + C^2 S) / 4.
        let m2sq = (0.25 * (a + 2.0 * c * inp.ref_dot_s + c * c * inp.s_norm2)).max(0.0);
        let r2 = (m2sq + c * (inp.hinge_ref - inp.s_count)).max(0.0).sqrt();
        // |phi|^2 = (C^2 / 4) (a / C_ref - s)'Q(a / C_ref - s), expanded without cancellation of m's.
        let phi2 = 0.25 * c * c * (a / (cr * cr) - 2.0 * inp.ref_dot_s / cr + inp.s_norm2);
        let phi = phi2.max(0.0).sqrt();
        let scale = r1.max(r2).max(f64::MIN_POSITIVE);
        let lens = phi > 1e-12 * scale
            && r1 > 1e-12 * scale
            && r2 > 1e-12 * scale
            && phi < r1 + r2
            && phi > (r1 - r2).abs();
        let (zeta, kappa) = if lens {
            let zeta = (phi * phi + r2 * r2 - r1 * r1) / (2.0 * phi);
            (zeta, (r2 * r2 - zeta * zeta).max(0.0).sqrt())
        } else {
            (0.0, 0.0)
        };
        Balls {
            k,
            r1,
            r2,
            half_c: 0.5 * c,
            phi_g: c / (2.0 * cr),
            phi,
            zeta,
            kappa,
            lens,
        }
    }
}

/// The bounds `(l, u)` of sample `i` under `rule`.
#[inline]
fn sample_bounds(b: &Balls, rule: Rule, g: f64, q: f64, h: f64) -> (f64, f64) {
    let nz = q.max(0.0).sqrt();
    let zm1 = b.k * g;
    let (l1, u1) = (zm1 - b.r1 * nz, zm1 + b.r1 * nz);
    if rule == Rule::Bt1 {
        return (l1, u1);
    }
    let zm2 = 0.5 * g + b.half_c * h;
    let (l2, u2) = (zm2 - b.r2 * nz, zm2 + b.r2 * nz);
    if rule == Rule::Bt2 {
        return (l2, u2);
    }
    let (lf, uf) = (l1.max(l2), u1.min(u2));
    if !b.lens || nz == 0.0 {
        return (lf, uf);
    }
    let zphi = b.phi_g * g - b.half_c * h;
    let cos = zphi / (nz * b.phi);
    let p = (q - zphi * zphi / (b.phi * b.phi)).max(0.0).sqrt();
    let zpsi = zm2 + b.zeta * zphi / b.phi;
    let t1 = (b.zeta - b.phi) / b.r1;
    let t2 = b.zeta / b.r2;
    // Eq. 20 (the minimiser over ball 1 lies inside ball 2 when -cos < t1, and so on).
    let l = if -cos < t1 {
        l1
    } else if -cos > t2 {
        l2
    } else {
        zpsi - b.kappa * p
    };
    // Eq. 24: the same with cos.
    let u = if cos < t1 {
        u1
    } else if cos > t2 {
        u2
    } else {
        zpsi + b.kappa * p
    };
    // The intersection is inside both balls: never looser than either.
    (l.max(lf), u.min(uf))
}

/// Evaluates `rule` on every sample: bounds and verdicts (strict inequalities of eq. 9).
///
/// Lengths: `g`, `qd` (and `h` when used) must have the same length; a missing `h` for BT2/IT
/// makes those rules fall back to BT1 (documented, never unsafe).
pub fn screen(rule: Rule, inp: &RuleInputs<'_>) -> Screening {
    let n = inp.g.len();
    let balls = Balls::new(inp);
    let rule = if inp.h.is_none() { Rule::Bt1 } else { rule };
    let mut out = Screening {
        lower: vec![0.0; n],
        upper: vec![0.0; n],
        verdict: vec![Verdict::Unknown; n],
        n_r: 0,
        n_l: 0,
    };
    let valid = inp.c_ref.is_finite()
        && inp.c_ref > 0.0
        && inp.c.is_finite()
        && inp.c > 0.0
        && inp.ref_norm2.is_finite()
        && inp.hinge_ref.is_finite();
    for i in 0..n {
        let h = inp.h.map_or(0.0, |h| h[i]);
        let (l, u) = if valid {
            sample_bounds(&balls, rule, inp.g[i], inp.qd[i], h)
        } else {
            (f64::NEG_INFINITY, f64::INFINITY)
        };
        out.lower[i] = l;
        out.upper[i] = u;
        // NaN bounds compare false: never screened.
        if l > 1.0 + SAFETY_MARGIN {
            out.verdict[i] = Verdict::R;
            out.n_r += 1;
        } else if u < 1.0 - SAFETY_MARGIN {
            out.verdict[i] = Verdict::L;
            out.n_l += 1;
        }
    }
    out
}

/// The fixings of [`screen`] (R -> `AtZero`, L -> `AtUpper`) written into `fix`, with `h_i`
/// evaluated by `h_of(i)` only where the verdict needs it; returns `(n_R, n_L)`.
///
/// `inp.h` is ignored. For IT, BT1 runs first and `h_i` is computed only for the samples it
/// does not screen into R: IT's bounds are clamped inside BT1's (`l_IT >= l_1`, in floating
/// point too) and R is tested first, so every sample BT1 puts in R IT puts in R. (BT1's L
/// verdicts are not reused: with inconsistent inputs IT's interval can be empty, `l_IT > u_IT`,
/// and [`screen`] then says R.) The verdicts equal [`screen`]'s exactly (tested). On the linear
/// engine `h_i = z_i'z_s` is an `O(nnz(x_i))` dot product, so this saves that share of the
/// sketch's pass over the data.
pub fn screen_fixes(
    rule: Rule,
    inp: &RuleInputs<'_>,
    mut h_of: impl FnMut(usize) -> f64,
    fix: &mut [VarFix],
) -> (usize, usize) {
    let balls = Balls::new(inp);
    let valid = inp.c_ref.is_finite()
        && inp.c_ref > 0.0
        && inp.c.is_finite()
        && inp.c > 0.0
        && inp.ref_norm2.is_finite()
        && inp.hinge_ref.is_finite();
    let (mut n_r, mut n_l) = (0, 0);
    for (i, f) in fix.iter_mut().enumerate() {
        *f = VarFix::Free;
        if !valid {
            continue;
        }
        let (g, q) = (inp.g[i], inp.qd[i]);
        let (mut l, mut u) = sample_bounds(&balls, Rule::Bt1, g, q, 0.0);
        let decided = l > 1.0 + SAFETY_MARGIN;
        if rule == Rule::Bt2 || (rule == Rule::It && !decided) {
            (l, u) = sample_bounds(&balls, rule, g, q, h_of(i));
        }
        if l > 1.0 + SAFETY_MARGIN {
            *f = VarFix::AtZero;
            n_r += 1;
        } else if u < 1.0 - SAFETY_MARGIN {
            *f = VarFix::AtUpper;
            n_l += 1;
        }
    }
    (n_r, n_l)
}

/// The scalar inputs that depend on the reference only: `|w_ref|^2 = a'g` and the hinge loss.
pub fn reference_scalars(alpha: &[f64], g: &[f64]) -> (f64, f64) {
    let norm2 = alpha.iter().zip(g).map(|(a, g)| a * g).sum::<f64>();
    let hinge = g.iter().map(|&v| (1.0 - v).max(0.0)).sum::<f64>();
    (norm2, hinge)
}

/// Kernel-side state for BT2/IT: the binary `s` of eq. 25 and `h = Q s`, updated with one column
/// of `Q` per flipped entry (the paper's Table I cache).
#[derive(Debug, Clone, Default)]
pub struct KernelSketch {
    s: Vec<bool>,
    h: Vec<f64>,
    flips: usize,
}

impl KernelSketch {
    /// An empty sketch for `n` samples (`s = 0`, `h = 0`).
    pub fn new(n: usize) -> Self {
        Self {
            s: vec![false; n],
            h: vec![0.0; n],
            flips: 0,
        }
    }
    /// Moves `s` to eq. 25's choice for `(c_ref, c)` at margins `g`, updating `h` with the columns
    /// of the flipped entries. `q` must be in the original sample order.
    #[allow(clippy::needless_range_loop)]
    pub fn update<Q: QMatrix + ?Sized>(&mut self, q: &mut Q, g: &[f64], c_ref: f64, c: f64) {
        let n = self.s.len();
        let thr = s_threshold(c_ref, c);
        self.flips = 0;
        for j in 0..n {
            let want = g[j] < thr;
            if want != self.s[j] {
                self.s[j] = want;
                self.flips += 1;
                let sign = if want { 1.0 } else { -1.0 };
                let col = q.column(j, n);
                for (h, &v) in self.h.iter_mut().zip(col) {
                    *h += sign * f64::from(v);
                }
            }
        }
    }
    /// `(s, h, flips)`, for a path checkpoint.
    pub(crate) fn parts(&self) -> (&[bool], &[f64], usize) {
        (&self.s, &self.h, self.flips)
    }
    /// The sketch of [`KernelSketch::parts`] (lengths checked by the caller).
    pub(crate) fn from_parts(s: Vec<bool>, h: Vec<f64>, flips: usize) -> Self {
        Self { s, h, flips }
    }
    /// Entries of `s` that changed in the last [`KernelSketch::update`].
    pub fn flips(&self) -> usize {
        self.flips
    }
    /// `h = Q s`.
    pub fn h(&self) -> &[f64] {
        &self.h
    }
    /// The binary vector `s`.
    pub fn s(&self) -> &[bool] {
        &self.s
    }
    /// `(a'h, s'h, 1's)` for the reference `alpha`.
    #[allow(clippy::needless_range_loop)]
    pub fn scalars(&self, alpha: &[f64]) -> (f64, f64, f64) {
        let mut ah = 0.0;
        let mut sh = 0.0;
        let mut cnt = 0.0;
        for i in 0..self.s.len() {
            ah += alpha[i] * self.h[i];
            if self.s[i] {
                sh += self.h[i];
                cnt += 1.0;
            }
        }
        (ah, sh, cnt)
    }
}

/// Linear-side quantities: `z_i = y_i [x_i, B]`, the signed rows of a [`LinearDesign`].
#[derive(Debug, Clone, Copy)]
pub struct LinearDesignRef<'a> {
    /// Features.
    pub x: &'a Features,
    /// Signs in {-1, +1}.
    pub y: &'a [i8],
    /// Appended constant feature, if any.
    pub bias: Option<f64>,
}

impl<'a> LinearDesignRef<'a> {
    fn rows(&self) -> FeatureRows<'a> {
        LinearDesign {
            x: self.x,
            bias: self.bias,
        }
        .rows()
    }
    fn d(&self) -> usize {
        self.rows().dim()
    }
    /// `y_i [x_i, B]'v`.
    pub fn z_dot(&self, i: usize, v: &[f64]) -> f64 {
        f64::from(self.y[i]) * self.rows().dot(i, v)
    }
    /// `v += s z_i`.
    pub fn z_axpy(&self, i: usize, s: f64, v: &mut [f64]) {
        self.rows().axpy(i, s * f64::from(self.y[i]), v);
    }
    /// `|z_i|^2` for every sample.
    pub fn sq_norms(&self) -> Vec<f64> {
        let rows = self.rows();
        (0..self.x.n_rows()).map(|i| rows.sq_norm(i)).collect()
    }
    /// Margins `g_i = z_i'w`.
    pub fn margins(&self, w: &[f64]) -> Vec<f64> {
        (0..self.x.n_rows()).map(|i| self.z_dot(i, w)).collect()
    }
    /// `w = sum_i a_i z_i`.
    pub fn weights(&self, alpha: &[f64]) -> Vec<f64> {
        let mut w = vec![0.0; self.d()];
        for (i, &a) in alpha.iter().enumerate() {
            if a != 0.0 {
                self.z_axpy(i, a, &mut w);
            }
        }
        w
    }
}

/// Linear-side state for BT2/IT: `z_s = sum_i s_i z_i` and `h_i = z_i'z_s` (recomputed, `O(nnz)`).
#[derive(Debug, Clone)]
pub struct LinearSketch {
    s: Vec<bool>,
    zs: Vec<f64>,
    h: Vec<f64>,
}

impl LinearSketch {
    /// `(s, z_s, h)`, for a path checkpoint.
    pub(crate) fn parts(&self) -> (&[bool], &[f64], &[f64]) {
        (&self.s, &self.zs, &self.h)
    }
    /// The sketch of [`LinearSketch::parts`] (lengths checked by the caller).
    pub(crate) fn from_parts(s: Vec<bool>, zs: Vec<f64>, h: Vec<f64>) -> Self {
        Self { s, zs, h }
    }
    /// An empty sketch for the design.
    pub fn new(design: &LinearDesignRef<'_>) -> Self {
        Self {
            s: vec![false; design.x.n_rows()],
            zs: vec![0.0; design.d()],
            h: vec![0.0; design.x.n_rows()],
        }
    }
    /// Moves `s` to eq. 25's choice, updates `z_s` by the flipped rows and recomputes `h`.
    pub fn update(&mut self, design: &LinearDesignRef<'_>, g: &[f64], c_ref: f64, c: f64) {
        self.update_zs(design, g, c_ref, c);
        for (i, h) in self.h.iter_mut().enumerate() {
            *h = design.z_dot(i, &self.zs);
        }
    }
    /// Moves `s` to eq. 25's choice and updates `z_s` by the flipped rows only (`O(nnz)` of the
    /// flips); `h` is left as it was: read `h_i` by [`LinearSketch::h_at`] (for [`screen_fixes`]).
    pub fn update_zs(&mut self, design: &LinearDesignRef<'_>, g: &[f64], c_ref: f64, c: f64) {
        let thr = s_threshold(c_ref, c);
        for (j, s) in self.s.iter_mut().enumerate() {
            let want = g[j] < thr;
            if want != *s {
                *s = want;
                design.z_axpy(j, if want { 1.0 } else { -1.0 }, &mut self.zs);
            }
        }
    }
    /// `h_i = z_i'z_s` from the current `z_s`.
    pub fn h_at(&self, design: &LinearDesignRef<'_>, i: usize) -> f64 {
        design.z_dot(i, &self.zs)
    }
    /// `h = Z z_s`.
    pub fn h(&self) -> &[f64] {
        &self.h
    }
    /// `(w'z_s, |z_s|^2, 1's)`.
    pub fn scalars(&self, w: &[f64]) -> (f64, f64, f64) {
        let wz = ops::dense_dot(w, &self.zs);
        let zz = ops::dense_dot(&self.zs, &self.zs);
        let cnt = self.s.iter().filter(|&&b| b).count() as f64;
        (wz, zz, cnt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs<'a>(g: &'a [f64], qd: &'a [f64], h: &'a [f64]) -> RuleInputs<'a> {
        RuleInputs {
            c_ref: 1.0,
            c: 2.0,
            g,
            qd,
            h: Some(h),
            ref_norm2: 1.0,
            ref_dot_s: 0.5,
            s_norm2: 1.0,
            s_count: 1.0,
            hinge_ref: 0.5,
        }
    }

    #[test]
    fn zero_norm_sample_goes_to_l_and_bounds_nest() {
        // Arbitrary (not necessarily consistent) inputs: the IT bounds must still nest inside
        // BT1's and BT2's, whatever the geometry.
        let g = [0.0, 3.0, 0.2];
        let qd = [0.0, 1.0, 1.0];
        let h = [0.0, 0.5, 1.0];
        let inp = inputs(&g, &qd, &h);
        let b1 = screen(Rule::Bt1, &inp);
        let b2 = screen(Rule::Bt2, &inp);
        let it = screen(Rule::It, &inp);
        assert_eq!(it.verdict[0], Verdict::L);
        for i in 0..3 {
            assert!(it.lower[i] >= b1.lower[i].max(b2.lower[i]));
            assert!(it.upper[i] <= b1.upper[i].min(b2.upper[i]));
        }
    }

    #[test]
    fn non_finite_inputs_screen_nothing() {
        let g = [5.0, -5.0];
        let qd = [1.0, 1.0];
        let h = [0.0, 0.0];
        let mut inp = inputs(&g, &qd, &h);
        inp.hinge_ref = f64::NAN;
        let s = screen(Rule::It, &inp);
        assert_eq!(s.n_r + s.n_l, 0);
    }
}
