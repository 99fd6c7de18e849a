//! Probabilities consistent with predictions: for binary models trained with `-b 1`, the most
//! probable class is the predicted class, on random data sets (property test, seeded, with and
//! without sample weights); the calibration is weight-aware (integer weights == repeated values);
//! SVR's Laplace scale is LIBSVM's rule applied to cross-validated residuals computed here.

use marginkit::fit::{Control, Fit};
use marginkit::svm::params::Probability;
use marginkit::svm::probability::sigmoid_train_origin;
use marginkit::svm::train::{fit, fold_assignment};
use marginkit::svm::{SvmParams, SvmType};
use marginkit::{Dataset, DenseMatrix, Features};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

fn random_set(seed: u64, n: usize, d: usize, signal: f64, weighted: bool) -> (Dataset, Features) {
    let mut g = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut v = Vec::with_capacity(n * d);
    let mut y = Vec::with_capacity(n);
    for i in 0..n {
        let c = if i % 2 == 0 { 1.0 } else { -1.0 };
        for _ in 0..d {
            v.push(g.gen_range(-1.0..1.0) + signal * c);
        }
        // Some label noise.
        y.push(if g.gen_bool(0.1) { -c } else { c });
    }
    let w = weighted.then(|| (0..n).map(|_| f64::from(g.gen_range(0u8..4))).collect());
    let x = Features::Dense(DenseMatrix::new(n, d, v).unwrap());
    let t: Vec<f64> = (0..200 * d).map(|_| g.gen_range(-2.0..2.0)).collect();
    let test = Features::Dense(DenseMatrix::new(200, d, t).unwrap());
    (Dataset::new(x, y, w).unwrap(), test)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]
    #[test]
    fn most_probable_class_is_the_predicted_class(
        seed in 0u64..1_000_000,
        n in 16usize..70,
        d in 1usize..5,
        signal in 0.0f64..0.8,
        log_c in -3.0f64..4.0,
        log_g in -3.0f64..2.0,
        weighted in any::<bool>(),
        nu_svc in any::<bool>(),
    ) {
        let (data, test) = random_set(seed, n, d, signal, weighted);
        if data.weights.as_ref().is_some_and(|w| w.iter().all(|&v| v == 0.0)) {
            return Ok(());
        }
        let mut p = SvmParams::new()
            .c(log_c.exp2())
            .gamma(log_g.exp2())
            .probability(Probability::On)
            .seed(seed);
        if nu_svc {
            p = p.svm_type(SvmType::NuSvc).nu(0.2);
        }
        let params = p.check().unwrap();
        let Ok(Fit { model, .. }) = fit(&params, &data, &mut Control::default()) else {
            // Single class left after zero weights, or an infeasible nu: nothing to check.
            return Ok(());
        };
        for x in [&data.x, &test] {
            let pred = model.predict(x).unwrap();
            let prob = model.predict_probability(x).unwrap();
            for (k, (label, probs)) in prob.iter().enumerate() {
                prop_assert_eq!(*label, pred[k]);
                let best = if probs[0] >= probs[1] { 0 } else { 1 };
                if probs[0] != probs[1] {
                    prop_assert_eq!(model.labels[best], pred[k], "row {} probs {:?}", k, probs);
                }
            }
        }
    }
}

#[test]
fn origin_sigmoid_with_integer_weights_equals_repeated_values() {
    let dec: Vec<f64> = (0..60)
        .map(|i| ((i * 37) % 23) as f64 / 7.0 - 1.5)
        .collect();
    let pos: Vec<bool> = (0..60).map(|i| (i * 37) % 23 > 9 || i % 7 == 0).collect();
    let w: Vec<f64> = (0..60).map(|i| (i % 4) as f64).collect();
    let a = sigmoid_train_origin(&dec, &pos, Some(&w));
    let (mut rd, mut rp) = (Vec::new(), Vec::new());
    for i in 0..60 {
        for _ in 0..w[i] as usize {
            rd.push(dec[i]);
            rp.push(pos[i]);
        }
    }
    let ra = sigmoid_train_origin(&rd, &rp, None);
    assert!(a < 0.0);
    assert!((a - ra).abs() <= 1e-8 * a.abs(), "{a} vs {ra}");
}

/// LIBSVM's rule for the Laplace scale of SVR residuals (svm.cpp, `svm_svr_probability`): the mean
/// absolute residual `mae`, then the mean absolute residual again over the residuals with
/// `|r| <= 5 std`, `std = sqrt(2) mae` (the standard deviation of a Laplace law with mean absolute
/// value `mae`). Returns the scale and how many residuals were dropped.
fn laplace_rule(res: &[f64]) -> (f64, usize) {
    let mae = res.iter().map(|r| r.abs()).sum::<f64>() / res.len() as f64;
    let cut = 5.0 * (2.0 * mae * mae).sqrt();
    let kept: Vec<f64> = res.iter().map(|r| r.abs()).filter(|&r| r <= cut).collect();
    (
        kept.iter().sum::<f64>() / kept.len() as f64,
        res.len() - kept.len(),
    )
}

/// 1-D regression, y = sin(3x) + noise, with `outliers` rows whose targets are 200 off: their
/// cross-validated residuals lie beyond 5 std, so the rule drops them.
fn regression_set(seed: u64, n: usize, outliers: usize) -> Dataset {
    let mut g = Xoshiro256PlusPlus::seed_from_u64(seed);
    let x: Vec<f64> = (0..n).map(|_| g.gen_range(-1.0..1.0)).collect();
    let y: Vec<f64> = x
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let base = (3.0 * v).sin() + 0.1 * g.gen_range(-1.0..1.0);
            if i < outliers {
                base + 200.0
            } else {
                base
            }
        })
        .collect();
    Dataset::new(Features::Dense(DenseMatrix::new(n, 1, x).unwrap()), y, None).unwrap()
}

#[test]
fn svr_laplace_scale_is_libsvms_rule_on_the_cross_validated_residuals() {
    for (seed, n, outliers, svm_type) in [
        (1u64, 80usize, 0usize, SvmType::EpsSvr),
        (2, 90, 2, SvmType::EpsSvr),
        (3, 70, 1, SvmType::NuSvr),
    ] {
        let data = regression_set(seed, n, outliers);
        let base = SvmParams::new()
            .svm_type(svm_type)
            .c(2.0)
            .gamma(1.0)
            .epsilon(0.05)
            .nu(0.5)
            .tol(1e-10)
            .seed(seed);
        let params = base.clone().probability(Probability::On).check().unwrap();
        let plain = base.check().unwrap();
        let Fit { model, .. } = fit(&params, &data, &mut Control::default()).unwrap();
        let sigma = model.svr_sigma().expect("-b 1 gives a Laplace scale");
        // The 5-fold residuals, fold by fold: the fold assignment of the fit's seed, a model
        // without probabilities trained on the other folds, its prediction on the fold.
        let folds = fold_assignment(&data.y, 5, false, seed);
        let mut res = vec![0.0; n];
        for f in 0..5 {
            let train: Vec<usize> = (0..n).filter(|&i| folds[i] != f).collect();
            let test: Vec<usize> = (0..n).filter(|&i| folds[i] == f).collect();
            let Fit { model: m, .. } =
                fit(&plain, &data.subset(&train), &mut Control::default()).unwrap();
            let pred = m.predict(&data.x.select_rows(&test)).unwrap();
            for (k, &i) in test.iter().enumerate() {
                res[i] = data.y[i] - pred[k];
            }
        }
        let (want, dropped) = laplace_rule(&res);
        assert_eq!(
            dropped, outliers,
            "seed {seed}: the 200-off rows are dropped"
        );
        assert!(
            (sigma - want).abs() <= 1e-12 * want,
            "seed {seed}: sigma {sigma}, the rule on the CV residuals {want}"
        );
        // Without the cut the scale would be dominated by the outliers.
        if outliers > 0 {
            let mae = res.iter().map(|r| r.abs()).sum::<f64>() / n as f64;
            assert!(mae > 2.0 * sigma, "seed {seed}: mae {mae}, sigma {sigma}");
        }
    }
}
