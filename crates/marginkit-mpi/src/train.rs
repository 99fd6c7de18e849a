//! `marginkit-mpi train --linear -s 2|11 TRAIN [MODEL]`: the primal L2-loss SVC / SVR of
//! LIBLINEAR trained on rows split across the ranks, giving the single-process model bit for bit.
//! Also the command line of `train` and the reading both paths share (steps 1-3 below: [`load`],
//! [`dataset`]); the kernel SVMs are in [`crate::kernel`].
//!
//! Steps (every one collective, so a failure on any rank is learnt by all at the next step):
//! 1. rank 0 checks that MODEL can be written ([`check_output`]);
//! 2. every rank reads its block of TRAIN ([`Block`]) with the library's LIBSVM parser;
//! 3. the ranks all-gather their row counts, widths, stored entries and labels: the feature
//!    count is the largest width, the labels are [`first_appearances`] of the blocks' labels in
//!    rank order, and the storage (dense or sparse) is the one [`Features::densify_if`] would
//!    choose for the whole data set, so every row sees the same arithmetic as on one process;
//! 4. the ranks all-gather every row's work ([`row_work`], one integer per row) and compute the
//!    global chunk cut ([`cut_chunks`], the cut one process would make); a chunk belongs to the
//!    rank whose block holds its first row, and one all-to-all moves the rows so that every rank
//!    holds whole chunks (a rank may end with none: it still takes part in every reduction);
//! 5. [`fit_shard`] runs the library's Newton solver with [`Pipeline`] as its reductions; rank
//!    0 writes the model with the library's atomic writer.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{ArgAction, Parser, ValueEnum};
use marginkit::data::libsvm_fmt::{
    read_libsvm_bytes, ReadOptions, Storage, DEFAULT_DENSIFY_MAX_BYTES, DEFAULT_DENSIFY_MIN_DENSITY,
};
use marginkit::data::{check_output, densify_pays, first_appearances, write_output};
use marginkit::error::ParseErrorKind;
use marginkit::fit::Control;
use marginkit::solver::newton::{cut_chunks, row_work, ChunkSums};
use marginkit::solver::{IterStats, Observer, Status};
use marginkit::svm::linear::{self, LinearParams, LinearShard, LinearSolver};
use marginkit::svm::SvmSolver;
use marginkit::{CsrMatrix, Dataset, Features, IoError};
use mpi::collective::SystemOperation;
use mpi::datatype::{Partition, PartitionMut};
use mpi::point_to_point::{Destination, Source};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::{CommunicatorCollectives, Root};
use mpi::Count;

use crate::state::StateArgs;
use crate::stop;

/// `marginkit-mpi train`: LIBLINEAR's `train -s 2|11` on rows split across the MPI ranks.
#[derive(Debug, Parser)]
#[command(
    name = "marginkit-mpi train",
    version,
    disable_help_flag = true,
    override_usage = "mpirun -np P marginkit-mpi train [-s 0|2|3 -t 0..3 OPTIONS | --linear -s 2|11 OPTIONS] TRAIN [MODEL]"
)]
pub struct TrainCli {
    /// Linear model: LIBLINEAR's primal solvers (`-s 2`, `-s 11`); without it, LIBSVM's kernel
    /// SVMs (`-s 0`, `-s 2`, `-s 3`).
    #[arg(long)]
    pub(crate) linear: bool,
    /// Without --linear (LIBSVM's numbering): 0 C-SVC (default), 2 one-class, 3 epsilon-SVR.
    /// With --linear (LIBLINEAR's): 2 L2-loss primal SVC (default), 11 L2-loss primal SVR.
    #[arg(short = 's')]
    pub(crate) solver: Option<u32>,
    /// QP engine of the kernel SVMs: smo (pair SMO, the default here), block (block
    /// working-set SMO; C-SVC, one-class, epsilon-SVR) or auto (marginkit train's rule, on the
    /// whole data set: block when the -m cache holds fewer than 1/64 of the kernel matrix's
    /// columns or the samples times the values per row reach 2,000,000). Over MPI the block engine needs about q/2 times fewer collectives (q the
    /// working-set size, that of one process for the whole data set) but does not shrink,
    /// which is why smo stays the default, and keeps no state: --resume starts a stopped
    /// block problem over.
    #[arg(long = "solver", value_name = "SOLVER", value_enum, default_value_t = EngineArg::Smo)]
    pub(crate) engine: EngineArg,
    /// Kernel type (without --linear): 0 linear, 1 polynomial, 2 RBF (default), 3 sigmoid.
    #[arg(short = 't', default_value_t = 2)]
    pub(crate) kernel_type: u8,
    /// Degree of the polynomial kernel.
    #[arg(short = 'd', default_value_t = 3)]
    pub(crate) degree: u32,
    /// gamma of the kernel (default, or 0: 1/num_features of the whole data set).
    #[arg(short = 'g', allow_negative_numbers = true)]
    pub(crate) gamma: Option<f64>,
    /// coef0 of the polynomial and sigmoid kernels.
    #[arg(short = 'r', default_value_t = 0.0, allow_negative_numbers = true)]
    pub(crate) coef0: f64,
    /// C (default 1).
    #[arg(short = 'c', allow_negative_numbers = true)]
    pub(crate) cost: Option<f64>,
    /// nu of the one-class SVM (default 0.5).
    #[arg(short = 'n', allow_negative_numbers = true)]
    pub(crate) nu: Option<f64>,
    /// epsilon of the SVR's insensitive loss (default 0.1).
    #[arg(short = 'p', allow_negative_numbers = true)]
    pub(crate) epsilon: Option<f64>,
    /// Kernel cache per rank in MB (default 200): P ranks hold P times the cache of one.
    #[arg(short = 'm', default_value_t = 200.0, allow_negative_numbers = true)]
    pub(crate) cache_mb: f64,
    /// Shrinking (kernel SVMs): 1 on (default), 0 off.
    #[arg(short = 'h', default_value_t = 1)]
    pub(crate) shrinking: u8,
    /// Stopping tolerance (LIBSVM's 0.001; LIBLINEAR's: -s 2 0.01, -s 11 0.0001).
    #[arg(short = 'e', allow_negative_numbers = true)]
    pub(crate) eps: Option<f64>,
    /// Bias (--linear): B > 0 appends a constant feature B; -1 none.
    #[arg(short = 'B', default_value_t = -1.0, allow_negative_numbers = true)]
    pub(crate) bias: f64,
    /// Multiply C of class LABEL by WEIGHT; repeatable (`-wLABEL WEIGHT` is accepted too).
    #[arg(
        long = "class-weight",
        value_name = "LABEL:WEIGHT",
        allow_hyphen_values = true
    )]
    pub(crate) class_weights: Vec<String>,
    /// Iteration limit (Newton iterations, default 1000; kernel SVMs: SMO iterations, default
    /// max(1e7, 100 n)).
    #[arg(long)]
    pub(crate) max_iter: Option<u64>,
    /// Worker threads per rank (default 1); the model does not depend on it.
    #[arg(long)]
    pub(crate) threads: Option<usize>,
    /// One JSON object on stdout (rank 0).
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) state: StateArgs,
    /// Quiet: no progress or summary lines.
    #[arg(short = 'q')]
    pub(crate) quiet: bool,
    /// Print help.
    #[arg(long, action = ArgAction::Help)]
    help: Option<bool>,
    /// Training data: a LIBSVM file, or a directory whose regular files, sorted by name, are
    /// the data in that order.
    pub(crate) train_file: PathBuf,
    /// Model file (default: TRAIN's file name + `.model`, as LIBSVM and LIBLINEAR).
    pub(crate) model_file: Option<PathBuf>,
}

/// `train --solver`: the QP engine of the kernel SVMs (`marginkit train`'s flag).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EngineArg {
    /// Pair SMO (LIBSVM's method).
    Smo,
    /// Block working-set SMO (C-SVC, one-class, epsilon-SVR).
    Block,
    /// The engine measured faster for the problem's size, rows and cache (block when the
    /// cache holds fewer than 1/64 of the kernel columns or the samples times the values per
    /// row reach 2,000,000, smo otherwise).
    Auto,
}

impl EngineArg {
    /// The flag's value.
    pub fn name(self) -> &'static str {
        match self {
            EngineArg::Smo => "smo",
            EngineArg::Block => "block",
            EngineArg::Auto => "auto",
        }
    }
}

impl From<EngineArg> for SvmSolver {
    fn from(s: EngineArg) -> Self {
        match s {
            EngineArg::Smo => SvmSolver::Smo,
            EngineArg::Block => SvmSolver::Block,
            EngineArg::Auto => SvmSolver::Auto,
        }
    }
}

/// Rewrites LIBLINEAR's `-wLABEL WEIGHT` into `--class-weight LABEL:WEIGHT`.
pub fn rewrite_class_weights(args: Vec<String>) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        match a.strip_prefix("-w") {
            Some(label) if !label.is_empty() && label.parse::<f64>().is_ok() => {
                let w = it.next().unwrap_or_default();
                out.push("--class-weight".into());
                out.push(format!("{label}:{w}"));
            }
            _ => out.push(a),
        }
    }
    out
}

/// An error every rank knows, printed by rank 0.
pub struct Failure(pub String);

pub(crate) type Res<T> = Result<T, Failure>;

/// Makes a per-rank result collective: when any rank failed, every rank returns the failure of
/// the lowest failing rank.
pub(crate) fn agree<T>(world: &SimpleCommunicator, local: Result<T, String>) -> Res<T> {
    let size = world.size() as usize;
    let len: i64 = match &local {
        Ok(_) => -1,
        Err(m) => m.len() as i64,
    };
    let mut lens = vec![0i64; size];
    world.all_gather_into(&len, &mut lens[..]);
    let Some(root) = lens.iter().position(|&l| l >= 0) else {
        return local.map_err(Failure);
    };
    let mut msg = match &local {
        Err(m) if world.rank() as usize == root => m.clone().into_bytes(),
        _ => vec![0u8; lens[root] as usize],
    };
    world
        .process_at_rank(root as i32)
        .broadcast_into(&mut msg[..]);
    Err(Failure(String::from_utf8_lossy(&msg).into_owned()))
}

/// One rank's share of TRAIN: whole lines of a file, or whole files of a directory.
///
/// A file of `S` bytes is cut at `r S / P`; each cut moves forward to the next line start, so a
/// line belongs to the rank whose range holds its first byte. A directory's regular files,
/// sorted by name, are laid end to end and each file goes to the rank whose range of that
/// concatenation holds the file's first byte (whole files: a line never spans two ranks, and
/// errors name the file and its own line).
pub(crate) struct Block {
    /// (file, first line number in that file, the bytes).
    parts: Vec<(PathBuf, usize, Vec<u8>)>,
}

fn list_files(dir: &Path) -> Result<Vec<(PathBuf, u64)>, String> {
    let rd = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut files = Vec::new();
    for e in rd {
        let e = e.map_err(|e| format!("{}: {e}", dir.display()))?;
        let p = e.path();
        let md = std::fs::metadata(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        if md.is_file() {
            files.push((p, md.len()));
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(format!("{}: the directory holds no files", dir.display()));
    }
    Ok(files)
}

/// The first line start at or after `pos` (the file's length when none).
fn line_start_at(f: &mut File, pos: u64, len: u64) -> std::io::Result<u64> {
    if pos == 0 || pos >= len {
        return Ok(pos.min(len));
    }
    f.seek(SeekFrom::Start(pos - 1))?;
    let mut buf = [0u8; 64 * 1024];
    let mut at = pos - 1;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            return Ok(len);
        }
        if let Some(k) = buf[..n].iter().position(|&b| b == b'\n') {
            return Ok(at + k as u64 + 1);
        }
        at += n as u64;
    }
}

fn read_range(path: &Path, rank: usize, size: usize) -> Result<(u64, Vec<u8>), String> {
    let ctx = |e: std::io::Error| format!("{}: {e}", path.display());
    let mut f = File::open(path).map_err(ctx)?;
    let len = f.metadata().map_err(ctx)?.len();
    let cut = |r: usize| (u128::from(len) * r as u128 / size as u128) as u64;
    let start = line_start_at(&mut f, cut(rank), len).map_err(ctx)?;
    let end = line_start_at(&mut f, cut(rank + 1), len).map_err(ctx)?;
    let mut bytes = vec![0u8; (end.max(start) - start) as usize];
    f.seek(SeekFrom::Start(start)).map_err(ctx)?;
    f.read_exact(&mut bytes).map_err(ctx)?;
    if rank == 0 && bytes.starts_with(&[0x1f, 0x8b]) {
        return Err(format!(
            "{}: gzip input cannot be split across ranks; decompress it first",
            path.display()
        ));
    }
    Ok((start, bytes))
}

/// Reads this rank's block; for a file, also all-gathers the line counts so that each part
/// knows the number of its first line.
pub(crate) fn read_block(world: &SimpleCommunicator, train: &Path) -> Res<Block> {
    let (rank, size) = (world.rank() as usize, world.size() as usize);
    if train.is_dir() {
        let files = agree(world, list_files(train))?;
        let total: u64 = files.iter().map(|f| f.1).sum();
        let mut off = 0u64;
        let mut mine = Vec::new();
        for (p, len) in files {
            // The rank whose range [r S / P, (r + 1) S / P) holds the file's first byte.
            let cut = |r: usize| (u128::from(total) * r as u128 / size as u128) as u64;
            let owner = (0..size).rev().find(|&r| cut(r) <= off).unwrap_or(0);
            if owner == rank {
                mine.push(p);
            }
            off += len;
        }
        let parts = mine
            .into_iter()
            .map(|p| {
                std::fs::read(&p)
                    .map(|b| (p.clone(), 1, b))
                    .map_err(|e| format!("{}: {e}", p.display()))
            })
            .collect::<Result<Vec<_>, String>>();
        return Ok(Block {
            parts: agree(world, parts)?,
        });
    }
    let (_, bytes) = agree(world, read_range(train, rank, size))?;
    let lines = bytes.iter().filter(|&&b| b == b'\n').count() as u64;
    let mut counts = vec![0u64; size];
    world.all_gather_into(&lines, &mut counts[..]);
    let first = counts[..rank].iter().sum::<u64>() as usize + 1;
    Ok(Block {
        parts: vec![(train.to_path_buf(), first, bytes)],
    })
}

/// The rows of one block: labels and CSR arrays (no width yet).
pub(crate) struct Rows {
    pub(crate) y: Vec<f64>,
    pub(crate) indptr: Vec<usize>,
    pub(crate) indices: Vec<u32>,
    pub(crate) values: Vec<f64>,
    pub(crate) width: usize,
}

impl Rows {
    fn empty() -> Self {
        Rows {
            y: Vec::new(),
            indptr: vec![0],
            indices: Vec::new(),
            values: Vec::new(),
            width: 0,
        }
    }
    fn push_dataset(&mut self, d: &Dataset) {
        self.width = self.width.max(d.n_features());
        let Features::Sparse(m) = &d.x else {
            unreachable!("read with sparse storage")
        };
        for i in 0..m.n_rows() {
            let (idx, val) = m.row(i);
            self.indices.extend_from_slice(idx);
            self.values.extend_from_slice(val);
            self.indptr.push(self.indices.len());
        }
        self.y.extend_from_slice(&d.y);
    }
}

pub(crate) fn parse_block(block: &Block) -> Result<Rows, String> {
    let opts = ReadOptions {
        storage: Storage::Sparse,
        ..ReadOptions::default()
    };
    let mut rows = Rows::empty();
    for (path, first, bytes) in &block.parts {
        // Whole gzip files of a directory are decompressed, as by the single-process reader.
        match read_libsvm_bytes(&bytes[..], &opts) {
            Ok(d) => rows.push_dataset(&d),
            // A block of blank or comment lines only holds no rows; the whole data set's
            // emptiness is judged after the reduction.
            Err(IoError::Parse(pe)) if matches!(pe.kind, ParseErrorKind::Empty) => {}
            Err(IoError::Parse(pe)) => {
                return Err(format!(
                    "{}:{}:{}: {}",
                    path.display(),
                    pe.line + first - 1,
                    pe.column,
                    pe.kind
                ))
            }
            Err(e) => return Err(format!("{}: {e}", path.display())),
        }
    }
    Ok(rows)
}

/// The pipeline reduction across ranks (see the library's `ChunkSums`): the first rank that
/// holds chunks adds its own to zeros and sends the running sum to the next holder, which adds
/// its own, ..., and the last holder broadcasts the total to every rank (ranks without chunks
/// only receive it). Counts what it sends and the time spent communicating.
struct Pipeline<'a> {
    world: &'a SimpleCommunicator,
    size: usize,
    /// The previous and next ranks that hold chunks (`None` at the ends of the chain), and
    /// whether this rank is in the chain at all.
    prev: Option<usize>,
    next: Option<usize>,
    holder: bool,
    /// The last holder: the root of the broadcast.
    last: usize,
    rank: usize,
    reductions: u64,
    bytes: u64,
    messages: u64,
    comm: Duration,
}

const TAG: i32 = 7_001;

impl<'a> Pipeline<'a> {
    fn new(world: &'a SimpleCommunicator, holds: &[bool]) -> Self {
        let rank = world.rank() as usize;
        let holders: Vec<usize> = (0..holds.len()).filter(|&r| holds[r]).collect();
        let at = holders.iter().position(|&r| r == rank);
        Pipeline {
            world,
            size: holds.len(),
            prev: at.and_then(|k| k.checked_sub(1)).map(|k| holders[k]),
            next: at.and_then(|k| holders.get(k + 1).copied()),
            holder: at.is_some(),
            last: holders.last().copied().unwrap_or(0),
            rank,
            reductions: 0,
            bytes: 0,
            messages: 0,
            comm: Duration::ZERO,
        }
    }
}

impl ChunkSums for Pipeline<'_> {
    fn sum(&mut self, buf: &mut [f64], add_local: &mut dyn FnMut(&mut [f64], bool)) {
        let t0 = Instant::now();
        self.reductions += 1;
        if let Some(p) = self.prev {
            self.world
                .process_at_rank(p as i32)
                .receive_into_with_tag(buf, TAG);
        }
        let t1 = Instant::now();
        if self.holder {
            add_local(buf, self.prev.is_none());
        }
        let t2 = Instant::now();
        if let Some(q) = self.next {
            self.world
                .process_at_rank(q as i32)
                .send_with_tag(&buf[..], TAG);
            self.messages += 1;
            self.bytes += 8 * buf.len() as u64;
        }
        if self.size > 1 {
            self.world
                .process_at_rank(self.last as i32)
                .broadcast_into(buf);
            if self.rank == self.last {
                // A broadcast reaches P - 1 ranks (counted as that many messages of the root).
                let others = self.size as u64 - 1;
                self.messages += others;
                self.bytes += 8 * buf.len() as u64 * others;
            }
        }
        let t3 = Instant::now();
        self.comm += (t1 - t0) + (t3 - t2);
    }
    fn max(&mut self, buf: &mut [f64]) {
        let t0 = Instant::now();
        self.reductions += 1;
        if self.size > 1 {
            let local = buf.to_vec();
            self.world
                .all_reduce_into(&local[..], buf, SystemOperation::max());
            self.messages += 1;
            self.bytes += 8 * buf.len() as u64;
        }
        self.comm += t0.elapsed();
    }
}

/// Progress on rank 0 (every Newton iteration, at most every 10 s), and the stop on Ctrl-C: at
/// the start of every Newton iteration (the same call on every rank: the solver runs the same
/// steps everywhere) the ranks OR their stop flags ([`stop::any`]) and all stop together.
struct Progress<'a> {
    show: bool,
    last: Instant,
    newton: u64,
    world: &'a SimpleCommunicator,
    stop: Arc<AtomicBool>,
}

impl Observer for Progress<'_> {
    fn on_iter(&mut self, s: &IterStats) -> std::ops::ControlFlow<()> {
        if s.iterations == self.newton {
            return std::ops::ControlFlow::Continue(());
        }
        if self.show && self.last.elapsed() >= Duration::from_secs(10) {
            eprintln!(
                "marginkit-mpi: Newton iteration {}, |grad| / |grad0| = {:.3e}",
                s.iterations, s.max_violation
            );
            self.last = Instant::now();
        }
        self.newton = s.iterations;
        if stop::any(self.world, &self.stop) {
            std::ops::ControlFlow::Break(())
        } else {
            std::ops::ControlFlow::Continue(())
        }
    }
}

pub(crate) fn gather_u64(world: &SimpleCommunicator, v: u64) -> Vec<u64> {
    let mut out = vec![0u64; world.size() as usize];
    world.all_gather_into(&v, &mut out[..]);
    out
}

fn gather_var<T: mpi::datatype::Equivalence + Default + Clone>(
    world: &SimpleCommunicator,
    mine: &[T],
) -> Vec<T> {
    let counts: Vec<Count> = gather_u64(world, mine.len() as u64)
        .iter()
        .map(|&c| c as Count)
        .collect();
    let displs: Vec<Count> = counts
        .iter()
        .scan(0, |acc, &c| {
            let d = *acc;
            *acc += c;
            Some(d)
        })
        .collect();
    let total = counts.iter().map(|&c| c as usize).sum();
    let mut out = vec![T::default(); total];
    let mut part = PartitionMut::new(&mut out[..], counts, &displs[..]);
    world.all_gather_varcount_into(mine, &mut part);
    out
}

/// Serializes rows `range` (of `rows`) as `label, count, (index, value) * count`.
fn pack(rows: &Rows, range: std::ops::Range<usize>, out: &mut Vec<u8>) {
    for i in range {
        out.extend_from_slice(&rows.y[i].to_le_bytes());
        let (a, b) = (rows.indptr[i], rows.indptr[i + 1]);
        out.extend_from_slice(&((b - a) as u64).to_le_bytes());
        for k in a..b {
            out.extend_from_slice(&rows.indices[k].to_le_bytes());
            out.extend_from_slice(&rows.values[k].to_le_bytes());
        }
    }
}

fn unpack(bytes: &[u8], rows: &mut Rows) {
    fn take<const N: usize>(bytes: &[u8], at: &mut usize) -> [u8; N] {
        let mut out = [0u8; N];
        out.copy_from_slice(&bytes[*at..*at + N]);
        *at += N;
        out
    }
    let mut at = 0;
    while at < bytes.len() {
        rows.y.push(f64::from_le_bytes(take(bytes, &mut at)));
        let cnt = u64::from_le_bytes(take(bytes, &mut at)) as usize;
        for _ in 0..cnt {
            rows.indices.push(u32::from_le_bytes(take(bytes, &mut at)));
            rows.values.push(f64::from_le_bytes(take(bytes, &mut at)));
        }
        rows.indptr.push(rows.indices.len());
    }
}

/// Moves rows so that rank `q` holds global rows `targets[q]`; `my_first` is the global number
/// of this rank's first current row. Returns this rank's new rows and the bytes it sent to
/// other ranks.
fn exchange(
    world: &SimpleCommunicator,
    rows: &Rows,
    my_first: usize,
    targets: &[std::ops::Range<usize>],
) -> (Rows, u64) {
    let mine = my_first..my_first + rows.y.len();
    // Never an empty allocation: an empty Vec<u8>'s dangling pointer is 0x1, which OpenMPI
    // reads as MPI_IN_PLACE.
    let mut send = Vec::with_capacity(1);
    let mut counts = Vec::with_capacity(targets.len());
    for t in targets {
        let (a, b) = (t.start.max(mine.start), t.end.min(mine.end));
        let before = send.len();
        if a < b {
            pack(rows, a - my_first..b - my_first, &mut send);
        }
        counts.push((send.len() - before) as Count);
    }
    let displs: Vec<Count> = counts
        .iter()
        .scan(0, |acc, &c| {
            let d = *acc;
            *acc += c;
            Some(d)
        })
        .collect();
    let mut recv_counts = vec![0 as Count; targets.len()];
    world.all_to_all_into(&counts[..], &mut recv_counts[..]);
    let recv_displs: Vec<Count> = recv_counts
        .iter()
        .scan(0, |acc, &c| {
            let d = *acc;
            *acc += c;
            Some(d)
        })
        .collect();
    let total: usize = recv_counts.iter().map(|&c| c as usize).sum();
    let mut recv = vec![0u8; total.max(1)];
    {
        let part = Partition::new(&send[..], &counts[..], &displs[..]);
        let mut rpart = PartitionMut::new(&mut recv[..total], &recv_counts[..], &recv_displs[..]);
        world.all_to_all_varcount_into(&part, &mut rpart);
    }
    let rank = world.rank() as usize;
    let sent: u64 = counts
        .iter()
        .enumerate()
        .filter(|&(q, _)| q != rank)
        .map(|(_, &c)| c as u64)
        .sum();
    let mut out = Rows::empty();
    out.width = rows.width;
    unpack(&recv[..total], &mut out);
    (out, sent)
}

fn params(a: &TrainCli) -> Result<(linear::LinearValidParams, LinearSolver), String> {
    if a.engine != EngineArg::Smo {
        return Err("--solver chooses the QP engine of the kernel SVMs (without --linear)".into());
    }
    let id = a.solver.unwrap_or(2);
    let solver = match LinearSolver::from_id(id) {
        Some(s) if s.is_primal() => s,
        _ => {
            return Err(format!(
            "--linear -s {id}: over MPI the solvers are 2 (L2-loss primal SVC) and 11 (L2-loss primal SVR)"
        ))
        }
    };
    let mut p = LinearParams::new(solver);
    if let Some(c) = a.cost {
        p = p.c(c);
    }
    if let Some(e) = a.epsilon {
        p = p.p(e);
    }
    if let Some(e) = a.eps {
        p = p.eps(e);
    }
    if a.bias >= 0.0 || a.bias.is_nan() {
        p = p.bias(a.bias);
    }
    for (l, w) in class_weights(a)? {
        p = p.class_weight(l, w);
    }
    if let Some(m) = a.max_iter {
        p = p.max_passes(m);
    }
    Ok((p.check().map_err(|e| e.to_string())?, solver))
}

/// The `--class-weight LABEL:WEIGHT` flags.
pub(crate) fn class_weights(a: &TrainCli) -> Result<Vec<(f64, f64)>, String> {
    a.class_weights
        .iter()
        .map(|s| {
            let (l, w) = s
                .rsplit_once(':')
                .ok_or_else(|| format!("class weight '{s}': expected LABEL:WEIGHT"))?;
            let l: f64 = l
                .parse()
                .map_err(|_| format!("class weight '{s}': bad label '{l}'"))?;
            let w: f64 = w
                .parse()
                .map_err(|_| format!("class weight '{s}': bad weight '{w}'"))?;
            Ok((l, w))
        })
        .collect()
}

fn model_path(train: &Path, model: Option<&PathBuf>) -> PathBuf {
    model.cloned().unwrap_or_else(|| {
        let name = train
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "train".into());
        PathBuf::from(format!("{name}.model"))
    })
}

/// Runs `train` on every rank; the error, when any, is the same on every rank.
pub fn run(a: TrainCli, world: &SimpleCommunicator) -> Res<Status> {
    if a.linear {
        run_linear(a, world)
    } else {
        crate::kernel::run(a, world)
    }
}

/// The worker pool of every rank (`--threads`, default 1) and the check that rank 0 can write
/// MODEL (default: TRAIN's file name + ".model"). Returns MODEL and the thread count.
pub(crate) fn setup(
    world: &SimpleCommunicator,
    threads: Option<usize>,
    train: &Path,
    model: Option<&PathBuf>,
) -> Res<(PathBuf, usize)> {
    let threads = threads.unwrap_or(1);
    agree(
        world,
        if threads == 0 {
            Err("--threads must be at least 1".to_string())
        } else {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build_global()
                .map_err(|e| format!("cannot start {threads} threads: {e}"))
        },
    )?;
    let path = model_path(train, model);
    agree(
        world,
        if world.rank() == 0 {
            check_output(&path).map_err(|e| format!("{}: {e}", path.display()))
        } else {
            Ok(())
        },
    )?;
    Ok((path, threads))
}

/// This rank's rows of TRAIN and what the ranks agreed about all of them.
pub(crate) struct Loaded {
    pub rows: Rows,
    /// Rows per rank.
    pub counts: Vec<u64>,
    /// Rows of all ranks.
    pub n: usize,
    /// Features: the largest width of all blocks.
    pub width: usize,
    /// The storage one process would choose for the whole data set.
    pub dense: bool,
    /// The labels of all blocks in order of first appearance.
    pub labels: Vec<f64>,
}

/// Reads and parses this rank's block of TRAIN and all-gathers the row counts, widths, stored
/// entries and labels (steps 2 and 3 of the module's list).
pub(crate) fn load(world: &SimpleCommunicator, train: &Path) -> Res<Loaded> {
    let block = read_block(world, train)?;
    let rows = agree(world, parse_block(&block))?;
    drop(block);
    let counts = gather_u64(world, rows.y.len() as u64);
    let n: usize = counts.iter().sum::<u64>() as usize;
    if n == 0 {
        return Err(Failure(format!("{}: no data", train.display())));
    }
    let width = gather_u64(world, rows.width as u64)
        .into_iter()
        .max()
        .unwrap_or(0) as usize;
    let stored: usize = gather_u64(world, rows.indices.len() as u64)
        .iter()
        .sum::<u64>() as usize;
    let dense = densify_pays(
        n,
        width,
        stored,
        DEFAULT_DENSIFY_MIN_DENSITY,
        DEFAULT_DENSIFY_MAX_BYTES,
    );
    let local_labels = first_appearances(rows.y.iter().copied());
    let labels = first_appearances(gather_var(world, &local_labels));
    Ok(Loaded {
        rows,
        counts,
        n,
        width,
        dense,
        labels,
    })
}

/// `rows` as a data set `width` wide in the agreed storage; also its stored entries.
pub(crate) fn dataset(
    world: &SimpleCommunicator,
    rows: Rows,
    width: usize,
    dense: bool,
) -> Res<(Dataset, usize)> {
    let csr =
        CsrMatrix::new(width, rows.indptr, rows.indices, rows.values).map_err(|e| e.to_string());
    let csr = agree(world, csr)?;
    let nnz = csr.nnz();
    let x = if dense {
        Features::Sparse(csr).densify_if(0.0, usize::MAX)
    } else {
        Features::Sparse(csr)
    };
    let data = agree(
        world,
        Dataset::new(x, rows.y, None).map_err(|e| e.to_string()),
    )?;
    Ok((data, nnz))
}

fn run_linear(a: TrainCli, world: &SimpleCommunicator) -> Res<Status> {
    let t_start = Instant::now();
    let (rank, size) = (world.rank() as usize, world.size() as usize);
    if a.state.resume.is_some() {
        // As `marginkit train --linear --resume`.
        return Err(Failure(
            "--resume continues kernel fits; a linear fit stopped early is simply re-run (it has no state file)".into(),
        ));
    }
    let (params, solver) = agree(world, params(&a))?;
    let (path, threads) = setup(world, a.threads, &a.train_file, a.model_file.as_ref())?;
    let say = |text: &str| {
        if rank == 0 && !a.quiet && !a.json {
            println!("{text}");
        }
    };

    // Read and parse this rank's block.
    let Loaded {
        rows,
        counts,
        n,
        width,
        dense,
        labels,
    } = load(world, &a.train_file)?;
    let read_secs = t_start.elapsed().as_secs_f64();

    // The global chunk cut from every row's work; chunk k goes to the rank holding its first row.
    let work: Vec<u64> = (0..rows.y.len())
        .map(|i| {
            if dense {
                width.max(1) as u64
            } else {
                (rows.indptr[i + 1] - rows.indptr[i] + 1) as u64
            }
        })
        .collect();
    let all_work: Vec<usize> = gather_var(world, &work)
        .into_iter()
        .map(|w| w as usize)
        .collect();
    let dim = width + usize::from(params.bias().is_some());
    let cut = cut_chunks(&all_work, dim);
    let firsts: Vec<usize> = counts
        .iter()
        .scan(0usize, |acc, &c| {
            let d = *acc;
            *acc += c as usize;
            Some(d)
        })
        .collect();
    let owner = |row: usize| {
        (0..size)
            .rev()
            .find(|&r| firsts[r] <= row && counts[r] > 0)
            .unwrap_or(0)
    };
    let mut targets = vec![0..0; size];
    let mut my_chunks = Vec::new();
    for c in &cut {
        let q = owner(c.start);
        let t = &mut targets[q];
        if t.start == t.end {
            *t = c.clone();
        } else {
            t.end = c.end;
        }
        if q == rank {
            my_chunks.push(c.clone());
        }
    }
    // Ranks without chunks hold the empty range at the right place (no rows).
    let (rows, moved) = exchange(world, &rows, firsts[rank], &targets);
    let start = targets[rank].start;
    let chunks: Vec<_> = my_chunks
        .iter()
        .map(|c| c.start - start..c.end - start)
        .collect();
    let local_n = rows.y.len();
    let (data, nnz_local) = dataset(world, rows, width, dense)?;
    debug_assert_eq!(row_work(&data.x).len(), local_n);
    let setup_secs = t_start.elapsed().as_secs_f64();

    // Train.
    let holds: Vec<bool> = targets.iter().map(|t| t.start < t.end).collect();
    let mut pipe = Pipeline::new(world, &holds);
    let mut progress = Progress {
        show: rank == 0 && !a.quiet && !a.json,
        last: Instant::now(),
        newton: 0,
        world,
        stop: stop::install(),
    };
    let t_fit = Instant::now();
    let fit = {
        let shard = LinearShard {
            n_samples: n,
            labels,
            chunks,
            sums: &mut pipe,
        };
        linear::fit_shard(&params, &data, shard, &mut Control::new(&mut progress))
    };
    let fit_secs = t_fit.elapsed().as_secs_f64();
    let fit = agree(world, fit.map_err(|e| e.to_string()))?;
    let written = if rank == 0 {
        write_output(&path, |w| fit.model.write(&mut *w))
            .map_err(|e| format!("{}: {e}", path.display()))
    } else {
        Ok(())
    };
    agree(world, written)?;

    // Report (rank 0).
    let comm = pipe.comm.as_secs_f64();
    let per_rank = |v: u64| gather_u64(world, v);
    let rows_per = per_rank(local_n as u64);
    let nnz_per = per_rank(nnz_local as u64);
    let bytes_per = per_rank(pipe.bytes);
    let msgs_per = per_rank(pipe.messages);
    let comm_per: Vec<f64> = {
        let mut out = vec![0.0f64; size];
        world.all_gather_into(&comm, &mut out[..]);
        out
    };
    let moved_per = per_rank(moved);
    let status = fit
        .report
        .subproblems
        .iter()
        .map(|s| s.status)
        .find(|s| *s != Status::Converged)
        .unwrap_or(Status::Converged);
    if rank != 0 {
        return Ok(status);
    }
    for s in &fit.report.subproblems {
        say(&format!(
            "optimization finished, #iter = {} ({})\nObjective value = {}, primal = {}, relative duality gap = {:.3e}",
            s.iterations,
            s.status.as_str(),
            s.dual_objective,
            s.primal_objective,
            s.relative_gap()
        ));
    }
    for w in &fit.report.warnings {
        eprintln!("marginkit-mpi: warning: {w}");
    }
    if status == Status::MaxIterations {
        eprintln!("WARNING: reaching max number of iterations");
    }
    if status == Status::Interrupted {
        stop::report(&path, None);
    }
    let iterations: u64 = fit.report.subproblems.iter().map(|s| s.iterations).sum();
    let total_bytes: u64 = bytes_per.iter().sum();
    let total_msgs: u64 = msgs_per.iter().sum();
    let per_iter = |v: u64| v as f64 / iterations.max(1) as f64;
    say(&format!(
        "{size} ranks, {n} rows, {iterations} Newton iterations, {} reductions, {:.3e} bytes sent per iteration, communication {:.3} s of {:.3} s",
        pipe.reductions,
        per_iter(total_bytes),
        comm,
        fit_secs
    ));
    if a.json {
        let s0 = &fit.report.subproblems[0];
        println!(
            "{{\"status\":\"{}\",\"solver\":\"{}\",\"iterations\":{},\"objective\":{},\"primal_objective\":{},\"n\":{},\"d\":{},\"P\":{},\"threads_per_rank\":{},\"dense\":{},\"chunks\":{},\"rows_per_rank\":{},\"nnz_per_rank\":{},\"bytes_moved_per_rank\":{},\"reductions\":{},\"messages\":{},\"bytes\":{},\"messages_per_iteration\":{},\"bytes_per_iteration\":{},\"bytes_per_rank\":{},\"read_seconds\":{},\"setup_seconds\":{},\"train_seconds\":{},\"comm_seconds\":{},\"compute_seconds\":{},\"comm_seconds_per_rank\":{},\"model_file\":{}}}",
            status.as_str(),
            solver.name(),
            iterations,
            json_f64(s0.dual_objective),
            json_f64(s0.primal_objective),
            n,
            width,
            size,
            threads,
            dense,
            cut.len(),
            json_u64s(&rows_per),
            json_u64s(&nnz_per),
            json_u64s(&moved_per),
            pipe.reductions,
            total_msgs,
            total_bytes,
            json_f64(per_iter(total_msgs)),
            json_f64(per_iter(total_bytes)),
            json_u64s(&bytes_per),
            json_f64(read_secs),
            json_f64(setup_secs),
            json_f64(fit_secs),
            json_f64(comm),
            json_f64(fit_secs - comm),
            json_f64s(&comm_per),
            json_str(&path.display().to_string()),
        );
    }
    Ok(status)
}

pub(crate) fn json_f64(v: f64) -> String {
    if v.is_finite() {
        format!("{v:?}")
    } else {
        "null".into()
    }
}

/// A JSON array of integers.
pub(crate) fn json_u64s(v: &[u64]) -> String {
    let items: Vec<String> = v.iter().map(u64::to_string).collect();
    format!("[{}]", items.join(","))
}

/// A JSON array of numbers ([`json_f64`]: `null` for a non-finite one).
pub(crate) fn json_f64s(v: &[f64]) -> String {
    let items: Vec<String> = v.iter().map(|&x| json_f64(x)).collect();
    format!("[{}]", items.join(","))
}

pub(crate) fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
