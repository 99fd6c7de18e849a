//! Brute-force oracle of ODMC on tiny data (n <= 10).
//!
//! Every admissible labeling `y` of the balance set `B = {y : |e'y - t| <= beta n}` is scored by
//! the inner problem of the paper's Eq. 3, `V(y) = max_{alpha >= 0} G(alpha, y)`: the ODM dual
//! (Eq. 1) for the labels `y`, solved by clarabel on a kernel matrix built here from the
//! standardized points. For the linear kernel `V(y)` is also the optimum of the primal Eq. 1
//! (clarabel on `w, xi, eps`), so strong duality checks that the dual is the paper's problem.
//! Eq. 3's optimum is `min_{y in B} V(y)`; ODMC's relaxation (Eq. 7) must find its argmin where
//! the argmin is clear:
//! - k = 2: the labeling returned by the default configuration (label generation, best
//!   response, decision readout), by its paper readout (`paper_labels`), and by the pure
//!   Algorithm 1 configuration (one round of stochastic mirror descent, the paper's
//!   `sign(sum_k mu_k y_k)` readout) is the argmin, linear and Gaussian kernels, several seeds;
//! - k = 3 (recursive bisection): each split is the argmin over its own balance set (the `2 : 1`
//!   split centred at `t = n / 3`, then the `1 : 1` split of the larger side, re-centred for the
//!   linear kernel).
//!
//! The library's ODM objective functions (`OdmConsts::dual_value`, `OdmConsts::primal_value`)
//! are checked against the oracle's optimal values too.

#![allow(clippy::needless_range_loop)]

use clarabel::algebra::CscMatrix;
use clarabel::solver::{
    DefaultSettings, DefaultSolver, IPSolver, NonnegativeConeT, SolverStatus, SupportedConeT,
};
use marginkit::cluster::{ClusterError, Points};
use marginkit::fit::Control;
use marginkit::odm::odmc::{self, OdmcData, OdmcKernel, OdmcParams, Readout};
use marginkit::odm::OdmConsts;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

const LAMBDA: f64 = 1.0;
const NU: f64 = 0.5;
const THETA: f64 = 0.2;

/// The one call of the clustering entry point.
/// What the tests read of an ODMC fit.
struct Run {
    labels: Vec<usize>,
    cluster_sizes: Vec<usize>,
    paper_labels: Option<Vec<usize>>,
    rounds: usize,
    iterations: u64,
}

fn run_odmc(x: &Points, params: &OdmcParams) -> Result<Run, ClusterError> {
    let p = params.clone().check()?;
    let fit = odmc::fit(&p, &OdmcData::Points(x), &mut Control::default())?;
    Ok(Run {
        labels: fit.model.labels,
        cluster_sizes: fit.model.cluster_sizes,
        paper_labels: fit.model.paper_labels,
        rounds: fit.report.rounds,
        iterations: fit.report.iterations,
    })
}

/// `min 1/2 x'Px + q'x  s.t.  A x <= b` (rows of `A` sparse) by clarabel: (objective, x).
fn clarabel_min(p: &[f64], q: &[f64], rows: &[Vec<(usize, f64)>], b: &[f64]) -> (f64, Vec<f64>) {
    let n = q.len();
    let (mut colptr, mut rowval, mut nzval) = (vec![0usize], Vec::new(), Vec::new());
    for j in 0..n {
        for i in 0..=j {
            let v = p[i * n + j];
            if v != 0.0 {
                rowval.push(i);
                nzval.push(v);
            }
        }
        colptr.push(rowval.len());
    }
    let p_mat = CscMatrix::new(n, n, colptr, rowval, nzval);
    let mut cols: Vec<Vec<(usize, f64)>> = vec![Vec::new(); n];
    for (r, entries) in rows.iter().enumerate() {
        for &(c, v) in entries {
            cols[c].push((r, v));
        }
    }
    let (mut colptr, mut rowval, mut nzval) = (vec![0usize], Vec::new(), Vec::new());
    for c in cols {
        for (r, v) in c {
            rowval.push(r);
            nzval.push(v);
        }
        colptr.push(rowval.len());
    }
    let a_mat = CscMatrix::new(rows.len(), n, colptr, rowval, nzval);
    let cones: Vec<SupportedConeT<f64>> = vec![NonnegativeConeT(rows.len())];
    let set = DefaultSettings {
        verbose: false,
        tol_gap_abs: 1e-11,
        tol_gap_rel: 1e-11,
        tol_feas: 1e-11,
        ..DefaultSettings::default()
    };
    let mut s = DefaultSolver::new(&p_mat, q, &a_mat, b, &cones, set).expect("clarabel setup");
    s.solve();
    assert!(
        matches!(
            s.solution.status,
            SolverStatus::Solved | SolverStatus::AlmostSolved
        ),
        "clarabel: {:?}",
        s.solution.status
    );
    (s.solution.obj_val, s.solution.x.clone())
}

/// Features centred, scaled to unit (population) variance.
fn standardize(x: &Points) -> Vec<Vec<f64>> {
    let (n, d) = (x.n, x.d);
    let mut out = vec![vec![0.0; d]; n];
    for k in 0..d {
        let mean = (0..n).map(|i| x.v[i * d + k]).sum::<f64>() / n as f64;
        let var = (0..n).map(|i| (x.v[i * d + k] - mean).powi(2)).sum::<f64>() / n as f64;
        for i in 0..n {
            out[i][k] = (x.v[i * d + k] - mean) / var.sqrt();
        }
    }
    out
}

fn centred(rows: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let d = rows[0].len();
    let mean: Vec<f64> = (0..d)
        .map(|k| rows.iter().map(|r| r[k]).sum::<f64>() / rows.len() as f64)
        .collect();
    rows.iter()
        .map(|r| r.iter().zip(&mean).map(|(a, m)| a - m).collect())
        .collect()
}

fn sq(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(u, v)| (u - v) * (u - v)).sum()
}

/// The kernel of ODMC, built here: linear `x_i'x_j`, or Gaussian with
/// `sigma^2 = s^2 * (mean squared distance over pairs i != j)`.
#[derive(Clone, Copy)]
enum Kern {
    Linear,
    Gaussian(f64),
}

fn gram(rows: &[Vec<f64>], kern: Kern) -> Vec<f64> {
    let n = rows.len();
    let mut k = vec![0.0; n * n];
    match kern {
        Kern::Linear => {
            for i in 0..n {
                for j in 0..n {
                    k[i * n + j] = rows[i].iter().zip(&rows[j]).map(|(a, b)| a * b).sum();
                }
            }
        }
        Kern::Gaussian(s) => {
            let mut msd = 0.0;
            for i in 0..n {
                for j in 0..n {
                    if i != j {
                        msd += sq(&rows[i], &rows[j]);
                    }
                }
            }
            msd /= (n * (n - 1)) as f64;
            let sigma2 = s * s * msd;
            for i in 0..n {
                for j in 0..n {
                    k[i * n + j] = (-sq(&rows[i], &rows[j]) / (2.0 * sigma2)).exp();
                }
            }
        }
    }
    k
}

/// `V(y) = max_{alpha >= 0} G(alpha, y)` by clarabel; also returns the maximizer.
fn dual_value(k: &[f64], y: &[i8]) -> (f64, Vec<f64>) {
    let n = y.len();
    let c = n as f64 * (1.0 - THETA).powi(2) / (4.0 * LAMBDA);
    let m = 2 * n;
    // -G = 1/2 z'Kz + c(|a1|^2 + |a2|^2/nu) - (1-theta) e'a1 + (1+theta) e'a2, z = y.(a1 - a2).
    let mut p = vec![0.0; m * m];
    for i in 0..n {
        for j in 0..n {
            let qij = k[i * n + j] * f64::from(y[i]) * f64::from(y[j]);
            p[i * m + j] = qij;
            p[(n + i) * m + (n + j)] = qij;
            p[i * m + (n + j)] = -qij;
            p[(n + i) * m + j] = -qij;
        }
        p[i * m + i] += 2.0 * c;
        p[(n + i) * m + (n + i)] += 2.0 * c / NU;
    }
    let q: Vec<f64> = (0..m)
        .map(|a| if a < n { -(1.0 - THETA) } else { 1.0 + THETA })
        .collect();
    let rows: Vec<Vec<(usize, f64)>> = (0..m).map(|a| vec![(a, -1.0)]).collect();
    let (obj, alpha) = clarabel_min(&p, &q, &rows, &vec![0.0; m]);
    (-obj, alpha)
}

/// The primal Eq. 1 with the linear kernel by clarabel: (optimum, w).
fn primal_value(rows: &[Vec<f64>], y: &[i8]) -> (f64, Vec<f64>) {
    let (n, d) = (rows.len(), rows[0].len());
    let nv = d + 2 * n;
    let s = 2.0 * LAMBDA / (n as f64 * (1.0 - THETA).powi(2));
    let mut p = vec![0.0; nv * nv];
    for a in 0..d {
        p[a * nv + a] = 1.0;
    }
    for i in 0..n {
        p[(d + i) * nv + d + i] = s;
        p[(d + n + i) * nv + d + n + i] = s * NU;
    }
    let mut cons = Vec::new();
    let mut b = Vec::new();
    for i in 0..n {
        let yi = f64::from(y[i]);
        // y_i w'x_i >= 1 - theta - xi_i
        let mut r: Vec<(usize, f64)> = (0..d).map(|a| (a, -yi * rows[i][a])).collect();
        r.push((d + i, -1.0));
        cons.push(r);
        b.push(-(1.0 - THETA));
        // y_i w'x_i <= 1 + theta + eps_i
        let mut r: Vec<(usize, f64)> = (0..d).map(|a| (a, yi * rows[i][a])).collect();
        r.push((d + n + i, -1.0));
        cons.push(r);
        b.push(1.0 + THETA);
    }
    let (obj, x) = clarabel_min(&p, &vec![0.0; nv], &cons, &b);
    (obj, x[..d].to_vec())
}

/// Every labeling with `|e'y - t| <= beta n`, at least `min_pos` `+1`s and `min_neg` `-1`s; only
/// the one with `y_0 = +1` of a pair `y, -y` when both are admissible (`G(., y) = G(., -y)`).
fn admissible(n: usize, t: f64, beta: f64, min_pos: usize, min_neg: usize) -> Vec<Vec<i8>> {
    let ok = |p: usize| {
        let s = 2.0 * p as f64 - n as f64;
        (s - t).abs() <= beta * n as f64 + 1e-9 && p >= min_pos && n - p >= min_neg
    };
    let mut out = Vec::new();
    for mask in 0u32..(1 << n) {
        let y: Vec<i8> = (0..n)
            .map(|i| if mask >> i & 1 == 1 { 1 } else { -1 })
            .collect();
        let p = mask.count_ones() as usize;
        if !ok(p) {
            continue;
        }
        if y[0] == -1 && ok(n - p) {
            continue;
        }
        out.push(y);
    }
    out
}

/// The argmin of `V` over the labelings, the runner-up's value and the number of labelings.
fn brute_force(k: &[f64], labelings: &[Vec<i8>]) -> (Vec<i8>, f64, f64) {
    let mut scored: Vec<(f64, &Vec<i8>)> =
        labelings.iter().map(|y| (dual_value(k, y).0, y)).collect();
    scored.sort_by(|a, b| a.0.total_cmp(&b.0));
    (scored[0].1.clone(), scored[0].0, scored[1].0)
}

/// Cluster ids numbered by first appearance (the form ODMC returns).
fn canonical(ids: &[usize]) -> Vec<usize> {
    let mut map = std::collections::HashMap::new();
    ids.iter()
        .map(|&c| {
            let next = map.len();
            *map.entry(c).or_insert(next)
        })
        .collect()
}

fn from_signs(y: &[i8]) -> Vec<usize> {
    canonical(&y.iter().map(|&v| usize::from(v < 0)).collect::<Vec<_>>())
}

/// Two groups of `per` points in 2-D, centres `sep` apart, unit spread.
fn two_groups(per: usize, sep: f64, seed: u64) -> Points {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut v = Vec::new();
    for i in 0..2 * per {
        let c = if i % 2 == 0 { 0.0 } else { sep };
        v.push(c + rng.gen_range(-1.0..1.0));
        v.push(0.5 * c + rng.gen_range(-1.0..1.0));
    }
    Points {
        n: 2 * per,
        d: 2,
        v,
    }
}

fn params(kernel: OdmcKernel, beta: f64, seed: u64) -> OdmcParams {
    OdmcParams::new()
        .k(2)
        .lambda(LAMBDA)
        .nu(NU)
        .theta(THETA)
        .kernel(kernel)
        .beta(beta)
        .seed(seed)
}

#[test]
fn dual_equals_primal_and_the_library_objectives() {
    // Strong duality of the oracle's two problems, and the library's G and primal objective at
    // the oracle's optima, on random labelings of random points.
    let x = two_groups(5, 1.0, 7);
    let rows = standardize(&x);
    let k = gram(&rows, Kern::Linear);
    let n = x.n;
    let consts = OdmConsts::new(LAMBDA, NU, THETA, n);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
    for _ in 0..5 {
        let y: Vec<i8> = (0..n).map(|_| if rng.gen() { 1 } else { -1 }).collect();
        let (v, alpha) = dual_value(&k, &y);
        let (pv, w) = primal_value(&rows, &y);
        assert!(
            (v - pv).abs() <= 1e-7 * pv.abs().max(1.0),
            "dual {v} primal {pv}"
        );
        let z: Vec<f64> = (0..n)
            .map(|i| f64::from(y[i]) * (alpha[i] - alpha[n + i]))
            .collect();
        let mut zkz = 0.0;
        for i in 0..n {
            for j in 0..n {
                zkz += z[i] * k[i * n + j] * z[j];
            }
        }
        let lib_g = consts.dual_value(&alpha, zkz);
        assert!(
            (lib_g - v).abs() <= 1e-7 * v.abs().max(1.0),
            "G {lib_g} oracle {v}"
        );
        let yf: Vec<f64> = (0..n)
            .map(|i| f64::from(y[i]) * rows[i].iter().zip(&w).map(|(a, b)| a * b).sum::<f64>())
            .collect();
        let wn2: f64 = w.iter().map(|a| a * a).sum();
        let lib_p = consts.primal_value(wn2, &yf);
        assert!(
            (lib_p - pv).abs() <= 1e-7 * pv.abs().max(1.0),
            "primal {lib_p} oracle {pv}"
        );
    }
}

#[test]
fn two_clusters_are_the_brute_force_minimum_of_eq3() {
    let mut checked = 0;
    for (n_per, beta) in [(4usize, 0.0), (5, 0.2)] {
        for data_seed in 0..3u64 {
            let x = two_groups(n_per, 4.0, data_seed);
            let rows = standardize(&x);
            let cands = admissible(x.n, 0.0, beta, 1, 1);
            for (kern, okern) in [
                (Kern::Linear, OdmcKernel::Linear),
                (
                    Kern::Gaussian(1.0),
                    OdmcKernel::Gaussian { sigma_scale: 1.0 },
                ),
            ] {
                let k = gram(&rows, kern);
                let (best, v1, v2) = brute_force(&k, &cands);
                // The argmin must be clear for the check to mean anything.
                assert!(
                    v2 - v1 > 1e-3 * v1.abs().max(1e-3),
                    "data seed {data_seed}: runner-up {v2} too close to {v1}"
                );
                let want = from_signs(&best);
                for seed in 0..3u64 {
                    let r = run_odmc(&x, &params(okern, beta, seed)).unwrap();
                    assert_eq!(r.labels, want, "default, data {data_seed} seed {seed}");
                    let paper = r
                        .paper_labels
                        .as_ref()
                        .expect("k = 2 has the paper readout");
                    assert_eq!(canonical(paper), want, "paper readout, data {data_seed}");
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, 36);
}

#[test]
fn pure_algorithm_1_reaches_the_brute_force_minimum_with_enough_iterations() {
    // The pure Algorithm 1 configuration: one round of T stochastic mirror-descent iterations
    // over the generated pool, no label generation, the paper's sign(sum_k mu_k y_k) readout.
    // Measured on these data sets: with the default T = 300 the Gaussian-kernel runs return
    // labelings ranked as low as 68th of the 336 admissible ones (n = 10); at T = 3000 the runs
    // below all return the argmin; on the 2 x 5 Gaussian data some seeds still return the
    // runner-up at T = 30000 (its V is 8% above the minimum).
    let mut checked = 0;
    for (n_per, beta, kerns) in [
        (4usize, 0.0, &[Kern::Linear, Kern::Gaussian(1.0)][..]),
        (5, 0.2, &[Kern::Linear][..]),
    ] {
        for data_seed in 0..3u64 {
            let x = two_groups(n_per, 4.0, data_seed);
            let rows = standardize(&x);
            let cands = admissible(x.n, 0.0, beta, 1, 1);
            for &kern in kerns {
                let okern = match kern {
                    Kern::Linear => OdmcKernel::Linear,
                    Kern::Gaussian(s) => OdmcKernel::Gaussian { sigma_scale: s },
                };
                let (best, _, _) = brute_force(&gram(&rows, kern), &cands);
                let want = from_signs(&best);
                for seed in 0..3u64 {
                    let p = params(okern, beta, seed)
                        .max_rounds(1)
                        .iterations(3000)
                        .readout(Readout::Sign);
                    let r = run_odmc(&x, &p).unwrap();
                    assert_eq!(r.rounds, 1);
                    assert_eq!(r.iterations, 3000);
                    assert_eq!(r.labels, want, "data {data_seed} seed {seed}");
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, 27);
}

#[test]
fn three_clusters_follow_the_brute_force_bisections() {
    // Three tight groups of three in 2-D. Split 1: p = 6 `+1`s (|e'y - 3| <= 0.12 * 9); split 2
    // of the six: p = 3 (|e'y| <= 0.12 * 6). The brute-force bisections find the three groups.
    // The first split's objective is flat: V of the runner-up is within 2% of the minimum, and
    // ODMC's relaxation does not always find the minimum there. Measured: 23 of the 30 runs below
    // (3 data sets x 2 kernels x 5 seeds) return the brute-force partition; the rest join points
    // of two groups.
    let beta = 0.12;
    let centres = [(0.0, 0.0), (6.0, 0.0), (3.0, 5.0)];
    let groups = canonical(&(0..9).map(|i| i % 3).collect::<Vec<_>>());
    let (mut runs, mut found) = (0, 0);
    for data_seed in 0..3u64 {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(100 + data_seed);
        let mut v = Vec::new();
        for i in 0..9 {
            let (cx, cy) = centres[i % 3];
            v.push(cx + 0.3 * rng.gen_range(-1.0..1.0));
            v.push(cy + 0.3 * rng.gen_range(-1.0..1.0));
        }
        let x = Points { n: 9, d: 2, v };
        let rows = standardize(&x);
        for (kern, okern) in [
            (Kern::Linear, OdmcKernel::Linear),
            (
                Kern::Gaussian(1.0),
                OdmcKernel::Gaussian { sigma_scale: 1.0 },
            ),
        ] {
            let k = gram(&rows, kern);
            let top = admissible(9, 3.0, beta, 2, 1);
            assert!(top
                .iter()
                .all(|y| y.iter().filter(|&&s| s > 0).count() == 6));
            let (y1, a1, b1) = brute_force(&k, &top);
            assert!(
                b1 - a1 > 1e-4 * a1 && b1 - a1 < 0.02 * a1,
                "top split: {a1} vs {b1}"
            );
            let left: Vec<usize> = (0..9).filter(|&i| y1[i] > 0).collect();
            let sub_rows: Vec<Vec<f64>> = left.iter().map(|&i| rows[i].clone()).collect();
            let k2 = match kern {
                Kern::Linear => gram(&centred(&sub_rows), Kern::Linear),
                Kern::Gaussian(_) => {
                    let mut s = Vec::new();
                    for &i in &left {
                        for &j in &left {
                            s.push(k[i * 9 + j]);
                        }
                    }
                    s
                }
            };
            let (y2, a2, b2) = brute_force(&k2, &admissible(6, 0.0, beta, 1, 1));
            assert!(
                b2 - a2 > 1e-3 * a2.abs().max(1e-3),
                "second split not clear"
            );
            let mut ids = vec![2usize; 9];
            for (r, &i) in left.iter().enumerate() {
                ids[i] = usize::from(y2[r] < 0);
            }
            let want = canonical(&ids);
            assert_eq!(want, groups, "the brute force finds the three groups");
            let mut here = 0;
            for seed in 0..5u64 {
                let p = params(okern, beta, seed).k(3);
                let r = run_odmc(&x, &p).unwrap();
                assert_eq!(r.cluster_sizes.len(), 3);
                assert!(
                    r.cluster_sizes.iter().all(|&c| c == 3),
                    "{:?}",
                    r.cluster_sizes
                );
                here += usize::from(r.labels == want);
                runs += 1;
            }
            assert!(here >= 2, "data {data_seed}: {here} of 5 seeds");
            found += here;
        }
    }
    assert_eq!(runs, 30);
    assert!(
        found >= 23,
        "{found} of 30 runs found the brute-force partition"
    );
}
