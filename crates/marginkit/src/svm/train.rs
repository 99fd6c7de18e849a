//! Training kernel SVMs: each LIBSVM formulation becomes a [`BoxQp`] solved by [`smo`];
//! classification with more than two classes trains one binary problem per pair of classes
//! (one-vs-one), as LIBSVM does.
//!
//! | formulation | variables | p | y | upper u_i | equality |
//! |---|---|---|---|---|---|
//! | C-SVC | a_i | -1 | y_i | C w_i cw(y_i) | y'a = 0 |
//! | nu-SVC | a_i | 0 | y_i | w_i | two: sums per class (nu engine) |
//! | one-class | a_i | 0 | +1 | w_i | e'a = nu sum(w) |
//! | epsilon-SVR | a_i, a*_i | eps -/+ z_i | +1, -1 | C w_i | y'a = 0 |
//! | nu-SVR | a_i, a*_i | -/+ z_i | +1, -1 | C w_i | two (nu engine) |
//!
//! (`w_i` is the sample weight, `cw` the class weight, `z_i` the regression target.)

use std::borrow::Cow;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::checkpoint::{fingerprint, record, DoneSub, FitCheckpoint, SubState};
use super::model::SvmModel;
use super::params::{PlattFit, Probability, SvmType, SvmValidParams};
use super::probability;
pub use super::report::SubproblemReport;
use crate::data::{Dataset, Features};
use crate::error::{CheckpointError, DataError, FitError, ParseError, ParseErrorKind};
use crate::fit::{Control, CrossValidation, Fit, Report};
use crate::kernel::cache::CacheStats;
use crate::persist;

/// A checkpoint whose saved subproblems do not fit the problem (a damaged or crafted state file
/// that still carries the right fingerprint).
pub(super) const DAMAGED_CHECKPOINT: CheckpointError = CheckpointError::Mismatch {
    file: super::checkpoint::FILE,
    reason: "its saved subproblems do not match this problem",
};
use crate::kernel::qmatrix::{OneClassQ, QMatrix, SvcQ, SvrQ};
use crate::kernel::KernelSpec;
use crate::solver::engine;
use crate::solver::smo::{Smo, SmoSnapshot};
use crate::solver::{BoxQp, Equality, Observer, SolveInfo, SolverSettings, Status};

/// Largest number of classes accepted for one-vs-one training.
pub const MAX_CLASSES: usize = 65_536;

/// What a fit reports besides the model.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FitReport {
    /// One entry per binary subproblem (one for regression and one-class).
    pub subproblems: Vec<SubproblemReport>,
    /// Non-fatal warnings (also sent to the `log` facade).
    pub warnings: Vec<String>,
    /// The solves of the internal cross-validation behind Platt scaling (`-b 1`), if any.
    pub calibration: Vec<SubproblemReport>,
    /// Kernel-cache requests over the subproblems' solves (hits: served from the cache).
    pub cache: CacheStats,
}

impl Report for FitReport {
    fn status(&self) -> Status {
        FitReport::status(self)
    }
}

impl FitReport {
    /// The worst status over the subproblems and the calibration solves (converged only if
    /// all converged; an interruption outranks a limit).
    pub fn status(&self) -> Status {
        let all = || self.subproblems.iter().chain(&self.calibration);
        if all().any(|s| s.status == Status::Interrupted) {
            return Status::Interrupted;
        }
        all()
            .map(|s| s.status)
            .find(|s| *s != Status::Converged)
            .unwrap_or(Status::Converged)
    }
    /// The largest final KKT violation over the subproblems.
    pub fn max_violation(&self) -> f64 {
        self.subproblems
            .iter()
            .map(|s| s.max_violation)
            .fold(0.0, f64::max)
    }
    /// The largest duality gap over the subproblems.
    pub fn gap(&self) -> f64 {
        self.subproblems.iter().map(|s| s.gap).fold(0.0, f64::max)
    }
    /// The largest relative duality gap over the subproblems
    /// ([`crate::solver::relative_gap`]).
    pub fn relative_gap(&self) -> f64 {
        self.subproblems
            .iter()
            .map(|s| crate::solver::relative_gap(s.gap, s.objective))
            .fold(0.0, f64::max)
    }
    /// Total iterations over the subproblems.
    pub fn iterations(&self) -> u64 {
        self.subproblems.iter().map(|s| s.iterations).sum()
    }
}

/// One solved decision function: signed coefficients per sample of its (sub)problem.
pub(super) struct DecisionFunction {
    pub(super) coef: Vec<f64>,
    pub(super) rho: f64,
    pub(super) report: SubproblemReport,
    /// Kernel cache counters of the solve (zero for a subproblem taken from a checkpoint).
    pub(super) cache: CacheStats,
}

/// Trains a kernel SVM on `data`.
///
/// When a solve ends before convergence (the observer asked to stop, e.g. a [`Cancel`] set by
/// Ctrl-C, or an iteration or time limit), the fit returns at once with the model built from
/// what is done (subproblems not reached have zero coefficients; the report's status says
/// so) and a [`FitCheckpoint`]. Passing that checkpoint back through
/// [`Control::resume_from`] (same data and parameters; the limits, cache size and thread count
/// may differ) continues every unfinished subproblem from the solver's exact state, so the
/// final model equals that of an uninterrupted fit bit for bit. An interruption stops the
/// remaining subproblems too; an iteration or time limit only ends the subproblem that hit it.
///
/// Platt scaling (`-b 1`) of a class pair is recomputed on resume if it was interrupted; the
/// Laplace scale of SVR (`-b 1` with `-s 3/4`) is computed only after a converged solve.
///
/// [`Cancel`]: crate::solver::Cancel
///
/// # Errors
/// [`FitError::Data`] for empty data, a single class, infeasible nu or malformed precomputed
/// kernels; [`FitError::Solve`] on numerical breakdown; [`FitError::Checkpoint`] when the state
/// to resume from was made with other data or parameters or does not fit the problem
/// ([`FitError::Solve`] with [`crate::error::SolveError::Checkpoint`] when a saved solver
/// snapshot does not). Non-convergence is not an error: it is the status in the report.
pub fn fit(
    params: &SvmValidParams,
    data: &Dataset,
    ctl: &mut Control<'_, FitCheckpoint>,
) -> Result<Fit<SvmModel, FitReport, FitCheckpoint>, FitError> {
    let resume = ctl.resume();
    let (model, report, checkpoint) = fit_from(params, data, ctl.observer(), resume)?;
    Ok(Fit {
        model,
        report,
        checkpoint,
    })
}

fn fit_from(
    params: &SvmValidParams,
    data: &Dataset,
    obs: &mut dyn Observer,
    resume: Option<&FitCheckpoint>,
) -> Result<(SvmModel, FitReport, Option<FitCheckpoint>), FitError> {
    if data.is_empty() {
        return Err(DataError::Empty.into());
    }
    if let Some(w) = &data.weights {
        check_weights(w, data.len())?;
        // Samples of weight 0 cannot enter the model: fit without them (so that nothing, not
        // even Platt's folds, depends on them) and map the support vectors back to the rows.
        if w.contains(&0.0) {
            let keep: Vec<usize> = (0..data.len()).filter(|&i| w[i] > 0.0).collect();
            if keep.is_empty() {
                return Err(DataError::Empty.into());
            }
            let (mut model, report, ck) = fit_from(params, &data.subset(&keep), obs, resume)?;
            if let Some(idx) = &mut model.sv_indices {
                for i in idx.iter_mut() {
                    *i = keep[*i];
                }
            }
            return Ok((model, report, ck));
        }
    }
    // A pass over the data: only when a checkpoint is checked or written.
    let fp = || fingerprint(params, data);
    if let Some(c) = resume {
        persist::check_resume(
            super::checkpoint::FILE,
            (c.fingerprint, c.run.as_ref()),
            (fp(), &record(params, data)),
        )?;
    }
    let kernel = params.kernel.resolve(data.n_features());
    let mut report = FitReport::default();
    let mut subs: Vec<SubState> = Vec::new();
    let model = match params.svm_type {
        SvmType::CSvc | SvmType::NuSvc => fit_classifier(
            params,
            kernel,
            data,
            obs,
            &mut report,
            resume.map(|c| c.subs.as_slice()),
            &mut subs,
        )?,
        SvmType::OneClass | SvmType::EpsSvr | SvmType::NuSvr => {
            let c: Vec<f64> = (0..data.len()).map(|i| params.c * data.weight(i)).collect();
            let f = match resume.and_then(|c| c.subs.first()) {
                Some(SubState::Done(d)) if d.coef.len() != data.len() => {
                    return Err(DAMAGED_CHECKPOINT.into());
                }
                Some(SubState::Done(d)) => DecisionFunction {
                    coef: d.coef.clone(),
                    rho: d.rho,
                    report: d.report.clone(),
                    cache: CacheStats::default(),
                },
                other => {
                    let snap = match other {
                        Some(SubState::Stopped { snap, .. }) => Some(&**snap),
                        _ => None,
                    };
                    let all = Samples {
                        x: &data.x,
                        rows: None,
                        y: Cow::Borrowed(&data.y),
                        c: &c,
                    };
                    let (f, snap) = solve_one(params, kernel, all, obs, snap, true)?;
                    subs.push(sub_state(&f, snap, None));
                    f
                }
            };
            if subs.is_empty() {
                subs.push(sub_state(&f, None, None));
            }
            report.subproblems.push(f.report.clone());
            report.cache.hits += f.cache.hits;
            report.cache.misses += f.cache.misses;
            let prob_a = if params.probability == Probability::On
                && params.svm_type.is_regression()
                && f.report.status == Status::Converged
            {
                // Empty (and the report interrupted) when the observer stopped a fold's fit:
                // a resumed fit recomputes it.
                svr_sigma(params, data, obs, &mut report)?.map_or_else(Vec::new, |s| vec![s])
            } else {
                Vec::new()
            };
            let sv_idx: Vec<usize> = (0..data.len()).filter(|&i| f.coef[i] != 0.0).collect();
            SvmModel {
                svm_type: params.svm_type,
                kernel,
                labels: Vec::new(),
                n_sv: Vec::new(),
                sv: data.x.select_rows(&sv_idx),
                sv_coef: vec![sv_idx.iter().map(|&i| f.coef[i]).collect()],
                sv_indices: Some(sv_idx),
                rho: vec![f.rho],
                prob_a,
                prob_b: Vec::new(),
                sv_norms: Vec::new(),
            }
            .with_norms()
        }
    };
    for w in &report.warnings {
        log::warn!("{w}");
    }
    let checkpoint = (report.status() != Status::Converged).then(|| FitCheckpoint {
        fingerprint: fp(),
        run: Some(record(params, data)),
        subs,
    });
    Ok((model, report, checkpoint))
}

/// Sample weights must be finite and non-negative (the field is public, so [`Dataset::new`]'s
/// check may have been bypassed), and at least one must be positive: a fit on weights that are
/// all zero has nothing to learn from (it is an error, not an all-zero model).
pub(crate) fn check_weights(w: &[f64], n: usize) -> Result<(), DataError> {
    if w.len() != n {
        return Err(DataError::Shape {
            what: "weights",
            expected: n,
            found: w.len(),
        });
    }
    match w.iter().position(|v| !(v.is_finite() && *v >= 0.0)) {
        Some(row) => Err(DataError::BadWeight { row, value: w[row] }),
        None if n > 0 && w.iter().all(|&v| v == 0.0) => Err(DataError::AllWeightsZero { n }),
        None => Ok(()),
    }
}

/// Reads a per-sample weight file (LIBSVM's weights extension, `-W FILE`): one weight per line,
/// in the order of the training samples; blank lines and lines starting with `#` are skipped;
/// each weight must be a finite number `>= 0`. Lines may end in `\r\n`.
///
/// # Errors
/// [`ParseError`] with the 1-based line and column of the first bad weight.
pub fn parse_sample_weights(text: &str) -> Result<Vec<f64>, ParseError> {
    let mut w = Vec::new();
    for (k, line) in text.lines().enumerate() {
        let lead = line.len() - line.trim_start().len();
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let col = line[..lead].chars().count() + 1;
        let err = |kind| ParseError {
            line: k + 1,
            column: col,
            kind,
        };
        let v: f64 = t.parse().map_err(|_| {
            err(ParseErrorKind::Expected {
                expected: "a weight (a number >= 0)",
                found: t.chars().take(40).collect(),
            })
        })?;
        if !v.is_finite() {
            return Err(err(ParseErrorKind::NonFinite { what: "weight" }));
        }
        if v < 0.0 {
            return Err(err(ParseErrorKind::Expected {
                expected: "a weight >= 0",
                found: t.chars().take(40).collect(),
            }));
        }
        w.push(v);
    }
    Ok(w)
}

/// What a checkpoint keeps of a subproblem that just ran.
pub(super) fn sub_state(
    f: &DecisionFunction,
    snap: Option<SmoSnapshot>,
    prob: Option<(f64, f64)>,
) -> SubState {
    match snap {
        Some(s) if f.report.status != Status::Converged => SubState::Stopped {
            snap: Box::new(s),
            prob,
        },
        _ if f.report.status == Status::Converged => SubState::Done(DoneSub {
            coef: f.coef.clone(),
            rho: f.rho,
            report: f.report.clone(),
            prob,
        }),
        // Stopped without a snapshot (the sharded block engine keeps none): start over.
        _ => SubState::NotStarted,
    }
}

/// LIBSVM's class order: first appearance, except that a binary problem labelled {-1, +1}
/// puts +1 first.
pub fn class_order(y: &[f64]) -> Vec<f64> {
    let mut labels: Vec<f64> = Vec::new();
    for &v in y {
        if !labels.contains(&v) {
            labels.push(v);
        }
    }
    if labels.len() == 2 && labels[0] == -1.0 && labels[1] == 1.0 {
        labels.swap(0, 1);
    }
    labels
}

/// The product of the `-w` factors given for `label` (1 when none).
pub(super) fn class_weight(params: &SvmValidParams, label: f64) -> f64 {
    params
        .class_weights
        .iter()
        .filter(|(l, _)| *l == label)
        .map(|(_, w)| w)
        .product()
}

// One piece: the loop over class pairs carries the resumed states, calibrations and the stop
// that the checkpoint records.
fn fit_classifier(
    params: &SvmValidParams,
    kernel: KernelSpec,
    data: &Dataset,
    obs: &mut dyn Observer,
    report: &mut FitReport,
    resume: Option<&[SubState]>,
    subs: &mut Vec<SubState>,
) -> Result<SvmModel, FitError> {
    let labels = class_order(&data.y);
    check_classes(&labels, params, report)?;
    let nc = labels.len();
    // Samples of each class, in data order (`u32`: half the memory of `usize` on a large fit).
    if u32::try_from(data.len()).is_err() {
        return Err(crate::error::SolveError::Dimensions("more than u32::MAX samples").into());
    }
    let mut members: Vec<Vec<u32>> = vec![Vec::new(); nc];
    for (i, &v) in data.y.iter().enumerate() {
        let c = labels
            .iter()
            .position(|&l| l == v)
            .expect("invariant: label listed");
        members[c].push(i as u32);
    }
    let cw: Vec<f64> = labels.iter().map(|&l| class_weight(params, l)).collect();

    if params.svm_type == SvmType::NuSvc {
        for i in 0..nc {
            for j in i + 1..nc {
                let wi: f64 = members[i].iter().map(|&k| data.weight(k as usize)).sum();
                let wj: f64 = members[j].iter().map(|&k| data.weight(k as usize)).sum();
                if params.nu * (wi + wj) / 2.0 > wi.min(wj) {
                    return Err(DataError::InfeasibleNu.into());
                }
            }
        }
    }

    let mut nonzero = vec![false; data.len()];
    let mut funcs: Vec<DecisionFunction> = Vec::with_capacity(nc * (nc - 1) / 2);
    let mut prob_a = Vec::new();
    let mut prob_b = Vec::new();
    let mut interrupted = false;
    let n_pairs = nc * (nc - 1) / 2;
    for i in 0..nc {
        for j in i + 1..nc {
            let pair = funcs.len();
            let idx: Vec<usize> = members[i]
                .iter()
                .chain(&members[j])
                .map(|&k| k as usize)
                .collect();
            let not_reached = |len: usize| DecisionFunction {
                coef: vec![0.0; len],
                rho: 0.0,
                report: SubproblemReport::not_reached(Some((labels[i], labels[j]))),
                cache: CacheStats::default(),
            };
            let saved = resume.and_then(|r| r.get(pair));
            let mut f = if interrupted {
                subs.push(SubState::NotStarted);
                not_reached(idx.len())
            } else if let Some(SubState::Done(d)) = saved {
                if d.coef.len() != idx.len() {
                    return Err(DAMAGED_CHECKPOINT.into());
                }
                if let Some((a, b)) = d.prob {
                    prob_a.push(a);
                    prob_b.push(b);
                }
                subs.push(SubState::Done(d.clone()));
                DecisionFunction {
                    coef: d.coef.clone(),
                    rho: d.rho,
                    report: d.report.clone(),
                    cache: CacheStats::default(),
                }
            } else {
                // The pair's rows are read in place (no copy of the data for the subproblem).
                let y: Vec<f64> = (0..idx.len())
                    .map(|k| if k < members[i].len() { 1.0 } else { -1.0 })
                    .collect();
                let c: Vec<f64> = (0..idx.len())
                    .map(|k| {
                        let class_w = if y[k] > 0.0 { cw[i] } else { cw[j] };
                        params.c * class_w * data.weight(idx[k])
                    })
                    .collect();
                let (snap, saved_prob) = match saved {
                    Some(SubState::Stopped { snap, prob }) => (Some(&**snap), *prob),
                    _ => (None, None),
                };
                let prob = if params.probability == Probability::On {
                    match saved_prob {
                        Some(p) => Some(p),
                        None => {
                            let sw: Vec<f64> = idx.iter().map(|&k| data.weight(k)).collect();
                            let pair = Samples {
                                x: &data.x,
                                rows: Some(&idx),
                                y: Cow::Borrowed(&y),
                                c: &c,
                            };
                            binary_probability(params, kernel, &pair, &sw, obs, report)?
                        }
                    }
                } else {
                    None
                };
                if params.probability == Probability::On && prob.is_none() {
                    // Interrupted inside the calibration: this pair starts over on resume.
                    interrupted = true;
                    subs.push(SubState::NotStarted);
                    not_reached(idx.len())
                } else {
                    if let Some((a, b)) = prob {
                        prob_a.push(a);
                        prob_b.push(b);
                    }
                    // `y` is handed over: the solve reuses its buffer for the linear term.
                    let pair = Samples {
                        x: &data.x,
                        rows: Some(&idx),
                        y: Cow::Owned(y),
                        c: &c,
                    };
                    let (f, snap) = solve_one(params, kernel, pair, obs, snap, true)?;
                    if f.report.status == Status::Interrupted {
                        interrupted = true;
                    }
                    subs.push(sub_state(&f, snap, prob));
                    f
                }
            };
            f.report.classes = Some((labels[i], labels[j]));
            for (k, &orig) in idx.iter().enumerate() {
                if f.coef[k] != 0.0 {
                    nonzero[orig] = true;
                }
            }
            // Keep the coefficients indexed by original sample.
            let mut full = vec![0.0; data.len()];
            for (k, &orig) in idx.iter().enumerate() {
                full[orig] = f.coef[k];
            }
            f.coef = full;
            report.subproblems.push(f.report.clone());
            report.cache.hits += f.cache.hits;
            report.cache.misses += f.cache.misses;
            funcs.push(f);
        }
    }

    // Support vectors grouped by class in label order.
    let mut sv_idx = Vec::new();
    let mut n_sv = vec![0usize; nc];
    for c in 0..nc {
        for &k in &members[c] {
            let k = k as usize;
            if nonzero[k] {
                sv_idx.push(k);
                n_sv[c] += 1;
            }
        }
    }
    let mut sv_coef = vec![vec![0.0; sv_idx.len()]; nc - 1];
    let mut start = vec![0usize; nc];
    for c in 1..nc {
        start[c] = start[c - 1] + n_sv[c - 1];
    }
    let mut p = 0;
    let mut rho = Vec::with_capacity(funcs.len());
    for i in 0..nc {
        for j in i + 1..nc {
            let f = &funcs[p];
            for (pos, &k) in sv_idx[start[i]..start[i] + n_sv[i]].iter().enumerate() {
                sv_coef[j - 1][start[i] + pos] = f.coef[k];
            }
            for (pos, &k) in sv_idx[start[j]..start[j] + n_sv[j]].iter().enumerate() {
                sv_coef[i][start[j] + pos] = f.coef[k];
            }
            rho.push(f.rho);
            p += 1;
        }
    }
    if prob_a.len() != n_pairs {
        // Calibration is all or nothing.
        prob_a.clear();
        prob_b.clear();
    }
    Ok(SvmModel {
        svm_type: params.svm_type,
        kernel,
        labels,
        n_sv,
        sv: data.x.select_rows(&sv_idx),
        sv_indices: Some(sv_idx),
        sv_coef,
        rho,
        prob_a,
        prob_b,
        sv_norms: Vec::new(),
    }
    .with_norms())
}

fn to_signs(y: &[f64]) -> Vec<i8> {
    y.iter().map(|&v| if v > 0.0 { 1 } else { -1 }).collect()
}

/// The samples of one binary classification, regression or one-class problem: the rows `rows`
/// of `x` (`None`: all), their targets `y` (+1/-1 for classification) and per-sample costs `c`
/// (for nu-SVC and one-class, `c` holds the sample weights scaled by C, which those
/// formulations divide out).
struct Samples<'a> {
    x: &'a Features,
    rows: Option<&'a [usize]>,
    y: Cow<'a, [f64]>,
    c: &'a [f64],
}

/// Solves one binary classification, regression or one-class problem on `samples`: builds the
/// formulation's [`BoxQp`] with the function for it (as LIBSVM's `solve_*`), solves it and
/// reports.
fn solve_one(
    params: &SvmValidParams,
    kernel: KernelSpec,
    samples: Samples<'_>,
    obs: &mut dyn Observer,
    resume: Option<&SmoSnapshot>,
    want_snapshot: bool,
) -> Result<(DecisionFunction, Option<SmoSnapshot>), FitError> {
    let Samples { x, rows, y, c } = samples;
    // The classifiers' matrix reads the selected rows in place; the others get a copy.
    let selected;
    let (x, rows) = match (params.svm_type, rows) {
        (SvmType::CSvc | SvmType::NuSvc, r) => (x, r),
        (_, Some(r)) => {
            selected = x.select_rows(r);
            (&selected, None)
        }
        (_, None) => (x, None),
    };
    let mut sub = Subproblem {
        x,
        rows,
        kernel,
        plan: engine::plan(
            params.planned_engine(resume),
            params.cache_bytes,
            y.len(),
            engine::row_cost(x, kernel),
        ),
        settings: &params.solver,
        obs,
        resume,
        want_snapshot,
    };
    let s = match params.svm_type {
        SvmType::CSvc => solve_c_svc(&mut sub, y, c)?,
        SvmType::NuSvc => solve_nu_svc(&mut sub, y, c, params.c, params.nu)?,
        SvmType::OneClass => solve_one_class(&mut sub, c, params.c, params.nu)?,
        SvmType::EpsSvr => solve_epsilon_svr(&mut sub, &y, c, params.epsilon)?,
        SvmType::NuSvr => solve_nu_svr(&mut sub, &y, c, params.nu)?,
    };
    check_finite(&s.info)?;
    let (n_sv, n_bsv) = s.bounds.counts(params.svm_type, &s.coef);
    let info = s.info;
    Ok((
        DecisionFunction {
            cache: s.cache,
            rho: info.rho,
            report: SubproblemReport::of(&info, n_sv, n_bsv),
            coef: s.coef,
        },
        s.snapshot,
    ))
}

/// What every formulation's solve is given besides its targets and costs.
struct Subproblem<'a, 'o> {
    x: &'a Features,
    /// The rows of `x` that make the problem (classifiers; `None`: all).
    rows: Option<&'a [usize]>,
    kernel: KernelSpec,
    /// The QP engine and the bytes its Q matrix may hold.
    plan: engine::Plan,
    settings: &'a SolverSettings,
    obs: &'o mut dyn Observer,
    resume: Option<&'a SmoSnapshot>,
    want_snapshot: bool,
}

/// A solved formulation: signed coefficients per sample, the solver's account, the dual
/// variables with their bounds, and the solver state when it stopped early.
struct Solved {
    coef: Vec<f64>,
    info: SolveInfo,
    bounds: Bounds,
    snapshot: Option<SmoSnapshot>,
    cache: CacheStats,
}

impl Subproblem<'_, '_> {
    /// Runs the planned engine (pair or block SMO) on `qp` from `alpha` (`nu`: the nu problem,
    /// two equalities); returns
    /// the solver's account, its `r` (nu engine) and the cache counters. The kernel cache is
    /// freed before the caller builds its result arrays: they would otherwise add to the fit's
    /// peak memory.
    fn run<Q: QMatrix>(
        &mut self,
        mut q: Q,
        qp: &BoxQp<'_>,
        alpha: &mut [f64],
        nu: bool,
    ) -> Result<(SolveInfo, f64, Option<SmoSnapshot>, CacheStats), FitError> {
        let smo = Smo::new(self.settings)
            .nu(nu)
            .resume(self.resume)
            .keep_snapshot(self.want_snapshot);
        let out = engine::solve(&self.plan, &smo, &mut q, qp, alpha, self.obs)?;
        let (info, r, snap) = (out.info, out.r, out.snapshot);
        let cache = q.cache_stats();
        drop(q);
        Ok((info, r, snap, cache))
    }
}

/// C-SVC: `min 1/2 a'Qa - e'a`, `0 <= a_i <= c_i`, `y'a = 0`.
fn solve_c_svc(
    sub: &mut Subproblem<'_, '_>,
    y: Cow<'_, [f64]>,
    c: &[f64],
) -> Result<Solved, FitError> {
    let l = y.len();
    let signs = to_signs(&y);
    // The labels' buffer becomes the linear term (one n-long array less at the peak).
    let mut p = y.into_owned();
    p.fill(-1.0);
    let qp = BoxQp {
        p: &p,
        y: &signs,
        upper: c,
        equality: Equality::Sum { delta: 0.0 },
        fixed: None,
    };
    let q = SvcQ::with_rows(sub.x, sub.rows, sub.kernel, &signs, sub.plan.cache_bytes)?;
    let mut alpha = vec![0.0; l];
    let (info, _, snapshot, cache) = sub.run(q, &qp, &mut alpha, false)?;
    let coef: Vec<f64> = alpha
        .iter()
        .zip(&signs)
        .map(|(a, &s)| a * f64::from(s))
        .collect();
    Ok(Solved {
        coef,
        info,
        bounds: Bounds::new(alpha, c.to_vec()),
        snapshot,
        cache,
    })
}

/// nu-SVC: `min 1/2 a'Qa`, `0 <= a_i <= w_i` (the sample weights: `c / C`), `y'a = 0`,
/// `e'a = nu sum(w)`; the result is rescaled to the C-SVC form with `C = 1/r`, LIBSVM's
/// convention.
fn solve_nu_svc(
    sub: &mut Subproblem<'_, '_>,
    y: Cow<'_, [f64]>,
    c: &[f64],
    c_scale: f64,
    nu: f64,
) -> Result<Solved, FitError> {
    let l = y.len();
    let signs = to_signs(&y);
    // Bounds are the sample weights (C plays no role in nu-SVC).
    let upper: Vec<f64> = c.iter().map(|v| v / c_scale).collect();
    let total: f64 = upper.iter().sum();
    let mut alpha = vec![0.0; l];
    for sign in [1i8, -1] {
        let mut left = nu * total / 2.0;
        for i in 0..l {
            if signs[i] == sign {
                alpha[i] = upper[i].min(left);
                left -= alpha[i];
            }
        }
    }
    let mut p = y.into_owned();
    p.fill(0.0);
    let qp = BoxQp {
        p: &p,
        y: &signs,
        upper: &upper,
        equality: Equality::Sum { delta: 0.0 },
        fixed: None,
    };
    let q = SvcQ::with_rows(sub.x, sub.rows, sub.kernel, &signs, sub.plan.cache_bytes)?;
    let (mut info, r, snapshot, cache) = sub.run(q, &qp, &mut alpha, true)?;
    let coef: Vec<f64> = alpha
        .iter()
        .zip(&signs)
        .map(|(a, &s)| a * f64::from(s) / r)
        .collect();
    info.rho /= r;
    info.objective /= r * r;
    info.gap /= r * r;
    let scaled: Vec<f64> = alpha.iter().map(|a| a / r).collect();
    let ub: Vec<f64> = upper.iter().map(|u| u / r).collect();
    Ok(Solved {
        coef,
        info,
        bounds: Bounds::new(scaled, ub),
        snapshot,
        cache,
    })
}

/// One-class SVM: `min 1/2 a'Qa`, `0 <= a_i <= w_i` (the sample weights: `c / C`),
/// `e'a = nu sum(w)`.
fn solve_one_class(
    sub: &mut Subproblem<'_, '_>,
    c: &[f64],
    c_scale: f64,
    nu: f64,
) -> Result<Solved, FitError> {
    let l = c.len();
    let upper: Vec<f64> = c.iter().map(|v| v / c_scale).collect();
    let total: f64 = upper.iter().sum();
    let mut alpha = vec![0.0; l];
    let mut left = nu * total;
    for i in 0..l {
        alpha[i] = upper[i].min(left);
        left -= alpha[i];
    }
    let signs = vec![1i8; l];
    let p = vec![0.0; l];
    let qp = BoxQp {
        p: &p,
        y: &signs,
        upper: &upper,
        equality: Equality::Sum { delta: nu * total },
        fixed: None,
    };
    let q = OneClassQ::new(sub.x, sub.kernel, sub.plan.cache_bytes)?;
    let (info, _, snapshot, cache) = sub.run(q, &qp, &mut alpha, false)?;
    Ok(Solved {
        coef: alpha.clone(),
        info,
        bounds: Bounds::new(alpha, upper),
        snapshot,
        cache,
    })
}

/// epsilon-SVR: variables `a_i` (first l) and `a*_i` (last l), both in `[0, c_i]`, starting at
/// 0, with `p = eps -/+ z` and `sum a - sum a* = 0`.
fn solve_epsilon_svr(
    sub: &mut Subproblem<'_, '_>,
    z: &[f64],
    c: &[f64],
    epsilon: f64,
) -> Result<Solved, FitError> {
    let alpha = vec![0.0; 2 * z.len()];
    solve_svr_dual(sub, z, c, epsilon, alpha, false)
}

/// nu-SVR: as epsilon-SVR with `p = -/+ z` and the nu engine's two equalities, starting with
/// `nu sum(c) / 2` on each side.
fn solve_nu_svr(
    sub: &mut Subproblem<'_, '_>,
    z: &[f64],
    c: &[f64],
    nu: f64,
) -> Result<Solved, FitError> {
    let l = z.len();
    let mut alpha = vec![0.0; 2 * l];
    let mut left = nu * c.iter().sum::<f64>() / 2.0;
    for i in 0..l {
        let a = c[i].min(left);
        alpha[i] = a;
        alpha[i + l] = a;
        left -= a;
    }
    solve_svr_dual(sub, z, c, 0.0, alpha, true)
}

/// The regressions' doubled dual from the start `alpha` (`nu`: the nu engine).
fn solve_svr_dual(
    sub: &mut Subproblem<'_, '_>,
    z: &[f64],
    c: &[f64],
    eps: f64,
    mut alpha: Vec<f64>,
    nu: bool,
) -> Result<Solved, FitError> {
    let l = z.len();
    let mut signs = vec![1i8; 2 * l];
    signs[l..].fill(-1);
    let mut upper = c.to_vec();
    upper.extend_from_slice(c);
    let p: Vec<f64> = (0..2 * l)
        .map(|k| if k < l { eps - z[k] } else { eps + z[k - l] })
        .collect();
    let qp = BoxQp {
        p: &p,
        y: &signs,
        upper: &upper,
        equality: Equality::Sum { delta: 0.0 },
        fixed: None,
    };
    let q = SvrQ::new(sub.x, sub.kernel, sub.plan.cache_bytes)?;
    let (info, _, snapshot, cache) = sub.run(q, &qp, &mut alpha, nu)?;
    let coef: Vec<f64> = (0..l).map(|i| alpha[i] - alpha[i + l]).collect();
    Ok(Solved {
        coef,
        info,
        bounds: Bounds::new(alpha, upper),
        snapshot,
        cache,
    })
}

pub(super) fn check_finite(info: &SolveInfo) -> Result<(), FitError> {
    if info.objective.is_finite() && info.rho.is_finite() {
        Ok(())
    } else {
        Err(crate::error::SolveError::NonFinite {
            what: "objective or rho",
        }
        .into())
    }
}

/// Dual variables with their bounds, to count (bounded) support vectors as LIBSVM does.
pub(super) struct Bounds {
    alpha: Vec<f64>,
    upper: Vec<f64>,
}

impl Bounds {
    pub(super) fn new(alpha: Vec<f64>, upper: Vec<f64>) -> Self {
        Self { alpha, upper }
    }
    pub(super) fn counts(&self, t: SvmType, coef: &[f64]) -> (usize, usize) {
        let n_sv = coef.iter().filter(|c| **c != 0.0).count();
        let at_upper = |k: usize| self.upper[k] > 0.0 && self.alpha[k] >= self.upper[k];
        let n_bsv = if t.is_regression() {
            let l = coef.len();
            (0..l).filter(|&i| at_upper(i) || at_upper(i + l)).count()
        } else {
            (0..self.alpha.len()).filter(|&k| at_upper(k)).count()
        };
        (n_sv, n_bsv)
    }
}

/// Seeded fold assignment: stratified by label for classification (each class spread over the
/// folds in a random order), a plain random split otherwise.
pub fn fold_assignment(y: &[f64], k: usize, stratified: bool, seed: u64) -> Vec<usize> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut fold = vec![0usize; y.len()];
    if stratified {
        let labels = class_order(y);
        let mut next = 0usize;
        for l in labels {
            let mut idx: Vec<usize> = (0..y.len()).filter(|&i| y[i] == l).collect();
            idx.shuffle(&mut rng);
            for i in idx {
                fold[i] = next % k;
                next += 1;
            }
        }
    } else {
        let mut idx: Vec<usize> = (0..y.len()).collect();
        idx.shuffle(&mut rng);
        for (pos, i) in idx.into_iter().enumerate() {
            fold[i] = pos % k;
        }
    }
    fold
}

/// Decision values of a binary subproblem on `test`, from coefficients on `train`.
pub(crate) fn binary_decisions(
    kernel: KernelSpec,
    train: &Features,
    coef: &[f64],
    rho: f64,
    test: &Features,
) -> Vec<f64> {
    let sv: Vec<usize> = (0..coef.len()).filter(|&k| coef[k] != 0.0).collect();
    let model = SvmModel {
        svm_type: SvmType::EpsSvr,
        kernel,
        labels: Vec::new(),
        n_sv: Vec::new(),
        sv: train.select_rows(&sv),
        sv_indices: None,
        sv_coef: vec![sv.iter().map(|&k| coef[k]).collect()],
        rho: vec![rho],
        prob_a: Vec::new(),
        prob_b: Vec::new(),
        sv_norms: Vec::new(),
    }
    .with_norms();
    model
        .decision_values(test)
        .into_iter()
        .map(|d| d[0])
        .collect()
}

/// A warning when a classifier is given labels that look like regression targets: some label is
/// not an integer and there are more than 10 classes. Each distinct value is then a class, which
/// is almost never what was meant.
/// The checks of a classifier's labels (in [`class_order`]): at least two classes (an empty
/// list is [`DataError::Empty`]), at most [`MAX_CLASSES`]; warnings for class weights of absent
/// labels and for real-valued labels.
pub(super) fn check_classes(
    labels: &[f64],
    params: &SvmValidParams,
    report: &mut FitReport,
) -> Result<(), FitError> {
    match labels {
        [] => return Err(DataError::Empty.into()),
        [one] => return Err(DataError::SingleClass { label: *one }.into()),
        _ => {}
    }
    if labels.len() > MAX_CLASSES {
        return Err(DataError::TooManyClasses {
            found: labels.len(),
            limit: MAX_CLASSES,
        }
        .into());
    }
    for &(l, _) in &params.class_weights {
        if !labels.contains(&l) {
            report
                .warnings
                .push(format!("class weight for label {l} not found in the data"));
        }
    }
    if let Some(w) = real_valued_labels_warning(labels) {
        report.warnings.push(w);
    }
    Ok(())
}

pub(super) fn real_valued_labels_warning(labels: &[f64]) -> Option<String> {
    let fractional = labels.iter().filter(|l| l.fract() != 0.0).count();
    (fractional > 0 && labels.len() > 10).then(|| {
        format!(
            "the labels look like regression targets ({} distinct values, {fractional} of them not integers): \
             classification makes each value a class; for regression use -s 3 (epsilon-SVR) or -s 4 (nu-SVR)",
            labels.len()
        )
    })
}

const PROB_FOLDS: usize = 5;

/// Platt sigmoid for one binary subproblem `pair` (sample weights `w`) from 5-fold
/// cross-validated decision values. `None` when the observer stopped one of the fold solves (the
/// statuses of the fold solves go to `report.calibration`).
fn binary_probability(
    params: &SvmValidParams,
    kernel: KernelSpec,
    pair: &Samples<'_>,
    w: &[f64],
    obs: &mut dyn Observer,
    report: &mut FitReport,
) -> Result<Option<(f64, f64)>, FitError> {
    let (x, y, c) = (pair.x, &pair.y[..], pair.c);
    let row = |i: usize| pair.rows.map_or(i, |r| r[i]);
    let l = y.len();
    let folds = fold_assignment(y, PROB_FOLDS.min(l), false, params.seed);
    let mut dec = vec![0.0; l];
    for f in 0..PROB_FOLDS.min(l) {
        let train: Vec<usize> = (0..l).filter(|&i| folds[i] != f).collect();
        let test: Vec<usize> = (0..l).filter(|&i| folds[i] == f).collect();
        let ty: Vec<f64> = train.iter().map(|&i| y[i]).collect();
        let n_pos = ty.iter().filter(|&&v| v > 0.0).count();
        if n_pos == 0 || n_pos == ty.len() {
            // A fold with one class: its decision is that class.
            let v = if n_pos > 0 { 1.0 } else { -1.0 };
            for &i in &test {
                dec[i] = if ty.is_empty() { 0.0 } else { v };
            }
            continue;
        }
        let tx = x.select_rows(&train.iter().map(|&i| row(i)).collect::<Vec<_>>());
        let tc: Vec<f64> = train.iter().map(|&i| c[i]).collect();
        let mut sub = params.without_probability();
        if params.svm_type == SvmType::NuSvc {
            // nu feasible on the whole pair can be infeasible on a fold (fewer samples of the
            // smaller class): the fold is then fitted with its largest feasible nu,
            // 2 min(w+, w-) / (w+ + w-), where LIBSVM starts its solver from an alpha that
            // violates y'a = 0.
            let (wp, wn) = train.iter().fold((0.0, 0.0), |(p, n), &i| {
                if y[i] > 0.0 {
                    (p + w[i], n)
                } else {
                    (p, n + w[i])
                }
            });
            let nu_max = 2.0 * wp.min(wn) / (wp + wn);
            if params.nu > nu_max {
                report.warnings.push(format!(
                    "nu-SVC probability: fold {} of the pair admits nu <= {nu_max}; it is fitted with that nu instead of {}",
                    f + 1,
                    params.nu
                ));
                // Valid: both classes of the fold have samples of positive weight (weight-0
                // samples were dropped before the fit, one-class folds skipped above), so
                // 0 < nu_max <= 1.
                sub.nu = nu_max;
            }
        }
        let fold = Samples {
            x: &tx,
            rows: None,
            y: Cow::Owned(ty),
            c: &tc,
        };
        let (fdec, _) = solve_one(&sub, kernel, fold, obs, None, false)?;
        report.calibration.push(fdec.report.clone());
        if fdec.report.status == Status::Interrupted {
            return Ok(None);
        }
        let test_rows: Vec<usize> = test.iter().map(|&i| row(i)).collect();
        let d = binary_decisions(
            kernel,
            &tx,
            &fdec.coef,
            fdec.rho,
            &x.select_rows(&test_rows),
        );
        for (pos, &i) in test.iter().enumerate() {
            dec[i] = d[pos];
        }
    }
    let positive: Vec<bool> = y.iter().map(|&v| v > 0.0).collect();
    Ok(Some(match params.platt {
        // Through the origin, so that the most probable class is the predicted one.
        PlattFit::ThroughOrigin => (
            probability::sigmoid_train_origin(&dec, &positive, Some(w)),
            0.0,
        ),
        PlattFit::WithIntercept => probability::sigmoid_train_published(&dec, &positive, Some(w)),
    }))
}

/// Laplace scale of SVR residuals from 5-fold cross-validation (the folds and fits of
/// [`cross_validation`], with the observer passed to every fold's fit). `None` when the
/// observer stopped a fold's fit (the remaining folds are skipped); the folds' solves go to
/// `report.calibration`.
fn svr_sigma(
    params: &SvmValidParams,
    data: &Dataset,
    obs: &mut dyn Observer,
    report: &mut FitReport,
) -> Result<Option<f64>, FitError> {
    let sub = params.without_probability();
    let folds = fold_assignment(
        &data.y,
        PROB_FOLDS.clamp(1, data.len().max(1)),
        false,
        params.seed,
    );
    let cv = cross_validate(
        data,
        &folds,
        &mut Control::new(obs),
        |train, test_x, obs| {
            let (model, rep, _) = fit_from(&sub, train, obs, None)?;
            report.calibration.extend(rep.subproblems.iter().cloned());
            let pred = model
                .decision_values(test_x)
                .iter()
                .map(|d| model.predict_from_decision(d))
                .collect();
            Ok((pred, rep.status()))
        },
    )?;
    if cv.status == Status::Interrupted {
        return Ok(None);
    }
    let pred = cv.predictions;
    let res: Vec<f64> = pred.iter().zip(&data.y).map(|(p, y)| y - p).collect();
    Ok(Some(probability::laplace_sigma(&res)))
}

/// k-fold cross-validation (stratified for classification, seeded by the parameters' seed): the
/// prediction for every sample from the model trained without its fold, and the worst status
/// of the folds' fits (so a limit hit in any fold is not silent). `ctl`'s observer watches
/// every fold's fit; its part callback gets the index of each finished fold.
///
/// # Errors
/// As [`fit`] for any fold; [`DataError::TooFewRowsForFolds`] for fewer than two rows.
pub fn cross_validation(
    params: &SvmValidParams,
    data: &Dataset,
    k: usize,
    ctl: &mut Control<'_, (), usize>,
) -> Result<CrossValidation, FitError> {
    if data.is_empty() {
        return Err(DataError::Empty.into());
    }
    // Checked on the whole set first: a fold's fit would name its own size ("all 2 sample
    // weights are zero" for 4 zero weights and 2 folds).
    if let Some(w) = &data.weights {
        check_weights(w, data.len())?;
    }
    let stratified = params.svm_type.is_classifier();
    let folds = fold_assignment(&data.y, k.clamp(1, data.len()), stratified, params.seed);
    cross_validate(data, &folds, ctl, |train, test_x, obs| {
        let (model, rep, _) = fit_from(params, train, obs, None)?;
        let dec = model.decision_values(test_x);
        let pred = dec
            .iter()
            .map(|d| {
                if params.probability == Probability::On && model.has_probability() {
                    let probs = probability::multiclass_probability(
                        model.labels.len(),
                        d,
                        &model.prob_a,
                        &model.prob_b,
                    );
                    let best =
                        (0..probs.len()).fold(0, |b, c| if probs[c] > probs[b] { c } else { b });
                    model.labels[best]
                } else {
                    model.predict_from_decision(d)
                }
            })
            .collect();
        Ok((pred, rep.status()))
    })
}

/// Trains on all folds but one and predicts the held-out fold, for every fold in order:
/// `fit_predict(training part, held-out features, observer)` returns the fold's predictions and
/// its fit's status. Stops after a fold whose fit was interrupted.
///
/// # Errors
/// [`DataError::Empty`] and [`DataError::TooFewRowsForFolds`] for fewer than two rows (a fold
/// would have nothing to train on), and what `fit_predict` returns.
pub(crate) fn cross_validate(
    data: &Dataset,
    folds: &[usize],
    ctl: &mut Control<'_, (), usize>,
    mut fit_predict: impl FnMut(
        &Dataset,
        &Features,
        &mut dyn Observer,
    ) -> Result<(Vec<f64>, Status), FitError>,
) -> Result<CrossValidation, FitError> {
    let n = data.len();
    match n {
        0 => return Err(DataError::Empty.into()),
        1 => return Err(DataError::TooFewRowsForFolds { n }.into()),
        _ => {}
    }
    let k = folds.iter().max().map_or(0, |&f| f + 1);
    let mut cv = CrossValidation {
        predictions: vec![0.0; n],
        status: Status::Converged,
    };
    for f in 0..k {
        let train: Vec<usize> = (0..n).filter(|&i| folds[i] != f).collect();
        let test: Vec<usize> = (0..n).filter(|&i| folds[i] == f).collect();
        if test.is_empty() {
            continue;
        }
        let (p, status) = fit_predict(
            &data.subset(&train),
            &data.x.select_rows(&test),
            ctl.observer(),
        )?;
        for (pos, &i) in test.iter().enumerate() {
            cv.predictions[i] = p[pos];
        }
        cv.status = cv.status.worst(status);
        if status == Status::Interrupted {
            break;
        }
        ctl.part_done(&f);
    }
    Ok(cv)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_order_puts_plus_one_first_for_binary() {
        assert_eq!(class_order(&[-1.0, 1.0, -1.0]), vec![1.0, -1.0]);
        assert_eq!(class_order(&[2.0, 0.0, 1.0, 0.0]), vec![2.0, 0.0, 1.0]);
    }

    #[test]
    fn folds_are_stratified_and_seeded() {
        let y: Vec<f64> = (0..30)
            .map(|i| if i % 3 == 0 { 1.0 } else { -1.0 })
            .collect();
        let f = fold_assignment(&y, 5, true, 7);
        assert_eq!(f, fold_assignment(&y, 5, true, 7));
        for k in 0..5 {
            let pos = (0..30).filter(|&i| f[i] == k && y[i] > 0.0).count();
            assert_eq!(pos, 2);
        }
    }
}
