//! The tolerance policy TP-1 (`docs/tolerance-policy.md`) as code: every comparison in the
//! oracle tests goes through these helpers, so a rule changes in exactly one place.
//!
//! Each check returns `Err(message)` instead of panicking, so a test that loops over many
//! configurations can collect every mismatch and report them together.

#![allow(dead_code)]

/// Stopping tolerance at or below which a run counts as "tight" (`-e 1e-5`).
pub const TIGHT_EPS: f64 = 1e-5;
/// Rounding slack added to the KKT and gap checks.
pub const ROUNDING: f64 = 1e-9;

/// True when both sides ran at tight tolerance.
pub fn is_tight(eps_ours: f64, eps_reference: f64) -> bool {
    eps_ours <= TIGHT_EPS && eps_reference <= TIGHT_EPS
}

/// Allowed relative objective difference against a reference solver: 1e-3 at the default
/// `-e 1e-3`, 1e-5 when both sides ran with `-e 1e-5` or tighter.
pub fn objective_rel_tol(tight: bool) -> f64 {
    if tight {
        1e-5
    } else {
        1e-3
    }
}

fn rel_diff(a: f64, b: f64) -> f64 {
    if a == b {
        0.0
    } else {
        (a - b).abs() / a.abs().max(b.abs())
    }
}

/// Dual objective against a reference value.
pub fn check_objective(what: &str, ours: f64, reference: f64, tight: bool) -> Result<(), String> {
    let tol = objective_rel_tol(tight);
    let d = rel_diff(ours, reference);
    if d <= tol && ours.is_finite() {
        Ok(())
    } else {
        Err(format!(
            "{what}: objective {ours:.12e} vs {reference:.12e} (relative {d:.3e} > {tol:.0e})"
        ))
    }
}

/// rho (threshold) against a reference: `|ours - ref| <= 10 eps (1 + |ref|)`.
pub fn check_rho(what: &str, ours: f64, reference: f64, eps: f64) -> Result<(), String> {
    let tol = 10.0 * eps * (1.0 + reference.abs());
    let d = (ours - reference).abs();
    if d <= tol {
        Ok(())
    } else {
        Err(format!(
            "{what}: rho {ours:.12e} vs {reference:.12e} (|diff| {d:.3e} > {tol:.3e})"
        ))
    }
}

/// Unit roundoff of `f32` (`2^-24`): the kernel cache stores `Q` in single precision, as
/// LIBSVM's does.
pub const F32_UNIT_ROUNDOFF: f64 = 5.960_464_477_539_063e-8;

/// KKT violation from the independent checker: `<= tol + 2 u_f32 qa_abs + 1e-9`, where
/// `qa_abs = max_i sum_j |Q_ij| a_j`. The engine measures its violation on gradients built from
/// f32-cached columns, each off by at most `u_f32 qa_abs` from the exact gradient; the violation
/// is a difference of two gradient entries, hence the factor 2. Pass `qa_abs = 0` for an engine
/// that works in f64 throughout.
pub fn check_violation(what: &str, violation: f64, tol: f64, qa_abs: f64) -> Result<(), String> {
    let bound = tol + 2.0 * F32_UNIT_ROUNDOFF * qa_abs + ROUNDING;
    if violation <= bound {
        Ok(())
    } else {
        Err(format!(
            "{what}: KKT violation {violation:.3e} > tol {tol:.0e} + f32 rounding (bound {bound:.3e})"
        ))
    }
}

/// Duality gap from the independent checker: never negative beyond rounding, and consistent with
/// the violation. For a feasible point whose maximal violating pair gap is `v`, every term of the
/// checker's gap is at most `u_i v`, so `gap <= v sum(u) (+ rounding)`; `scale` is `sum(u)`.
pub fn check_gap(what: &str, gap: f64, violation: f64, scale: f64) -> Result<(), String> {
    let slack = ROUNDING * (1.0 + scale);
    if gap < -slack {
        return Err(format!("{what}: negative duality gap {gap:.3e}"));
    }
    let bound = violation * scale + slack;
    if gap > bound {
        return Err(format!(
            "{what}: duality gap {gap:.3e} inconsistent with violation {violation:.3e} (bound {bound:.3e})"
        ));
    }
    Ok(())
}

/// Allowed absolute difference of one decision value: `1e-3 (1 + |v|)` at tight tolerance;
/// at a looser stopping tolerance `eps` the decision function is only known to `O(eps)`, so the
/// bound widens to `10 eps (1 + |v|)` (the same factor as rho) when that is larger.
pub fn decision_tol(value: f64, eps: f64) -> f64 {
    1e-3f64.max(10.0 * eps) * (1.0 + value.abs())
}

/// Decision values, row by row (one value per class pair).
pub fn check_decisions(
    what: &str,
    ours: &[Vec<f64>],
    reference: &[Vec<f64>],
    eps: f64,
) -> Result<(), String> {
    if ours.len() != reference.len() {
        return Err(format!(
            "{what}: {} decision rows vs {}",
            ours.len(),
            reference.len()
        ));
    }
    let mut bad = Vec::new();
    for (i, (o, r)) in ours.iter().zip(reference).enumerate() {
        if o.len() != r.len() {
            return Err(format!(
                "{what}: row {i} has {} decision values vs {}",
                o.len(),
                r.len()
            ));
        }
        for (k, (&a, &b)) in o.iter().zip(r).enumerate() {
            // NaN on either side fails too.
            let ok = (a - b).abs() <= decision_tol(b, eps);
            if !ok {
                bad.push(format!("row {i}[{k}]: {a:.9e} vs {b:.9e}"));
            }
        }
    }
    if bad.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{what}: {} decision values off (first: {})",
            bad.len(),
            bad[..bad.len().min(3)].join("; ")
        ))
    }
}

/// Predicted labels: equal, except rows where the reference decision values put the row on the
/// boundary (some pairwise value within `1e-6 (1 + max |dec|)` of 0, or within the
/// decision-value tolerance of 0 when the solve was not tight; such a row may flip).
pub fn check_labels(
    what: &str,
    ours: &[f64],
    reference: &[f64],
    reference_dec: &[Vec<f64>],
    eps: f64,
) -> Result<(), String> {
    if ours.len() != reference.len() {
        return Err(format!(
            "{what}: {} predictions vs {}",
            ours.len(),
            reference.len()
        ));
    }
    let max_abs = reference_dec
        .iter()
        .flatten()
        .fold(0.0f64, |m, v| m.max(v.abs()));
    let band = |v: f64| {
        let strict = 1e-6 * (1.0 + max_abs);
        if eps <= TIGHT_EPS {
            strict
        } else {
            strict.max(decision_tol(v, eps))
        }
    };
    let mut bad = Vec::new();
    for i in 0..ours.len() {
        if ours[i] != reference[i] {
            let on_boundary = reference_dec
                .get(i)
                .is_some_and(|d| d.iter().any(|&v| v.abs() <= band(v)));
            if !on_boundary {
                bad.push(format!("row {i}: {} vs {}", ours[i], reference[i]));
            }
        }
    }
    if bad.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{what}: {} labels differ (first: {})",
            bad.len(),
            bad[..bad.len().min(3)].join("; ")
        ))
    }
}

/// Number of support vectors: equal at tight tolerance, within 2% at the default.
pub fn check_nsv(what: &str, ours: usize, reference: usize, tight: bool) -> Result<(), String> {
    let ok = if tight {
        ours == reference
    } else {
        (ours as f64 - reference as f64).abs() <= 0.02 * reference as f64
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{what}: nSV {ours} vs {reference} ({})",
            if tight {
                "tight: must be equal"
            } else {
                "default: within 2%"
            }
        ))
    }
}

/// Same problem solved along two paths (shrinking, cache, permutation, warm start): relative
/// objective difference `<= 1e-6` at tight tolerance.
pub fn check_same_optimum(what: &str, a: f64, b: f64) -> Result<(), String> {
    let d = rel_diff(a, b);
    if d <= 1e-6 {
        Ok(())
    } else {
        Err(format!(
            "{what}: objectives {a:.12e} and {b:.12e} differ (relative {d:.3e} > 1e-6)"
        ))
    }
}

/// The same model evaluated by two implementations (a model file read by our reader and by
/// LIBSVM, or a model we wrote and LIBSVM reads): decision values within `1e-9 (1 + |v|)` (only
/// the summation order differs).
pub fn check_same_model(
    what: &str,
    ours: &[Vec<f64>],
    reference: &[Vec<f64>],
) -> Result<(), String> {
    if ours.len() != reference.len() {
        return Err(format!(
            "{what}: {} rows vs {}",
            ours.len(),
            reference.len()
        ));
    }
    for (i, (o, r)) in ours.iter().zip(reference).enumerate() {
        if o.len() != r.len() {
            return Err(format!(
                "{what}: row {i}: {} values vs {}",
                o.len(),
                r.len()
            ));
        }
        for (k, (&a, &b)) in o.iter().zip(r).enumerate() {
            let ok = (a - b).abs() <= SAME_MODEL_REL * (1.0 + b.abs());
            if !ok {
                return Err(format!("{what}: row {i}[{k}]: {a:.17e} vs {b:.17e}"));
            }
        }
    }
    Ok(())
}

/// Relative bound of [`check_same_model`].
pub const SAME_MODEL_REL: f64 = 1e-9;

/// Linear models (LIBLINEAR's primal `P(w) = 1/2 |w|^2 + loss` is 1-strongly convex):
/// `|w - w*|^2 <= 2 (P(w) - P*)`, so two solutions with suboptimalities `d_a`, `d_b` give
/// decision values on a row of norm `x_norm` that differ by at most
/// `x_norm (sqrt(2 d_a) + sqrt(2 d_b))` (plus rounding).
pub fn linear_decision_bound(x_norm: f64, d_a: f64, d_b: f64) -> f64 {
    x_norm * ((2.0 * d_a).sqrt() + (2.0 * d_b).sqrt()) + ROUNDING
}

/// Collects failures of many checks; panics once with all of them.
#[derive(Default)]
pub struct Failures(Vec<String>);

impl Failures {
    /// Records a failed check (prefixed with `ctx`).
    pub fn push(&mut self, ctx: &str, r: Result<(), String>) {
        if let Err(e) = r {
            self.0.push(format!("[{ctx}] {e}"));
        }
    }
    /// Records a plain failure message.
    pub fn fail(&mut self, ctx: &str, msg: impl Into<String>) {
        self.0.push(format!("[{ctx}] {}", msg.into()));
    }
    /// Panics with every recorded failure.
    pub fn assert_none(self) {
        assert!(
            self.0.is_empty(),
            "{} mismatches:\n{}",
            self.0.len(),
            self.0.join("\n")
        );
    }
}
