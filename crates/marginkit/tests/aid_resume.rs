//! Interrupt and resume of AID (LAD, linear and kernel SVM, S3VM): a run stopped by an observer
//! after k reports and continued from its (serialized) checkpoint makes exactly the iterates of
//! an uninterrupted run (bit for bit: every aggregated solve is deterministic); checkpoints made
//! with other data, parameters or another model are refused; damaged state files are errors.

use std::ops::ControlFlow;
use std::path::PathBuf;

use marginkit::aid::lad::{self, AidLadParams};
use marginkit::aid::s3vm::{self, AidS3vmParams, AidS3vmValidParams, BnbLimits, S3vmData};
use marginkit::aid::svm::SvmSolution;
use marginkit::aid::svm::{self, AidSvmParams, AidSvmValidParams};
use marginkit::aid::{AidCheckpoint, AidRun, IterRecord, Termination};
use marginkit::data::libsvm_fmt::{read_libsvm_path, ReadOptions};
use marginkit::error::FitError;
use marginkit::fit::Control;
use marginkit::solver::Status;
use marginkit::solver::{IterStats, NoObserver, Observer};
use marginkit::svm::params::{Gamma, KernelKind, KernelParams};
use marginkit::{Dataset, DenseMatrix, Features};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// An RBF kernel with this gamma.
fn rbf(gamma: f64) -> KernelParams {
    KernelParams {
        kind: KernelKind::Rbf,
        gamma: Gamma::Value(gamma),
        ..KernelParams::default()
    }
}

/// Counts reports; stops at report number `stop_at` (never when 0).
struct StopAfter {
    seen: usize,
    stop_at: usize,
}

impl StopAfter {
    fn new(stop_at: usize) -> Self {
        Self { seen: 0, stop_at }
    }
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

fn heart() -> Dataset {
    let p: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests", "data", "heart_scale"]
        .iter()
        .collect();
    read_libsvm_path(p, &ReadOptions::default()).unwrap()
}

/// Linear model plus heavy-tailed noise and gross outliers (as in `aid_lad.rs`).
fn regression(n: usize, m: usize, seed: u64) -> Dataset {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut x = Vec::with_capacity(n * m);
    let mut y = Vec::with_capacity(n);
    for i in 0..n {
        let mut v = 0.5;
        for j in 0..m {
            let a: f64 = rng.gen_range(-2.0..2.0);
            x.push(a);
            v += a * (1.0 + (j % 3) as f64);
        }
        let u: f64 = rng.gen_range(-1.0..1.0);
        v += u * u * u * 3.0;
        if i % 20 == 7 {
            v += if u > 0.0 { 50.0 } else { -50.0 };
        }
        y.push(v);
    }
    Dataset::new(Features::Dense(DenseMatrix::new(n, m, x).unwrap()), y, None).unwrap()
}

/// The records without their timings.
fn trace(r: &[IterRecord]) -> Vec<[u64; 8]> {
    r.iter()
        .map(|r| {
            [
                r.t as u64,
                r.clusters as u64,
                r.lower_bound.to_bits(),
                r.bound_t.to_bits(),
                r.aggregated_objective.to_bits(),
                r.objective.to_bits(),
                r.best_objective.to_bits(),
                r.violating as u64,
            ]
        })
        .collect()
}

/// One model's resumable fit, reduced to what the comparison needs:
/// `(trace, best objective, stop, best solution as bits)`, or the checkpoint.
type Summary = (Vec<[u64; 8]>, f64, (Status, Option<Termination>), Vec<u64>);
type Fit<'a> = dyn FnMut(
        &mut dyn Observer,
        Option<&AidCheckpoint>,
    ) -> Result<(Option<Summary>, Option<AidCheckpoint>), FitError>
    + 'a;

/// Runs uninterrupted, counts the reports, then for several stop points: stop, write and read
/// the state, continue (stopping once more on the way when possible), and compare.
fn check_resume(fit: &mut Fit<'_>, min_stops: usize) {
    let mut count = StopAfter::new(0);
    let (full, ck) = fit(&mut count, None).unwrap();
    assert!(ck.is_none());
    let full = full.unwrap();
    let total = count.seen;
    assert!(total >= 3, "only {total} observer reports");
    let mut stops = 0;
    // The last reports come from the AID loop even when an initial sample fit reports many times.
    let mut points: Vec<usize> = [
        1,
        2,
        total / 3,
        total / 2,
        2 * total / 3,
        total.saturating_sub(6),
        total.saturating_sub(4),
        total - 2,
        total - 1,
    ]
    .into_iter()
    .filter(|&k| k >= 1)
    .collect();
    points.dedup();
    for k in points {
        let (partial, ck) = fit(&mut StopAfter::new(k), None).unwrap();
        let Some(ck) = ck else {
            // A stop in AID-SVM's initial sample fit (nothing to keep), or a report from a solve
            // that converged at the same moment.
            continue;
        };
        stops += 1;
        if let Some(p) = &partial {
            assert_eq!(p.2 .0, Status::Interrupted);
            assert!(p.1 >= full.1, "partial {} < full {}", p.1, full.1);
        }
        let bytes = ck.to_bytes();
        let ck = AidCheckpoint::from_bytes(&bytes).unwrap();
        assert_eq!(ck.to_bytes(), bytes);
        // Continue, stopping once more after a few reports; then to the end.
        let (_, ck2) = fit(&mut StopAfter::new(2), Some(&ck)).unwrap();
        let ck = match ck2 {
            Some(c) => AidCheckpoint::from_bytes(&c.to_bytes()).unwrap(),
            None => ck,
        };
        let (done, more) = fit(&mut NoObserver, Some(&ck)).unwrap();
        assert!(more.is_none());
        let done = done.unwrap();
        assert_eq!(done.0, full.0, "iterates differ after a stop at report {k}");
        assert_eq!(done.1.to_bits(), full.1.to_bits());
        assert_eq!(done.2, full.2);
        assert_eq!(done.3, full.3);
    }
    assert!(stops >= min_stops, "{stops} stops");
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn lad_resumes_to_the_same_iterates() {
    let d = regression(3000, 4, 7);
    let params = AidLadParams::new().r0(0.004).check().unwrap();
    check_resume(
        &mut |obs, resume| {
            let done = lad::fit(&params, &d, &mut Control::new(obs).resume_opt(resume))?;
            let (f, c) = (done.report.run, done.checkpoint);
            Ok((
                f.map(|f| {
                    (
                        trace(&f.iterations),
                        f.best_objective,
                        (f.status, f.termination),
                        bits(&f.best),
                    )
                }),
                c,
            ))
        },
        2,
    );
}

fn svm_summary(f: AidRun<SvmSolution>) -> Summary {
    let b = &f.best;
    let mut v = bits(&b.w);
    v.push(b.b.to_bits());
    v.extend(bits(&b.alpha));
    v.extend(bits(&b.decision));
    v.extend(
        b.expansion
            .iter()
            .flat_map(|&(i, c)| [u64::from(i), c.to_bits()]),
    );
    (
        trace(&f.iterations),
        f.best_objective,
        (f.status, f.termination),
        v,
    )
}

#[test]
fn linear_svm_resumes_to_the_same_iterates() {
    let d = heart();
    let params = AidSvmParams::new()
        .c(1.0)
        .r0(0.02)
        .gap_tol(1e-6)
        .check()
        .unwrap();
    check_resume(
        &mut |obs, resume| {
            let done = svm::fit(&params, &d, &mut Control::new(obs).resume_opt(resume))?;
            let (f, c) = (done.report.run, done.checkpoint);
            Ok((f.map(svm_summary), c))
        },
        3,
    );
}

#[test]
fn kernel_svm_resumes_to_the_same_iterates() {
    let d = heart();
    let params = AidSvmParams::new()
        .c(1.0)
        .kernel(rbf(0.05))
        .r0(0.02)
        .solver_tol(1e-6)
        .check()
        .unwrap();
    check_resume(
        &mut |obs, resume| {
            let done = svm::fit(&params, &d, &mut Control::new(obs).resume_opt(resume))?;
            let (f, c) = (done.report.run, done.checkpoint);
            Ok((f.map(svm_summary), c))
        },
        3,
    );
}

fn s3vm_data() -> Dataset {
    let mut d = heart();
    let (mut kp, mut kn) = (0, 0);
    for v in d.y.iter_mut() {
        if *v > 0.0 && kp < 8 {
            kp += 1;
        } else if *v < 0.0 && kn < 8 {
            kn += 1;
        } else {
            *v = 0.0;
        }
    }
    d
}

fn s3vm_params() -> AidS3vmValidParams {
    AidS3vmParams::new()
        .c_labeled(0.05)
        .c_unlabeled(0.01)
        .balance(true)
        .bnb(BnbLimits {
            max_nodes: 400,
            time_limit: None,
            rel_gap: 1e-6,
        })
        .gap_tol(0.0)
        .max_iter(3)
        .check()
        .unwrap()
}

#[test]
fn s3vm_resumes_to_the_same_iterates() {
    let d = s3vm_data();
    let params = s3vm_params();
    check_resume(
        &mut |obs, resume| {
            let done = s3vm::fit(
                &params,
                S3vmData::new(&d),
                &mut Control::new(obs).resume_opt(resume),
            )?;
            let (f, c) = (done.report.run, done.checkpoint);
            Ok((
                f.map(|f| {
                    let mut v = bits(&f.best.w);
                    v.push(f.best.b.to_bits());
                    (
                        trace(&f.iterations),
                        f.best_objective,
                        (f.status, f.termination),
                        v,
                    )
                }),
                c,
            ))
        },
        2,
    );
}

/// A checkpoint of the linear AID-SVM on heart_scale, stopped near the end (a stop in the initial
/// sample fit, the first reports, gives no checkpoint).
fn svm_checkpoint(d: &Dataset, params: &AidSvmValidParams) -> AidCheckpoint {
    let mut count = StopAfter::new(0);
    svm::fit(params, d, &mut Control::new(&mut count)).unwrap();
    let ck = svm::fit(
        params,
        d,
        &mut Control::new(&mut StopAfter::new(count.seen - 2)),
    )
    .unwrap()
    .checkpoint;
    ck.unwrap()
}

#[test]
fn foreign_checkpoints_are_refused() {
    let d = heart();
    let params = AidSvmParams::new().r0(0.02).check().unwrap();
    let ck = svm_checkpoint(&d, &params);
    fn msg<T>(r: Result<T, FitError>) -> String {
        match r {
            Err(e) => e.to_string(),
            Ok(_) => panic!("accepted"),
        }
    }
    // Other data: one label flipped.
    let mut other = d.clone();
    other.y[5] = -other.y[5];
    let m = msg(svm::fit(
        &params,
        &other,
        &mut Control::default().resume_from(&ck),
    ));
    let rows = d.len();
    assert!(
        m.contains(&format!("was written for training data with {rows} rows"))
            && m.contains(&format!("(now {rows} rows")),
        "{m}"
    );
    // One row fewer.
    let fewer = d.subset(&(1..rows).collect::<Vec<_>>());
    let m = msg(svm::fit(
        &params,
        &fewer,
        &mut Control::default().resume_from(&ck),
    ));
    assert!(m.contains(&format!("(now {} rows", rows - 1)), "{m}");
    // Other parameters: C, or the kernel, named with both values.
    let p2 = AidSvmParams::from(params.clone()).c(2.0).check().unwrap();
    let m = msg(svm::fit(&p2, &d, &mut Control::default().resume_from(&ck)));
    assert!(m.contains("was written with -c 1 (now -c 2)"), "{m}");
    let p3 = AidSvmParams::from(params.clone())
        .kernel(rbf(0.1))
        .check()
        .unwrap();
    let m = msg(svm::fit(&p3, &d, &mut Control::default().resume_from(&ck)));
    assert!(m.contains("was written with -t 0 (now -t 2)"), "{m}");
    // Another model.
    let m = msg(lad::fit(
        &AidLadParams::new().check().unwrap(),
        &d,
        &mut Control::default().resume_from(&ck),
    ));
    assert!(m.contains("another model (AID-SVM"), "{m}");
    let m = msg(s3vm::fit(
        &s3vm_params(),
        S3vmData::new(&s3vm_data()),
        &mut Control::default().resume_from(&ck),
    ));
    assert!(m.contains("another model (AID-SVM"), "{m}");
    // The iteration and time limits may change.
    let p4 = AidSvmParams::from(params.clone())
        .max_iter(500)
        .time_limit(std::time::Duration::from_secs(100))
        .check()
        .unwrap();
    assert!(svm::fit(&p4, &d, &mut Control::default().resume_from(&ck)).is_ok());
}

#[test]
fn damaged_state_files_are_errors() {
    let d = heart();
    let params = AidSvmParams::new().r0(0.02).check().unwrap();
    let bytes = svm_checkpoint(&d, &params).to_bytes();
    assert!(AidCheckpoint::from_bytes(&bytes).is_ok());
    for len in 0..bytes.len() {
        let e = AidCheckpoint::from_bytes(&bytes[..len]).unwrap_err();
        assert!(e.to_string().contains("AID state file"), "{e}");
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
    for _ in 0..300 {
        let mut b = bytes.clone();
        let i = rng.gen_range(0..b.len());
        b[i] ^= 1 << rng.gen_range(0..8);
        assert!(AidCheckpoint::from_bytes(&b).is_err());
    }
    let mut b = bytes.clone();
    b.push(0);
    assert!(AidCheckpoint::from_bytes(&b).is_err());
    assert!(AidCheckpoint::from_bytes(b"MKFITCK2 not an AID file").is_err());
}

/// Stops at the `stop_at`-th report of a long stage inside an aggregated problem (kernel sums:
/// no violation, the stage's size as `active`); counts them when `stop_at` is 0.
struct StopInStage {
    seen: usize,
    stop_at: usize,
    sizes: Vec<usize>,
}

impl Observer for StopInStage {
    fn on_iter(&mut self, s: &IterStats) -> ControlFlow<()> {
        if !(s.max_violation.is_nan() && s.active > 0) {
            return ControlFlow::Continue(());
        }
        self.seen += 1;
        self.sizes.push(s.active);
        if self.seen == self.stop_at {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }
}

/// Ctrl-C inside the averaged-Gram stage (cluster-pair kernel sums and cluster kernel rows of
/// every iteration, the first iteration's included): the stop returns the resumable state, and
/// the continuation makes the uninterrupted run's iterates bit for bit.
#[test]
fn kernel_svm_stopped_inside_the_gram_stage_resumes() {
    let d = heart();
    let params = AidSvmParams::new()
        .c(1.0)
        .kernel(rbf(0.05))
        .r0(0.02)
        .solver_tol(1e-6)
        .check()
        .unwrap();
    let run = |obs: &mut dyn Observer, resume: Option<&AidCheckpoint>| {
        let done = svm::fit(&params, &d, &mut Control::new(obs).resume_opt(resume)).unwrap();
        let (f, c) = (done.report.run, done.checkpoint);
        (f.map(svm_summary), c)
    };
    let mut count = StopInStage {
        seen: 0,
        stop_at: 0,
        sizes: Vec::new(),
    };
    let (full, ck) = run(&mut count, None);
    assert!(ck.is_none());
    let full = full.unwrap();
    let total = count.seen;
    // Polls in the first iteration (every cluster's row) and in later ones (split clusters).
    let first = count.sizes[0];
    assert!(total >= 10, "{total} stage reports");
    assert!(count.sizes.iter().any(|&k| k > first), "{:?}", count.sizes);
    let mut later = 0;
    for k in (1..=total).step_by((total / 12).max(1)).chain([total]) {
        let (partial, ck) = run(
            &mut StopInStage {
                seen: 0,
                stop_at: k,
                sizes: Vec::new(),
            },
            None,
        );
        let ck = ck.unwrap_or_else(|| panic!("no state after a stop at stage report {k}"));
        if let Some(p) = &partial {
            later += 1;
            assert_eq!(p.2 .0, Status::Interrupted);
        }
        let ck = AidCheckpoint::from_bytes(&ck.to_bytes()).unwrap();
        let (done, more) = run(&mut NoObserver, Some(&ck));
        assert!(more.is_none());
        let done = done.unwrap();
        assert_eq!(
            done.0, full.0,
            "iterates differ after a stop at stage report {k}"
        );
        assert_eq!(done.1.to_bits(), full.1.to_bits());
        assert_eq!(done.2, full.2);
        assert_eq!(done.3, full.3);
    }
    assert!(later >= 3, "{later} stops after the first iteration");
}

/// The Nystrom mode's long stages (landmark columns, features, the exact finish's gradient
/// pass) poll too: a stop there returns no model and no state, without an error.
#[test]
fn nystrom_stops_inside_its_kernel_stages() {
    let d = heart();
    let params = AidSvmParams::new()
        .c(1.0)
        .kernel(rbf(0.05))
        .kernel_steering(marginkit::aid::svm::KernelSteering::Nystrom {
            rank: marginkit::aid::svm::NystromRank::Fixed(30),
            steer_gap: 1e-3,
        })
        .check()
        .unwrap();
    let mut count = StopInStage {
        seen: 0,
        stop_at: 0,
        sizes: Vec::new(),
    };
    let full = svm::fit(&params, &d, &mut Control::new(&mut count))
        .unwrap()
        .report
        .run;
    assert!(full.is_some());
    // 30 landmark columns, the features, the gradient pass's (one or two) sums.
    assert!(count.seen >= 32, "{} stage reports", count.seen);
    for k in [1, 30, count.seen] {
        let mut obs = StopInStage {
            seen: 0,
            stop_at: k,
            sizes: Vec::new(),
        };
        let done = svm::fit(&params, &d, &mut Control::new(&mut obs)).unwrap();
        let (fit, ck) = (done.report.run, done.checkpoint);
        assert!(fit.is_none() && ck.is_none(), "stop at stage report {k}");
    }
}

/// Appends the FNV-1a checksum the state files end with (what a user who edits a file and
/// recomputes its checksum produces).
fn reseal(mut body: Vec<u8>) -> Vec<u8> {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &x in &body {
        h ^= u64::from(x);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    body.extend_from_slice(&h.to_le_bytes());
    body
}

/// Flips bytes of a checkpoint's body, reseals it and resumes from every variant that still
/// reads: an error or a (short, iteration-limited) run, never a panic.
fn resume_crafted(bytes: &[u8], resume: &mut dyn FnMut(&AidCheckpoint)) {
    let body = &bytes[..bytes.len() - 8];
    let mut tried = 0;
    let mut i = 8;
    while i < body.len() {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut b = body.to_vec();
            b[i] ^= flip;
            if let Ok(c) = AidCheckpoint::from_bytes(&reseal(b)) {
                tried += 1;
                resume(&c);
            }
        }
        i += if i < 40 { 1 } else { 61 };
    }
    assert!(tried > 50, "{tried}");
}

#[test]
fn resealed_crafted_state_files_never_panic() {
    let d = heart();
    let params = AidSvmParams::new().r0(0.02).check().unwrap();
    let bytes = svm_checkpoint(&d, &params).to_bytes();
    assert_eq!(reseal(bytes[..bytes.len() - 8].to_vec()), bytes);
    // The iteration limit is not in the fingerprint: every resume below stays short.
    let short = AidSvmParams::from(params.clone())
        .max_iter(3)
        .check()
        .unwrap();
    resume_crafted(&bytes, &mut |c| {
        let _ = svm::fit(&short, &d, &mut Control::default().resume_from(c));
    });

    let d = regression(3000, 4, 7);
    let params = AidLadParams::new().r0(0.004).check().unwrap();
    let mut count = StopAfter::new(0);
    lad::fit(&params, &d, &mut Control::new(&mut count)).unwrap();
    let ck = lad::fit(
        &params,
        &d,
        &mut Control::new(&mut StopAfter::new(count.seen - 2)),
    )
    .unwrap()
    .checkpoint;
    let bytes = ck.expect("the observer stops the fit").to_bytes();
    let short = AidLadParams::from(params.clone())
        .max_iter(3)
        .check()
        .unwrap();
    resume_crafted(&bytes, &mut |c| {
        let _ = lad::fit(&short, &d, &mut Control::default().resume_from(c));
    });
}

/// A checkpoint of `run` stopped late (the first report whose stop leaves one, counting back
/// from the last).
fn late_checkpoint(run: &mut dyn FnMut(&mut StopAfter) -> Option<AidCheckpoint>) -> AidCheckpoint {
    let mut count = StopAfter::new(0);
    assert!(run(&mut count).is_none());
    (1..count.seen)
        .rev()
        .find_map(|k| run(&mut StopAfter::new(k)))
        .expect("some stop leaves a checkpoint")
}

/// AID-LAD and AID-S3VM name the setting that differs too (AID-SVM: above).
#[test]
fn lad_and_s3vm_refusals_name_the_setting() {
    let msg = |r: Result<(), FitError>| r.unwrap_err().to_string();
    let d = regression(3000, 4, 7);
    let params = AidLadParams::new().r0(0.004).check().unwrap();
    let ck = late_checkpoint(&mut |obs| {
        lad::fit(&params, &d, &mut Control::new(obs))
            .unwrap()
            .checkpoint
    });
    let lad_with = |p: AidLadParams| {
        let p = p.check().unwrap();
        msg(lad::fit(&p, &d, &mut Control::default().resume_from(&ck)).map(|_| ()))
    };
    let m = lad_with(AidLadParams::new().r0(0.005));
    assert!(
        m.contains("the AID state file was written with --r0 0.004 (now --r0 0.005)"),
        "{m}"
    );
    let m = lad_with(AidLadParams::new().r0(0.004).intercept(false));
    assert!(
        m.contains("was written with --no-intercept no (now --no-intercept yes)"),
        "{m}"
    );
    let sd = s3vm_data();
    let params = s3vm_params();
    let ck = late_checkpoint(&mut |obs| {
        s3vm::fit(&params, S3vmData::new(&sd), &mut Control::new(obs))
            .unwrap()
            .checkpoint
    });
    let other = AidS3vmParams::from(params.clone())
        .c_unlabeled(0.02)
        .check()
        .unwrap();
    let m = msg(s3vm::fit(
        &other,
        S3vmData::new(&sd),
        &mut Control::default().resume_from(&ck),
    )
    .map(|_| ()));
    assert!(
        m.contains("was written with --c-unlabeled 0.01 (now --c-unlabeled 0.02)"),
        "{m}"
    );
    // One label changed.
    let mut other = sd.clone();
    let i = other.y.iter().position(|&v| v > 0.0).unwrap();
    other.y[i] = -1.0;
    let m = msg(s3vm::fit(
        &params,
        S3vmData::new(&other),
        &mut Control::default().resume_from(&ck),
    )
    .map(|_| ()));
    assert!(m.contains("was written for training data with"), "{m}");
}
