//! Times the block-parallel linear DCD ([`solve_svc_blocks`]) at 1 and 2 threads (and more)
//! against the serial solver on seeded Gaussian blobs, and checks that every thread count gives
//! bit-identical dual variables.
//!
//! ```text
//! cargo run --release -p marginkit --example dcd_parallel -- [n] [d] [C] [eps] [blocks] [repeat]
//!     [--sparse] [--threads 1,2,8] [--l2] [--file data.svm]
//! ```
//! Defaults: n = 200000, d = 20, C = 1, eps = 0.1, blocks = DEFAULT_BLOCKS, repeat = 3 (medians
//! of wall seconds). The data are the `dcd_blobs` example's (class means +-1/sqrt(d) per
//! coordinate, unit variance); `--file` reads a LIBSVM file instead (first label = +1). Prints, per solver and thread count: median wall seconds, passes,
//! dual objective, duality gap and final violation.

use std::time::Instant;

use marginkit::data::libsvm_fmt::{read_libsvm_path, ReadOptions};
use marginkit::solver::dcd::{solve_svc, solve_svc_blocks, LinearDesign, SvcDual, DEFAULT_BLOCKS};
use marginkit::solver::{BoxQp, Equality, NoObserver, Shrinking, SolverSettings};
use marginkit::{DenseMatrix, Features};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The seeded blobs (dense, or the same values in CSR storage).
fn blobs(
    n: usize,
    d: usize,
    sparse: bool,
) -> Result<(Features, Vec<i8>), Box<dyn std::error::Error>> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
    let mut values = Vec::with_capacity(n * d);
    let mut y = Vec::with_capacity(n);
    for _ in 0..n {
        let yi: i8 = if rng.gen::<bool>() { 1 } else { -1 };
        for _ in 0..d {
            let u1: f64 = rng.gen_range(f64::MIN_POSITIVE..1.0);
            let u2: f64 = rng.gen();
            let g = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
            values.push(g + f64::from(yi) / (d as f64).sqrt());
        }
        y.push(yi);
    }
    let x = Features::Dense(DenseMatrix::new(n, d, values)?);
    let x = if sparse {
        let (mut indptr, mut idx, mut val) = (vec![0], Vec::new(), Vec::new());
        for i in 0..n {
            for (k, v) in x.row(i).iter() {
                idx.push(k as u32);
                val.push(v);
            }
            indptr.push(idx.len());
        }
        Features::Sparse(marginkit::CsrMatrix::new(d, indptr, idx, val)?)
    } else {
        x
    };
    Ok((x, y))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut flag = |name: &str| match args.iter().position(|a| a == name) {
        Some(k) => {
            args.remove(k);
            true
        }
        None => false,
    };
    let sparse = flag("--sparse");
    let l2 = flag("--l2");
    let file = match args.iter().position(|a| a == "--file") {
        Some(k) if k + 1 < args.len() => {
            let v = args.remove(k + 1);
            args.remove(k);
            Some(v)
        }
        _ => None,
    };
    let threads: Vec<usize> = match args.iter().position(|a| a == "--threads") {
        Some(k) if k + 1 < args.len() => {
            let v = args.remove(k + 1);
            args.remove(k);
            v.split(',').map(|s| s.parse()).collect::<Result<_, _>>()?
        }
        _ => vec![1, 2],
    };
    let num = |k: usize, default: f64| -> f64 {
        args.get(k).and_then(|s| s.parse().ok()).unwrap_or(default)
    };
    let n = num(0, 200_000.0) as usize;
    let d = num(1, 20.0) as usize;
    let c = num(2, 1.0);
    let eps = num(3, 0.1);
    let blocks = num(4, DEFAULT_BLOCKS as f64) as usize;
    let repeat = num(5, 3.0).max(1.0) as usize;

    let (x, y) = match &file {
        Some(path) => {
            let data = read_libsvm_path(path, &ReadOptions::default())?;
            let first = data.y[0];
            let y: Vec<i8> = data
                .y
                .iter()
                .map(|&v| if v == first { 1 } else { -1 })
                .collect();
            (data.x, y)
        }
        None => blobs(n, d, sparse)?,
    };
    let n = y.len();
    let d = x.n_cols();
    let p = vec![-1.0; n];
    let (upper, shift) = if l2 {
        (vec![f64::INFINITY; n], vec![0.5 / c; n])
    } else {
        (vec![c; n], vec![0.0; n])
    };
    let prob = SvcDual {
        design: LinearDesign { x: &x, bias: None },
        qp: BoxQp {
            p: &p,
            y: &y,
            upper: &upper,
            equality: Equality::None,
            fixed: None,
        },
        diag_shift: &shift,
    };
    let settings = SolverSettings {
        tol: eps,
        shrinking: Shrinking::On,
        max_iter: None,
        time_limit: None,
    };
    println!(
        "n = {n}, d = {d}, C = {c}, eps = {eps}, {} loss, {} rows, blocks = {blocks}, medians of {repeat}",
        if l2 { "L2" } else { "L1" },
        if matches!(x, Features::Sparse(_)) { "sparse" } else { "dense" }
    );
    let report = |name: &str, secs: f64, r: &marginkit::solver::dcd::DcdResult| {
        println!(
            "{name}: {secs:.3} s, {} passes, {}, dual f = {:.9}, gap = {:.3e} (rel {:.2e}), violation = {:.3e}",
            r.info.iterations,
            r.info.status.as_str(),
            r.info.objective,
            r.gap,
            r.gap / r.primal.abs().max(1e-300),
            r.info.max_violation
        );
    };
    // Serial reference, on a one-thread pool like the rest.
    let pool1 = rayon::ThreadPoolBuilder::new().num_threads(1).build()?;
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..repeat {
        let mut alpha = vec![0.0; n];
        let t0 = Instant::now();
        let r = pool1.install(|| solve_svc(&prob, &settings, 0, &mut alpha, &mut NoObserver))?;
        times.push(t0.elapsed().as_secs_f64());
        last = Some(r);
    }
    let serial = last.expect("repeat >= 1");
    report("serial DCD, 1 thread", median(times), &serial);
    let mut first: Option<Vec<f64>> = None;
    let mut base = None;
    let mut f_block = None;
    for &t in &threads {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(t).build()?;
        let mut times = Vec::new();
        let mut last = None;
        for _ in 0..repeat {
            let mut alpha = vec![0.0; n];
            let t0 = Instant::now();
            let r = pool.install(|| {
                solve_svc_blocks(&prob, &settings, 0, blocks, &mut alpha, &mut NoObserver)
            })?;
            times.push(t0.elapsed().as_secs_f64());
            last = Some((r, alpha));
        }
        let (r, alpha) = last.expect("repeat >= 1");
        let secs = median(times);
        report(&format!("block DCD, {t} thread(s)"), secs, &r);
        match &first {
            None => {
                first = Some(alpha);
                f_block = Some(r.info.objective);
                base = Some(secs);
            }
            Some(a) => {
                let same = a
                    .iter()
                    .zip(&alpha)
                    .all(|(u, v)| u.to_bits() == v.to_bits());
                println!(
                    "  bit-identical to the first thread count: {same}; speed-up {:.2}x",
                    base.unwrap_or(secs) / secs
                );
            }
        }
    }
    if let Some(f) = f_block {
        println!(
            "serial vs block optimum: rel. dual objective difference {:.2e}",
            (serial.info.objective - f).abs() / serial.info.objective.abs().max(1e-300)
        );
    }
    Ok(())
}
