//! Benchmark driver for `bench/aid_bench.py`: reads `X.npy` (float64, C order, n x m) and
//! `y.npy` (float64, n) written by numpy, runs one method and prints one JSON line with the
//! time (seconds, excluding the file reading) and the objective.
//!
//! ```text
//! cargo run --release -p marginkit --example aid_npy -- lad-full X.npy y.npy
//! cargo run --release -p marginkit --example aid_npy -- lad-aid   X.npy y.npy
//! cargo run --release -p marginkit --example aid_npy -- svm-aid   X.npy y.npy C [gamma [rank|auto]]
//! cargo run --release -p marginkit --example aid_npy -- svm-full  X.npy y.npy C [gamma]
//! ```
//! `svm-*` with a gamma uses the RBF kernel, else the linear kernel (`train -t 0` semantics).
//! Options anywhere after the method: `--gap-tol G` (AID's relative gap tolerance, default
//! 1e-4), `--engine auto|dcd|smo|N` (the linear aggregated solver; `N`: SMO up to `N` clusters,
//! DCD above) and `--trace` (one line per AID iteration on stderr: t, clusters, bounds, gap, seconds).

use std::time::Instant;

use marginkit::aid::lad::{self, fit_lad, AidLadParams};
use marginkit::aid::svm::{self, AidSvmParams, KernelSteering, NystromRank};
use marginkit::aid::IterRecord;
use marginkit::fit::{Control, Fit};
use marginkit::svm::params::{Gamma, KernelKind, KernelParams};
use marginkit::svm::{train::fit, SvmParams};
use marginkit::{Dataset, DenseMatrix, Features};

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

/// CPU seconds (user + sys) of this process so far, from `/proc/self/stat` (Linux; `NaN`
/// elsewhere), assuming the usual 100 clock ticks per second.
fn cpu_seconds() -> f64 {
    let Ok(st) = std::fs::read_to_string("/proc/self/stat") else {
        return f64::NAN;
    };
    // Fields after the parenthesized command name: state is field 3, utime 14, stime 15.
    let rest = st.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    match (
        f.get(11).and_then(|v| v.parse::<f64>().ok()),
        f.get(12).and_then(|v| v.parse::<f64>().ok()),
    ) {
        (Some(u), Some(s)) => (u + s) / 100.0,
        _ => f64::NAN,
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().collect();
    let trace = args.iter().any(|a| a == "--trace");
    args.retain(|a| a != "--trace");
    let mut gap_tol: Option<f64> = None;
    if let Some(k) = args.iter().position(|a| a == "--gap-tol") {
        gap_tol = Some(args.get(k + 1).ok_or("--gap-tol needs a value")?.parse()?);
        args.drain(k..k + 2);
    }
    let mut engine = marginkit::aid::svm::AidLinearEngine::Auto;
    if let Some(k) = args.iter().position(|a| a == "--engine") {
        use marginkit::aid::svm::AidLinearEngine as E;
        engine = match args.get(k + 1).map(String::as_str) {
            Some("auto") => E::Auto,
            Some("dcd") => E::Dcd,
            Some("smo") => E::SmoUpTo(usize::MAX),
            Some(v) => E::SmoUpTo(v.parse()?),
            None => return Err("--engine needs a value".into()),
        };
        args.drain(k..k + 2);
    }
    let progress = |r: &marginkit::aid::IterRecord| {
        if trace {
            eprintln!(
                "t {} clusters {} r {:.5} F {:.10e} E {:.10e} E_best {:.10e} gap {:.3e} violating {} s {:.3}",
                r.t, r.clusters, r.r, r.bound_t, r.objective, r.best_objective, r.gap, r.violating, r.seconds
            );
        }
    };
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
    let c0 = cpu_seconds();
    let out = match args[1].as_str() {
        "lad-full" => {
            let (_, sol) = fit_lad(&data, true, None)?;
            format!(
                "{{\"method\":\"lad-full\",\"seconds\":{},\"fit_cpu_s\":{},\"objective\":{},\"certified\":{}}}",
                t0.elapsed().as_secs_f64(),
                cpu_seconds() - c0,
                sol.objective,
                sol.certified
            )
        }
        "lad-aid" => {
            let mut params = AidLadParams::new();
            if let Some(g) = gap_tol {
                params = params.gap_tol(g);
            }
            let params = params.check()?;
            let fit = lad::fit(
                &params,
                &data,
                &mut Control::default().on_part(|r: &IterRecord| progress(r)),
            )?;
            let last = fit
                .report
                .run
                .as_ref()
                .unwrap()
                .iterations
                .last()
                .map_or(0.0, |r| r.r);
            format!(
                "{{\"method\":\"lad-aid\",\"seconds\":{},\"fit_cpu_s\":{},\"objective\":{},\"lower_bound\":{},\"iterations\":{},\"r0\":{},\"rT\":{},\"init_seconds\":{},\"stop\":\"{}\"}}",
                t0.elapsed().as_secs_f64(),
                cpu_seconds() - c0,
                fit.report.run.as_ref().unwrap().best_objective,
                fit.report.run.as_ref().unwrap().lower_bound,
                fit.report.run.as_ref().unwrap().iterations.len(),
                fit.report.run.as_ref().unwrap().iterations[0].r,
                last,
                fit.report.init_seconds,
                fit.report.run.as_ref().unwrap().stop_name()
            )
        }
        "svm-aid" => {
            // An optional 7th argument: the Nystrom rank of the steered kernel AID (`auto`:
            // `NystromRank::Auto`).
            let kernel_steering = match args.get(6).map(String::as_str) {
                Some("auto") => KernelSteering::Nystrom {
                    rank: NystromRank::Auto,
                    steer_gap: 1e-3,
                },
                Some(r) => KernelSteering::Nystrom {
                    rank: NystromRank::Fixed(r.parse()?),
                    steer_gap: 1e-3,
                },
                None => KernelSteering::AveragedGram,
            };
            let mut params = AidSvmParams::new()
                .c(c)
                .kernel_steering(kernel_steering)
                .linear_engine(engine);
            if let Some(g) = gamma {
                params = params.kernel(KernelParams {
                    kind: KernelKind::Rbf,
                    gamma: Gamma::Value(g),
                    ..KernelParams::default()
                });
            }
            if let Some(g) = gap_tol {
                params = params.gap_tol(g);
            }
            let params = params.check()?;
            let fit = svm::fit(
                &params,
                &data,
                &mut Control::default().on_part(|r: &IterRecord| progress(r)),
            )?;
            let seconds = t0.elapsed().as_secs_f64();
            let fit_cpu = cpu_seconds() - c0;
            let last = fit
                .report
                .run
                .as_ref()
                .unwrap()
                .iterations
                .last()
                .map_or(0.0, |r| r.r);
            format!(
                "{{\"method\":\"svm-aid\",\"seconds\":{},\"fit_cpu_s\":{},\"objective\":{},\"lower_bound\":{},\"iterations\":{},\"r0\":{},\"rT\":{},\"stop\":\"{}\",\"pos_label\":{},\"w\":{:?},\"b\":{},\"finish\":{}}}",
                seconds,
                fit_cpu,
                fit.report.run.as_ref().unwrap().best_objective,
                fit.report.run.as_ref().unwrap().lower_bound,
                fit.report.run.as_ref().unwrap().iterations.len(),
                fit.report.run.as_ref().unwrap().iterations[0].r,
                last,
                fit.report.run.as_ref().unwrap().stop_name(),
                fit.report.labels[0],
                fit.report.run.as_ref().unwrap().best.w,
                fit.report.run.as_ref().unwrap().best.b,
                fit.report.finish.map_or("null".to_string(), |f| format!(
                    "{{\"rank\":{},\"residual\":{},\"steer_iterations\":{},\"steer_seconds\":{},\"smo_iterations\":{},\"finish_seconds\":{},\"smo_tol\":{}}}",
                    f.rank, f.residual, f.steer_iterations, f.steer_seconds, f.smo_iterations, f.finish_seconds, f.smo_tol
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
            let Fit { report, .. } = fit(&params, &data, &mut Control::default())?;
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
