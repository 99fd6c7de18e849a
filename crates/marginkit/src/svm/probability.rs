//! Probability estimates: Platt's sigmoid (fitted by the Newton method with backtracking of
//! Lin, Lin and Weng, "A note on Platt's probabilistic outputs for support vector machines",
//! Machine Learning 2007), pairwise coupling for several classes (Wu, Lin and Weng, "Probability
//! estimates for multi-class classification by pairwise coupling", JMLR 2004, method 2), and a
//! Laplace noise scale for regression.
//!
//! The decision values these are fitted on come from internal cross-validation (see
//! [`crate::svm::train`]).

/// Fits `P(y = +1 | f) = 1 / (1 + exp(A f + B))` to decision values `dec` and labels
/// `positive[i]` (true for the +1 class), with Platt's regularized targets. Returns `(A, B)`.
pub fn sigmoid_train(dec: &[f64], positive: &[bool]) -> (f64, f64) {
    sigmoid_train_weighted(dec, positive, None)
}

/// [`sigmoid_train`] with per-sample weights: sample `i` counts `weights[i]` times in the class
/// sizes of Platt's targets and in the likelihood, so integer weights give the same sigmoid as
/// repeated samples. Newton's method runs until the gradient is at the rounding level (or the
/// line search can make no progress), so that the result does not depend on how the sums are
/// grouped (weights vs repeated samples agree to ~1e-10).
pub fn sigmoid_train_weighted(
    dec: &[f64],
    positive: &[bool],
    weights: Option<&[f64]>,
) -> (f64, f64) {
    newton_with_intercept(dec, positive, weights, false)
}

/// Platt's sigmoid with intercept exactly as Lin, Lin and Weng publish it (the pseudo-code of their
/// Newton method with backtracking line search, the fit behind LIBSVM's `-b 1`): `A = 0`, `B = log((N- + 1) / (N+ + 1))`, at most 100 Newton steps
/// on the Hessian plus `1e-12 I`, each with a backtracking line search (halving, sufficient
/// decrease `1e-4`, smallest step `1e-10`), stopping when both gradient components are below
/// `1e-5`. Returns `(A, B)` of `P(y = +1 | f) = 1 / (1 + exp(A f + B))`. With unit weights
/// (`None`) it reproduces LIBSVM's `probA`/`probB` from the same decision values up to rounding;
/// weights count as in [`sigmoid_train_weighted`]. [`sigmoid_train_weighted`] is the same method
/// run on to the rounding level instead of the published stop.
pub fn sigmoid_train_published(
    dec: &[f64],
    positive: &[bool],
    weights: Option<&[f64]>,
) -> (f64, f64) {
    newton_with_intercept(dec, positive, weights, true)
}

/// The Newton method of Lin, Lin and Weng with the published stop (`published`: both gradient
/// components below `1e-5`) or run on to the rounding level.
fn newton_with_intercept(
    dec: &[f64],
    positive: &[bool],
    weights: Option<&[f64]>,
    published: bool,
) -> (f64, f64) {
    let w = |i: usize| weights.map_or(1.0, |w| w[i]);
    let n_pos: f64 = (0..positive.len()).filter(|&i| positive[i]).map(w).sum();
    let n_neg: f64 = (0..positive.len()).filter(|&i| !positive[i]).map(w).sum();
    let hi = (n_pos + 1.0) / (n_pos + 2.0);
    let lo = 1.0 / (n_neg + 2.0);
    let t: Vec<f64> = positive.iter().map(|&p| if p { hi } else { lo }).collect();
    let wv: Vec<f64> = (0..dec.len()).map(w).collect();

    // Negative log-likelihood in a form that never overflows exp().
    let nll = |a: f64, b: f64| -> f64 {
        dec.iter()
            .zip(&t)
            .zip(&wv)
            .map(|((&f, &ti), &wi)| {
                let z = a * f + b;
                wi * if z >= 0.0 {
                    ti * z + (-z).exp().ln_1p()
                } else {
                    z.exp().ln_1p() - (1.0 - ti) * z
                }
            })
            .sum()
    };
    // p = P(y=1|f) = 1/(1+e^z), computed stably.
    let prob = |z: f64| -> f64 {
        if z >= 0.0 {
            let e = (-z).exp();
            e / (1.0 + e)
        } else {
            1.0 / (1.0 + z.exp())
        }
    };

    let (mut a, mut b) = (0.0, ((n_neg + 1.0) / (n_pos + 1.0)).ln());
    let mut fval = nll(a, b);
    const MAX_ITER: usize = 100;
    const MIN_STEP: f64 = 1e-10;
    const SIGMA: f64 = 1e-12; // ridge that keeps the Hessian positive definite
                              // Platt/Lin et al. stop at 1e-5; Newton is quadratic there, so going on to the rounding
                              // level costs one or two more steps and makes the result independent of summation order.
    const GRAD_TOL: f64 = 1e-5;
    let scale: f64 =
        wv.iter().sum::<f64>() * (1.0 + dec.iter().map(|f| f.abs()).fold(0.0, f64::max));
    let tight = 1e-13 * scale.max(1.0);
    for _ in 0..MAX_ITER {
        let (mut h11, mut h22, mut h21, mut g1, mut g2) = (SIGMA, SIGMA, 0.0, 0.0, 0.0);
        for ((&f, &ti), &wi) in dec.iter().zip(&t).zip(&wv) {
            let p = prob(a * f + b);
            let d2 = wi * p * (1.0 - p);
            h11 += f * f * d2;
            h22 += d2;
            h21 += f * d2;
            let d1 = wi * (ti - p);
            g1 += f * d1;
            g2 += d1;
        }
        if g1.abs() < tight && g2.abs() < tight {
            break;
        }
        let near = g1.abs() < GRAD_TOL && g2.abs() < GRAD_TOL;
        if near && published {
            break;
        }
        let det = h11 * h22 - h21 * h21;
        let da = -(h22 * g1 - h21 * g2) / det;
        let db = -(-h21 * g1 + h11 * g2) / det;
        let gd = g1 * da + g2 * db;
        if near {
            // Inside the quadratic region the full Newton step is taken: the likelihood
            // changes there by less than its rounding, so a line search would only stall.
            let (na, nb) = (a + da, b + db);
            if !(na.is_finite() && nb.is_finite()) || (na == a && nb == b) {
                break;
            }
            a = na;
            b = nb;
            fval = nll(a, b);
            continue;
        }
        let mut step = 1.0;
        while step >= MIN_STEP {
            let (na, nb) = (a + step * da, b + step * db);
            let nf = nll(na, nb);
            if nf < fval + 1e-4 * step * gd {
                a = na;
                b = nb;
                fval = nf;
                break;
            }
            step /= 2.0;
        }
        if step < MIN_STEP {
            if !near {
                log::warn!("Platt scaling: line search failed");
            }
            break;
        }
    }
    (a, b)
}

/// Platt's sigmoid through the origin: fits `P(y = +1 | f) = 1 / (1 + exp(A f))` (B = 0) with the
/// same regularized targets and weights as [`sigmoid_train_weighted`], and returns `A <= 0`.
///
/// This is what marginkit's binary models use (a documented deviation from LIBSVM, whose free
/// `B` moves the 0.5 crossing away from `f = 0`, so that LIBSVM's probabilities can contradict
/// its own predictions near the boundary): with `B = 0` and `A < 0`, `P(+1) > 1/2` exactly when
/// the decision value is positive, so the most probable class is always the predicted one.
/// When the fitted slope is not negative (decision values that do not separate the classes at
/// all), `A = 0` (both probabilities 1/2; ties go to the predicted class).
pub fn sigmoid_train_origin(dec: &[f64], positive: &[bool], weights: Option<&[f64]>) -> f64 {
    let w = |i: usize| weights.map_or(1.0, |w| w[i]);
    let n_pos: f64 = (0..positive.len()).filter(|&i| positive[i]).map(w).sum();
    let n_neg: f64 = (0..positive.len()).filter(|&i| !positive[i]).map(w).sum();
    let hi = (n_pos + 1.0) / (n_pos + 2.0);
    let lo = 1.0 / (n_neg + 2.0);
    let t: Vec<f64> = positive.iter().map(|&p| if p { hi } else { lo }).collect();
    let wv: Vec<f64> = (0..dec.len()).map(w).collect();
    let nll = |a: f64| -> f64 {
        dec.iter()
            .zip(&t)
            .zip(&wv)
            .map(|((&f, &ti), &wi)| {
                let z = a * f;
                wi * if z >= 0.0 {
                    ti * z + (-z).exp().ln_1p()
                } else {
                    z.exp().ln_1p() - (1.0 - ti) * z
                }
            })
            .sum()
    };
    let scale: f64 =
        wv.iter().sum::<f64>() * (1.0 + dec.iter().map(|f| f.abs()).fold(0.0, f64::max));
    let tight = 1e-13 * scale.max(1.0);
    let (mut a, mut fval) = (0.0, nll(0.0));
    for _ in 0..100 {
        let (mut h, mut g) = (1e-12, 0.0);
        for ((&f, &ti), &wi) in dec.iter().zip(&t).zip(&wv) {
            let p = sigmoid_predict(f, a, 0.0);
            h += wi * f * f * p * (1.0 - p);
            g += wi * f * (ti - p);
        }
        if g.abs() < tight {
            break;
        }
        let d = -g / h;
        if g.abs() < 1e-5 {
            // Quadratic region: take the Newton step (see sigmoid_train_weighted).
            if a + d == a || !(a + d).is_finite() {
                break;
            }
            a += d;
            continue;
        }
        let mut step = 1.0;
        while step >= 1e-10 {
            let na = a + step * d;
            let nf = nll(na);
            if nf < fval + 1e-4 * step * g * d {
                a = na;
                fval = nf;
                break;
            }
            step /= 2.0;
        }
        if step < 1e-10 {
            break;
        }
    }
    a.min(0.0)
}

/// `P(y = +1 | f)` for a fitted sigmoid.
pub fn sigmoid_predict(f: f64, a: f64, b: f64) -> f64 {
    let z = f * a + b;
    if z >= 0.0 {
        let e = (-z).exp();
        e / (1.0 + e)
    } else {
        1.0 / (1.0 + z.exp())
    }
}

/// Class probabilities from pairwise decision values (LIBSVM's pair order) and the pairwise
/// sigmoids, by pairwise coupling (Wu, Lin and Weng 2004, method 2).
pub fn multiclass_probability(k: usize, dec: &[f64], prob_a: &[f64], prob_b: &[f64]) -> Vec<f64> {
    const MIN_PROB: f64 = 1e-7;
    let mut r = vec![vec![0.0; k]; k];
    let pairs = (0..k).flat_map(|i| (i + 1..k).map(move |j| (i, j)));
    for (p, (i, j)) in pairs.enumerate() {
        let v = sigmoid_predict(dec[p], prob_a[p], prob_b[p]).clamp(MIN_PROB, 1.0 - MIN_PROB);
        r[i][j] = v;
        r[j][i] = 1.0 - v;
    }
    if k == 2 {
        return vec![r[0][1], r[1][0]];
    }
    couple(&r)
}

/// Solves `min_p 1/2 p'Qp` s.t. `sum p = 1` with `Q_tt = sum_{j != t} r_jt^2`,
/// `Q_tj = -r_jt r_tj`, by the fixed-point iteration of Wu, Lin and Weng (2004), section 4.
fn couple(r: &[Vec<f64>]) -> Vec<f64> {
    let k = r.len();
    let mut q = vec![vec![0.0; k]; k];
    for t in 0..k {
        for j in 0..k {
            if j != t {
                q[t][t] += r[j][t] * r[j][t];
                q[t][j] = -r[j][t] * r[t][j];
            }
        }
    }
    let mut p = vec![1.0 / k as f64; k];
    let mut qp = vec![0.0; k];
    let eps = 0.005 / k as f64;
    let max_iter = 100.max(k);
    for _ in 0..max_iter {
        let mut pqp = 0.0;
        for t in 0..k {
            qp[t] = (0..k).map(|j| q[t][j] * p[j]).sum();
            pqp += p[t] * qp[t];
        }
        let max_err = qp.iter().map(|&v| (v - pqp).abs()).fold(0.0, f64::max);
        if max_err < eps {
            break;
        }
        for t in 0..k {
            let diff = (-qp[t] + pqp) / q[t][t];
            p[t] += diff;
            pqp = (pqp + diff * (diff * q[t][t] + 2.0 * qp[t])) / (1.0 + diff) / (1.0 + diff);
            for j in 0..k {
                qp[j] = (qp[j] + diff * q[t][j]) / (1.0 + diff);
                p[j] /= 1.0 + diff;
            }
        }
    }
    p
}

/// Scale of a Laplace model of regression residuals `y - f(x)` (from cross-validation): the mean
/// absolute residual after dropping residuals beyond 5 standard deviations of a Laplace fit.
pub fn laplace_sigma(residuals: &[f64]) -> f64 {
    let n = residuals.len().max(1) as f64;
    let mae = residuals.iter().map(|r| r.abs()).sum::<f64>() / n;
    let std = (2.0 * mae * mae).sqrt();
    let kept: Vec<f64> = residuals
        .iter()
        .map(|r| r.abs())
        .filter(|&r| r <= 5.0 * std)
        .collect();
    if kept.is_empty() {
        return mae;
    }
    kept.iter().sum::<f64>() / kept.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sigmoid_fit_is_a_stationary_point() {
        let dec: Vec<f64> = (0..40).map(|i| (i as f64 - 20.0) / 7.0).collect();
        let pos: Vec<bool> = (0..40).map(|i| (i * 7919) % 13 < (i / 4)).collect();
        let (a, b) = sigmoid_train(&dec, &pos);
        // Gradient of the NLL at (a, b) must vanish.
        let n_pos = pos.iter().filter(|&&p| p).count() as f64;
        let n_neg = 40.0 - n_pos;
        let (mut g1, mut g2) = (0.0, 0.0);
        for (&f, &p) in dec.iter().zip(&pos) {
            let t = if p {
                (n_pos + 1.0) / (n_pos + 2.0)
            } else {
                1.0 / (n_neg + 2.0)
            };
            let pr = sigmoid_predict(f, a, b);
            g1 += f * (t - pr);
            g2 += t - pr;
        }
        assert!(g1.abs() < 1e-4 && g2.abs() < 1e-4, "{g1} {g2}");
        assert!(a < 0.0, "larger decision values must mean class +1");
    }

    /// The weighted negative log-likelihood of Platt's regularized targets at `(a, b)`, written
    /// from its definition `-sum_i w_i (t_i ln p_i + (1 - t_i) ln(1 - p_i))`,
    /// `p_i = 1 / (1 + exp(a f_i + b))`.
    fn nll_by_definition(dec: &[f64], pos: &[bool], w: &[f64], a: f64, b: f64) -> f64 {
        let np: f64 = pos.iter().zip(w).filter(|(p, _)| **p).map(|(_, w)| w).sum();
        let nn: f64 = w.iter().sum::<f64>() - np;
        let mut s = 0.0;
        for ((&f, &p), &wi) in dec.iter().zip(pos).zip(w) {
            let t = if p {
                (np + 1.0) / (np + 2.0)
            } else {
                1.0 / (nn + 2.0)
            };
            let z = a * f + b;
            // ln p = -ln(1 + e^z), ln(1 - p) = z - ln(1 + e^z).
            let l1pe = if z > 0.0 {
                z + (-z).exp().ln_1p()
            } else {
                z.exp().ln_1p()
            };
            s -= wi * (t * -l1pe + (1.0 - t) * (z - l1pe));
        }
        s
    }

    /// Minimizes `g` on `[lo, hi]` by golden-section search on its values (convex `g`).
    fn golden(mut lo: f64, mut hi: f64, g: impl Fn(f64) -> f64) -> f64 {
        let r = (5f64.sqrt() - 1.0) / 2.0;
        for _ in 0..200 {
            let (m1, m2) = (hi - r * (hi - lo), lo + r * (hi - lo));
            if g(m1) <= g(m2) {
                hi = m2;
            } else {
                lo = m1;
            }
        }
        0.5 * (lo + hi)
    }

    /// The Newton fit with intercept (published stop, and run on to rounding) against the
    /// likelihood's minimum found without derivatives: golden section over `A` of the profile
    /// `min_B NLL(A, B)`, itself a golden section over `B` (the NLL is jointly convex, so the
    /// profile is convex). Small data with a clear intercept, unit and integer weights.
    #[test]
    fn sigmoid_with_intercept_minimizes_the_likelihood() {
        for (seed, shift, weighted) in [(1u64, 1.5, false), (2, -2.0, false), (3, 0.7, true)] {
            let mut state = seed;
            let mut u = || {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                (state >> 11) as f64 / (1u64 << 53) as f64
            };
            let n = 40;
            let dec: Vec<f64> = (0..n).map(|_| 4.0 * u() - 2.0).collect();
            // True sigmoid P(+1 | f) = 1 / (1 + exp(-2 f - shift)).
            let pos: Vec<bool> = dec
                .iter()
                .map(|&f| u() < 1.0 / (1.0 + (-2.0 * f - shift).exp()))
                .collect();
            let w: Vec<f64> = (0..n)
                .map(|i| if weighted { (1 + i % 3) as f64 } else { 1.0 })
                .collect();
            let wopt = weighted.then_some(w.as_slice());
            let nll = |a: f64, b: f64| nll_by_definition(&dec, &pos, &w, a, b);
            let a_star = golden(-50.0, 50.0, |a| {
                let b = golden(-50.0, 50.0, |b| nll(a, b));
                nll(a, b)
            });
            let b_star = golden(-50.0, 50.0, |b| nll(a_star, b));
            let best = nll(a_star, b_star);
            assert!(a_star < -0.5, "seed {seed}: slope {a_star}");
            assert!(
                b_star.abs() > 0.3,
                "seed {seed}: intercept {b_star} too small to test"
            );
            for (name, (a, b), tol) in [
                ("published", sigmoid_train_published(&dec, &pos, wopt), 1e-5),
                (
                    "to rounding",
                    sigmoid_train_weighted(&dec, &pos, wopt),
                    1e-6,
                ),
            ] {
                // The published stop leaves a gradient below 1e-5, so (A, B) within about
                // 1e-5 / (smallest Hessian eigenvalue) (measured at most 1.3e-6) and the
                // likelihood within its square (measured 1.5e-13 relative). The golden sections
                // locate the minimum to about sqrt(rounding) (measured 1e-7 from the fit run on
                // to rounding).
                assert!(
                    (a - a_star).abs() <= tol * (1.0 + a_star.abs())
                        && (b - b_star).abs() <= tol * (1.0 + b_star.abs()),
                    "seed {seed} {name}: ({a}, {b}) vs the minimum ({a_star}, {b_star})"
                );
                assert!(
                    nll(a, b) <= best + 1e-12 * best,
                    "seed {seed} {name}: NLL {} above the minimum {best}",
                    nll(a, b)
                );
            }
        }
    }

    #[test]
    fn coupling_sums_to_one_and_respects_consistent_pairs() {
        // Consistent pairwise probabilities from p = (0.5, 0.3, 0.2).
        let p = [0.5, 0.3, 0.2];
        let mut r = vec![vec![0.0; 3]; 3];
        for i in 0..3 {
            for j in 0..3 {
                if i != j {
                    r[i][j] = p[i] / (p[i] + p[j]);
                }
            }
        }
        let est = couple(&r);
        assert!((est.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        for i in 0..3 {
            assert!((est[i] - p[i]).abs() < 1e-3, "{est:?}");
        }
    }
}
