//! Production behaviour of the fits: no silent non-convergence (statuses, violations and gaps
//! checked against the independent KKT checker), and exact interrupt/resume (a fit stopped by
//! the observer or a limit and continued from its checkpoint gives the same model, bit for bit,
//! as an uninterrupted fit).

use marginkit::data::libsvm_fmt::{read_libsvm_path, ReadOptions};
use marginkit::fit::{Control, Fit};
use marginkit::kernel::qmatrix::{kernel_value, SvcQ};
use marginkit::solver::kkt::check_with;
use marginkit::solver::smo::{solve, Smo, SmoSnapshot};
use marginkit::solver::{
    BoxQp, Cancel, Equality, IterStats, NoObserver, Observer, Shrinking, SolverSettings, Status,
};
use marginkit::svm::linear::{self, LinearFit, LinearParams, LinearSolver};
use marginkit::svm::model_io::read_model_with_status;
use marginkit::svm::{fit, FitCheckpoint, SvmParams, SvmType};
use marginkit::{CheckpointError, FitError};
use marginkit::{Dataset, DenseMatrix, Features, KernelSpec};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::ops::ControlFlow;

/// Checks `p`, then fits it without an observer.
fn fit_linear(p: LinearParams, data: &Dataset) -> Result<LinearFit, FitError> {
    linear::fit(&p.check()?, data, &mut Control::default())
}

fn data_file(name: &str) -> Dataset {
    let p = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    read_libsvm_path(std::path::Path::new(&p), &ReadOptions::default()).unwrap()
}

/// Overlapping classes in 5 dimensions: with a large C the dual needs many iterations.
fn hard(seed: u64, n: usize) -> (Features, Vec<i8>) {
    let mut g = Xoshiro256PlusPlus::seed_from_u64(seed);
    let d = 5;
    let mut v = Vec::with_capacity(n * d);
    let mut y = Vec::with_capacity(n);
    for i in 0..n {
        let c: i8 = if i % 2 == 0 { 1 } else { -1 };
        for _ in 0..d {
            v.push(g.gen_range(-1.0..1.0) + 0.2 * f64::from(c));
        }
        y.push(c);
    }
    (Features::Dense(DenseMatrix::new(n, d, v).unwrap()), y)
}

#[test]
fn an_iteration_limit_never_reports_success() {
    let kernel = KernelSpec::Rbf { gamma: 2.0 };
    for seed in 0..6 {
        let (x, y) = hard(seed, 120);
        let n = y.len();
        let p = vec![-1.0; n];
        let upper = vec![1000.0; n];
        let qp = BoxQp {
            p: &p,
            y: &y,
            upper: &upper,
            equality: Equality::Sum { delta: 0.0 },
            fixed: None,
        };
        let qv =
            |i: usize, j: usize| f64::from(y[i]) * f64::from(y[j]) * kernel_value(&x, kernel, i, j);
        // The matrix the solver sees: the cache holds Q in f32.
        let q32 = |i: usize, j: usize| f64::from(qv(i, j) as f32);
        for limit in [1u64, 3, 10, 40] {
            let s = SolverSettings {
                max_iter: Some(limit),
                ..SolverSettings::default()
            };
            let mut q = SvcQ::new(&x, kernel, &y, 1 << 20).unwrap();
            let mut a = vec![0.0; n];
            let info = solve(&mut q, &qp, &mut a, &s, &mut NoObserver).unwrap();
            let rep = check_with(qv, &qp, &a);
            let rep32 = check_with(q32, &qp, &a);
            assert_eq!(
                info.status,
                Status::MaxIterations,
                "seed {seed} limit {limit}"
            );
            assert!(info.iterations <= limit);
            // The independent checker agrees that this point is not optimal.
            assert!(rep.max_violation > s.tol, "seed {seed}: {rep:?}");
            // The reported violation and gap are those of the returned point (f32 cache).
            let scale = 1.0 + rep32.max_violation.abs();
            assert!((info.max_violation - rep32.max_violation).abs() < 1e-8 * scale);
            let gscale = 1.0 + rep32.gap.abs();
            assert!(
                (info.gap - rep32.gap).abs() < 1e-8 * gscale,
                "{} vs {}",
                info.gap,
                rep32.gap
            );
        }
        // Without a limit: converged, and the checker confirms it.
        let mut q = SvcQ::new(&x, kernel, &y, 1 << 20).unwrap();
        let mut a = vec![0.0; n];
        let s = SolverSettings::default();
        let info = solve(&mut q, &qp, &mut a, &s, &mut NoObserver).unwrap();
        assert_eq!(info.status, Status::Converged);
        let rep = check_with(q32, &qp, &a);
        assert!(rep.max_violation <= s.tol * (1.0 + 1e-9), "{rep:?}");
        assert!(info.gap >= 0.0 && (info.gap - rep.gap).abs() < 1e-8 * (1.0 + rep.gap));
    }
}

#[test]
fn fits_report_the_status_of_every_solve_including_platt() {
    let data = data_file("heart_scale");
    let params = SvmParams::new()
        .c(1000.0)
        .probability(marginkit::svm::params::Probability::On)
        .max_iter(20)
        .check()
        .unwrap();
    let Fit {
        report,
        checkpoint: ck,
        ..
    } = fit(&params, &data, &mut Control::default()).unwrap();
    assert_eq!(report.status(), Status::MaxIterations);
    assert!(!report.calibration.is_empty());
    assert!(report
        .calibration
        .iter()
        .all(|s| s.status == Status::MaxIterations));
    assert!(ck.is_some());
    assert!(report.max_violation() > 1e-3 && report.gap() > 0.0);
    // Converged fit: no checkpoint, a finite non-negative gap.
    let params = SvmParams::new().c(1.0).check().unwrap();
    let Fit {
        report,
        checkpoint: ck,
        ..
    } = fit(&params, &data, &mut Control::default()).unwrap();
    assert_eq!(report.status(), Status::Converged);
    assert!(ck.is_none());
    assert!(report.gap() >= 0.0 && report.gap().is_finite());
    assert!(report.max_violation() <= 1e-3);
}

#[test]
fn linear_limits_and_cancel_report_their_status() {
    let data = data_file("heart_scale");
    let fit = fit_linear(
        LinearParams::new(LinearSolver::L1LossSvcDual)
            .c(100.0)
            .eps(1e-6)
            .max_passes(2),
        &data,
    )
    .unwrap();
    assert_eq!(fit.report.subproblems[0].status, Status::MaxIterations);
    assert!(fit.report.subproblems[0].gap > 0.0);
    let mut cancel = Cancel::new();
    cancel.cancel();
    let fit = LinearParams::new(LinearSolver::L2LossSvcDual)
        .check()
        .unwrap();
    let fit = linear::fit(&fit, &data, &mut Control::new(&mut cancel)).unwrap();
    assert_eq!(fit.report.subproblems[0].status, Status::Interrupted);
}

#[test]
fn non_converged_models_are_plain_files_and_old_status_lines_still_read() {
    let data = data_file("heart_scale");
    let params = SvmParams::new().c(100.0).max_iter(3).check().unwrap();
    let Fit { model, report, .. } = fit(&params, &data, &mut Control::default()).unwrap();
    assert_eq!(report.status(), Status::MaxIterations);
    // The file is what LIBSVM's reader loads: no status line, whatever the status.
    let mut plain = Vec::new();
    marginkit::svm::model_io::write_model(&mut plain, &model).unwrap();
    let text = String::from_utf8(plain).unwrap();
    assert!(
        text.starts_with("svm_type c_svc\nkernel_type rbf\n"),
        "{text}"
    );
    assert!(!text.contains("status"), "{text}");
    // A file with a status line after svm_type is still read, with its status.
    let flagged = text.replacen(
        "svm_type c_svc\n",
        "svm_type c_svc\nstatus max_iterations\n",
        1,
    );
    let (back, st) = read_model_with_status(flagged.as_bytes()).unwrap();
    assert_eq!(st, Status::MaxIterations);
    assert_eq!(back.rho, model.rho);
    let (_, st) = read_model_with_status(text.as_bytes()).unwrap();
    assert_eq!(st, Status::Converged);
    // Linear models too.
    let fit = fit_linear(
        LinearParams::new(LinearSolver::L1LossSvcDual)
            .c(100.0)
            .max_passes(1),
        &data,
    )
    .unwrap();
    assert_eq!(fit.report.subproblems[0].status, Status::MaxIterations);
    let mut buf = Vec::new();
    fit.model.write(&mut buf).unwrap();
    let text = String::from_utf8(buf).unwrap();
    assert!(!text.contains("status"), "{text}");
    let flagged = text.replacen("\n", "\nstatus max_iterations\n", 1);
    let (m2, st) =
        marginkit::svm::linear::LinearModel::read_with_status(flagged.as_bytes()).unwrap();
    assert_eq!(st, Status::MaxIterations);
    assert_eq!(m2, fit.model);
}

/// Stops at the `k`-th progress report.
struct StopAt {
    k: u64,
    calls: u64,
}

impl Observer for StopAt {
    fn on_iter(&mut self, _s: &IterStats) -> ControlFlow<()> {
        self.calls += 1;
        if self.calls >= self.k {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }
}

/// Fits to convergence through a chain of interruptions (observer stops after `every` reports,
/// or iteration limits growing by `limit_step`), each continued from the previous checkpoint
/// after a round trip through its byte form.
fn chained(
    params: &marginkit::svm::SvmValidParams,
    data: &Dataset,
    every: Option<u64>,
    limit_step: Option<u64>,
) -> (marginkit::svm::SvmModel, marginkit::svm::FitReport, usize) {
    let mut ck: Option<FitCheckpoint> = None;
    let mut stops = 0;
    for round in 1..10_000u64 {
        let p = match limit_step {
            Some(step) => SvmParams::from(params.clone())
                .max_iter(step * round)
                .check()
                .unwrap(),
            None => params.clone(),
        };
        let mut obs: Box<dyn Observer> = match every {
            Some(k) => Box::new(StopAt { k, calls: 0 }),
            None => Box::new(NoObserver),
        };
        let Fit {
            model: m,
            report: r,
            checkpoint: next,
        } = fit(
            &p,
            data,
            &mut Control::new(&mut *obs).resume_opt(ck.as_ref()),
        )
        .unwrap();
        match next {
            None => return (m, r, stops),
            Some(c) => {
                assert_ne!(r.status(), Status::Converged);
                stops += 1;
                let bytes = c.to_bytes();
                let back = FitCheckpoint::from_bytes(&bytes).unwrap();
                assert_eq!(back, c);
                ck = Some(back);
            }
        }
    }
    panic!("never converged");
}

#[test]
fn interrupted_fits_resume_to_the_identical_model() {
    let heart = data_file("heart_scale");
    let iris = data_file("iris.scale.svm");
    let auto = data_file("auto.scale.svm");
    let cases: Vec<(&str, marginkit::svm::SvmValidParams, &Dataset)> = vec![
        (
            "c-svc",
            SvmParams::new()
                .c(1000.0)
                .gamma(0.05)
                .tol(1e-6)
                .check()
                .unwrap(),
            &heart,
        ),
        (
            "c-svc no shrinking",
            SvmParams::new()
                .c(1000.0)
                .gamma(0.05)
                .tol(1e-6)
                .shrinking(Shrinking::Off)
                .check()
                .unwrap(),
            &heart,
        ),
        (
            "nu-svc",
            SvmParams::new()
                .svm_type(SvmType::NuSvc)
                .nu(0.2)
                .gamma(0.05)
                .tol(1e-6)
                .check()
                .unwrap(),
            &heart,
        ),
        (
            "eps-svr",
            SvmParams::new()
                .svm_type(SvmType::EpsSvr)
                .c(100.0)
                .gamma(0.5)
                .tol(1e-6)
                .check()
                .unwrap(),
            &auto,
        ),
        (
            "multiclass",
            SvmParams::new()
                .c(1000.0)
                .gamma(0.5)
                .tol(1e-6)
                .check()
                .unwrap(),
            &iris,
        ),
        (
            "one-class",
            SvmParams::new()
                .svm_type(SvmType::OneClass)
                .nu(0.3)
                .gamma(0.5)
                .tol(1e-6)
                .check()
                .unwrap(),
            &heart,
        ),
    ];
    for (name, params, data) in &cases {
        let Fit {
            model: m0,
            report: r0,
            ..
        } = fit(params, data, &mut Control::default()).unwrap();
        assert_eq!(r0.status(), Status::Converged, "{name}");
        for (every, step) in [(Some(1), None), (Some(3), None), (None, Some(250))] {
            let (m, r, stops) = chained(params, data, every, step);
            let total: u64 = r0.iterations();
            if total > 1000 || step.is_some() {
                assert!(stops > 0, "{name}: never stopped ({total} iterations)");
            }
            assert_eq!(m, m0, "{name} {every:?} {step:?}: models differ");
            for (a, b) in r.subproblems.iter().zip(&r0.subproblems) {
                assert_eq!(a.objective.to_bits(), b.objective.to_bits(), "{name}");
                assert_eq!(a.iterations, b.iterations, "{name}");
            }
        }
    }
}

/// SVR with `-b 1`: a stop during the cross-validation behind the Laplace scale returns at once
/// (the remaining folds are skipped) with a model without `probA`, an interrupted status and a
/// checkpoint; resuming gives the uninterrupted model, scale included.
#[test]
fn svr_probability_folds_can_be_interrupted_and_resumed() {
    let auto = data_file("auto.scale.svm");
    let params = SvmParams::new()
        .svm_type(SvmType::EpsSvr)
        .c(100.0)
        .gamma(0.5)
        .tol(1e-6)
        .probability(marginkit::svm::params::Probability::On)
        .check()
        .unwrap();
    let Fit {
        model: m0,
        report: r0,
        checkpoint: none,
    } = fit(&params, &auto, &mut Control::default()).unwrap();
    assert!(none.is_none());
    assert_eq!(m0.prob_a.len(), 1);
    assert_eq!(r0.calibration.len(), 5);
    assert!(r0.calibration.iter().all(|c| c.status == Status::Converged));
    // The main solve reports every 1000 iterations: the first report after it is in the folds
    // (some fold is long enough to report).
    assert!(r0.calibration.iter().any(|c| c.iterations > 1000));
    let m = r0.subproblems[0].iterations / 1000;
    let mut in_cv = 0;
    for k in m.saturating_sub(1).max(1)..m + 4 {
        let Fit {
            model: m,
            report: r,
            checkpoint: ck,
        } = fit(
            &params,
            &auto,
            &mut Control::new(&mut StopAt { k, calls: 0 }),
        )
        .unwrap();
        if r.status() == Status::Converged {
            break;
        }
        let ck = ck.expect("a stopped fit has a checkpoint");
        if r.subproblems[0].status == Status::Converged {
            // Stopped inside the folds: the folds after the stopped one were skipped.
            in_cv += 1;
            assert_eq!(r.status(), Status::Interrupted);
            assert!(m.prob_a.is_empty());
            assert!(r.calibration.len() <= 5);
            assert_eq!(
                r.calibration.last().map(|c| c.status),
                Some(Status::Interrupted)
            );
            let back = FitCheckpoint::from_bytes(&ck.to_bytes()).unwrap();
            let Fit {
                model: m1,
                report: r1,
                checkpoint: none,
            } = fit(&params, &auto, &mut Control::default().resume_from(&back)).unwrap();
            assert!(none.is_none());
            assert_eq!(r1.status(), Status::Converged);
            assert_eq!(m1, m0);
            break;
        }
    }
    assert!(in_cv > 0, "no stop fell inside the folds");
}

#[test]
fn checkpoints_refuse_other_data_or_parameters() {
    let data = data_file("heart_scale");
    let params = SvmParams::new().c(100.0).max_iter(5).check().unwrap();
    let Fit { checkpoint: ck, .. } = fit(&params, &data, &mut Control::default()).unwrap();
    let ck = ck.unwrap();
    let other = SvmParams::new().c(50.0).check().unwrap();
    let refused = |r: Result<_, FitError>| match r {
        Err(FitError::Checkpoint(e)) => e,
        other => panic!("not refused: {:?}", other.map(|_| ())),
    };
    let e = refused(fit(&other, &data, &mut Control::default().resume_from(&ck)));
    assert_eq!(
        e,
        CheckpointError::Setting {
            file: "fit checkpoint",
            name: "-c".into(),
            stored: "100".into(),
            now: "50".into(),
        }
    );
    assert_eq!(
        e.to_string(),
        "the fit checkpoint was written with -c 100 (now -c 50)"
    );
    let rbf = SvmParams::new().c(100.0).gamma(0.25).check().unwrap();
    let e = refused(fit(&rbf, &data, &mut Control::default().resume_from(&ck)));
    assert!(
        e.to_string().contains(&format!(
            "-g {} (now -g 0.25)",
            1.0 / data.n_features() as f64
        )),
        "{e}"
    );
    let same = SvmParams::new().c(100.0).check().unwrap();
    let sub = data.subset(&(0..data.len() - 1).collect::<Vec<_>>());
    let e = refused(fit(&same, &sub, &mut Control::default().resume_from(&ck)));
    match &e {
        CheckpointError::Data {
            role,
            stored: Some(s),
            now: Some(n),
            ..
        } => {
            assert_eq!(role, "training data");
            assert_eq!((s.rows, n.rows), (data.len() as u64, data.len() as u64 - 1));
            assert_ne!(s.hash, n.hash);
        }
        other => panic!("{other}"),
    }
    let mut flipped = data.clone();
    flipped.y[7] = -flipped.y[7];
    let e = refused(fit(
        &same,
        &flipped,
        &mut Control::default().resume_from(&ck),
    ));
    assert!(
        matches!(&e, CheckpointError::Data { stored: Some(s), now: Some(n), .. } if s.rows == n.rows && s.hash != n.hash),
        "{e}"
    );
    // Truncated or corrupted bytes are errors, never panics.
    let bytes = ck.to_bytes();
    for cut in [0, 7, 8, 20, bytes.len() / 2, bytes.len() - 1] {
        assert!(FitCheckpoint::from_bytes(&bytes[..cut]).is_err());
    }
}

/// The checksum catches a damaged file: every single flipped byte (and every flipped bit of a
/// few bytes) is refused, and the message names the checksum wherever the magic still holds.
#[test]
fn a_flipped_byte_in_a_checkpoint_is_detected() {
    let data = data_file("heart_scale");
    let params = SvmParams::new().c(100.0).max_iter(30).check().unwrap();
    let Fit { checkpoint: ck, .. } = fit(&params, &data, &mut Control::default()).unwrap();
    let bytes = ck.unwrap().to_bytes();
    assert!(FitCheckpoint::from_bytes(&bytes).is_ok());
    for i in 0..bytes.len() {
        let mut bad = bytes.clone();
        bad[i] ^= 0x5a;
        let e = FitCheckpoint::from_bytes(&bad).expect_err("a flipped byte was accepted");
        if i >= 8 {
            assert!(
                matches!(e, CheckpointError::Checksum { .. }) && e.to_string().contains("checksum"),
                "byte {i}: {e}"
            );
        }
    }
    for i in [8, 20, bytes.len() / 2, bytes.len() - 9, bytes.len() - 1] {
        for bit in 0..8 {
            let mut bad = bytes.clone();
            bad[i] ^= 1 << bit;
            assert!(
                FitCheckpoint::from_bytes(&bad).is_err(),
                "byte {i} bit {bit}"
            );
        }
    }
}

#[test]
fn smo_snapshots_round_trip_and_continue_exactly() {
    let (x, y) = hard(7, 200);
    let kernel = KernelSpec::Rbf { gamma: 2.0 };
    let n = y.len();
    let p = vec![-1.0; n];
    let upper = vec![100.0; n];
    let qp = BoxQp {
        p: &p,
        y: &y,
        upper: &upper,
        equality: Equality::Sum { delta: 0.0 },
        fixed: None,
    };
    let s = SolverSettings {
        tol: 1e-8,
        ..SolverSettings::default()
    };
    let mut q = SvcQ::new(&x, kernel, &y, 1 << 20).unwrap();
    let mut a0 = vec![0.0; n];
    let i0 = solve(&mut q, &qp, &mut a0, &s, &mut NoObserver).unwrap();
    assert!(i0.iterations > 1000, "{}", i0.iterations);
    let mut q = SvcQ::new(&x, kernel, &y, 1 << 20).unwrap();
    let mut a = vec![0.0; n];
    let out = Smo::new(&s)
        .keep_snapshot(true)
        .solve(&mut q, &qp, &mut a, &mut StopAt { k: 1, calls: 0 })
        .unwrap();
    let (info, snap) = (out.info, out.snapshot);
    assert_eq!(info.status, Status::Interrupted);
    let snap = snap.unwrap();
    assert_eq!(snap.iterations(), 1000);
    let (back, used) = SmoSnapshot::from_bytes(&snap.to_bytes()).unwrap();
    assert_eq!(used, snap.to_bytes().len());
    assert_eq!(back, snap);
    // Continue on a fresh matrix (a new process would build one).
    let mut q = SvcQ::new(&x, kernel, &y, 1 << 20).unwrap();
    let mut a1 = vec![0.0; n];
    let out = Smo::new(&s)
        .resume(Some(&back))
        .keep_snapshot(true)
        .solve(&mut q, &qp, &mut a1, &mut NoObserver)
        .unwrap();
    let (i1, none) = (out.info, out.snapshot);
    assert!(none.is_none());
    assert_eq!(i1.status, Status::Converged);
    assert_eq!(i1.iterations, i0.iterations);
    assert_eq!(i1.objective.to_bits(), i0.objective.to_bits());
    assert_eq!(a1, a0);
}

/// Inputs found by `fuzz/run_all.sh` (fuzz_checkpoint): each must be refused or read back to the
/// very same bytes, never panic.
#[test]
fn fuzz_found_checkpoints_are_refused_or_read_back_exactly() {
    let name = "checkpoint-crash-1";
    let p = format!("{}/tests/data/fuzz/{name}", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(p).unwrap();
    // crash-1: a snapshot without the equality but with non-zero delta bits (accepting it would
    // write it back differently).
    if let Ok(c) = FitCheckpoint::from_bytes(&bytes) {
        assert_eq!(c.to_bytes(), bytes, "{name}");
    }
    if let Ok((s, used)) = SmoSnapshot::from_bytes(&bytes) {
        assert_eq!(s.to_bytes(), &bytes[..used], "{name}");
    }
}

/// Cross-validation hands each finished fold to the part callback in order and stops, with
/// status Interrupted, at the fold whose fit the observer stops; uninterrupted, it equals the
/// predictions of fits on the folds made by hand with the same seeded assignment.
#[test]
fn cross_validation_reports_folds_and_stops_when_asked() {
    use marginkit::svm::train::{cross_validation, fold_assignment};
    let data = data_file("heart_scale");
    let p = SvmParams::new().seed(4).check().unwrap();
    let mut done = Vec::new();
    let cv = cross_validation(
        &p,
        &data,
        4,
        &mut Control::default().on_part(|f| done.push(*f)),
    )
    .unwrap();
    assert_eq!(done, vec![0, 1, 2, 3]);
    assert_eq!(cv.status, Status::Converged);
    let folds = fold_assignment(&data.y, 4, true, 4);
    for f in 0..4 {
        let train: Vec<usize> = (0..data.len()).filter(|&i| folds[i] != f).collect();
        let test: Vec<usize> = (0..data.len()).filter(|&i| folds[i] == f).collect();
        let m = fit(&p, &data.subset(&train), &mut Control::default())
            .unwrap()
            .model;
        let pred = m.predict(&data.x.select_rows(&test)).unwrap();
        for (k, &i) in test.iter().enumerate() {
            assert_eq!(cv.predictions[i], pred[k], "fold {f} row {i}");
        }
    }
    // An observer that stops at its first report, inside the first fold's fit.
    struct StopAtOnce;
    impl Observer for StopAtOnce {
        fn on_iter(&mut self, _: &IterStats) -> ControlFlow<()> {
            ControlFlow::Break(())
        }
    }
    // C = 1000 takes the folds' SMO past its first report.
    let long = SvmParams::new()
        .c(1000.0)
        .gamma(0.05)
        .tol(1e-6)
        .check()
        .unwrap();
    let mut done = Vec::new();
    let cv = cross_validation(
        &long,
        &data,
        4,
        &mut Control::new(StopAtOnce).on_part(|f| done.push(*f)),
    )
    .unwrap();
    assert_eq!(cv.status, Status::Interrupted);
    assert!(done.is_empty(), "{done:?}");
}
