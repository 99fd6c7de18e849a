//! Which QP engine solves a kernel SVM's dual ([`SvmSolver`]), and how the cache budget (`-m`)
//! is shared between the LRU column cache and the block engine's working-set columns.
//!
//! The block engine ([`crate::solver::block`]) fetches about `q/2` columns for hundreds of local
//! steps, where the pair engine recomputes a whole column for most of its pair steps when the
//! cache holds a small part of the kernel matrix. [`SvmSolver::Auto`] runs the pair engine. The
//! block engine runs when asked for: `bench/results/block_smo.md` (RBF blobs, `-m` 200, before the
//! block engine shrank) has the pair engine faster at 20,000 and 50,000 rows;
//! `bench/results/block_smo_100k.md` has the block engine, with shrinking, faster at 100,000 rows
//! at 1 and 2 threads. A rule that chooses by size waits for both engines measured, with
//! shrinking, at every size.
//!
//! A subproblem resumed from a snapshot continues on the engine that wrote it
//! ([`crate::solver::smo::SmoSnapshot::engine`]), whatever [`SvmSolver`] says, so that the continuation replays the
//! iterations of the uninterrupted solve.

use super::params::{SvmSolver, SvmType, SvmValidParams};
use crate::error::SolveError;
use crate::kernel::qmatrix::QMatrix;
use crate::solver::block::{self, BlockSettings, MAX_WORKING_SET};
use crate::solver::smo::{Smo, SmoSolution, SnapshotEngine};
use crate::solver::{BoxQp, Observer};

/// The engine and the memory of one solve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Bytes for the Q matrix (its copy of the rows and its LRU cache).
    pub cache_bytes: usize,
    /// The block engine's settings when it runs.
    pub block: Option<BlockSettings>,
}

/// The plan for a problem of `n` samples (the kernel matrix's size; SVR has `2n` variables over
/// `n` samples); `resume`: the engine of the snapshot the solve continues from.
pub(crate) fn plan(params: &SvmValidParams, n: usize, resume: Option<SnapshotEngine>) -> Plan {
    let total = usize::try_from(params.cache_bytes).unwrap_or(usize::MAX);
    let nu = matches!(params.svm_type, SvmType::NuSvc | SvmType::NuSvr);
    let block = !nu
        && match (resume, params.engine) {
            (Some(SnapshotEngine::Block), _) | (None, SvmSolver::Block) => true,
            (Some(SnapshotEngine::Pair), _) | (None, SvmSolver::Smo | SvmSolver::Auto) => false,
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

/// Runs the planned engine with `smo`'s options (resume, snapshot): the block engine for a
/// one-equality solve planned on it, the pair engine `smo` otherwise (nu); a resumed solve
/// runs the engine of its snapshot.
pub(crate) fn solve<Q: QMatrix>(
    plan: &Plan,
    smo: &Smo<'_>,
    q: &mut Q,
    qp: &BoxQp<'_>,
    alpha: &mut [f64],
    obs: &mut dyn Observer,
) -> Result<SmoSolution, SolveError> {
    match (&plan.block, smo.is_nu()) {
        (Some(b), false) => block::run(q, qp, alpha, smo, b, obs),
        _ => smo.solve(q, qp, alpha, obs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::svm::SvmParams;

    #[test]
    fn auto_runs_pairs_and_block_keeps_half_the_budget() {
        let p = SvmParams::new().engine(SvmSolver::Auto).check().unwrap();
        for n in [1_000, 100_000, 1_000_000] {
            assert!(plan(&p, n, None).block.is_none());
            assert_eq!(plan(&p, n, None).cache_bytes, 200 << 20);
        }
        let b = SvmParams::new().engine(SvmSolver::Block).check().unwrap();
        // A resumed solve continues on its snapshot's engine.
        assert!(plan(&b, 100_000, Some(SnapshotEngine::Pair))
            .block
            .is_none());
        assert!(plan(&p, 100_000, Some(SnapshotEngine::Block))
            .block
            .is_some());
        let pl = plan(&b, 1_000, None);
        let buf = pl.block.unwrap().buffer_bytes as usize;
        assert_eq!(buf + pl.cache_bytes, 200 << 20);
        let nu = SvmParams::new()
            .svm_type(SvmType::NuSvc)
            .engine(SvmSolver::Auto)
            .check()
            .unwrap();
        assert!(plan(&nu, 100_000, None).block.is_none());
        assert!(SvmParams::new()
            .svm_type(SvmType::NuSvr)
            .engine(SvmSolver::Block)
            .check()
            .is_err());
    }
}
