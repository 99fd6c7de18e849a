//! Reproduces the paper's D01 (breast cancer diagnostic, 569 x 30) experiments of Ogawa et al.,
//! "Safe sample screening for support vector machines" (2014), and writes
//! `docs/repro/screening.md` and `docs/repro/screening_fig4.svg`:
//!
//! * Figure 4: screening rate of BT1, BT2 and IT against `C_ref / C` at `C = 10`, for the linear
//!   kernel and RBF with gamma in {0.1/d, 1/d, 10/d} (each reference and each target solved to
//!   tolerance 1e-8).
//! * Table IV, rows D01: total time of the whole epsilon-path (eps = 1e-3, from Lemma 9's `C_min`
//!   to `C_T = 1e4`) for Full / Shrink / BT1 / Shrink+BT1 / IT / Shrink+IT (medians of 3 runs), with
//!   the largest relative objective difference to Full over the path.
//! * Table III's setting on a synthetic large sparse linear set (the paper's D09-D12 are not
//!   available): one SVM at `C = C_ref / 0.9`, `C_ref = 500 C_min`, screened from the solution at
//!   `C_ref`, Full / Shrink / BT1 / Shrink+BT1 / IT / Shrink+IT, each solve from zero as LIBLINEAR
//!   trains it (the paper's setting), plus the warm-started pair.
//!
//! `cargo run --release -p marginkit --example screening_repro -- [DATA_DIR] [OUT_DIR]`
//! (defaults: the repository's `data/` folder, `docs/repro`).

use std::error::Error;
use std::fmt::Write as _;
use std::time::Instant;

use marginkit::data::libsvm_fmt::{read_libsvm_path, ReadOptions};
use marginkit::data::{CsrMatrix, Features};
use marginkit::fit::Control;
use marginkit::path::{self, Grid, LinearStart, PathData, PathParams, PathResult};
use marginkit::plot::{stack_svg, Axis, LineChart, Scale};
use marginkit::screening::Rule;
use marginkit::solver::Shrinking;
use marginkit::{Dataset, KernelSpec};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// Runs per timing (the median is reported); 3 keeps the whole example near 3 minutes on one core.
const REPEATS: usize = 3;

/// Table III's synthetic set: rows, features, nonzeros drawn per row.
const T3_SHAPE: (usize, usize, usize) = (1_000_000, 100_000, 20);

/// The paper's Table III (seconds; rates as fractions): Full, Shrink, BT1, Shrink+BT1, BT1 rule,
/// BT1 rate, IT, Shrink+IT, IT rule, IT rate.
const PAPER_T3: [(&str, [f64; 10]); 4] = [
    (
        "D09",
        [
            98.2, 2.57, 95.1, 2.21, 0.0022, 0.178, 47.3, 1.21, 0.0214, 0.51,
        ],
    ),
    (
        "D10",
        [
            1881.0, 327.0, 1690.0, 247.0, 0.0514, 0.108, 1575.0, 228.0, 2.24, 0.125,
        ],
    ),
    (
        "D11",
        [
            2801.0, 115.0, 2699.0, 97.2, 0.203, 0.136, 2757.0, 88.1, 2.78, 0.136,
        ],
    ),
    (
        "D12",
        [
            16875.0, 4558.0, 7170.0, 4028.0, 0.432, 0.138, 12002.0, 3293.0, 5.39, 0.139,
        ],
    ),
];

/// The six methods of Tables III and IV, in the paper's column order.
const METHODS: [(Shrinking, Option<Rule>); 6] = [
    (Shrinking::Off, None),
    (Shrinking::On, None),
    (Shrinking::Off, Some(Rule::Bt1)),
    (Shrinking::On, Some(Rule::Bt1)),
    (Shrinking::Off, Some(Rule::It)),
    (Shrinking::On, Some(Rule::It)),
];

/// Table III's synthetic set, the distribution of `bench/path_bench.py`'s `sparse_set` drawn by
/// this example's own seeded generator: each class owns a pool of 500 feature indices (class +1
/// the first 500, class -1 the next 500); each of a row's `nnz` draws is, with probability 1/2,
/// uniform over all `d` features, else uniform over its class's pool; duplicates merge; values
/// `1/sqrt(distinct count)` (unit rows, like tf-idf); then 5% of the labels are flipped.
fn sparse_set(n: usize, d: usize, nnz: usize, seed: u64) -> Result<Dataset, Box<dyn Error>> {
    const POOL: u32 = 500;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let (mut indptr, mut indices, mut values) = (vec![0], Vec::new(), Vec::new());
    let mut y = Vec::with_capacity(n);
    let mut row = Vec::with_capacity(nnz);
    let d32 = u32::try_from(d)?;
    for _ in 0..n {
        let pos = rng.gen_bool(0.5);
        row.clear();
        for _ in 0..nnz {
            row.push(if rng.gen_bool(0.5) {
                rng.gen_range(0..d32)
            } else {
                rng.gen_range(0..POOL) + if pos { 0 } else { POOL }
            });
        }
        row.sort_unstable();
        row.dedup();
        let v = 1.0 / (row.len() as f64).sqrt();
        indices.extend_from_slice(&row);
        values.extend(std::iter::repeat_n(v, row.len()));
        indptr.push(indices.len());
        let flip = rng.gen_bool(0.05);
        y.push(if pos != flip { 1.0 } else { -1.0 });
    }
    let x = CsrMatrix::new(d, indptr, indices, values)?;
    Ok(Dataset::new(Features::Sparse(x), y, None)?)
}

/// Lemma 9's `C_min = 1 / max_i (Q1)_i` of the linear kernel: `(Q1)_i = y_i x_i' s` with
/// `s = sum_j y_j x_j`.
fn c_min_linear(data: &Dataset) -> f64 {
    let mut s = vec![0.0; data.n_features()];
    for (i, &yi) in data.y.iter().enumerate() {
        for (k, v) in data.x.row(i).iter() {
            s[k] += yi * v;
        }
    }
    let top = (0..data.len())
        .map(|i| data.y[i] * data.x.row(i).iter().map(|(k, v)| v * s[k]).sum::<f64>())
        .fold(f64::NEG_INFINITY, f64::max);
    1.0 / top
}

/// Medians over [`REPEATS`] runs of one screened solve at `C = C_ref / 0.9` (the second point of
/// the list `[C_ref, C]`): its time (rule + solve + KKT re-check), the rule's time, the point
/// itself (of the last run).
fn table3_point(
    data: &Dataset,
    base: &PathParams,
    (shrink, rule): (Shrinking, Option<Rule>),
) -> Result<(f64, f64, marginkit::path::PathPoint), Box<dyn Error>> {
    let (mut ts, mut rs, mut last) = (Vec::new(), Vec::new(), None);
    for _ in 0..REPEATS {
        let mut r = run(data, base.clone().shrinking(shrink).screening(rule))?;
        let p = r.points.pop().ok_or("a two-point path returned no point")?;
        ts.push(p.rule_seconds + p.solve_seconds);
        rs.push(p.rule_seconds);
        last = Some(p);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    Ok((median(&mut ts), median(&mut rs), last.ok_or("no run")?))
}

/// Table III's setting on the synthetic set: cold (the paper's LIBLINEAR) for all six methods,
/// warm (the path's own start) for Shrink and Shrink+IT.
fn table3(md: &mut String) -> Result<(), Box<dyn Error>> {
    let (n, d, nnz) = T3_SHAPE;
    let data = sparse_set(n, d, nnz, 20_261_121)?;
    let c_min = c_min_linear(&data);
    let c_ref = 500.0 * c_min;
    let c = c_ref / 0.9;
    writeln!(
        md,
        "## Table III setting: one SVM at C = C_ref / 0.9 on a large sparse linear set (seconds)\n"
    )?;
    writeln!(
        md,
        "The paper's D09-D12 are not available here. Synthetic set (this example's seeded generator, \
         the distribution of `bench/path_bench.py --large`): n = {n}, d = {d}, {nnz} draws per row \
         ({} nonzeros), each class owning 500 features, 5% flipped labels. Lemma 9's C_min = {c_min:.4e}, \
         C_ref = 500 C_min = {c_ref:.4e}, C = C_ref / 0.9. Linear dual coordinate descent, tolerance 0.1, \
         one thread. A time is that of the solve at C (rule + solve + KKT re-check), the median of {REPEATS} \
         runs; the reference at C_ref is solved first in every run and not timed. \
         **cold**: every solve at C starts from zero as LIBLINEAR does (the paper's setting; screened \
         samples at their fixed values); **warm**: the path's own start from the reference.\n",
        match &data.x {
            Features::Sparse(m) => m.nnz(),
            Features::Dense(m) => m.values().len(),
        }
    )?;
    let base = PathParams::linear()
        .tol(0.1)
        .grid(Grid::List(vec![c_ref, c]));
    writeln!(
        md,
        "| data | start | Full | Shrink | BT1 | Shrink+BT1 | BT1 rule | BT1 rate | IT | Shrink+IT | IT rule | IT rate | Shrink / Shrink+IT |"
    )?;
    writeln!(md, "|---|---|---|---|---|---|---|---|---|---|---|---|---|")?;
    let mut details = Vec::new();
    // (start, Shrink / Shrink+IT, Shrink+IT's rate) for the text below.
    let mut summary = Vec::new();
    for (start, sname) in [(LinearStart::Cold, "cold"), (LinearStart::Auto, "warm")] {
        let base = base.clone().linear_start(start);
        let mut cells = vec![String::new(); 10];
        let mut shrink_times = [f64::NAN; 2];
        let mut full_obj = None;
        let mut it_rate = f64::NAN;
        for (k, method) in METHODS.into_iter().enumerate() {
            // Warm: only the pair the paper's conclusion rests on (Shrink vs Shrink+IT).
            if start == LinearStart::Auto && k != 1 && k != 5 {
                continue;
            }
            let (t, rule_t, p) = table3_point(&data, &base, method)?;
            let col = [0, 1, 2, 3, 6, 7][k];
            cells[col] = format!("{t:.3}");
            match method.1 {
                Some(Rule::Bt1) => {
                    cells[4] = format!("{rule_t:.3}");
                    cells[5] = format!("{:.3}", p.screening_rate);
                }
                Some(Rule::It) => {
                    cells[8] = format!("{rule_t:.3}");
                    cells[9] = format!("{:.3}", p.screening_rate);
                    if k == 5 {
                        it_rate = p.screening_rate;
                    }
                }
                _ => {}
            }
            if k == 1 {
                shrink_times[0] = t;
            }
            if k == 5 {
                shrink_times[1] = t;
            }
            let obj = *full_obj.get_or_insert(p.objective);
            details.push(format!(
                "| {sname} | {} | {} / {} | {} | {:.1e} |",
                ["Full", "Shrink", "BT1", "Shrink+BT1", "IT", "Shrink+IT"][k],
                p.screened_r,
                p.screened_l,
                p.iterations,
                ((p.objective - obj) / obj).abs()
            ));
        }
        let ratio = shrink_times[0] / shrink_times[1];
        writeln!(
            md,
            "| synthetic | {sname} | {} | {ratio:.2}x |",
            cells.join(" | ")
        )?;
        summary.push((sname, ratio, it_rate));
    }
    for (name, v) in PAPER_T3 {
        let cells: Vec<String> = v.iter().map(|x| format!("{x}")).collect();
        writeln!(
            md,
            "| {name} (paper) | cold | {} | {:.2}x |",
            cells.join(" | "),
            v[1] / v[7]
        )?;
    }
    writeln!(
        md,
        "\nPer run at C (last run of each): screened into R / L, DCD passes (summed over the solver \
         runs), relative objective difference to the first method of the same start.\n"
    )?;
    writeln!(
        md,
        "| start | method | screened R / L | passes | rel obj diff |"
    )?;
    writeln!(md, "|---|---|---|---|---|")?;
    for line in details {
        writeln!(md, "{line}")?;
    }
    let said: Vec<String> = summary
        .iter()
        .map(|(sname, ratio, rate)| {
            format!(
                "{sname}: Shrink+IT takes {:.2} of Shrink's time (IT rate {rate:.3})",
                1.0 / ratio
            )
        })
        .collect();
    writeln!(
        md,
        "\n### Differences, honestly\n\n\
         * Measured here: {}. The target is Shrink+IT <= 0.75 of Shrink; the paper's \
         four sets give 0.47-0.76 (cold, LIBLINEAR).\n\
         * The paper's sets screen 12.5-51% of the non-SVs with IT (D09, at 51%, is the one where \
         Shrink+IT halves the time). This generator's rows are unit vectors whose other half of \
         nonzeros is uniform over all features, so `w` spreads over the whole space and the \
         rules' balls reach few samples: the IT rate above is the share of the bounded samples \
         screening can remove.\n\
         * LIBLINEAR's solves in the paper take 1-4,558 s with shrinking; ours take a handful of \
         passes (table above), and shrinking removes most bounded samples after the first pass \
         anyway, so the screened samples save a share of the first passes, while IT's rule costs \
         about one pass of dot products (`h = Q s` for the samples BT1 leaves undecided) and a \
         cold solve with different fixed variables can take a pass more or less than without \
         them (the pass counts above). Warm from the reference, both solves need the same few \
         passes and the screened rows are simply skipped.\n\
         * The objective differences are those of solves stopped at tolerance 0.1 from \
         different starting points (screening changes the start); every point passes the KKT \
         re-check on the full problem.\n",
        said.join("; ")
    )?;
    Ok(())
}

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

fn run(data: &Dataset, p: PathParams) -> Result<PathResult, Box<dyn Error>> {
    Ok(path::fit(&p.check()?, &PathData::new(data), &mut Control::default())?.model)
}

/// The repository's `data/` folder (provenance in `data/README.md`).
const DATA_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data");

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().collect();
    let data_dir = args.get(1).map_or(DATA_DIR, String::as_str);
    let out_dir = std::path::PathBuf::from(args.get(2).map_or("docs/repro", String::as_str));
    std::fs::create_dir_all(&out_dir)?;
    let path = format!("{data_dir}/clf/breast_cancer.scale.svm");
    let data = read_libsvm_path(&path, &ReadOptions::default()).map_err(|e| {
            format!("cannot read {path}: {e} (a copy of the file is in the repository's data/ folder; see data/README.md)")
        })?;
    let d = data.n_features();
    let mut md = String::new();
    writeln!(
        md,
        "# Safe sample screening: reproduction on D01 (breast cancer)\n"
    )?;
    writeln!(
        md,
        "Produced by `cargo run --release -p marginkit --example screening_repro` from \
         `{}` ({} samples, {d} features, scaled to [-1, 1]).\n",
        // The repository-relative name when the default folder is read, so that the page
        // names no machine path.
        if args.get(1).is_some() {
            path.as_str()
        } else {
            "data/clf/breast_cancer.scale.svm"
        },
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
         bias (the paper: modified LIBSVM), tolerance 1e-3. Wall seconds, the median of {REPEATS} runs. \
         `max rel obj diff` = largest relative difference of the objective to Full over the path \
         (exactness of screening + KKT re-check).\n"
    )?;
    writeln!(
        md,
        "| kernel | points | source | Full | Shrink | BT1 | Shrink+BT1 | IT | Shrink+IT | max rel obj diff | freed |"
    )?;
    writeln!(md, "|---|---|---|---|---|---|---|---|---|---|---|")?;
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
        for (shrink, rule) in METHODS {
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
         our epsilon-path picks the next C = rho C_0 as the largest with gap(rho) <= gap(1) + \
         eps D(rho a), where gap(rho) is the duality gap of the scaled reference rho a at C (see \
         `crates/marginkit/src/path/mod.rs`). The offset gap(1), the reference's own duality gap, \
         discounts the solver's tolerance: each step is epsilon-accurate relative to the reference's \
         accuracy, not absolutely. So the number of points differs from the paper's and absolute \
         times are not comparable. Compare the ratios between columns.\n\
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
         * Our Shrink is not faster than Full on D01's RBF paths (within the run-to-run noise): the solves are milliseconds \
         long and start next to the solution, so there is little for shrinking to skip.\n"
    )?;
    table3(&mut md)?;
    std::fs::write(out_dir.join("screening.md"), md)?;
    println!("wrote {}", out_dir.join("screening.md").display());
    Ok(())
}
