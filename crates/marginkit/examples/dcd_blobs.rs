//! Times the linear DCD engine on two seeded Gaussian blobs (LIBLINEAR-class problem size).
//!
//! ```text
//! cargo run --release --example dcd_blobs -- [n] [d] [C] [eps] [seed] [--write data.svm]
//!     [--no-shrink] [--max-passes N] [--sparse]
//! ```
//! Defaults: n = 100000, d = 20, C = 1, eps = 0.1 (LIBLINEAR's default), seed = 1. For each of
//! L1-loss and L2-loss dual SVC (no bias, as LIBLINEAR's default) it prints the passes, the
//! solve time, the primal and dual objectives and the duality gap. `--write` also saves the data
//! in LIBSVM text format so that other tools can be run on exactly the same problem.

use std::io::Write;
use std::time::Instant;

use marginkit::solver::dcd::{solve_svc, LinearDesign, SvcDual};
use marginkit::solver::{BoxQp, Equality, NoObserver, Shrinking, SolverSettings};
use marginkit::{DenseMatrix, Features};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let write = match args.iter().position(|a| a == "--write") {
        Some(k) if k + 1 < args.len() => {
            let path = args.remove(k + 1);
            args.remove(k);
            Some(path)
        }
        _ => None,
    };
    let shrinking = match args.iter().position(|a| a == "--no-shrink") {
        Some(k) => {
            args.remove(k);
            Shrinking::Off
        }
        None => Shrinking::On,
    };
    let max_passes = match args.iter().position(|a| a == "--max-passes") {
        Some(k) if k + 1 < args.len() => {
            let v = args.remove(k + 1).parse::<u64>()?;
            args.remove(k);
            Some(v)
        }
        _ => None,
    };
    let sparse = match args.iter().position(|a| a == "--sparse") {
        Some(k) => {
            args.remove(k);
            true
        }
        None => false,
    };
    let num = |k: usize, default: f64| -> f64 {
        args.get(k).and_then(|s| s.parse().ok()).unwrap_or(default)
    };
    let n = num(0, 100_000.0) as usize;
    let d = num(1, 20.0) as usize;
    let c = num(2, 1.0);
    let eps = num(3, 0.1);
    let seed = num(4, 1.0) as u64;

    // Two blobs: class means +-0.5 on every coordinate, unit variance (overlapping classes).
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut values = Vec::with_capacity(n * d);
    let mut y = Vec::with_capacity(n);
    for _ in 0..n {
        let yi: i8 = if rng.gen::<bool>() { 1 } else { -1 };
        for _ in 0..d {
            let u1: f64 = rng.gen_range(f64::MIN_POSITIVE..1.0);
            let u2: f64 = rng.gen();
            let g = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
            values.push(g + 0.5 * f64::from(yi) / (d as f64).sqrt() * 2.0);
        }
        y.push(yi);
    }
    let x = Features::Dense(DenseMatrix::new(n, d, values)?);
    if let Some(path) = write {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path)?);
        for (i, yi) in y.iter().enumerate() {
            write!(f, "{yi}")?;
            for (k, v) in x.row(i).iter() {
                write!(f, " {}:{}", k + 1, v)?;
            }
            writeln!(f)?;
        }
        println!("wrote {path}");
    }
    let x = if sparse {
        // Same values in CSR storage (the layout LIBLINEAR always uses).
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
    let storage = if sparse { "sparse" } else { "dense" };
    println!("n = {n}, d = {d}, C = {c}, eps = {eps}, seed = {seed}, {storage} rows");
    let p = vec![-1.0; n];
    for (name, l2) in [
        ("L1-loss SVC dual (-s 3)", false),
        ("L2-loss SVC dual (-s 1)", true),
    ] {
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
            shrinking,
            max_iter: max_passes,
            time_limit: None,
        };
        let mut alpha = vec![0.0; n];
        let t0 = Instant::now();
        let r = solve_svc(&prob, &settings, 0, &mut alpha, &mut NoObserver)?;
        let secs = t0.elapsed().as_secs_f64();
        let nsv = alpha.iter().filter(|&&a| a > 0.0).count();
        println!(
            "{name}: {} after {} passes in {secs:.3} s (incl. final gap pass); nSV = {nsv}; \
             dual f = {:.9}, primal = {:.9}, gap = {:.3e} (rel {:.3e}), violation = {:.3e}",
            r.info.status.as_str(),
            r.info.iterations,
            r.info.objective,
            r.primal,
            r.gap,
            r.gap / r.primal.abs().max(1e-300),
            r.info.max_violation
        );
    }
    Ok(())
}
