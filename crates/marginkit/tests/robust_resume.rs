//! Interrupt and resume of the robust model selection (outlier paths OP-theta / OP-s and the
//! CCCP baseline, SVC and SVR): a selection stopped by an observer after k reports (inside a
//! standard SVM, a continuous step, a jump, or a CCCP round) and continued from its serialized
//! checkpoint gives exactly the nodes (breakpoints, objectives, coefficients), counters and
//! chosen model of an uninterrupted run; foreign and damaged state files are refused.

use marginkit::data::{Dataset, DenseMatrix, Features};
use marginkit::error::FitError;
use marginkit::fit::Control;
use marginkit::robust::cccp::{S_GRID_SVR, THETA_GRID};
use marginkit::robust::select::{select, Method, SelectParams, Selection};
use marginkit::robust::{PathKind, RobustCheckpoint, RobustData, RobustParams, RunEnd, Task};
use marginkit::solver::{IterStats, NoObserver, Observer, Status};
use marginkit::svm::{Gamma, KernelKind, KernelParams};
use marginkit::CheckpointError;

/// The linear kernel.
fn linear() -> KernelParams {
    KernelParams {
        kind: KernelKind::Linear,
        ..KernelParams::default()
    }
}

/// The RBF kernel with `gamma`.
fn rbf(gamma: f64) -> KernelParams {
    KernelParams {
        gamma: Gamma::Value(gamma),
        ..KernelParams::default()
    }
}

/// Robust parameters of `task` with `kernel`, unchecked.
fn params(task: Task, kernel: KernelParams) -> RobustParams {
    RobustParams::new().task(task).kernel(kernel)
}
use std::ops::ControlFlow;

/// Counts reports; stops at report number `stop_at` (never when 0).
struct StopAfter {
    seen: usize,
    stop_at: usize,
}

impl Observer for StopAfter {
    fn on_iter(&mut self, _: &IterStats) -> ControlFlow<()> {
        self.seen += 1;
        if self.seen == self.stop_at {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }
}

/// splitmix64 uniforms.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn blobs(n: usize, flip: f64, seed: u64) -> Dataset {
    let mut r = Rng(seed);
    let mut x = Vec::new();
    let mut y = Vec::new();
    for i in 0..n {
        let c = if i % 2 == 0 { 1.0 } else { -1.0 };
        x.push(c + 1.6 * (r.next() - 0.5));
        x.push(0.5 * c + 1.6 * (r.next() - 0.5));
        y.push(if r.next() < flip { -c } else { c });
    }
    Dataset::new(Features::Dense(DenseMatrix::new(n, 2, x).unwrap()), y, None).unwrap()
}

fn wave(n: usize, seed: u64) -> Dataset {
    let mut r = Rng(seed);
    let mut x = Vec::new();
    let mut y = Vec::new();
    for i in 0..n {
        let a = 2.0 * r.next() - 1.0;
        let b = 2.0 * r.next() - 1.0;
        let mut t = (2.0 * a).sin() + 0.5 * b + 0.2 * (r.next() - 0.5);
        if i % 9 == 4 {
            t += 6.0 * (r.next() - 0.5);
        }
        x.push(a);
        x.push(b);
        y.push(t);
    }
    Dataset::new(Features::Dense(DenseMatrix::new(n, 2, x).unwrap()), y, None).unwrap()
}

/// Everything of a selection but its timings.
fn same(a: &Selection, b: &Selection) {
    assert_eq!(a.runs.len(), b.runs.len());
    for (ra, rb) in a.runs.iter().zip(&b.runs) {
        assert_eq!(ra.nodes, rb.nodes, "nodes of C = {}", ra.c);
        assert_eq!(
            (ra.c, ra.end, ra.events, ra.d_steps, ra.max_active),
            (rb.c, rb.end, rb.events, rb.d_steps, rb.max_active)
        );
        assert_eq!(ra.final_violation, rb.final_violation);
        assert_eq!(ra.final_locally_optimal, rb.final_locally_optimal);
        assert_eq!(ra.s_standard.to_bits(), rb.s_standard.to_bits());
    }
    assert_eq!(a.chosen, b.chosen);
    assert!(a.status != Status::Interrupted && b.status != Status::Interrupted);
}

struct Case<'a> {
    params: RobustParams,
    kind: PathKind,
    method: Method,
    cs: Vec<f64>,
    train: &'a Dataset,
    valid: Option<&'a Dataset>,
}

impl Case<'_> {
    /// The selection of this case, watched by `obs`, continuing `resume`.
    fn try_run(
        &self,
        obs: &mut dyn Observer,
        resume: Option<&RobustCheckpoint>,
    ) -> Result<(Selection, Option<RobustCheckpoint>), FitError> {
        let sp = SelectParams::new()
            .robust(self.params.clone().kind(self.kind))
            .method(self.method.clone())
            .c_grid(self.cs.clone())
            .check()?;
        let data = RobustData::new(self.train).validate_on(self.valid);
        let fit = select(&sp, &data, &mut Control::new(obs).resume_opt(resume))?;
        Ok((fit.report, fit.checkpoint))
    }
    fn run(
        &self,
        obs: &mut dyn Observer,
        resume: Option<&RobustCheckpoint>,
    ) -> (Selection, Option<RobustCheckpoint>) {
        self.try_run(obs, resume).unwrap()
    }
}

/// Stops at `points` report counts spread over the run, continues (stopping once more on the
/// way), and compares with the uninterrupted run.
fn check_resume(case: &Case<'_>, points: usize) {
    let mut count = StopAfter {
        seen: 0,
        stop_at: 0,
    };
    let (full, ck) = case.run(&mut count, None);
    assert!(ck.is_none() && full.status != Status::Interrupted);
    let total = count.seen;
    assert!(total > points, "{total} reports");
    let mut stops = 0;
    for j in 0..points {
        let k = 1 + j * (total - 1) / points + j % 3;
        let (part, ck) = case.run(
            &mut StopAfter {
                seen: 0,
                stop_at: k,
            },
            None,
        );
        let Some(ck) = ck else {
            continue;
        };
        stops += 1;
        assert_eq!(part.status, Status::Interrupted);
        assert_eq!(part.runs.last().map(|r| r.end), Some(RunEnd::Interrupted));
        assert_eq!(part.chosen.beta.len(), case.train.len());
        let bytes = ck.to_bytes();
        let ck = RobustCheckpoint::from_bytes(&bytes).unwrap();
        assert_eq!(ck.to_bytes(), bytes);
        let (_, ck2) = case.run(
            &mut StopAfter {
                seen: 0,
                stop_at: 3 + j,
            },
            Some(&ck),
        );
        let ck = match ck2 {
            Some(c) => RobustCheckpoint::from_bytes(&c.to_bytes()).unwrap(),
            None => ck,
        };
        let (done, more) = case.run(&mut NoObserver, Some(&ck));
        assert!(more.is_none());
        same(&done, &full);
    }
    assert!(stops * 2 >= points, "{stops} stops of {points}");
}

#[test]
fn svc_paths_resume_to_the_same_nodes() {
    let train = blobs(70, 0.15, 3);
    let valid = blobs(40, 0.15, 4);
    for kind in [PathKind::Theta, PathKind::S] {
        let case = Case {
            params: params(Task::Svc, rbf(0.5)).keep_solutions(true),
            kind,
            method: Method::Path,
            cs: vec![0.3, 3.0],
            train: &train,
            valid: Some(&valid),
        };
        check_resume(&case, 12);
    }
}

#[test]
fn svr_paths_resume_to_the_same_nodes() {
    let train = wave(60, 5);
    for kind in [PathKind::Theta, PathKind::S] {
        let case = Case {
            params: params(Task::Svr, rbf(1.0)).keep_solutions(true),
            kind,
            method: Method::Path,
            cs: vec![1.0, 10.0],
            train: &train,
            valid: None,
        };
        check_resume(&case, 8);
    }
}

/// The linear engine keeps its outlier sum as primal weights (`w_o`, `sum_o`) accumulated in
/// the order of the events: a resumed path must restore them, not recompute them.
#[test]
fn linear_paths_resume_to_the_same_nodes() {
    let train = blobs(80, 0.2, 12);
    let valid = blobs(40, 0.2, 13);
    for kind in [PathKind::Theta, PathKind::S] {
        let case = Case {
            params: params(Task::Svc, linear())
                .bias(Some(1.0))
                .keep_solutions(true),
            kind,
            method: Method::Path,
            cs: vec![0.5, 5.0],
            train: &train,
            valid: Some(&valid),
        };
        check_resume(&case, 10);
    }
    let train = wave(60, 14);
    let case = Case {
        params: params(Task::Svr, linear())
            .bias(Some(1.0))
            .keep_solutions(true),
        kind: PathKind::Theta,
        method: Method::Path,
        cs: vec![1.0, 10.0],
        train: &train,
        valid: None,
    };
    check_resume(&case, 8);
}

#[test]
fn cccp_resumes_to_the_same_points() {
    let train = blobs(70, 0.15, 6);
    let valid = blobs(40, 0.15, 7);
    let case = Case {
        params: params(Task::Svc, rbf(0.5)).keep_solutions(true),
        kind: PathKind::Theta,
        method: Method::Cccp(THETA_GRID.to_vec()),
        cs: vec![0.3, 3.0],
        train: &train,
        valid: Some(&valid),
    };
    check_resume(&case, 8);
    let train = wave(60, 8);
    let case = Case {
        params: params(Task::Svr, rbf(1.0)),
        kind: PathKind::S,
        method: Method::Cccp(S_GRID_SVR.to_vec()),
        cs: vec![1.0, 10.0],
        train: &train,
        valid: None,
    };
    check_resume(&case, 6);
}

#[test]
fn foreign_and_damaged_state_files_are_refused() {
    let train = blobs(50, 0.15, 9);
    let case = Case {
        params: params(Task::Svc, rbf(0.5)),
        kind: PathKind::Theta,
        method: Method::Path,
        cs: vec![1.0, 10.0],
        train: &train,
        valid: None,
    };
    let (_, ck) = case.run(
        &mut StopAfter {
            seen: 0,
            stop_at: 15,
        },
        None,
    );
    let ck = ck.unwrap();
    let err = |c: &Case<'_>| {
        c.try_run(&mut NoObserver, Some(&ck))
            .unwrap_err()
            .to_string()
    };
    // One label changed: the training data is named, with its shape.
    let mut other = train.clone();
    other.y[3] = -other.y[3];
    let m = err(&Case {
        train: &other,
        ..case.clone_with()
    });
    let rows = train.len();
    assert!(
        m.contains(&format!("was written for training data with {rows} rows"))
            && m.contains(&format!("(now {rows} rows")),
        "{m}"
    );
    // One row fewer.
    let fewer = train.subset(&(1..rows).collect::<Vec<_>>());
    let m = err(&Case {
        train: &fewer,
        ..case.clone_with()
    });
    assert!(m.contains(&format!("(now {} rows", rows - 1)), "{m}");
    // Each changed setting is named with both values.
    let m = err(&Case {
        kind: PathKind::S,
        ..case.clone_with()
    });
    assert!(
        m.contains("was written with --path theta (now --path s)"),
        "{m}"
    );
    let m = err(&Case {
        cs: vec![1.0, 11.0],
        ..case.clone_with()
    });
    assert!(m.contains("was written with -c 1,10 (now -c 1,11)"), "{m}");
    let m = err(&Case {
        method: Method::Cccp(THETA_GRID.to_vec()),
        ..case.clone_with()
    });
    assert!(
        m.contains("was written with --cccp no (now --cccp yes)"),
        "{m}"
    );
    let m = err(&Case {
        params: params(Task::Svc, rbf(0.25)),
        ..case.clone_with()
    });
    assert!(m.contains("was written with -g 0.5 (now -g 0.25)"), "{m}");
    // The cache size may change.
    let p = case.params.clone().cache_bytes(1 << 20);
    let c2 = Case {
        params: p,
        valid: None,
        ..case.clone_with()
    };
    assert!(c2.try_run(&mut NoObserver, Some(&ck)).is_ok());
    // Damaged files.
    let bytes = ck.to_bytes();
    for len in 0..bytes.len() {
        let e = RobustCheckpoint::from_bytes(&bytes[..len]).unwrap_err();
        assert!(e.to_string().contains("robust state file"), "{e}");
    }
    let mut s = Rng(11);
    for _ in 0..300 {
        let mut b = bytes.clone();
        let i = (s.next() * b.len() as f64) as usize;
        b[i] ^= 1 << ((s.next() * 8.0) as u32);
        assert!(RobustCheckpoint::from_bytes(&b).is_err());
    }
    assert!(RobustCheckpoint::from_bytes(b"MKAIDCK1").is_err());
    // A state file of the older format is refused by name.
    let mut old = bytes.clone();
    old[..8].copy_from_slice(b"MKROBCK1");
    let e = RobustCheckpoint::from_bytes(&old).unwrap_err();
    assert!(
        matches!(
            e,
            CheckpointError::Version {
                found: "MKROBCK1",
                ..
            }
        ),
        "{e}"
    );
    let m = e.to_string();
    assert!(m.contains("older format") && m.contains("MKROBCK1"), "{m}");
}

impl<'a> Case<'a> {
    fn clone_with(&self) -> Case<'a> {
        Case {
            params: self.params.clone(),
            kind: self.kind,
            method: self.method.clone(),
            cs: self.cs.clone(),
            train: self.train,
            valid: self.valid,
        }
    }
}
