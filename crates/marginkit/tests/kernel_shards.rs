//! Kernel SVMs (C-SVC, one-class, epsilon-SVR) on a data set split by rows into P shards, each
//! on its own thread, the collectives carried by channels: with shrinking off the model file of
//! every shard is the single-process one byte for byte (dense and sparse rows, P = 1..4, uneven
//! shards and an empty one); with shrinking on, the dual objective recomputed from scratch from
//! the model (kernel values in f64, not the solver's gradient) is the single-process one to 1e-6
//! relative. A fit stopped early returns the single process's checkpoint (byte for byte without
//! shrinking), which shards at any count and one process continue: without shrinking to the
//! single-process model byte for byte; with shrinking, at the same split, to the uninterrupted
//! sharded model, elsewhere to the same optimum. With the block engine (`--solver block`) and
//! shrinking off the model file is the single-process block engine's byte for byte (small
//! working sets, so that the selection across shards is exercised), for any number of threads
//! per shard; the sharded block engine does not shrink, so with shrinking on (where one process
//! shrinks) it reaches the pair engine's optimum to 1e-6. nu-SVC and nu-SVR are refused on every
//! shard with either engine.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver, Sender};

use marginkit::data::first_appearances;
use marginkit::data::libsvm_fmt::{read_libsvm_path, ReadOptions, Storage};
use marginkit::fit::{Control, Fit};
use marginkit::kernel::KernelSpec;
use marginkit::solver::smo::shard::Collective;
use marginkit::solver::{IterStats, Observer, Shrinking, Status};
use marginkit::svm::model_io::write_model;
use marginkit::svm::{
    self, FitCheckpoint, FitReport, KernelKind, KernelParams, KernelShard, SvmModel, SvmParams,
    SvmSolver, SvmType,
};
use marginkit::{Dataset, DenseMatrix, Features};

/// One shard's ends of the channels to every other shard.
struct Net {
    rank: usize,
    to: Vec<Option<Sender<Vec<f64>>>>,
    from: Vec<Option<Receiver<Vec<f64>>>>,
}

impl Net {
    fn recv(&self, r: usize) -> Vec<f64> {
        self.from[r].as_ref().unwrap().recv().unwrap()
    }
    fn send_all(&self, v: &[f64]) {
        for tx in self.to.iter().flatten() {
            tx.send(v.to_vec()).unwrap();
        }
    }
}

impl Collective for Net {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.to.len()
    }
    fn all_gather(&mut self, mine: &[f64], all: &mut [f64]) {
        self.send_all(mine);
        let k = mine.len();
        for r in 0..self.size() {
            let part = &mut all[r * k..(r + 1) * k];
            if r == self.rank {
                part.copy_from_slice(mine);
            } else {
                part.copy_from_slice(&self.recv(r));
            }
        }
    }
    fn broadcast(&mut self, root: usize, buf: &mut [f64]) {
        if root == self.rank {
            self.send_all(buf);
        } else {
            buf.copy_from_slice(&self.recv(root));
        }
    }
    fn all_gather_var(&mut self, mine: &[f64], all: &mut Vec<f64>) {
        self.send_all(mine);
        all.clear();
        for r in 0..self.size() {
            if r == self.rank {
                all.extend_from_slice(mine);
            } else {
                all.extend_from_slice(&self.recv(r));
            }
        }
    }
}

fn nets(p: usize) -> Vec<Net> {
    let mut nets: Vec<Net> = (0..p)
        .map(|rank| Net {
            rank,
            to: (0..p).map(|_| None).collect(),
            from: (0..p).map(|_| None).collect(),
        })
        .collect();
    for a in 0..p {
        for b in 0..p {
            if a != b {
                let (tx, rx) = channel();
                nets[a].to[b] = Some(tx);
                nets[b].from[a] = Some(rx);
            }
        }
    }
    nets
}

fn repo_data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data")
        .join(rel)
}

fn read(rel: &str, sparse: bool) -> Dataset {
    let opts = if sparse {
        ReadOptions {
            storage: Storage::Sparse,
            ..ReadOptions::default()
        }
    } else {
        ReadOptions::default()
    };
    read_libsvm_path(repo_data(rel), &opts).unwrap()
}

fn bytes(m: &SvmModel) -> Vec<u8> {
    let mut out = Vec::new();
    write_model(&mut out, m).unwrap();
    out
}

/// Fits `data` cut at `cuts` (shard k holds rows `cuts[k]..cuts[k + 1]`) and returns every
/// shard's model and objective.
fn fit_sharded(params: &SvmParams, data: &Dataset, cuts: &[usize]) -> Vec<(SvmModel, f64)> {
    fit_shards(params, data, cuts, None, None)
        .into_iter()
        .map(|f| {
            let f = f.unwrap();
            let objective = f.report.subproblems[0].objective;
            (f.model, objective)
        })
        .collect()
}

fn single(params: &SvmParams, data: &Dataset) -> (SvmModel, f64) {
    let fit = svm::fit(
        &params.clone().check().unwrap(),
        data,
        &mut Control::default(),
    )
    .unwrap();
    (fit.model, fit.report.subproblems[0].objective)
}

/// Cuts of `n` rows into `p` shards: even, and uneven with an empty shard.
fn cuts(n: usize, p: usize) -> Vec<Vec<usize>> {
    let even: Vec<usize> = (0..=p).map(|k| k * n / p).collect();
    let mut out = vec![even];
    if p >= 2 {
        // The first shard small, the second empty (p >= 3), the rest even.
        let mut c = vec![0, n / 7];
        if p >= 3 {
            c.push(n / 7);
        }
        let rest = p + 1 - c.len();
        let from = *c.last().unwrap();
        for k in 1..=rest {
            c.push(from + k * (n - from) / rest);
        }
        out.push(c);
    }
    out
}

fn rbf(t: SvmType, h: Shrinking) -> SvmParams {
    SvmParams::new().svm_type(t).shrinking(h)
}

fn same_bytes(tag: &str, params: &SvmParams, data: &Dataset, ps: &[usize]) {
    let (want, obj) = single(params, data);
    let want = bytes(&want);
    for &p in ps {
        for c in cuts(data.len(), p) {
            for (k, (m, o)) in fit_sharded(params, data, &c).into_iter().enumerate() {
                let got = bytes(&m);
                assert!(
                    got == want,
                    "{tag} cuts {c:?} shard {k}: the model differs\n--- sharded\n{}\n--- single\n{}",
                    String::from_utf8_lossy(&got),
                    String::from_utf8_lossy(&want)
                );
                assert_eq!(o.to_bits(), obj.to_bits(), "{tag} cuts {c:?}: objective");
            }
        }
    }
}

#[test]
fn csvc_rbf_without_shrinking_is_the_single_process_model_dense_and_sparse() {
    for sparse in [false, true] {
        let data = read("clf/heart_scale.train.svm", sparse);
        same_bytes(
            &format!("heart sparse={sparse}"),
            &rbf(SvmType::CSvc, Shrinking::Off).c(4.0),
            &data,
            &[1, 2, 3, 4],
        );
    }
}

#[test]
fn one_class_and_svr_and_other_kernels_without_shrinking() {
    let heart = read("clf/heart_scale.train.svm", false);
    same_bytes(
        "one-class",
        &rbf(SvmType::OneClass, Shrinking::Off).nu(0.3),
        &heart,
        &[1, 3],
    );
    let boston = read("reg/boston.train.svm", false);
    same_bytes(
        "svr",
        &rbf(SvmType::EpsSvr, Shrinking::Off).c(2.0),
        &boston,
        &[1, 2, 4],
    );
    for kind in [KernelKind::Linear, KernelKind::Poly, KernelKind::Sigmoid] {
        let k = KernelParams {
            kind,
            ..KernelParams::default()
        };
        same_bytes(
            &format!("{kind:?}"),
            &rbf(SvmType::CSvc, Shrinking::Off).kernel(k),
            &heart,
            &[2, 3],
        );
    }
}

#[test]
fn multiclass_one_vs_one_without_shrinking() {
    let iris = read("multiclass/iris.scale.svm", false);
    same_bytes("iris", &rbf(SvmType::CSvc, Shrinking::Off), &iris, &[1, 3]);
}

/// The dual objective of a binary C-SVC, one-class or SVR model recomputed from its support
/// vectors: `1/2 sum_ij c_i c_j K(x_i, x_j) + linear part`, with `K` in f64.
fn oracle_objective(m: &SvmModel, data: &Dataset, t: SvmType, eps: f64) -> f64 {
    let k: KernelSpec = m.kernel;
    let idx = m.sv_indices.as_ref().unwrap();
    let c = &m.sv_coef[0];
    let mut quad = 0.0;
    for a in 0..idx.len() {
        for b in 0..idx.len() {
            quad += c[a] * c[b] * k.eval(data.x.row(idx[a]), data.x.row(idx[b]));
        }
    }
    let lin: f64 = match t {
        SvmType::CSvc => -c.iter().map(|v| v.abs()).sum::<f64>(),
        SvmType::EpsSvr => idx
            .iter()
            .zip(c)
            .map(|(&i, &v)| eps * v.abs() - data.y[i] * v)
            .sum(),
        _ => 0.0,
    };
    0.5 * quad + lin
}

#[test]
fn with_shrinking_the_optimum_is_the_single_process_one() {
    let cases = [
        (
            "heart",
            read("clf/heart_scale.train.svm", false),
            SvmType::CSvc,
            4.0,
        ),
        (
            "heart sparse",
            read("clf/heart_scale.train.svm", true),
            SvmType::CSvc,
            4.0,
        ),
        (
            "boston",
            read("reg/boston.train.svm", false),
            SvmType::EpsSvr,
            2.0,
        ),
    ];
    for (tag, data, t, c) in cases {
        let params = rbf(t, Shrinking::On).c(c).tol(1e-6);
        let (m1, obj1) = single(&params, &data);
        let want = oracle_objective(&m1, &data, t, 0.1);
        for p in [2, 3, 4] {
            for cut in cuts(data.len(), p) {
                for (m, o) in fit_sharded(&params, &data, &cut) {
                    let got = oracle_objective(&m, &data, t, 0.1);
                    let rel = |a: f64, b: f64| (a - b).abs() / b.abs().max(1.0);
                    assert!(
                        rel(got, want) <= 1e-6,
                        "{tag} {cut:?}: oracle objective {got} vs single {want}"
                    );
                    assert!(
                        rel(o, obj1) <= 1e-6,
                        "{tag} {cut:?}: reported {o} vs single {obj1}"
                    );
                }
            }
        }
    }
}

#[test]
fn one_class_of_data_is_an_error_on_every_shard() {
    let data = read("clf/heart_scale.train.svm", false);
    let keep: Vec<usize> = (0..data.len()).filter(|&i| data.y[i] > 0.0).collect();
    let one = data.subset(&keep);
    let params = rbf(SvmType::CSvc, Shrinking::On).check().unwrap();
    let n = one.len();
    let cuts = [0, n / 2, n];
    let labels = first_appearances(one.y.iter().copied());
    let errs: Vec<String> = std::thread::scope(|s| {
        let hs: Vec<_> = nets(2)
            .into_iter()
            .enumerate()
            .map(|(k, mut net)| {
                let d = one.subset(&(cuts[k]..cuts[k + 1]).collect::<Vec<_>>());
                let (params, labels) = (&params, labels.clone());
                s.spawn(move || {
                    let shard = KernelShard {
                        n_samples: n,
                        first: cuts[k],
                        labels,
                        comm: &mut net,
                    };
                    svm::fit_shard(params, &d, shard, &mut Control::default())
                        .err()
                        .map(|e| e.to_string())
                        .unwrap_or_default()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for e in errs {
        assert!(e.contains("class"), "{e}");
    }
}

/// Stops at the observer's `at`-th call (the solvers call it every 1,000 iterations, at the same
/// iterations in one process and on every shard).
struct StopAt {
    calls: usize,
    at: usize,
}

impl Observer for StopAt {
    fn on_iter(&mut self, _: &IterStats) -> ControlFlow<()> {
        self.calls += 1;
        if self.calls >= self.at {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }
}

type SvmFit = Fit<SvmModel, FitReport, FitCheckpoint>;

/// Every shard's fit of `data` cut at `cuts`, continuing `resume` and stopping at the
/// observer's `stop_at`-th call when given.
fn fit_shards(
    params: &SvmParams,
    data: &Dataset,
    cuts: &[usize],
    resume: Option<&FitCheckpoint>,
    stop_at: Option<usize>,
) -> Vec<Result<SvmFit, String>> {
    fit_shards_in(params, data, cuts, resume, stop_at, None)
}

/// [`fit_shards`], each shard in a pool of `threads` threads when given (else rayon's global
/// pool).
fn fit_shards_in(
    params: &SvmParams,
    data: &Dataset,
    cuts: &[usize],
    resume: Option<&FitCheckpoint>,
    stop_at: Option<usize>,
    threads: Option<usize>,
) -> Vec<Result<SvmFit, String>> {
    let params = params.clone().check().unwrap();
    let p = cuts.len() - 1;
    let n = data.len();
    let shards: Vec<Dataset> = (0..p)
        .map(|k| data.subset(&(cuts[k]..cuts[k + 1]).collect::<Vec<_>>()))
        .collect();
    let labels = first_appearances(shards.iter().flat_map(|d| d.labels_in_order()));
    std::thread::scope(|s| {
        let handles: Vec<_> = nets(p)
            .into_iter()
            .zip(&shards)
            .enumerate()
            .map(|(k, (net, d))| {
                let (params, labels) = (&params, labels.clone());
                s.spawn(move || {
                    let job = move || {
                        let mut net = net;
                        let shard = KernelShard {
                            n_samples: n,
                            first: cuts[k],
                            labels,
                            comm: &mut net,
                        };
                        let stop = StopAt {
                            calls: 0,
                            at: stop_at.unwrap_or(usize::MAX),
                        };
                        let mut ctl = Control::new(stop).resume_opt(resume);
                        svm::fit_shard(params, d, shard, &mut ctl).map_err(|e| e.to_string())
                    };
                    match threads {
                        Some(t) => rayon::ThreadPoolBuilder::new()
                            .num_threads(t)
                            .build()
                            .unwrap()
                            .install(job),
                        None => job(),
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// The one fit every shard returned (they must agree on the model and the checkpoint).
fn agreed(fits: Vec<Result<SvmFit, String>>) -> SvmFit {
    let fits: Vec<SvmFit> = fits.into_iter().map(Result::unwrap).collect();
    let bytes = |f: &SvmFit| f.checkpoint.as_ref().map(FitCheckpoint::to_bytes);
    for f in &fits[1..] {
        assert!(f.model == fits[0].model, "the shards' models differ");
        assert!(
            bytes(f) == bytes(&fits[0]),
            "the shards' checkpoints differ"
        );
    }
    fits.into_iter().next().unwrap()
}

fn single_fit(
    params: &SvmParams,
    data: &Dataset,
    resume: Option<&FitCheckpoint>,
    stop_at: Option<usize>,
) -> SvmFit {
    let stop = StopAt {
        calls: 0,
        at: stop_at.unwrap_or(usize::MAX),
    };
    svm::fit(
        &params.clone().check().unwrap(),
        data,
        &mut Control::new(stop).resume_opt(resume),
    )
    .unwrap()
}

/// Three overlapping classes in the plane (deterministic): with a large C the pairs take
/// thousands of SMO iterations.
fn three_classes(per_class: usize) -> Dataset {
    let n = 3 * per_class;
    let noise = |i: usize, k: u64| {
        let h = (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)
            ^ k.wrapping_mul(0xbf58_476d_1ce4_e5b9);
        let h = h ^ (h >> 31);
        (h % 10_000) as f64 / 10_000.0 - 0.5
    };
    let mut v = Vec::with_capacity(2 * n);
    let mut y = Vec::with_capacity(n);
    for i in 0..n {
        let c = i % 3;
        v.push(c as f64 * 0.4 + 2.0 * noise(i, 1));
        v.push((c as f64 * 1.3).sin() * 0.4 + 2.0 * noise(i, 2));
        y.push(c as f64);
    }
    Dataset::new(Features::Dense(DenseMatrix::new(n, 2, v).unwrap()), y, None).unwrap()
}

/// The observer call that stops the second pair of a three-class fit, with the first done: the
/// calls the first pair makes, plus one (the second pair must make a call).
fn stop_in_second_pair(params: &SvmParams, data: &Dataset) -> usize {
    let full = single_fit(params, data, None, None);
    let it = |k: usize| full.report.subproblems[k].iterations as usize;
    assert!(
        it(1) > 1000,
        "the second pair must run past one observer call: {}",
        it(1)
    );
    it(0) / 1000 + 1
}

#[test]
fn stopped_and_continued_without_shrinking_is_the_single_process_model() {
    let data = three_classes(150);
    let params = rbf(SvmType::CSvc, Shrinking::Off).c(1000.0);
    let want = bytes(&single_fit(&params, &data, None, None).model);
    let at = stop_in_second_pair(&params, &data);
    let stopped = single_fit(&params, &data, None, Some(at));
    let one = stopped.checkpoint.expect("stopped");
    // One pair finished, one stopped, one not started, as one process records them.
    assert_eq!((one.n_subproblems(), one.n_done()), (3, 1));
    let n = data.len();
    for cut in [vec![0, n / 2, n], vec![0, n / 7, n / 7, n]] {
        let fit = agreed(fit_shards(&params, &data, &cut, None, Some(at)));
        assert_eq!(fit.report.status(), Status::Interrupted);
        let ck = fit.checkpoint.expect("stopped");
        // Without shrinking the sharded solve is the single process's, bit for bit: so is
        // the state file.
        assert!(
            ck.to_bytes() == one.to_bytes(),
            "{cut:?}: the state file differs"
        );
        for other in [vec![0, n], vec![0, n / 3, 2 * n / 3, n], vec![0, n / 2, n]] {
            let fit = agreed(fit_shards(&params, &data, &other, Some(&ck), None));
            assert!(bytes(&fit.model) == want, "{cut:?} continued at {other:?}");
            assert!(fit.checkpoint.is_none());
        }
        let fit = single_fit(&params, &data, Some(&ck), None);
        assert!(
            bytes(&fit.model) == want,
            "{cut:?} continued by one process"
        );
    }
    // A single process's state, continued by shards.
    let fit = agreed(fit_shards(&params, &data, &[0, n / 3, n], Some(&one), None));
    assert!(bytes(&fit.model) == want);
}

/// Stopped by the iteration limit past several shrinking steps of every pair (every 300
/// iterations), where the shards' shrunk orders matter on this data (a continuation in another
/// local order, e.g. the listed one reversed, gives another model at the same split).
#[test]
fn with_shrinking_a_continuation_at_the_same_split_is_the_uninterrupted_run() {
    let data = three_classes(150);
    let params = rbf(SvmType::CSvc, Shrinking::On).c(1000.0);
    let stop = params.clone().max_iter(3000);
    let whole = single_fit(&params, &data, None, None);
    let n = data.len();
    for cut in [vec![0, n / 2, n], vec![0, n / 7, n / 7, n]] {
        let want = agreed(fit_shards(&params, &data, &cut, None, None));
        let ck = agreed(fit_shards(&stop, &data, &cut, None, None))
            .checkpoint
            .expect("stopped");
        let fit = agreed(fit_shards(&params, &data, &cut, Some(&ck), None));
        assert!(
            bytes(&fit.model) == bytes(&want.model),
            "{cut:?}: continued at the same split, the model differs"
        );
        // Elsewhere: the same optimum.
        let others = [
            single_fit(&params, &data, Some(&ck), None),
            agreed(fit_shards(
                &params,
                &data,
                &[0, n / 3, 2 * n / 3, n],
                Some(&ck),
                None,
            )),
        ];
        for f in others {
            for (a, b) in f.report.subproblems.iter().zip(&whole.report.subproblems) {
                let rel = (a.objective - b.objective).abs() / b.objective.abs().max(1.0);
                assert!(
                    rel <= 1e-6,
                    "{cut:?}: objective {} vs {}",
                    a.objective,
                    b.objective
                );
            }
        }
    }
}

#[test]
fn one_class_and_svr_stopped_by_the_iteration_limit_continue_exactly() {
    let heart = read("clf/heart_scale.train.svm", false);
    let boston = read("reg/boston.train.svm", false);
    let cases = [
        (rbf(SvmType::OneClass, Shrinking::Off).nu(0.3), heart),
        (rbf(SvmType::EpsSvr, Shrinking::Off).c(2.0), boston),
    ];
    for (params, data) in cases {
        let want = bytes(&single_fit(&params, &data, None, None).model);
        let n = data.len();
        let stop = params.clone().max_iter(40);
        let fit = agreed(fit_shards(&stop, &data, &[0, n / 2, n], None, None));
        assert_eq!(fit.report.status(), Status::MaxIterations);
        let ck = fit.checkpoint.expect("stopped by the limit");
        let fit = agreed(fit_shards(
            &params,
            &data,
            &[0, n / 5, n / 2, n],
            Some(&ck),
            None,
        ));
        assert!(bytes(&fit.model) == want);
        assert!(bytes(&single_fit(&params, &data, Some(&ck), None).model) == want);
    }
}

#[test]
fn a_state_of_other_parameters_or_different_states_are_refused_on_every_shard() {
    let data = read("clf/heart_scale.train.svm", false);
    let n = data.len();
    let params = rbf(SvmType::CSvc, Shrinking::Off).c(4.0);
    let ck = agreed(fit_shards(
        &params.clone().max_iter(30),
        &data,
        &[0, n / 2, n],
        None,
        None,
    ))
    .checkpoint
    .unwrap();
    for r in fit_shards(
        &params.clone().c(8.0),
        &data,
        &[0, n / 2, n],
        Some(&ck),
        None,
    ) {
        let Err(e) = r else {
            panic!("a state of -c 4 continued with -c 8")
        };
        assert!(e.contains("-c 4 (now -c 8)"), "{e}");
    }
    // Shards given different states (or one none) would solve different problems.
    let other = single_fit(&params.clone().max_iter(60), &data, None, None)
        .checkpoint
        .unwrap();
    let p = params.check().unwrap();
    let cuts = [0, n / 2, n];
    let labels = first_appearances(data.y.iter().copied());
    let errs: Vec<String> = std::thread::scope(|s| {
        let hs: Vec<_> = nets(2)
            .into_iter()
            .enumerate()
            .map(|(k, mut net)| {
                let d = data.subset(&(cuts[k]..cuts[k + 1]).collect::<Vec<_>>());
                let (p, labels) = (&p, labels.clone());
                let state = if k == 0 { &ck } else { &other };
                s.spawn(move || {
                    let shard = KernelShard {
                        n_samples: n,
                        first: cuts[k],
                        labels,
                        comm: &mut net,
                    };
                    let mut ctl = Control::default().resume_from(state);
                    svm::fit_shard(p, &d, shard, &mut ctl)
                        .err()
                        .map(|e| e.to_string())
                        .unwrap_or_default()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for e in errs {
        assert!(e.contains("different states"), "{e}");
    }
}

/// The block engine with a working set of `q` (of `vars` variables per problem): the cache
/// budget of which [`svm::fit`] gives half to the working set's columns.
fn block(params: SvmParams, q: u64, vars: u64) -> SvmParams {
    params.engine(SvmSolver::Block).cache_bytes(8 * q * vars)
}

#[test]
fn block_engine_is_the_single_process_block_model() {
    for sparse in [false, true] {
        let heart = read("clf/heart_scale.train.svm", sparse);
        let n = heart.len() as u64;
        same_bytes(
            &format!("block heart sparse={sparse}"),
            &block(rbf(SvmType::CSvc, Shrinking::Off).c(4.0), 16, n),
            &heart,
            &[1, 2, 3, 4],
        );
    }
    let heart = read("clf/heart_scale.train.svm", false);
    let n = heart.len() as u64;
    same_bytes(
        "block one-class",
        &block(rbf(SvmType::OneClass, Shrinking::Off).nu(0.3), 20, n),
        &heart,
        &[2, 3],
    );
    let boston = read("reg/boston.train.svm", false);
    let n = boston.len() as u64;
    same_bytes(
        "block svr",
        &block(rbf(SvmType::EpsSvr, Shrinking::Off).c(2.0), 24, 2 * n),
        &boston,
        &[1, 2, 4],
    );
    let iris = read("multiclass/iris.scale.svm", false);
    let n = iris.len() as u64;
    same_bytes(
        "block iris",
        &block(rbf(SvmType::CSvc, Shrinking::Off), 12, n),
        &iris,
        &[1, 3],
    );
    let k = KernelParams {
        kind: KernelKind::Poly,
        ..KernelParams::default()
    };
    let n = heart.len() as u64;
    same_bytes(
        "block poly",
        &block(rbf(SvmType::CSvc, Shrinking::Off).kernel(k), 16, n),
        &heart,
        &[2],
    );
}

#[test]
fn block_engine_reaches_the_pair_engines_optimum() {
    let heart = read("clf/heart_scale.train.svm", true);
    let params = rbf(SvmType::CSvc, Shrinking::On).c(4.0).tol(1e-6);
    let (pair, _) = single(&params, &heart);
    let want = oracle_objective(&pair, &heart, SvmType::CSvc, 0.1);
    let n = heart.len();
    let b = block(params, 16, n as u64);
    for (m, _) in fit_sharded(&b, &heart, &[0, n / 3, n / 3, n]) {
        let got = oracle_objective(&m, &heart, SvmType::CSvc, 0.1);
        assert!(
            (got - want).abs() <= 1e-6 * want.abs().max(1.0),
            "block {got} vs pair {want}"
        );
    }
}

#[test]
fn block_engine_does_not_depend_on_the_threads() {
    // Local rows past one gradient chunk (2,048), so the gradient pass splits across threads.
    let data = three_classes(900);
    let n = data.len();
    let params = block(rbf(SvmType::OneClass, Shrinking::Off).nu(0.2), 64, n as u64);
    let (want, _) = single(&params, &data);
    let want = bytes(&want);
    for threads in [1, 2] {
        let fits = fit_shards_in(&params, &data, &[0, n], None, None, Some(threads));
        let fit = agreed(fits);
        assert!(bytes(&fit.model) == want, "{threads} threads");
    }
}

#[test]
fn block_engine_stopped_records_the_problem_as_not_started() {
    // The shards keep no block snapshot: the stopped problem starts over on resume. One
    // process keeps one, which the shards also start over.
    let data = three_classes(150);
    let params = block(rbf(SvmType::CSvc, Shrinking::Off).c(1000.0), 16, 100);
    let want = bytes(&single_fit(&params, &data, None, None).model);
    let one = single_fit(&params, &data, None, Some(2))
        .checkpoint
        .expect("stopped");
    let n = data.len();
    let fit = agreed(fit_shards(&params, &data, &[0, n / 2, n], None, Some(2)));
    assert_eq!(fit.report.status(), Status::Interrupted);
    let ck = fit.checkpoint.expect("stopped");
    assert_eq!(ck.n_done(), one.n_done());
    assert!(
        ck.to_bytes() != one.to_bytes(),
        "one process keeps the block snapshot"
    );
    for state in [&ck, &one] {
        let fit = agreed(fit_shards(
            &params,
            &data,
            &[0, n / 3, n],
            Some(state),
            None,
        ));
        assert!(bytes(&fit.model) == want);
        let fit = single_fit(&params, &data, Some(state), None);
        assert!(bytes(&fit.model) == want);
    }
}

#[test]
fn the_nu_formulations_are_refused_on_every_shard_with_either_engine() {
    // The shards solve the one-equality problem (the pair engine's shards and the block
    // engine's alike): nu-SVC and nu-SVR, which one process's block engine runs, are an error
    // naming what a split data set is trained by, on every shard.
    let heart = read("clf/heart_scale.train.svm", false);
    let n = heart.len();
    for t in [SvmType::NuSvc, SvmType::NuSvr] {
        for engine in [SvmSolver::Block, SvmSolver::Smo] {
            let params = rbf(t, Shrinking::Off).engine(engine);
            for fit in fit_shards(&params, &heart, &[0, n / 2, n], None, None) {
                let Err(e) = fit else {
                    panic!("{t:?} {engine:?}: a shard fitted");
                };
                assert!(e.contains("C-SVC, one-class and epsilon-SVR"), "{e}");
            }
        }
    }
}
