//! Reproduces the paper's D01 (breast cancer diagnostic, 569 x 30) experiments of Ogawa et al.,
//! "Safe sample screening for support vector machines" (2014), and writes
//! `docs/repro/screening.md` and `docs/repro/screening_fig4.svg`:
//!
//! * Figure 4: screening rate of BT1, BT2 and IT against `C_ref / C` at `C = 10`, for the linear
//!   kernel and RBF with gamma in {0.1/d, 1/d, 10/d} (each reference and each target solved to
//!   tolerance 1e-8).
//! * Table IV, rows D01: total time of the whole epsilon-path (eps = 1e-3, from Lemma 9's `C_min`
//!   to `C_T = 1e4`) for Full / Shrink / BT1 / Shrink+BT1 / IT / Shrink+IT (one run each), with
//!   the largest relative objective difference to Full over the path.
//!
//! `cargo run --release -p marginkit --example screening_repro -- [DATA_DIR] [OUT_DIR]`
//! (defaults: `/work/shared/data`, `docs/repro`).

use std::fmt::Write as _;
use std::time::Instant;

use marginkit::data::libsvm_fmt::{read_libsvm_path, ReadOptions};
use marginkit::path::{run_path, Grid, PathParams, PathResult};
use marginkit::plot::{stack_svg, Axis, LineChart, Scale};
use marginkit::screening::Rule;
use marginkit::solver::{NoObserver, Shrinking};
use marginkit::{Dataset, KernelSpec};

/// Runs per timing (the median is reported); 1 keeps the whole example near 5 minutes on 2 cores.
const REPEATS: usize = 1;

/// The paper's Table IV, rows D01 (seconds): Full, Shrink, BT1, Shrink+BT1, IT, Shrink+IT.
const PAPER_T4: [(&str, [f64; 6]); 4] = [
    ("Lin", [389.0, 35.2, 174.0, 34.8, 177.0, 34.8]),
    ("RBF 0.1/d", [43.8, 4.51, 9.08, 2.8, 8.48, 2.87]),
    ("RBF 1/d", [2.73, 0.68, 0.435, 0.295, 0.464, 0.294]),
    ("RBF 10/d", [0.73, 0.4, 0.312, 0.221, 0.266, 0.213]),
];

fn kernels(d: usize) -> Vec<(&'static str, Option<KernelSpec>)> {
    let d = d as f64;
    vec![
        ("Lin", None),
        ("RBF 0.1/d", Some(KernelSpec::Rbf { gamma: 0.1 / d })),
        ("RBF 1/d", Some(KernelSpec::Rbf { gamma: 1.0 / d })),
        ("RBF 10/d", Some(KernelSpec::Rbf { gamma: 10.0 / d })),
    ]
}

fn run(data: &Dataset, p: PathParams) -> Result<PathResult, Box<dyn std::error::Error>> {
    Ok(run_path(
        &p.check()?,
        data,
        None,
        &mut |_| {},
        &mut NoObserver,
    )?)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let data_dir = args.get(1).map_or("/work/shared/data", String::as_str);
    let out_dir = std::path::PathBuf::from(args.get(2).map_or("docs/repro", String::as_str));
    std::fs::create_dir_all(&out_dir)?;
    let path = format!("{data_dir}/clf/breast_cancer.scale.svm");
    let data = read_libsvm_path(&path, &ReadOptions::default())?;
    let d = data.n_features();
    let mut md = String::new();
    writeln!(
        md,
        "# Safe sample screening: reproduction on D01 (breast cancer)\n"
    )?;
    writeln!(
        md,
        "Produced by `cargo run --release -p marginkit --example screening_repro` from \
         `{path}` ({} samples, {d} features, scaled to [-1, 1]).\n",
        data.len()
    )?;

    // ---------------------------------------------------------------- Figure 4
    let c = 10.0;
    let ratios: Vec<f64> = (1..=19).map(|k| 0.05 * k as f64).collect();
    let rules = [
        (Rule::Bt1, "BT1", "#d62728"),
        (Rule::Bt2, "BT2", "#2ca02c"),
        (Rule::It, "IT", "#1f77b4"),
    ];
    let mut charts = Vec::new();
    writeln!(md, "## Figure 4: screening rate vs C_ref / C (C = 10)\n")?;
    writeln!(
        md,
        "Rate = samples screened / samples at a bound (the paper's non-SVs) at the optimum. \
         Linear = the linear kernel solved by SMO without bias; RBF with gamma = 0.1/d, 1/d, 10/d. \
         Every solve to tolerance 1e-8; no sample was ever freed by the KKT re-check.\n\n\
         ![Figure 4](screening_fig4.svg)\n"
    )?;
    writeln!(
        md,
        "| kernel | rule | C_ref/C = 0.1 | 0.3 | 0.5 | 0.7 | 0.9 | 0.95 |"
    )?;
    writeln!(md, "|---|---|---|---|---|---|---|---|")?;
    for (kname, spec) in kernels(d) {
        let mut chart = LineChart::new(
            &format!("D01 {kname}, C = 10"),
            Axis {
                label: "C_ref / C".into(),
                scale: Scale::Linear,
            },
            Axis {
                label: "screening rate".into(),
                scale: Scale::Linear,
            },
        );
        for (rule, rname, color) in rules {
            let mut pts = Vec::new();
            let mut freed = 0;
            for &r in &ratios {
                let res = run(
                    &data,
                    PathParams::kernel(spec.unwrap_or(KernelSpec::Linear))
                        .grid(Grid::List(vec![r * c, c]))
                        .screening(Some(rule))
                        .tol(1e-8),
                )?;
                freed += res.points[1].kkt_violators_freed;
                pts.push((r, res.points[1].screening_rate));
            }
            assert_eq!(freed, 0, "a tight reference never needs the re-check");
            let pick = |x: f64| {
                pts.iter()
                    .find(|p| (p.0 - x).abs() < 1e-9)
                    .map_or(f64::NAN, |p| p.1)
            };
            writeln!(
                md,
                "| {kname} | {rname} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |",
                pick(0.1),
                pick(0.3),
                pick(0.5),
                pick(0.7),
                pick(0.9),
                pick(0.95)
            )?;
            chart = chart.add(rname, color, pts);
        }
        charts.push(chart);
    }
    std::fs::write(out_dir.join("screening_fig4.svg"), stack_svg(&charts))?;
    writeln!(
        md,
        "\nThe paper gives Figure 4 only as a picture (no numbers in the text); its findings \
         are that rates rise as C_ref/C approaches 1 and that IT is always highest. Compare with \
         the table above.\n"
    )?;

    // ---------------------------------------------------------------- Table IV
    writeln!(
        md,
        "## Table IV, rows D01: whole epsilon-path time (seconds)\n"
    )?;
    writeln!(
        md,
        "Epsilon-path (eps = 1e-3) from C_min = 1/max(Q1) (Lemma 9) to C_T = 1e4, warm starts. \
         Linear: dual coordinate descent (the paper: LIBLINEAR), tolerance 0.1; RBF: SMO without \
         bias (the paper: modified LIBSVM), tolerance 1e-3. One run each (`REPEATS` in the example). \
         `max rel obj diff` = largest relative difference of the objective to Full over the path \
         (exactness of screening + KKT re-check).\n"
    )?;
    writeln!(
        md,
        "| kernel | points | source | Full | Shrink | BT1 | Shrink+BT1 | IT | Shrink+IT | max rel obj diff | freed |"
    )?;
    writeln!(md, "|---|---|---|---|---|---|---|---|---|---|---|")?;
    let methods = [
        (Shrinking::Off, None),
        (Shrinking::On, None),
        (Shrinking::Off, Some(Rule::Bt1)),
        (Shrinking::On, Some(Rule::Bt1)),
        (Shrinking::Off, Some(Rule::It)),
        (Shrinking::On, Some(Rule::It)),
    ];
    for ((kname, spec), (_, paper)) in kernels(d).into_iter().zip(PAPER_T4) {
        let base = match spec {
            Some(k) => PathParams::kernel(k).tol(1e-3),
            None => PathParams::linear().tol(0.1),
        }
        .grid(Grid::Epsilon {
            eps: 1e-3,
            c_max: 1e4,
            max_points: 5000,
        });
        let mut times = Vec::new();
        let mut full: Option<PathResult> = None;
        let mut max_rel = 0.0f64;
        let mut freed = 0;
        let mut points = 0;
        for (shrink, rule) in methods {
            let mut ts = Vec::new();
            let mut last = None;
            for _ in 0..REPEATS {
                let t = Instant::now();
                let r = run(&data, base.clone().shrinking(shrink).screening(rule))?;
                ts.push(t.elapsed().as_secs_f64());
                last = Some(r);
            }
            ts.sort_by(f64::total_cmp);
            times.push(ts[ts.len() / 2]);
            let r = last.expect("at least one run");
            freed += r
                .points
                .iter()
                .map(|p| p.kkt_violators_freed)
                .sum::<usize>();
            match &full {
                None => {
                    points = r.points.len();
                    full = Some(r);
                }
                Some(f) => {
                    for (a, b) in f.points.iter().zip(&r.points) {
                        if a.c == b.c {
                            max_rel =
                                max_rel.max((a.objective - b.objective).abs() / a.objective.abs());
                        }
                    }
                }
            }
        }
        let row = |v: &[f64]| {
            v.iter()
                .map(|t| format!("{t:.4}"))
                .collect::<Vec<_>>()
                .join(" | ")
        };
        writeln!(
            md,
            "| {kname} | {points} | marginkit | {} | {max_rel:.1e} | {freed} |",
            row(&times)
        )?;
        writeln!(md, "| {kname} | | paper | {} | | |", row(&paper))?;
        let ratio = times[1] / times[5];
        let paper_ratio = paper[1] / paper[5];
        writeln!(
            md,
            "| {kname} | | Shrink / Shrink+IT | marginkit {ratio:.2}x | paper {paper_ratio:.2}x | | | | | | |"
        )?;
    }
    writeln!(
        md,
        "\n### Differences, honestly\n\n\
         * Hardware, tolerances and the epsilon-path inner algorithm are not given in the paper; \
         our epsilon-path picks the next C by the duality gap of the scaled reference (see \
         `crates/marginkit/src/path/mod.rs`), so the number of points differs from the paper's and \
         absolute times are not comparable. Compare the ratios between columns.\n\
         * Our times include the full margin recomputation `Qa` after each solve (needed for the \
         next reference and for the KKT re-check) and the KKT re-check itself; the paper does not \
         say whether its times include this.\n\
         * Screening only skips work the solver would otherwise do; on D01 the solves take \
         milliseconds, so the rule and bookkeeping costs weigh more than on the paper's larger sets.\n\
         * `freed` counts screened samples that failed the KKT re-check: the reference of each \
         step is only solved to the tolerance (1e-3 / 0.1), so BT1 and IT, which assume an exact \
         reference, do screen wrongly, often with small gamma and with the loose linear \
         tolerance. The re-check frees them and re-solves, so every point still meets the \
         stopping rule on the full problem (the objective differences above are those of two \
         solves stopped at the same tolerance from different starting points).\n\
         * With thousands of millisecond solves (RBF 10/d), the per-solve overhead dominates: \
         the SMO engine permutes the fixed (screened) variables to the end of its arrays and the \
         path permutes them back after the solve, and each swap is replayed on every cached kernel \
         column. Screening then costs more than it saves; on larger problems the solves dominate.\n\
         * The paper's Table III (large sparse linear sets, n >= 1e6) is not reproduced here.\n"
    )?;
    std::fs::write(out_dir.join("screening.md"), md)?;
    println!("wrote {}", out_dir.join("screening.md").display());
    Ok(())
}
