//! `marginkit-mpi aid lad [FLAGS] TRAIN [MODEL]`: AID-LAD (exact least absolute deviations by
//! aggregate and iterative disaggregate) on rows split across the ranks. The model file is the
//! one `marginkit aid lad` writes with the same flags, byte for byte.
//!
//! Steps (every one collective, so a failure on any rank is learnt by all at the next step):
//! 1. rank 0 checks that MODEL can be written;
//! 2. every rank reads its block of TRAIN (byte ranges cut at line starts, or whole files of a
//!    directory: the reader of `marginkit-mpi train`) with the library's LIBSVM parser;
//! 3. the ranks all-gather their row counts, widths and stored entries: the feature count is the
//!    largest width and the storage (dense or sparse) the one the single-process reader chooses
//!    for the whole file, so every row sees the same arithmetic as on one process;
//! 4. the library's sharded AID-LAD (`aid::lad::shard::fit_shard`) runs with [`Mpi`] as its
//!    reductions. The rows stay where they were read: the ranks' blocks in rank order are the
//!    rows in file order, which is the order every pipeline adds them in. A rank without rows
//!    still takes part in every reduction;
//! 5. rank 0 writes the model with the library's atomic writer.
//!
//! Ctrl-C stops every rank before the same aggregated solve; rank 0 then writes the best model so
//! far and the state file `marginkit aid lad` stopped there would write, but for the measured
//! seconds in it (the cluster ids are gathered to rank 0). `--resume` continues such a file, or one
//! of `marginkit aid lad`, at any number of ranks ([`crate::state`]).
//!
//! Not supported here: `--plot`, CSV input.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{ArgAction, Parser};
use marginkit::aid::lad::shard::{fit_shard, LadComm};
use marginkit::aid::lad::AidLadParams;
use marginkit::aid::{AidCheckpoint, IterRecord};
use marginkit::data::libsvm_fmt::{DEFAULT_DENSIFY_MAX_BYTES, DEFAULT_DENSIFY_MIN_DENSITY};
use marginkit::data::{densify_pays, write_output};
use marginkit::fit::{Control, Report};
use marginkit::solver::{Cancel, Status};
use marginkit::{CsrMatrix, Dataset, Features};
use mpi::collective::SystemOperation;
use mpi::datatype::PartitionMut;
use mpi::point_to_point::{Destination, Source};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::{CommunicatorCollectives, Root};
use mpi::Count;

use crate::state::{self, StateArgs};
use crate::stop;
use crate::train::{
    agree, gather_u64, json_f64, json_f64s, json_str, json_u64s, parse_block, read_block, setup,
    Failure, Res,
};

/// `marginkit-mpi aid lad`: `marginkit aid lad` on rows split across the MPI ranks.
#[derive(Debug, Parser)]
#[command(
    name = "marginkit-mpi aid lad",
    version,
    disable_help_flag = true,
    override_usage = "mpirun -np P marginkit-mpi aid lad [OPTIONS] TRAIN [MODEL]"
)]
pub struct LadCli {
    /// No intercept column.
    #[arg(long)]
    no_intercept: bool,
    /// Initial aggregation rate r^0 = |K^0|/n (default: the paper's rule).
    #[arg(long)]
    r0: Option<f64>,
    /// Stop when (E_best - lower bound) / E_best <= this (default 0: only the certificate).
    #[arg(long)]
    gap_tol: Option<f64>,
    /// Most AID iterations (aggregated solves).
    #[arg(long)]
    max_iter: Option<usize>,
    /// Time limit of the AID loop in seconds (rank 0's clock).
    #[arg(long)]
    time_limit: Option<f64>,
    /// Seed of the sample and of the k-means centres.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Worker threads per rank (default 1); the model does not depend on it.
    #[arg(long)]
    threads: Option<usize>,
    /// Quiet: no per-iteration lines.
    #[arg(short = 'q')]
    quiet: bool,
    /// One JSON object on stdout (rank 0).
    #[arg(long)]
    json: bool,
    /// Print help.
    #[arg(long, action = ArgAction::Help)]
    help: Option<bool>,
    #[command(flatten)]
    state: StateArgs,
    /// Training data (regression targets): a LIBSVM file, or a directory whose regular files,
    /// sorted by name, are the data in that order.
    train_file: PathBuf,
    /// Model file (JSON; default: TRAIN's file name + `.model`).
    model_file: Option<PathBuf>,
}

/// `marginkit-mpi aid lad ...` (`args` is the whole command line): every rank learns any
/// failure, rank 0 prints it, every rank exits with status 1.
pub fn main(args: Vec<String>) -> ExitCode {
    let mut rest = vec![format!("{} aid lad", args[0])];
    rest.extend(args.into_iter().skip(3));
    let cli = LadCli::parse_from(rest);
    let Some(universe) = mpi::initialize() else {
        eprintln!("marginkit-mpi: error: MPI could not be initialized");
        return ExitCode::from(1);
    };
    let world = universe.world();
    match run(cli, &world) {
        Ok(Status::Interrupted) => ExitCode::from(stop::EXIT_INTERRUPTED),
        Ok(_) => ExitCode::SUCCESS,
        Err(Failure(msg)) => {
            if world.rank() == 0 {
                eprintln!("marginkit-mpi: error: {msg}");
            }
            ExitCode::from(1)
        }
    }
}

/// The reductions of the sharded fit over MPI, with this rank's traffic: the pipelines are
/// point-to-point sends from rank `r` to `r + 1` (then a broadcast from the last rank, or one
/// message to rank 0), the ORs an all-reduce, the gather of the sample `MPI_Gatherv`.
struct Mpi<'a> {
    world: &'a SimpleCommunicator,
    rank: usize,
    size: usize,
    /// Bytes and messages this rank sent (a broadcast counts `P - 1` messages of its root, an
    /// all-reduce one message per rank), and the time it spent communicating.
    bytes: u64,
    messages: u64,
    comm: Duration,
    /// The counters at the end of each stage (the initial clustering, then every iteration).
    stages: Vec<(u64, u64, Duration)>,
}

const TAG: i32 = 7_101;

impl<'a> Mpi<'a> {
    fn new(world: &'a SimpleCommunicator) -> Self {
        Mpi {
            world,
            rank: world.rank() as usize,
            size: world.size() as usize,
            bytes: 0,
            messages: 0,
            comm: Duration::ZERO,
            stages: Vec::new(),
        }
    }

    fn sent(&mut self, messages: u64, words: usize, width: u64) {
        self.messages += messages;
        self.bytes += messages * width * words as u64;
    }

    /// The pipeline from rank 0 to rank P - 1 (the total is then on the last rank).
    fn pipe(&mut self, buf: &mut [f64], add_local: &mut dyn FnMut(&mut [f64], bool)) {
        let t0 = Instant::now();
        if self.rank > 0 {
            self.world
                .process_at_rank(self.rank as i32 - 1)
                .receive_into_with_tag(buf, TAG);
        }
        let t1 = Instant::now();
        add_local(buf, self.rank == 0);
        let t2 = Instant::now();
        if self.rank + 1 < self.size {
            self.world
                .process_at_rank(self.rank as i32 + 1)
                .send_with_tag(&buf[..], TAG);
            self.sent(1, buf.len(), 8);
        }
        self.comm += (t1 - t0) + t2.elapsed();
    }
}

impl LadComm for Mpi<'_> {
    fn sum(&mut self, buf: &mut [f64], add_local: &mut dyn FnMut(&mut [f64], bool)) {
        self.pipe(buf, add_local);
        if self.size > 1 {
            let t = Instant::now();
            let last = self.size - 1;
            self.world.process_at_rank(last as i32).broadcast_into(buf);
            if self.rank == last {
                self.sent(last as u64, buf.len(), 8);
            }
            self.comm += t.elapsed();
        }
    }

    fn sum_to_root(&mut self, buf: &mut [f64], add_local: &mut dyn FnMut(&mut [f64], bool)) {
        self.pipe(buf, add_local);
        if self.size > 1 {
            let t = Instant::now();
            let last = self.size - 1;
            if self.rank == last {
                self.world.process_at_rank(0).send_with_tag(&buf[..], TAG);
                self.sent(1, buf.len(), 8);
            } else if self.rank == 0 {
                self.world
                    .process_at_rank(last as i32)
                    .receive_into_with_tag(buf, TAG);
            }
            self.comm += t.elapsed();
        }
    }

    fn or(&mut self, flags: &mut [u8]) {
        if self.size > 1 {
            let t = Instant::now();
            let local = flags.to_vec();
            self.world
                .all_reduce_into(&local[..], flags, SystemOperation::bitwise_or());
            self.sent(1, flags.len(), 1);
            self.comm += t.elapsed();
        }
    }

    fn broadcast(&mut self, buf: &mut [f64]) {
        if self.size > 1 {
            let t = Instant::now();
            self.world.process_at_rank(0).broadcast_into(buf);
            if self.rank == 0 {
                self.sent(self.size as u64 - 1, buf.len(), 8);
            }
            self.comm += t.elapsed();
        }
    }

    fn gather(&mut self, local: &[f64]) -> Vec<f64> {
        if self.size == 1 {
            return local.to_vec();
        }
        let t = Instant::now();
        let root = self.world.process_at_rank(0);
        let count = local.len() as Count;
        // Never an empty allocation: an empty Vec's dangling pointer is 0x1, which OpenMPI reads
        // as MPI_IN_PLACE.
        let mut send = Vec::with_capacity(local.len().max(1));
        send.extend_from_slice(local);
        let out = if self.rank == 0 {
            let mut counts = vec![0 as Count; self.size];
            root.gather_into_root(&count, &mut counts[..]);
            let displs: Vec<Count> = counts
                .iter()
                .scan(0, |acc, &c| {
                    let d = *acc;
                    *acc += c;
                    Some(d)
                })
                .collect();
            let total: usize = counts.iter().map(|&c| c as usize).sum();
            let mut recv = vec![0.0f64; total.max(1)];
            {
                let mut part = PartitionMut::new(&mut recv[..total], counts, &displs[..]);
                root.gather_varcount_into_root(&send[..], &mut part);
            }
            recv.truncate(total);
            recv
        } else {
            root.gather_into(&count);
            root.gather_varcount_into(&send[..]);
            self.sent(1, local.len(), 8);
            Vec::new()
        };
        self.comm += t.elapsed();
        out
    }

    fn is_root(&self) -> bool {
        self.rank == 0
    }

    fn stage_done(&mut self) {
        self.stages.push((self.bytes, self.messages, self.comm));
    }
}

fn params(a: &LadCli) -> Result<marginkit::aid::lad::AidLadValidParams, String> {
    let mut p = AidLadParams::new().intercept(!a.no_intercept).seed(a.seed);
    if let Some(r) = a.r0 {
        p = p.r0(r);
    }
    if let Some(g) = a.gap_tol {
        p = p.gap_tol(g);
    }
    if let Some(m) = a.max_iter {
        p = p.max_iter(m);
    }
    if let Some(t) = a.time_limit {
        if !(t.is_finite() && t > 0.0) {
            return Err(format!("--time-limit must be > 0 seconds, got {t}"));
        }
        p = p.time_limit(Duration::from_secs_f64(t));
    }
    p.check().map_err(|e| e.to_string())
}

/// Runs `aid lad` on every rank and returns how the fit ended; the error, when any, is the same
/// on every rank.
pub fn run(a: LadCli, world: &SimpleCommunicator) -> Res<Status> {
    let t_start = Instant::now();
    let (rank, size) = (world.rank() as usize, world.size() as usize);
    let params = agree(world, params(&a))?;
    let (path, threads) = setup(world, a.threads, &a.train_file, a.model_file.as_ref())?;
    let state_path = a.state.path(&path);
    state::check(world, &state_path, &path, a.state.resume.as_deref())?;
    let resume = a.state.read(world, AidCheckpoint::from_bytes)?;

    // Read and parse this rank's block; the whole data set's shape and storage.
    let block = read_block(world, &a.train_file)?;
    let rows = agree(world, parse_block(&block))?;
    drop(block);
    let counts = gather_u64(world, rows.y.len() as u64);
    let n: usize = counts.iter().sum::<u64>() as usize;
    if n == 0 {
        return Err(Failure(format!("{}: no data", a.train_file.display())));
    }
    let width = gather_u64(world, rows.width as u64)
        .into_iter()
        .max()
        .unwrap_or(0) as usize;
    let nnz_per = gather_u64(world, rows.indices.len() as u64);
    let stored: usize = nnz_per.iter().sum::<u64>() as usize;
    let dense = densify_pays(
        n,
        width,
        stored,
        DEFAULT_DENSIFY_MIN_DENSITY,
        DEFAULT_DENSIFY_MAX_BYTES,
    );
    let csr = agree(
        world,
        CsrMatrix::new(width, rows.indptr, rows.indices, rows.values).map_err(|e| e.to_string()),
    )?;
    let x = if dense {
        Features::Sparse(csr).densify_if(0.0, usize::MAX)
    } else {
        Features::Sparse(csr)
    };
    let data = agree(
        world,
        Dataset::new(x, rows.y, None).map_err(|e| e.to_string()),
    )?;
    let read_secs = t_start.elapsed().as_secs_f64();

    // Fit.
    let show = rank == 0 && !a.quiet && !a.json;
    let mut comm = Mpi::new(world);
    let t_fit = Instant::now();
    let mut header = true;
    let mut ctl = Control::new(Cancel::from_flag(stop::install()))
        .resume_opt(resume.as_ref())
        .on_part(|r: &IterRecord| {
            // The header before the first row (of a resumed run too).
            if show && std::mem::take(&mut header) {
                println!(
                    "{:>4} {:>9} {:>10} {:>20} {:>20} {:>10}",
                    "t", "clusters", "r", "lower bound F", "E_best", "gap"
                );
            }
            if show {
                println!(
                    "{:>4} {:>9} {:>10.3e} {:>20.12e} {:>20.12e} {:>10.3e}",
                    r.t, r.clusters, r.r, r.lower_bound, r.best_objective, r.gap
                );
            }
        });
    let fit = fit_shard(&params, &data, &mut comm, &mut ctl);
    drop(ctl);
    let fit_secs = t_fit.elapsed().as_secs_f64();
    let fit = agree(world, fit.map_err(|e| a.state.err(e)))?;
    // No model when stopped before the first iteration.
    let written = match (&fit.model, rank) {
        (Some(m), 0) => write_output(&path, |w| w.write_all(m.to_json().as_bytes()))
            .map_err(|e| format!("{}: {e}", path.display())),
        _ => Ok(()),
    };
    agree(world, written)?;
    // The state of a stopped run (only rank 0's fit carries it; every rank knows the status).
    if fit.report.status == Status::Interrupted {
        state::write(world, &state_path, || {
            fit.checkpoint
                .as_ref()
                .map(|ck| ck.to_bytes())
                .unwrap_or_default()
        })?;
    }

    // Report (rank 0): traffic per stage summed over the ranks, the slowest rank's
    // communication time per stage.
    let rep = &fit.report;
    let stages = comm.stages.len();
    let mut deltas = vec![0u64; 2 * stages];
    let mut comm_secs = vec![0.0f64; stages];
    let mut prev = (0u64, 0u64, Duration::ZERO);
    for (s, &(b, m, c)) in comm.stages.iter().enumerate() {
        deltas[2 * s] = b - prev.0;
        deltas[2 * s + 1] = m - prev.1;
        comm_secs[s] = (c - prev.2).as_secs_f64();
        prev = (b, m, c);
    }
    let mut traffic = vec![0u64; 2 * stages];
    world.all_reduce_into(&deltas[..], &mut traffic[..], SystemOperation::sum());
    let mut slowest = vec![0.0f64; stages];
    world.all_reduce_into(&comm_secs[..], &mut slowest[..], SystemOperation::max());
    let comm_total = comm.comm.as_secs_f64();
    let mut comm_per = vec![0.0f64; size];
    world.all_gather_into(&comm_total, &mut comm_per[..]);
    let total_bytes = gather_u64(world, comm.bytes).iter().sum::<u64>();
    let total_msgs = gather_u64(world, comm.messages).iter().sum::<u64>();
    if rank != 0 {
        return Ok(rep.status());
    }
    let total_secs = t_start.elapsed().as_secs_f64();
    if rep.status() == Status::MaxIterations {
        eprintln!("marginkit-mpi: warning: stopped at the iteration limit before the certificate");
    }
    if rep.status() == Status::Interrupted {
        let model = if fit.model.is_some() {
            format!("{} holds the best model so far", path.display())
        } else {
            "no model".to_string()
        };
        eprintln!(
            "marginkit-mpi: interrupted after {} finished iterations: {model}; continue with --resume {}",
            rep.iterations.len(),
            state_path.display(),
        );
    }
    if show {
        println!("stop: {}", rep.stop_name());
        println!(
            "objective {:.12e}  total {total_secs:.4} s",
            rep.best_objective
        );
        println!(
            "{size} ranks, {n} rows, {} iterations, {:.3e} bytes sent per iteration, communication {comm_total:.3} s of {fit_secs:.3} s (rank 0)",
            rep.iterations.len(),
            total_bytes as f64 / stages.saturating_sub(1).max(1) as f64
        );
    }
    if a.json {
        // The records a resumed run continued from ran earlier: this run has no traffic of theirs.
        let earlier = rep
            .iterations
            .len()
            .saturating_sub(stages.saturating_sub(1));
        let its: Vec<String> = rep
            .iterations
            .iter()
            .enumerate()
            .map(|(k, r)| {
                let s = (k + 1).saturating_sub(earlier);
                let ran = k >= earlier;
                let count = |i: usize| {
                    if ran {
                        traffic.get(i).copied().unwrap_or(0).to_string()
                    } else {
                        "null".to_string()
                    }
                };
                format!(
                    "{{\"t\":{},\"clusters\":{},\"r\":{},\"lower_bound\":{},\"objective\":{},\"best_objective\":{},\"gap\":{},\"violating\":{},\"seconds\":{},\"bytes\":{},\"messages\":{},\"comm_seconds\":{}}}",
                    r.t,
                    r.clusters,
                    json_f64(r.r),
                    json_f64(r.lower_bound),
                    json_f64(r.objective),
                    json_f64(r.best_objective),
                    json_f64(r.gap),
                    r.violating,
                    json_f64(r.seconds),
                    count(2 * s),
                    count(2 * s + 1),
                    if ran {
                        json_f64(slowest.get(s).copied().unwrap_or(0.0))
                    } else {
                        "null".to_string()
                    },
                )
            })
            .collect();
        let clusters: Vec<u64> = rep.iterations.iter().map(|r| r.clusters as u64).collect();
        println!(
            "{{\"model\":\"lad\",\"stop\":\"{}\",\"status\":\"{}\",\"converged\":{},\"certified\":{},\"objective\":{},\"lower_bound\":{},\"n\":{},\"d\":{},\"P\":{},\"threads_per_rank\":{},\"dense\":{},\"rows_per_rank\":{},\"nnz_per_rank\":{},\"clusters_per_iteration\":{},\"init_bytes\":{},\"init_messages\":{},\"bytes\":{},\"messages\":{},\"read_seconds\":{},\"init_seconds\":{},\"fit_seconds\":{},\"total_seconds\":{},\"comm_seconds\":{},\"compute_seconds\":{},\"comm_seconds_per_rank\":{},\"iterations\":[{}],\"model_file\":{},\"resumed\":{},\"state_file\":{}}}",
            rep.stop_name(),
            rep.status().as_str(),
            rep.status() == Status::Converged,
            rep.certified(),
            json_f64(rep.best_objective),
            json_f64(rep.lower_bound),
            n,
            width,
            size,
            threads,
            dense,
            json_u64s(&counts),
            json_u64s(&nnz_per),
            json_u64s(&clusters),
            traffic.first().copied().unwrap_or(0),
            traffic.get(1).copied().unwrap_or(0),
            total_bytes,
            total_msgs,
            json_f64(read_secs),
            json_f64(rep.init_seconds),
            json_f64(fit_secs),
            json_f64(total_secs),
            json_f64(comm_total),
            json_f64(fit_secs - comm_total),
            json_f64s(&comm_per),
            its.join(","),
            json_str(&path.display().to_string()),
            a.state.resume.is_some(),
            if fit.checkpoint.is_some() {
                json_str(&state_path.display().to_string())
            } else {
                "null".to_string()
            },
        );
    }
    Ok(rep.status())
}
