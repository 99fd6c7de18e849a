//! Oracle tests for ODMC clustering (`odm::odmc`), k-means and the metrics.
//!
//! - Well-separated blobs are recovered exactly (accuracy 1) for every seed, linear and
//!   Gaussian kernels, k = 2 and k = 3 (recursive bisection).
//! - The readout is never the trivial one-sided labeling and always meets the balance.
//! - The same seed gives the same clusters; the gap estimate is non-negative.
//! - Bad input (k > n, constant data, infeasible beta) gives the specific error.

#![allow(clippy::needless_range_loop)]

use marginkit::cluster::kmeans::{self, KMeansParams};
use marginkit::cluster::metrics::{clustering_accuracy, rand_index};
use marginkit::cluster::{ClusterError, Points};
use marginkit::fit::{Control, Fit};
use marginkit::odm::odmc::{fit, OdmcData, OdmcKernel, OdmcModel, OdmcParams, OdmcReport, Readout};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// ODMC of `p` on `x`, watched by no observer.
fn cluster(x: &Points, p: &OdmcParams) -> Result<Fit<OdmcModel, OdmcReport>, ClusterError> {
    let p = p.clone().check()?;
    fit(&p, &OdmcData::Points(x), &mut Control::default())
}

/// `k` Gaussian blobs of `per` points in `d` dimensions, centres far apart; returns points and
/// the true cluster of every point.
fn blobs(k: usize, per: usize, d: usize, spread: f64, seed: u64) -> (Points, Vec<f64>) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    // Centres on a random simplex-like arrangement, pairwise at least 10 apart.
    let mut centres: Vec<Vec<f64>> = Vec::new();
    while centres.len() < k {
        let c: Vec<f64> = (0..d).map(|_| rng.gen_range(-10.0..10.0)).collect();
        let far = centres.iter().all(|o: &Vec<f64>| {
            o.iter()
                .zip(&c)
                .map(|(a, b)| (a - b) * (a - b))
                .sum::<f64>()
                >= 100.0
        });
        if far {
            centres.push(c);
        }
    }
    let mut v = Vec::new();
    let mut t = Vec::new();
    for i in 0..k * per {
        let c = i % k;
        for j in 0..d {
            let u1: f64 = rng.gen_range(1e-12..1.0);
            let u2: f64 = rng.gen();
            let g = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
            v.push(centres[c][j] + spread * g);
        }
        t.push(c as f64);
    }
    (Points { n: k * per, d, v }, t)
}

#[test]
fn two_blobs_recovered_for_every_seed_linear_and_gaussian() {
    for data_seed in 0..3 {
        let (x, truth) = blobs(2, 60, 3, 1.0, data_seed);
        for seed in 0..5 {
            for kernel in [
                OdmcKernel::Linear,
                OdmcKernel::Gaussian { sigma_scale: 1.0 },
            ] {
                let p = OdmcParams::new()
                    .kernel(kernel)
                    .seed(seed)
                    .iterations(100)
                    .max_rounds(4);
                let r = cluster(&x, &p).unwrap();
                let acc = clustering_accuracy(&r.model.labels, &truth);
                assert_eq!(
                    acc, 1.0,
                    "data {data_seed} seed {seed} {kernel:?}: acc {acc}"
                );
                assert_eq!(rand_index(&r.model.labels, &truth), 1.0);
                assert!(r.report.history.iter().all(|h| h.gap >= 0.0));
            }
        }
    }
}

#[test]
fn three_blobs_by_recursive_bisection() {
    for seed in 0..3 {
        let (x, truth) = blobs(3, 40, 4, 0.8, 10 + seed);
        let p = OdmcParams::new()
            .k(3)
            .seed(seed)
            .iterations(100)
            .max_rounds(4);
        let r = cluster(&x, &p).unwrap();
        assert_eq!(r.model.cluster_sizes.len(), 3);
        assert_eq!(
            clustering_accuracy(&r.model.labels, &truth),
            1.0,
            "seed {seed}"
        );
    }
}

#[test]
fn same_seed_same_clusters_and_readouts_are_admissible() {
    // Overlapping data: the answer is not obvious, so determinism and balance are exercised.
    let (x, _) = blobs(2, 50, 5, 8.0, 3);
    for readout in [
        Readout::Decision,
        Readout::Sign,
        Readout::Heaviest,
        Readout::MinG,
    ] {
        let p = OdmcParams::new()
            .seed(9)
            .beta(0.1)
            .readout(readout)
            .iterations(80)
            .max_rounds(3);
        let a = cluster(&x, &p).unwrap();
        let b = cluster(&x, &p).unwrap();
        assert_eq!(a.model.labels, b.model.labels);
        let gaps = |r: &Fit<OdmcModel, OdmcReport>| {
            r.report
                .history
                .iter()
                .map(|h| (h.gap, h.pool))
                .collect::<Vec<_>>()
        };
        assert_eq!(gaps(&a), gaps(&b));
        assert_eq!(a.model.cluster_sizes.len(), 2, "never a trivial labeling");
        let diff = a.model.cluster_sizes[0] as i64 - a.model.cluster_sizes[1] as i64;
        assert!(
            diff.abs() as f64 <= 0.1 * 100.0 + 1e-9,
            "{readout:?}: sizes {:?}",
            a.model.cluster_sizes
        );
    }
}

#[test]
fn no_trivial_labeling_when_beta_forbids_it() {
    // One tight blob plus a single far outlier: the max-margin split isolates the outlier,
    // which beta = 0.03 forbids.
    let (mut x, _) = blobs(1, 99, 2, 1.0, 5);
    x.v.extend_from_slice(&[500.0, 500.0]);
    x.n += 1;
    for seed in 0..4 {
        for readout in [
            Readout::Decision,
            Readout::Sign,
            Readout::Heaviest,
            Readout::MinG,
        ] {
            let p = OdmcParams::new()
                .seed(seed)
                .readout(readout)
                .iterations(80)
                .max_rounds(3);
            let r = cluster(&x, &p).unwrap();
            let diff = r.model.cluster_sizes[0] as i64 - r.model.cluster_sizes[1] as i64;
            assert!(
                diff.abs() <= 3,
                "{readout:?}: sizes {:?}",
                r.model.cluster_sizes
            );
            let paper = r.model.paper_labels.unwrap();
            let ones = paper.iter().filter(|&&l| l == 1).count() as i64;
            assert!((100 - 2 * ones).abs() <= 3, "paper readout balanced");
        }
    }
}

#[test]
fn bad_input_gives_clear_errors() {
    let (x, _) = blobs(2, 5, 2, 1.0, 0);
    let p = OdmcParams::new().k(11);
    assert!(matches!(
        cluster(&x, &p),
        Err(ClusterError::BadK { k: 11, n: 10 })
    ));
    let constant = Points {
        n: 6,
        d: 2,
        v: vec![1.0; 12],
    };
    assert!(matches!(
        cluster(&constant, &OdmcParams::default()),
        Err(ClusterError::ConstantData { .. })
    ));
    // 11 points, beta * n = 0.33 < 1: |e'y| <= 0.33 is impossible with an odd count.
    let (mut odd, _) = blobs(1, 11, 2, 1.0, 0);
    odd.n = 11;
    let e = cluster(&odd, &OdmcParams::default()).unwrap_err();
    assert!(matches!(e, ClusterError::InfeasibleBalance { .. }));
    assert!(e.to_string().contains("odd"), "{e}");
    let bad_beta = OdmcParams::new().beta(-0.1);
    assert!(matches!(
        cluster(&x, &bad_beta),
        Err(ClusterError::Param(_))
    ));
}

#[test]
fn kmeans_baseline_on_blobs() {
    let (x, truth) = blobs(3, 30, 2, 0.5, 2);
    let kp = KMeansParams::new(3).seed(4).check().unwrap();
    let r = kmeans::fit(&kp, &x, &mut Control::default()).unwrap().model;
    assert_eq!(clustering_accuracy(&r.labels, &truth), 1.0);
}

#[test]
fn results_do_not_depend_on_the_thread_count() {
    let (x, _) = blobs(2, 70, 4, 4.0, 8);
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let p = OdmcParams::new()
                .kernel(OdmcKernel::Gaussian { sigma_scale: 0.5 })
                .seed(2)
                .iterations(60)
                .max_rounds(3);
            cluster(&x, &p).unwrap()
        })
    };
    let (a, b) = (run(1), run(3));
    assert_eq!(a.model.labels, b.model.labels);
    let gaps =
        |r: &Fit<OdmcModel, OdmcReport>| r.report.history.iter().map(|h| h.gap).collect::<Vec<_>>();
    assert_eq!(gaps(&a), gaps(&b));
}
