//! Which QP engine solves a kernel SVM's dual ([`SvmSolver`]), and how the cache budget (`-m`)
//! is shared between the LRU column cache and the block engine's working-set columns.
//!
//! The block engine ([`crate::solver::block`]) fetches about `q/2` columns for hundreds of local
//! steps, where the pair engine recomputes a whole column for most of its pair steps when the
//! cache holds a small part of the kernel matrix. [`SvmSolver::Auto`] chooses by that share:
//! the block engine when the cache (`-m`) holds fewer than `n /` [`AUTO_BLOCK_SHARE`] columns of
//! length `n`, the pair engine otherwise. With `-m 200` that is from about 58,000 samples.
//! Measured (`bench/results/block_smo.md`, RBF blobs d = 20, `-m 200`, shrinking on): the
//! engines are within 7% of each other at 50,000 samples (1 and 2 threads), the pair engine is
//! 1.5-1.9x faster at 20,000, and the block engine is faster at 100,000 (1.8x at 1 thread, 1.2x
//! at 2; `bench/results/block_smo_100k.md`).
//!
//! Snapshots (resume) exist for the pair engine only: a subproblem resumed from one
//! continues with the pair engine, and a block solve that stops early starts over on resume.

use super::params::{SvmSolver, SvmType, SvmValidParams};
use crate::error::SolveError;
use crate::kernel::qmatrix::QMatrix;
use crate::solver::block::{self, BlockSettings, MAX_WORKING_SET};
use crate::solver::smo::{Smo, SmoSolution};
use crate::solver::{BoxQp, Observer};

/// [`SvmSolver::Auto`] runs the block engine when the cache holds fewer than `n / 64` columns.
pub(crate) const AUTO_BLOCK_SHARE: usize = 64;

/// The engine and the memory of one solve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Bytes for the Q matrix (its copy of the rows and its LRU cache).
    pub cache_bytes: usize,
    /// The block engine's settings when it runs.
    pub block: Option<BlockSettings>,
}

/// The plan for a problem of `n` samples (the kernel matrix's size; SVR has `2n` variables over
/// `n` samples); `resume`: the solve continues from a pair-engine snapshot.
pub(crate) fn plan(params: &SvmValidParams, n: usize, resume: bool) -> Plan {
    let total = usize::try_from(params.cache_bytes).unwrap_or(usize::MAX);
    let nu = matches!(params.svm_type, SvmType::NuSvc | SvmType::NuSvr);
    let block = !resume
        && !nu
        && match params.engine {
            SvmSolver::Smo => false,
            SvmSolver::Auto => (total / (4 * n.max(1))).saturating_mul(AUTO_BLOCK_SHARE) < n,
            SvmSolver::Block => true,
        };
    if !block {
        return Plan {
            cache_bytes: total,
            block: None,
        };
    }
    // Half of the budget (at most what MAX_WORKING_SET columns take) holds the working set's
    // columns; the rest stays with the LRU cache, which serves columns re-entering the set.
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

/// Runs the planned engine: the block engine for a plain one-equality solve, the pair engine
/// `smo` otherwise (nu, resume).
pub(crate) fn solve<Q: QMatrix>(
    plan: &Plan,
    smo: &Smo<'_>,
    q: &mut Q,
    qp: &BoxQp<'_>,
    alpha: &mut [f64],
    obs: &mut dyn Observer,
) -> Result<SmoSolution, SolveError> {
    match (&plan.block, smo.is_nu(), smo.resumes_from()) {
        (Some(b), false, None) => {
            block::solve(q, qp, alpha, smo.settings(), b, obs).map(|info| SmoSolution {
                info,
                r: 0.0,
                snapshot: None,
            })
        }
        _ => smo.solve(q, qp, alpha, obs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::svm::SvmParams;

    #[test]
    fn auto_chooses_by_the_cache_share_and_block_keeps_half_the_budget() {
        let p = SvmParams::new().engine(SvmSolver::Auto).check().unwrap();
        for n in [1_000, 20_000, 50_000, 57_000] {
            assert!(plan(&p, n, false).block.is_none(), "{n}");
            assert_eq!(plan(&p, n, false).cache_bytes, 200 << 20);
        }
        for n in [60_000, 100_000, 1_000_000] {
            assert!(plan(&p, n, false).block.is_some(), "{n}");
        }
        // A larger cache moves the switch up: 2,000 MB hold 1/64 of the columns to 183,000.
        let big = SvmParams::new()
            .engine(SvmSolver::Auto)
            .cache_bytes(2000 << 20)
            .check()
            .unwrap();
        assert!(plan(&big, 150_000, false).block.is_none());
        assert!(plan(&big, 200_000, false).block.is_some());
        let b = SvmParams::new().engine(SvmSolver::Block).check().unwrap();
        // A resumed solve continues on the pair engine's snapshot.
        assert!(plan(&b, 100_000, true).block.is_none());
        let pl = plan(&b, 1_000, false);
        let buf = pl.block.unwrap().buffer_bytes as usize;
        assert_eq!(buf + pl.cache_bytes, 200 << 20);
        let nu = SvmParams::new()
            .svm_type(SvmType::NuSvc)
            .engine(SvmSolver::Auto)
            .check()
            .unwrap();
        assert!(plan(&nu, 100_000, false).block.is_none());
        assert!(SvmParams::new()
            .svm_type(SvmType::NuSvr)
            .engine(SvmSolver::Block)
            .check()
            .is_err());
    }
}
