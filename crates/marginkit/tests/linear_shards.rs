//! The primal Newton solvers (`-s 2`, `-s 11`) on a data set split by rows into P shards, each
//! on its own thread, the reductions a pipeline over channels (shard 0 adds its chunks to zeros
//! and passes the running sum on; the last shard sends the total to all): the model of every
//! shard is the single-process model bit for bit, for dense and sparse data, with one and with
//! several chunks, with and without a bias feature, and with shards that hold no rows.

use std::ops::Range;
use std::sync::mpsc::{channel, Receiver, Sender};

use marginkit::data::first_appearances;
use marginkit::fit::Control;
use marginkit::solver::newton::{cut_chunks, row_work, ChunkSums};
use marginkit::svm::linear::{self, LinearModel, LinearParams, LinearShard, LinearSolver};
use marginkit::{CsrMatrix, Dataset, DenseMatrix, Features};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// One shard's end of the pipeline.
struct Pipe {
    from_prev: Option<Receiver<Vec<f64>>>,
    to_next: Option<Sender<Vec<f64>>>,
    /// The last shard's senders of the total to every other shard.
    to_all: Vec<Sender<Vec<f64>>>,
    from_last: Option<Receiver<Vec<f64>>>,
}

impl Pipe {
    /// Runs `step(buf, first)` on every shard in order, the running value passed along, and
    /// leaves the final value in `buf` everywhere.
    fn run(&mut self, buf: &mut [f64], step: &mut dyn FnMut(&mut [f64], bool)) {
        let first = match &self.from_prev {
            Some(rx) => {
                buf.copy_from_slice(&rx.recv().unwrap());
                false
            }
            None => true,
        };
        step(buf, first);
        if let Some(tx) = &self.to_next {
            tx.send(buf.to_vec()).unwrap();
            buf.copy_from_slice(&self.from_last.as_ref().unwrap().recv().unwrap());
        } else {
            for tx in &self.to_all {
                tx.send(buf.to_vec()).unwrap();
            }
        }
    }
}

impl ChunkSums for Pipe {
    fn sum(&mut self, buf: &mut [f64], add_local: &mut dyn FnMut(&mut [f64], bool)) {
        self.run(buf, add_local);
    }
    fn max(&mut self, buf: &mut [f64]) {
        let mine = buf.to_vec();
        self.run(buf, &mut |b, first| {
            for (v, &m) in b.iter_mut().zip(&mine) {
                *v = if first { m } else { v.max(m) };
            }
        });
    }
}

fn pipes(p: usize) -> Vec<Pipe> {
    let mut out: Vec<Pipe> = (0..p)
        .map(|_| Pipe {
            from_prev: None,
            to_next: None,
            to_all: Vec::new(),
            from_last: None,
        })
        .collect();
    for k in 1..p {
        let (tx, rx) = channel();
        out[k - 1].to_next = Some(tx);
        out[k].from_prev = Some(rx);
        let (tx, rx) = channel();
        out[p - 1].to_all.push(tx);
        out[k - 1].from_last = Some(rx);
    }
    out
}

/// `n` rows, `d` features, about `density` non-zero; two classes, or a noisy linear target.
fn data(seed: u64, n: usize, d: usize, density: f64, sparse: bool, regression: bool) -> Dataset {
    let mut g = Xoshiro256PlusPlus::seed_from_u64(seed);
    let (mut v, mut y) = (Vec::with_capacity(n * d), Vec::with_capacity(n));
    for _ in 0..n {
        let c = if g.gen_bool(0.3) { 1.0 } else { -1.0 };
        let mut t = 0.0;
        for k in 0..d {
            let z = if g.gen_bool(density) {
                g.gen_range(-1.0..1.0) + 0.4 * c * ((k % 3) as f64 - 0.5)
            } else {
                0.0
            };
            t += z * ((k % 5) as f64 - 2.0);
            v.push(z);
        }
        y.push(if regression {
            t + g.gen_range(-0.3..0.3)
        } else {
            c
        });
    }
    let x = if sparse {
        let (mut ptr, mut idx, mut val) = (vec![0], Vec::new(), Vec::new());
        for i in 0..n {
            for k in 0..d {
                if v[i * d + k] != 0.0 {
                    idx.push(k as u32);
                    val.push(v[i * d + k]);
                }
            }
            ptr.push(idx.len());
        }
        Features::Sparse(CsrMatrix::new(d, ptr, idx, val).unwrap())
    } else {
        Features::Dense(DenseMatrix::new(n, d, v).unwrap())
    };
    Dataset::new(x, y, None).unwrap()
}

/// Fits `data` in `p` shards (chunk k on the shard that holds its first row when the rows are
/// split evenly; shards past the chunk count hold none) and returns every shard's model.
fn fit_sharded(params: &LinearParams, data: &Dataset, p: usize) -> Vec<LinearModel> {
    let params = params.clone().check().unwrap();
    let n = data.len();
    let dim = data.n_features() + usize::from(params.bias().is_some());
    let cut = cut_chunks(&row_work(&data.x), dim);
    // Even row blocks decide where each chunk goes; then each shard takes whole chunks.
    let owner = |row: usize| (row * p / n.max(1)).min(p - 1);
    let mut parts: Vec<Vec<Range<usize>>> = vec![Vec::new(); p];
    for c in &cut {
        parts[owner(c.start)].push(c.clone());
    }
    let pieces: Vec<(Dataset, Vec<Range<usize>>, Vec<f64>)> = parts
        .iter()
        .map(|chunks| {
            let rows: Vec<usize> = chunks.iter().flat_map(|r| r.clone()).collect();
            let first = rows.first().copied().unwrap_or(0);
            let sub = data.subset(&rows);
            let local = chunks
                .iter()
                .map(|r| r.start - first..r.end - first)
                .collect();
            let labels = sub.labels_in_order();
            (sub, local, labels)
        })
        .collect();
    let labels = first_appearances(pieces.iter().flat_map(|p| p.2.iter().copied()));
    let models = std::thread::scope(|s| {
        let handles: Vec<_> = pieces
            .into_iter()
            .zip(pipes(p))
            .map(|((sub, chunks, _), mut pipe)| {
                let (params, labels) = (&params, labels.clone());
                s.spawn(move || {
                    let shard = LinearShard {
                        n_samples: n,
                        labels,
                        chunks,
                        sums: &mut pipe,
                    };
                    linear::fit_shard(params, &sub, shard, &mut Control::default())
                        .unwrap()
                        .model
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    });
    models
}

fn bits(m: &LinearModel) -> Vec<u64> {
    (0..m.n_weight_vectors())
        .flat_map(|k| m.weights(k).iter().map(|v| v.to_bits()).collect::<Vec<_>>())
        .collect()
}

fn check(params: LinearParams, data: &Dataset, min_chunks: usize) {
    let valid = params.clone().check().unwrap();
    let dim = data.n_features() + usize::from(valid.bias().is_some());
    let chunks = cut_chunks(&row_work(&data.x), dim).len();
    assert!(chunks >= min_chunks, "{chunks} chunks");
    let one = linear::fit(&valid, data, &mut Control::default())
        .unwrap()
        .model;
    for p in [1, 2, 3, 5] {
        for m in fit_sharded(&params, data, p) {
            assert_eq!(m.labels(), one.labels(), "P = {p}");
            assert_eq!(m.n_features(), one.n_features());
            assert_eq!(bits(&m), bits(&one), "P = {p}, {chunks} chunks");
        }
    }
}

#[test]
fn svc_dense_and_sparse_one_chunk() {
    for sparse in [false, true] {
        let d = data(1, 300, 6, 0.7, sparse, false);
        check(
            LinearParams::new(LinearSolver::L2LossSvcPrimal).c(2.0),
            &d,
            1,
        );
        check(
            LinearParams::new(LinearSolver::L2LossSvcPrimal).bias(1.0),
            &d,
            1,
        );
    }
}

#[test]
fn svc_several_chunks_and_empty_shards() {
    // nnz well above 2 * 32768 with few features: several chunks, and P = 5 exceeds some cuts.
    for sparse in [false, true] {
        let d = data(2, 12_000, 10, 0.8, sparse, false);
        check(
            LinearParams::new(LinearSolver::L2LossSvcPrimal)
                .bias(1.0)
                .eps(1e-4),
            &d,
            3,
        );
    }
}

#[test]
fn svr_several_chunks() {
    for sparse in [false, true] {
        let d = data(3, 10_000, 10, 0.9, sparse, true);
        check(
            LinearParams::new(LinearSolver::L2LossSvrPrimal).p(0.1),
            &d,
            3,
        );
        check(
            LinearParams::new(LinearSolver::L2LossSvrPrimal)
                .p(0.1)
                .bias(1.0),
            &d,
            3,
        );
    }
}

#[test]
fn multiclass_one_vs_rest() {
    let mut d = data(4, 9_000, 8, 0.9, false, false);
    for (i, y) in d.y.iter_mut().enumerate() {
        if i % 7 == 3 {
            *y = 5.0;
        }
    }
    check(LinearParams::new(LinearSolver::L2LossSvcPrimal), &d, 2);
}

#[test]
fn an_invalid_shard_fails_every_shard() {
    // One shard's weights are negative: every shard returns an error, none hangs.
    let d = data(5, 400, 4, 1.0, false, false);
    let params = LinearParams::new(LinearSolver::L2LossSvcPrimal)
        .check()
        .unwrap();
    let labels = d.labels_in_order();
    let halves = [d.subset(&(0..200).collect::<Vec<_>>()), {
        let mut h = d.subset(&(200..400).collect::<Vec<_>>());
        h.weights = Some(vec![-1.0; 200]);
        h
    }];
    let errs: Vec<bool> = std::thread::scope(|s| {
        let hs: Vec<_> = halves
            .iter()
            .zip(pipes(2))
            .map(|(h, mut pipe)| {
                let (params, labels) = (&params, labels.clone());
                s.spawn(move || {
                    let shard = LinearShard {
                        n_samples: 400,
                        labels,
                        chunks: std::iter::once(0..200).collect(),
                        sums: &mut pipe,
                    };
                    linear::fit_shard(params, h, shard, &mut Control::default()).is_err()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(errs, vec![true, true]);
}
