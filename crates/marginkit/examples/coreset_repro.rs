//! Reproduces the simulation of Notarstefano, "A core-set approach for distributed quadratic
//! programming in big-data classification" (CDC 2015, Section V), and writes
//! `docs/repro/coreset.md`, `docs/repro/coreset_fig1.svg` and `docs/repro/coreset_fig2.svg`:
//!
//! N = 100 nodes holding one point each in R^50 (the paper does not give the distribution: we use
//! N(0, I)), eps = 0.1 (core-sets of 10 points), a fresh directed Erdos-Renyi graph with p = 0.01
//! in every round, synchronous rounds. Figure 1: r^2(C_i(t)) per node; Figure 2: |c(C_i(t))| per
//! node (seed 1). Rounds to consensus and the coverage ratio over 10 seeds, and every qualitative
//! claim of the paper checked one by one.
//!
//! `cargo run --release -p marginkit --example coreset_repro -- [OUT_DIR]` (default `docs/repro`).

use std::fmt::Write as _;
use std::time::Instant;

use marginkit::coreset::bc::{dist2, meb_of, Pool};
use marginkit::coreset::consensus::{self, ConsensusData, ConsensusReport, Schedule};
use marginkit::coreset::quality::exact_r2;
use marginkit::coreset::summary::consensus_figures;
use marginkit::coreset::{
    unif4, Activation, ConsensusParams, CoreSetMsg, CoresetParams, FeatureKernel, Graph, PointSet,
    Problem,
};
use marginkit::KernelSpec;

const N: usize = 100;
const D: usize = 50;
const EPS: f64 = 0.1;
const P: f64 = 0.01;
const SEEDS: u64 = 10;

fn gauss(n: usize, d: usize, seed: u64) -> PointSet {
    let mut s = PointSet::new(d);
    let mut row = vec![0.0; d];
    for i in 0..n {
        for (k, v) in row.iter_mut().enumerate() {
            let u1 = unif4(seed, i as u64, k as u64, 11).max(1e-300);
            let u2 = unif4(seed, i as u64, k as u64, 12);
            *v = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        }
        s.push(i as u64, 1.0, &row);
    }
    s
}

fn strongly_connected(adj: &[Vec<usize>]) -> bool {
    let n = adj.len();
    let mut radj = vec![Vec::new(); n];
    for (i, o) in adj.iter().enumerate() {
        for &j in o {
            radj[j].push(i);
        }
    }
    [adj, &radj[..]].iter().all(|a| {
        let mut seen = vec![false; n];
        let mut st = vec![0];
        seen[0] = true;
        while let Some(u) = st.pop() {
            for &v in &a[u] {
                if !seen[v] {
                    seen[v] = true;
                    st.push(v);
                }
            }
        }
        seen.iter().all(|&s| s)
    })
}

struct Run {
    rep: ConsensusReport,
    rstar2: f64,
    far2: f64,
    snap_connected: usize,
    union_connected_at: Option<u64>,
    no_in_first: usize,
    seconds: f64,
}

fn far2_of(pts: &PointSet, kern: &FeatureKernel, set: &CoreSetMsg) -> f64 {
    let mut pool = Pool::new(pts, None);
    let members: Vec<usize> = (0..set.points.len())
        .map(|i| pool.add(&set.points, i))
        .collect();
    let m = meb_of(&pool, kern, &members);
    (0..pts.len())
        .map(|p| dist2(&pool, kern, &m, p))
        .fold(0.0, f64::max)
}

fn one(seed: u64) -> Result<Run, Box<dyn std::error::Error>> {
    let pts = gauss(N, D, seed);
    let kern = FeatureKernel::new(Problem::Meb, KernelSpec::Linear)?;
    let params = ConsensusParams::new()
        .coreset(CoresetParams::new().eps(EPS).seed(seed))
        .graph(Graph::ErdosRenyi { p: P })
        .activation(Activation::Sync)
        .record(true)
        .check()?;
    let t0 = Instant::now();
    let network = ConsensusData::InProcess {
        points: &pts,
        nodes: N,
    };
    let rep = consensus::fit(&params, &network, &mut marginkit::fit::Control::default())?.report;
    let seconds = t0.elapsed().as_secs_f64();
    let rstar2 = exact_r2(&pts, &kern).ok_or("exact MEB did not converge")?;
    let far2 = far2_of(&pts, &kern, &rep.states[0].1);
    let sched = Schedule::new(N, &params)?;
    let mut union = vec![Vec::new(); N];
    let mut snap_connected = 0;
    let mut union_connected_at = None;
    let mut no_in_first = 0;
    for t in 0..rep.rounds {
        let adj: Vec<Vec<usize>> = (0..N).map(|i| sched.out_edges(t, i)).collect();
        if t == 0 {
            no_in_first = (0..N)
                .filter(|&j| sched.senders_to(0, j).is_empty())
                .count();
        }
        if strongly_connected(&adj) {
            snap_connected += 1;
        }
        for (i, o) in adj.into_iter().enumerate() {
            union[i].extend(o);
        }
        if union_connected_at.is_none() && strongly_connected(&union) {
            union_connected_at = Some(t + 1);
        }
    }
    Ok(Run {
        rep,
        rstar2,
        far2,
        snap_connected,
        union_connected_at,
        no_in_first,
        seconds,
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out_dir = std::path::PathBuf::from(std::env::args().nth(1).unwrap_or("docs/repro".into()));
    std::fs::create_dir_all(&out_dir)?;
    let runs: Vec<Run> = (1..=SEEDS).map(one).collect::<Result<_, _>>()?;
    let r1 = &runs[0];
    let [f1, f2] = consensus_figures(
        &r1.rep,
        &format!("N = {N}, d = {D}, eps = {EPS}, ER p = {P} per round, seed 1"),
    );
    marginkit::data::write_output(&out_dir.join("coreset_fig1.svg"), |w| {
        std::io::Write::write_all(w, f1.to_svg().as_bytes())
    })?;
    marginkit::data::write_output(&out_dir.join("coreset_fig2.svg"), |w| {
        std::io::Write::write_all(w, f2.to_svg().as_bytes())
    })?;

    let mut md = String::new();
    let k = CoresetParams::new().eps(EPS).check()?.k();
    writeln!(
        md,
        "# Reproduction: core-set consensus (Notarstefano, CDC 2015, Section V)\n"
    )?;
    writeln!(md, "Produced by `cargo run --release -p marginkit --example coreset_repro` (this file and the two SVGs are")?;
    writeln!(md, "overwritten; nothing below is typed by hand). Paper: `coreset-distributed-qp-classification.txt`;")?;
    writeln!(md, "implementation: `crates/marginkit/src/coreset/`.\n")?;
    writeln!(md, "## Setup\n")?;
    writeln!(md, "| item | paper | here |\n|---|---|---|")?;
    writeln!(
        md,
        "| nodes | N = 100, one point each | {N}, one point each (`--nodes 100` on 100 rows) |"
    )?;
    writeln!(md, "| problem | MEB (1), d = 50 | MEB, d = {D} |")?;
    writeln!(
        md,
        "| data | not given | s_i ~ N(0, I_50), counter-based seeded generator |"
    )?;
    writeln!(md, "| eps, core-set size | 0.1, 10 | {EPS}, k = {k} |")?;
    writeln!(md, "| graph | directed Erdos-Renyi, p = 0.01, fresh at every time step | same (`--graph er:0.01`) |")?;
    writeln!(
        md,
        "| activation | not given (presumably synchronous) | synchronous |"
    )?;
    writeln!(
        md,
        "| stopping | none given | local rule: a node stops when its core-set has not changed for W = 2D+1 rounds, D = flooding time of the seeded schedule from round 0 (a heuristic on time-varying graphs; proven for static ones: module docs of `coreset`); the global quiescence check reported as a diagnostic |"
    )?;
    writeln!(
        md,
        "| runs | 1 figure, seed not given | seeds 1..={SEEDS}; figures from seed 1 |\n"
    )?;

    writeln!(md, "## Figures (seed 1)\n")?;
    writeln!(md, "![Figure 1: r^2(C_i(t)) per node](coreset_fig1.svg)\n")?;
    writeln!(md, "![Figure 2: |c(C_i(t))| per node](coreset_fig2.svg)\n")?;

    writeln!(md, "## Per seed\n")?;
    writeln!(md, "`rounds` = rounds until every node had stopped by the local rule (window `W`); `quiescent` = first round after which the global")?;
    writeln!(
        md,
        "check (diagnostic) held; `consensus` = first round from which every node held the same"
    )?;
    writeln!(md, "core-set; `r(C)/r*` against the exact MEB (active set, checked against clarabel in the tests);")?;
    writeln!(md, "`max dist/r(C)` = max over all points of |s - c(C)| / r(C) (the corrected Remark IV.6 test, must be <= 1 + eps);")?;
    writeln!(
        md,
        "`coverage` = max |s - c(C)|^2 / r*^2 (Theorem IV.5(ii): <= (1+eps)^2 = {:.2}).\n",
        (1.0 + EPS).powi(2)
    )?;
    writeln!(md, "| seed | rounds | W | quiescent | consensus | agreed | r(C)/r* | max dist/r(C) | coverage | bytes/node/round | nodes without in-neighbour at t=0 | strongly connected snapshots | union strongly connected after | seconds |")?;
    writeln!(
        md,
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    )?;
    let mut cons = Vec::new();
    let mut covs = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        let s = &r.rep.states[0].1;
        let cr = r.rep.consensus_round.unwrap_or(0);
        cons.push(cr);
        covs.push(r.far2 / r.rstar2);
        writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {:.4} | {:.4} | {:.4} | {:.0} | {} | {} / {} | {} rounds | {:.3} |",
            i + 1,
            r.rep.rounds,
            r.rep.window.map_or("-".into(), |w| w.to_string()),
            r.rep.quiescent_round.map_or("-".into(), |q| q.to_string()),
            cr,
            r.rep.agreed,
            (s.r2 / r.rstar2).sqrt(),
            (r.far2 / s.r2).sqrt(),
            r.far2 / r.rstar2,
            r.rep.bytes_per_node_round,
            r.no_in_first,
            r.snap_connected,
            r.rep.rounds,
            r.union_connected_at.map_or("never".into(), |t| t.to_string()),
            r.seconds
        )?;
    }
    let mut sorted = cons.clone();
    sorted.sort_unstable();
    let median = sorted[sorted.len() / 2 - 1..=sorted.len() / 2]
        .iter()
        .sum::<u64>() as f64
        / 2.0;
    writeln!(
        md,
        "\nRounds to consensus: median {median}, range {}-{}. Coverage ratio: max {:.4} (bound {:.2}).\n",
        sorted[0],
        sorted[sorted.len() - 1],
        covs.iter().cloned().fold(0.0, f64::max),
        (1.0 + EPS).powi(2)
    )?;

    // The claims, one by one.
    let all_monotone = runs.iter().all(|r| {
        r.rep.monotone
            && r.rep
                .history
                .iter()
                .all(|(_, h)| h.windows(2).all(|w| w[1].0 >= w[0].0))
    });
    let all_agreed = runs.iter().all(|r| {
        r.rep.agreed
            && r.rep.stopped
            && r.rep.quiescent
            && r.rep
                .states
                .iter()
                .all(|(_, s)| s.ids == r.rep.states[0].1.ids)
    });
    let common_value = runs.iter().all(|r| {
        let last = r.rep.spread.last().copied().unwrap_or((0.0, 1.0));
        last.0 == last.1
    });
    let covered = runs
        .iter()
        .all(|r| r.far2 <= (1.0 + EPS).powi(2) * r.rstar2 * (1.0 + 1e-12));
    let bc = runs
        .iter()
        .all(|r| r.far2 <= (1.0 + EPS).powi(2) * r.rep.states[0].1.r2 * (1.0 + 1e-12));
    let sandwich = runs.iter().all(|r| {
        let s = r.rep.states[0].1.r2;
        s <= r.rstar2 * (1.0 + 1e-12) && s * (1.0 + EPS).powi(2) >= r.rstar2
    });
    let minus_fails = runs
        .iter()
        .all(|r| r.far2 > (1.0 - EPS).powi(2) * r.rep.states[0].1.r2);
    let size_k = runs.iter().all(|r| r.rep.states[0].1.ids.len() == k);
    let distinct: Vec<usize> = runs
        .iter()
        .map(|r| r.rep.states[0].1.points.len())
        .collect();
    let disconnected = runs.iter().all(|r| r.snap_connected == 0);
    let jointly = runs.iter().all(|r| r.union_connected_at.is_some());
    let verdict = |b: bool| if b { "**holds**" } else { "**FAILS**" };
    writeln!(md, "## The paper's claims, checked\n")?;
    writeln!(
        md,
        "| # | claim (where) | check | result |\n|---|---|---|---|"
    )?;
    writeln!(md, "| 1 | r^2 at every node is monotone non-decreasing (Sec. V, Fig. 1; proof of Thm IV.5) | every recorded r^2(C_i(t)) of every node, {SEEDS} seeds | {} |", verdict(all_monotone))?;
    writeln!(md, "| 2 | the radii converge to a common (consensus) value (Sec. V, Fig. 1) | smallest = largest r^2 over nodes in the last round | {} |", verdict(common_value))?;
    writeln!(md, "| 3 | all nodes reach the same core-set in finite time (Thm IV.5(i)) | identical id lists at every node, every node stopped by the local rule, global check held; rounds to consensus median {median}, range {}-{} | {} |", sorted[0], sorted[sorted.len() - 1], verdict(all_agreed))?;
    writeln!(md, "| 4 | \\|c(C) - s_i\\|^2 <= (1+eps)^2 r*^2 for every point (Thm IV.5(ii)) | max coverage ratio {:.4} <= {:.2} | {} |", covs.iter().cloned().fold(0.0, f64::max), (1.0 + EPS).powi(2), verdict(covered))?;
    writeln!(md, "| 5 | the core-set has ceil(1/eps) = {k} points (Lemma IV.1(i), Alg. 1) | k ids per set; distinct points per final set: {distinct:?} | {} |", verdict(size_k))?;
    writeln!(md, "| 6 | with p = 0.01 each snapshot is disconnected w.h.p. but the sequence is jointly connected (Sec. V) | strongly connected snapshots: 0 in every run; union of the snapshots strongly connected within the run | {} |", verdict(disconnected && jointly))?;
    writeln!(md, "| 7 | Remark IV.6, corrected: no constraint violated at r(C)(1+eps) | max dist / r(C) <= 1 + eps | {} |", verdict(bc))?;
    writeln!(md, "| 8 | Remark IV.6 as printed, r(C)(1-eps), is \"equivalent\" | the printed test fails on every run (the support points sit at distance r(C)): a misprint | {} |", if minus_fails { "**misprint confirmed**" } else { "**printed test passed (unexpected)**" })?;
    writeln!(md, "| 9 | sandwich r*/(1+eps) <= r(C) <= r* (digest, derived from the definition) | r(C)/r* per seed above | {} |\n", verdict(sandwich))?;
    writeln!(md, "The paper reports no numbers (no rounds, no accuracy): rows 3-4 give ours. For comparison only, the digest's")?;
    writeln!(md, "independent NumPy prototype of the same setup reported consensus after 13-22 rounds (median 16) and")?;
    writeln!(
        md,
        "max dist / r(C) of 1.018-1.043 over seeds 0-9 (different random data)."
    )?;
    writeln!(md, "\nBytes per node per round count what is sent: k = {k} ids, the distinct points (d = {D} f64, an id, a")?;
    writeln!(md, "label and a weight each) and two f64, times the number of out-neighbours (about p (N-1) ~ 1 per round).")?;
    marginkit::data::write_output(&out_dir.join("coreset.md"), |w| {
        std::io::Write::write_all(w, md.as_bytes())
    })?;
    print!("{md}");
    Ok(())
}
