//! Stop and resume of the block engine: a solve stopped after `k` outer iterations (by the
//! observer or the iteration limit), continued from its snapshot (after a trip through its
//! bytes), must give the uninterrupted solve's alpha, objective, rho and iteration count bit
//! for bit, before and after the first shrinking step and after the gradient rebuild, with and
//! without the equality, with fixed variables, at 1 and 2 threads; damaged snapshot bytes are
//! errors, never panics.

use std::ops::ControlFlow;

use super::*;
use crate::data::{DenseMatrix, Features};
use crate::kernel::qmatrix::SvcQ;
use crate::kernel::KernelSpec;
use crate::solver::smo::SnapshotEngine;
use crate::solver::{IterStats, NoObserver, VarFix};

/// Dense features in `[-1, 1)` (a deterministic LCG) and labels from the first feature with
/// noise: overlapping classes.
fn data(seed: u64, n: usize, d: usize) -> (Features, Vec<i8>) {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = || {
        s = s
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    };
    let v: Vec<f64> = (0..n * d).map(|_| next()).collect();
    let y = (0..n)
        .map(|i| if v[i * d] + 0.6 * next() > 0.0 { 1 } else { -1 })
        .collect();
    (Features::Dense(DenseMatrix::new(n, d, v).unwrap()), y)
}

/// Stops at its `at`-th call (1-based), which the engine makes after `at` outer iterations;
/// counts its calls.
struct StopAt {
    at: usize,
    calls: usize,
}

impl Observer for StopAt {
    fn on_iter(&mut self, _: &IterStats) -> ControlFlow<()> {
        self.calls += 1;
        if self.calls == self.at {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }
}

/// One problem: the data, the QP's arrays, the settings.
struct Case {
    x: Features,
    y: Vec<i8>,
    p: Vec<f64>,
    upper: Vec<f64>,
    fixed: Option<Vec<VarFix>>,
    equality: Equality,
    settings: SolverSettings,
    block: BlockSettings,
}

impl Case {
    /// `fixed`: some variables fixed at 0 and at their bound (used without the equality, which
    /// they would move).
    fn new(seed: u64, n: usize, equality: Equality, fixed: bool, q: usize) -> Self {
        let (x, y) = data(seed, n, 4);
        let fixed = fixed.then(|| {
            (0..n)
                .map(|i| match i % 17 {
                    3 => VarFix::AtZero,
                    11 => VarFix::AtUpper,
                    _ => VarFix::Free,
                })
                .collect()
        });
        Self {
            x,
            y,
            p: vec![-1.0; n],
            upper: (0..n).map(|i| 2.0 + (i % 3) as f64).collect(),
            fixed,
            equality,
            settings: SolverSettings {
                tol: 1e-5,
                shrinking: Shrinking::On,
                max_iter: None,
                time_limit: None,
            },
            block: BlockSettings {
                working_set: Some(q),
                ..BlockSettings::default()
            },
        }
    }

    /// A fresh matrix (a new process would build one) with a small cache.
    fn q(&self) -> SvcQ<'_> {
        SvcQ::new(&self.x, KernelSpec::Rbf { gamma: 2.0 }, &self.y, 64 << 10).unwrap()
    }

    fn qp(&self) -> BoxQp<'_> {
        BoxQp {
            p: &self.p,
            y: &self.y,
            upper: &self.upper,
            equality: self.equality,
            fixed: self.fixed.as_deref(),
        }
    }

    /// Runs the engine with `smo`'s options from the zero start.
    fn run(&self, smo: &Smo<'_>, obs: &mut dyn Observer) -> (SmoSolution, Vec<f64>) {
        let mut a = vec![0.0; self.y.len()];
        let out = run(&mut self.q(), &self.qp(), &mut a, smo, &self.block, obs).unwrap();
        (out, a)
    }

    /// The uninterrupted solve and the number of observer calls it made.
    fn full(&self) -> (SolveInfo, Vec<f64>, usize) {
        let mut count = StopAt {
            at: usize::MAX,
            calls: 0,
        };
        let (out, a) = self.run(&Smo::new(&self.settings), &mut count);
        assert_eq!(out.info.status, Status::Converged);
        assert!(out.snapshot.is_none());
        (out.info, a, count.calls)
    }

    /// Continues `snap` (through its bytes) with `settings` and no limit: must be `want`.
    fn resume_matches(&self, snap: &SmoSnapshot, want: &(SolveInfo, Vec<f64>), what: &str) {
        let bytes = snap.to_bytes();
        assert!(bytes.starts_with(b"MKSMOB01"), "{what}");
        let (back, used) = SmoSnapshot::from_bytes(&bytes).unwrap();
        assert_eq!(used, bytes.len(), "{what}");
        assert_eq!(&back, snap, "{what}");
        assert_eq!(back.engine(), SnapshotEngine::Block);
        let settings = SolverSettings {
            max_iter: None,
            ..self.settings
        };
        let smo = Smo::new(&settings).resume(Some(&back)).keep_snapshot(true);
        let (out, a) = self.run(&smo, &mut NoObserver);
        same(&out.info, &a, want, what);
        assert!(out.snapshot.is_none(), "{what}");
    }
}

/// Bit-identical results.
fn same(info: &SolveInfo, a: &[f64], want: &(SolveInfo, Vec<f64>), what: &str) {
    let (w, wa) = want;
    assert_eq!(info.status, w.status, "{what}");
    assert_eq!(info.iterations, w.iterations, "{what}");
    assert_eq!(info.objective.to_bits(), w.objective.to_bits(), "{what}");
    assert_eq!(info.rho.to_bits(), w.rho.to_bits(), "{what}");
    assert_eq!(
        info.max_violation.to_bits(),
        w.max_violation.to_bits(),
        "{what}"
    );
    assert!(
        a.iter().zip(wa).all(|(u, v)| u.to_bits() == v.to_bits()),
        "{what}: alpha differs"
    );
}

/// Stops after every chosen `k` outer iterations and resumes; returns which phases the stops
/// covered: (before the first shrinking step, with variables shrunk, after the gradient rebuild).
fn sweep(case: &Case) -> (bool, bool, bool) {
    let (info, a, calls) = case.full();
    let want = (info, a);
    let l = case.y.len()
        - case
            .fixed
            .as_ref()
            .map_or(0, |f| f.iter().filter(|&&v| v != VarFix::Free).count());
    assert!(
        calls > 2 * SHRINK_EVERY as usize,
        "{calls} outer iterations"
    );
    // Every early k, the first shrinking steps, a spread, and the last ones.
    let mut ks: Vec<usize> = (1..=10).chain([15, 16, 17, 24, 25]).collect();
    ks.extend((1..calls).step_by((calls / 20).max(1)));
    ks.extend(calls.saturating_sub(4)..calls);
    ks.retain(|k| (1..calls).contains(k));
    ks.sort_unstable();
    ks.dedup();
    let (mut before, mut shrunk, mut rebuilt) = (false, false, false);
    for k in ks {
        let smo = Smo::new(&case.settings).keep_snapshot(true);
        let mut obs = StopAt { at: k, calls: 0 };
        let (out, _) = case.run(&smo, &mut obs);
        let what = format!("{:?} stopped after {k}", case.equality);
        assert_eq!(out.info.status, Status::Interrupted, "{what}");
        let snap = out.snapshot.expect("a snapshot of the stop");
        let b = snap.block.as_ref().expect("the block loop");
        assert_eq!(b.outer, k as u64, "{what}");
        assert_eq!(snap.l, l, "{what}");
        before |= b.outer < SHRINK_EVERY;
        shrunk |= snap.active < snap.l;
        rebuilt |= snap.unshrunk;
        case.resume_matches(&snap, &want, &what);
    }
    (before, shrunk, rebuilt)
}

#[test]
fn observer_stops_resume_bit_for_bit_with_the_equality() {
    let case = Case::new(1, 300, Equality::Sum { delta: 0.0 }, false, 16);
    let (before, shrunk, rebuilt) = sweep(&case);
    assert!(before && shrunk && rebuilt, "{before} {shrunk} {rebuilt}");
}

#[test]
fn observer_stops_resume_bit_for_bit_without_the_equality_and_with_fixed_variables() {
    let case = Case::new(2, 300, Equality::None, true, 16);
    let (before, shrunk, rebuilt) = sweep(&case);
    assert!(before && shrunk && rebuilt, "{before} {shrunk} {rebuilt}");
}

#[test]
fn iteration_limit_stops_resume_bit_for_bit() {
    for equality in [Equality::Sum { delta: 0.0 }, Equality::None] {
        let case = Case::new(3, 250, equality, false, 12);
        let (info, a, _) = case.full();
        let want = (info, a);
        let mut stopped = 0;
        for limit in [
            1,
            100,
            info.iterations / 3,
            info.iterations / 2,
            info.iterations - 1,
        ] {
            let settings = SolverSettings {
                max_iter: Some(limit),
                ..case.settings
            };
            let smo = Smo::new(&settings).keep_snapshot(true);
            let (out, a) = case.run(&smo, &mut NoObserver);
            let what = format!("{equality:?} limit {limit}");
            if out.info.status == Status::Converged {
                // The outer iteration that reaches the limit converged: the solve is whole.
                same(&out.info, &a, &want, &what);
                assert!(out.snapshot.is_none(), "{what}");
                continue;
            }
            stopped += 1;
            assert_eq!(out.info.status, Status::MaxIterations, "{what}");
            // The limit ends the outer iteration that reaches it, never cuts one short.
            assert!(out.info.iterations >= limit, "{what}");
            let snap = out.snapshot.expect("a snapshot of the stop");
            assert_eq!(snap.iterations(), out.info.iterations, "{what}");
            case.resume_matches(&snap, &want, &what);
        }
        assert!(
            stopped >= 3,
            "{equality:?}: {stopped} limits stopped the solve"
        );
    }
}

#[test]
fn a_block_snapshot_continues_on_the_block_engine_and_a_pair_one_is_refused() {
    let case = Case::new(4, 200, Equality::Sum { delta: 0.0 }, false, 10);
    let (info, a, _) = case.full();
    let want = (info, a);
    let smo = Smo::new(&case.settings).keep_snapshot(true);
    let (out, _) = case.run(&smo, &mut StopAt { at: 5, calls: 0 });
    let snap = out.snapshot.unwrap();
    // The pair engine's entry point runs the snapshot's engine (with its working-set size).
    let mut a = vec![0.0; case.y.len()];
    let out = Smo::new(&case.settings)
        .resume(Some(&snap))
        .solve(&mut case.q(), &case.qp(), &mut a, &mut NoObserver)
        .unwrap();
    same(&out.info, &a, &want, "through Smo::solve");
    // A pair snapshot is not the block engine's to continue.
    let five = SolverSettings {
        max_iter: Some(5),
        ..case.settings
    };
    let pair = Smo::new(&five)
        .keep_snapshot(true)
        .solve(
            &mut case.q(),
            &case.qp(),
            &mut vec![0.0; case.y.len()],
            &mut NoObserver,
        )
        .unwrap()
        .snapshot
        .unwrap();
    assert_eq!(pair.engine(), SnapshotEngine::Pair);
    let mut a = vec![0.0; case.y.len()];
    let e = run(
        &mut case.q(),
        &case.qp(),
        &mut a,
        &Smo::new(&case.settings).resume(Some(&pair)),
        &case.block,
        &mut NoObserver,
    );
    assert!(matches!(e, Err(SolveError::Checkpoint(_))), "{e:?}");
    // Another problem (other bounds) is refused by the snapshot's checks.
    let mut other = Case::new(4, 200, Equality::Sum { delta: 0.0 }, false, 10);
    other.upper.iter_mut().for_each(|u| *u *= 2.0);
    let e = run(
        &mut other.q(),
        &other.qp(),
        &mut a,
        &Smo::new(&other.settings).resume(Some(&snap)),
        &other.block,
        &mut NoObserver,
    );
    assert!(matches!(e, Err(SolveError::Checkpoint(_))), "{e:?}");
}

/// The nu mode stops and resumes as the others (its snapshot keeps the mode): the same alpha,
/// account and `r`, bit for bit.
#[test]
fn a_stopped_nu_solve_resumes_bit_for_bit() {
    let mut case = Case::new(6, 300, Equality::Sum { delta: 0.0 }, false, 10);
    case.p = vec![0.0; 300];
    // A feasible start: a quarter of each bound (the class sums are then kept).
    let start: Vec<f64> = case.upper.iter().map(|u| 0.25 * u).collect();
    let delta = start
        .iter()
        .zip(&case.y)
        .map(|(a, &y)| a * f64::from(y))
        .sum();
    case.equality = Equality::Sum { delta };
    let go = |smo: &Smo<'_>, obs: &mut dyn Observer| {
        let mut a = start.clone();
        let out = run(&mut case.q(), &case.qp(), &mut a, smo, &case.block, obs).unwrap();
        (out, a)
    };
    let nu = || Smo::new(&case.settings).nu(true);
    let (full, fa) = go(&nu(), &mut NoObserver);
    assert_eq!(full.info.status, Status::Converged);
    let want = (full.info, fa);
    let mut stops = 0;
    for at in [1, 2, 5, 9, 14] {
        let (out, _) = go(&nu().keep_snapshot(true), &mut StopAt { at, calls: 0 });
        let Some(snap) = out.snapshot else {
            assert_eq!(out.info.status, Status::Converged, "stop {at}");
            continue;
        };
        stops += 1;
        let (back, _) = SmoSnapshot::from_bytes(&snap.to_bytes()).unwrap();
        assert_eq!(back.engine(), SnapshotEngine::Block);
        let (res, a) = go(&nu().resume(Some(&back)), &mut NoObserver);
        same(&res.info, &a, &want, &format!("nu, stopped at {at}"));
        assert_eq!(res.r.to_bits(), full.r.to_bits(), "nu r, stopped at {at}");
    }
    assert!(
        stops >= 3,
        "only {stops} stops: the problem is too easy for the test"
    );
}

/// Large enough for the parallel gradient pass (more than one chunk of positions).
#[test]
fn a_stop_at_one_thread_resumes_at_two_to_the_same_bits() {
    let mut case = Case::new(
        5,
        2 * GRAD_CHUNK + 300,
        Equality::Sum { delta: 0.0 },
        false,
        64,
    );
    case.settings.tol = 1e-3;
    let pool = |t: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(t)
            .build()
            .unwrap()
    };
    let (info, a, calls) = pool(1).install(|| case.full());
    let want = (info, a);
    assert!(calls > SHRINK_EVERY as usize, "{calls}");
    for k in [3, calls / 2] {
        let smo = Smo::new(&case.settings).keep_snapshot(true);
        let (out, _) = pool(1).install(|| case.run(&smo, &mut StopAt { at: k, calls: 0 }));
        let snap = out.snapshot.unwrap();
        pool(2).install(|| case.resume_matches(&snap, &want, &format!("2 threads after {k}")));
    }
}

/// Every prefix of a block snapshot is refused; a byte changed anywhere is refused or reads
/// back to the same bytes, and continuing what reads does not panic.
#[test]
fn damaged_block_snapshots_are_errors_not_panics() {
    let case = Case::new(6, 40, Equality::Sum { delta: 0.0 }, false, 8);
    let smo = Smo::new(&case.settings).keep_snapshot(true);
    let (out, _) = case.run(&smo, &mut StopAt { at: 3, calls: 0 });
    let snap = out.snapshot.unwrap();
    assert!(!snap.block.as_ref().unwrap().members.is_empty());
    let bytes = snap.to_bytes();
    for k in 0..bytes.len() {
        assert!(SmoSnapshot::from_bytes(&bytes[..k]).is_err(), "prefix {k}");
    }
    let limited = SolverSettings {
        max_iter: Some(2000),
        ..case.settings
    };
    let (mut read, mut refused) = (0, 0);
    // The header, the block loop at the end (where the members are), and a stride between.
    let tail = bytes.len() - 200;
    for i in (0..bytes.len()).filter(|&i| i < 120 || i >= tail || i % 7 == 0) {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut b = bytes.clone();
            b[i] ^= flip;
            match SmoSnapshot::from_bytes(&b) {
                Err(_) => refused += 1,
                Ok((s, used)) => {
                    read += 1;
                    assert_eq!(s.to_bytes(), &b[..used], "byte {i}");
                    let mut a = vec![0.0; case.y.len()];
                    let smo = Smo::new(&limited).resume(Some(&s));
                    // Ok or Err: either is fine, a panic is not.
                    let _ = run(
                        &mut case.q(),
                        &case.qp(),
                        &mut a,
                        &smo,
                        &case.block,
                        &mut NoObserver,
                    );
                }
            }
        }
    }
    assert!(read > 0 && refused > 0, "{read} read, {refused} refused");
}
