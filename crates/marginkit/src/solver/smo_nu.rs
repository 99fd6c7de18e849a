//! SMO for the nu-SVM duals: the box QP with *two* equality constraints, one per sign of `y`.
//!
//! ```text
//! min_a  1/2 a'Qa + p'a   s.t.  sum_{y_i=+1} a_i = delta_+,  sum_{y_i=-1} a_i = delta_-,
//!                               0 <= a_i <= u_i
//! ```
//! (nu-SVC: `p = 0`, `u_i = 1/l`-style bounds and `delta_+ = delta_- = nu l / 2`; nu-SVR:
//! `2l` variables from [`crate::kernel::qmatrix::SvrQ`]). The class sums are given implicitly
//! by the feasible start: every update moves two variables of the same class, so both sums
//! are preserved. `qp.equality` must be `Sum { delta }` with `delta = y'a` of the start.
//!
//! | paper (Chang & Lin 2001, LIBSVM sec. 4.2) | code                                    |
//! |-------------------------------------------|-----------------------------------------|
//! | `m_+(a), M_+(a)`, `m_-(a), M_-(a)`        | per-class extrema of `-y_t g_t` in `select_nu` |
//! | `r_1, r_2`                                | per-class thresholds in `rho_r`       |
//! | `rho = (r_1 - r_2)/2`, `r = (r_1 + r_2)/2`| `rho_r`                               |
//!
//! **Working set**: WSS3 inside each class; the pair with the smaller second-order objective
//! wins. **Stopping**: `max(m_+ - M_+, m_- - M_-) <= tol`. **Shrinking**: the rule of
//! [`super::smo`] with per-class bands. **Cost per iteration**: as in [`super::smo`] plus one
//! more column (the best `i` of each class).
//!
//! Citation: C.-C. Chang, C.-J. Lin, "Training nu-support vector classifiers: theory and
//! algorithms", Neural Computation 13 (2001); LIBSVM (ACM TIST 2011) section 4.2.
//!
//! The entry point is [`super::smo::Smo`] with `.nu(true)`; this module holds the nu rules it
//! switches to.

use super::smo::{shrink_by, State, TAU};
use crate::kernel::qmatrix::QMatrix;

/// Per-class WSS3. Returns the pair and `Q_ij`, or `None` at convergence; sets the violation.
pub(crate) fn select_nu<Q: QMatrix + ?Sized>(
    st: &mut State,
    q: &mut Q,
    tol: f64,
    viol: &mut f64,
) -> Option<(usize, usize, f64)> {
    let act = st.active;
    // Best i in each class: argmax over I_up of -y g.
    let (mut gp, mut ip, mut gn, mut im) =
        (f64::NEG_INFINITY, usize::MAX, f64::NEG_INFINITY, usize::MAX);
    for t in 0..act {
        if !st.in_up(t) {
            continue;
        }
        let f = -st.yf(t) * st.g[t];
        if st.y[t] > 0 {
            if f >= gp {
                gp = f;
                ip = t;
            }
        } else if f >= gn {
            gn = f;
            im = t;
        }
    }
    if ip == usize::MAX && im == usize::MAX {
        *viol = f64::NEG_INFINITY;
        return None;
    }
    let a = if ip != usize::MAX { ip } else { im };
    let b = if im != usize::MAX { im } else { ip };
    let (cp, cm) = q.pair(a, b, act);
    let (mut mp, mut mm) = (f64::INFINITY, f64::INFINITY);
    let (mut best, mut jbest, mut qbest) = (f64::INFINITY, usize::MAX, 0.0f32);
    for j in 0..act {
        if !st.in_low(j) {
            continue;
        }
        let yj = st.yf(j);
        let f = -yj * st.g[j];
        let (gi, i, col) = if yj > 0.0 {
            mp = mp.min(f);
            (gp, ip, cp)
        } else {
            mm = mm.min(f);
            (gn, im, cm)
        };
        if i == usize::MAX {
            continue;
        }
        let bd = gi - f;
        if bd > 0.0 {
            // Same class: y_i y_j = 1, so Q_ij = K_ij.
            let mut quad = st.qd[i] + st.qd[j] - 2.0 * f64::from(col[j]);
            if quad <= 0.0 {
                quad = TAU;
            }
            let obj = -(bd * bd) / quad;
            if obj <= best {
                best = obj;
                jbest = j;
                qbest = col[j];
            }
        }
    }
    *viol = (gp - mp).max(gn - mm);
    if *viol < tol || jbest == usize::MAX {
        return None;
    }
    let i = if st.y[jbest] > 0 { ip } else { im };
    Some((i, jbest, f64::from(qbest)))
}

/// Shrinking with per-class bands `[M_c, m_c]`.
pub(crate) fn shrink_nu<Q: QMatrix + ?Sized>(st: &mut State, q: &mut Q, tol: f64) {
    // Index 0: y = +1, 1: y = -1.
    let mut m_up = [f64::NEG_INFINITY; 2];
    let mut m_low = [f64::INFINITY; 2];
    for t in 0..st.active {
        let c = usize::from(st.y[t] < 0);
        let f = -st.yf(t) * st.g[t];
        if st.in_up(t) {
            m_up[c] = m_up[c].max(f);
        }
        if st.in_low(t) {
            m_low[c] = m_low[c].min(f);
        }
    }
    if !st.unshrunk && (m_up[0] - m_low[0]).max(m_up[1] - m_low[1]) <= 10.0 * tol {
        st.unshrunk = true;
        st.reconstruct_gradient(q);
    }
    let out = |st: &State, t: usize| -> bool {
        let c = usize::from(st.y[t] < 0);
        let f = -st.yf(t) * st.g[t];
        match (st.in_up(t), st.in_low(t)) {
            (false, true) => f > m_up[c],
            (true, false) => f < m_low[c],
            _ => false,
        }
    };
    shrink_by(st, q, out);
}

/// Per-class thresholds `r_c` (mean of `g` over free variables of the class, else the
/// midpoint of its bounds); returns `(rho, r) = ((r_1 - r_2)/2, (r_1 + r_2)/2)`.
pub(crate) fn rho_r(st: &State) -> (f64, f64) {
    let mut ub = [f64::INFINITY; 2];
    let mut lb = [f64::NEG_INFINITY; 2];
    let mut sum = [0.0; 2];
    let mut nf = [0usize; 2];
    for i in 0..st.active {
        let c = usize::from(st.y[i] < 0);
        let g = st.g[i];
        match st.status[i] {
            super::smo::Bound::Upper => lb[c] = lb[c].max(g),
            super::smo::Bound::Lower => ub[c] = ub[c].min(g),
            super::smo::Bound::Free => {
                sum[c] += g;
                nf[c] += 1;
            }
        }
    }
    let r = |c: usize| {
        if nf[c] > 0 {
            sum[c] / nf[c] as f64
        } else if ub[c].is_finite() && lb[c].is_finite() {
            0.5 * (ub[c] + lb[c])
        } else if ub[c].is_finite() {
            ub[c]
        } else if lb[c].is_finite() {
            lb[c]
        } else {
            0.0
        }
    };
    let (r1, r2) = (r(0), r(1));
    (0.5 * (r1 - r2), 0.5 * (r1 + r2))
}
