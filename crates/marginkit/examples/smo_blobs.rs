//! Times the SMO engine on an RBF C-SVC over two overlapping Gaussian classes.
//!
//! Data: `n` points in `d` dimensions, class means `+-mu * 1` with `mu = 1.2816 / sqrt(d)`
//! (Bayes error 0.1), unit covariance, 5% of the labels flipped; seeded (Xoshiro256++).
//! Problem: C = 1, gamma = 1/d, eps 1e-3, 200 MB cache (LIBSVM defaults), like the
//! 20,000 x 20 row of `BASELINES.md`.
//!
//! ```text
//! cargo run --release --example smo_blobs -- [n] [d] [threads] [cache_mb] [shrink 0|1] [out.svm]
//! ```
//! With `out.svm`, the data are also written in LIBSVM format (for `svm-train`).

use std::io::Write;
use std::time::Instant;

use marginkit::kernel::qmatrix::{QMatrix, SvcQ};
use marginkit::solver::smo::solve;
use marginkit::solver::{BoxQp, Equality, NoObserver, Shrinking, SolverSettings};
use marginkit::{DenseMatrix, Features, KernelSpec};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

fn gaussian(g: &mut Xoshiro256PlusPlus) -> f64 {
    // Box-Muller.
    let u1: f64 = 1.0 - g.gen::<f64>();
    let u2: f64 = g.gen::<f64>();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |k: usize, def: usize| args.get(k).and_then(|s| s.parse().ok()).unwrap_or(def);
    let (n, d, threads, cache_mb, shrink) = (
        arg(1, 20_000),
        arg(2, 20),
        arg(3, 0),
        arg(4, 200),
        arg(5, 1),
    );
    let mut g = Xoshiro256PlusPlus::seed_from_u64(20_000);
    let mu = 1.2816 / (d as f64).sqrt();
    let mut v = Vec::with_capacity(n * d);
    let mut y = Vec::with_capacity(n);
    for _ in 0..n {
        let c: i8 = if g.gen_bool(0.5) { 1 } else { -1 };
        for _ in 0..d {
            v.push(gaussian(&mut g) + mu * f64::from(c));
        }
        y.push(if g.gen_bool(0.05) { -c } else { c });
    }
    let x = Features::Dense(DenseMatrix::new(n, d, v).expect("shape"));
    if let Some(path) = args.get(6) {
        let mut f = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
        for (i, yi) in y.iter().enumerate() {
            write!(f, "{yi}").unwrap();
            if let Features::Dense(m) = &x {
                for (k, val) in m.row(i).iter().enumerate() {
                    write!(f, " {}:{}", k + 1, val).unwrap();
                }
            }
            writeln!(f).unwrap();
        }
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("pool");
    let kernel = KernelSpec::Rbf {
        gamma: 1.0 / d as f64,
    };
    let p = vec![-1.0; n];
    let upper = vec![1.0; n];
    let qp = BoxQp {
        p: &p,
        y: &y,
        upper: &upper,
        equality: Equality::Sum { delta: 0.0 },
        fixed: None,
    };
    let settings = SolverSettings {
        shrinking: if shrink == 0 {
            Shrinking::Off
        } else {
            Shrinking::On
        },
        ..SolverSettings::default()
    };
    let mut alpha = vec![0.0; n];
    let t0 = Instant::now();
    let (info, stats) = pool.install(|| {
        let mut q = SvcQ::new(&x, kernel, &y, cache_mb << 20).expect("q");
        let info = solve(&mut q, &qp, &mut alpha, &settings, &mut NoObserver).expect("solve");
        (info, q.cache_stats())
    });
    let secs = t0.elapsed().as_secs_f64();
    let nsv = alpha.iter().filter(|&&a| a > 0.0).count();
    let nbsv = alpha.iter().filter(|&&a| a >= 1.0).count();
    println!(
        "n={n} d={d} threads={} time={secs:.3}s iter={} obj={:.6} rho={:.6} viol={:.2e} \
         nSV={nsv} nBSV={nbsv} cache_hit={:.3} ({} misses) status={}",
        pool.current_num_threads(),
        info.iterations,
        info.objective,
        info.rho,
        info.max_violation,
        stats.hit_rate(),
        stats.misses,
        info.status.as_str()
    );
}
