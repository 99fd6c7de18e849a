//! Checkpoints of the robust model selection ([`super::select::select`]): what a
//! stopped run over a `C` grid needs to continue to exactly the nodes of an uninterrupted run.
//!
//! A checkpoint holds the finished `C`s (their runs), the best candidate so far, the warm start
//! of the next standard SVM, and the interrupted `C` at its last safe point:
//! * **standard SVM** not finished: nothing but the warm start (the SMO solve is re-run);
//! * **outlier path**: the engine's state before the event that was stopped, or before the jump
//!   that was stopped (the pre-jump node recorded): coefficients, `f` on the training and
//!   validation rows, per-sample states and signs, the active set in its order and the
//!   Cholesky factor of `K_AA + tau I` as it was updated (a refactorization would round
//!   differently), the running outlier sum `s_o`, the blocked and parked flags, the counters, the nodes
//!   recorded so far and the best node;
//! * **CCCP**: the grid point, the outer round, its partition, `beta`, `f`, and the nodes.
//!
//! Continuing replays the very steps of an uninterrupted run (every step is deterministic), so
//! nodes, breakpoints and objectives are bit-identical (tested: `tests/robust_resume.rs`).
//!
//! File form ([`RobustCheckpoint::to_bytes`], conventions in [`crate::persist`]): magic
//! `MKROBCK4`, the fingerprint (training and validation data, task, kernel, `s`, bias, event
//! limit, tolerances, ridge, path kind, method and grid, the `C` list; not the cache size), the
//! run record (those parameters by flag and the shapes and hashes of the data sets, so that a
//! refused resume names what differs; absent in the previous form `MKROBCK3`, which is still
//! read and continued), the elapsed seconds, the runs, the chosen candidate, the warm start, the current state (tag 0
//! standard, 1 path, 2 CCCP), and the checksum, verified first.
//! [`RobustCheckpoint::from_bytes`] checks every length and tag and never panics; an accepted
//! file writes back to the same bytes. The older forms are refused by name: `MKROBCK1` (the
//! linear engine's outlier sum not kept as weights) and `MKROBCK2` (no parked samples).

use crate::persist::{self, CheckpointError, Dec, Enc, RunRecord};

use super::cccp::{CccpResume, MAX_OUTER};
use super::homotopy::{EngineSnap, Phase};
use super::{Chosen, Node, NodeKind, PathResume, Run, RunEnd, VIOLATIONS};

const MAGIC: &str = "MKROBCK4";
/// The previous form: no run record (still read and continued).
const PREV_MAGIC: &str = "MKROBCK3";
/// Older forms, refused by name, and what they lack.
const OLD_FORMS: [(&str, &str); 2] = [
    (
        "MKROBCK1",
        "without the outlier-path engine's outlier sum kept as weights",
    ),
    (
        "MKROBCK2",
        "without the outlier-path engine's parked samples",
    ),
];
/// The kind of state file, in messages.
pub(crate) const FILE: &str = "robust state file";

/// The interrupted `C`'s state.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Current {
    Standard,
    Path(Box<PathResume>),
    Cccp(CccpResume),
}

/// Where a stopped robust model selection is, to be continued by
/// [`super::select::select`].
#[derive(Debug, Clone, PartialEq)]
pub struct RobustCheckpoint {
    pub(crate) fingerprint: u64,
    /// What the selection was run with (`None` in a file of the previous version).
    pub(crate) run: Option<RunRecord>,
    pub(crate) runs: Vec<Run>,
    pub(crate) chosen: Option<Chosen>,
    pub(crate) warm: Option<Vec<f64>>,
    pub(crate) seconds: f64,
    pub(crate) current: Current,
}

fn kind_code(k: NodeKind) -> u8 {
    match k {
        NodeKind::Start => 0,
        NodeKind::SetChange => 1,
        NodeKind::PreJump => 2,
        NodeKind::PostJump => 3,
        NodeKind::End => 4,
    }
}

/// A run's end by its byte in the state file (its index here).
const RUN_ENDS: [RunEnd; 4] = [
    RunEnd::Completed,
    RunEnd::EventLimit,
    RunEnd::Unconverged,
    RunEnd::Interrupted,
];

fn put_node(e: &mut Enc, n: &Node) {
    e.f64(n.param);
    e.u8(kind_code(n.kind));
    e.f64(n.objective);
    e.usize(n.n_outliers);
    e.opt_f64(n.valid_error);
    e.bool(n.locally_optimal);
    e.opt_f64s(n.beta.as_deref());
    match &n.outlier_sign {
        Some(s) => {
            e.u8(1);
            e.i8s(s);
        }
        None => e.u8(0),
    }
}

fn get_node(d: &mut Dec<'_>) -> Result<Node, CheckpointError> {
    let param = d.f64()?;
    let kind = match d.u8()? {
        0 => NodeKind::Start,
        1 => NodeKind::SetChange,
        2 => NodeKind::PreJump,
        3 => NodeKind::PostJump,
        4 => NodeKind::End,
        t => return Err(d.bad_tag("node kind", t)),
    };
    Ok(Node {
        param,
        kind,
        objective: d.f64()?,
        n_outliers: d.usize()?,
        valid_error: d.opt_f64()?,
        locally_optimal: d.bool()?,
        beta: d.opt_f64s()?,
        outlier_sign: if d.bool()? { Some(d.i8s()?) } else { None },
    })
}

fn put_nodes(e: &mut Enc, nodes: &[Node]) {
    e.usize(nodes.len());
    nodes.iter().for_each(|n| put_node(e, n));
}

fn get_nodes(d: &mut Dec<'_>) -> Result<Vec<Node>, CheckpointError> {
    // A node takes at least 8 + 1 + 8 + 8 + 1 + 1 + 1 + 1 bytes.
    let k = d.len(29)?;
    (0..k).map(|_| get_node(d)).collect()
}

fn put_best(e: &mut Enc, b: &Option<(usize, f64, Vec<f64>)>) {
    match b {
        Some((i, v, beta)) => {
            e.u8(1);
            e.usize(*i);
            e.f64(*v);
            e.f64s(beta);
        }
        None => e.u8(0),
    }
}

fn get_best(d: &mut Dec<'_>) -> Result<Option<(usize, f64, Vec<f64>)>, CheckpointError> {
    Ok(if d.bool()? {
        Some((d.usize()?, d.f64()?, d.f64s()?))
    } else {
        None
    })
}

fn put_snap(e: &mut Enc, s: &EngineSnap) {
    match &s.phase {
        Phase::ThetaC => e.u8(0),
        Phase::ThetaD { bi, bo } => {
            e.u8(1);
            e.usizes(bi);
            e.usizes(bo);
        }
        Phase::STop => e.u8(2),
    }
    e.f64(s.theta);
    e.f64(s.tt);
    e.f64s(&s.beta);
    e.f64s(&s.f);
    e.u8s(&s.st);
    e.f64s(&s.sigma);
    e.usizes(&s.act);
    e.f64s(&s.chol);
    e.bool(s.track_o);
    e.f64s(&s.s_o);
    e.f64s(&s.w_o);
    e.f64(s.sum_o);
    e.bools(&s.block);
    e.bools(&s.parked);
    for v in [
        s.events,
        s.d_steps,
        s.wrong_direction,
        s.degenerate_jumps,
        s.max_active,
        s.n_nodes,
    ] {
        e.usize(v);
    }
}

fn get_snap(d: &mut Dec<'_>) -> Result<EngineSnap, CheckpointError> {
    let phase = match d.u8()? {
        0 => Phase::ThetaC,
        1 => Phase::ThetaD {
            bi: d.usizes()?,
            bo: d.usizes()?,
        },
        2 => Phase::STop,
        t => return Err(d.bad_tag("phase", t)),
    };
    let theta = d.f64()?;
    let tt = d.f64()?;
    let beta = d.f64s()?;
    let f = d.f64s()?;
    let st = d.u8s()?;
    let sigma = d.f64s()?;
    let act = d.usizes()?;
    let chol = d.f64s()?;
    let track_o = d.bool()?;
    let s_o = d.f64s()?;
    let w_o = d.f64s()?;
    let sum_o = d.f64()?;
    let block = d.bools()?;
    let parked = d.bools()?;
    let mut c = [0usize; 6];
    for v in &mut c {
        *v = d.usize()?;
    }
    Ok(EngineSnap {
        phase,
        theta,
        tt,
        beta,
        f,
        st,
        sigma,
        act,
        chol,
        track_o,
        s_o,
        w_o,
        sum_o,
        block,
        parked,
        events: c[0],
        d_steps: c[1],
        wrong_direction: c[2],
        degenerate_jumps: c[3],
        max_active: c[4],
        n_nodes: c[5],
    })
}

fn put_run(e: &mut Enc, r: &Run) {
    e.f64(r.c);
    put_nodes(e, &r.nodes);
    e.u8(RUN_ENDS.iter().position(|s| *s == r.end).unwrap_or(255) as u8);
    e.usize(r.events);
    e.usize(r.d_steps);
    e.bool(r.final_locally_optimal);
    match r.final_violation {
        Some((i, what)) => {
            e.u8(1);
            e.usize(i);
            e.u8(VIOLATIONS.iter().position(|s| *s == what).unwrap_or(255) as u8);
        }
        None => e.u8(0),
    }
    e.f64(r.s_standard);
    e.usize(r.max_active);
    e.f64(r.seconds);
}

fn get_run(d: &mut Dec<'_>) -> Result<Run, CheckpointError> {
    let c = d.f64()?;
    let nodes = get_nodes(d)?;
    let code = d.u8()?;
    let end = *RUN_ENDS
        .get(code as usize)
        .ok_or(d.bad_tag("run status", code))?;
    let events = d.usize()?;
    let d_steps = d.usize()?;
    let final_locally_optimal = d.bool()?;
    let final_violation = if d.bool()? {
        let i = d.usize()?;
        let code = d.u8()?;
        let w = *VIOLATIONS
            .get(code as usize)
            .ok_or(d.bad_tag("violation code", code))?;
        Some((i, w))
    } else {
        None
    };
    Ok(Run {
        c,
        nodes,
        end,
        events,
        d_steps,
        final_locally_optimal,
        final_violation,
        s_standard: d.f64()?,
        max_active: d.usize()?,
        seconds: d.f64()?,
    })
}

impl RobustCheckpoint {
    /// Number of finished `C`s (the run continues with the next one).
    pub fn n_finished(&self) -> usize {
        self.runs.len()
    }

    /// The binary form (see the module documentation).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut e = Enc::new(if self.run.is_some() {
            MAGIC
        } else {
            PREV_MAGIC
        });
        e.u64(self.fingerprint);
        if let Some(r) = &self.run {
            r.encode(&mut e);
        }
        e.f64(self.seconds);
        e.usize(self.runs.len());
        self.runs.iter().for_each(|r| put_run(&mut e, r));
        match &self.chosen {
            Some(ch) => {
                e.u8(1);
                e.usize(ch.run);
                e.usize(ch.node);
                e.f64(ch.c);
                e.f64(ch.param);
                e.opt_f64(ch.valid_error);
                e.f64s(&ch.beta);
            }
            None => e.u8(0),
        }
        e.opt_f64s(self.warm.as_deref());
        match &self.current {
            Current::Standard => e.u8(0),
            Current::Path(p) => {
                e.u8(1);
                e.f64(p.tmax);
                put_snap(&mut e, &p.snap);
                put_nodes(&mut e, &p.nodes);
                put_best(&mut e, &p.best);
            }
            Current::Cccp(c) => {
                e.u8(2);
                e.f64(c.tmax);
                e.usize(c.k);
                e.usize(c.r);
                e.i8s(&c.sig);
                e.f64s(&c.beta);
                e.f64s(&c.f);
                put_nodes(&mut e, &c.nodes);
                e.usizes(&c.rounds);
                e.usize(c.unconverged);
                put_best(&mut e, &c.best);
            }
        }
        persist::seal(e.finish())
    }

    /// Reads [`RobustCheckpoint::to_bytes`]' form.
    ///
    /// # Errors
    /// A [`CheckpointError`] naming what is wrong (magic, an older form, checksum, truncation,
    /// a bad tag); never a panic.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, CheckpointError> {
        for (found, reason) in OLD_FORMS {
            if bytes.starts_with(found.as_bytes()) {
                return Err(CheckpointError::Version {
                    file: FILE,
                    found,
                    reason,
                });
            }
        }
        let (mut d, current) = persist::open_either(bytes, MAGIC, PREV_MAGIC, FILE)?;
        let fingerprint = d.u64()?;
        let run = if current {
            Some(RunRecord::decode(&mut d)?)
        } else {
            None
        };
        let seconds = d.f64()?;
        // A run takes at least 8 + 8 + 1 + 8 + 8 + 1 + 1 + 8 + 8 + 8 bytes.
        let nr = d.len(59)?;
        let mut runs = Vec::with_capacity(nr);
        for _ in 0..nr {
            runs.push(get_run(&mut d)?);
        }
        let chosen = if d.bool()? {
            Some(Chosen {
                run: d.usize()?,
                node: d.usize()?,
                c: d.f64()?,
                param: d.f64()?,
                valid_error: d.opt_f64()?,
                beta: d.f64s()?,
            })
        } else {
            None
        };
        let warm = d.opt_f64s()?;
        let current = match d.u8()? {
            0 => Current::Standard,
            1 => Current::Path(Box::new(PathResume {
                tmax: d.f64()?,
                snap: get_snap(&mut d)?,
                nodes: get_nodes(&mut d)?,
                best: get_best(&mut d)?,
            })),
            2 => Current::Cccp(CccpResume {
                tmax: d.f64()?,
                k: d.usize()?,
                r: d.usize()?,
                sig: d.i8s()?,
                beta: d.f64s()?,
                f: d.f64s()?,
                nodes: get_nodes(&mut d)?,
                rounds: d.usizes()?,
                unconverged: d.usize()?,
                best: get_best(&mut d)?,
            }),
            t => return Err(d.bad_tag("state tag", t)),
        };
        d.finish()?;
        Ok(Self {
            fingerprint,
            run,
            runs,
            chosen,
            warm,
            seconds,
            current,
        })
    }

    /// Checks the checkpoint against the selection about to continue it: the run record and
    /// the fingerprint (`now`), and
    /// every length and index the continuation uses (`n` samples, `rows` training plus
    /// validation rows, `n_cs` values of `C`, `grid` CCCP points).
    pub(crate) fn check(
        &self,
        now: (u64, &RunRecord),
        n: usize,
        rows: usize,
        linear: Option<usize>,
        n_cs: usize,
        grid: usize,
    ) -> Result<(), CheckpointError> {
        persist::check_resume(FILE, (self.fingerprint, self.run.as_ref()), now)?;
        let bad = || CheckpointError::Mismatch {
            file: FILE,
            reason: "array lengths",
        };
        if self.runs.len() >= n_cs {
            return Err(bad());
        }
        let node_ok = |nd: &Node| {
            nd.beta.as_ref().is_none_or(|b| b.len() == n)
                && nd.outlier_sign.as_ref().is_none_or(|s| s.len() == n)
        };
        let nodes_ok = |nodes: &[Node]| nodes.iter().all(node_ok);
        if !self.runs.iter().all(|r| nodes_ok(&r.nodes)) {
            return Err(bad());
        }
        if let Some(ch) = &self.chosen {
            if ch.beta.len() != n || ch.run > self.runs.len() {
                return Err(bad());
            }
        }
        if self.warm.as_ref().is_some_and(|w| w.len() != n) {
            return Err(bad());
        }
        let best_ok = |b: &Option<(usize, f64, Vec<f64>)>, len: usize| {
            b.as_ref()
                .is_none_or(|(i, _, beta)| *i < len && beta.len() == n)
        };
        match &self.current {
            Current::Standard => {}
            Current::Path(p) => {
                p.snap
                    .check(n, rows, linear)
                    .map_err(|reason| CheckpointError::Mismatch { file: FILE, reason })?;
                if p.snap.n_nodes != p.nodes.len()
                    || !nodes_ok(&p.nodes)
                    || !best_ok(&p.best, p.nodes.len())
                {
                    return Err(bad());
                }
            }
            Current::Cccp(c) => {
                if c.k >= grid
                    || c.r >= MAX_OUTER
                    || c.sig.len() != n
                    || c.sig.iter().any(|s| !(-1..=1).contains(s))
                    || c.beta.len() != n
                    || c.f.len() != rows
                    || c.nodes.len() != c.k
                    || c.rounds.len() != c.k
                    || !nodes_ok(&c.nodes)
                    || !best_ok(&c.best, c.k)
                {
                    return Err(bad());
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{Dataset, DenseMatrix, Features};
    use crate::fit::Control;
    use crate::persist::StopAt;
    use crate::robust::select::{select, SelectParams};
    use crate::robust::{PathKind, RobustData, RobustParams, Task};
    use crate::svm::{Gamma, KernelParams};

    /// A state file of the previous version (no run record) still reads, writes back byte for
    /// byte and resumes to the nodes of an uninterrupted selection.
    #[test]
    fn the_previous_version_still_resumes() {
        let n = 40;
        let x: Vec<f64> = (0..n)
            .flat_map(|i| [(i as f64 * 1.3).sin(), (i as f64 * 0.7).cos()])
            .collect();
        let y = (0..n)
            .map(|i| {
                // A few labels against the trend: the outliers the path moves.
                let s = x[2 * i] + x[2 * i + 1] > 0.0;
                if s != (i % 9 == 4) {
                    1.0
                } else {
                    -1.0
                }
            })
            .collect();
        let d = Dataset::new(Features::Dense(DenseMatrix::new(n, 2, x).unwrap()), y, None).unwrap();
        let params = SelectParams::new()
            .robust(
                RobustParams::new()
                    .task(Task::Svc)
                    .kind(PathKind::Theta)
                    .kernel(KernelParams {
                        gamma: Gamma::Value(0.5),
                        ..KernelParams::default()
                    }),
            )
            .c_grid(vec![1.0, 10.0])
            .check()
            .unwrap();
        let data = RobustData::new(&d);
        let want = select(&params, &data, &mut Control::default())
            .unwrap()
            .report;
        let mut ck = select(&params, &data, &mut Control::new(StopAt(5)))
            .unwrap()
            .checkpoint
            .unwrap();
        let current = ck.to_bytes();
        ck.run = None;
        let back = persist::check_previous_version(
            &current,
            &ck.to_bytes(),
            (MAGIC, PREV_MAGIC),
            RobustCheckpoint::from_bytes,
            RobustCheckpoint::to_bytes,
            |c| c.run.is_some(),
        );
        let got = select(&params, &data, &mut Control::default().resume_from(&back))
            .unwrap()
            .report;
        assert_eq!(got.runs.len(), want.runs.len());
        for (a, b) in got.runs.iter().zip(&want.runs) {
            assert_eq!(a.nodes, b.nodes);
        }
        assert_eq!(got.chosen, want.chosen);
    }
}
