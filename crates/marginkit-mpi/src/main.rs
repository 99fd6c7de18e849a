//! `marginkit-mpi`: marginkit's MPI front end, four commands.
//!
//! `marginkit-mpi train -s 0|2|3 -t 0..3 TRAIN [MODEL]` (module [`kernel`]): LIBSVM's C-SVC,
//! one-class and epsilon-SVR on rows split across the ranks, each rank reading only its block of
//! TRAIN, by the library's row-partitioned SMO: per iteration two all-gathers of a small record
//! per rank select the working pair and at most two broadcasts send its rows; each rank computes
//! its slice of the kernel columns. With `-h 0` the model file is the single-process one byte
//! for byte. A run stopped early (Ctrl-C, `--max-iter`) writes the single process's state file,
//! which `--resume` continues at any number of ranks (module [`state`]).
//!
//! `marginkit-mpi train --linear -s 2|11 TRAIN [MODEL]` (module [`train`]): LIBLINEAR's primal
//! L2-loss SVC / SVR on rows split across the ranks, each rank reading only its block of TRAIN;
//! the library's truncated Newton method runs on every rank with its row sums reduced in the
//! single-process order, so the model file is the single-process one byte for byte.
//!
//! `marginkit-mpi aid lad [FLAGS] TRAIN [MODEL]` (module [`lad`]): AID-LAD with every rank
//! holding only the rows it read (the reader of `train`); the cluster sums, the full-data
//! objective and the k-means update are pipelined over the ranks in row order, the residual
//! signs per cluster OR-reduced, the aggregated LP solved on rank 0: the model file is the one
//! `marginkit aid lad` writes with the same flags, byte for byte.
//!
//! `marginkit-mpi meb|svdd|svm|oneclass DATA ...`: the core-set consensus (Algorithm 1 of
//! Notarstefano, CDC 2015) with one network node per MPI rank.
//!
//! Every rank reads DATA and keeps its contiguous shard (`rank n / size .. (rank+1) n / size`),
//! exactly the shards of `marginkit coreset --nodes SIZE`; or, when DATA contains `{rank}`
//! (`part{rank}.svm`), every rank reads its own file, ids continue across ranks in rank order, and
//! the coverage ratio (against the core-set's radius: no rank holds all data) and the training
//! accuracy are reduced over the ranks. The communication graph, losses,
//! delays and activations of every round are counter-based hashes of the seed, so every rank knows
//! its in- and out-neighbours without communication: a node sends its core-set to each
//! out-neighbour with a non-blocking send (tag = round) and receives one message from each
//! in-neighbour; in asynchronous mode the receives are non-blocking probes polled until all of the
//! round's messages are in. Collectives: one all-reduce of the shard sizes at the start (the
//! core-set size `k = min(ceil(1/eps), n)` must be the same on every rank), and per round an
//! all-gather of `RoundSummary::WORDS` words: the global quiescence diagnostic and the count of nodes
//! stopped by the local rule (each rank decides alone when its node stops; the process ends when
//! all have, as in the in-process run). With the same seed and graph the result is the in-process
//! run's, bit for bit. The report is the library's `RunSummary`, as in `marginkit coreset`.
//!
//! Not implemented: free-running wall-clock asynchrony (ranks never wait for each other); it
//! cannot be reproduced bit for bit, and the seeded activation schedule models the paper's
//! asynchrony instead.

mod kernel;
mod lad;
mod state;
mod stop;
mod train;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use clap::{ArgAction, Parser, ValueEnum};
use marginkit::coreset::consensus::{
    self, shard_ranges, ConsensusData, CoreSetMsg, RoundSummary, Schedule, Transport,
};
use marginkit::coreset::quality::{coverage_ratio, reference_r2};
use marginkit::coreset::summary::{accuracy, consensus_svg, correct_count, RunSummary};
use marginkit::coreset::{
    points_for, Activation, ConsensusParams, CoresetError, CoresetParams, Graph, PointSet, Problem,
    StopRule,
};
use marginkit::data::libsvm_fmt::{read_libsvm_path, ReadOptions};
use marginkit::data::write_output;
use marginkit::fit::Control;
use marginkit::svm::model_io::save_model;
use marginkit::svm::KernelParams;
use marginkit::{Dataset, IoError};
use mpi::collective::SystemOperation;
use mpi::datatype::Equivalence;
use mpi::point_to_point::{Destination, Source};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::CommunicatorCollectives;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Stop {
    Local,
    Global,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Kind {
    Meb,
    Svdd,
    Svm,
    Oneclass,
}

/// marginkit-mpi: core-set consensus with one node per MPI rank (same flags as `marginkit
/// coreset`; the number of nodes is the number of ranks).
#[derive(Debug, Parser)]
#[command(name = "marginkit-mpi", version, disable_help_flag = true)]
struct Cli {
    /// The problem.
    #[arg(value_enum)]
    problem: Kind,
    /// Training data (LIBSVM text); every rank keeps its shard. With `{rank}` in the name every
    /// rank reads its own file.
    data_file: PathBuf,
    /// Tolerance eps in (0, 1).
    #[arg(long, default_value_t = 0.1)]
    eps: f64,
    /// kernel_type: 0 linear, 1 polynomial, 2 RBF, 3 sigmoid.
    #[arg(short = 't', default_value_t = 2)]
    kernel_type: u8,
    /// gamma (default 1/num_features).
    #[arg(short = 'g')]
    gamma: Option<f64>,
    /// degree of the polynomial kernel.
    #[arg(short = 'd', default_value_t = 3)]
    degree: u32,
    /// coef0.
    #[arg(short = 'r', default_value_t = 0.0, allow_negative_numbers = true)]
    coef0: f64,
    /// C of the 2-norm SVMs.
    #[arg(short = 'c', default_value_t = 1.0, allow_negative_numbers = true)]
    cost: f64,
    /// Must equal the number of ranks when given (one node per rank).
    #[arg(long)]
    nodes: Option<usize>,
    /// er:P, ring, grid, complete or edges:FILE.
    #[arg(long, default_value = "er:0.1")]
    graph: String,
    /// Asynchronous activation probability.
    #[arg(long = "async", num_args = 0..=1, default_missing_value = "0.5")]
    async_p: Option<f64>,
    /// Message loss probability.
    #[arg(long, default_value_t = 0.0)]
    drop: f64,
    /// Maximal message delay in rounds.
    #[arg(long, default_value_t = 0)]
    delay: u32,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Round budget.
    #[arg(long, default_value_t = 10_000)]
    max_rounds: u64,
    /// Stopping rule: local (no change of a node's core-set for W = 2 D + 1 rounds) or global
    /// (the quiescence diagnostic), as `marginkit coreset --stop`.
    #[arg(long, value_enum, default_value_t = Stop::Local)]
    stop: Stop,
    /// The local rule's window W.
    #[arg(long)]
    window: Option<u64>,
    /// Test data (svm).
    #[arg(long)]
    test: Option<PathBuf>,
    /// Write the model (rank 0).
    #[arg(long)]
    model: Option<PathBuf>,
    /// Write Figures 1-2 as SVG (rank 0 gathers every rank's history).
    #[arg(long)]
    plot: Option<PathBuf>,
    /// One JSON object on stdout (rank 0).
    #[arg(long)]
    json: bool,
    /// Quiet.
    #[arg(short = 'q')]
    quiet: bool,
    /// Print help.
    #[arg(long, action = ArgAction::Help)]
    help: Option<bool>,
}

/// One node per rank.
struct Mpi<'a> {
    world: &'a SimpleCommunicator,
    rank: usize,
    nonblocking: bool,
}

fn tag(t: u64) -> i32 {
    (t % 30_000) as i32
}

impl Transport for Mpi<'_> {
    fn local_nodes(&self) -> Vec<usize> {
        vec![self.rank]
    }

    fn exchange(
        &self,
        t: u64,
        schedule: &Schedule,
        outgoing: &[(usize, Arc<CoreSetMsg>)],
    ) -> Result<marginkit::coreset::consensus::Inboxes, CoresetError> {
        let me = self.rank;
        let buf: Vec<u8> = outgoing
            .first()
            .map(|(_, m)| m.encode())
            .unwrap_or_default();
        let dests: Vec<usize> = if outgoing.is_empty() {
            Vec::new()
        } else {
            schedule
                .out_edges(t, me)
                .into_iter()
                .filter(|&j| schedule.delivery(t, me, j).is_some())
                .collect()
        };
        let senders = schedule.senders_to(t, me);
        let world = self.world;
        let nonblocking = self.nonblocking;
        let mut got: Vec<(usize, Vec<u8>)> = Vec::with_capacity(senders.len());
        mpi::request::scope(|scope| {
            let reqs: Vec<_> = dests
                .iter()
                .map(|&j| {
                    world
                        .process_at_rank(j as i32)
                        .immediate_send_with_tag(scope, &buf[..], tag(t))
                })
                .collect();
            if nonblocking {
                let mut pending: Vec<usize> = senders.clone();
                while !pending.is_empty() {
                    pending.retain(|&j| {
                        match world
                            .process_at_rank(j as i32)
                            .immediate_matched_probe_with_tag(tag(t))
                        {
                            Some((msg, status)) => {
                                let n = status.count(u8::equivalent_datatype()).max(0) as usize;
                                let mut v = vec![0u8; n];
                                msg.matched_receive_into(&mut v[..]);
                                got.push((j, v));
                                false
                            }
                            None => true,
                        }
                    });
                    if !pending.is_empty() {
                        std::thread::yield_now();
                    }
                }
            } else {
                for &j in &senders {
                    let (v, _) = world
                        .process_at_rank(j as i32)
                        .receive_vec_with_tag::<u8>(tag(t));
                    got.push((j, v));
                }
            }
            for r in reqs {
                r.wait();
            }
        });
        let mut msgs = Vec::with_capacity(got.len());
        for (j, v) in got {
            msgs.push((j, Arc::new(CoreSetMsg::decode(&v)?)));
        }
        msgs.sort_by_key(|(j, _)| *j);
        Ok(vec![msgs])
    }

    fn reduce(&self, local: RoundSummary) -> Result<RoundSummary, CoresetError> {
        let words = local.to_words();
        let size = self.world.size() as usize;
        let mut all = vec![0u64; RoundSummary::WORDS * size];
        self.world.all_gather_into(&words[..], &mut all[..]);
        let mut g = RoundSummary::identity();
        for c in all.chunks_exact(RoundSummary::WORDS) {
            let mut w = [0u64; RoundSummary::WORDS];
            w.copy_from_slice(c);
            g = g.combine(RoundSummary::from_words(&w));
        }
        Ok(g)
    }

    fn sum(&self, local: u64) -> Result<u64, CoresetError> {
        let mut total = 0u64;
        self.world
            .all_reduce_into(&local, &mut total, SystemOperation::sum());
        Ok(total)
    }
}

fn read(p: &PathBuf) -> Result<Dataset, String> {
    read_libsvm_path(p, &ReadOptions::default()).map_err(|e| match e {
        IoError::Parse(pe) => format!("{}:{}:{}: {}", p.display(), pe.line, pe.column, pe.kind),
        other => format!("{}: {other}", p.display()),
    })
}

fn real_main(a: Cli, world: &SimpleCommunicator) -> Result<(), String> {
    let t0 = Instant::now();
    let (rank, size) = (world.rank() as usize, world.size() as usize);
    if let Some(n) = a.nodes {
        if n != size {
            return Err(format!(
                "--nodes {n} but {size} ranks: marginkit-mpi runs one node per rank"
            ));
        }
    }
    let pname = format!("{:?}", a.problem).to_lowercase();
    let problem = match a.problem {
        Kind::Meb => Problem::Meb,
        Kind::Svdd => Problem::Svdd,
        Kind::Svm => Problem::L2Svm { c: a.cost },
        Kind::Oneclass => Problem::OneClassL2 { c: a.cost },
    };
    let kernel = KernelParams::from_libsvm(a.kernel_type, a.gamma, a.coef0, a.degree)
        .map_err(|e| e.to_string())?;
    let params = ConsensusParams::new()
        .coreset(
            CoresetParams::new()
                .problem(problem)
                .kernel(kernel)
                .eps(a.eps)
                .seed(a.seed),
        )
        .graph(a.graph.parse::<Graph>().map_err(|e| e.to_string())?)
        .activation(match a.async_p {
            Some(p) => Activation::Async { p },
            None => Activation::Sync,
        })
        .drop(a.drop)
        .max_delay(a.delay)
        .max_rounds(a.max_rounds)
        .record(a.plot.is_some())
        .stop(match a.stop {
            Stop::Local => StopRule::Local { window: a.window },
            Stop::Global => StopRule::Global,
        })
        .check()
        .map_err(|e| e.to_string())?;
    let name = a.data_file.to_string_lossy().into_owned();
    // DATA with "{rank}": every rank reads its own file; ids continue across ranks in rank order.
    let (whole, local, shard, labels) = if name.contains("{rank}") {
        let path = PathBuf::from(name.replace("{rank}", &rank.to_string()));
        let local = read(&path)?;
        let mut counts = vec![0u64; size];
        world.all_gather_into(&(local.len() as u64), &mut counts[..]);
        let mut widths = vec![0u64; size];
        world.all_gather_into(&(local.n_features() as u64), &mut widths[..]);
        if let Some(r) = counts.iter().position(|&c| c == 0) {
            return Err(CoresetError::EmptyNode {
                node: r,
                n: counts.iter().sum::<u64>() as usize,
                nodes: size,
            }
            .to_string());
        }
        let d = widths.iter().copied().max().unwrap_or(0) as usize;
        let offset: u64 = counts[..rank].iter().sum();
        let mine = local.labels_in_order();
        let send = [
            mine.first().copied().unwrap_or(f64::NAN),
            mine.get(1).copied().unwrap_or(f64::NAN),
            mine.len() as f64,
        ];
        let mut all = vec![0.0f64; 3 * size];
        world.all_gather_into(&send[..], &mut all[..]);
        let mut order: Vec<f64> = Vec::new();
        for c in all.chunks_exact(3) {
            if c[2] > 2.0 && problem != Problem::Meb && matches!(a.problem, Kind::Svm) {
                return Err("svm: more than two classes in a rank's file".into());
            }
            for &l in &c[..2] {
                if !l.is_nan() && !order.contains(&l) {
                    order.push(l);
                }
            }
        }
        let labels = if let Problem::L2Svm { .. } = problem {
            if order.len() != 2 {
                return Err(format!(
                    "svm: the files hold {} classes; exactly two are needed",
                    order.len()
                ));
            }
            [order[0], order[1]]
        } else {
            [1.0, -1.0]
        };
        let idx: Vec<usize> = (0..local.len()).collect();
        let positive = matches!(problem, Problem::L2Svm { .. }).then_some(labels[0]);
        let shard = PointSet::from_dataset_with_ids(&local, &idx, positive, offset, d);
        (None, Some(local), shard, labels)
    } else {
        let data = read(&a.data_file)?;
        let (pts, labels) = points_for(&data, problem).map_err(|e| e.to_string())?;
        // Every rank checks all points, so that all fail together.
        params
            .coreset()
            .feature_kernel(pts.dim())
            .check_points(&pts)
            .map_err(|e| e.to_string())?;
        let range = shard_ranges(pts.len(), size)[rank].clone();
        if range.is_empty() {
            return Err(CoresetError::EmptyNode {
                node: rank,
                n: pts.len(),
                nodes: size,
            }
            .to_string());
        }
        let mut shard = PointSet::new(pts.dim());
        for i in range {
            shard.push_from(&pts, i);
        }
        (Some((data, pts)), None, shard, labels)
    };
    let transport = Mpi {
        world,
        rank,
        nonblocking: a.async_p.is_some(),
    };
    let shards = [(rank, shard)];
    let network = ConsensusData::Distributed {
        nodes: size,
        shards: &shards,
        transport: &transport,
    };
    let fit =
        consensus::fit(&params, &network, &mut Control::default()).map_err(|e| e.to_string())?;
    let rep = &fit.report;
    let shard = &shards[0].1;
    let kern = &fit.model.kernel;
    // Rank 0 gathers every node's history for the figures (point-to-point, after the run).
    let mut history = rep.history.clone();
    if a.plot.is_some() {
        if rank == 0 {
            for r in 1..size {
                let (v, _) = world
                    .process_at_rank(r as i32)
                    .receive_vec_with_tag::<f64>(30_001);
                history.push((r, v.chunks_exact(2).map(|c| (c[0], c[1])).collect()));
            }
        } else {
            let flat: Vec<f64> = rep.history[0].1.iter().flat_map(|&(x, y)| [x, y]).collect();
            world.process_at_rank(0).send_with_tag(&flat[..], 30_001);
        }
    }
    let final_set = &fit.model.set;
    let model = match problem {
        Problem::Meb => None,
        _ => Some(fit.model.to_svm(labels).map_err(|e| e.to_string())?),
    };
    // Own files: the coverage ratio against the core-set's radius and the training accuracy are
    // reduced over the ranks (rank 0 does not hold the data).
    let (cov, r_star2, exact, train_acc) = match &whole {
        Some((data, pts)) => {
            let (r_star2, exact) = reference_r2(pts, kern, final_set);
            let acc = match (&model, a.problem) {
                (Some(m), Kind::Svm) if rank == 0 => {
                    Some(accuracy(m, data).map_err(|e| e.to_string())?)
                }
                _ => None,
            };
            (
                coverage_ratio(pts, kern, final_set, r_star2),
                r_star2,
                exact,
                acc,
            )
        }
        None => {
            let local_cov = coverage_ratio(shard, kern, final_set, final_set.r2);
            let mut all = vec![0.0f64; size];
            world.all_gather_into(&local_cov, &mut all[..]);
            let cov = all.iter().copied().fold(0.0, f64::max);
            let acc = match (&model, a.problem, &local) {
                (Some(m), Kind::Svm, Some(data)) => {
                    let ok = correct_count(m, data).map_err(|e| e.to_string())? as u64;
                    let mut oks = vec![0u64; size];
                    world.all_gather_into(&ok, &mut oks[..]);
                    let mut ns = vec![0u64; size];
                    world.all_gather_into(&(data.len() as u64), &mut ns[..]);
                    Some(
                        100.0 * oks.iter().sum::<u64>() as f64
                            / ns.iter().sum::<u64>().max(1) as f64,
                    )
                }
                _ => None,
            };
            (cov, final_set.r2, false, acc)
        }
    };
    if rank != 0 {
        return Ok(());
    }
    let mut out = RunSummary::new(&pname, a.eps, rep, final_set, (r_star2, exact), cov, size);
    if let Some(model) = &model {
        out.train_accuracy = train_acc;
        if a.problem == Kind::Svm {
            if let Some(tp) = &a.test {
                out.test_accuracy = Some(accuracy(model, &read(tp)?).map_err(|e| e.to_string())?);
            }
        }
        if let Some(mp) = &a.model {
            save_model(mp, model).map_err(|e| format!("{}: {e}", mp.display()))?;
        }
    }
    if let Some(pp) = &a.plot {
        let mut full = rep.clone();
        full.history = history;
        let svg = consensus_svg(
            &full,
            &format!("{size} MPI ranks, {}, eps {}", a.graph, a.eps),
        );
        write_output(pp, |w| std::io::Write::write_all(w, svg.as_bytes()))
            .map_err(|e| format!("{}: {e}", pp.display()))?;
    }
    out.total_seconds = t0.elapsed().as_secs_f64();
    if a.json {
        println!("{}", out.to_json());
    } else if !a.quiet {
        println!("{}", out.text());
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).is_some_and(|a| a == "train") {
        return train_main(args);
    }
    if args.get(1).is_some_and(|a| a == "aid") && args.get(2).is_some_and(|a| a == "lad") {
        return lad::main(args);
    }
    let cli = Cli::parse();
    let Some(universe) = mpi::initialize() else {
        eprintln!("marginkit-mpi: error: MPI could not be initialized");
        return ExitCode::from(1);
    };
    let world = universe.world();
    match real_main(cli, &world) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("marginkit-mpi: error (rank {}): {msg}", world.rank());
            // Every rank checks the same inputs, so all fail together; abort the others anyway.
            world.abort(1)
        }
    }
}

/// `marginkit-mpi train ...`: every rank learns any failure, rank 0 prints it, every rank exits
/// with status 1 (no abort: the ranks leave MPI together).
fn train_main(args: Vec<String>) -> ExitCode {
    let mut rest = vec![format!("{} train", args[0])];
    rest.extend(train::rewrite_class_weights(args[2..].to_vec()));
    let cli = match train::TrainCli::try_parse_from(rest) {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            // Every rank parses the same command line: rank 0 speaks for all.
            let first = mpi::initialize().is_none_or(|u| u.world().rank() == 0);
            if first {
                eprint!("marginkit-mpi: {e}");
            }
            return ExitCode::from(2);
        }
    };
    let Some(universe) = mpi::initialize() else {
        eprintln!("marginkit-mpi: error: MPI could not be initialized");
        return ExitCode::from(1);
    };
    let world = universe.world();
    match train::run(cli, &world) {
        Ok(marginkit::solver::Status::Interrupted) => ExitCode::from(stop::EXIT_INTERRUPTED),
        Ok(_) => ExitCode::SUCCESS,
        Err(train::Failure(msg)) => {
            if world.rank() == 0 {
                eprintln!("marginkit-mpi: error: {msg}");
            }
            ExitCode::from(1)
        }
    }
}
