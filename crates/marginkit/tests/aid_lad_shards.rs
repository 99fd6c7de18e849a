//! Sharded AID-LAD (`aid::lad::shard::fit_shard`): the rows split into P blocks, each on its own
//! thread, the reductions over channels between the threads. Every shard's model, objective and
//! iteration records are the single-process `aid::lad::fit`'s bit for bit, for P = 1..4 with
//! uneven and empty blocks, dense and sparse data, with and without an intercept, on a real data
//! set (boston, the sample is all rows) and on generated sets larger than the initial sample
//! (several chunks of the full-data pass straddle the blocks); and the objective is the full
//! LP's optimum (the library's exact LAD on all rows) to 1e-9 relative.

use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver, Sender};

use marginkit::aid::lad::shard::{self, InProcess, LadComm};
use marginkit::aid::lad::{self, fit_lad, AidLadParams, AidLadValidParams};
use marginkit::aid::{AidCheckpoint, IterRecord, Termination};
use marginkit::data::libsvm_fmt::{read_libsvm_path, ReadOptions, Storage};
use marginkit::error::FitError;
use marginkit::fit::Control;
use marginkit::solver::{IterStats, Observer, Status};
use marginkit::{CsrMatrix, Dataset, DenseMatrix, Features};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::ops::ControlFlow;

enum Msg {
    F(Vec<f64>),
    B(Vec<u8>),
}

/// One shard's channels to and from every other shard.
struct Net {
    id: usize,
    to: Vec<Option<Sender<Msg>>>,
    from: Vec<Option<Receiver<Msg>>>,
}

impl Net {
    fn p(&self) -> usize {
        self.to.len()
    }
    fn send(&self, j: usize, m: Msg) {
        self.to[j].as_ref().unwrap().send(m).unwrap();
    }
    fn recv_f(&self, j: usize) -> Vec<f64> {
        match self.from[j].as_ref().unwrap().recv().unwrap() {
            Msg::F(v) => v,
            Msg::B(_) => panic!("expected doubles"),
        }
    }
    fn recv_b(&self, j: usize) -> Vec<u8> {
        match self.from[j].as_ref().unwrap().recv().unwrap() {
            Msg::B(v) => v,
            Msg::F(_) => panic!("expected bytes"),
        }
    }
    /// The pipeline 0 -> 1 -> ... -> P-1; returns whether this is the last shard.
    fn pipe(&mut self, buf: &mut [f64], add_local: &mut dyn FnMut(&mut [f64], bool)) -> bool {
        if self.id > 0 {
            buf.copy_from_slice(&self.recv_f(self.id - 1));
        }
        add_local(buf, self.id == 0);
        if self.id + 1 < self.p() {
            self.send(self.id + 1, Msg::F(buf.to_vec()));
            false
        } else {
            true
        }
    }
}

impl LadComm for Net {
    fn sum(&mut self, buf: &mut [f64], add_local: &mut dyn FnMut(&mut [f64], bool)) {
        if self.pipe(buf, add_local) {
            for j in 0..self.p() - 1 {
                self.send(j, Msg::F(buf.to_vec()));
            }
        } else {
            let last = self.p() - 1;
            buf.copy_from_slice(&self.recv_f(last));
        }
    }
    fn sum_to_root(&mut self, buf: &mut [f64], add_local: &mut dyn FnMut(&mut [f64], bool)) {
        let last = self.pipe(buf, add_local);
        if self.p() > 1 {
            if last {
                self.send(0, Msg::F(buf.to_vec()));
            } else if self.id == 0 {
                buf.copy_from_slice(&self.recv_f(self.p() - 1));
            } else {
                // Only the root's result is defined.
                buf.fill(f64::NAN);
            }
        }
    }
    fn or(&mut self, flags: &mut [u8]) {
        if self.id == 0 {
            for j in 1..self.p() {
                for (f, g) in flags.iter_mut().zip(self.recv_b(j)) {
                    *f |= g;
                }
            }
            for j in 1..self.p() {
                self.send(j, Msg::B(flags.to_vec()));
            }
        } else {
            self.send(0, Msg::B(flags.to_vec()));
            flags.copy_from_slice(&self.recv_b(0));
        }
    }
    fn broadcast(&mut self, buf: &mut [f64]) {
        if self.id == 0 {
            for j in 1..self.p() {
                self.send(j, Msg::F(buf.to_vec()));
            }
        } else {
            buf.copy_from_slice(&self.recv_f(0));
        }
    }
    fn gather(&mut self, local: &[f64]) -> Vec<f64> {
        if self.id == 0 {
            let mut all = local.to_vec();
            for j in 1..self.p() {
                all.extend(self.recv_f(j));
            }
            all
        } else {
            self.send(0, Msg::F(local.to_vec()));
            Vec::new()
        }
    }
    fn is_root(&self) -> bool {
        self.id == 0
    }
}

fn nets(p: usize) -> Vec<Net> {
    let mut out: Vec<Net> = (0..p)
        .map(|id| Net {
            id,
            to: (0..p).map(|_| None).collect(),
            from: (0..p).map(|_| None).collect(),
        })
        .collect();
    for i in 0..p {
        for j in 0..p {
            if i != j {
                let (tx, rx) = channel();
                out[i].to[j] = Some(tx);
                out[j].from[i] = Some(rx);
            }
        }
    }
    out
}

fn repo_data(rel: &str) -> PathBuf {
    [env!("CARGO_MANIFEST_DIR"), "..", "..", "data", rel]
        .iter()
        .collect()
}

/// `n` rows of `m` features (about `density` of them non-zero), a linear target with heavy
/// tails and 5% gross outliers; stored sparse or dense.
fn generated(n: usize, m: usize, density: f64, sparse: bool, seed: u64) -> Dataset {
    let mut g = Xoshiro256PlusPlus::seed_from_u64(seed);
    let (mut v, mut y) = (Vec::with_capacity(n * m), Vec::with_capacity(n));
    for i in 0..n {
        let mut t = 0.5;
        for j in 0..m {
            let a = if g.gen_bool(density) {
                g.gen_range(-2.0..2.0)
            } else {
                0.0
            };
            t += a * (1.0 + (j % 3) as f64);
            v.push(a);
        }
        let u: f64 = g.gen_range(-1.0..1.0);
        t += u.powi(3) * 4.0;
        if i % 20 == 7 {
            t += if g.gen_bool(0.5) { 50.0 } else { -50.0 };
        }
        y.push(t);
    }
    let x = if sparse {
        let (mut ptr, mut idx, mut val) = (vec![0], Vec::new(), Vec::new());
        for i in 0..n {
            for j in 0..m {
                if v[i * m + j] != 0.0 {
                    idx.push(j as u32);
                    val.push(v[i * m + j]);
                }
            }
            ptr.push(idx.len());
        }
        Features::Sparse(CsrMatrix::new(m, ptr, idx, val).unwrap())
    } else {
        Features::Dense(DenseMatrix::new(n, m, v).unwrap())
    };
    Dataset::new(x, y, None).unwrap()
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|a| a.to_bits()).collect()
}

fn same_records(a: &[IterRecord], b: &[IterRecord], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: iterations");
    for (x, y) in a.iter().zip(b) {
        let strip = |r: &IterRecord| IterRecord { seconds: 0.0, ..*r };
        let (x, y) = (strip(x), strip(y));
        assert_eq!(x.t, y.t);
        assert_eq!(x.clusters, y.clusters, "{what}: clusters at t = {}", x.t);
        assert_eq!(x.violating, y.violating, "{what}: t = {}", x.t);
        for (u, v) in [
            (x.r, y.r),
            (x.lower_bound, y.lower_bound),
            (x.bound_t, y.bound_t),
            (x.aggregated_objective, y.aggregated_objective),
            (x.objective, y.objective),
            (x.best_objective, y.best_objective),
            (x.gap, y.gap),
        ] {
            assert_eq!(
                u.to_bits(),
                v.to_bits(),
                "{what}: t = {}: {x:?} vs {y:?}",
                x.t
            );
        }
    }
}

/// Runs `data` cut at `cuts` (block `b` holds rows `cuts[b]..cuts[b + 1]`) on one thread per
/// block, block `b` with the control `ctl(b)`.
fn try_blocks<'a>(
    valid: &AidLadValidParams,
    data: &Dataset,
    cuts: &[usize],
    ctl: impl Fn(usize) -> Control<'a, AidCheckpoint, IterRecord> + Sync,
) -> Vec<Result<shard::AidLadShardFit, FitError>> {
    let p = cuts.len() - 1;
    let blocks: Vec<Dataset> = (0..p)
        .map(|b| data.subset(&(cuts[b]..cuts[b + 1]).collect::<Vec<_>>()))
        .collect();
    std::thread::scope(|s| {
        let handles: Vec<_> = blocks
            .iter()
            .zip(nets(p))
            .enumerate()
            .map(|(b, (block, mut net))| {
                let ctl = &ctl;
                s.spawn(move || shard::fit_shard(valid, block, &mut net, &mut ctl(b)))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    })
}

/// [`try_blocks`], every block's fit succeeding.
fn fit_blocks<'a>(
    valid: &AidLadValidParams,
    data: &Dataset,
    cuts: &[usize],
    ctl: impl Fn(usize) -> Control<'a, AidCheckpoint, IterRecord> + Sync,
) -> Vec<shard::AidLadShardFit> {
    try_blocks(valid, data, cuts, ctl)
        .into_iter()
        .map(Result::unwrap)
        .collect()
}

/// Fits `data` cut at `cuts` (see [`fit_blocks`]) and checks every block's result against the
/// single-process fit.
fn check_blocks(params: &AidLadParams, data: &Dataset, cuts: &[usize], what: &str) {
    let valid = params.clone().check().unwrap();
    let one = lad::fit(&valid, data, &mut Control::default()).unwrap();
    let run = one.report.run.as_ref().unwrap();
    let model = one.model.as_ref().unwrap();
    let fits = fit_blocks(&valid, data, cuts, |_| Control::default());
    for (b, f) in fits.iter().enumerate() {
        let what = format!("{what}, blocks {cuts:?}, shard {b}");
        let fm = f.model.as_ref().unwrap();
        assert_eq!(bits(&fm.coef), bits(&model.coef), "{what}");
        assert_eq!(fm.intercept.to_bits(), model.intercept.to_bits(), "{what}");
        assert_eq!(fm.to_json(), model.to_json(), "{what}");
        let r = &f.report;
        assert_eq!(r.n, data.len());
        assert_eq!(r.first_row, cuts[b]);
        assert_eq!(r.best_objective.to_bits(), run.best_objective.to_bits());
        assert_eq!(r.lower_bound.to_bits(), run.lower_bound.to_bits());
        assert_eq!(r.status, run.status);
        assert_eq!(r.termination, run.termination);
        assert_eq!(r.last_certified, one.report.last_certified);
        same_records(&r.iterations, &run.iterations, &what);
    }
}

/// `InProcess` is the single-process arithmetic; and the independent check: the certified
/// optimum of the full LP on all rows.
fn check_oracle(params: &AidLadParams, data: &Dataset, intercept: bool) {
    let valid = params.clone().check().unwrap();
    let f = shard::fit_shard(&valid, data, &mut InProcess, &mut Control::default()).unwrap();
    let one = lad::fit(&valid, data, &mut Control::default()).unwrap();
    assert_eq!(
        f.model.as_ref().unwrap().to_json(),
        one.model.as_ref().unwrap().to_json()
    );
    assert_eq!(
        f.report.best_objective.to_bits(),
        one.report.run.as_ref().unwrap().best_objective.to_bits()
    );
    assert_eq!(f.report.termination, Some(Termination::Optimal));
    let (_, full) = fit_lad(data, intercept, None).unwrap();
    let rel = (f.report.best_objective - full.objective).abs() / full.objective.abs();
    assert!(
        rel <= 1e-9,
        "AID {} vs full LP {}",
        f.report.best_objective,
        full.objective
    );
    assert!(f.report.lower_bound <= full.objective * (1.0 + 1e-9));
    // The model's own objective (a separate pass) is the reported one.
    let own = f.model.as_ref().unwrap().objective(data);
    assert!((own - f.report.best_objective).abs() <= 1e-12 * own.abs());
}

/// Block cuts of `n` rows for P = 1..4: even, uneven, with empty blocks first, in the middle
/// and last.
fn cut_sets(n: usize) -> Vec<Vec<usize>> {
    vec![
        vec![0, n],
        vec![0, n / 2, n],
        vec![0, n / 7, n],
        vec![0, 0, n],
        vec![0, n / 3, 2 * n / 3, n],
        vec![0, n / 5, n / 5, n],
        vec![0, 1, n - 1, n],
        vec![0, n / 4, n / 2, 3 * n / 4, n],
        vec![0, 0, n / 9, n, n],
    ]
}

#[test]
fn boston_in_blocks_is_the_single_process_fit() {
    let data =
        read_libsvm_path(repo_data("reg/boston.scale.svm"), &ReadOptions::default()).unwrap();
    assert!(matches!(data.x, Features::Dense(_)));
    let params = AidLadParams::new();
    for cuts in cut_sets(data.len()) {
        check_blocks(&params, &data, &cuts, "boston");
    }
    check_oracle(&params, &data, true);
    // Stored sparse, without an intercept.
    let sparse = read_libsvm_path(
        repo_data("reg/boston.scale.svm"),
        &ReadOptions {
            storage: Storage::Sparse,
            ..ReadOptions::default()
        },
    )
    .unwrap();
    let params = AidLadParams::new().intercept(false);
    for cuts in [vec![0, 200, 506], vec![0, 0, 300, 506, 506]] {
        check_blocks(&params, &sparse, &cuts, "boston sparse, no intercept");
    }
    check_oracle(&params, &sparse, false);
}

#[test]
fn generated_sets_larger_than_the_sample() {
    // 9,000 rows: a sample of 2,000, three chunks of the full-data pass.
    let dense = generated(9000, 3, 1.0, false, 11);
    let params = AidLadParams::new().seed(5);
    for cuts in cut_sets(dense.len()) {
        check_blocks(&params, &dense, &cuts, "dense 9000 x 3");
    }
    check_oracle(&params, &dense, true);
    let sparse = generated(6000, 6, 0.5, true, 12);
    let params = AidLadParams::new().r0(0.002);
    for cuts in [vec![0, 4096, 6000], vec![0, 1000, 4097, 4100, 6000]] {
        check_blocks(&params, &sparse, &cuts, "sparse 6000 x 6");
    }
    check_oracle(&params, &sparse, true);
}

#[test]
fn singletons_and_limits_are_the_single_process_ones() {
    // r0 = 1: every row its own cluster from the start.
    let data = generated(300, 2, 1.0, false, 3);
    check_blocks(
        &AidLadParams::new().r0(1.0),
        &data,
        &[0, 100, 100, 300],
        "singletons",
    );
    // One iteration only: stops at the iteration limit with the same record.
    check_blocks(
        &AidLadParams::new().max_iter(1),
        &generated(3000, 4, 1.0, false, 4),
        &[0, 1500, 3000],
        "max_iter 1",
    );
}

#[test]
fn bad_input_is_an_error_on_every_shard() {
    let params = AidLadParams::new().check().unwrap();
    // No rows anywhere.
    let empty = Dataset::new(
        Features::Dense(DenseMatrix::new(0, 2, vec![]).unwrap()),
        vec![],
        None,
    )
    .unwrap();
    assert!(shard::fit_shard(&params, &empty, &mut InProcess, &mut Control::default()).is_err());
    // Fewer rows than coefficients.
    let tiny = generated(2, 3, 1.0, false, 1);
    assert!(shard::fit_shard(&params, &tiny, &mut InProcess, &mut Control::default()).is_err());
    // Shards with different feature counts: every shard fails.
    let a = generated(50, 2, 1.0, false, 1);
    let b = generated(50, 3, 1.0, false, 2);
    let errs = std::thread::scope(|s| {
        let hs: Vec<_> = [&a, &b]
            .into_iter()
            .zip(nets(2))
            .map(|(d, mut net)| {
                let params = &params;
                s.spawn(move || {
                    shard::fit_shard(params, d, &mut net, &mut Control::default()).is_err()
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    });
    assert_eq!(errs, vec![true, true]);
}

/// Asks to stop from iteration `self.0` on.
struct StopAt(u64);

impl Observer for StopAt {
    fn on_iter(&mut self, s: &IterStats) -> ControlFlow<()> {
        if s.iterations >= self.0 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }
}

/// A stop asked on one shard (not the root) stops every shard before the same aggregated
/// solve, with the best model so far: before iteration 1, the one-iteration fit's model;
/// before iteration 0, none.
#[test]
fn a_stop_on_one_shard_stops_every_shard_together() {
    let data = generated(3000, 4, 1.0, false, 4);
    let valid = AidLadParams::new().check().unwrap();
    let one = lad::fit(
        &AidLadParams::new().max_iter(1).check().unwrap(),
        &data,
        &mut Control::default(),
    )
    .unwrap();
    for at in [0, 1] {
        let fits = fit_blocks(&valid, &data, &[0, 1000, 3000], |b| {
            Control::new(StopAt(if b == 1 { at } else { u64::MAX }))
        });
        for f in &fits {
            assert_eq!(f.report.status, Status::Interrupted);
            assert_eq!(f.report.iterations.len() as u64, at);
            let json = f.model.as_ref().map(|m| m.to_json());
            if at == 0 {
                assert_eq!(json, None);
            } else {
                assert_eq!(json, one.model.as_ref().map(|m| m.to_json()));
            }
        }
    }
}

/// A sharded run stopped before iteration 1 leaves on the root the state one process stopped
/// there returns (the same size, iterations and best objective; only the measured seconds
/// differ), and none elsewhere; continued by one process or at another number of shards, a
/// state ends with the uninterrupted run's model and records.
#[test]
fn a_stopped_sharded_run_leaves_the_single_process_state_and_continues_at_any_p() {
    let data = generated(3000, 4, 1.0, false, 4);
    let valid = AidLadParams::new().check().unwrap();
    let full = lad::fit(&valid, &data, &mut Control::default()).unwrap();
    let full_run = full.report.run.as_ref().unwrap();
    assert!(
        full_run.iterations.len() >= 2,
        "the run must outlast the stop"
    );
    let one = lad::fit(&valid, &data, &mut Control::new(StopAt(1))).unwrap();
    let state = one.checkpoint.as_ref().unwrap().to_bytes();

    // Three shards, one of them empty, stopped by the last one.
    let fits = fit_blocks(&valid, &data, &[0, 1200, 1200, 3000], |b| {
        Control::new(StopAt(if b == 2 { 1 } else { u64::MAX }))
    });
    assert!(fits[1..].iter().all(|f| f.checkpoint.is_none()));
    // The single process's state but for the measured seconds (same size, iterations, records).
    let sharded = fits[0].checkpoint.as_ref().unwrap();
    let single = one.checkpoint.as_ref().unwrap();
    assert_eq!(sharded.to_bytes().len(), state.len());
    assert_eq!(sharded.n_iterations(), 1);
    same_records(sharded.iterations(), single.iterations(), "sharded state");
    assert_eq!(
        sharded.best_objective().map(f64::to_bits),
        single.best_objective().map(f64::to_bits)
    );
    // Continued by one process: the uninterrupted run.
    let cont = lad::fit(&valid, &data, &mut Control::default().resume_from(sharded)).unwrap();
    assert_eq!(
        cont.model.as_ref().unwrap().to_json(),
        full.model.as_ref().unwrap().to_json()
    );
    same_records(
        &cont.report.run.as_ref().unwrap().iterations,
        &full_run.iterations,
        "continued by one process",
    );

    let ck = AidCheckpoint::from_bytes(&state).unwrap();
    for cuts in [
        &[0, 3000][..],
        &[0, 1000, 2000, 3000],
        &[0, 2999, 3000, 3000],
    ] {
        let fits = fit_blocks(&valid, &data, cuts, |_| Control::default().resume_from(&ck));
        for f in &fits {
            let what = format!("resumed on blocks {cuts:?}");
            assert_eq!(f.report.status, full_run.status, "{what}");
            assert_eq!(
                f.model.as_ref().unwrap().to_json(),
                full.model.as_ref().unwrap().to_json(),
                "{what}"
            );
            same_records(&f.report.iterations, &full_run.iterations, &what);
        }
    }

    // Another run's state is refused on every shard.
    let other = AidLadParams::new().seed(7).check().unwrap();
    let refused = try_blocks(&other, &data, &[0, 1500, 3000], |_| {
        Control::default().resume_from(&ck)
    });
    for r in refused {
        let e = r.expect_err("a state of another run must be refused");
        assert!(e.to_string().contains("--seed"), "{e}");
    }
}
