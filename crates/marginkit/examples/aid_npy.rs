//! Benchmark driver for `bench/aid_bench.py`: reads `X.npy` (float64, C order, n x m) and
//! `y.npy` (float64, n) written by numpy, runs one method and prints one JSON line with the
//! time (seconds, excluding the file reading) and the objective.
//!
//! ```text
//! cargo run --release -p marginkit --example aid_npy -- lad-full X.npy y.npy
//! cargo run --release -p marginkit --example aid_npy -- lad-aid   X.npy y.npy
//! cargo run --release -p marginkit --example aid_npy -- svm-aid   X.npy y.npy C [gamma]
//! cargo run --release -p marginkit --example aid_npy -- svm-full  X.npy y.npy C [gamma]
//! ```
//! `svm-*` with a gamma uses the RBF kernel, else the linear kernel (`train -t 0` semantics).

use std::time::Instant;

use marginkit::aid::lad::{fit_aid_lad, fit_lad, AidLadParams};
use marginkit::aid::svm::{fit_aid_svm, AidSvmParams, KernelSteering};
use marginkit::solver::NoObserver;
use marginkit::svm::params::{Gamma, KernelKind, KernelParams};
use marginkit::svm::{train::fit, SvmParams};
use marginkit::{Dataset, DenseMatrix, Features, KernelSpec};

/// Reads a little-endian float64 `.npy` file (format 1.0/2.0, C order): (shape, values).
/// Streams the payload in 1 MiB blocks so the peak memory is the values alone (not bytes + values).
fn read_npy(path: &str) -> Result<(Vec<usize>, Vec<f64>), String> {
    use std::io::Read;
    let mut f =
        std::io::BufReader::new(std::fs::File::open(path).map_err(|e| format!("{path}: {e}"))?);
    let mut pre = [0u8; 10];
    f.read_exact(&mut pre).map_err(|e| format!("{path}: {e}"))?;
    if &pre[..6] != b"\x93NUMPY" {
        return Err(format!("{path}: not a .npy file"));
    }
    let hlen = if pre[6] == 1 {
        u16::from_le_bytes([pre[8], pre[9]]) as usize
    } else {
        let mut two = [0u8; 2];
        f.read_exact(&mut two).map_err(|e| format!("{path}: {e}"))?;
        u32::from_le_bytes([pre[8], pre[9], two[0], two[1]]) as usize
    };
    let mut hbytes = vec![0u8; hlen];
    f.read_exact(&mut hbytes)
        .map_err(|e| format!("{path}: {e}"))?;
    let header = std::str::from_utf8(&hbytes).map_err(|e| e.to_string())?;
    if !header.contains("'<f8'") || header.contains("'fortran_order': True") {
        return Err(format!(
            "{path}: need float64 little-endian C order ({header})"
        ));
    }
    let shape_txt = header
        .split("'shape': (")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .ok_or("no shape")?;
    let shape: Vec<usize> = shape_txt
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<usize>().map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    let total: usize = shape.iter().product();
    let mut vals = Vec::with_capacity(total);
    let mut block = vec![0u8; 1 << 20];
    while vals.len() < total {
        let want = ((total - vals.len()) * 8).min(block.len());
        f.read_exact(&mut block[..want])
            .map_err(|e| format!("{path}: {e}"))?;
        vals.extend(
            block[..want]
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])),
        );
    }
    Ok((shape, vals))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        return Err(
            "usage: aid_npy lad-full|lad-aid|svm-aid|svm-full X.npy y.npy [C] [gamma]".into(),
        );
    }
    let (xs, xv) = read_npy(&args[2])?;
    let (_, y) = read_npy(&args[3])?;
    let (n, m) = (xs[0], xs.get(1).copied().unwrap_or(1));
    let data = Dataset::new(Features::Dense(DenseMatrix::new(n, m, xv)?), y, None)?;
    let c: f64 = args.get(4).map_or(Ok(1.0), |s| s.parse())?;
    let gamma: Option<f64> = args.get(5).map(|s| s.parse()).transpose()?;
    let t0 = Instant::now();
    let out = match args[1].as_str() {
        "lad-full" => {
            let (_, sol) = fit_lad(&data, true, None)?;
            format!(
                "{{\"method\":\"lad-full\",\"seconds\":{},\"objective\":{},\"certified\":{}}}",
                t0.elapsed().as_secs_f64(),
                sol.objective,
                sol.certified
            )
        }
        "lad-aid" => {
            let fit = fit_aid_lad(&data, &AidLadParams::default(), &mut |_| {})?;
            let last = fit.run.iterations.last().map_or(0.0, |r| r.r);
            format!(
                "{{\"method\":\"lad-aid\",\"seconds\":{},\"objective\":{},\"lower_bound\":{},\"iterations\":{},\"r0\":{},\"rT\":{},\"init_seconds\":{},\"stop\":\"{}\"}}",
                t0.elapsed().as_secs_f64(),
                fit.run.best_objective,
                fit.run.lower_bound,
                fit.run.iterations.len(),
                fit.run.iterations[0].r,
                last,
                fit.init_seconds,
                fit.run.stop.as_str()
            )
        }
        "svm-aid" => {
            // An optional 7th argument: the Nystrom rank of the steered kernel AID.
            let kernel_steering = match args.get(6) {
                Some(r) => KernelSteering::Nystrom {
                    rank: r.parse()?,
                    steer_gap: 1e-3,
                },
                None => KernelSteering::AveragedGram,
            };
            let params = AidSvmParams {
                c,
                kernel: gamma.map(|g| KernelSpec::Rbf { gamma: g }),
                kernel_steering,
                ..AidSvmParams::default()
            };
            let fit = fit_aid_svm(&data, &params, &mut |_| {})?;
            let last = fit.run.iterations.last().map_or(0.0, |r| r.r);
            format!(
                "{{\"method\":\"svm-aid\",\"seconds\":{},\"objective\":{},\"lower_bound\":{},\"iterations\":{},\"r0\":{},\"rT\":{},\"stop\":\"{}\",\"finish\":{}}}",
                t0.elapsed().as_secs_f64(),
                fit.run.best_objective,
                fit.run.lower_bound,
                fit.run.iterations.len(),
                fit.run.iterations[0].r,
                last,
                fit.run.stop.as_str(),
                fit.finish.map_or("null".to_string(), |f| format!(
                    "{{\"rank\":{},\"steer_iterations\":{},\"steer_seconds\":{},\"smo_iterations\":{},\"finish_seconds\":{},\"smo_tol\":{}}}",
                    f.rank, f.steer_iterations, f.steer_seconds, f.smo_iterations, f.finish_seconds, f.smo_tol
                ))
            )
        }
        "svm-full" => {
            let kernel = match gamma {
                Some(g) => KernelParams {
                    kind: KernelKind::Rbf,
                    gamma: Gamma::Value(g),
                    ..KernelParams::default()
                },
                None => KernelParams {
                    kind: KernelKind::Linear,
                    ..KernelParams::default()
                },
            };
            let params = SvmParams::new().kernel(kernel).c(c).check()?;
            let (_, report) = fit(&params, &data, &mut NoObserver)?;
            format!(
                "{{\"method\":\"svm-full\",\"seconds\":{},\"iterations\":{}}}",
                t0.elapsed().as_secs_f64(),
                report.iterations()
            )
        }
        other => return Err(format!("unknown method {other}").into()),
    };
    println!("{out}");
    Ok(())
}
