//! Core-set oracles: the exact small MEB against clarabel's second-order-cone solve of the primal
//! (eq. 1); core-set radius within (1+eps) of the exact MEB with every point covered; Algorithm 1
//! agrees, is monotone and covers all data within (1+eps)^2 r*^2 on every graph kind, with
//! asynchrony, loss and delay; distributed == centralized on connected graphs; the distributed
//! L2-SVM within 1 accuracy point of the centralized one on breast_cancer and digits; bad input.

#![allow(clippy::needless_range_loop)] // index loops keep the oracles readable

use std::path::Path;

use marginkit::coreset::bc::{dist2, meb_of, Pool};
use marginkit::coreset::consensus::{ConsensusData, Round, RoundSummary};
use marginkit::coreset::model::to_model;
use marginkit::coreset::space::two_classes;
use marginkit::coreset::{
    Activation, ConsensusParams, ConsensusReport, ConsensusValidParams, CoreSetMsg, CoresetError,
    CoresetParams, CoresetValidParams, FeatureKernel, Graph, PointSet, Problem, Schedule, StopRule,
};
use marginkit::data::libsvm_fmt::{read_libsvm_path, ReadOptions};
use marginkit::fit::Control;
use marginkit::svm::{Gamma, KernelKind, KernelParams};
use marginkit::{Dataset, KernelSpec};

/// The centralized core-set of `pts` (the kernel of `params`' problem).
fn centralized(pts: &PointSet, params: &CoresetValidParams) -> Result<CoreSetMsg, CoresetError> {
    Ok(
        marginkit::coreset::fit(params, pts, &mut Control::default())?
            .model
            .set,
    )
}

/// Algorithm 1 on `nodes` in-process nodes; `on_round` sees every round's summary.
fn run_in_process(
    pts: &PointSet,
    nodes: usize,
    params: &ConsensusValidParams,
    mut on_round: impl FnMut(&RoundSummary),
) -> Result<ConsensusReport, CoresetError> {
    let data = ConsensusData::InProcess { points: pts, nodes };
    let mut ctl = Control::default().on_part(|r: &Round| on_round(&r.summary));
    Ok(marginkit::coreset::consensus::fit(params, &data, &mut ctl)?.report)
}

/// The RBF base kernel with gamma `1 / n_features`.
fn rbf_auto() -> KernelParams {
    KernelParams {
        kind: KernelKind::Rbf,
        gamma: Gamma::Auto,
        ..KernelParams::default()
    }
}

fn gauss_points(n: usize, d: usize, seed: u64) -> PointSet {
    let mut s = PointSet::new(d);
    let mut row = vec![0.0; d];
    for i in 0..n {
        for (k, v) in row.iter_mut().enumerate() {
            // Box-Muller from the counter-based hash.
            let u1 = marginkit::coreset::unif4(seed, i as u64, k as u64, 1).max(1e-300);
            let u2 = marginkit::coreset::unif4(seed, i as u64, k as u64, 2);
            *v = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        }
        s.push(i as u64, 1.0, &row);
    }
    s
}

/// The exact MEB radius^2 by clarabel: min r s.t. |z - s_i| <= r (second-order cones).
fn clarabel_meb(pts: &PointSet) -> f64 {
    use clarabel::algebra::CscMatrix;
    use clarabel::solver::{
        DefaultSettingsBuilder, DefaultSolver, IPSolver, SecondOrderConeT, SolverStatus,
    };
    let (n, d) = (pts.len(), pts.dim());
    let nv = d + 1; // z (d), r
    let p = CscMatrix::new(nv, nv, vec![0; nv + 1], vec![], vec![]);
    let mut q = vec![0.0; nv];
    q[d] = 1.0;
    let (mut ri, mut ci, mut vi) = (vec![], vec![], vec![]);
    let mut b = vec![];
    let mut cones = vec![];
    for i in 0..n {
        let base = i * (d + 1);
        ri.push(base);
        ci.push(d);
        vi.push(-1.0);
        b.push(0.0);
        for k in 0..d {
            ri.push(base + 1 + k);
            ci.push(k);
            vi.push(-1.0);
            b.push(-pts.row(i)[k]);
        }
        cones.push(SecondOrderConeT(d + 1));
    }
    let a = CscMatrix::new_from_triplets(n * (d + 1), nv, ri, ci, vi);
    let st = DefaultSettingsBuilder::default()
        .verbose(false)
        .tol_gap_abs(1e-12)
        .tol_gap_rel(1e-12)
        .tol_feas(1e-12)
        .build()
        .unwrap();
    let mut solver = DefaultSolver::new(&p, &q, &a, &b, &cones, st).unwrap();
    solver.solve();
    assert!(matches!(
        solver.solution.status,
        SolverStatus::Solved | SolverStatus::AlmostSolved
    ));
    let r = solver.solution.x[d];
    r * r
}

fn exact_r2(pts: &PointSet, kern: &FeatureKernel) -> f64 {
    marginkit::coreset::quality::exact_r2(pts, kern).expect("exact MEB")
}

/// max over all points of |s - c(C)|^2 for a set given by its message.
fn max_dist2(pts: &PointSet, kern: &FeatureKernel, set: &marginkit::coreset::CoreSetMsg) -> f64 {
    let mut pool = Pool::new(pts, None);
    let members: Vec<usize> = (0..set.points.len())
        .map(|i| pool.add(&set.points, i))
        .collect();
    let m = meb_of(&pool, kern, &members);
    assert_eq!(
        m.sol.r2.to_bits(),
        set.r2.to_bits(),
        "r^2 is a function of the set"
    );
    (0..pts.len())
        .map(|p| dist2(&pool, kern, &m, p))
        .fold(0.0, f64::max)
}

#[test]
fn exact_meb_matches_clarabel() {
    let kern = FeatureKernel::new(Problem::Meb, KernelSpec::Linear).unwrap();
    for (n, d, seed) in [(30, 3, 1), (60, 10, 2), (12, 50, 3), (200, 2, 4)] {
        let pts = gauss_points(n, d, seed);
        let ours = exact_r2(&pts, &kern);
        let theirs = clarabel_meb(&pts);
        assert!(
            (ours - theirs).abs() <= 1e-7 * theirs,
            "n={n} d={d}: {ours} vs clarabel {theirs}"
        );
    }
}

#[test]
fn coreset_within_one_plus_eps_and_covers_everything() {
    let kern = FeatureKernel::new(Problem::Meb, KernelSpec::Linear).unwrap();
    for (n, d, eps, seed) in [
        (100, 50, 0.1, 5),
        (300, 5, 0.2, 6),
        (150, 20, 0.05, 7),
        (80, 2, 0.5, 8),
    ] {
        let pts = gauss_points(n, d, seed);
        let rstar2 = exact_r2(&pts, &kern);
        let params = CoresetParams::new().eps(eps).check().unwrap();
        let set = centralized(&pts, &params).unwrap();
        assert_eq!(set.ids.len(), params.k());
        // Sandwich r*/(1+eps) <= r(C) <= r*, and every point within (1+eps) r(C).
        assert!(set.r2 <= rstar2 * (1.0 + 1e-9), "{} > {rstar2}", set.r2);
        assert!(set.r2 * (1.0 + eps).powi(2) >= rstar2, "n={n} d={d}");
        let far = max_dist2(&pts, &kern, &set);
        assert!(
            far <= (1.0 + eps).powi(2) * set.r2 * (1.0 + 1e-9),
            "n={n} d={d}: {far} vs {}",
            set.r2
        );
    }
}

fn check_run(
    pts: &PointSet,
    kern: &FeatureKernel,
    nodes: usize,
    params: &ConsensusValidParams,
) -> marginkit::coreset::ConsensusReport {
    let mut last: Vec<f64> = Vec::new();
    let mut spread_ok = true;
    let rep = run_in_process(pts, nodes, params, |s: &RoundSummary| {
        if s.r2_min.is_finite() {
            last.push(s.r2_min);
        }
        spread_ok &= s.r2_min <= s.r2_max;
    })
    .unwrap();
    assert!(spread_ok);
    assert!(rep.monotone, "r^2 decreased at some node");
    for (_, h) in &rep.history {
        for w in h.windows(2) {
            assert!(w[1].0 >= w[0].0, "recorded r^2 not monotone");
        }
    }
    for w in last.windows(2) {
        assert!(w[1] >= w[0], "the smallest r^2 over nodes decreased");
    }
    assert!(
        rep.agreed && rep.quiescent,
        "{:?} after {} rounds",
        params.graph(),
        rep.rounds
    );
    let first = &rep.states[0].1;
    assert!(rep.states.iter().all(|(_, s)| s.ids == first.ids));
    let rstar2 = exact_r2(pts, kern);
    let eps = params.coreset().eps();
    let far = max_dist2(pts, kern, first);
    assert!(
        far <= (1.0 + eps).powi(2) * rstar2 * (1.0 + 1e-9),
        "coverage {far} vs r*^2 {rstar2}"
    );
    assert!(first.r2 <= rstar2 * (1.0 + 1e-9));
    rep
}

#[test]
fn consensus_on_every_graph_kind() {
    let kern = FeatureKernel::new(Problem::Meb, KernelSpec::Linear).unwrap();
    let pts = gauss_points(100, 50, 11);
    let base = ConsensusParams::new()
        .record(true)
        .coreset(CoresetParams::new().eps(0.1));
    let edges: Vec<(usize, usize)> = (0..20)
        .map(|i| (i, (i * 7 + 3) % 20))
        .chain((0..20).map(|i| (i, (i + 1) % 20)))
        .collect();
    let cases: Vec<(usize, Graph, Activation, f64, u32)> = vec![
        (100, Graph::ErdosRenyi { p: 0.01 }, Activation::Sync, 0.0, 0),
        (25, Graph::Ring, Activation::Sync, 0.0, 0),
        (30, Graph::Grid, Activation::Sync, 0.0, 0),
        (20, Graph::Edges(edges), Activation::Sync, 0.0, 0),
        (
            50,
            Graph::ErdosRenyi { p: 0.05 },
            Activation::Async { p: 0.5 },
            0.2,
            3,
        ),
        (10, Graph::Complete, Activation::Async { p: 0.3 }, 0.5, 2),
    ];
    for (nodes, graph, act, drop, delay) in cases {
        let params = base
            .clone()
            .graph(graph)
            .activation(act)
            .drop(drop)
            .max_delay(delay)
            .check()
            .unwrap();
        let rep = check_run(&pts, &kern, nodes, &params);
        assert!(rep.bytes_per_node_round > 0.0);
        // Same seed, same run, bit for bit (and independent of rayon's thread count).
        let again = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(|| run_in_process(&pts, nodes, &params, |_| {}).unwrap());
        assert_eq!(again.rounds, rep.rounds);
        assert_eq!(again.states[0].1, rep.states[0].1);
    }
}

#[test]
fn distributed_equals_centralized_when_the_core_set_holds_the_whole_support() {
    // k = 10 >= d + 1: both reach the exact MEB, whose support is unique.
    let kern = FeatureKernel::new(Problem::Meb, KernelSpec::Linear).unwrap();
    for (d, seed) in [(2, 21), (3, 22), (5, 23)] {
        let pts = gauss_points(400, d, seed);
        let cp = CoresetParams::new().eps(0.1);
        let central = centralized(&pts, &cp.check().unwrap()).unwrap();
        for graph in [Graph::ErdosRenyi { p: 0.1 }, Graph::Ring, Graph::Grid] {
            let params = ConsensusParams::new()
                .coreset(cp)
                .graph(graph.clone())
                .check()
                .unwrap();
            let rep = check_run(&pts, &kern, 16, &params);
            let dist = &rep.states[0].1;
            assert_eq!(dist.support(), central.support(), "d={d} {graph:?}");
            assert!((dist.r2 - central.r2).abs() <= 1e-12 * central.r2);
        }
    }
}

fn read(name: &str) -> Dataset {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    read_libsvm_path(&p, &ReadOptions::default()).unwrap()
}

fn accuracy(model: &marginkit::svm::SvmModel, data: &Dataset) -> f64 {
    let pred = model.predict(&data.x).unwrap();
    let ok = pred.iter().zip(&data.y).filter(|(a, b)| a == b).count();
    100.0 * ok as f64 / data.len() as f64
}

#[test]
fn distributed_l2svm_accuracy_matches_centralized() {
    for (name, nodes) in [("breast_cancer", 8), ("digits_oe", 8)] {
        let train = read(&format!("coreset_{name}.train.svm"));
        let test = read(&format!("coreset_{name}.test.svm"));
        let labels = two_classes(&train).unwrap();
        let all: Vec<usize> = (0..train.len()).collect();
        let pts = PointSet::from_dataset(&train, &all, Some(labels[0]));
        let gamma = 1.0 / train.n_features() as f64;
        let kern =
            FeatureKernel::new(Problem::L2Svm { c: 10.0 }, KernelSpec::Rbf { gamma }).unwrap();
        let cp = CoresetParams::new()
            .problem(Problem::L2Svm { c: 10.0 })
            .kernel(rbf_auto())
            .eps(0.01);
        let central = centralized(&pts, &cp.check().unwrap()).unwrap();
        let params = ConsensusParams::new()
            .coreset(cp)
            .graph(Graph::ErdosRenyi { p: 0.3 })
            .check()
            .unwrap();
        let rep = run_in_process(&pts, nodes, &params, |_| {}).unwrap();
        assert!(rep.agreed && rep.monotone);
        let m_c = to_model(&central, &kern, labels).unwrap();
        let m_d = to_model(&rep.states[0].1, &kern, labels).unwrap();
        let (a_c, a_d) = (accuracy(&m_c, &test), accuracy(&m_d, &test));
        eprintln!(
            "{name}: centralized {a_c:.2}% distributed {a_d:.2}% (train {:.2}/{:.2})",
            accuracy(&m_c, &train),
            accuracy(&m_d, &train)
        );
        assert!((a_c - a_d).abs() <= 1.0 + 1e-9, "{name}: {a_c} vs {a_d}");
        assert!(a_c > 80.0, "{name}: {a_c}");
        // The model is an ordinary LIBSVM model: write, read, same predictions.
        let mut buf = Vec::new();
        marginkit::svm::model_io::write_model(&mut buf, &m_d).unwrap();
        let back = marginkit::svm::model_io::read_model_bytes(&buf).unwrap();
        assert_eq!(
            back.predict(&test.x).unwrap(),
            m_d.predict(&test.x).unwrap()
        );
    }
}

#[test]
fn svdd_and_one_class_models_agree_with_the_ball() {
    let train = read("coreset_breast_cancer.train.svm");
    let all: Vec<usize> = (0..train.len()).collect();
    let pts = PointSet::from_dataset(&train, &all, None);
    let gamma = 1.0 / train.n_features() as f64;
    for problem in [Problem::Svdd, Problem::OneClassL2 { c: 1.0 }] {
        let kern = FeatureKernel::new(problem, KernelSpec::Rbf { gamma }).unwrap();
        let cp = CoresetParams::new()
            .problem(problem)
            .kernel(rbf_auto())
            .eps(0.1)
            .check()
            .unwrap();
        let set = centralized(&pts, &cp).unwrap();
        let model = to_model(&set, &kern, [1.0, -1.0]).unwrap();
        let dec = model.decision_values(&train.x);
        if problem == Problem::Svdd {
            // decision = r^2 - |phi(p) - c|^2 for points outside the core-set.
            let mut pool = Pool::new(&pts, None);
            let members: Vec<usize> = (0..set.points.len())
                .map(|i| pool.add(&set.points, i))
                .collect();
            let m = meb_of(&pool, &kern, &members);
            for p in 0..pts.len() {
                if set.ids.contains(&pts.id(p)) {
                    continue;
                }
                let want = set.r2 - dist2(&pool, &kern, &m, p);
                assert!((dec[p][0] - want).abs() < 1e-9, "{} vs {want}", dec[p][0]);
                // Covered within (1+eps)^2 r^2.
                assert!(-want <= ((1.0 + cp.eps()).powi(2) - 1.0) * set.r2 + 1e-12);
            }
        } else {
            // One-class L2: w'phi(p) - rho with rho = |c|^2; the core-set's support points sit on
            // the margin up to xi_j = x_j / C: w'phi_j = rho - x_j / C.
            for (i, &id) in set.points.ids().iter().enumerate() {
                if set.weights[i] > 0.0 {
                    let want = -set.weights[i] / 1.0;
                    assert!(
                        (dec[id as usize][0] - want).abs() < 1e-9,
                        "{} vs {want}",
                        dec[id as usize][0]
                    );
                }
            }
        }
    }
}

#[test]
fn bad_input_is_a_clear_error() {
    let pts = gauss_points(10, 3, 31);
    for eps in [0.0, 1.0, -0.5, f64::NAN] {
        assert!(matches!(
            CoresetParams::new()
                .eps(eps)
                .check()
                .map_err(CoresetError::from),
            Err(CoresetError::Param(_))
        ));
    }
    let params = ConsensusParams::default().check().unwrap();
    let e = run_in_process(&pts, 11, &params, |_| {}).unwrap_err();
    assert!(matches!(e, CoresetError::EmptyNode { .. }), "{e}");
    let disc = ConsensusParams::new()
        .graph(Graph::Edges(vec![(0, 1), (1, 0), (2, 3), (3, 2)]))
        .check()
        .unwrap();
    let e = run_in_process(&pts, 4, &disc, |_| {}).unwrap_err();
    assert!(matches!(e, CoresetError::Disconnected { .. }), "{e}");
    assert!(e.to_string().contains("consensus is impossible"));
    let zero = ConsensusParams::new()
        .graph(Graph::ErdosRenyi { p: 0.0 })
        .check()
        .unwrap();
    assert!(matches!(
        run_in_process(&pts, 4, &zero, |_| {}),
        Err(CoresetError::Disconnected { .. })
    ));
    // The SVM mapping needs a constant kernel diagonal: the linear kernel on raw rows has none.
    let svm_params = CoresetParams::new()
        .problem(Problem::L2Svm { c: 1.0 })
        .kernel(KernelParams {
            kind: KernelKind::Linear,
            ..KernelParams::default()
        })
        .check()
        .unwrap();
    let e = centralized(&pts, &svm_params).unwrap_err();
    assert!(matches!(e, CoresetError::NonConstantDiagonal { .. }), "{e}");
    assert!(FeatureKernel::new(Problem::L2Svm { c: 0.0 }, KernelSpec::Linear).is_err());
    assert!(FeatureKernel::new(Problem::Svdd, KernelSpec::Precomputed).is_err());
    // The same checks on the parameters of a fit.
    for c in [0.0, f64::NAN] {
        let p = CoresetParams::new().problem(Problem::L2Svm { c });
        assert!(p.check().is_err());
    }
    let precomputed = KernelParams {
        kind: KernelKind::Precomputed,
        ..KernelParams::default()
    };
    let p = CoresetParams::new()
        .problem(Problem::Svdd)
        .kernel(precomputed);
    assert!(p.check().is_err());
}

#[test]
fn tiny_eps_caps_the_core_set_at_the_data_and_is_exact() {
    // eps = 1e-12 would mean k = 1e12 points: the cap at n keeps buffers at the data size, and a
    // core-set of all points is the exact MEB.
    let kern = FeatureKernel::new(Problem::Meb, KernelSpec::Linear).unwrap();
    let pts = gauss_points(40, 3, 31);
    let exact = exact_r2(&pts, &kern);
    for eps in [1e-12, 1e-6] {
        let cp = CoresetParams::new().eps(eps).check().unwrap();
        assert_eq!(cp.k_for(pts.len()), 40);
        let set = centralized(&pts, &cp).unwrap();
        assert!(
            (set.r2 - exact).abs() <= 1e-6 * exact,
            "{} vs {exact}",
            set.r2
        );
    }
}

#[test]
fn zero_nodes_or_rounds_say_must_be_at_least_one() {
    let pts = gauss_points(10, 2, 41);
    let params = ConsensusParams::default().check().unwrap();
    let e = run_in_process(&pts, 0, &params, |_| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("nodes must be at least 1"), "{e}");
    let e = ConsensusParams::new()
        .max_rounds(0)
        .check()
        .unwrap_err()
        .to_string();
    assert!(e.contains("max_rounds must be at least 1"), "{e}");
}

#[test]
fn tiny_eps_on_the_distributed_path_uses_one_global_cap() {
    // eps = 1e-12: k = min(1e12, n) = n on every node (not per shard): no abort, agreement, and
    // the core-set of all points is the exact MEB.
    let kern = FeatureKernel::new(Problem::Meb, KernelSpec::Linear).unwrap();
    let pts = gauss_points(24, 3, 51);
    let exact = exact_r2(&pts, &kern);
    for graph in [Graph::Ring, Graph::ErdosRenyi { p: 0.3 }] {
        let params = ConsensusParams::new()
            .coreset(CoresetParams::new().eps(1e-12))
            .graph(graph)
            .check()
            .unwrap();
        let rep = run_in_process(&pts, 4, &params, |_| {}).unwrap();
        assert_eq!(rep.k, 24);
        assert!(rep.agreed);
        let set = &rep.states[0].1;
        assert_eq!(set.ids.len(), 24);
        assert!(
            (set.r2 - exact).abs() <= 1e-6 * exact,
            "{} vs {exact}",
            set.r2
        );
    }
}

#[test]
fn local_rule_stops_with_all_nodes_agreed_on_static_graphs() {
    let pts = gauss_points(60, 8, 61);
    let edges: Vec<(usize, usize)> = (0..12)
        .map(|i| (i, (i * 5 + 2) % 12))
        .chain((0..12).map(|i| (i, (i + 1) % 12)))
        .collect();
    // (nodes, graph, directed diameter)
    let cases = [
        (12, Graph::Ring, 11),
        (12, Graph::Grid, 5), // 4 columns x 3 rows: 3 + 2
        (12, Graph::Complete, 1),
        (12, Graph::Edges(edges), 0),
        (1, Graph::Ring, 0),
    ];
    for (nodes, graph, diam) in cases {
        for seed in [1, 2, 3] {
            let builder = ConsensusParams::new()
                .coreset(CoresetParams::new().eps(0.2).seed(seed))
                .graph(graph.clone());
            let params = builder.clone().check().unwrap();
            let schedule = Schedule::new(nodes, &params).unwrap();
            assert!(schedule.window_is_proven());
            let d = schedule.flooding_time(0, 1000).unwrap();
            if diam > 0 || nodes == 1 {
                assert_eq!(d, diam, "{graph:?}");
            }
            // Static graph: the flooding time does not depend on the start round.
            assert_eq!(schedule.flooding_time(7, 1000), Some(d));
            let mut first_stop_agreed = None;
            let rep = run_in_process(&pts, nodes, &params, |s: &RoundSummary| {
                if s.stopped > 0 && first_stop_agreed.is_none() {
                    first_stop_agreed = Some(s.fp_min == s.fp_max && !s.changed);
                }
            })
            .unwrap();
            assert_eq!(rep.window, Some(2 * d + 1));
            assert!(rep.stopped && rep.agreed && rep.window_proven, "{graph:?}");
            assert_eq!(first_stop_agreed, Some(true), "{graph:?} seed {seed}");
            // The first node stops W rounds after the last change at the latest... and all have
            // stopped within D more rounds (the proof's bound).
            let stops: Vec<u64> = rep.stop_rounds.iter().map(|(_, s)| s.unwrap()).collect();
            let (lo, hi) = (stops.iter().min().unwrap(), stops.iter().max().unwrap());
            assert!(hi - lo <= d, "{graph:?}: stops {lo}..{hi}, D = {d}");
            assert_eq!(rep.rounds, *hi);
            // The global diagnostic agrees: a fixed point.
            assert!(rep.quiescent, "{graph:?}");
            // Same final set as the global rule.
            let global = run_in_process(
                &pts,
                nodes,
                &builder.clone().stop(StopRule::Global).check().unwrap(),
                |_| {},
            )
            .unwrap();
            assert_eq!(global.states[0].1, rep.states[0].1);
            assert!(global.rounds <= rep.rounds);
        }
    }
}

#[test]
fn time_varying_graphs_use_the_seeded_flooding_time() {
    // Erdos-Renyi / async / lossy: the window is a heuristic (not proven), computed from the
    // seeded schedule; on the paper's setting it still ends with all nodes agreed.
    let pts = gauss_points(100, 50, 11);
    let builder = ConsensusParams::new().graph(Graph::ErdosRenyi { p: 0.01 });
    let params = builder.clone().check().unwrap();
    let schedule = Schedule::new(100, &params).unwrap();
    assert!(!schedule.window_is_proven());
    let d = schedule.flooding_time(0, 1000).unwrap();
    assert!((3..100).contains(&d), "{d}");
    let rep = run_in_process(&pts, 100, &params, |_| {}).unwrap();
    assert_eq!(rep.window, Some(2 * d + 1));
    assert!(rep.stopped && rep.agreed && !rep.window_proven);
    // A window that is too short can stop nodes before they agree: reported, not hidden.
    let short = builder
        .stop(StopRule::Local { window: Some(1) })
        .check()
        .unwrap();
    let rep = run_in_process(&pts, 100, &short, |_| {}).unwrap();
    assert!(rep.stopped);
    let all_same = rep.states.iter().all(|(_, s)| s.ids == rep.states[0].1.ids);
    assert_eq!(rep.agreed, all_same);
}
