//! Independent optimality check for the box QP of [`super::BoxQp`].
//!
//! ```text
//! min_a  1/2 a'Qa + p'a   s.t.  y'a = delta (Equality::Sum only),  0 <= a_i <= u_i
//! ```
//!
//! The gradient `g = Qa + p` is recomputed from scratch (nothing is taken from a solver).
//! Fixed variables (`VarFix::AtZero/AtUpper`) are treated as equality-constrained: they are
//! part of the objective and of `y'a`, but not of the violation or the gap.
//!
//! **Violation.** With the equality: `m(a) - M(a)` with `m = max_{I_up} -y_i g_i`,
//! `M = min_{I_low} -y_i g_i` (LIBSVM's stopping measure; 0 if negative). Without: the largest
//! `|PG_i|` (projected gradient: `min(g_i, 0)` at 0, `max(g_i, 0)` at `u_i`, `g_i` inside).
//!
//! **Duality gap.** The Lagrangian with multiplier `b` for the equality and `lambda, mu >= 0`
//! for the bounds is stationary when `s = g + b y = lambda - mu`. Taking `lambda = max(s, 0)`,
//! `mu = max(-s, 0)`, primal minus dual is (using `y'a = delta`)
//! `gap(b) = sum_i a_i s_i + u_i max(0, -s_i)`, each term `>= 0` for a feasible `a`. A term
//! with `u_i = inf` needs `s_i >= 0` (else the dual is infeasible): such terms count as
//! `a_i s_i` and their `max(0, -s_i)` is reported separately as the dual residual; they also
//! bound `b` to an interval (its midpoint is used if it is empty). `gap(b)` is convex and
//! piecewise linear with breaks at `b = -y_i g_i`; its minimum over the allowed interval is
//! found by a slope sweep over the sorted breakpoints. Without the equality `b = 0`.

use super::{BoxQp, Equality, VarFix};

/// What the checker found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KktReport {
    /// `1/2 a'Qa + p'a`.
    pub objective: f64,
    /// Maximal KKT violation (see the module documentation).
    pub max_violation: f64,
    /// Duality gap minimized over the equality multiplier.
    pub gap: f64,
    /// Dual infeasibility `max(0, -s_i)` over variables with `u_i = inf` (0 if none).
    pub dual_residual: f64,
    /// An equality multiplier `b` attaining the gap (0 without the equality). At an optimum
    /// with free variables, LIBSVM's `rho` equals `-b`.
    pub b: f64,
    /// Largest bound violation `max(0, -a_i, a_i - u_i)` (and distance of fixed variables
    /// from their value).
    pub bound_violation: f64,
    /// `|y'a - delta|` (0 without the equality).
    pub equality_residual: f64,
}

/// Checks `alpha` against `qp` with `Q` given as a dense row-major `n x n` matrix.
///
/// # Panics
/// If `q.len() != n * n` (a test helper; `n` is `alpha.len()`).
pub fn check_dense(q: &[f64], qp: &BoxQp<'_>, alpha: &[f64]) -> KktReport {
    let n = alpha.len();
    assert_eq!(q.len(), n * n, "dense Q must be n x n");
    check_with(|i, j| q[i * n + j], qp, alpha)
}

/// Checks `alpha` against `qp` with `Q_ij = q(i, j)`.
pub fn check_with<F: Fn(usize, usize) -> f64>(q: F, qp: &BoxQp<'_>, alpha: &[f64]) -> KktReport {
    let mut g = qp.p.to_vec();
    for (j, &aj) in alpha.iter().enumerate() {
        if aj != 0.0 {
            for (i, gi) in g.iter_mut().enumerate() {
                *gi += q(i, j) * aj;
            }
        }
    }
    check_gradient(&g, qp, alpha)
}

/// Checks `alpha` against `qp` given the gradient `g = Q alpha + p` (computed by the caller,
/// e.g. a solver's final, fully reconstructed gradient). Everything but `g` is recomputed here;
/// [`check_with`] is this function after a from-scratch gradient.
///
/// # Panics
/// If `g`, `alpha` and the arrays of `qp` do not have the same length (a caller's bug).
#[allow(clippy::needless_range_loop)]
pub fn check_gradient(g: &[f64], qp: &BoxQp<'_>, alpha: &[f64]) -> KktReport {
    let n = alpha.len();
    assert!(
        g.len() == n && qp.p.len() == n && qp.y.len() == n && qp.upper.len() == n,
        "g, alpha, p, y and upper must have the same length"
    );
    let mut objective = 0.0;
    for i in 0..n {
        objective += alpha[i] * (0.5 * (g[i] - qp.p[i]) + qp.p[i]);
    }
    let fixed = |i: usize| qp.fixed.map_or(VarFix::Free, |f| f[i]);
    let mut bound_violation = 0.0f64;
    for i in 0..n {
        let (a, u) = (alpha[i], qp.upper[i]);
        let v = match fixed(i) {
            VarFix::AtZero => a.abs(),
            VarFix::AtUpper => (a - u).abs(),
            VarFix::Free => (-a).max(a - u).max(0.0),
        };
        bound_violation = bound_violation.max(v);
    }
    let free = |i: usize| fixed(i) == VarFix::Free;
    let vars = Vars { n, sel: &free };
    let y = |i: usize| if qp.y[i] < 0 { -1.0 } else { 1.0 };
    match qp.equality {
        Equality::None => {
            let mut viol = 0.0f64;
            for i in vars.iter() {
                let pg = if qp.upper[i] <= 0.0 {
                    // Both bounds at once: the variable cannot move.
                    0.0
                } else if alpha[i] <= 0.0 {
                    g[i].min(0.0)
                } else if alpha[i] >= qp.upper[i] {
                    g[i].max(0.0)
                } else {
                    g[i]
                };
                viol = viol.max(pg.abs());
            }
            KktReport {
                objective,
                max_violation: viol,
                gap: gap_at(0.0, vars, g, alpha, qp.upper, &y),
                dual_residual: dual_residual(0.0, vars, g, qp.upper, &y),
                b: 0.0,
                bound_violation,
                equality_residual: 0.0,
            }
        }
        Equality::Sum { delta } => {
            let (mut m_up, mut m_low) = (f64::NEG_INFINITY, f64::INFINITY);
            for i in vars.iter() {
                let f = -y(i) * g[i];
                let (at_low, at_up) = (alpha[i] <= 0.0, alpha[i] >= qp.upper[i]);
                let (up, low) = if y(i) > 0.0 {
                    (!at_up, !at_low)
                } else {
                    (!at_low, !at_up)
                };
                if up {
                    m_up = m_up.max(f);
                }
                if low {
                    m_low = m_low.min(f);
                }
            }
            let viol = if m_up.is_finite() && m_low.is_finite() {
                (m_up - m_low).max(0.0)
            } else {
                0.0
            };
            let res: f64 = (0..n).map(|i| y(i) * alpha[i]).sum::<f64>() - delta;
            let (b, gap) = min_gap(vars, g, alpha, qp.upper, &y);
            KktReport {
                objective,
                max_violation: viol,
                gap,
                dual_residual: dual_residual(b, vars, g, qp.upper, &y),
                b,
                bound_violation,
                equality_residual: res.abs(),
            }
        }
    }
}

/// The variables a gap runs over: those `i < n` with `sel(i)`, always in increasing order (so
/// every sum is taken in the same order), without an index list in memory.
struct Vars<'s, S: Fn(usize) -> bool> {
    n: usize,
    sel: &'s S,
}

impl<S: Fn(usize) -> bool> Clone for Vars<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S: Fn(usize) -> bool> Copy for Vars<'_, S> {}

impl<S: Fn(usize) -> bool> Vars<'_, S> {
    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.n).filter(|&i| (self.sel)(i))
    }
}

/// Duality gap of the variables `0..g.len()` (all free) from a solver's gradient and signs:
/// minimized over one equality multiplier (`groups == 1`), one per sign of `y`
/// (`groups == 2`, the two equalities of the nu formulations), or with `b = 0` (`groups == 0`).
/// Allocates only the sort order of the breakpoints (`u32` positions when they fit).
pub(crate) fn gap_from_state(g: &[f64], a: &[f64], u: &[f64], y: &[i8], groups: u8) -> f64 {
    let yf = |i: usize| if y[i] < 0 { -1.0 } else { 1.0 };
    let n = g.len();
    match groups {
        0 => gap_at(0.0, Vars { n, sel: &|_| true }, g, a, u, &yf),
        1 => min_gap(Vars { n, sel: &|_| true }, g, a, u, &yf).1,
        _ => {
            let part = |positive: bool| {
                let sel = |i: usize| (y[i] > 0) == positive;
                let vars = Vars { n, sel: &sel };
                if vars.iter().next().is_none() {
                    0.0
                } else {
                    min_gap(vars, g, a, u, &yf).1
                }
            };
            part(true) + part(false)
        }
    }
}

fn gap_at<S: Fn(usize) -> bool>(
    b: f64,
    vars: Vars<'_, S>,
    g: &[f64],
    a: &[f64],
    u: &[f64],
    y: &impl Fn(usize) -> f64,
) -> f64 {
    let mut sum = 0.0;
    for i in vars.iter() {
        let s = g[i] + b * y(i);
        sum += a[i] * s;
        if u[i].is_finite() {
            sum += u[i] * (-s).max(0.0);
        }
    }
    sum
}

fn dual_residual<S: Fn(usize) -> bool>(
    b: f64,
    vars: Vars<'_, S>,
    g: &[f64],
    u: &[f64],
    y: &impl Fn(usize) -> f64,
) -> f64 {
    vars.iter()
        .filter(|&i| !u[i].is_finite())
        .map(|i| (-(g[i] + b * y(i))).max(0.0))
        .fold(0.0, f64::max)
}

/// Positions of the breakpoints, sorted by `t_i` with ties in increasing position (the order
/// of a stable sort of the breakpoints listed by position).
trait Position: Copy + Ord {
    fn at(self) -> usize;
    fn of(i: usize) -> Self;
}

impl Position for u32 {
    #[inline]
    fn at(self) -> usize {
        self as usize
    }
    #[inline]
    fn of(i: usize) -> Self {
        // Only used when every position fits (checked by the caller).
        u32::try_from(i).unwrap_or(u32::MAX)
    }
}

impl Position for usize {
    #[inline]
    fn at(self) -> usize {
        self
    }
    #[inline]
    fn of(i: usize) -> Self {
        i
    }
}

/// The unconstrained minimizer of `gap(b)` from the slope left of every breakpoint: the first
/// breakpoint (in `t` order) at which the slope turns `>= 0` (the first breakpoint if it is
/// never negative; the last if it never turns; 0 without breakpoints).
fn sweep<P: Position, S: Fn(usize) -> bool>(
    vars: Vars<'_, S>,
    mut slope: f64,
    t: &impl Fn(usize) -> f64,
    u: &[f64],
) -> f64 {
    let mut order: Vec<P> = vars
        .iter()
        .filter(|&i| u[i].is_finite() && u[i] > 0.0)
        .map(P::of)
        .collect();
    order.sort_unstable_by(|&i, &j| t(i.at()).total_cmp(&t(j.at())).then(i.cmp(&j)));
    let mut b = order.first().map_or(0.0, |&i| t(i.at()));
    if slope < 0.0 {
        for &i in &order {
            b = t(i.at());
            slope += u[i.at()];
            if slope >= 0.0 {
                break;
            }
        }
    }
    b
}

/// Minimizes the convex piecewise-linear `gap(b)`; returns `(b, gap)`.
fn min_gap<S: Fn(usize) -> bool>(
    vars: Vars<'_, S>,
    g: &[f64],
    a: &[f64],
    u: &[f64],
    y: &impl Fn(usize) -> f64,
) -> (f64, f64) {
    // Infinite bounds need s_i = g_i + b y_i >= 0.
    let (mut lo, mut hi) = (f64::NEG_INFINITY, f64::INFINITY);
    for i in vars.iter() {
        if !u[i].is_finite() {
            if y(i) > 0.0 {
                lo = lo.max(-g[i]);
            } else {
                hi = hi.min(g[i]);
            }
        }
    }
    if lo > hi {
        let b = 0.5 * (lo + hi);
        return (b, gap_at(b, vars, g, a, u, y));
    }
    // gap(b) is convex and piecewise linear; its slope is known exactly, so the minimum is
    // found by a sweep over the sorted breakpoints t_i = -y_i g_i, without comparing function
    // values (near-equal breakpoints would make such comparisons rounding noise). Left of
    // every breakpoint the terms with y_i > 0 have s_i < 0, so the slope is
    // sum_i a_i y_i - sum_{y_i > 0, u_i finite} u_i; crossing t_i adds u_i. Only the sort
    // order of the breakpoints is stored (positions, not (t_i, u_i) pairs).
    let mut slope: f64 = vars.iter().map(|i| a[i] * y(i)).sum();
    slope -= vars
        .iter()
        .filter(|&i| u[i].is_finite() && u[i] > 0.0 && y(i) > 0.0)
        .map(|i| u[i])
        .sum::<f64>();
    let t = |i: usize| -y(i) * g[i];
    let b = if u32::try_from(vars.n).is_ok() {
        sweep::<u32, S>(vars, slope, &t, u)
    } else {
        sweep::<usize, S>(vars, slope, &t, u)
    };
    let b = b.clamp(lo, hi);
    (b, gap_at(b, vars, g, a, u, y))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_breakpoints_do_not_stop_the_gap_search() {
        // Q = 0, all y = +1, y'a = 0: a = 0 is the only feasible point and optimal; the gap is
        // 0 for b >= 1.25, which a search stopped by the repeated breakpoint 0 would miss.
        let q = [0.0; 25];
        let qp = BoxQp {
            p: &[0.0, 0.0, -1.0, -1.0, -1.25],
            y: &[1, 1, 1, 1, 1],
            upper: &[0.25; 5],
            equality: Equality::Sum { delta: 0.0 },
            fixed: None,
        };
        let rep = check_dense(&q, &qp, &[0.0; 5]);
        assert!(rep.gap.abs() < 1e-12, "{rep:?}");
    }

    /// The slope sweep against a brute-force minimum over every breakpoint (the minimum of a
    /// convex piecewise-linear function is attained at one), with repeated breakpoints,
    /// zero and infinite bounds, one and two multipliers.
    #[test]
    fn state_gap_equals_the_minimum_over_all_breakpoints() {
        let n = 40;
        let mut seed = 7u64;
        let mut next = || {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        for case in 0..30 {
            let y: Vec<i8> = (0..n).map(|_| if next() < 0.5 { -1 } else { 1 }).collect();
            let u: Vec<f64> = (0..n)
                .map(|i| match (i + case) % 9 {
                    0 => 0.0,
                    1 => 2.5,
                    _ => 1.0,
                })
                .collect();
            let a: Vec<f64> = u
                .iter()
                .map(|&ui| ui * (next() * 3.0).floor() / 2.0)
                .collect();
            // Few distinct gradient values: many repeated breakpoints.
            let g: Vec<f64> = (0..n).map(|_| (next() * 7.0).floor() - 3.0).collect();
            let yf = |i: usize| f64::from(y[i]);
            let brute = |sel: &dyn Fn(usize) -> bool| {
                let at = |b: f64| -> f64 {
                    (0..n)
                        .filter(|&i| sel(i))
                        .map(|i| {
                            let s = g[i] + b * yf(i);
                            a[i] * s + u[i] * (-s).max(0.0)
                        })
                        .sum()
                };
                (0..n)
                    .filter(|&i| sel(i))
                    .map(|i| at(-yf(i) * g[i]))
                    .fold(f64::INFINITY, f64::min)
            };
            let one = gap_from_state(&g, &a, &u, &y, 1);
            let want = brute(&|_| true);
            assert!(
                (one - want).abs() <= 1e-12 * (1.0 + want.abs()),
                "{one} vs {want}"
            );
            let two = gap_from_state(&g, &a, &u, &y, 2);
            let part = |p: bool| {
                if (0..n).any(|i| (y[i] > 0) == p) {
                    brute(&|i| (y[i] > 0) == p)
                } else {
                    0.0
                }
            };
            let want2 = part(true) + part(false);
            assert!(
                (two - want2).abs() <= 1e-12 * (1.0 + want2.abs()),
                "{two} vs {want2}"
            );
        }
    }

    #[test]
    fn one_dimensional_cases() {
        // min 1/2 a^2 - a on [0, 0.5]: optimum a = 0.5 at the bound, gradient -0.5.
        let q = [1.0];
        let qp = BoxQp {
            p: &[-1.0],
            y: &[1],
            upper: &[0.5],
            equality: Equality::None,
            fixed: None,
        };
        let r = check_dense(&q, &qp, &[0.5]);
        assert_eq!(r.max_violation, 0.0);
        assert!(r.gap.abs() < 1e-15);
        assert!((r.objective + 0.375).abs() < 1e-15);
        // Interior non-optimal point: violation |g| = 0.8, gap = a*g + u*max(0,-g).
        let r = check_dense(&q, &qp, &[0.2]);
        assert!((r.max_violation - 0.8).abs() < 1e-15);
        assert!((r.gap - (0.2 * -0.8 + 0.5 * 0.8)).abs() < 1e-15);
        // Infinite bound with negative gradient: no dual-feasible point.
        let qp_inf = BoxQp {
            upper: &[f64::INFINITY],
            ..qp
        };
        assert!((check_dense(&q, &qp_inf, &[0.2]).dual_residual - 0.8).abs() < 1e-15);
        assert!(check_dense(&q, &qp_inf, &[1.0]).gap.abs() < 1e-15);
    }

    #[test]
    fn equality_gap_is_minimized_over_b() {
        // Two variables, y = (+1, -1), a1 = a2 (delta 0), Q = I, p = (-1, -1), u = 10:
        // min 1/2 (a1^2 + a2^2) - a1 - a2 with a1 = a2 -> a = (1, 1).
        let q = [1.0, 0.0, 0.0, 1.0];
        let qp = BoxQp {
            p: &[-1.0, -1.0],
            y: &[1, -1],
            upper: &[10.0, 10.0],
            equality: Equality::Sum { delta: 0.0 },
            fixed: None,
        };
        let r = check_dense(&q, &qp, &[1.0, 1.0]);
        assert!(r.max_violation.abs() < 1e-15 && r.gap.abs() < 1e-12);
        let r = check_dense(&q, &qp, &[0.5, 0.5]);
        // -y g = (0.5, -0.5), both variables in I_up and I_low: m - M = 1.
        assert!((r.max_violation - 1.0).abs() < 1e-15);
        // g = (-0.5, -0.5), s = (-0.5 + b, -0.5 - b): compare with a brute-force minimum.
        let brute = (0..20001)
            .map(|k| {
                let b = -10.0 + k as f64 * 0.001;
                let s1: f64 = -0.5 + b;
                let s2: f64 = -0.5 - b;
                0.5 * s1 + 10.0 * (-s1).max(0.0) + 0.5 * s2 + 10.0 * (-s2).max(0.0)
            })
            .fold(f64::INFINITY, f64::min);
        assert!((r.gap - brute).abs() < 1e-9, "{} vs {brute}", r.gap);
    }
}
