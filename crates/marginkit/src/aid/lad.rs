//! Least absolute deviations (LAD) regression: an exact full-data LP solver and AID-LAD.
//!
//! # Problem (paper eq. 2, with an intercept column by default)
//!
//! ```text
//! E* = min_beta sum_i |y_i - xt_i beta|,     xt_i = [x_i, 1]  (p = m + 1 coefficients)
//! ```
//! solved through its LP dual `max_u y'u  s.t.  Xt'u = 0, -1 <= u <= 1` by the interior points of
//! `solver/lp.rs` (the Frisch-Newton method, clarabel when it does not converge); `beta` is the
//! multiplier of the equality rows (clarabel's KKT condition `-y + Xt z + z_up - z_lo = 0` gives
//! `y - Xt z = z_up - z_lo`: `beta = z`).
//!
//! **Vertex polish and certificate.** The interior point is moved to a basic solution: the `p`
//! rows with the smallest `|r_i|` that are linearly independent are interpolated exactly
//! (`Xt_B beta = y_B`), and the simplex optimality test certifies it: with `u_i = sign(r_i)` off
//! the basis and `Xt_B' u_B = -sum_{i not in B} u_i xt_i`, the vertex is optimal iff
//! `|u_B| <= 1` (then `u` is dual feasible and `y'u = sum |r_i|`: zero duality gap). The fit
//! reports whether it was certified; an uncertified vertex is used only if it is no worse.
//!
//! **Zero residuals (rounding).** A row off the basis with `|r_i| <= tau (1 + |y_i| + |xt_i beta|)`,
//! `tau = 1e-10` (`ZERO_RTOL`), lies on the fit up to rounding: its dual value may be anything in
//! `[-1, 1]`. The test takes for those rows, in turn, the interior point's dual value (clamped
//! to `[-1, 1]`; it balances the rows off the fit), `u_i = 0`, then `u_i = sign(r_i)`; the
//! certified lower bound is the computed dual value `y'u` (it differs from `sum |r_i|` only by
//! the zero rows' residuals). Degenerate vertices with many points on the fit (or large `|y|`,
//! where `r_i` of a point on the fit is `~1e-16 |y_i|`, not 0) are therefore certified instead
//! of being rejected (taking only the interior point's value, any such row would leave the
//! vertex "uncertified").
//!
//! # AID-LAD (§3.1)
//!
//! | paper                              | code |
//! |------------------------------------|------|
//! | `x_k^t, y_k^t` (centroids)         | cluster sums (the weighted problem (3) is the unweighted LAD on the sums: `|C_k| |y_k - x_k b| = |sum y - (sum x) b|`) |
//! | `F^t`                              | the aggregated LP's optimum (certified vertex: exact; else clarabel's dual value) |
//! | `r_i = y_i - x_i beta`             | side code `1` if `r_i > eps_i`, else `0` (split `r > 0` / `r <= 0`); `eps_i = tau (1 + |y_i| + |x_i beta|)`, the same `tau` |
//!
//! Prop. 1: if every cluster's residuals have one sign, `beta^t` is optimal and `E^t = F^t`.
//! Prop. 2: `F^t` is non-decreasing and a lower bound on `E*` (any aggregated dual point is a
//! full dual point: `u_i = u_k` for `i` in `C_k`). The default stopping rule is the certificate
//! itself (`gap_tol = 0`), so the result is the full LP's optimum.
//!
//! Initial clusters (§4.1): `beta^init` from an exact LAD on a random sample of
//! `min(n, max(20 p, 2000))` rows; residuals `r_i`; one iteration of k-means on the standardized
//! 2-D points `(r_i, y_i)` with `|K^0| = ceil(r^0 n)`, `r^0 = max(3m/n, 0.0005)` when `m n > 5e8`
//! and `max(2m/n, 0.0005)` otherwise (`m` = number of coefficients). The standardization and the
//! sample size are our choices (the paper does not give them, digest P10).
//!
//! **Rows split across processes** ([`shard`]): the same iterations with every shard holding a
//! block of rows, the sums reduced in row order through a hook ([`shard::LadComm`]), so every
//! shard gets this fit's model bit for bit.
//!
//! Cost: an interior-point LP on `K` rows and `p` columns per iteration (a sparse LDL of size
//! `3K + p` with a dense `p x p` block: `O(K p^2)`), one pass of `O(nnz)` over the data.
//!
//! Citation: Park & Klabjan (2016), §3.1, Props 1-2; the LP dual of LAD: Koenker (2005), §6.2.

pub mod shard;

use std::time::Duration;

use rayon::prelude::*;

use self::shard::InProcess;
use super::checkpoint::{self, AidCheckpoint};
use super::cluster::{det_sum, Clusters};
use super::{AidRun, AidSettings, IterRecord};
use crate::data::design::{DesignRows, FeatureRows};
use crate::data::{ops, Dataset, Features, Row};
use crate::error::{DataError, FitError, ParamError, ParseError, ParseErrorKind};
use crate::fit::{Control, Fit, Report};
use crate::persist::RunRecord;
use crate::solver::{lp, Status};

/// A fitted LAD model: `y ~ x'coef + intercept`.
#[derive(Debug, Clone, PartialEq)]
pub struct LadModel {
    /// One coefficient per feature.
    pub coef: Vec<f64>,
    /// The intercept (0 without one).
    pub intercept: f64,
    /// Whether the model has an intercept.
    pub has_intercept: bool,
}

impl LadModel {
    /// Predicted value of one row.
    pub fn predict_row(&self, row: Row<'_>) -> f64 {
        let d = self.coef.len();
        let v = match row {
            Row::Dense(v) => ops::dense_dot(&v[..v.len().min(d)], &self.coef[..v.len().min(d)]),
            Row::Sparse { indices, values } => indices
                .iter()
                .zip(values)
                .filter(|(&j, _)| (j as usize) < d)
                .map(|(&j, &v)| v * self.coef[j as usize])
                .sum(),
        };
        v + self.intercept
    }

    /// Predictions for every row of `x`.
    pub fn predict(&self, x: &Features) -> Vec<f64> {
        (0..x.n_rows())
            .map(|i| self.predict_row(x.row(i)))
            .collect()
    }

    /// `sum_i |y_i - prediction_i|` (deterministic for any thread count).
    pub fn objective(&self, data: &Dataset) -> f64 {
        det_sum(data.len(), |i| {
            (data.y[i] - self.predict_row(data.x.row(i))).abs()
        })
    }

    /// Reads a model written by [`LadModel::to_json`] (whitespace between tokens allowed).
    ///
    /// # Errors
    /// [`ParseError`] naming the column of the first token that does not fit the form, or a
    /// non-finite number.
    pub fn from_json(text: &str) -> Result<LadModel, ParseError> {
        let err = |pos: usize, expected: &'static str| {
            let column = text[..pos.min(text.len())].chars().count() + 1;
            let found: String = text[pos.min(text.len())..].chars().take(20).collect();
            ParseError {
                line: 1,
                column,
                kind: ParseErrorKind::Expected { expected, found },
            }
        };
        let value_after = |key: &str| -> Result<(usize, &str), ParseError> {
            let k = format!("\"{key}\"");
            let at = text.find(&k).ok_or_else(|| err(0, "a LAD model key"))?;
            let rest = &text[at + k.len()..];
            let colon = rest
                .find(':')
                .filter(|&c| rest[..c].trim().is_empty())
                .ok_or_else(|| err(at + k.len(), "':'"))?;
            let start = at + k.len() + colon + 1;
            Ok((start, text[start..].trim_start()))
        };
        if !text.trim_start().starts_with('{')
            || value_after("model")?.1.get(..5) != Some("\"lad\"")
        {
            return Err(err(0, "{\"model\":\"lad\", ...}"));
        }
        let number = |tok: &str, pos: usize| -> Result<f64, ParseError> {
            let v: f64 = tok.trim().parse().map_err(|_| err(pos, "a number"))?;
            if v.is_finite() {
                Ok(v)
            } else {
                Err(ParseError {
                    line: 1,
                    column: pos + 1,
                    kind: ParseErrorKind::NonFinite {
                        what: "coefficient",
                    },
                })
            }
        };
        let (pos, rest) = value_after("has_intercept")?;
        let has_intercept = if rest.starts_with("true") {
            true
        } else if rest.starts_with("false") {
            false
        } else {
            return Err(err(pos, "true or false"));
        };
        let (pos, rest) = value_after("intercept")?;
        let end = rest.find([',', '}']).ok_or_else(|| err(pos, "a number"))?;
        let intercept = number(&rest[..end], pos)?;
        let (pos, rest) = value_after("coef")?;
        let body = rest
            .strip_prefix('[')
            .and_then(|r| r.find(']').map(|e| &r[..e]))
            .ok_or_else(|| err(pos, "[numbers]"))?;
        let coef = if body.trim().is_empty() {
            Vec::new()
        } else {
            body.split(',')
                .map(|t| number(t, pos))
                .collect::<Result<Vec<f64>, _>>()?
        };
        Ok(LadModel {
            coef,
            intercept,
            has_intercept,
        })
    }

    /// Writes the model as JSON (`{"model":"lad","intercept":..,"coef":[..]}`).
    pub fn to_json(&self) -> String {
        let coef: Vec<String> = self.coef.iter().map(|v| format!("{v:e}")).collect();
        format!(
            "{{\"model\":\"lad\",\"has_intercept\":{},\"intercept\":{:e},\"coef\":[{}]}}\n",
            self.has_intercept,
            self.intercept,
            coef.join(",")
        )
    }
}

/// Result of an exact LAD solve on a set of rows.
#[derive(Debug, Clone, PartialEq)]
pub struct LadSolution {
    /// Coefficients of the design columns (the intercept last when there is one).
    pub beta: Vec<f64>,
    /// `sum_i |y_i - xt_i beta|`.
    pub objective: f64,
    /// A lower bound on the optimum: `objective` when certified, else clarabel's dual value.
    pub lower_bound: f64,
    /// True when the simplex optimality test certified `beta` (a basic optimal solution).
    pub certified: bool,
    /// Interior-point iterations.
    pub ip_iterations: u32,
    /// Which interior point produced the starting point of the polish.
    pub solver: LpSolver,
}

/// The interior-point method behind a [`LadSolution`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LpSolver {
    /// The Frisch-Newton predictor-corrector method of `solver/lp.rs` (the default).
    FrischNewton,
    /// clarabel on the LP dual (the fallback when the former does not converge).
    Clarabel,
}

/// Solves the LAD problem on the rows of `design` with targets `y` exactly (see module docs).
fn solve_design(
    design: &dyn DesignRows,
    y: &[f64],
    time_limit: Option<Duration>,
) -> Result<LadSolution, FitError> {
    let n = design.n();
    if n == 0 {
        return Err(DataError::Empty.into());
    }
    let (ip, solver) = match lp::frisch_newton(design, y, time_limit) {
        Some(r) => (r, LpSolver::FrischNewton),
        None => (lp::clarabel(design, y, time_limit)?, LpSolver::Clarabel),
    };
    let lp::L1Point {
        beta: beta_ip,
        dual_value,
        iterations: ip_iterations,
        u: u_ip,
    } = ip;
    let obj_of = |beta: &[f64]| det_sum(n, |i| (y[i] - design.dot(i, beta)).abs());
    let ip_obj = obj_of(&beta_ip);
    let mut best = LadSolution {
        beta: beta_ip.clone(),
        objective: ip_obj,
        lower_bound: dual_value.min(ip_obj),
        certified: false,
        ip_iterations,
        solver,
    };
    if let Some((beta_v, bound)) = polish(design, y, &beta_ip, &u_ip) {
        let v_obj = obj_of(&beta_v);
        if bound.is_some() || v_obj <= ip_obj {
            best.beta = beta_v;
            best.objective = v_obj;
            best.certified = bound.is_some();
            if let Some(b) = bound {
                // `y'u` equals `v_obj` minus the zero residuals' share (rounding level).
                best.lower_bound = b.min(v_obj);
            }
        }
    }
    Ok(best)
}

/// Relative tolerance under which a residual counts as zero in the vertex certificate and the
/// AID side test (see module docs).
const ZERO_RTOL: f64 = 1e-10;

/// Moves `beta` to a vertex (see module docs); returns it and, when certified optimal, the value
/// `y'u` of the dual feasible point that certifies it.
fn polish(
    design: &dyn DesignRows,
    y: &[f64],
    beta: &[f64],
    u_ip: &[f64],
) -> Option<(Vec<f64>, Option<f64>)> {
    let (n, p) = (design.n(), design.dim());
    if p == 0 || n < p {
        return None;
    }
    let r: Vec<f64> = (0..n)
        .into_par_iter()
        .map(|i| y[i] - design.dot(i, beta))
        .collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| r[a].abs().total_cmp(&r[b].abs()).then(a.cmp(&b)));
    // Greedy independent rows by modified Gram-Schmidt.
    let dense_row = |i: usize| {
        let mut v = vec![0.0; p];
        design.for_each(i, &mut |j, a| v[j] = a);
        v
    };
    let mut basis: Vec<usize> = Vec::with_capacity(p);
    let mut ortho: Vec<Vec<f64>> = Vec::with_capacity(p);
    for &i in order.iter().take((50 * p).max(1000).min(n)) {
        let row = dense_row(i);
        let norm0 = row.iter().map(|v| v * v).sum::<f64>().sqrt();
        if norm0 == 0.0 {
            continue;
        }
        let mut v = row;
        for q in &ortho {
            let d: f64 = v.iter().zip(q).map(|(a, b)| a * b).sum();
            v.iter_mut().zip(q).for_each(|(a, b)| *a -= d * b);
        }
        let nv = v.iter().map(|a| a * a).sum::<f64>().sqrt();
        if nv > 1e-9 * norm0 {
            v.iter_mut().for_each(|a| *a /= nv);
            ortho.push(v);
            basis.push(i);
            if basis.len() == p {
                break;
            }
        }
    }
    if basis.len() < p {
        return None;
    }
    let mut xb = vec![0.0; p * p];
    for (k, &i) in basis.iter().enumerate() {
        xb[k * p..(k + 1) * p].copy_from_slice(&dense_row(i));
    }
    let yb: Vec<f64> = basis.iter().map(|&i| y[i]).collect();
    let beta_v = lu_solve(&xb, p, &yb, false)?;
    // Certificate: u_i = sign(r_i) off the basis, Xt_B' u_B = -sum u_i xt_i.
    let in_basis = {
        let mut m = vec![false; n];
        basis.iter().for_each(|&i| m[i] = true);
        m
    };
    let rv: Vec<f64> = (0..n)
        .into_par_iter()
        .map(|i| y[i] - design.dot(i, &beta_v))
        .collect();
    // Zero residuals (on the fit up to rounding, see module docs): `|r_i| <= ZERO_RTOL (1 + |y_i|
    // + |xt_i beta|)`. Their dual value may be anything in [-1, 1]; try the interior point's dual
    // value (clamped) first, then `u_i = 0`, then the sign of the (rounding-level) residual.
    let zero: Vec<bool> = (0..n)
        .into_par_iter()
        .map(|i| {
            !in_basis[i] && rv[i].abs() <= ZERO_RTOL * (1.0 + y[i].abs() + (y[i] - rv[i]).abs())
        })
        .collect();
    for attempt in 0..3 {
        let mut rhs = vec![0.0; p];
        let mut u = vec![0.0; n];
        for i in 0..n {
            if in_basis[i] || (zero[i] && attempt == 1) {
                continue;
            }
            let s = if zero[i] && attempt == 0 {
                u_ip.get(i).map_or(0.0, |v| v.clamp(-1.0, 1.0))
            } else if rv[i] > 0.0 {
                1.0
            } else if rv[i] < 0.0 {
                -1.0
            } else {
                0.0
            };
            u[i] = s;
            if s != 0.0 {
                design.for_each(i, &mut |j, a| rhs[j] -= s * a);
            }
        }
        let Some(ub) = lu_solve(&xb, p, &rhs, true) else {
            return Some((beta_v, None));
        };
        if ub.iter().all(|v| v.abs() <= 1.0 + 1e-9) {
            // A dual feasible point: its value `y'u` is the certified lower bound.
            for (k, &i) in basis.iter().enumerate() {
                u[i] = ub[k].clamp(-1.0, 1.0);
            }
            let bound = det_sum(n, |i| y[i] * u[i]);
            return Some((beta_v, Some(bound)));
        }
        if !zero.iter().any(|&z| z) {
            break;
        }
    }
    Some((beta_v, None))
}

/// Solves `A z = b` (or `A' z = b` with `transpose`) for a dense row-major `p x p` matrix by LU
/// with partial pivoting; `None` when singular.
fn lu_solve(a: &[f64], p: usize, b: &[f64], transpose: bool) -> Option<Vec<f64>> {
    let mut m: Vec<f64> = if transpose {
        let mut t = vec![0.0; p * p];
        for i in 0..p {
            for j in 0..p {
                t[j * p + i] = a[i * p + j];
            }
        }
        t
    } else {
        a.to_vec()
    };
    let mut z = b.to_vec();
    let amax = m.iter().fold(0.0f64, |s, v| s.max(v.abs()));
    for c in 0..p {
        let piv = (c..p).max_by(|&i, &j| m[i * p + c].abs().total_cmp(&m[j * p + c].abs()))?;
        if m[piv * p + c].abs() <= 1e-13 * amax.max(f64::MIN_POSITIVE) {
            return None;
        }
        if piv != c {
            for j in 0..p {
                m.swap(c * p + j, piv * p + j);
            }
            z.swap(c, piv);
        }
        for i in c + 1..p {
            let f = m[i * p + c] / m[c * p + c];
            if f != 0.0 {
                for j in c..p {
                    m[i * p + j] -= f * m[c * p + j];
                }
                z[i] -= f * z[c];
            }
        }
    }
    for c in (0..p).rev() {
        let mut s = z[c];
        for j in c + 1..p {
            s -= m[c * p + j] * z[j];
        }
        z[c] = s / m[c * p + c];
    }
    z.iter().all(|v| v.is_finite()).then_some(z)
}

/// Checks the data for LAD: finite, non-empty, at least as many rows as coefficients.
fn check_data(data: &Dataset, intercept: bool) -> Result<(), FitError> {
    check_rows(data.len(), data.n_features() + usize::from(intercept))
}

/// [`check_data`] for `n` rows and `p` coefficients.
fn check_rows(n: usize, p: usize) -> Result<(), FitError> {
    if n == 0 {
        return Err(DataError::Empty.into());
    }
    if n < p {
        return Err(ParamError::Incompatible(
            "LAD needs at least as many rows as coefficients (n >= features + intercept)",
        )
        .into());
    }
    Ok(())
}

/// Exact LAD on the full data (the LP by clarabel, polished to a certified vertex).
///
/// Constant or collinear columns are accepted: the LP then has many optimal `beta` and one of
/// them is returned (the objective is still the optimum; `certified` may be false).
///
/// # Errors
/// [`DataError::Empty`], [`ParamError::Incompatible`] when `n < p`, [`SolveError`](crate::error::SolveError) when the LP
/// breaks down.
pub fn fit_lad(
    data: &Dataset,
    intercept: bool,
    time_limit: Option<Duration>,
) -> Result<(LadModel, LadSolution), FitError> {
    check_data(data, intercept)?;
    let design = FeatureRows::new(&data.x, intercept.then_some(1.0));
    let sol = solve_design(&design, &data.y, time_limit)?;
    Ok((model_from(&sol.beta, data.n_features(), intercept), sol))
}

fn model_from(beta: &[f64], d: usize, intercept: bool) -> LadModel {
    LadModel {
        coef: beta[..d].to_vec(),
        intercept: if intercept { beta[d] } else { 0.0 },
        has_intercept: intercept,
    }
}

/// Checked AID-LAD parameters, the only ones [`fit`] accepts (made by
/// [`AidLadParams::check`]).
#[derive(Debug, Clone, PartialEq)]
pub struct AidLadValidParams {
    pub(crate) intercept: bool,
    pub(crate) r0: Option<f64>,
    pub(crate) seed: u64,
    pub(crate) settings: AidSettings,
}

impl AidLadValidParams {
    /// Whether an intercept is fitted.
    pub fn intercept(&self) -> bool {
        self.intercept
    }
    /// Initial aggregation rate `r^0` (`None`: the paper's rule, [`lad_r0`]).
    pub fn r0(&self) -> Option<f64> {
        self.r0
    }
    /// Seed of the sample and of the k-means centres.
    pub fn seed(&self) -> u64 {
        self.seed
    }
    /// Loop limits.
    pub fn settings(&self) -> &AidSettings {
        &self.settings
    }
}

/// AID-LAD parameters (a consuming builder); [`AidLadParams::check`] validates them.
///
/// ```
/// use marginkit::aid::lad::AidLadParams;
///
/// let p = AidLadParams::new().intercept(false).r0(0.05).check()?;
/// assert_eq!(p.settings().gap_tol(), 0.0);
/// assert!(AidLadParams::new().r0(1.5).check().is_err());
/// # Ok::<(), marginkit::ParamError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct AidLadParams(AidLadValidParams);

impl Default for AidLadParams {
    /// An intercept, the paper's `r^0`, seed 0, gap tolerance 0 (stop only with the
    /// certificate), at most 1000 iterations.
    fn default() -> Self {
        Self(AidLadValidParams {
            intercept: true,
            r0: None,
            seed: 0,
            settings: AidSettings {
                gap_tol: 0.0,
                ..AidSettings::default()
            },
        })
    }
}

impl From<AidLadValidParams> for AidLadParams {
    /// Checked parameters as a builder again, to change some and check them anew.
    fn from(p: AidLadValidParams) -> Self {
        Self(p)
    }
}

impl AidLadParams {
    /// The defaults (see [`Default`]).
    pub fn new() -> Self {
        Self::default()
    }
    /// Fit an intercept.
    #[must_use]
    pub fn intercept(mut self, on: bool) -> Self {
        self.0.intercept = on;
        self
    }
    /// Initial aggregation rate, in `(0, 1]`.
    #[must_use]
    pub fn r0(mut self, r0: f64) -> Self {
        self.0.r0 = Some(r0);
        self
    }
    /// Seed of the sample and of the k-means centres.
    #[must_use]
    pub fn seed(mut self, seed: u64) -> Self {
        self.0.seed = seed;
        self
    }
    /// Relative gap at which the loop stops (`>= 0`; 0: only the certificate stops it).
    #[must_use]
    pub fn gap_tol(mut self, g: f64) -> Self {
        self.0.settings.gap_tol = g;
        self
    }
    /// Most aggregated solves (`>= 1`).
    #[must_use]
    pub fn max_iter(mut self, n: usize) -> Self {
        self.0.settings.max_iter = n;
        self
    }
    /// Wall-clock limit of the loop.
    #[must_use]
    pub fn time_limit(mut self, d: Duration) -> Self {
        self.0.settings.time_limit = Some(d);
        self
    }

    /// Validates every parameter (NaN-safe); what depends on the data (enough rows) is checked
    /// by the fit.
    ///
    /// # Errors
    /// [`ParamError`] for an `r0` outside `(0, 1]`, a bad gap tolerance or iteration limit.
    pub fn check(self) -> Result<AidLadValidParams, ParamError> {
        if let Some(r) = self.0.r0 {
            super::check_rate(r)?;
        }
        self.0.settings.check()?;
        Ok(self.0)
    }
}

/// The paper's LAD rule: `max(3m/n, 0.0005)` if `m n > 5e8`, else `max(2m/n, 0.0005)`.
pub fn lad_r0(n: usize, m: usize) -> f64 {
    let (n, mf) = (n as f64, m as f64);
    if mf * n > 5e8 {
        (3.0 * mf / n).max(0.0005)
    } else {
        (2.0 * mf / n).max(0.0005)
    }
}

/// What AID-LAD did besides its model.
#[derive(Debug, Clone)]
pub struct AidLadReport {
    /// The loop's record (iterations, bounds, stop reason); `None` when the fit was stopped
    /// before its first iteration finished (then [`Fit::model`] is `None` too).
    pub run: Option<AidRun<Vec<f64>>>,
    /// Seconds spent on the initial clustering (sample fit, residuals, k-means).
    pub init_seconds: f64,
    /// Whether the last aggregated solve was certified by the simplex test.
    pub last_certified: bool,
}

impl Report for AidLadReport {
    /// The run's status; [`Status::Interrupted`] when no iteration finished.
    fn status(&self) -> Status {
        self.run.as_ref().map_or(Status::Interrupted, |r| r.status)
    }
}

/// What [`fit`] returns: the model with the smallest full-data objective (`None` when no
/// iteration finished), the report and, when the fit was stopped, the state to continue from.
pub type AidLadFit = Fit<Option<LadModel>, AidLadReport, AidCheckpoint>;

/// Rows per chunk of the full-data pass: `E^t` is the sum, in chunk order, of the chunks' sums.
const EVAL_CHUNK: usize = 4096;

/// A row's side code (`1` if `r > eps`, else `0`; see the module docs) and `|r|`, for target
/// `y` and prediction `pred`.
fn side_of(y: f64, pred: f64) -> (u8, f64) {
    let r = y - pred;
    let eps = ZERO_RTOL * (1.0 + y.abs() + pred.abs());
    (u8::from(r > eps), r.abs())
}

/// What a LAD run's stamp holds besides the data: a description of every parameter that
/// changes the iterates, and those parameters by flag.
fn stamp_parts(params: &AidLadValidParams) -> (String, RunRecord) {
    let mut settings = checkpoint::common_settings(params.r0, params.settings.gap_tol, params.seed);
    settings.set(
        "--no-intercept",
        if params.intercept { "no" } else { "yes" },
    );
    let what = format!(
        "lad|{}|{:?}|{}|{:?}",
        params.intercept,
        params.r0.map(f64::to_bits),
        params.seed,
        params.settings.gap_tol.to_bits()
    );
    (what, settings)
}

/// AID-LAD (see module docs): the initial clustering, then the AID loop.
///
/// `ctl`'s observer is asked before every aggregated solve (the LAD solves themselves, an
/// interior point on the aggregated rows, are not interrupted: they take a small fraction of an
/// iteration); its part callback receives every iteration's record. When the observer asks to
/// stop, the fit returns the best iterate so far with [`Status::Interrupted`] (model and
/// run `None` if no iteration finished) and an [`AidCheckpoint`]; continuing it
/// ([`Control::resume_from`]) gives the iterates an uninterrupted run makes, bit for bit.
///
/// # Errors
/// As [`fit_lad`]; [`FitError::Checkpoint`] when the state to resume was made by another
/// model, with other data or parameters, or does not fit the data.
pub fn fit(
    params: &AidLadValidParams,
    data: &Dataset,
    ctl: &mut Control<'_, AidCheckpoint, IterRecord>,
) -> Result<AidLadFit, FitError> {
    check_data(data, params.intercept)?;
    let d = data.n_features();
    let lay = shard::Layout {
        n: data.len(),
        first: 0,
        d,
    };
    let shard::Run {
        end,
        at,
        init_seconds,
        checkpoint,
    } = shard::run(params, data, &lay, &mut InProcess, ctl)?;
    let clusters = Clusters::from_assignment(&at.labels, at.k);
    let (status, termination) = end.unwrap_or((Status::Interrupted, None));
    let run = at.best.as_ref().map(|(b, e)| AidRun {
        best: b.clone(),
        best_objective: *e,
        lower_bound: if at.records.is_empty() {
            f64::NAN
        } else {
            at.lower
        },
        status,
        termination,
        iterations: at.records.clone(),
        clusters,
    });
    Ok(Fit {
        model: run
            .as_ref()
            .map(|r| model_from(&r.best, d, params.intercept)),
        report: AidLadReport {
            run,
            init_seconds,
            last_certified: end.is_some() && at.last_certified,
        },
        checkpoint,
    })
}

/// `|K^0|`: `ceil(r^0 n)`, at least `p + 1` (LAD needs more clusters than coefficients to be
/// non-trivial), at most `n`.
fn initial_k(params: &AidLadValidParams, n: usize, p: usize) -> usize {
    let r0 = params.r0.unwrap_or_else(|| lad_r0(n, p));
    ((r0 * n as f64).ceil() as usize).max(p + 1).min(n)
}

/// Rows of the sample whose exact LAD gives `beta^init`.
fn sample_size(n: usize, p: usize) -> usize {
    n.min((20 * p).max(2000))
}

/// Seed of the k-means centres (apart from the sample's).
fn kmeans_seed(seed: u64) -> u64 {
    seed ^ 0x9e37_79b9_7f4a_7c15
}

#[cfg(test)]
mod tests {

    #[test]
    fn lad_json_round_trips_exactly_and_refuses_other_files() {
        let m = LadModel {
            coef: vec![0.1, -2.5e-17, 3.0, f64::MIN_POSITIVE],
            intercept: -7.25,
            has_intercept: true,
        };
        assert_eq!(LadModel::from_json(&m.to_json()).unwrap(), m);
        let none = LadModel {
            coef: vec![],
            intercept: 0.0,
            has_intercept: false,
        };
        assert_eq!(LadModel::from_json(&none.to_json()).unwrap(), none);
        let spaced =
            "{ \"model\" : \"lad\", \"has_intercept\": false, \"intercept\": 0, \"coef\": [1, 2] }";
        assert_eq!(LadModel::from_json(spaced).unwrap().coef, vec![1.0, 2.0]);
        for bad in [
            "svm_type c_svc",
            "{\"model\":\"svm\"}",
            "{\"model\":\"lad\",\"has_intercept\":true,\"intercept\":x,\"coef\":[]}",
            "{\"model\":\"lad\",\"has_intercept\":true,\"intercept\":1,\"coef\":[1,inf]}",
            "{\"model\":\"lad\",\"has_intercept\":true,\"intercept\":1}",
        ] {
            assert!(LadModel::from_json(bad).is_err(), "{bad}");
        }
    }

    use super::*;
    use crate::data::design::DenseRows;
    use crate::data::DenseMatrix;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// The dedicated interior point and clarabel agree (and both polish to the same optimum).
    #[test]
    fn frisch_newton_equals_clarabel() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        for (n, p) in [(50usize, 2usize), (400, 5), (1000, 9)] {
            let mut v = vec![0.0; n * p];
            let mut y = vec![0.0; n];
            for i in 0..n {
                for j in 0..p - 1 {
                    v[i * p + j] = rng.gen_range(-3.0..3.0);
                }
                v[i * p + p - 1] = 1.0;
                y[i] = v[i * p] * 2.0 - v[i * p + 1 % (p - 1)]
                    + rng.gen_range(-1.0f64..1.0).powi(3) * 10.0;
            }
            let m = DenseMatrix::new(n, p, v).unwrap();
            let d = DenseRows::new(&m, None);
            let fnm = lp::frisch_newton(&d, &y, None).expect("converges");
            let (b1, it) = (fnm.beta, fnm.iterations);
            assert!(it < 100);
            let b2 = lp::clarabel(&d, &y, None).unwrap().beta;
            let obj = |b: &[f64]| (0..n).map(|i| (y[i] - d.dot(i, b)).abs()).sum::<f64>();
            let (o1, o2) = (obj(&b1), obj(&b2));
            assert!((o1 - o2).abs() <= 1e-8 * o2, "{o1} vs {o2}");
            let sol = solve_design(&d, &y, None).unwrap();
            assert_eq!(sol.solver, LpSolver::FrischNewton);
            assert!(sol.certified);
            assert!(sol.objective <= o2 * (1.0 + 1e-12));
        }
    }
}
