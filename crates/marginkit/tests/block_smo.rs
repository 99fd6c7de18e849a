//! Block working-set SMO (`solver::block`) against independent oracles: clarabel on small
//! random box QPs (with and without the equality, the nu problem's two class equalities, fixed
//! variables, per-sample bounds), KKT checks that recompute the gradient from scratch (the nu
//! problem's per class, with the thresholds `r` and `rho`), the pair SMO's optimum on real data
//! sets (nu-SVC and nu-SVR included, shrinking on and off), and identical results at 1 and 2
//! threads.
#![allow(clippy::needless_range_loop)]

mod common;
use common::qp_oracle::{clarabel_opt, clarabel_opt_eq, random_psd};
use marginkit::data::libsvm_fmt::{read_libsvm_path, ReadOptions};
use marginkit::fit::Control;
use marginkit::kernel::qmatrix::{DenseQ, QMatrix, SvcQ, SvrQ};
use marginkit::solver::block::{self, BlockSettings};
use marginkit::solver::smo::Smo;
use marginkit::solver::{
    BoxQp, Equality, IterStats, NoObserver, Observer, Shrinking, SolveInfo, SolverSettings, Status,
    VarFix,
};
use marginkit::svm::{train, SvmParams, SvmSolver, SvmType};
use marginkit::Dataset;
use marginkit::{DenseMatrix, Features, KernelSpec};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::ops::ControlFlow;

fn settings(tol: f64) -> SolverSettings {
    SolverSettings {
        tol,
        shrinking: Shrinking::On,
        max_iter: None,
        time_limit: None,
    }
}

fn block_with(q: usize) -> BlockSettings {
    BlockSettings {
        working_set: Some(q),
        ..BlockSettings::default()
    }
}

/// Row-major dense matrix rounded to f32 (the precision of the solver's columns).
fn round32(q: &[f64]) -> Vec<f64> {
    q.iter().map(|&v| f64::from(v as f32)).collect()
}

/// What the test's own KKT check finds at `a`: the objective and the violation of the pair
/// engine's stopping rule, from the gradient `Q a + p` recomputed from scratch over the free
/// variables, with the bounds and the equality residual.
struct Kkt {
    objective: f64,
    violation: f64,
    bound: f64,
    equality: f64,
}

fn kkt(q: &[f64], qp: &BoxQp<'_>, a: &[f64]) -> Kkt {
    let n = a.len();
    let mut objective = 0.0;
    let mut g = vec![0.0; n];
    for i in 0..n {
        let mut s = 0.0;
        for j in 0..n {
            s += q[i * n + j] * a[j];
        }
        g[i] = s + qp.p[i];
        objective += a[i] * (0.5 * s + qp.p[i]);
    }
    let free = |i: usize| qp.fixed.is_none_or(|f| f[i] == VarFix::Free) && qp.upper[i] > 0.0;
    let mut bound = 0.0f64;
    for i in 0..n {
        bound = bound.max(-a[i]).max(a[i] - qp.upper[i]);
        match qp.fixed.map_or(VarFix::Free, |f| f[i]) {
            VarFix::AtZero => bound = bound.max(a[i].abs()),
            VarFix::AtUpper => bound = bound.max((a[i] - qp.upper[i]).abs()),
            VarFix::Free => {}
        }
    }
    let (violation, equality) = match qp.equality {
        Equality::Sum { delta } => {
            let (mut m, mut mm) = (f64::NEG_INFINITY, f64::INFINITY);
            let mut ya = 0.0;
            for i in 0..n {
                let y = f64::from(qp.y[i]);
                ya += y * a[i];
                if !free(i) {
                    continue;
                }
                let v = -y * g[i];
                let (up, low) = if y > 0.0 {
                    (a[i] < qp.upper[i], a[i] > 0.0)
                } else {
                    (a[i] > 0.0, a[i] < qp.upper[i])
                };
                if up {
                    m = m.max(v);
                }
                if low {
                    mm = mm.min(v);
                }
            }
            let viol = if m.is_finite() && mm.is_finite() {
                (m - mm).max(0.0)
            } else {
                0.0
            };
            (viol, (ya - delta).abs())
        }
        Equality::None => {
            let mut v = 0.0f64;
            for i in (0..n).filter(|&i| free(i)) {
                let pg = if a[i] <= 0.0 {
                    g[i].min(0.0)
                } else if a[i] >= qp.upper[i] {
                    g[i].max(0.0)
                } else {
                    g[i]
                };
                v = v.max(pg.abs());
            }
            (v, 0.0)
        }
    };
    Kkt {
        objective,
        violation,
        bound,
        equality,
    }
}

/// Runs the block engine on a dense Q and checks it with [`kkt`] (on the f32-rounded Q, what
/// the solver sees) and, for tight tolerances, against clarabel.
fn block_and_check(
    q: &[f64],
    qp: &BoxQp<'_>,
    start: &[f64],
    s: &SolverSettings,
    ws: usize,
) -> (SolveInfo, Vec<f64>) {
    let n = qp.p.len();
    let q32 = round32(q);
    let mut dq = DenseQ::new(n, q).unwrap();
    let mut a = start.to_vec();
    let info = block::solve(&mut dq, qp, &mut a, s, &block_with(ws), &mut NoObserver).unwrap();
    assert_eq!(info.status, Status::Converged, "{info:?}");
    let k = kkt(&q32, qp, &a);
    let scale = 1.0 + info.objective.abs();
    assert!(k.bound <= 1e-12, "bounds {}", k.bound);
    assert!(k.equality <= 1e-9 * scale, "equality {}", k.equality);
    assert!(
        k.violation <= s.tol * 1.01 + 1e-9,
        "violation {} tol {}",
        k.violation,
        s.tol
    );
    assert!(
        (k.objective - info.objective).abs() <= 1e-9 * scale,
        "objective {} vs {}",
        k.objective,
        info.objective
    );
    if s.tol <= 1e-7 {
        let opt = clarabel_opt(&q32, qp).expect("clarabel solves").0;
        assert!(
            (opt - info.objective).abs() <= 1e-6 * (1.0 + opt.abs()),
            "clarabel {opt} vs block {}",
            info.objective
        );
    }
    (info, a)
}

#[test]
fn random_qps_match_clarabel() {
    let mut g = Xoshiro256PlusPlus::seed_from_u64(11);
    for case in 0..80 {
        let n = g.gen_range(2..48);
        let r = g.gen_range(1..n + 3);
        let with_eq = case % 2 == 0;
        let ridge = if case % 3 == 0 { 0.1 } else { 0.0 };
        let q = random_psd(&mut g, n, r, ridge);
        let p: Vec<f64> = (0..n).map(|_| g.gen_range(-2.0..1.0)).collect();
        let y: Vec<i8> = (0..n)
            .map(|_| if g.gen_bool(0.5) { 1 } else { -1 })
            .collect();
        // Per-sample bounds, some of them zero.
        let upper: Vec<f64> = (0..n)
            .map(|_| {
                if g.gen_bool(0.1) {
                    0.0
                } else {
                    g.gen_range(0.1..3.0)
                }
            })
            .collect();
        let fixed: Option<Vec<VarFix>> = (case % 4 == 1).then(|| {
            (0..n)
                .map(|_| match g.gen_range(0..6) {
                    0 => VarFix::AtZero,
                    1 => VarFix::AtUpper,
                    _ => VarFix::Free,
                })
                .collect()
        });
        let start = vec![0.0; n];
        let delta = match &fixed {
            Some(f) => (0..n)
                .filter(|&i| f[i] == VarFix::AtUpper)
                .map(|i| f64::from(y[i]) * upper[i])
                .sum(),
            None => 0.0,
        };
        let qp = BoxQp {
            p: &p,
            y: &y,
            upper: &upper,
            equality: if with_eq {
                Equality::Sum { delta }
            } else {
                Equality::None
            },
            fixed: fixed.as_deref(),
        };
        // Working sets from the smallest to more than half of the variables.
        let ws = [2, 4, 6, 16][case % 4];
        let ws = ws.min(n.max(2));
        block_and_check(&q, &qp, &start, &settings(1e-9), ws);
    }
}

/// Random dense features (`n x d`) and labels.
fn random_data(seed: u64, n: usize, d: usize) -> (Features, Vec<i8>) {
    let mut g = Xoshiro256PlusPlus::seed_from_u64(seed);
    let v: Vec<f64> = (0..n * d).map(|_| g.gen_range(-1.0..1.0)).collect();
    let y = (0..n)
        .map(|i| {
            if v[i * d] + 0.3 * g.gen_range(-1.0..1.0) > 0.0 {
                1
            } else {
                -1
            }
        })
        .collect();
    (Features::Dense(DenseMatrix::new(n, d, v).unwrap()), y)
}

#[test]
fn blocked_columns_equal_single_columns_bit_for_bit() {
    let (x, y) = random_data(3, 203, 7);
    let kernels = [
        KernelSpec::Rbf { gamma: 0.7 },
        KernelSpec::Linear,
        KernelSpec::Poly {
            gamma: 0.5,
            coef0: 1.0,
            degree: 3,
        },
        KernelSpec::Sigmoid {
            gamma: 0.1,
            coef0: 0.2,
        },
    ];
    for k in kernels {
        // Some columns cached first (hits are copied), the rest computed together.
        let idx: Vec<usize> = (0..203).step_by(3).chain([1, 2, 200]).collect();
        for len in [203, 150] {
            let mut a = SvcQ::new(&x, k, &y, 1 << 20).unwrap();
            let _ = a.column(idx[5], len);
            let mut bufs = vec![vec![0.0f32; len]; idx.len()];
            let mut outs: Vec<&mut [f32]> = bufs.iter_mut().map(|b| &mut b[..]).collect();
            a.columns_into(&idx, len, &mut outs);
            let mut b = SvcQ::new(&x, k, &y, 1 << 20).unwrap();
            for (kk, &i) in idx.iter().enumerate() {
                let col = b.column(i, len);
                assert!(
                    col.iter()
                        .zip(&bufs[kk])
                        .all(|(u, v)| u.to_bits() == v.to_bits()),
                    "{k:?} column {i}"
                );
            }
            // Requested again: served from the cache, still the same.
            let again = a.column(idx[7], len).to_vec();
            assert_eq!(again, bufs[7]);
            // Any rows of a column computed apart: the same bits again.
            for (kk, &i) in idx.iter().enumerate().step_by(9) {
                let lo = (i * 7) % len;
                let mut part = vec![0.0f32; len - lo];
                b.column_part(i, lo, &mut part);
                assert!(
                    part.iter()
                        .zip(&bufs[kk][lo..])
                        .all(|(u, v)| u.to_bits() == v.to_bits()),
                    "{k:?} rows {lo}.. of column {i}"
                );
            }
            // Rows `lo..` of many columns computed together, from starts inside a panel and on
            // its edge: the same bits again.
            for lo in [0, 5, 8, 61] {
                let mut parts = vec![vec![0.0f32; len - lo]; idx.len()];
                let mut outs: Vec<&mut [f32]> = parts.iter_mut().map(|b| &mut b[..]).collect();
                b.columns_part(&idx, lo, &mut outs);
                for (kk, &i) in idx.iter().enumerate() {
                    assert!(
                        parts[kk]
                            .iter()
                            .zip(&bufs[kk][lo..])
                            .all(|(u, v)| u.to_bits() == v.to_bits()),
                        "{k:?} rows {lo}.. of column {i} among many"
                    );
                }
            }
        }
    }
    // Sparse rows, and the one-class matrix, through the same fill.
    let (xd, y) = random_data(4, 120, 9);
    let Features::Dense(m) = &xd else {
        unreachable!("random_data is dense")
    };
    let (mut indptr, mut indices, mut values) = (vec![0], Vec::new(), Vec::new());
    for i in 0..120 {
        for (j, &v) in m.row(i).iter().enumerate() {
            if (i + j) % 3 != 0 {
                indices.push(j as u32);
                values.push(v);
            }
        }
        indptr.push(indices.len());
    }
    let xs = Features::Sparse(marginkit::CsrMatrix::new(9, indptr, indices, values).unwrap());
    let k = KernelSpec::Rbf { gamma: 0.4 };
    // Rows 40.. of column i computed apart equal the column's.
    let part_equals = |q: &mut dyn QMatrix, i: usize| {
        let col = q.column(i, 120).to_vec();
        let mut part = vec![0.0f32; 120 - 40];
        q.column_part(i, 40, &mut part);
        let mut many = vec![vec![0.0f32; 120 - 43]; 2];
        let mut outs: Vec<&mut [f32]> = many.iter_mut().map(|b| &mut b[..]).collect();
        q.columns_part(&[i, i], 43, &mut outs);
        col[40..]
            .iter()
            .zip(&part)
            .all(|(u, v)| u.to_bits() == v.to_bits())
            && many.iter().all(|m| {
                m.iter()
                    .zip(&col[43..])
                    .all(|(u, v)| u.to_bits() == v.to_bits())
            })
    };
    let mut sparse = SvcQ::new(&xs, k, &y, 1 << 20).unwrap();
    let mut one = marginkit::kernel::qmatrix::OneClassQ::new(&xd, k, 1 << 20).unwrap();
    for i in [0, 17, 119] {
        assert!(part_equals(&mut sparse, i), "sparse column {i}");
        assert!(part_equals(&mut one, i), "one-class column {i}");
    }
}

fn read_data(name: &str) -> Dataset {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    read_libsvm_path(&path, &ReadOptions::default()).unwrap()
}

/// Fits with both engines at a tight tolerance; the optima must agree.
fn same_optimum(data: &Dataset, params: SvmParams, what: &str) {
    let fit_with = |e: SvmSolver| {
        let p = params.clone().tol(1e-8).engine(e).check().unwrap();
        let rep = train::fit(&p, data, &mut Control::default())
            .unwrap()
            .report;
        assert_eq!(rep.status(), Status::Converged, "{what} {e:?}");
        rep
    };
    let (a, b) = (fit_with(SvmSolver::Smo), fit_with(SvmSolver::Block));
    assert_eq!(a.subproblems.len(), b.subproblems.len());
    for (sa, sb) in a.subproblems.iter().zip(&b.subproblems) {
        let rel = (sa.objective - sb.objective).abs() / sa.objective.abs().max(1.0);
        assert!(
            rel <= 1e-6,
            "{what}: smo {} vs block {}",
            sa.objective,
            sb.objective
        );
        assert!(
            (sa.rho - sb.rho).abs() <= 1e-4 * (1.0 + sa.rho.abs()),
            "{what}: rho {} vs {}",
            sa.rho,
            sb.rho
        );
        assert!(sb.max_violation <= 1e-8, "{what}: {}", sb.max_violation);
    }
}

#[test]
fn block_engine_reaches_the_pair_engines_optimum_on_data_sets() {
    let heart = read_data("heart_scale");
    same_optimum(&heart, SvmParams::new().c(1.0), "heart_scale C-SVC");
    same_optimum(
        &heart,
        SvmParams::new().c(100.0).gamma(0.5),
        "heart_scale C=100",
    );
    same_optimum(
        &heart,
        SvmParams::new().svm_type(SvmType::OneClass).nu(0.3),
        "heart_scale one-class",
    );
    same_optimum(
        &heart,
        SvmParams::new().svm_type(SvmType::NuSvc).nu(0.3),
        "heart_scale nu-SVC",
    );
    let iris = read_data("iris.scale.svm");
    same_optimum(&iris, SvmParams::new().c(10.0), "iris one-vs-one");
    same_optimum(
        &iris,
        SvmParams::new().svm_type(SvmType::NuSvc).nu(0.2),
        "iris nu-SVC one-vs-one",
    );
    let auto = read_data("auto.scale.svm");
    same_optimum(
        &auto,
        SvmParams::new()
            .svm_type(SvmType::EpsSvr)
            .c(10.0)
            .epsilon(0.5),
        "auto eps-SVR",
    );
    same_optimum(
        &auto,
        SvmParams::new().svm_type(SvmType::NuSvr).c(10.0).nu(0.4),
        "auto nu-SVR",
    );
}

/// The nu problem's conditions at `a`, computed here: `Q` as given (the test's own), the
/// gradient `Q a + p` from scratch, and per class (the variables neither fixed nor of zero
/// bound) the violation `m_c - M_c`; the larger of the two classes', the class sums and the
/// bound violation.
struct NuKkt {
    objective: f64,
    violation: f64,
    sums: [f64; 2],
    bound: f64,
    g: Vec<f64>,
}

fn nu_kkt(q: &[f64], qp: &BoxQp<'_>, a: &[f64]) -> NuKkt {
    let n = a.len();
    let mut objective = 0.0;
    let mut g = vec![0.0; n];
    for i in 0..n {
        let s: f64 = (0..n).map(|j| q[i * n + j] * a[j]).sum();
        g[i] = s + qp.p[i];
        objective += a[i] * (0.5 * s + qp.p[i]);
    }
    let free = |i: usize| qp.fixed.is_none_or(|f| f[i] == VarFix::Free) && qp.upper[i] > 0.0;
    let mut sums = [0.0; 2];
    let mut bound = 0.0f64;
    let mut m = [f64::NEG_INFINITY; 2];
    let mut mm = [f64::INFINITY; 2];
    for i in 0..n {
        let c = usize::from(qp.y[i] < 0);
        sums[c] += a[i];
        bound = bound.max(-a[i]).max(a[i] - qp.upper[i]);
        if !free(i) {
            continue;
        }
        let y = f64::from(qp.y[i]);
        let v = -y * g[i];
        let (up, low) = if y > 0.0 {
            (a[i] < qp.upper[i], a[i] > 0.0)
        } else {
            (a[i] > 0.0, a[i] < qp.upper[i])
        };
        if up {
            m[c] = m[c].max(v);
        }
        if low {
            mm[c] = mm[c].min(v);
        }
    }
    let gap = |c: usize| {
        if m[c].is_finite() && mm[c].is_finite() {
            (m[c] - mm[c]).max(0.0)
        } else {
            0.0
        }
    };
    NuKkt {
        objective,
        violation: gap(0).max(gap(1)),
        sums,
        bound,
        g,
    }
}

/// Class sums of `a` (index 0: `y = +1`).
fn class_sums(y: &[i8], a: &[f64]) -> [f64; 2] {
    let mut s = [0.0; 2];
    for (&yi, &ai) in y.iter().zip(a) {
        s[usize::from(yi < 0)] += ai;
    }
    s
}

#[test]
fn random_nu_qps_match_clarabel() {
    let mut g = Xoshiro256PlusPlus::seed_from_u64(17);
    for case in 0..80 {
        let n = g.gen_range(3..44);
        let r = g.gen_range(1..n + 3);
        let ridge = if case % 3 == 0 { 0.1 } else { 0.0 };
        let q = random_psd(&mut g, n, r, ridge);
        let p: Vec<f64> = (0..n).map(|_| g.gen_range(-1.5..1.5)).collect();
        let y: Vec<i8> = (0..n)
            .map(|_| if g.gen_bool(0.5) { 1 } else { -1 })
            .collect();
        // Per-sample bounds, some of them zero.
        let upper: Vec<f64> = (0..n)
            .map(|_| {
                if g.gen_bool(0.1) {
                    0.0
                } else {
                    g.gen_range(0.1..3.0)
                }
            })
            .collect();
        let fixed: Option<Vec<VarFix>> = (case % 3 == 1).then(|| {
            (0..n)
                .map(|_| match g.gen_range(0..7) {
                    0 => VarFix::AtZero,
                    1 => VarFix::AtUpper,
                    _ => VarFix::Free,
                })
                .collect()
        });
        let fix = |i: usize| fixed.as_ref().map_or(VarFix::Free, |f| f[i]);
        // A feasible start: the fixed variables at their values, then a random share of each
        // class's free room filled greedily (the class sums the solver must keep).
        let mut a = vec![0.0; n];
        for c in [1i8, -1] {
            let share = g.gen_range(0.1..0.9);
            let room: f64 = (0..n)
                .filter(|&i| y[i] == c && fix(i) == VarFix::Free)
                .map(|i| upper[i])
                .sum();
            let mut left = share * room;
            for i in (0..n).filter(|&i| y[i] == c) {
                a[i] = match fix(i) {
                    VarFix::AtZero => 0.0,
                    VarFix::AtUpper => upper[i],
                    VarFix::Free => {
                        let v = upper[i].min(left);
                        left -= v;
                        v
                    }
                };
            }
        }
        let sums0 = class_sums(&y, &a);
        let delta = sums0[0] - sums0[1];
        let qp = BoxQp {
            p: &p,
            y: &y,
            upper: &upper,
            equality: Equality::Sum { delta },
            fixed: fixed.as_deref(),
        };
        let ws = [2, 4, 6, 16][case % 4].min(n.max(2));
        let tol = 1e-9;
        let q32 = round32(&q);
        let mut dq = DenseQ::new(n, &q).unwrap();
        let (info, _) = block::solve_nu(
            &mut dq,
            &qp,
            &mut a,
            &settings(tol),
            &block_with(ws),
            &mut NoObserver,
        )
        .unwrap();
        assert_eq!(info.status, Status::Converged, "case {case}: {info:?}");
        let k = nu_kkt(&q32, &qp, &a);
        let scale = 1.0 + info.objective.abs();
        assert!(k.bound <= 1e-12, "case {case}: bounds {}", k.bound);
        for c in 0..2 {
            assert!(
                (k.sums[c] - sums0[c]).abs() <= 1e-9 * (1.0 + sums0[c]),
                "case {case}: class sum {c}: {} vs {}",
                k.sums[c],
                sums0[c]
            );
        }
        assert!(
            k.violation <= tol * 1.01 + 1e-9,
            "case {case}: violation {}",
            k.violation
        );
        assert!(
            (k.objective - info.objective).abs() <= 1e-9 * scale,
            "case {case}: objective {} vs {}",
            k.objective,
            info.objective
        );
        let ypos: Vec<f64> = y.iter().map(|&v| if v > 0 { 1.0 } else { 0.0 }).collect();
        let opt = clarabel_opt_eq(&q32, &qp, &[(ypos, sums0[0])])
            .expect("clarabel solves")
            .0;
        assert!(
            (opt - info.objective).abs() <= 1e-6 * (1.0 + opt.abs()),
            "case {case}: clarabel {opt} vs block {}",
            info.objective
        );
    }
}

/// The rows of `x` as dense vectors of `d` entries.
fn dense_rows(x: &Features, d: usize) -> Vec<Vec<f64>> {
    (0..x.n_rows())
        .map(|i| {
            let r = x.row(i);
            (0..d).map(|k| r.get(k)).collect()
        })
        .collect()
}

/// The RBF kernel matrix of `rows`, computed here in f64 and rounded to f32 (the precision of
/// the solver's columns), `s_i s_j K(r_i, r_j)` over the variables `v` (sample `v.0`, sign
/// `v.1`).
fn signed_rbf(rows: &[Vec<f64>], gamma: f64, vars: &[(usize, i8)]) -> Vec<f64> {
    let n = vars.len();
    let mut q = vec![0.0; n * n];
    for (i, &(si, yi)) in vars.iter().enumerate() {
        for (j, &(sj, yj)) in vars.iter().enumerate() {
            let d: f64 = rows[si]
                .iter()
                .zip(&rows[sj])
                .map(|(a, b)| (a - b) * (a - b))
                .sum();
            q[i * n + j] = f64::from(yi) * f64::from(yj) * (-gamma * d).exp();
        }
    }
    round32(&q)
}

/// A nu problem of real data: the dual's pieces, the start and the test's own `Q`.
struct NuProblem {
    p: Vec<f64>,
    y: Vec<i8>,
    upper: Vec<f64>,
    start: Vec<f64>,
    q: Vec<f64>,
}

impl NuProblem {
    fn qp(&self) -> BoxQp<'_> {
        let delta: f64 = self
            .y
            .iter()
            .zip(&self.start)
            .map(|(&y, &a)| f64::from(y) * a)
            .sum();
        BoxQp {
            p: &self.p,
            y: &self.y,
            upper: &self.upper,
            equality: Equality::Sum { delta },
            fixed: None,
        }
    }
}

/// nu-SVC's dual of `data` (labels +1 / -1): `p = 0`, bounds 1, each class sum `nu l / 2`
/// (LIBSVM's start, filled greedily).
fn nu_svc_problem(data: &Dataset, gamma: f64, nu: f64) -> NuProblem {
    let l = data.len();
    let y: Vec<i8> = data
        .y
        .iter()
        .map(|&v| if v > 0.0 { 1 } else { -1 })
        .collect();
    let mut start = vec![0.0; l];
    for c in [1i8, -1] {
        let mut left = nu * l as f64 / 2.0;
        for i in (0..l).filter(|&i| y[i] == c) {
            start[i] = left.min(1.0);
            left -= start[i];
        }
    }
    let rows = dense_rows(&data.x, data.n_features());
    let vars: Vec<(usize, i8)> = (0..l).map(|i| (i, y[i])).collect();
    NuProblem {
        p: vec![0.0; l],
        upper: vec![1.0; l],
        q: signed_rbf(&rows, gamma, &vars),
        y,
        start,
    }
}

/// nu-SVR's dual of `data`: `2l` variables (`a` then `a*`), `p = -z / +z`, bounds `c`, both
/// sums `nu c l / 2` to start.
fn nu_svr_problem(data: &Dataset, gamma: f64, c: f64, nu: f64) -> NuProblem {
    let l = data.len();
    let mut y = vec![1i8; 2 * l];
    y[l..].fill(-1);
    let mut start = vec![0.0; 2 * l];
    let mut left = nu * c * l as f64 / 2.0;
    for i in 0..l {
        let v = c.min(left);
        start[i] = v;
        start[i + l] = v;
        left -= v;
    }
    let p: Vec<f64> = (0..2 * l)
        .map(|k| if k < l { -data.y[k] } else { data.y[k - l] })
        .collect();
    let rows = dense_rows(&data.x, data.n_features());
    let vars: Vec<(usize, i8)> = (0..2 * l).map(|k| (k % l, y[k])).collect();
    NuProblem {
        p,
        upper: vec![c; 2 * l],
        q: signed_rbf(&rows, gamma, &vars),
        y,
        start,
    }
}

/// Solves `prob` with the pair engine's nu mode and with the block engine's, shrinking on and
/// off, and checks each block solution with [`nu_kkt`] (violation, class sums, and the free
/// variables' gradients at the class thresholds `r +/- rho` the engine reports) and against the
/// pair engine's objective, rho and r.
fn nu_matches_pairs<Q: QMatrix>(what: &str, prob: &NuProblem, mut q: impl FnMut() -> Q) {
    let tol = 1e-9;
    let qp = prob.qp();
    let sums0 = class_sums(&prob.y, &prob.start);
    for shrinking in [Shrinking::On, Shrinking::Off] {
        let s = SolverSettings {
            shrinking,
            ..settings(tol)
        };
        let mut a_pair = prob.start.clone();
        let pair = Smo::new(&s)
            .nu(true)
            .solve(&mut q(), &qp, &mut a_pair, &mut NoObserver)
            .unwrap_or_else(|e| panic!("{what}: pair engine: {e}"));
        let pair = (pair.info, pair.r);
        for ws in [4, 32] {
            let mut a = prob.start.clone();
            let (info, r) =
                block::solve_nu(&mut q(), &qp, &mut a, &s, &block_with(ws), &mut NoObserver)
                    .unwrap_or_else(|e| panic!("{what}: block engine: {e}"));
            let tag = format!("{what} {shrinking:?} q={ws}");
            assert_eq!(info.status, Status::Converged, "{tag}");
            let k = nu_kkt(&prob.q, &qp, &a);
            assert!(k.bound <= 1e-12, "{tag}: bounds {}", k.bound);
            for c in 0..2 {
                assert!(
                    (k.sums[c] - sums0[c]).abs() <= 1e-9 * (1.0 + sums0[c]),
                    "{tag}: class sum {c}"
                );
            }
            assert!(
                k.violation <= tol * 1.01 + 1e-9,
                "{tag}: violation {}",
                k.violation
            );
            let scale = 1.0 + info.objective.abs();
            assert!(
                (k.objective - info.objective).abs() <= 1e-9 * scale,
                "{tag}: objective {} vs the test's {}",
                info.objective,
                k.objective
            );
            // Free variables sit at their class's threshold: r + rho (y = +1), r - rho (y = -1).
            for i in 0..a.len() {
                if a[i] > 0.0 && a[i] < prob.upper[i] {
                    let rc = if prob.y[i] > 0 {
                        r + info.rho
                    } else {
                        r - info.rho
                    };
                    assert!(
                        (k.g[i] - rc).abs() <= 2.0 * tol + 1e-10 * (1.0 + rc.abs()),
                        "{tag}: variable {i}: g {} vs r_c {rc}",
                        k.g[i]
                    );
                }
            }
            let rel = |u: f64, v: f64| (u - v).abs() / u.abs().max(v.abs()).max(1e-300);
            let (po, pr) = (pair.0.objective, pair.0.rho);
            assert!(
                rel(info.objective, po) <= 1e-6,
                "{tag}: objective {} vs pair {po}",
                info.objective
            );
            assert!(
                rel(info.rho, pr) <= 1e-6,
                "{tag}: rho {} vs pair {pr}",
                info.rho
            );
            assert!(rel(r, pair.1) <= 1e-6, "{tag}: r {r} vs pair {}", pair.1);
        }
    }
}

#[test]
fn nu_svc_and_nu_svr_match_the_pair_engine_and_the_conditions() {
    let heart = read_data("heart_scale");
    let gamma = 1.0 / heart.n_features() as f64;
    let k = KernelSpec::Rbf { gamma };
    for nu in [0.2, 0.5] {
        let prob = nu_svc_problem(&heart, gamma, nu);
        nu_matches_pairs(&format!("heart nu-SVC nu={nu}"), &prob, || {
            SvcQ::new(&heart.x, k, &prob.y, 1 << 20).unwrap()
        });
    }
    let auto = read_data("auto.scale.svm");
    let gamma = 1.0 / auto.n_features() as f64;
    let k = KernelSpec::Rbf { gamma };
    let prob = nu_svr_problem(&auto, gamma, 10.0, 0.4);
    nu_matches_pairs("auto nu-SVR", &prob, || {
        SvrQ::new(&auto.x, k, 1 << 20).unwrap()
    });
}

#[test]
fn the_nu_mode_needs_the_equality() {
    let (x, y) = random_data(8, 30, 3);
    let mut q = SvcQ::new(&x, KernelSpec::Rbf { gamma: 0.5 }, &y, 1 << 20).unwrap();
    let (p, upper) = (vec![0.0; 30], vec![1.0; 30]);
    let qp = BoxQp {
        p: &p,
        y: &y,
        upper: &upper,
        equality: Equality::None,
        fixed: None,
    };
    let out = block::solve_nu(
        &mut q,
        &qp,
        &mut vec![0.0; 30],
        &settings(1e-3),
        &block_with(4),
        &mut NoObserver,
    );
    assert!(
        matches!(out, Err(marginkit::SolveError::Infeasible(_))),
        "{out:?}"
    );
}

/// Wide rows (tasks of many columns, blocks of few panels) and few or many columns, split over
/// 1, 2 and 3 threads by columns and by rows: every entry has the bits of the column computed
/// alone on one thread.
#[test]
fn wide_blocked_columns_equal_single_columns_at_any_thread_count() {
    for d in [100, 300] {
        let (x, y) = random_data(11, 701, d);
        let k = KernelSpec::Rbf {
            gamma: 0.5 / d as f64,
        };
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let single: Vec<Vec<f32>> = one.install(|| {
            let mut q = SvcQ::new(&x, k, &y, 0).unwrap();
            (0..701).map(|i| q.column(i, 701).to_vec()).collect()
        });
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| {
                for count in [1, 3, 20, 70, 150] {
                    let idx: Vec<usize> = (0..count).map(|c| (c * 97 + 5) % 701).collect();
                    for lo in [0, 5, 333] {
                        let mut q = SvcQ::new(&x, k, &y, 0).unwrap();
                        let mut parts = vec![vec![0.0f32; 701 - lo]; count];
                        let mut outs: Vec<&mut [f32]> =
                            parts.iter_mut().map(|b| &mut b[..]).collect();
                        q.columns_part(&idx, lo, &mut outs);
                        for (part, &i) in parts.iter().zip(&idx) {
                            assert!(
                                part.iter()
                                    .zip(&single[i][lo..])
                                    .all(|(u, v)| u.to_bits() == v.to_bits()),
                                "d {d}, {threads} threads, {count} columns, rows {lo}.. of column {i}"
                            );
                        }
                    }
                }
            });
        }
    }
}

/// A solve large enough for the parallel column blocks and gradient passes.
fn threaded_solve(x: &Features, y: &[i8], threads: usize) -> (SolveInfo, Vec<f64>) {
    let n = y.len();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let mut q = SvcQ::new(x, KernelSpec::Rbf { gamma: 0.3 }, y, 8 << 20).unwrap();
        let (p, upper) = (vec![-1.0; n], vec![2.0; n]);
        let qp = BoxQp {
            p: &p,
            y,
            upper: &upper,
            equality: Equality::Sum { delta: 0.0 },
            fixed: None,
        };
        let mut a = vec![0.0; n];
        let info = block::solve(
            &mut q,
            &qp,
            &mut a,
            &settings(1e-4),
            &block_with(256),
            &mut NoObserver,
        )
        .unwrap();
        (info, a)
    })
}

#[test]
fn identical_results_at_one_and_two_threads() {
    let (x, y) = random_data(5, 4500, 12);
    let (i1, a1) = threaded_solve(&x, &y, 1);
    let (i2, a2) = threaded_solve(&x, &y, 2);
    assert_eq!(i1.status, Status::Converged);
    assert_eq!(i1.iterations, i2.iterations);
    assert_eq!(i1.objective.to_bits(), i2.objective.to_bits());
    assert_eq!(i1.rho.to_bits(), i2.rho.to_bits());
    assert!(a1.iter().zip(&a2).all(|(u, v)| u.to_bits() == v.to_bits()));
}

/// A nu-SVC solve (shrinking on) large enough for the parallel column blocks, gradient passes
/// and `g_bar` updates.
fn threaded_nu_solve(x: &Features, y: &[i8], threads: usize) -> (SolveInfo, f64, Vec<f64>) {
    let n = y.len();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let mut q = SvcQ::new(x, KernelSpec::Rbf { gamma: 0.3 }, y, 8 << 20).unwrap();
        let (p, upper) = (vec![0.0; n], vec![1.0; n]);
        let mut a = vec![0.0; n];
        for c in [1i8, -1] {
            let mut left = 0.15 * n as f64;
            for i in (0..n).filter(|&i| y[i] == c) {
                a[i] = left.min(1.0);
                left -= a[i];
            }
        }
        let delta: f64 = a.iter().zip(y).map(|(v, &s)| v * f64::from(s)).sum();
        let qp = BoxQp {
            p: &p,
            y,
            upper: &upper,
            equality: Equality::Sum { delta },
            fixed: None,
        };
        let (info, r) = block::solve_nu(
            &mut q,
            &qp,
            &mut a,
            &settings(1e-4),
            &block_with(256),
            &mut NoObserver,
        )
        .unwrap();
        (info, r, a)
    })
}

#[test]
fn nu_mode_identical_results_at_one_and_two_threads() {
    let (x, y) = random_data(6, 4500, 12);
    let (i1, r1, a1) = threaded_nu_solve(&x, &y, 1);
    let (i2, r2, a2) = threaded_nu_solve(&x, &y, 2);
    assert_eq!(i1.status, Status::Converged);
    assert_eq!(i1.iterations, i2.iterations);
    assert_eq!(i1.objective.to_bits(), i2.objective.to_bits());
    assert_eq!(i1.rho.to_bits(), i2.rho.to_bits());
    assert_eq!(r1.to_bits(), r2.to_bits());
    assert!(a1.iter().zip(&a2).all(|(u, v)| u.to_bits() == v.to_bits()));
}

/// Stops at the first report.
struct StopAtOnce;
impl Observer for StopAtOnce {
    fn on_iter(&mut self, _: &IterStats) -> ControlFlow<()> {
        ControlFlow::Break(())
    }
}

#[test]
fn a_stop_returns_a_feasible_point_marked_interrupted() {
    let (x, y) = random_data(9, 600, 5);
    let n = y.len();
    let mut q = SvcQ::new(&x, KernelSpec::Rbf { gamma: 0.5 }, &y, 1 << 20).unwrap();
    let (p, upper) = (vec![-1.0; n], vec![1.0; n]);
    let qp = BoxQp {
        p: &p,
        y: &y,
        upper: &upper,
        equality: Equality::Sum { delta: 0.0 },
        fixed: None,
    };
    let mut a = vec![0.0; n];
    let info = block::solve(
        &mut q,
        &qp,
        &mut a,
        &settings(1e-6),
        &block_with(8),
        &mut StopAtOnce,
    )
    .unwrap();
    assert_eq!(info.status, Status::Interrupted);
    assert!(info.iterations > 0 && info.max_violation > 1e-6);
    let ya: f64 = a.iter().zip(&y).map(|(v, &s)| v * f64::from(s)).sum();
    assert!(ya.abs() <= 1e-9);
    assert!(a.iter().all(|&v| (0.0..=1.0).contains(&v)));
    let bad = block::solve(
        &mut q,
        &qp,
        &mut vec![0.0; n],
        &settings(1e-3),
        &block_with(1),
        &mut NoObserver,
    );
    assert!(bad.is_err());
}

/// The smallest active count the solver reported.
struct MinActive(usize);
impl Observer for MinActive {
    fn on_iter(&mut self, s: &IterStats) -> ControlFlow<()> {
        self.0 = self.0.min(s.active);
        ControlFlow::Continue(())
    }
}

#[test]
fn shrinking_shrinks_and_reaches_the_optimum_of_the_full_problem() {
    let (n, d, gamma) = (1200, 6, 0.8);
    let (x, y) = random_data(21, n, d);
    let Features::Dense(m) = &x else {
        unreachable!("random_data is dense")
    };
    // The test's own Q (RBF from the rows, rounded to f32 as the solver's columns are).
    let mut qd = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            let dist: f64 = m
                .row(i)
                .iter()
                .zip(m.row(j))
                .map(|(a, b)| (a - b) * (a - b))
                .sum();
            qd[i * n + j] = f64::from(y[i]) * f64::from(y[j]) * (-gamma * dist).exp();
        }
    }
    let q32 = round32(&qd);
    let (p, upper) = (vec![-1.0; n], vec![4.0; n]);
    for equality in [Equality::Sum { delta: 0.0 }, Equality::None] {
        let qp = BoxQp {
            p: &p,
            y: &y,
            upper: &upper,
            equality,
            fixed: None,
        };
        let solve = |shrinking: Shrinking| {
            let mut q = SvcQ::new(&x, KernelSpec::Rbf { gamma }, &y, 1 << 20).unwrap();
            let s = SolverSettings {
                shrinking,
                ..settings(1e-6)
            };
            let mut a = vec![0.0; n];
            let mut obs = MinActive(usize::MAX);
            let info = block::solve(&mut q, &qp, &mut a, &s, &block_with(32), &mut obs).unwrap();
            (info, a, obs.0)
        };
        let (on, a_on, min_on) = solve(Shrinking::On);
        let (off, _, min_off) = solve(Shrinking::Off);
        assert_eq!(on.status, Status::Converged, "{equality:?}");
        assert_eq!(off.status, Status::Converged, "{equality:?}");
        assert!(
            min_on < n / 2,
            "{equality:?}: the active set never shrank ({min_on})"
        );
        assert_eq!(min_off, n, "{equality:?}");
        // The shrunk solve's point, checked on every variable from scratch.
        let k = kkt(&q32, &qp, &a_on);
        let scale = 1.0 + on.objective.abs();
        assert!(
            k.violation <= 1e-6 * 1.01 + 1e-9,
            "{equality:?}: {}",
            k.violation
        );
        assert!(k.bound <= 1e-12 && k.equality <= 1e-9 * scale);
        assert!((k.objective - on.objective).abs() <= 1e-9 * scale);
        assert!(
            (on.objective - off.objective).abs() <= 1e-6 * scale,
            "{equality:?}: shrinking {} vs not {}",
            on.objective,
            off.objective
        );
    }
}
