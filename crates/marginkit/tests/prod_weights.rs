//! Exact sample weights: integer weights give the same optimum as repeated rows (objective and
//! decision values to 1e-8) for C-SVC, nu-SVC, epsilon-SVR, one-class, the linear dual solvers
//! and Platt's sigmoid; the ODM classifier, whose loss is normalized by the number of rows
//! (`lambda / m`), equals repeated rows when lambda is scaled by `m / sum(w)`; zero weights drop
//! the sample (support-vector indices still refer to the caller's rows); negative and NaN
//! weights are errors.

use marginkit::data::libsvm_fmt::{read_libsvm_path, ReadOptions};
use marginkit::error::FitError;
use marginkit::fit::{Control, Fit};
use marginkit::odm::{self, OdmParams};
use marginkit::svm::linear::{self, LinearFit, LinearParams, LinearSolver};
use marginkit::svm::probability::sigmoid_train_weighted;
use marginkit::svm::train::fit;
use marginkit::svm::{SvmParams, SvmType, SvmValidParams};
use marginkit::Dataset;

/// Checks `p`, then fits it without an observer.
fn fit_linear(p: LinearParams, data: &Dataset) -> Result<LinearFit, FitError> {
    linear::fit(&p.check()?, data, &mut Control::default())
}

fn data_file(name: &str, rows: usize) -> Dataset {
    let p = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    let d = read_libsvm_path(std::path::Path::new(&p), &ReadOptions::default()).unwrap();
    d.subset(&(0..rows.min(d.len())).collect::<Vec<_>>())
}

/// Weights 1, 2, 3, 1, 2, 3, ... and the data set with each row repeated that many times.
fn weighted_and_repeated(d: &Dataset) -> (Dataset, Dataset) {
    let w: Vec<f64> = (0..d.len()).map(|i| (i % 3 + 1) as f64).collect();
    let weighted = Dataset::new(d.x.clone(), d.y.clone(), Some(w.clone())).unwrap();
    let idx: Vec<usize> = (0..d.len())
        .flat_map(|i| std::iter::repeat_n(i, w[i] as usize))
        .collect();
    (weighted, d.subset(&idx))
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs()))
}

fn check_kernel(name: &str, params: &SvmValidParams, d: &Dataset) {
    let (wd, rd) = weighted_and_repeated(d);
    let Fit {
        model: mw,
        report: rw,
        ..
    } = fit(params, &wd, &mut Control::default()).unwrap();
    let Fit {
        model: mr,
        report: rr,
        ..
    } = fit(params, &rd, &mut Control::default()).unwrap();
    for (a, b) in rw.subproblems.iter().zip(&rr.subproblems) {
        assert!(
            close(a.objective, b.objective, 1e-8),
            "{name}: objective {} vs {}",
            a.objective,
            b.objective
        );
    }
    let (dw, dr) = (mw.decision_values(&d.x), mr.decision_values(&d.x));
    for (a, b) in dw.iter().flatten().zip(dr.iter().flatten()) {
        assert!(close(*a, *b, 1e-7), "{name}: decision {a} vs {b}");
    }
}

#[test]
fn integer_weights_equal_repeated_rows_for_kernel_models() {
    let heart = data_file("heart_scale", 90);
    let iris = data_file("iris.scale.svm", 150);
    let auto = data_file("auto.scale.svm", 120);
    let tight = |p: SvmParams| p.tol(1e-10).check().unwrap();
    check_kernel("c-svc", &tight(SvmParams::new().c(3.0)), &heart);
    check_kernel("c-svc 3 classes", &tight(SvmParams::new().c(3.0)), &iris);
    check_kernel(
        "nu-svc",
        &tight(SvmParams::new().svm_type(SvmType::NuSvc).nu(0.3)),
        &heart,
    );
    check_kernel(
        "eps-svr",
        &tight(SvmParams::new().svm_type(SvmType::EpsSvr).c(5.0)),
        &auto,
    );
    check_kernel(
        "one-class",
        &tight(SvmParams::new().svm_type(SvmType::OneClass).nu(0.3)),
        &heart,
    );
}

#[test]
fn integer_weights_equal_repeated_rows_for_linear_models() {
    let heart = data_file("heart_scale", 150);
    let auto = data_file("auto.scale.svm", 150);
    for (solver, d) in [
        (LinearSolver::L1LossSvcDual, &heart),
        (LinearSolver::L2LossSvcDual, &heart),
        (LinearSolver::L1LossSvrDual, &auto),
        (LinearSolver::L2LossSvrDual, &auto),
    ] {
        let (wd, rd) = weighted_and_repeated(d);
        let p = LinearParams::new(solver)
            .c(0.5)
            .eps(1e-10)
            .bias(1.0)
            .max_passes(1_000_000)
            .check()
            .unwrap();
        let (fw, fr) = (
            linear::fit(&p, &wd, &mut Control::default()).unwrap(),
            linear::fit(&p, &rd, &mut Control::default()).unwrap(),
        );
        let (a, b) = (&fw.report.subproblems[0], &fr.report.subproblems[0]);
        assert!(
            close(a.primal_objective, b.primal_objective, 1e-8),
            "{solver:?}: {} vs {}",
            a.primal_objective,
            b.primal_objective
        );
        let (dw, dr) = (
            fw.model.decision_values(&d.x),
            fr.model.decision_values(&d.x),
        );
        for (x, y) in dw.iter().zip(&dr) {
            assert!(close(*x, *y, 1e-6), "{solver:?}: {x} vs {y}");
        }
    }
}

#[test]
fn platt_sigmoid_with_integer_weights_equals_repeated_values() {
    // Overlapping decision values so that the sigmoid is finite.
    let dec: Vec<f64> = (0..60)
        .map(|i| ((i * 37) % 23) as f64 / 7.0 - 1.5)
        .collect();
    let pos: Vec<bool> = (0..60).map(|i| (i * 37) % 23 > 9 || i % 7 == 0).collect();
    let w: Vec<f64> = (0..60).map(|i| (i % 4) as f64).collect();
    let (a, b) = sigmoid_train_weighted(&dec, &pos, Some(&w));
    let (mut rd, mut rp) = (Vec::new(), Vec::new());
    for i in 0..60 {
        for _ in 0..w[i] as usize {
            rd.push(dec[i]);
            rp.push(pos[i]);
        }
    }
    let (ra, rb) = sigmoid_train_weighted(&rd, &rp, None);
    assert!(
        close(a, ra, 1e-8) && close(b, rb, 1e-8),
        "({a}, {b}) vs ({ra}, {rb})"
    );
}

#[test]
fn zero_weights_drop_the_sample_and_keep_the_row_numbers() {
    let d = data_file("heart_scale", 120);
    let w: Vec<f64> = (0..d.len())
        .map(|i| if i % 4 == 1 { 0.0 } else { 1.0 })
        .collect();
    let wd = Dataset::new(d.x.clone(), d.y.clone(), Some(w.clone())).unwrap();
    let keep: Vec<usize> = (0..d.len()).filter(|&i| w[i] > 0.0).collect();
    for params in [
        SvmParams::new().c(2.0).check().unwrap(),
        SvmParams::new()
            .c(2.0)
            .probability(marginkit::svm::params::Probability::On)
            .check()
            .unwrap(),
    ] {
        let Fit { model: mw, .. } = fit(&params, &wd, &mut Control::default()).unwrap();
        let Fit { model: ms, .. } =
            fit(&params, &d.subset(&keep), &mut Control::default()).unwrap();
        assert_eq!(mw.sv_coef, ms.sv_coef);
        assert_eq!(mw.rho, ms.rho);
        assert_eq!(mw.prob_a, ms.prob_a);
        let idx = mw.sv_indices.as_ref().unwrap();
        let sub_idx = ms.sv_indices.as_ref().unwrap();
        for (k, (&i, &j)) in idx.iter().zip(sub_idx).enumerate() {
            assert_eq!(i, keep[j]);
            assert!(w[i] > 0.0);
            let (a, b): (Vec<_>, Vec<_>) =
                (mw.sv.row(k).iter().collect(), d.x.row(i).iter().collect());
            assert_eq!(a, b, "support vector {k} is row {i}");
        }
    }
}

#[test]
fn negative_and_nan_weights_are_errors() {
    let d = data_file("heart_scale", 60);
    for bad in [-1.0, f64::NAN, f64::INFINITY] {
        let mut w = vec![1.0; d.len()];
        w[5] = bad;
        assert!(Dataset::new(d.x.clone(), d.y.clone(), Some(w.clone())).is_err());
        // The field is public: the fits check it again.
        let mut raw = d.clone();
        raw.weights = Some(w);
        let e = fit(
            &SvmParams::new().check().unwrap(),
            &raw,
            &mut Control::default(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("row 5"), "{e}");
        let e = fit_linear(LinearParams::new(LinearSolver::L2LossSvcDual), &raw).unwrap_err();
        assert!(e.to_string().contains("row 5"), "{e}");
    }
}

#[test]
fn odm_integer_weights_equal_repeated_rows_with_lambda_scaled_by_the_row_count() {
    // ODM's loss is (lambda / m) sum_i s_i loss_i with m the number of rows: weights w with
    // lambda m / sum(w) give the problem of the repeated rows with lambda.
    let d = data_file("heart_scale", 90);
    let (wd, rd) = weighted_and_repeated(&d);
    let (m, total) = (wd.len() as f64, rd.len() as f64);
    let lambda = 10.0;
    let fit_odm = |lam: f64, data: &Dataset| {
        let p = OdmParams::new()
            .lambda(lam)
            .nu(0.5)
            .theta(0.2)
            .tol(1e-10)
            .check()
            .unwrap();
        odm::fit(&p, data, &mut Control::default()).unwrap()
    };
    let fr = fit_odm(lambda, &rd);
    let fw = fit_odm(lambda * m / total, &wd);
    assert!(
        close(fw.report.primal, fr.report.primal, 1e-8),
        "primal {} vs {}",
        fw.report.primal,
        fr.report.primal
    );
    assert!(
        close(fw.report.dual, fr.report.dual, 1e-8),
        "dual {} vs {}",
        fw.report.dual,
        fr.report.dual
    );
    let (dw, dr) = (
        fw.model.decision_values(&d.x),
        fr.model.decision_values(&d.x),
    );
    for (a, b) in dw.iter().flatten().zip(dr.iter().flatten()) {
        assert!(close(*a, *b, 1e-7), "decision {a} vs {b}");
    }
    // With the same lambda the two problems differ (the loss weight is lambda / m).
    let same = fit_odm(lambda, &wd);
    let gap = same
        .model
        .decision_values(&d.x)
        .iter()
        .flatten()
        .zip(dr.iter().flatten())
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(gap > 1e-3, "same lambda: largest decision difference {gap}");
}
