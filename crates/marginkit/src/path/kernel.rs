//! The path's kernel engine: the planned QP engine (pair or block SMO, `Equality::None`,
//! [`qp_engine::solve_permuted`]) on one [`crate::kernel::qmatrix::SvcQ`] (or its bias
//! augmentation `K + B^2`) whose cache serves every point; the matrix stays in the solver's
//! order between solves, only the permutation is tracked.

use super::checkpoint::{PathCheckpoint, RefState};
use super::engine::{free_violators, params_c_max, Account, Ctx, PathEngine, Reference, Solved};
use super::result::PathPoint;
use crate::error::FitError;
use crate::kernel::cache::CacheStats;
use crate::kernel::qmatrix::QMatrix;
use crate::screening::{self, KernelSketch, RuleInputs};
use crate::solver::engine::{self as qp_engine, Plan};
use crate::solver::{BoxQp, Equality, Observer, Status, VarFix};

/// The planned engine on a kernel matrix `q` kept in the solver's order: position `k` holds
/// sample `perm[k]`, and `pos` is the inverse (sample -> position).
pub(super) struct KernelEngine<Q> {
    pub q: Q,
    plan: Plan,
    perm: Vec<usize>,
    pos: Vec<usize>,
    sketch: KernelSketch,
    /// The linear term `-1`.
    p: Vec<f64>,
}

impl<Q: QMatrix> KernelEngine<Q> {
    /// The engine over `q`, whose cache was sized by `plan`.
    pub fn new(q: Q, plan: Plan) -> Self {
        let n = q.n();
        Self {
            q,
            plan,
            perm: (0..n).collect(),
            pos: (0..n).collect(),
            sketch: KernelSketch::new(n),
            p: vec![-1.0; n],
        }
    }

    fn sync_pos(&mut self) {
        for (k, &o) in self.perm.iter().enumerate() {
            self.pos[o] = k;
        }
    }
}

impl<Q: QMatrix> PathEngine for KernelEngine<Q> {
    type Before = (KernelSketch, Vec<usize>);

    fn initial_reference(
        &mut self,
        ctx: &Ctx<'_>,
        grid: &mut Option<Vec<f64>>,
        c_min: &mut Option<f64>,
    ) -> Option<Reference> {
        // Lemma 9: for the epsilon path only (the only grid that needs C_min; it costs n
        // columns).
        if grid.is_some() {
            return None;
        }
        let n = self.q.n();
        let mut q1 = vec![0.0; n];
        for j in 0..n {
            let col = self.q.column(j, n);
            for (s, &v) in q1.iter_mut().zip(col) {
                *s += f64::from(v);
            }
        }
        let m = q1.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        if m > 0.0 && (1.0 / m).is_finite() {
            let c0 = 1.0 / m;
            *c_min = Some(c0);
            Some(Reference {
                c: c0,
                alpha: vec![c0; n],
                g: q1.iter().map(|v| c0 * v).collect(),
                w: Vec::new(),
            })
        } else {
            // Q1 <= 0: a = C 1 is optimal for every C (digest sec. 3.1); a two-point path.
            *grid = Some(vec![1.0, params_c_max(&ctx.params.grid)]);
            Some(Reference {
                c: 1.0,
                alpha: vec![1.0; n],
                g: q1,
                w: Vec::new(),
            })
        }
    }

    fn resume(
        &mut self,
        _ctx: &Ctx<'_>,
        ck: &PathCheckpoint,
    ) -> Result<Option<Reference>, FitError> {
        // Checked by `check_fits`: lengths and the permutation.
        self.sketch =
            KernelSketch::from_parts(ck.sketch_s.clone(), ck.sketch_a.clone(), ck.flips as usize);
        permute_to(&mut self.q, &ck.perm);
        self.perm.clone_from(&ck.perm);
        self.sync_pos();
        Ok(ck.reference.as_ref().map(|r| Reference {
            c: r.c,
            alpha: r.alpha.clone(),
            g: r.g.clone(),
            w: Vec::new(),
        }))
    }

    fn before(&self) -> Self::Before {
        (self.sketch.clone(), self.perm.clone())
    }

    fn checkpoint(
        &mut self,
        points: &[PathPoint],
        reference: Option<Reference>,
        (sketch, perm): Self::Before,
    ) -> PathCheckpoint {
        let (s, h, flips) = sketch.parts();
        PathCheckpoint {
            fingerprint: 0,
            run: None,
            linear: false,
            c_min_trivial: None,
            points: points.to_vec(),
            reference: reference.map(|r| RefState {
                c: r.c,
                alpha: r.alpha,
                g: r.g,
                w: None,
            }),
            previous: None,
            sketch_s: s.to_vec(),
            sketch_a: h.to_vec(),
            sketch_b: Vec::new(),
            flips: flips as u64,
            perm,
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
        if c <= r.c {
            return (0, 0);
        }
        let n = self.q.n();
        if rule.needs_s() {
            let mut view = InOrder::new(&mut self.q, &self.perm, &self.pos);
            self.sketch.update(&mut view, &r.g, r.c, c);
        }
        let (a2, hinge) = screening::reference_scalars(&r.alpha, &r.g);
        let (ah, sh, cnt) = self.sketch.scalars(&r.alpha);
        let mut qd = vec![0.0; n];
        for (&o, &d) in self.perm.iter().zip(self.q.diag()) {
            qd[o] = d;
        }
        let s = screening::screen(
            rule,
            &RuleInputs {
                c_ref: r.c,
                c,
                g: &r.g,
                qd: &qd,
                h: rule.needs_s().then(|| self.sketch.h()),
                ref_norm2: a2,
                ref_dot_s: ah,
                s_norm2: sh,
                s_count: cnt,
                hinge_ref: hinge,
            },
        );
        *fix = s.fixes();
        (s.n_r, s.n_l)
    }

    fn solve(
        &mut self,
        ctx: &Ctx<'_>,
        reference: Option<&Reference>,
        c: f64,
        fix: &mut [VarFix],
        obs: &mut dyn Observer,
    ) -> Result<Option<Solved>, FitError> {
        let n = self.q.n();
        let mut alpha: Vec<f64> = match reference {
            Some(r) => warm_start(&r.alpha, r.c, c),
            None => vec![0.0; n],
        };
        let upper = vec![c; n];
        let (mut freed, mut solves, mut iterations) = (0usize, 0usize, 0u64);
        loop {
            let qp = BoxQp {
                p: &self.p,
                y: &ctx.y,
                upper: &upper,
                equality: Equality::None,
                fixed: Some(fix),
            };
            // `q` is left in the solver's order (perm updated, also on error).
            let info = qp_engine::solve_permuted(
                &self.plan,
                &mut self.q,
                &qp,
                &mut alpha,
                &ctx.settings,
                obs,
                &mut self.perm,
            );
            self.sync_pos();
            let info = info?;
            if info.status == Status::Interrupted {
                // Out at once: no O(n x nSV) margin pass for a point that is not finished.
                return Ok(None);
            }
            solves += 1;
            iterations += info.iterations;
            let g = full_margins(&mut self.q, &alpha, &self.perm, &self.pos);
            let f = free_violators(fix, &g, &alpha, c, ctx.params.tol, false);
            freed += f;
            if f == 0 || info.status != Status::Converged {
                return Ok(Some(Solved {
                    alpha,
                    g,
                    w: None,
                    account: Account {
                        status: info.status,
                        solver_violation: info.max_violation,
                        freed,
                        solves,
                        iterations,
                    },
                }));
            }
        }
    }

    fn retire(&mut self, _old: Option<Reference>) {}
}

/// The warm start at `c` from the solution at `c_ref`: the solution itself (clipped to `[0, c]`,
/// a no-op on an increasing path). The scaled point `(c / c_ref) a` (which keeps bounded
/// variables at the bound) was measured slower: 30% more SMO iterations on digits and
/// breast_cancer, on both the log grid and the epsilon-path.
fn warm_start(alpha: &[f64], _c_ref: f64, c: f64) -> Vec<f64> {
    alpha.iter().map(|&a| a.clamp(0.0, c)).collect()
}

/// Brings a fresh (identity-order) `q` into the order `perm` (position `k` holds sample
/// `perm[k]`; `perm` is a checked permutation).
fn permute_to<Q: QMatrix>(q: &mut Q, perm: &[usize]) {
    let n = perm.len();
    let mut cur: Vec<usize> = (0..n).collect();
    let mut pos: Vec<usize> = (0..n).collect();
    for k in 0..n {
        let j = pos[perm[k]];
        if j != k {
            q.swap_index(k, j);
            let (a, b) = (cur[k], cur[j]);
            cur.swap(k, j);
            pos[a] = j;
            pos[b] = k;
        }
    }
}

/// `g = Qa` over all samples (original order) from the columns of the nonzero entries; position
/// `k` of `q` holds sample `perm[k]`, `pos` is the inverse. Each `g_i` sums over `j` ascending
/// whatever the order of `q`.
fn full_margins<Q: QMatrix>(q: &mut Q, alpha: &[f64], perm: &[usize], pos: &[usize]) -> Vec<f64> {
    let n = alpha.len();
    // Accumulated in q's order (sequential), scattered once.
    let mut gq = vec![0.0; n];
    for (j, &a) in alpha.iter().enumerate() {
        if a != 0.0 {
            let col = q.column(pos[j], n);
            for (gi, &v) in gq.iter_mut().zip(col) {
                *gi += a * f64::from(v);
            }
        }
    }
    let mut g = vec![0.0; n];
    for (&o, &v) in perm.iter().zip(&gq) {
        g[o] = v;
    }
    g
}

/// A permuted [`QMatrix`] seen in the original sample order (for the sketch update, which reads
/// whole columns by sample index). Position `k` of `q` holds sample `perm[k]`; `pos` is the
/// inverse. Each column costs one gather of `n` entries.
struct InOrder<'a, Q> {
    q: &'a mut Q,
    perm: &'a [usize],
    pos: &'a [usize],
    /// The diagonal in the original order.
    diag: Vec<f64>,
    buf: Vec<f32>,
    buf2: Vec<f32>,
}

impl<'a, Q: QMatrix> InOrder<'a, Q> {
    fn new(q: &'a mut Q, perm: &'a [usize], pos: &'a [usize]) -> Self {
        let n = q.n();
        let mut diag = vec![0.0; n];
        for (&o, &d) in perm.iter().zip(q.diag()) {
            diag[o] = d;
        }
        Self {
            q,
            perm,
            pos,
            diag,
            buf: vec![0.0; n],
            buf2: vec![0.0; n],
        }
    }
    fn gather(q: &mut Q, perm: &[usize], at: usize, out: &mut [f32]) {
        let col = q.column(at, perm.len());
        for (&o, &v) in perm.iter().zip(col) {
            out[o] = v;
        }
    }
}

impl<Q: QMatrix> QMatrix for InOrder<'_, Q> {
    fn n(&self) -> usize {
        self.q.n()
    }
    fn diag(&self) -> &[f64] {
        &self.diag
    }
    fn column(&mut self, i: usize, len: usize) -> &[f32] {
        Self::gather(self.q, self.perm, self.pos[i], &mut self.buf);
        &self.buf[..len]
    }
    fn pair(&mut self, i: usize, j: usize, len: usize) -> (&[f32], &[f32]) {
        Self::gather(self.q, self.perm, self.pos[i], &mut self.buf);
        Self::gather(self.q, self.perm, self.pos[j], &mut self.buf2);
        (&self.buf[..len], &self.buf2[..len])
    }
    fn swap_index(&mut self, i: usize, j: usize) {
        // A view in the original order has no order of its own to change: swap the samples'
        // positions in `q` would break `perm`, and nothing that reads the view swaps.
        debug_assert!(false, "InOrder is a read-only view (swap_index({i}, {j}))");
    }
    fn cache_stats(&self) -> CacheStats {
        self.q.cache_stats()
    }
}

/// `Q + B^2 y y'`: the kernel `K + B^2` of a constant feature `B` appended to every sample.
pub(super) struct Augmented<Q> {
    inner: Q,
    y: Vec<f64>,
    b2: f64,
    diag: Vec<f64>,
    buf_a: Vec<f32>,
    buf_b: Vec<f32>,
}

impl<Q: QMatrix> Augmented<Q> {
    pub fn new(inner: Q, y: &[i8], b2: f64) -> Self {
        let diag = inner.diag().iter().map(|d| d + b2).collect();
        let n = inner.n();
        Self {
            inner,
            y: y.iter().map(|&v| f64::from(v)).collect(),
            b2,
            diag,
            buf_a: vec![0.0; n],
            buf_b: vec![0.0; n],
        }
    }
}

fn add_outer(out: &mut [f32], col: &[f32], yi: f64, y: &[f64], b2: f64) {
    for ((o, &v), &yk) in out.iter_mut().zip(col).zip(y) {
        *o = (f64::from(v) + yi * yk * b2) as f32;
    }
}

impl<Q: QMatrix> QMatrix for Augmented<Q> {
    fn n(&self) -> usize {
        self.inner.n()
    }
    fn diag(&self) -> &[f64] {
        &self.diag
    }
    fn column(&mut self, i: usize, len: usize) -> &[f32] {
        let col = self.inner.column(i, len);
        add_outer(&mut self.buf_a[..len], col, self.y[i], &self.y, self.b2);
        &self.buf_a[..len]
    }
    fn pair(&mut self, i: usize, j: usize, len: usize) -> (&[f32], &[f32]) {
        let (ci, cj) = self.inner.pair(i, j, len);
        add_outer(&mut self.buf_a[..len], ci, self.y[i], &self.y, self.b2);
        add_outer(&mut self.buf_b[..len], cj, self.y[j], &self.y, self.b2);
        (&self.buf_a[..len], &self.buf_b[..len])
    }
    fn swap_index(&mut self, i: usize, j: usize) {
        self.inner.swap_index(i, j);
        self.y.swap(i, j);
        self.diag.swap(i, j);
    }
    fn cache_stats(&self) -> CacheStats {
        self.inner.cache_stats()
    }
}
