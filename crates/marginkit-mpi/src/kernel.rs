//! `marginkit-mpi train -s 0|2|3 -t 0..3 TRAIN [MODEL]`: LIBSVM's C-SVC, one-class and
//! epsilon-SVR by row-partitioned SMO, each rank holding only its block of TRAIN.
//!
//! Steps (every one collective, so a failure on any rank is learnt by all at the next step):
//! 1. the parameters are mapped as `marginkit train` maps them, and rank 0 checks that MODEL and
//!    the state file (`--state-file`, default MODEL.state) can be written;
//! 2. every rank reads its block and the ranks agree on the row counts, the feature count, the
//!    storage and the labels ([`crate::train::load`], the linear path's reading); with
//!    `--resume STATE` every rank reads STATE ([`crate::state`]);
//! 3. the library's [`svm::fit_shard`] trains with [`Mpi`] as its collectives: per SMO iteration
//!    two all-gathers of [`RECORD`] doubles per rank (the working-set selection) and at most two
//!    broadcasts of one row (the selected pair's features; a row every rank already received is
//!    not sent again), so `O(P + d)` bytes per iteration whatever the number of rows; each rank
//!    computes and caches its slice of every kernel column it needs (`-m` per rank). With
//!    `--solver block` the library's [`svm::fit_shard`] runs the block working-set engine
//!    instead ([`marginkit::solver::block::shard`]): per outer iteration (up to
//!    [`marginkit::solver::block::INNER_STEPS_PER_VAR`] `q` local steps) two all-gathers, the
//!    ranks' best `q` violators of each side and the working set's new rows (about `q/2` rows),
//!    `q` the single process's working-set size for the whole data set (half of `-m` for the
//!    working set's columns, as `marginkit train --solver block` plans it);
//! 4. rank 0 writes the model with the library's model writer and atomic output writer, and,
//!    when the fit stopped early (Ctrl-C on any rank, `--max-iter`), the state file: the
//!    library's [`svm::FitCheckpoint`], the single process's form, so that `marginkit train
//!    --resume` continues it as `marginkit-mpi train --resume` does at any number of ranks.
//!
//! With `-h 0` the model file is `marginkit train`'s (pair engine) byte for byte at any number
//! of ranks, also when stopped and continued; with shrinking the same optimum to the solver's
//! tolerance (and, continued at the same number of ranks, the uninterrupted run's model). With
//! `--solver block` the model file is `marginkit train --solver block`'s byte for byte at any
//! number of ranks; a stopped block solve is recorded in the state file as not started (the
//! ranks keep no block snapshot, which one process keeps) and starts over on `--resume`, as does
//! a block snapshot of `marginkit train --solver block`.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use marginkit::data::write_output;
use marginkit::error::SolveError;
use marginkit::fit::Control;
use marginkit::solver::smo::shard::{Collective, OTHER_SHARD, RECORD};
use marginkit::solver::{IterStats, Observer, Shrinking, Status};
use marginkit::svm::model_io::write_model;
use marginkit::svm::params::cache_bytes_from_mb;
use marginkit::svm::{self, KernelParams, KernelShard, SvmParams, SvmType, SvmValidParams};
use mpi::datatype::PartitionMut;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::{CommunicatorCollectives, Root};
use mpi::Count;

use crate::state;
use crate::stop;
use crate::train::{
    agree, class_weights, dataset, gather_u64, json_f64, json_f64s, json_str, json_u64s, load,
    setup, Failure, Loaded, Res, TrainCli,
};

/// The library's collectives over MPI, counting what this rank sends and the time spent in them.
struct Mpi<'a> {
    world: &'a SimpleCommunicator,
    rank: usize,
    size: usize,
    messages: u64,
    bytes: u64,
    calls: u64,
    comm: Duration,
}

impl Mpi<'_> {
    /// A collective in which this rank sends `len` doubles to each other rank.
    fn count(&mut self, len: usize, t0: Instant) {
        let others = self.size as u64 - 1;
        self.calls += 1;
        self.messages += others;
        self.bytes += 8 * len as u64 * others;
        self.comm += t0.elapsed();
    }
}

impl Collective for Mpi<'_> {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }
    fn all_gather(&mut self, mine: &[f64], all: &mut [f64]) {
        let t0 = Instant::now();
        if self.size == 1 {
            all.copy_from_slice(mine);
        } else {
            self.world.all_gather_into(mine, all);
        }
        self.count(mine.len(), t0);
    }
    fn broadcast(&mut self, root: usize, buf: &mut [f64]) {
        let t0 = Instant::now();
        // Every rank knows the length: an empty row needs no message.
        if self.size > 1 && !buf.is_empty() {
            self.world.process_at_rank(root as i32).broadcast_into(buf);
        }
        let len = if root == self.rank { buf.len() } else { 0 };
        self.count(len, t0);
    }
    fn all_gather_var(&mut self, mine: &[f64], all: &mut Vec<f64>) {
        let t0 = Instant::now();
        all.clear();
        if self.size == 1 {
            all.extend_from_slice(mine);
            self.count(0, t0);
            return;
        }
        let mut lens = vec![0u64; self.size];
        self.world
            .all_gather_into(&(mine.len() as u64), &mut lens[..]);
        let counts: Vec<Count> = lens.iter().map(|&c| c as Count).collect();
        let displs: Vec<Count> = counts
            .iter()
            .scan(0, |acc, &c| {
                let d = *acc;
                *acc += c;
                Some(d)
            })
            .collect();
        let total: usize = lens.iter().map(|&c| c as usize).sum();
        // Never an empty allocation on either side (an empty Vec's dangling pointer could be
        // read as MPI_IN_PLACE).
        all.resize(total.max(1), 0.0);
        let one = [0.0f64];
        let send = if mine.is_empty() { &one[..0] } else { mine };
        {
            let mut part = PartitionMut::new(&mut all[..total], counts, &displs[..]);
            self.world.all_gather_varcount_into(send, &mut part);
        }
        all.truncate(total);
        self.count(mine.len(), t0);
    }
}

/// Progress on rank 0 (at most every 10 s), and this rank's stop request on Ctrl-C: the
/// sharded SMO agrees the observers' decisions over the ranks (every `REPORT_EVERY` iterations;
/// the block engine, every outer iteration), so all ranks stop at the same iteration.
struct Progress {
    show: bool,
    last: Instant,
    stop: Arc<AtomicBool>,
}

impl Observer for Progress {
    fn on_iter(&mut self, s: &IterStats) -> std::ops::ControlFlow<()> {
        if self.show && self.last.elapsed() >= Duration::from_secs(10) {
            eprintln!(
                "marginkit-mpi: iteration {}, violation {:.3e}, {} active",
                s.iterations, s.max_violation, s.active
            );
            self.last = Instant::now();
        }
        if self.stop.load(Ordering::SeqCst) {
            std::ops::ControlFlow::Break(())
        } else {
            std::ops::ControlFlow::Continue(())
        }
    }
}

/// LIBSVM's flags to the library's parameters, as `marginkit train` maps them.
fn params(a: &TrainCli) -> Result<SvmValidParams, String> {
    let code = a.solver.unwrap_or(0);
    // The engine's refusal of a formulation first, in `marginkit train`'s words.
    if let Some(t) = u8::try_from(code).ok().and_then(SvmType::from_code) {
        SvmParams::new()
            .svm_type(t)
            .engine(a.engine.into())
            .check()
            .map_err(|e| e.to_string())?;
    }
    let svm_type = match code {
        0 => SvmType::CSvc,
        2 => SvmType::OneClass,
        3 => SvmType::EpsSvr,
        _ => {
            return Err(format!(
                "-s {code}: over MPI the kernel SVMs are 0 (C-SVC), 2 (one-class) and 3 (epsilon-SVR); --linear selects LIBLINEAR's solvers"
            ))
        }
    };
    if a.kernel_type > 3 {
        return Err(format!(
            "-t {}: over MPI the kernels are 0 (linear), 1 (polynomial), 2 (RBF) and 3 (sigmoid)",
            a.kernel_type
        ));
    }
    if a.bias >= 0.0 {
        return Err("-B (bias feature) applies to --linear only".into());
    }
    let kernel = KernelParams::from_libsvm(a.kernel_type, a.gamma, a.coef0, a.degree)
        .map_err(|e| e.to_string())?;
    let cache =
        cache_bytes_from_mb("-m (cache size, MB)", a.cache_mb).map_err(|e| e.to_string())?;
    let mut p = SvmParams::new()
        .svm_type(svm_type)
        .kernel(kernel)
        .tol(a.eps.unwrap_or(1e-3))
        .cache_bytes(cache)
        .shrinking(if a.shrinking == 1 {
            Shrinking::On
        } else {
            Shrinking::Off
        })
        .engine(a.engine.into());
    if let Some(c) = a.cost {
        p = p.c(c);
    }
    if let Some(nu) = a.nu {
        p = p.nu(nu);
    }
    if let Some(e) = a.epsilon {
        p = p.epsilon(e);
    }
    for (l, w) in class_weights(a)? {
        p = p.class_weight(l, w);
    }
    if let Some(n) = a.max_iter {
        p = p.max_iter(n);
    }
    p.check().map_err(|e| e.to_string())
}

/// Makes a fit's error collective: the lowest rank with its own error speaks for all (a rank
/// that only learnt that another rank's input was invalid defers to it).
fn agree_fit<T>(world: &SimpleCommunicator, local: Result<T, String>) -> Res<T> {
    let rank = world.rank() as usize;
    let other = SolveError::Dimensions(OTHER_SHARD).to_string();
    let kind = match &local {
        Err(m) if *m != other => 2u64,
        Err(_) => 1,
        Ok(_) => 0,
    };
    let kinds = gather_u64(world, kind);
    let best = kinds.iter().copied().max().unwrap_or(0);
    let speaker = kinds.iter().position(|&k| k == best).unwrap_or(0);
    let len = match &local {
        Err(m) => m.len() as u64,
        Ok(_) => 0,
    };
    let lens = gather_u64(world, len);
    let local = match local {
        Ok(v) if best == 0 => return Ok(v),
        other => other,
    };
    let want = lens[speaker] as usize;
    if want == 0 {
        return Err(Failure("training failed on another rank".into()));
    }
    let mut msg = match &local {
        Err(m) if rank == speaker => m.clone().into_bytes(),
        _ => vec![0u8; want],
    };
    world
        .process_at_rank(speaker as i32)
        .broadcast_into(&mut msg[..]);
    Err(Failure(String::from_utf8_lossy(&msg).into_owned()))
}

/// Runs the kernel `train` on every rank; the error, when any, is the same on every rank.
pub fn run(a: TrainCli, world: &SimpleCommunicator) -> Res<Status> {
    let t_start = Instant::now();
    let (rank, size) = (world.rank() as usize, world.size() as usize);
    let params = agree(world, params(&a))?;
    let (path, threads) = setup(world, a.threads, &a.train_file, a.model_file.as_ref())?;
    let state_path = a.state.path(&path);
    state::check(world, &state_path, &path, a.state.resume.as_deref())?;
    let Loaded {
        rows,
        counts,
        n,
        width,
        dense,
        labels,
    } = load(world, &a.train_file)?;
    let read_secs = t_start.elapsed().as_secs_f64();
    let first: usize = counts[..rank].iter().sum::<u64>() as usize;
    let (data, nnz_local) = dataset(world, rows, width, dense)?;
    let local_n = data.len();
    let resume = a.state.read(world, svm::FitCheckpoint::from_bytes)?;
    let setup_secs = t_start.elapsed().as_secs_f64();

    let mut mpi = Mpi {
        world,
        rank,
        size,
        messages: 0,
        bytes: 0,
        calls: 0,
        comm: Duration::ZERO,
    };
    let mut progress = Progress {
        show: rank == 0 && !a.quiet && !a.json,
        last: Instant::now(),
        stop: stop::install(),
    };
    let t_fit = Instant::now();
    let fit = {
        let shard = KernelShard {
            n_samples: n,
            first,
            labels,
            comm: &mut mpi,
        };
        let mut ctl = Control::new(&mut progress).resume_opt(resume.as_ref());
        svm::fit_shard(&params, &data, shard, &mut ctl)
    };
    let fit_secs = t_fit.elapsed().as_secs_f64();
    // A resumed fit's error names the state file (a refused state says why).
    let fit = agree_fit(world, fit.map_err(|e| e.to_string()))
        .map_err(|Failure(m)| Failure(a.state.err(m)))?;
    let written = if rank == 0 {
        write_output(&path, |w| write_model(&mut *w, &fit.model))
            .map_err(|e| format!("{}: {e}", path.display()))
    } else {
        Ok(())
    };
    agree(world, written)?;
    // Every rank holds the same checkpoint; rank 0 writes it.
    let state_written = match &fit.checkpoint {
        Some(c) => {
            state::write(world, &state_path, || c.to_bytes())?;
            Some(state_path.as_path())
        }
        None => None,
    };

    // Report (rank 0).
    report(&Report {
        a: &a,
        world,
        path: &path,
        state: state_written,
        fit: &fit,
        mpi: &mpi,
        n,
        width,
        dense,
        threads,
        local_n,
        nnz_local,
        secs: [read_secs, setup_secs, fit_secs],
    });
    Ok(fit.report.status())
}

/// What the report of a kernel fit is made of.
struct Report<'a> {
    a: &'a TrainCli,
    world: &'a SimpleCommunicator,
    path: &'a Path,
    /// The state file written, when the fit stopped early.
    state: Option<&'a Path>,
    fit: &'a marginkit::fit::Fit<svm::SvmModel, svm::FitReport, svm::FitCheckpoint>,
    mpi: &'a Mpi<'a>,
    n: usize,
    width: usize,
    dense: bool,
    threads: usize,
    local_n: usize,
    nnz_local: usize,
    /// Reading, reading + setup, training.
    secs: [f64; 3],
}

/// Prints LIBSVM's summary lines or one JSON object on rank 0 (every rank takes part in the
/// gathers of the per-rank figures).
fn report(r: &Report<'_>) {
    let (world, a, fit, mpi) = (r.world, r.a, r.fit, r.mpi);
    let rank = world.rank() as usize;
    let size = world.size() as usize;
    let rows_per = gather_u64(world, r.local_n as u64);
    let nnz_per = gather_u64(world, r.nnz_local as u64);
    let bytes_per = gather_u64(world, mpi.bytes);
    let msgs_per = gather_u64(world, mpi.messages);
    let hits_per = gather_u64(world, fit.report.cache.hits);
    let misses_per = gather_u64(world, fit.report.cache.misses);
    let mut comm_per = vec![0.0f64; size];
    world.all_gather_into(&mpi.comm.as_secs_f64(), &mut comm_per[..]);
    if rank != 0 {
        return;
    }
    let [read_secs, setup_secs, fit_secs] = r.secs;
    let comm = mpi.comm.as_secs_f64();
    let iterations = fit.report.iterations();
    let total_bytes: u64 = bytes_per.iter().sum();
    let total_msgs: u64 = msgs_per.iter().sum();
    let per_iter = |v: u64| v as f64 / iterations.max(1) as f64;
    let status = fit.report.status();
    match (status, r.state) {
        (Status::Interrupted, state) => stop::report(r.path, state),
        (Status::Converged, _) | (_, None) => {}
        (s, Some(state)) => eprintln!(
            "marginkit-mpi: warning: the solver stopped before convergence ({}); the model file holds the current iterate; continue with --resume {}",
            s.as_str(),
            state.display()
        ),
    }
    if !a.quiet && !a.json {
        for s in &fit.report.subproblems {
            println!(
                "optimization finished, #iter = {} ({})\nobj = {}, rho = {}\nnSV = {}, nBSV = {}",
                s.iterations,
                s.status.as_str(),
                s.objective,
                s.rho,
                s.n_sv,
                s.n_bsv
            );
        }
        println!("Total nSV = {}", fit.model.total_sv());
        println!(
            "{size} ranks, {} rows, {iterations} iterations, {:.3e} bytes and {:.1} messages sent per iteration, communication {comm:.3} s of {fit_secs:.3} s on rank 0",
            r.n,
            per_iter(total_bytes),
            per_iter(total_msgs),
        );
    }
    for w in &fit.report.warnings {
        eprintln!("marginkit-mpi: warning: {w}");
    }
    if status == marginkit::solver::Status::MaxIterations {
        eprintln!("WARNING: reaching max number of iterations");
    }
    if a.json {
        let objs: Vec<f64> = fit.report.subproblems.iter().map(|s| s.objective).collect();
        println!(
            "{{\"status\":\"{}\",\"solver\":\"{}\",\"svm_type\":\"{}\",\"kernel\":\"{}\",\"iterations\":{},\"objective\":{},\"objectives\":{},\"rho\":{},\"total_sv\":{},\"n\":{},\"d\":{},\"P\":{},\"threads_per_rank\":{},\"dense\":{},\"rows_per_rank\":{},\"nnz_per_rank\":{},\"record_doubles\":{},\"collectives\":{},\"messages\":{},\"bytes\":{},\"messages_per_iteration\":{},\"bytes_per_iteration\":{},\"bytes_per_rank\":{},\"cache_hits_per_rank\":{},\"cache_misses_per_rank\":{},\"read_seconds\":{},\"setup_seconds\":{},\"train_seconds\":{},\"comm_seconds\":{},\"compute_seconds\":{},\"comm_seconds_per_rank\":{},\"model_file\":{},\"state_file\":{},\"resumed\":{}}}",
            status.as_str(),
            a.engine.name(),
            fit.model.svm_type.name(),
            fit.model.kernel.libsvm_name(),
            iterations,
            json_f64(objs.first().copied().unwrap_or(f64::NAN)),
            json_f64s(&objs),
            json_f64s(&fit.model.rho),
            fit.model.total_sv(),
            r.n,
            r.width,
            size,
            r.threads,
            r.dense,
            json_u64s(&rows_per),
            json_u64s(&nnz_per),
            RECORD,
            mpi.calls,
            total_msgs,
            total_bytes,
            json_f64(per_iter(total_msgs)),
            json_f64(per_iter(total_bytes)),
            json_u64s(&bytes_per),
            json_u64s(&hits_per),
            json_u64s(&misses_per),
            json_f64(read_secs),
            json_f64(setup_secs),
            json_f64(fit_secs),
            json_f64(comm),
            json_f64(fit_secs - comm),
            json_f64s(&comm_per),
            json_str(&r.path.display().to_string()),
            r.state
                .map_or_else(|| "null".into(), |s| json_str(&s.display().to_string())),
            a.state.resume.is_some(),
        );
    }
}
