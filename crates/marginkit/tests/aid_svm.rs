//! AID-SVM (linear and kernel) against the full problem solved directly (`marginkit train -t 0`
//! semantics: hinge loss, unregularized bias): objective within the gap tolerance, the lower bound
//! below the optimum and non-decreasing, models that predict, save and load; thread invariance.

use std::path::PathBuf;

use marginkit::aid::svm::{
    self, AidLinearEngine, AidSvmModel, AidSvmParams, KernelSteering, NystromRank,
    AUTO_MAX_RESIDUAL,
};
use marginkit::aid::Termination;
use marginkit::data::libsvm_fmt::{read_libsvm_path, ReadOptions};
use marginkit::fit::{Control, Fit};
use marginkit::kernel::qmatrix::kernel_value;
use marginkit::svm::linear::LinearModel;
use marginkit::svm::model_io::{load_model, save_model};
use marginkit::svm::params::{Gamma, KernelKind, KernelParams};
use marginkit::svm::{train::fit, SvmParams};
use marginkit::{Dataset, DenseMatrix, Features};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// An RBF kernel with this gamma.
fn rbf(gamma: f64) -> KernelParams {
    KernelParams {
        kind: KernelKind::Rbf,
        gamma: Gamma::Value(gamma),
        ..KernelParams::default()
    }
}

fn heart() -> Dataset {
    let p: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests", "data", "heart_scale"]
        .iter()
        .collect();
    read_libsvm_path(p, &ReadOptions::default()).unwrap()
}

/// Two overlapping Gaussian blobs in `m` dimensions, labels +1/-1.
fn blobs(n: usize, m: usize, seed: u64) -> Dataset {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut x = Vec::with_capacity(n * m);
    let mut y = Vec::with_capacity(n);
    for i in 0..n {
        let c = if i % 3 == 0 { -1.0 } else { 1.0 };
        for j in 0..m {
            let shift = if j < 2 { 0.8 * c } else { 0.0 };
            x.push(shift + rng.gen_range(-1.5..1.5));
        }
        y.push(c);
    }
    Dataset::new(Features::Dense(DenseMatrix::new(n, m, x).unwrap()), y, None).unwrap()
}

/// The full problem's optimum by SMO (`train -t <kernel> -c C -e 1e-7`) and its primal value
/// `1/2 a'Qa + C sum hinge`, recomputed here from the model.
fn full_primal(d: &Dataset, kernel: KernelParams, c: f64) -> f64 {
    let params = SvmParams::new()
        .kernel(kernel)
        .c(c)
        .tol(1e-7)
        .check()
        .unwrap();
    let Fit { model, .. } = fit(&params, d, &mut Control::default()).unwrap();
    model_primal(d, &model, c)
}

/// `1/2 a'Qa + C sum hinge` of a two-class kernel model on `d`, from scratch (f64 kernel).
fn model_primal(d: &Dataset, model: &marginkit::svm::model::SvmModel, c: f64) -> f64 {
    let coef = &model.sv_coef[0];
    let idx = model.sv_indices.clone().unwrap();
    let mut w_sq = 0.0;
    for a in 0..idx.len() {
        for b in 0..idx.len() {
            w_sq += coef[a] * coef[b] * kernel_value(&d.x, model.kernel, idx[a], idx[b]);
        }
    }
    let dec = model.decision_values(&d.x);
    let pos = model.labels[0];
    let hinge: f64 = (0..d.len())
        .map(|i| {
            let y = if d.y[i] == pos { 1.0 } else { -1.0 };
            (1.0 - y * dec[i][0]).max(0.0)
        })
        .sum();
    0.5 * w_sq + c * hinge
}

fn linear_kp() -> KernelParams {
    KernelParams {
        kind: KernelKind::Linear,
        ..KernelParams::default()
    }
}

fn check_run(fit: &marginkit::aid::svm::AidSvmFit, full: f64, tol: f64) {
    let run = &fit.report.run.as_ref().unwrap();
    assert!(
        matches!(
            run.termination,
            Some(Termination::Optimal | Termination::Gap)
        ),
        "{:?}",
        run.stop_name()
    );
    let e = run.best_objective;
    assert!(e >= full * (1.0 - 1e-7), "AID {e} below the optimum {full}");
    assert!((e - full) / full <= tol, "AID {e} vs full {full}");
    for r in &run.iterations {
        assert!(
            r.bound_t <= full * (1.0 + 1e-7),
            "bound {} > optimum {full}",
            r.bound_t
        );
    }
    // Prop. 4: F^t non-decreasing (the dual bounds of inexact solves may wobble by the solver
    // tolerance only).
    for w in run.iterations.windows(2) {
        assert!(
            w[1].bound_t >= w[0].bound_t - 1e-4 * full,
            "F^t decreased: {:?}",
            run.iterations
        );
        assert!(w[1].lower_bound >= w[0].lower_bound);
        assert!(w[1].best_objective <= w[0].best_objective);
    }
}

#[test]
fn linear_heart_scale_equals_full_problem() {
    let d = heart();
    for c in [0.1, 1.0] {
        let full = full_primal(&d, linear_kp(), c);
        let params = AidSvmParams::new().c(c).r0(0.05).check().unwrap();
        let fit = svm::fit(&params, &d, &mut Control::default()).unwrap();
        check_run(&fit, full, 1e-4);
        let AidSvmModel::Linear(model) = &fit.model.as_ref().unwrap() else {
            panic!("linear model expected")
        };
        // The model is an ordinary linear model: predictions, text round trip.
        let pred = model.predict(&d.x);
        let acc = pred.iter().zip(&d.y).filter(|(a, b)| a == b).count() as f64 / d.len() as f64;
        assert!(acc > 0.8, "{acc}");
        let mut buf = Vec::new();
        model.write(&mut buf).unwrap();
        let back = LinearModel::from_bytes(&buf).unwrap();
        assert_eq!(back.predict(&d.x), pred);
    }
}

#[test]
fn linear_blobs_default_rules() {
    let d = blobs(6000, 5, 11);
    let c = 0.1;
    let full = full_primal(&d, linear_kp(), c);
    let fit = svm::fit(
        &AidSvmParams::new().c(c).check().unwrap(),
        &d,
        &mut Control::default(),
    )
    .unwrap();
    check_run(&fit, full, 1e-4);
    assert!(fit.report.run.as_ref().unwrap().iterations.len() >= 2);
    assert!(
        fit.report
            .run
            .as_ref()
            .unwrap()
            .iterations
            .last()
            .unwrap()
            .r
            < 0.5
    );
}

/// Aggregated problems above the SMO switch size (lowered here to 50 clusters, so that every
/// iteration past the first few goes to the augmented-Lagrangian DCD) reach the same optimum:
/// the full problem's within the gap tolerance, and the SMO engine's run within it too.
#[test]
fn linear_above_smo_switch_reaches_the_same_optimum() {
    let d = blobs(4000, 6, 21);
    let c = 0.1;
    let full = full_primal(&d, linear_kp(), c);
    let run = |engine| {
        svm::fit(
            &AidSvmParams::new()
                .c(c)
                .linear_engine(engine)
                .gap_tol(1e-6)
                .check()
                .unwrap(),
            &d,
            &mut Control::default(),
        )
        .unwrap()
    };
    let smo = run(AidLinearEngine::SmoUpTo(usize::MAX));
    let switched = run(AidLinearEngine::SmoUpTo(50));
    let dcd = run(AidLinearEngine::Dcd);
    assert!(switched
        .report
        .run
        .as_ref()
        .unwrap()
        .iterations
        .iter()
        .any(|r| r.clusters > 50));
    for fit in [&smo, &switched, &dcd] {
        check_run(fit, full, 1e-6);
    }
    let (a, b) = (
        smo.report.run.as_ref().unwrap().best_objective,
        switched.report.run.as_ref().unwrap().best_objective,
    );
    assert!((a - b).abs() <= 1e-6 * full, "SMO {a} vs switched {b}");
}

#[test]
fn rbf_heart_scale_equals_full_problem() {
    let d = heart();
    let gamma = 1.0 / 13.0;
    let kp = KernelParams {
        kind: KernelKind::Rbf,
        gamma: Gamma::Value(gamma),
        ..KernelParams::default()
    };
    let c = 1.0;
    let full = full_primal(&d, kp, c);
    let params = AidSvmParams::new()
        .c(c)
        .kernel(rbf(gamma))
        .r0(0.05)
        .solver_tol(1e-6)
        .check()
        .unwrap();
    let fit = svm::fit(&params, &d, &mut Control::default()).unwrap();
    check_run(&fit, full, 1e-4);
    let AidSvmModel::Kernel(model) = &fit.model.as_ref().unwrap() else {
        panic!("kernel model expected")
    };
    let pred = model.predict(&d.x).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("aid.model.as_ref().unwrap()");
    save_model(&path, model).unwrap();
    let back = load_model(&path).unwrap();
    assert_eq!(back.predict(&d.x).unwrap(), pred);
    let acc = pred.iter().zip(&d.y).filter(|(a, b)| a == b).count() as f64 / d.len() as f64;
    assert!(acc > 0.8);
}

/// The Nystrom-steered kernel AID (a documented deviation from Appendix B): its returned model's
/// primal, recomputed from scratch, is within the gap tolerance of the full optimum, and its
/// reported lower bound (the exact finish's dual value) is below the optimum.
#[test]
fn rbf_nystrom_steered_is_certified_against_full_problem() {
    for (d, gamma, c, rank) in [
        (heart(), 1.0 / 13.0, 1.0, 20),
        (blobs(3000, 4, 7), 0.5, 0.1, 50),
        (blobs(3000, 4, 7), 0.5, 10.0, 8),
    ] {
        let kp = KernelParams {
            kind: KernelKind::Rbf,
            gamma: Gamma::Value(gamma),
            ..KernelParams::default()
        };
        let full = full_primal(&d, kp, c);
        let params = AidSvmParams::new()
            .c(c)
            .kernel(rbf(gamma))
            .kernel_steering(KernelSteering::Nystrom {
                rank: NystromRank::Fixed(rank),
                steer_gap: 1e-3,
            })
            .check()
            .unwrap();
        let fit = svm::fit(&params, &d, &mut Control::default()).unwrap();
        let run = &fit.report.run.as_ref().unwrap();
        assert!(
            matches!(
                run.termination,
                Some(Termination::Optimal | Termination::Gap)
            ),
            "{:?}",
            run.stop_name()
        );
        let e = run.best_objective;
        assert!(
            run.lower_bound <= full * (1.0 + 1e-7),
            "{} > {full}",
            run.lower_bound
        );
        assert!(
            (e - run.lower_bound) / e <= 1e-4,
            "{e} vs {}",
            run.lower_bound
        );
        assert!((e - full) / full <= 1e-4, "AID {e} vs full {full}");
        let last = run.iterations.last().unwrap();
        assert_eq!(last.r, 1.0);
        assert_eq!(last.best_objective, e);
        let finish = fit.report.finish.unwrap();
        assert!(finish.rank >= 1 && finish.rank <= rank);
        assert_eq!(finish.steer_iterations + 1, run.iterations.len());
        let AidSvmModel::Kernel(model) = &fit.model.as_ref().unwrap() else {
            panic!("kernel model expected")
        };
        // The certificate is about the returned model: its primal from scratch equals E.
        let e_model = model_primal(&d, model, c);
        assert!((e_model - e).abs() <= 1e-6 * e, "model {e_model} vs E {e}");
    }
    let bad = AidSvmParams::new()
        .kernel(rbf(0.1))
        .kernel_steering(KernelSteering::Nystrom {
            rank: NystromRank::Fixed(0),
            steer_gap: 1e-3,
        });
    assert!(bad.check().is_err());
}

/// `NystromRank::Auto` follows the kernel width: on wide and medium RBF kernels (sampled
/// rank-100 residual at most 0.9) it steers with 100 landmarks; on a narrow one it skips the
/// steering and the exact SMO starts cold. Every run is certified against the full optimum (SMO
/// at 1e-7) and the model's primal recomputed from scratch.
#[test]
fn nystrom_auto_rank_follows_the_kernel_width() {
    let d = blobs(2500, 6, 11);
    let c = 0.5;
    let mut ranks = Vec::new();
    for gamma in [0.1, 0.5, 4.0] {
        let kp = KernelParams {
            kind: KernelKind::Rbf,
            gamma: Gamma::Value(gamma),
            ..KernelParams::default()
        };
        let full = full_primal(&d, kp, c);
        let params = AidSvmParams::new()
            .c(c)
            .kernel(rbf(gamma))
            .kernel_steering(KernelSteering::Nystrom {
                rank: NystromRank::Auto,
                steer_gap: 1e-3,
            })
            .check()
            .unwrap();
        let fit = svm::fit(&params, &d, &mut Control::default()).unwrap();
        let run = &fit.report.run.as_ref().unwrap();
        assert!(matches!(
            run.termination,
            Some(Termination::Optimal | Termination::Gap)
        ));
        let e = run.best_objective;
        assert!(run.lower_bound <= full * (1.0 + 1e-7));
        assert!((e - run.lower_bound) / e <= 1e-4);
        assert!(
            (e - full) / full <= 1e-4,
            "gamma {gamma}: AID {e} vs full {full}"
        );
        let AidSvmModel::Kernel(model) = &fit.model.as_ref().unwrap() else {
            panic!("kernel model expected")
        };
        let e_model = model_primal(&d, model, c);
        assert!((e_model - e).abs() <= 1e-6 * e, "model {e_model} vs E {e}");
        let f = fit.report.finish.unwrap();
        assert_eq!(f.steer_iterations + 1, run.iterations.len());
        if f.rank == 0 {
            // No steering: one record, the cold exact finish.
            assert_eq!(run.iterations.len(), 1);
            assert!(f.residual > AUTO_MAX_RESIDUAL, "{}", f.residual);
        } else {
            assert!(f.steer_iterations >= 1);
            // The all-row residual of the chosen features is near the sampled one (<= 0.9).
            assert!(f.residual <= AUTO_MAX_RESIDUAL + 0.05, "{}", f.residual);
        }
        ranks.push(f.rank);
    }
    assert!(ranks[0] >= 1 && ranks[0] <= 100, "wide kernel: {ranks:?}");
    assert!(ranks[1] >= 1 && ranks[1] <= 100, "medium kernel: {ranks:?}");
    assert_eq!(ranks[2], 0, "narrow kernel skips the steering: {ranks:?}");
}

#[test]
fn same_result_on_one_and_two_threads() {
    let d = blobs(3000, 4, 5);
    let go = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            svm::fit(
                &AidSvmParams::new().c(0.5).check().unwrap(),
                &d,
                &mut Control::default(),
            )
            .unwrap()
        })
    };
    let (a, b) = (go(1), go(2));
    assert_eq!(a.model.as_ref().unwrap(), b.model.as_ref().unwrap());
    assert_eq!(
        a.report.run.as_ref().unwrap().best_objective,
        b.report.run.as_ref().unwrap().best_objective
    );
}

#[test]
fn bad_input_is_an_error() {
    let mut d = heart();
    // Unlabeled rows (label 0) in a supervised command.
    d.y[3] = 0.0;
    assert!(svm::fit(
        &AidSvmParams::new().check().unwrap(),
        &d,
        &mut Control::default()
    )
    .is_err());
    // One class only.
    let one = Dataset::new(d.x.clone(), vec![1.0; d.len()], None).unwrap();
    assert!(svm::fit(
        &AidSvmParams::new().check().unwrap(),
        &one,
        &mut Control::default()
    )
    .is_err());
    // Bad C and r0.
    for p in [AidSvmParams::new().c(f64::NAN), AidSvmParams::new().r0(0.0)] {
        assert!(p.check().is_err());
    }
}
