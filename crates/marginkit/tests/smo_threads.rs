//! The SMO result must not depend on the thread count, also when the selection scans and the
//! gradient update run in parallel (active sets of 8192 variables and more) and when short
//! columns are split by work (high dimension).

use marginkit::kernel::qmatrix::SvcQ;
use marginkit::solver::smo::solve;
use marginkit::solver::{BoxQp, Equality, NoObserver, Shrinking, SolveInfo, SolverSettings};
use marginkit::{DenseMatrix, Features, KernelSpec};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

fn blobs(seed: u64, n: usize, d: usize) -> (Features, Vec<i8>) {
    let mut g = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut v = Vec::with_capacity(n * d);
    let mut y = Vec::with_capacity(n);
    for i in 0..n {
        let c = if i % 2 == 0 { 1i8 } else { -1 };
        for _ in 0..d {
            let z: f64 = (0..4).map(|_| g.gen_range(-1.0..1.0)).sum::<f64>() * 0.9;
            v.push(z + 0.3 * f64::from(c));
        }
        y.push(c);
    }
    (Features::Dense(DenseMatrix::new(n, d, v).unwrap()), y)
}

fn run(x: &Features, y: &[i8], gamma: f64, tol: f64, threads: usize) -> (SolveInfo, Vec<f64>) {
    let n = y.len();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let mut q = SvcQ::new(x, KernelSpec::Rbf { gamma }, y, 16 << 20).unwrap();
        let (p, upper) = (vec![-1.0; n], vec![0.5; n]);
        let qp = BoxQp {
            p: &p,
            y,
            upper: &upper,
            equality: Equality::Sum { delta: 0.0 },
            fixed: None,
        };
        let s = SolverSettings {
            tol,
            shrinking: Shrinking::On,
            max_iter: None,
            time_limit: None,
        };
        let mut a = vec![0.0; n];
        let info = solve(&mut q, &qp, &mut a, &s, &mut NoObserver).unwrap();
        (info, a)
    })
}

#[test]
fn long_active_sets_give_the_same_result_for_any_thread_count() {
    // n above the parallel scan threshold; low dimension keeps the kernel cheap.
    let (x, y) = blobs(21, 9000, 2);
    let (i1, a1) = run(&x, &y, 0.5, 0.1, 1);
    assert!(i1.iterations > 100, "{i1:?}");
    for t in [2, 3] {
        let (it, at) = run(&x, &y, 0.5, 0.1, t);
        assert_eq!(i1, it, "threads {t}");
        assert_eq!(a1, at, "threads {t}");
    }
}

#[test]
fn short_high_dimensional_columns_give_the_same_result_for_any_thread_count() {
    // 1,200 x 64: columns short but expensive, split by work when threads > 1.
    let (x, y) = blobs(22, 1200, 64);
    let (i1, a1) = run(&x, &y, 1.0 / 64.0, 1e-3, 1);
    let (i2, a2) = run(&x, &y, 1.0 / 64.0, 1e-3, 2);
    assert_eq!(i1, i2);
    assert_eq!(a1, a2);
}
