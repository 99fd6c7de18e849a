//! Times an RBF C-SVC fit on a LIBSVM-format file, as `marginkit train` does it, and its
//! parts: building the Q matrix, the SMO solve, the whole `fit` call.
//!
//! ```text
//! cargo run --release --example fit_timing -- FILE [repeats] [threads] [cache_mb] [fill_only 0|1]
//! ```
//! gamma = 1/d, C = 1, eps 1e-3, shrinking on (the bench harness settings). Prints the
//! median and minimum of each part over the repeats (first the fill of one column alone), the iterations and the cache hit rate.

use std::time::Instant;

use marginkit::data::libsvm_fmt::{read_libsvm_path, ReadOptions};
use marginkit::fit::Control;
use marginkit::kernel::qmatrix::{QMatrix, SvcQ};
use marginkit::solver::smo::solve;
use marginkit::solver::{BoxQp, Equality, NoObserver, Shrinking, SolverSettings};
use marginkit::svm::train::fit;
use marginkit::svm::{Gamma, KernelKind, KernelParams, SvmParams};
use marginkit::KernelSpec;

fn stats(v: &mut [f64]) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0])
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: fit_timing FILE [repeats] [threads] [cache_mb]");
        return;
    };
    let arg = |k: usize, def: usize| args.get(k).and_then(|s| s.parse().ok()).unwrap_or(def);
    let (reps, threads, cache_mb) = (arg(2, 5), arg(3, 0), arg(4, 200));
    if threads > 0 {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build_global()
            .expect("thread pool");
    }
    let data = read_libsvm_path(path, &ReadOptions::default()).expect("readable data");
    let d = data.n_features();
    let gamma = 1.0 / d as f64;
    let cache = cache_mb << 20;
    let params = SvmParams::new()
        .kernel(KernelParams {
            kind: KernelKind::Rbf,
            gamma: Gamma::Value(gamma),
            coef0: 0.0,
            degree: 3,
        })
        .c(1.0)
        .tol(1e-3)
        .cache_bytes(cache as u64)
        .check()
        .expect("valid parameters");
    // The binary labels as fit() orders them (LIBSVM's class order).
    let labels = marginkit::svm::train::class_order(&data.y);
    let y: Vec<i8> = data
        .y
        .iter()
        .map(|&v| if v == labels[0] { 1 } else { -1 })
        .collect();
    let n = y.len();
    let k = KernelSpec::Rbf { gamma };
    // Kernel fill alone: every request misses (cache of two columns).
    let mut t_fill = Vec::new();
    // On a pool thread (as after `ThreadPool::install`) unless FILL_OUTSIDE is set: the
    // calling thread then takes part in the parallel fills instead of waiting for two workers.
    let inside = std::env::var_os("FILL_OUTSIDE").is_none();
    let in_pool = |f: &mut (dyn FnMut() + Send)| {
        if inside {
            rayon::scope(|_| f());
        } else {
            f();
        }
    };
    for _ in 0..reps {
        let mut q = SvcQ::new(&data.x, k, &y, 0).expect("Q matrix");
        let mut s = 0.0f32;
        let mut dt = 0.0;
        in_pool(&mut || {
            let t0 = Instant::now();
            for i in 0..n.min(400) {
                s += q.column((i * 7919) % n, n)[i];
            }
            dt = t0.elapsed().as_secs_f64() / n.min(400) as f64;
        });
        t_fill.push(dt);
        assert!(s.is_finite());
    }
    let f = stats(&mut t_fill);
    println!(
        "column fill: {:.2} us median, {:.2} us min",
        f.0 * 1e6,
        f.1 * 1e6
    );
    if arg(5, 0) == 1 {
        return;
    }
    let (mut t_new, mut t_solve, mut t_fit) = (Vec::new(), Vec::new(), Vec::new());
    let mut last = None;
    let mut fit_iter = 0;
    for _ in 0..reps {
        let t0 = Instant::now();
        let mut q = SvcQ::new(&data.x, k, &y, cache).expect("Q matrix");
        t_new.push(t0.elapsed().as_secs_f64());
        let p = vec![-1.0; n];
        let upper = vec![1.0; n];
        let qp = BoxQp {
            p: &p,
            y: &y,
            upper: &upper,
            equality: Equality::Sum { delta: 0.0 },
            fixed: None,
        };
        let s = SolverSettings {
            tol: 1e-3,
            shrinking: Shrinking::On,
            max_iter: None,
            time_limit: None,
        };
        let mut alpha = vec![0.0; n];
        let t0 = Instant::now();
        let info = solve(&mut q, &qp, &mut alpha, &s, &mut NoObserver).expect("solve");
        t_solve.push(t0.elapsed().as_secs_f64());
        last = Some((info, q.cache_stats()));
        let t0 = Instant::now();
        let out = fit(&params, &data, &mut Control::default()).expect("fit");
        t_fit.push(t0.elapsed().as_secs_f64());
        fit_iter = out.report.iterations();
    }
    let (info, cs) = last.expect("at least one repeat");
    let (a, b, c) = (stats(&mut t_new), stats(&mut t_solve), stats(&mut t_fit));
    println!(
        "n {n} d {d} threads {} | new {:.5} ({:.5}) solve {:.5} ({:.5}) fit {:.5} ({:.5}) s median (min) | iter {} (fit {fit_iter}) obj {:.6} hit {:.3} misses {}",
        rayon::current_num_threads(),
        a.0,
        a.1,
        b.0,
        b.1,
        c.0,
        c.1,
        info.iterations,
        info.objective,
        cs.hit_rate(),
        cs.misses
    );
}
