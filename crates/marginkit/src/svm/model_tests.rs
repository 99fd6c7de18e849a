//! The blocked decision values ([`SvmModel::decision_values`]) against the row-by-row reference
//! ([`SvmModel::decision_values_by_row`], LIBSVM's formula): every kernel, dense and sparse
//! storage, binary and multiclass classification, regression and one-class, at 1 and 2
//! threads; bit equality across thread counts, storage kinds and source layouts; the edge cases
//! of the blocking (no test rows, one support vector, more rows than a block, dimensions that
//! are not a multiple of the vector width, rows wider or narrower than the model).

use super::*;
use crate::data::{CsrMatrix, DenseMatrix};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// Row-major `n x d` values with about `density` of them non-zero (in [-2, 2]).
fn values(n: usize, d: usize, density: f64, rng: &mut Xoshiro256PlusPlus) -> Vec<f64> {
    (0..n * d)
        .map(|_| {
            if rng.gen::<f64>() < density {
                rng.gen_range(-2.0..2.0)
            } else {
                0.0
            }
        })
        .collect()
}

fn dense(n: usize, d: usize, v: &[f64]) -> Features {
    Features::Dense(DenseMatrix::new(n, d, v.to_vec()).unwrap())
}

fn sparse(n: usize, d: usize, v: &[f64]) -> Features {
    let (mut indptr, mut indices, mut vals) = (vec![0], Vec::new(), Vec::new());
    for r in 0..n {
        for k in 0..d {
            if v[r * d + k] != 0.0 {
                indices.push(k as u32);
                vals.push(v[r * d + k]);
            }
        }
        indptr.push(indices.len());
    }
    Features::Sparse(CsrMatrix::new(d, indptr, indices, vals).unwrap())
}

fn kernels() -> Vec<KernelSpec> {
    vec![
        KernelSpec::Linear,
        KernelSpec::Poly {
            gamma: 0.3,
            coef0: 0.5,
            degree: 3,
        },
        KernelSpec::Rbf { gamma: 0.2 },
        KernelSpec::Sigmoid {
            gamma: 0.05,
            coef0: -0.3,
        },
    ]
}

/// A model over the support vectors `sv` with random coefficients: `n_sv` classes for a
/// classifier (their sizes), one group otherwise.
fn model(
    svm_type: SvmType,
    kernel: KernelSpec,
    sv: Features,
    n_sv: &[usize],
    rng: &mut Xoshiro256PlusPlus,
) -> SvmModel {
    let total = sv.n_rows();
    let (labels, n_sv, rows, pairs) = if svm_type.is_classifier() {
        let nc = n_sv.len();
        assert_eq!(n_sv.iter().sum::<usize>(), total);
        (
            (0..nc).map(|c| c as f64 * 2.0 - 1.0).collect(),
            n_sv.to_vec(),
            nc - 1,
            nc * (nc - 1) / 2,
        )
    } else {
        (Vec::new(), Vec::new(), 1, 1)
    };
    SvmModel {
        svm_type,
        kernel,
        labels,
        n_sv,
        sv,
        sv_indices: None,
        sv_coef: (0..rows)
            .map(|_| (0..total).map(|_| rng.gen_range(-1.0..1.0)).collect())
            .collect(),
        rho: (0..pairs).map(|_| rng.gen_range(-0.5..0.5)).collect(),
        prob_a: Vec::new(),
        prob_b: Vec::new(),
        sv_norms: Vec::new(),
    }
    .with_norms()
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

fn bits(v: &[Vec<f64>]) -> Vec<Vec<u64>> {
    v.iter()
        .map(|r| r.iter().map(|x| x.to_bits()).collect())
        .collect()
}

/// The blocked values at 1 and 2 threads: the same bits, and equal to the row-by-row reference
/// to 1e-12 of the size of the terms they sum (`sum_k |coef_k K(x, sv_k)| + |rho|`). Returns
/// the blocked values.
fn check(m: &SvmModel, x: &Features) -> Vec<Vec<f64>> {
    let one = pool(1).install(|| m.decision_values(x));
    let two = pool(2).install(|| m.decision_values(x));
    assert_eq!(bits(&one), bits(&two), "1 vs 2 threads");
    let reference = pool(2).install(|| m.decision_values_by_row(x));
    assert_eq!(one.len(), x.n_rows());
    let coef_abs: Vec<f64> = (0..m.total_sv())
        .map(|k| m.sv_coef.iter().map(|r| r[k].abs()).sum())
        .collect();
    let rho = m.rho.iter().fold(0.0f64, |a, r| a.max(r.abs()));
    for (i, (b, r)) in one.iter().zip(&reference).enumerate() {
        assert_eq!(b.len(), r.len());
        let scale: f64 = (0..m.total_sv())
            .map(|k| coef_abs[k] * m.kernel.eval(x.row(i), m.sv.row(k)).abs())
            .sum::<f64>()
            + rho;
        for (p, (&vb, &vr)) in b.iter().zip(r).enumerate() {
            assert!(
                (vb - vr).abs() <= 1e-12 * scale,
                "row {i} value {p}: blocked {vb} vs row by row {vr} (scale {scale})"
            );
        }
    }
    one
}

/// Every kernel and formulation on dense and sparse storage of the same data: within rounding
/// of the reference, the same bits for both storage kinds and for both source layouts, and
/// for the kernels without norms on sparse rows (the reference's sequential sparse inner
/// product) exactly the reference.
fn run_all(n_test: usize, d_sv: usize, d_test: usize, n_sv: &[usize], density: f64, seed: u64) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let total: usize = n_sv.iter().sum();
    let sv_vals = values(total, d_sv, density, &mut rng);
    let x_vals = values(n_test, d_test, density, &mut rng);
    run_on(n_test, d_sv, d_test, n_sv, &sv_vals, &x_vals, seed);
}

/// [`run_all`] on the given support vectors (`n_sv` summing to their rows, `d_sv` features)
/// and test rows (`n_test` x `d_test`).
fn run_on(
    n_test: usize,
    d_sv: usize,
    d_test: usize,
    n_sv: &[usize],
    sv_vals: &[f64],
    x_vals: &[f64],
    seed: u64,
) {
    let total: usize = n_sv.iter().sum();
    let (xd, xs) = (
        dense(n_test, d_test, x_vals),
        sparse(n_test, d_test, x_vals),
    );
    for kernel in kernels() {
        for svm_type in [
            SvmType::CSvc,
            SvmType::NuSvc,
            SvmType::EpsSvr,
            SvmType::NuSvr,
            SvmType::OneClass,
        ] {
            let mut r1 = Xoshiro256PlusPlus::seed_from_u64(seed + 1);
            let mut r2 = r1.clone();
            let md = model(svm_type, kernel, dense(total, d_sv, sv_vals), n_sv, &mut r1);
            let ms = model(
                svm_type,
                kernel,
                sparse(total, d_sv, sv_vals),
                n_sv,
                &mut r2,
            );
            let a = check(&md, &xd);
            let b = check(&ms, &xs);
            let c = check(&md, &xs);
            let e = check(&ms, &xd);
            assert_eq!(
                bits(&a),
                bits(&b),
                "{kernel:?} {svm_type:?}: dense vs sparse"
            );
            assert_eq!(bits(&a), bits(&c), "{kernel:?} {svm_type:?}: sparse rows");
            assert_eq!(bits(&a), bits(&e), "{kernel:?} {svm_type:?}: sparse SVs");
            let gather = pool(2).install(|| ms.decision_values_in(&xs, SvLayout::KeepSparse));
            assert_eq!(bits(&a), bits(&gather), "{kernel:?} {svm_type:?}: gather");
            let gather1 = pool(1).install(|| ms.decision_values_in(&xd, SvLayout::KeepSparse));
            assert_eq!(bits(&a), bits(&gather1), "{kernel:?} {svm_type:?}: gather");
            if !kernel.needs_norms() && d_test <= d_sv {
                let reference = ms.decision_values_by_row(&xs);
                assert_eq!(bits(&b), bits(&reference), "{kernel:?} {svm_type:?}");
            }
        }
    }
}

#[test]
fn binary_dense_and_sparse() {
    run_all(37, 13, 13, &[20, 23], 0.6, 1);
}

#[test]
fn multiclass_dense_and_sparse() {
    run_all(45, 7, 7, &[9, 1, 14, 6], 0.5, 2);
}

#[test]
fn more_rows_than_a_block_and_sources_than_a_chunk() {
    // d = 3: 853 sources per chunk and 512 per gather step, 1024 rows per block.
    run_all(2100, 3, 3, &[700, 301, 99], 0.8, 3);
}

#[test]
fn rows_on_one_binary_scale_take_the_integer_tiles_with_the_same_bits() {
    // Multiples of 1/16 (and of 1/4 for the test rows): dense blocks of them run on exact
    // integers, and must give the bits of the f64 and gather paths. One test set is off the
    // scale (a third), so its blocks take the f64 panels.
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
    let on = |n: usize, d: usize, step: f64, rng: &mut Xoshiro256PlusPlus| -> Vec<f64> {
        values(n, d, 0.7, rng)
            .iter()
            .map(|v| (v * 8.0).round() * step)
            .collect()
    };
    let sv = on(40, 21, 1.0 / 16.0, &mut rng);
    for step in [1.0 / 4.0, 1.0 / 16.0, 1.0 / 3.0] {
        let x = on(53, 21, step, &mut rng);
        run_on(53, 21, 21, &[18, 22], &sv, &x, 12);
    }
    let svs = dense(40, 21, &sv);
    let ks = KernelSums::new(
        KernelSpec::Rbf { gamma: 0.1 },
        &svs,
        &[vec![1.0; 40]],
        &[40],
        SvLayout::Auto,
    );
    assert_eq!(ks.integer_sources(), crate::kernel::quant::available());
}

#[test]
fn one_support_vector() {
    run_all(19, 5, 5, &[1], 1.0, 4);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
    let v = values(1, 6, 1.0, &mut rng);
    let x = values(11, 6, 1.0, &mut rng);
    for kernel in kernels() {
        let m = model(SvmType::EpsSvr, kernel, dense(1, 6, &v), &[1], &mut rng);
        check(&m, &dense(11, 6, &x));
    }
}

#[test]
fn rows_wider_or_narrower_than_the_model() {
    // Extra test features count in |x|^2 only; missing ones are zeros.
    run_all(23, 9, 12, &[10, 8, 5], 0.7, 6);
    run_all(23, 9, 4, &[10, 8, 5], 0.7, 7);
}

#[test]
fn very_sparse_sources_take_the_gather_path() {
    // Density 0.05 < 1/8: the sparse SVs stay sparse under the automatic layout.
    run_all(40, 60, 60, &[25, 30], 0.05, 8);
}

#[test]
fn no_test_rows_and_no_features() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
    let v = values(5, 4, 1.0, &mut rng);
    for kernel in kernels() {
        let m = model(SvmType::CSvc, kernel, dense(5, 4, &v), &[2, 3], &mut rng);
        assert!(m.decision_values(&dense(0, 4, &[])).is_empty());
        assert!(m.predict(&sparse(0, 4, &[])).unwrap().is_empty());
        let m0 = model(SvmType::OneClass, kernel, dense(5, 0, &[]), &[5], &mut rng);
        check(&m0, &dense(3, 0, &[]));
    }
}

#[test]
fn identical_rows_give_exact_rbf_ones() {
    // The squared norms and inner products use the same summation, so a test row equal to the
    // support vector is at distance exactly 0: K = 1 and f = coef - rho.
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(10);
    let v = values(1, 17, 1.0, &mut rng);
    let m = model(
        SvmType::OneClass,
        KernelSpec::Rbf { gamma: 3.0 },
        dense(1, 17, &v),
        &[1],
        &mut rng,
    );
    let dec = m.decision_values(&dense(1, 17, &v));
    assert_eq!(dec[0][0], m.sv_coef[0][0] - m.rho[0]);
}

#[test]
fn precomputed_reads_row_by_row() {
    // Two SVs with serial numbers 1 and 3; test rows hold K(x, x_1..x_3).
    let sv = dense(2, 1, &[1.0, 3.0]);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
    let m = model(
        SvmType::CSvc,
        KernelSpec::Precomputed,
        sv,
        &[1, 1],
        &mut rng,
    );
    let x = dense(2, 4, &[1.0, 0.5, 0.2, -0.7, 2.0, 0.1, 0.9, 0.3]);
    let dec = check(&m, &x);
    let want = m.sv_coef[0][0] * 0.5 + m.sv_coef[0][1] * -0.7 - m.rho[0];
    assert_eq!(dec[0][0], want);
}
