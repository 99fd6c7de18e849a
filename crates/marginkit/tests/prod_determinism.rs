//! Determinism and thread safety: the same data, parameters and seed give bit-identical model
//! files at 1, 2 and 8 threads (Platt scaling and cross-validation folds included, dense and
//! sparse data, classification, regression, one-class, linear), and many fits running at once
//! in one process give exactly what they give one at a time.

use marginkit::data::libsvm_fmt::{read_libsvm_path, ReadOptions};
use marginkit::fit::{Control, Fit};
use marginkit::svm::linear::{self, cross_validation as linear_cv, LinearParams, LinearSolver};
use marginkit::svm::model_io::write_model;
use marginkit::svm::params::Probability;
use marginkit::svm::train::{cross_validation, fit};
use marginkit::svm::{SvmParams, SvmType, SvmValidParams};
use marginkit::{CsrMatrix, Dataset, DenseMatrix, Features};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

fn data_file(name: &str) -> Dataset {
    let p = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    read_libsvm_path(std::path::Path::new(&p), &ReadOptions::default()).unwrap()
}

/// Three overlapping classes, `d` features, about `density` of them non-zero.
fn blobs(seed: u64, n: usize, d: usize, density: f64, sparse: bool) -> Dataset {
    let mut g = Xoshiro256PlusPlus::seed_from_u64(seed);
    let (mut v, mut y) = (Vec::with_capacity(n * d), Vec::with_capacity(n));
    for i in 0..n {
        let c = (i % 3) as f64;
        for k in 0..d {
            let z = if g.gen_bool(density) {
                g.gen_range(-1.0..1.0) + 0.4 * c * ((k % 3) as f64 - 1.0)
            } else {
                0.0
            };
            v.push(z);
        }
        y.push(c);
    }
    let x = if sparse {
        let (mut ptr, mut idx, mut val) = (vec![0], Vec::new(), Vec::new());
        for i in 0..n {
            for k in 0..d {
                if v[i * d + k] != 0.0 {
                    idx.push(k as u32);
                    val.push(v[i * d + k]);
                }
            }
            ptr.push(idx.len());
        }
        Features::Sparse(CsrMatrix::new(d, ptr, idx, val).unwrap())
    } else {
        Features::Dense(DenseMatrix::new(n, d, v).unwrap())
    };
    Dataset::new(x, y, None).unwrap()
}

fn in_pool<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f)
}

fn model_bytes(params: &SvmValidParams, data: &Dataset) -> Vec<u8> {
    let Fit {
        model: m,
        report: r,
        ..
    } = fit(params, data, &mut Control::default()).unwrap();
    assert_eq!(r.status(), marginkit::solver::Status::Converged);
    let mut out = Vec::new();
    write_model(&mut out, &m).unwrap();
    out
}

#[test]
fn model_files_are_identical_at_1_2_and_8_threads() {
    let heart = data_file("heart_scale");
    let iris = data_file("iris.scale.svm");
    let auto = data_file("auto.scale.svm");
    let dense = blobs(1, 900, 40, 0.8, false);
    let sparse = blobs(2, 900, 300, 0.05, true);
    let prob = |p: SvmParams| p.probability(Probability::On).seed(7);
    let cases: Vec<(&str, SvmValidParams, &Dataset)> = vec![
        (
            "heart -b 1",
            prob(SvmParams::new().c(4.0)).check().unwrap(),
            &heart,
        ),
        (
            "iris -b 1",
            prob(SvmParams::new().c(10.0)).check().unwrap(),
            &iris,
        ),
        (
            "auto svr -b 1",
            prob(SvmParams::new().svm_type(SvmType::EpsSvr).c(10.0))
                .check()
                .unwrap(),
            &auto,
        ),
        (
            "heart nu-svc",
            SvmParams::new().svm_type(SvmType::NuSvc).check().unwrap(),
            &heart,
        ),
        (
            "heart one-class",
            SvmParams::new()
                .svm_type(SvmType::OneClass)
                .check()
                .unwrap(),
            &heart,
        ),
        (
            "dense 3-class",
            SvmParams::new().c(10.0).check().unwrap(),
            &dense,
        ),
        (
            "sparse 3-class -b 1",
            prob(SvmParams::new().c(10.0)).check().unwrap(),
            &sparse,
        ),
    ];
    for (name, params, data) in &cases {
        let one = in_pool(1, || model_bytes(params, data));
        for t in [2, 8] {
            let other = in_pool(t, || model_bytes(params, data));
            assert!(one == other, "{name}: model file differs at {t} threads");
        }
        // And run after run.
        assert!(one == in_pool(2, || model_bytes(params, data)), "{name}");
    }
}

#[test]
fn cross_validation_is_identical_at_1_2_and_8_threads() {
    let heart = data_file("heart_scale");
    let iris = data_file("iris.scale.svm");
    for (params, data) in [
        (SvmParams::new().c(2.0).check().unwrap(), &heart),
        (
            SvmParams::new()
                .c(2.0)
                .probability(Probability::On)
                .check()
                .unwrap(),
            &iris,
        ),
    ] {
        let one = in_pool(1, || {
            cross_validation(&params, data, 5, &mut Control::default()).unwrap()
        });
        for t in [2, 8] {
            let other = in_pool(t, || {
                cross_validation(&params, data, 5, &mut Control::default()).unwrap()
            });
            assert_eq!(one, other, "threads {t}");
        }
    }
    let lp = LinearParams::new(LinearSolver::L2LossSvcDual)
        .c(1.0)
        .check()
        .unwrap();
    let one = in_pool(1, || {
        linear_cv(&lp, &iris, 5, &mut Control::default()).unwrap()
    });
    let two = in_pool(8, || {
        linear_cv(&lp, &iris, 5, &mut Control::default()).unwrap()
    });
    assert_eq!(one, two);
}

#[test]
fn linear_models_are_identical_at_1_2_and_8_threads() {
    let sparse = blobs(3, 3000, 300, 0.05, true);
    // Large enough that the primal Newton solvers cut the rows into several parallel chunks.
    let dense = blobs(4, 4000, 40, 1.0, false);
    for (solver, data) in [
        (LinearSolver::L1LossSvcDual, &sparse),
        (LinearSolver::L2LossSvcDual, &sparse),
        (LinearSolver::L2LossSvrDual, &sparse),
        (LinearSolver::L2LossSvcPrimal, &sparse),
        (LinearSolver::L2LossSvcPrimal, &dense),
        (LinearSolver::L2LossSvrPrimal, &dense),
    ] {
        let p = LinearParams::new(solver).c(1.0).bias(1.0).check().unwrap();
        let bytes = |t| {
            in_pool(t, || {
                let fit = linear::fit(&p, data, &mut Control::default()).unwrap();
                let mut out = Vec::new();
                fit.model.write(&mut out).unwrap();
                out
            })
        };
        let one = bytes(1);
        assert!(one == bytes(2) && one == bytes(8), "{solver:?}");
    }
}

#[test]
fn concurrent_fits_equal_sequential_fits() {
    let heart = data_file("heart_scale");
    let iris = data_file("iris.scale.svm");
    let jobs: Vec<(SvmValidParams, &Dataset)> = vec![
        (SvmParams::new().c(1.0).check().unwrap(), &heart),
        (
            SvmParams::new()
                .c(8.0)
                .probability(Probability::On)
                .check()
                .unwrap(),
            &heart,
        ),
        (SvmParams::new().c(3.0).check().unwrap(), &iris),
        (
            SvmParams::new()
                .svm_type(SvmType::NuSvc)
                .probability(Probability::On)
                .seed(5)
                .check()
                .unwrap(),
            &iris,
        ),
        (
            SvmParams::new()
                .svm_type(SvmType::OneClass)
                .check()
                .unwrap(),
            &heart,
        ),
        (
            SvmParams::new().c(100.0).gamma(0.5).check().unwrap(),
            &heart,
        ),
    ];
    let sequential: Vec<Vec<u8>> = jobs.iter().map(|(p, d)| model_bytes(p, d)).collect();
    // All at once, twice over, on plain threads (sharing rayon's global pool).
    let concurrent: Vec<Vec<u8>> = std::thread::scope(|s| {
        let handles: Vec<_> = jobs
            .iter()
            .chain(jobs.iter())
            .map(|(p, d)| s.spawn(move || model_bytes(p, d)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (k, m) in concurrent.iter().enumerate() {
        assert!(*m == sequential[k % jobs.len()], "job {}", k % jobs.len());
    }
}

/// Two overlapping classes in `d` dense features with a real-valued target for SVR: many
/// support vectors, so shrinking, cache evictions and the parallel sections all happen.
fn binary_blobs(seed: u64, n: usize, d: usize, regression: bool) -> Dataset {
    let mut g = Xoshiro256PlusPlus::seed_from_u64(seed);
    let (mut v, mut y) = (Vec::with_capacity(n * d), Vec::with_capacity(n));
    for i in 0..n {
        let c = if i % 2 == 0 { 1.0 } else { -1.0 };
        let mut s = 0.0f64;
        for _ in 0..d {
            let z = g.gen_range(-1.0..1.0) + 0.25 * c;
            s += z;
            v.push(z);
        }
        y.push(if regression {
            s.sin() + 0.1 * g.gen_range(-1.0..1.0)
        } else {
            c
        });
    }
    Dataset::new(Features::Dense(DenseMatrix::new(n, d, v).unwrap()), y, None).unwrap()
}

#[test]
fn large_fits_are_identical_at_1_2_and_3_threads() {
    // n = 5,000 (10,000 SVR variables): above the thresholds of the parallel column fills, scans,
    // `G_bar` updates and the solver's hot pool, with a 4 MB cache (evictions, and the pending
    // row swaps of shrinking applied to the cached columns in parallel).
    let cls = binary_blobs(31, 5000, 8, false);
    let reg = binary_blobs(32, 5000, 8, true);
    let base = || SvmParams::new().gamma(0.25).cache_bytes(4 << 20);
    let cases: Vec<(&str, SvmValidParams, &Dataset)> = vec![
        ("c-svc", base().c(2.0).check().unwrap(), &cls),
        (
            "eps-svr",
            base()
                .svm_type(SvmType::EpsSvr)
                .c(1.0)
                .epsilon(0.1)
                .check()
                .unwrap(),
            &reg,
        ),
        (
            "one-class",
            base().svm_type(SvmType::OneClass).nu(0.2).check().unwrap(),
            &cls,
        ),
        (
            "nu-svc",
            base().svm_type(SvmType::NuSvc).nu(0.4).check().unwrap(),
            &cls,
        ),
    ];
    for (name, params, data) in &cases {
        let one = in_pool(1, || model_bytes(params, data));
        for t in [2, 3] {
            let other = in_pool(t, || model_bytes(params, data));
            assert!(one == other, "{name}: model file differs at {t} threads");
        }
    }
}
