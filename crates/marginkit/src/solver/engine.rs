//! Which QP engine solves a kernel dual ([`SvmSolver`]), how the cache budget is shared between
//! the LRU column cache and the block engine's working-set columns ([`plan`]), and the entry
//! points every kernel method calls with its plan:
//!
//! | entry point        | what the caller has                                        | callers |
//! |--------------------|------------------------------------------------------------|---------|
//! | [`solve`]          | a start `alpha`; `q` back in the caller's order on exit     | SVM training, robust SVM, AID, ODM |
//! | [`solve_permuted`] | `q` kept in the solver's order between solves (`perm`)     | the regularization path |
//! | [`solve_with_gradient`] | the start's gradient terms; the final gradient returned | AID's aggregated linear problems and its exact finish |
//!
//! The pair engine ([`super::smo`]) and the block engine ([`super::block`]) share the state
//! ([`super::smo::State`]: bounds, fixed variables folded into `p`, the permutation, `g_bar`),
//! so the wrappers above build the state once and hand it to the planned engine's main loop
//! ([`Plan`]): the block engine runs every problem the pair engine runs in its one-equality
//! and no-equality modes, and the wrappers are not duplicated per engine.
//!
//! The block engine fetches about `q/2` columns for hundreds of local steps, where the pair
//! engine recomputes a whole column for most of its pair steps when the cache holds a small
//! part of the kernel matrix; and it computes its columns together, in register tiles that read
//! each row's features once for many columns, where the pair engine computes one at a time.
//! [`SvmSolver::Auto`] chooses by both: the block engine when the cache holds fewer than
//! `n /` [`AUTO_BLOCK_SHARE`] columns of length `n` (with `-m 200`, from about 58,000 samples),
//! or when `n` times the values a kernel entry reads per row ([`row_cost`]) is at least
//! [`AUTO_BLOCK_WORK`]; the pair engine otherwise. Measured on RBF C-SVC, `-m 200`, shrinking
//! on, 1 and 2 threads (`bench/results/block_smo.md`, `block_smo_100k.md`): on blobs d = 20 the
//! engines are within 7% of each other at 50,000 samples, the pair engine is 1.5-1.9x faster
//! at 20,000 and the block engine faster at 100,000 (1.9x at 1 thread, 1.3x at 2); on blobs of
//! 20,000 samples the pair engine is 1.3x faster at d = 50 and the block engine 1.3-1.9x faster
//! at d = 100; on Fashion-MNIST (d = 784) the pair engine is faster at 2,000 samples, the two
//! are even at 3,000 and the block engine is 2.4-2.9x faster at 5,000. Every formulation takes
//! the same rule, the nu ones included.
//!
//! A subproblem resumed from a snapshot continues on the engine that wrote it
//! ([`super::smo::SmoSnapshot::engine`]), whatever [`SvmSolver`] says, so that the
//! continuation replays the iterations of the uninterrupted solve.

use super::block::{self, BlockSettings, MAX_WORKING_SET};
use super::smo::{self, Smo, SmoSolution, State, WarmGradient};
use super::{BoxQp, Equality, Observer, SolveInfo, SolverSettings, VarFix};
use crate::data::Features;
use crate::error::SolveError;
use crate::kernel::qmatrix::QMatrix;
use crate::kernel::KernelSpec;

/// The QP engine of the kernel duals: SVM training (`SvmParams::engine`, `--solver`) and the
/// subproblems of the regularization path, robust SVM, AID-SVM and ODM (their `qp_engine`,
/// `--solver`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SvmSolver {
    /// Pair SMO with shrinking and the LRU column cache ([`crate::solver::smo`]).
    Smo,
    /// Block working-set SMO ([`crate::solver::block`]): the one-equality and no-equality
    /// problems (C-SVC, one-class, epsilon-SVR; the path's, robust SVM's, AID's and ODM's
    /// duals) and the nu formulations.
    Block,
    /// The engine measured faster for the problem's size, rows and cache: the block engine
    /// when the cache holds fewer than 1/64 of the kernel matrix's columns
    /// ([`AUTO_BLOCK_SHARE`]; with `-m 200`, from about 58,000 samples) or when the samples
    /// times the values per row reach [`AUTO_BLOCK_WORK`] (e.g. from about 2,550 samples of 784
    /// features), the pair SMO otherwise.
    #[default]
    Auto,
}

/// [`SvmSolver::Auto`] runs the block engine when the cache holds fewer than `n / 64` columns.
pub(crate) const AUTO_BLOCK_SHARE: usize = 64;
/// [`SvmSolver::Auto`] runs the block engine when `n` times [`row_cost`] is at least this: a
/// column is then costly enough that computing columns together pays for the block engine's
/// gradient passes (blobs 20,000 x 100 and Fashion-MNIST from 3,000 rows are above it; blobs
/// 20,000 x 50 and Fashion-MNIST 2,000 rows below).
pub(crate) const AUTO_BLOCK_WORK: usize = 2_000_000;

/// The values a kernel entry reads per row of `x`: the features of a dense row, the mean
/// stored entries of sparse ones (rounded up); 1 for a precomputed kernel, whose entries are
/// looked up.
pub(crate) fn row_cost(x: &Features, kernel: KernelSpec) -> usize {
    cost_of(kernel, stored_values(x), x.n_rows())
}

/// The values `x` stores: every cell of dense rows, the entries of sparse ones.
pub(crate) fn stored_values(x: &Features) -> usize {
    match x {
        Features::Dense(m) => m.n_rows() * m.n_cols(),
        Features::Sparse(m) => m.nnz(),
    }
}

/// [`row_cost`] of rows that store `stored` values in all (a sharded data set's totals).
pub(crate) fn cost_of(kernel: KernelSpec, stored: usize, rows: usize) -> usize {
    match kernel {
        KernelSpec::Precomputed => 1,
        _ => stored.div_ceil(rows.max(1)),
    }
}

impl SvmSolver {
    /// The name `--solver` takes (`smo`, `block`, `auto`).
    pub fn as_str(self) -> &'static str {
        match self {
            SvmSolver::Smo => "smo",
            SvmSolver::Block => "block",
            SvmSolver::Auto => "auto",
        }
    }
}

/// The engine and the memory of one solve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Bytes for the Q matrix (its copy of the rows and its LRU cache).
    pub cache_bytes: usize,
    /// The block engine's settings when it runs.
    pub block: Option<BlockSettings>,
}

/// The plan of `engine` for a budget of `cache_bytes` and `n` variables whose kernel entries
/// read `row_cost` values a row ([`SvmSolver::Auto`] resolved by the share of the columns the
/// budget holds and by the work of a column): the whole budget for the pair engine's cache; for
/// the block engine, half of it, at most [`MAX_WORKING_SET`] f32 columns of `n` rows
/// (SVM training passes its samples, the other methods their variables), for the working set's
/// columns and the rest for the LRU cache, which serves columns re-entering the set.
pub(crate) fn plan(engine: SvmSolver, cache_bytes: u64, n: usize, row_cost: usize) -> Plan {
    let total = usize::try_from(cache_bytes).unwrap_or(usize::MAX);
    let block = match engine {
        SvmSolver::Smo => false,
        SvmSolver::Auto => {
            (total / (4 * n.max(1))).saturating_mul(AUTO_BLOCK_SHARE) < n
                || n.saturating_mul(row_cost) >= AUTO_BLOCK_WORK
        }
        SvmSolver::Block => true,
    };
    match block {
        false => Plan {
            cache_bytes: total,
            block: None,
        },
        true => {
            let full = 4 * n.max(1) * MAX_WORKING_SET;
            let buffer = (total / 2).min(full);
            Plan {
                cache_bytes: total - buffer,
                block: Some(BlockSettings {
                    working_set: None,
                    buffer_bytes: buffer as u64,
                }),
            }
        }
    }
}

impl Plan {
    /// The planned engine's main loop on a built state (the one-equality or no-equality
    /// problem, as `equality` says); leaves `st` in the solver's order.
    fn iterate<Q: QMatrix>(
        &self,
        st: &mut State,
        q: &mut Q,
        equality: Equality,
        settings: &SolverSettings,
        obs: &mut dyn Observer,
    ) -> Result<SolveInfo, SolveError> {
        match &self.block {
            Some(b) => block::iterate_plain(st, q, equality, settings, b, obs),
            None => smo::iterate_plain(st, q, equality, settings, obs),
        }
    }
}

/// Runs the planned engine on the problem `smo` describes (one equality or none as `qp` says,
/// or the nu problem), with `smo`'s resume and snapshot options: the block engine when
/// planned, the pair engine otherwise; a solve that continues a snapshot must be planned on
/// the snapshot's engine ([`crate::svm::SvmValidParams`]' planned engine does so). `alpha` holds
/// the solution on exit and `q` is back in the caller's order.
///
/// # Errors
/// As [`Smo::solve`] and [`block::run`].
pub(crate) fn solve<Q: QMatrix>(
    plan: &Plan,
    smo: &Smo<'_>,
    q: &mut Q,
    qp: &BoxQp<'_>,
    alpha: &mut [f64],
    obs: &mut dyn Observer,
) -> Result<SmoSolution, SolveError> {
    match &plan.block {
        Some(b) => block::run(q, qp, alpha, smo, b, obs),
        None => smo.solve(q, qp, alpha, obs),
    }
}

/// [`solve`] on a `q` that is kept permuted between solves (the regularization path): position
/// `k` of `q` holds original variable `perm[k]`; `qp` and `alpha` are in the original order.
/// `q` is not restored on exit: it stays in the solver's last order and `perm` is updated to
/// it (also on error), so the next solve starts with the fixed variables mostly in the tail
/// already and the cached columns are not permuted back and forth.
///
/// # Errors
/// As [`solve`]; [`SolveError::Dimensions`] when `perm` does not have `q.n()` entries.
pub(crate) fn solve_permuted<Q: QMatrix>(
    plan: &Plan,
    q: &mut Q,
    qp: &BoxQp<'_>,
    alpha: &mut [f64],
    settings: &SolverSettings,
    obs: &mut dyn Observer,
    perm: &mut [usize],
) -> Result<SolveInfo, SolveError> {
    let n = q.n();
    if perm.len() != n
        || qp.p.len() != n
        || qp.y.len() != n
        || qp.upper.len() != n
        || alpha.len() != n
        || qp.fixed.is_some_and(|f| f.len() != n)
    {
        return Err(SolveError::Dimensions(
            "perm, p, y, upper, fixed and alpha must all have q.n() entries",
        ));
    }
    let p: Vec<f64> = perm.iter().map(|&o| qp.p[o]).collect();
    let y: Vec<i8> = perm.iter().map(|&o| qp.y[o]).collect();
    let upper: Vec<f64> = perm.iter().map(|&o| qp.upper[o]).collect();
    let fixed: Option<Vec<VarFix>> = qp.fixed.map(|f| perm.iter().map(|&o| f[o]).collect());
    let local = BoxQp {
        p: &p,
        y: &y,
        upper: &upper,
        equality: qp.equality,
        fixed: fixed.as_deref(),
    };
    let a0: Vec<f64> = perm.iter().map(|&o| alpha[o]).collect();
    let mut st = State::new(q, &local, &a0)?;
    let out = plan.iterate(&mut st, q, qp.equality, settings, obs);
    // `st.perm[k]` is the position (in the order on entry) now at `k`.
    let old = perm.to_vec();
    for (k, &s) in st.perm.iter().enumerate() {
        perm[k] = old[s as usize];
    }
    let info = out?;
    for (k, &o) in perm.iter().enumerate() {
        alpha[o] = st.alpha[k];
    }
    Ok(info)
}

/// [`solve`] that also returns the final gradient `Q alpha + p` in the original order (fully
/// reconstructed after shrinking), so that a caller can certify the result with
/// [`super::kkt::check_gradient`] without recomputing `Q alpha` (kernel AID's exact finish).
/// Variables fixed by `qp.fixed` or `u_i = 0` get `p_i` plus their folded column only through
/// the free part, so this is meant for problems without them: it returns
/// [`SolveError::Dimensions`] if any variable is fixed.
///
/// With `warm`, the start's gradient terms come from the caller instead of one column of `Q`
/// per nonzero `alpha_j` (kernel AID computes them with vectorized kernel sums).
///
/// # Errors
/// As [`solve`].
pub(crate) fn solve_with_gradient<Q: QMatrix>(
    plan: &Plan,
    q: &mut Q,
    qp: &BoxQp<'_>,
    alpha: &mut [f64],
    settings: &SolverSettings,
    obs: &mut dyn Observer,
    warm: Option<WarmGradient<'_>>,
) -> Result<(SolveInfo, Vec<f64>), SolveError> {
    let mut st = State::new_with(q, qp, alpha, warm)?;
    if st.l != st.n {
        st.restore_order(q);
        return Err(SolveError::Dimensions(
            "solve_with_gradient takes no fixed variables",
        ));
    }
    let out = plan.iterate(&mut st, q, qp.equality, settings, obs);
    st.restore_order(q);
    let info = out?;
    st.scatter(alpha);
    // `restore_order` leaves the permutation at the identity, so `g` is in the original order.
    Ok((info, st.g.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::qmatrix::DenseQ;
    use crate::solver::smo::tests::problem;
    use crate::solver::{NoObserver, Shrinking, Status};

    #[test]
    fn nu_runs_the_engine_it_is_given_and_auto_chooses_by_size() {
        use crate::svm::{SvmParams, SvmType};
        for t in [SvmType::NuSvc, SvmType::NuSvr] {
            let nu = |e: SvmSolver| SvmParams::new().svm_type(t).engine(e).check().unwrap();
            let auto = nu(SvmSolver::Auto).planned_engine(None);
            assert_eq!(auto, SvmSolver::Auto);
            assert!(plan(auto, 200 << 20, 100_000, 20).block.is_some());
            assert!(plan(auto, 200 << 20, 20_000, 20).block.is_none());
            assert_eq!(nu(SvmSolver::Block).planned_engine(None), SvmSolver::Block);
            assert_eq!(nu(SvmSolver::Smo).planned_engine(None), SvmSolver::Smo);
        }
    }

    #[test]
    fn auto_chooses_by_the_cache_share_and_block_keeps_half_the_budget() {
        for n in [1_000, 100_000, 1_000_000] {
            let p = plan(SvmSolver::Smo, 200 << 20, n, 784);
            assert!(p.block.is_none());
            assert_eq!(p.cache_bytes, 200 << 20);
        }
        for n in [1_000, 20_000, 50_000, 57_000] {
            let p = plan(SvmSolver::Auto, 200 << 20, n, 20);
            assert!(p.block.is_none(), "{n}");
            assert_eq!(p.cache_bytes, 200 << 20);
        }
        for n in [60_000, 100_000, 1_000_000] {
            assert!(
                plan(SvmSolver::Auto, 200 << 20, n, 20).block.is_some(),
                "{n}"
            );
        }
        // A larger cache moves the switch up: 2,000 MB hold 1/64 of the columns to 183,000.
        assert!(plan(SvmSolver::Auto, 2000 << 20, 150_000, 10)
            .block
            .is_none());
        assert!(plan(SvmSolver::Auto, 2000 << 20, 200_000, 10)
            .block
            .is_some());
        let pl = plan(SvmSolver::Block, 200 << 20, 1_000, 20);
        let buf = pl.block.unwrap().buffer_bytes as usize;
        assert_eq!(buf + pl.cache_bytes, 200 << 20);
        assert_eq!(buf, 4 * 1_000 * MAX_WORKING_SET);
        let pl = plan(SvmSolver::Block, 200 << 20, 1_000_000, 20);
        assert_eq!(pl.block.unwrap().buffer_bytes, 100 << 20);
    }

    #[test]
    fn auto_chooses_the_block_engine_for_costly_columns() {
        let auto = |n, cost| plan(SvmSolver::Auto, 200 << 20, n, cost).block.is_some();
        // The measured cases: wide rows from a few thousand samples, narrow ones from more.
        assert!(!auto(2_000, 784) && auto(3_000, 784) && auto(5_000, 784));
        assert!(!auto(20_000, 50) && auto(20_000, 100));
        // Whatever the cache, and not for a precomputed kernel's look-ups.
        assert!(plan(SvmSolver::Auto, 64_000 << 20, 20_000, 100)
            .block
            .is_some());
        assert!(!auto(20_000, 1));
        // The cost of a row: its features, its mean stored entries, or one look-up.
        let dense = Features::Dense(crate::DenseMatrix::new(2, 3, vec![1.0; 6]).unwrap());
        assert_eq!(row_cost(&dense, KernelSpec::Linear), 3);
        assert_eq!(row_cost(&dense, KernelSpec::Precomputed), 1);
        let sparse = Features::Sparse(
            crate::CsrMatrix::new(10, vec![0, 1, 4], vec![0, 2, 5, 9], vec![1.0; 4]).unwrap(),
        );
        assert_eq!(row_cost(&sparse, KernelSpec::Rbf { gamma: 1.0 }), 2);
    }

    /// Successive permuted solves (screened variables, warm starts, q never restored) by either
    /// engine give the solutions of the pair engine on a fresh matrix in the original order,
    /// and `perm` tracks the order of `q`.
    #[test]
    fn permuted_solves_match_ordered_ones() {
        let n = 40;
        let (qv, y) = problem(n);
        let p = vec![-1.0; n];
        let settings = SolverSettings {
            tol: 1e-9,
            shrinking: Shrinking::On,
            max_iter: None,
            time_limit: None,
        };
        let block = Plan {
            cache_bytes: 1 << 20,
            block: Some(BlockSettings {
                working_set: Some(8),
                buffer_bytes: 1 << 20,
            }),
        };
        for engine in [plan(SvmSolver::Smo, 1 << 20, n, 1), block] {
            let mut qp_perm = DenseQ::new(n, &qv).unwrap();
            let mut perm: Vec<usize> = (0..n).collect();
            let mut a_perm = vec![0.0; n];
            let mut a_ref = vec![0.0; n];
            for (step, c) in [0.5, 1.0, 4.0, 16.0].into_iter().enumerate() {
                let upper = vec![c; n];
                let fixed: Vec<VarFix> = (0..n)
                    .map(|i| match (i + step) % 9 {
                        0 => VarFix::AtZero,
                        1 => VarFix::AtUpper,
                        _ => VarFix::Free,
                    })
                    .collect();
                let qp = BoxQp {
                    p: &p,
                    y: &y,
                    upper: &upper,
                    equality: Equality::None,
                    fixed: Some(&fixed),
                };
                let mut fresh = DenseQ::new(n, &qv).unwrap();
                let r1 =
                    smo::solve(&mut fresh, &qp, &mut a_ref, &settings, &mut NoObserver).unwrap();
                let r2 = solve_permuted(
                    &engine,
                    &mut qp_perm,
                    &qp,
                    &mut a_perm,
                    &settings,
                    &mut NoObserver,
                    &mut perm,
                )
                .unwrap();
                assert_eq!(r1.status, Status::Converged);
                assert_eq!(r2.status, Status::Converged);
                assert!((r1.objective - r2.objective).abs() <= 1e-9 * r1.objective.abs().max(1.0));
                for i in 0..n {
                    assert!(
                        (a_ref[i] - a_perm[i]).abs() <= 1e-6 * c,
                        "{i}: {a_ref:?} {a_perm:?}"
                    );
                }
                // perm is a permutation and q's entries follow it.
                let mut seen = vec![false; n];
                for &o in &perm {
                    seen[o] = true;
                }
                assert!(seen.iter().all(|&s| s));
                assert!(
                    perm.iter().enumerate().any(|(k, &o)| k != o),
                    "q was permuted"
                );
                for k in 0..n {
                    let col = qp_perm.column(k, n).to_vec();
                    for (m, &v) in col.iter().enumerate() {
                        assert_eq!(v, qv[perm[m] * n + perm[k]] as f32);
                    }
                }
            }
        }
    }

    /// Both engines' final gradients (with the equality, from a start inside the box) are
    /// `Q a + p` recomputed here, at the same optimum.
    #[test]
    fn gradients_are_returned_in_the_original_order() {
        let n = 30;
        let (qv, y) = problem(n);
        let p = vec![-1.0; n];
        let upper = vec![2.0; n];
        let qp = BoxQp {
            p: &p,
            y: &y,
            upper: &upper,
            equality: Equality::Sum { delta: 0.0 },
            fixed: None,
        };
        let settings = SolverSettings {
            tol: 1e-9,
            ..SolverSettings::default()
        };
        let mut objectives = Vec::new();
        for engine in [SvmSolver::Smo, SvmSolver::Block] {
            let pl = plan(engine, 1 << 20, n, 1);
            let mut q = DenseQ::new(n, &qv).unwrap();
            let mut a = vec![0.0; n];
            let (info, g) =
                solve_with_gradient(&pl, &mut q, &qp, &mut a, &settings, &mut NoObserver, None)
                    .unwrap();
            assert_eq!(info.status, Status::Converged);
            for i in 0..n {
                let qa: f64 = (0..n).map(|j| f64::from(qv[i * n + j] as f32) * a[j]).sum();
                assert!(
                    (g[i] - (qa + p[i])).abs() <= 1e-7 * (qa + p[i]).abs().max(1.0),
                    "{engine:?} {i}"
                );
            }
            objectives.push(info.objective);
        }
        assert!((objectives[0] - objectives[1]).abs() <= 1e-9 * objectives[0].abs());
    }
}
