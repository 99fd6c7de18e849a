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
//! Snapshots (resume) exist for the pair engine only: a subproblem resumed from one
//! continues with the pair engine, and a block solve that stops early starts over on resume.

use super::params::{SvmSolver, SvmValidParams};
use crate::error::SolveError;
use crate::kernel::qmatrix::QMatrix;
use crate::solver::block::{self, BlockSettings, MAX_WORKING_SET};
use crate::solver::smo::{Smo, SmoSolution};
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
/// `n` samples); `resume`: the solve continues from a pair-engine snapshot.
pub(crate) fn plan(params: &SvmValidParams, n: usize, resume: bool) -> Plan {
    let total = usize::try_from(params.cache_bytes).unwrap_or(usize::MAX);
    let block = !resume
        && match params.engine {
            SvmSolver::Smo | SvmSolver::Auto => false,
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

/// Runs the planned engine on the problem `smo` describes (one equality or none as `qp` says,
/// or the nu problem): the block engine when planned and the solve does not continue a
/// snapshot, the pair engine `smo` otherwise.
pub(crate) fn solve<Q: QMatrix>(
    plan: &Plan,
    smo: &Smo<'_>,
    q: &mut Q,
    qp: &BoxQp<'_>,
    alpha: &mut [f64],
    obs: &mut dyn Observer,
) -> Result<SmoSolution, SolveError> {
    let settings = smo.settings();
    let (info, r) = match (&plan.block, smo.resumes_from()) {
        (Some(b), None) if smo.is_nu() => block::solve_nu(q, qp, alpha, settings, b, obs)?,
        (Some(b), None) => (block::solve(q, qp, alpha, settings, b, obs)?, 0.0),
        _ => return smo.solve(q, qp, alpha, obs),
    };
    Ok(SmoSolution {
        info,
        r,
        snapshot: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::svm::{SvmParams, SvmType};

    #[test]
    fn auto_runs_pairs_and_block_keeps_half_the_budget() {
        let p = SvmParams::new().engine(SvmSolver::Auto).check().unwrap();
        for n in [1_000, 100_000, 1_000_000] {
            assert!(plan(&p, n, false).block.is_none());
            assert_eq!(plan(&p, n, false).cache_bytes, 200 << 20);
        }
        let b = SvmParams::new().engine(SvmSolver::Block).check().unwrap();
        // A resumed solve continues on the pair engine's snapshot.
        assert!(plan(&b, 100_000, true).block.is_none());
        let pl = plan(&b, 1_000, false);
        let buf = pl.block.unwrap().buffer_bytes as usize;
        assert_eq!(buf + pl.cache_bytes, 200 << 20);
        // The nu formulations: auto runs pairs, block is planned as for the others.
        for t in [SvmType::NuSvc, SvmType::NuSvr] {
            let nu = |e: SvmSolver| SvmParams::new().svm_type(t).engine(e).check().unwrap();
            assert!(plan(&nu(SvmSolver::Auto), 100_000, false).block.is_none());
            assert_eq!(plan(&nu(SvmSolver::Block), 1_000, false), pl);
            assert!(plan(&nu(SvmSolver::Block), 1_000, true).block.is_none());
        }
    }
}
