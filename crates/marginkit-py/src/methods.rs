//! Bindings of the method modules: AID (LAD regression, SVM), robust SVC/SVR by the outlier path,
//! the ODM classifier, ODMC clustering, and core-set MEB / SVDD / L2-SVM / one-class L2-SVM.
//!
//! Same conventions as the rest of `_core`: plain parameters in, a dict of numpy arrays out (plus
//! an [`SvmModelHandle`] when the model predicts with a kernel expansion), training with the GIL
//! released, library errors as `ValueError` (bad parameters or data) or `RuntimeError`
//! (numerical breakdown) carrying the library's message. Parameter ranges are checked by the
//! library; this file checks only what the library cannot see (durations, names of choices).

use marginkit::svm::params::cache_bytes_from_mb;
use std::time::{Duration, Instant};

use marginkit::aid::lad::{self, AidLadParams};
use marginkit::aid::s3vm::{self, full_instance, solve_bnb, AidS3vmParams, BnbLimits, S3vmData};
use marginkit::aid::svm::{self, AidLinearEngine, AidSvmModel, AidSvmParams};
use marginkit::aid::{AidSettings, IterRecord};
use marginkit::cluster::{ClusterError, Points};
use marginkit::coreset::consensus::{self, ConsensusData};
use marginkit::coreset::{
    points_for, ConsensusParams, CoresetError, CoresetParams, Graph, Problem,
};
use marginkit::fit::Control;
use marginkit::odm::odmc::{self, OdmcData, OdmcKernel, OdmcParams, Readout};
use marginkit::odm::pool::PoolSpec;
use marginkit::odm::{OdmParams, OdmSolver};
use marginkit::path::PathParams;
use marginkit::robust::select::{select, Method, SelectParams};
use marginkit::robust::{PathKind, RobustData, RobustParams, Task};
use marginkit::solver::Shrinking;
use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray1};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::{
    data_err, dataset, features, fit_err, kernel_params, model_items, param_err, SignalObserver,
    SvmModelHandle, XArg,
};

/// Registers the functions of this file and `DEFAULTS`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("DEFAULTS", defaults(m.py())?)?;
    m.add_function(wrap_pyfunction!(fit_lad, m)?)?;
    m.add_function(wrap_pyfunction!(fit_aid_svc, m)?)?;
    m.add_function(wrap_pyfunction!(fit_s3vm, m)?)?;
    m.add_function(wrap_pyfunction!(fit_robust, m)?)?;
    m.add_function(wrap_pyfunction!(fit_odm, m)?)?;
    m.add_function(wrap_pyfunction!(fit_odmc, m)?)?;
    m.add_function(wrap_pyfunction!(fit_coreset, m)?)?;
    Ok(())
}

/// The library's defaults of the estimators' parameters, by estimator family and Python
/// parameter name (`_core.DEFAULTS`): the estimators' `__init__` defaults are read from here, so
/// that each number is written once, in the library's parameter types. Parameters whose Python
/// default is a scikit-learn convention (the SVC family's `C`, `tol`, `cache_size`, and every
/// `random_state`) are not here.
fn defaults(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let group = |items: &[(&str, Bound<'_, PyAny>)]| -> PyResult<Bound<'_, PyDict>> {
        let g = PyDict::new(py);
        for (k, v) in items {
            g.set_item(*k, v)?;
        }
        Ok(g)
    };
    let f = |v: f64| v.into_pyobject(py).map(Bound::into_any);
    let u = |v: u64| v.into_pyobject(py).map(Bound::into_any);
    let z = |v: usize| v.into_pyobject(py).map(Bound::into_any);
    let d = PyDict::new(py);
    d.set_item(
        "aid",
        group(&[
            ("C", f(AidSvmParams::DEFAULT_C)?),
            ("tol", f(AidSvmParams::DEFAULT_SOLVER_TOL)?),
            ("gap_tol", f(AidSettings::DEFAULT_GAP_TOL)?),
            ("max_iter", z(AidSettings::DEFAULT_MAX_ITER)?),
        ])?,
    )?;
    d.set_item(
        "s3vm",
        group(&[
            ("C_labeled", f(AidS3vmParams::DEFAULT_C_LABELED)?),
            ("C_unlabeled", f(AidS3vmParams::DEFAULT_C_UNLABELED)?),
            ("r0", f(AidS3vmParams::DEFAULT_R0)?),
            ("max_nodes", z(AidS3vmParams::DEFAULT_BNB_NODES)?),
            // Seconds as a float, the Python parameter's type.
            (
                "bnb_time_limit",
                f(AidS3vmParams::DEFAULT_BNB_SECONDS as f64)?,
            ),
        ])?,
    )?;
    d.set_item(
        "robust",
        group(&[
            ("s_end", f(RobustParams::DEFAULT_S_END_FRACTION)?),
            ("tol", f(RobustParams::DEFAULT_SOLVER_TOL)?),
        ])?,
    )?;
    d.set_item(
        "odm",
        group(&[
            ("lam", f(OdmParams::DEFAULT_LAMBDA)?),
            ("nu", f(OdmParams::DEFAULT_NU)?),
            ("theta", f(OdmParams::DEFAULT_THETA)?),
        ])?,
    )?;
    let pool = PoolSpec::DEFAULT;
    d.set_item(
        "odmc",
        group(&[
            ("lam", f(OdmcParams::DEFAULT_LAMBDA)?),
            ("nu", f(OdmcParams::DEFAULT_NU)?),
            ("theta", f(OdmcParams::DEFAULT_THETA)?),
            ("beta", f(OdmcParams::DEFAULT_BETA)?),
            ("n_iter", z(OdmcParams::DEFAULT_ITERATIONS)?),
            ("max_rounds", z(OdmcParams::DEFAULT_MAX_ROUNDS)?),
            ("tol", f(OdmcParams::DEFAULT_TOL)?),
            (
                "pool",
                (pool.kmeans, pool.components, pool.random)
                    .into_pyobject(py)?
                    .into_any(),
            ),
            ("max_dense", z(OdmcParams::DEFAULT_MAX_DENSE)?),
        ])?,
    )?;
    d.set_item(
        "path",
        group(&[
            ("C_min", f(PathParams::DEFAULT_C_MIN)?),
            ("C_max", f(PathParams::DEFAULT_C_MAX)?),
            ("n_Cs", z(PathParams::DEFAULT_POINTS)?),
        ])?,
    )?;
    d.set_item(
        "coreset",
        group(&[
            ("eps", f(CoresetParams::DEFAULT_EPS)?),
            ("max_rounds", u(ConsensusParams::DEFAULT_MAX_ROUNDS)?),
            (
                "graph",
                ConsensusParams::DEFAULT_GRAPH
                    .into_pyobject(py)
                    .map(Bound::into_any)?,
            ),
        ])?,
    )?;
    Ok(d)
}

fn duration(name: &str, secs: Option<f64>) -> PyResult<Option<Duration>> {
    match secs {
        None => Ok(None),
        Some(t) if t.is_finite() && t > 0.0 => Ok(Some(Duration::from_secs_f64(t.min(1e9)))),
        Some(t) => Err(PyValueError::new_err(format!(
            "{name} must be finite and > 0 (seconds), got {t}"
        ))),
    }
}

pub(crate) fn cache_bytes(cache_mb: f64) -> PyResult<u64> {
    cache_bytes_from_mb("cache_size", cache_mb).map_err(|e| PyValueError::new_err(e.to_string()))
}

fn cluster_err(e: ClusterError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

fn coreset_err(e: CoresetError) -> PyErr {
    match e {
        CoresetError::Transport(_) => PyRuntimeError::new_err(e.to_string()),
        other => PyValueError::new_err(other.to_string()),
    }
}

/// An AID fit without an observer runs until a stopping rule: a fit without a model cannot
/// happen, and is reported rather than unwrapped.
fn unfinished() -> PyErr {
    PyRuntimeError::new_err("the AID fit stopped before its first iteration finished")
}

/// The AID loop's per-iteration record as columns.
fn aid_history(d: &Bound<'_, PyDict>, its: &[IterRecord]) -> PyResult<()> {
    let py = d.py();
    let col = |f: &dyn Fn(&IterRecord) -> f64| -> Vec<f64> { its.iter().map(f).collect() };
    let h = PyDict::new(py);
    h.set_item(
        "clusters",
        PyArray1::from_vec(py, col(&|r| r.clusters as f64)),
    )?;
    h.set_item("r", PyArray1::from_vec(py, col(&|r| r.r)))?;
    h.set_item(
        "lower_bound",
        PyArray1::from_vec(py, col(&|r| r.lower_bound)),
    )?;
    h.set_item("objective", PyArray1::from_vec(py, col(&|r| r.objective)))?;
    h.set_item(
        "best_objective",
        PyArray1::from_vec(py, col(&|r| r.best_objective)),
    )?;
    h.set_item("gap", PyArray1::from_vec(py, col(&|r| r.gap)))?;
    h.set_item(
        "violating",
        PyArray1::from_vec(py, col(&|r| r.violating as f64)),
    )?;
    h.set_item("seconds", PyArray1::from_vec(py, col(&|r| r.seconds)))?;
    d.set_item("history", h)?;
    Ok(())
}

/// LAD regression `min sum_i |y_i - x_i'coef - intercept|`: `algorithm` "aid" (Park & Klabjan's
/// aggregate and iterative disaggregate, stops with the optimality certificate by default) or
/// "lp" (the full LP by clarabel, polished to a vertex).
#[pyfunction]
#[pyo3(signature = (x, y, algorithm, intercept, r0, gap_tol, max_iter, time_limit, seed))]
#[allow(clippy::too_many_arguments)]
fn fit_lad<'py>(
    py: Python<'py>,
    x: XArg<'py>,
    y: PyReadonlyArray1<'py, f64>,
    algorithm: &str,
    intercept: bool,
    r0: Option<f64>,
    gap_tol: f64,
    max_iter: usize,
    time_limit: Option<f64>,
    seed: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let t_total = Instant::now();
    let time_limit = duration("time_limit", time_limit)?;
    let data = dataset(&x, &y, &None, None)?;
    let d = PyDict::new(py);
    let t_rust = Instant::now();
    match algorithm {
        "aid" => {
            let mut params = AidLadParams::new()
                .intercept(intercept)
                .seed(seed)
                .gap_tol(gap_tol)
                .max_iter(max_iter);
            if let Some(r) = r0 {
                params = params.r0(r);
            }
            if let Some(t) = time_limit {
                params = params.time_limit(t);
            }
            let params = params.check().map_err(param_err)?;
            let fit = py
                .detach(|| lad::fit(&params, &data, &mut Control::default()))
                .map_err(fit_err)?;
            let (Some(model), Some(run)) = (&fit.model, &fit.report.run) else {
                return Err(unfinished());
            };
            d.set_item("coef", PyArray1::from_vec(py, model.coef.clone()))?;
            d.set_item("intercept", model.intercept)?;
            d.set_item("objective", run.best_objective)?;
            d.set_item("lower_bound", run.lower_bound)?;
            d.set_item("stop", run.stop_name())?;
            d.set_item(
                "certified",
                run.termination == Some(marginkit::aid::Termination::Optimal)
                    && fit.report.last_certified,
            )?;
            d.set_item("init_seconds", fit.report.init_seconds)?;
            aid_history(&d, &run.iterations)?;
        }
        "lp" => {
            let (model, sol) = py
                .detach(|| marginkit::aid::lad::fit_lad(&data, intercept, time_limit))
                .map_err(fit_err)?;
            d.set_item("coef", PyArray1::from_vec(py, model.coef))?;
            d.set_item("intercept", model.intercept)?;
            d.set_item("objective", sol.objective)?;
            d.set_item("lower_bound", sol.lower_bound)?;
            d.set_item("stop", if sol.certified { "optimal" } else { "interior" })?;
            d.set_item("certified", sol.certified)?;
        }
        other => {
            return Err(PyValueError::new_err(format!(
                "algorithm must be 'aid' or 'lp', got {other:?}"
            )))
        }
    }
    d.set_item("rust_seconds", t_rust.elapsed().as_secs_f64())?;
    d.set_item("total_seconds", t_total.elapsed().as_secs_f64())?;
    Ok(d)
}

/// AID for the C-SVM with an unregularized bias (LIBSVM's C-SVC problem): `kernel` "linear"
/// aggregates in the input space (weights `w`, `b` returned), any other kernel name runs the
/// paper's Appendix B (a kernel model handle returned). Two classes; `labels[0]` is positive.
#[pyfunction]
#[pyo3(signature = (x, y, c, kernel, gamma, coef0, degree, tol, r0, gap_tol, max_iter,
    time_limit, seed, engine))]
#[allow(clippy::too_many_arguments)]
fn fit_aid_svc<'py>(
    py: Python<'py>,
    x: XArg<'py>,
    y: PyReadonlyArray1<'py, f64>,
    c: f64,
    kernel: &str,
    gamma: f64,
    coef0: f64,
    degree: u32,
    tol: f64,
    r0: Option<f64>,
    gap_tol: f64,
    max_iter: usize,
    time_limit: Option<f64>,
    seed: u64,
    engine: &str,
) -> PyResult<(Option<SvmModelHandle>, Bound<'py, PyDict>)> {
    let t_total = Instant::now();
    let kernel = match kernel {
        "linear" => None,
        k => Some(kernel_params(k, gamma, coef0, degree)?),
    };
    let linear_engine = match engine {
        "auto" => AidLinearEngine::Auto,
        "dcd" => AidLinearEngine::Dcd,
        e => {
            return Err(PyValueError::new_err(format!(
                "engine must be 'auto' or 'dcd', got {e:?}"
            )))
        }
    };
    let mut params = AidSvmParams::new()
        .c(c)
        .seed(seed)
        .solver_tol(tol)
        .gap_tol(gap_tol)
        .max_iter(max_iter)
        .linear_engine(linear_engine);
    if let Some(k) = kernel {
        params = params.kernel(k);
    }
    if let Some(r) = r0 {
        params = params.r0(r);
    }
    if let Some(t) = duration("time_limit", time_limit)? {
        params = params.time_limit(t);
    }
    let params = params.check().map_err(param_err)?;
    let data = dataset(&x, &y, &None, None)?;
    let t_rust = Instant::now();
    let fit = py
        .detach(|| svm::fit(&params, &data, &mut Control::default()))
        .map_err(fit_err)?;
    let rust_seconds = t_rust.elapsed().as_secs_f64();
    let (Some(model), Some(run)) = (fit.model, &fit.report.run) else {
        return Err(unfinished());
    };
    let d = PyDict::new(py);
    d.set_item("labels", PyArray1::from_vec(py, fit.report.labels.clone()))?;
    d.set_item("objective", run.best_objective)?;
    d.set_item("lower_bound", run.lower_bound)?;
    d.set_item("stop", run.stop_name())?;
    d.set_item("init_seconds", fit.report.init_seconds)?;
    aid_history(&d, &run.iterations)?;
    let handle = match model {
        AidSvmModel::Linear(_) => {
            // The best iterate's primal weights; decision w'x + b, positive for labels[0].
            d.set_item("w", PyArray1::from_vec(py, run.best.w.clone()))?;
            d.set_item("b", run.best.b)?;
            None
        }
        AidSvmModel::Kernel(m) => {
            model_items(&d, &m)?;
            Some(SvmModelHandle { model: *m })
        }
    };
    d.set_item("rust_seconds", rust_seconds)?;
    d.set_item("total_seconds", t_total.elapsed().as_secs_f64())?;
    Ok((handle, d))
}

/// Linear semi-supervised SVM (Bennett-Demiriz, labels +-1 and 0 = unlabeled): `algorithm`
/// "exact" (branch and bound on the full problem; small problems) or "aid" (AID-S3VM, a
/// heuristic). Returns `w`, `b` (decision positive for `labels[0]`) and the report.
#[pyfunction]
#[pyo3(signature = (x, y, algorithm, c_labeled, c_unlabeled, balance, r0, max_iter, max_nodes,
    bnb_time_limit, seed))]
#[allow(clippy::too_many_arguments)]
fn fit_s3vm<'py>(
    py: Python<'py>,
    x: XArg<'py>,
    y: PyReadonlyArray1<'py, f64>,
    algorithm: &str,
    c_labeled: f64,
    c_unlabeled: f64,
    balance: bool,
    r0: f64,
    max_iter: usize,
    max_nodes: usize,
    bnb_time_limit: Option<f64>,
    seed: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let t_total = Instant::now();
    let bnb = BnbLimits {
        max_nodes,
        time_limit: duration("bnb_time_limit", bnb_time_limit)?,
        rel_gap: AidS3vmParams::DEFAULT_BNB_REL_GAP,
    };
    let data = dataset(&x, &y, &None, None)?;
    let d = PyDict::new(py);
    // The positive class of the exact solve: the library's (LIBSVM's) order of the labels.
    let labeled: Vec<f64> = data.y.iter().copied().filter(|&v| v != 0.0).collect();
    let order = marginkit::svm::train::class_order(&labeled);
    let t_rust = Instant::now();
    match algorithm {
        "exact" => {
            let r = py
                .detach(|| {
                    let inst = full_instance(&data, c_labeled, c_unlabeled, balance)?;
                    solve_bnb(&inst, &bnb)
                })
                .map_err(fit_err)?;
            d.set_item("w", PyArray1::from_vec(py, r.w))?;
            d.set_item("b", r.b)?;
            d.set_item("objective", r.objective)?;
            d.set_item("lower_bound", r.lower_bound)?;
            d.set_item("gap", r.gap)?;
            d.set_item("nodes", r.nodes)?;
            d.set_item("stop", if r.optimal { "optimal" } else { "limit" })?;
            d.set_item("labels", PyArray1::from_vec(py, order))?;
        }
        "aid" => {
            // The cost-weighting balance technique (the CLI's --balance-cost) has no Python
            // binding.
            let params = AidS3vmParams::new()
                .c_labeled(c_labeled)
                .c_unlabeled(c_unlabeled)
                .r0(r0)
                .seed(seed)
                .balance(balance)
                .bnb(bnb)
                .gap_tol(0.0)
                .max_iter(max_iter)
                .check()
                .map_err(param_err)?;
            let fit = py
                .detach(|| s3vm::fit(&params, S3vmData::new(&data), &mut Control::default()))
                .map_err(fit_err)?;
            let (Some(model), Some(run)) = (&fit.model, &fit.report.run) else {
                return Err(unfinished());
            };
            d.set_item("w", PyArray1::from_vec(py, run.best.w.clone()))?;
            d.set_item("b", run.best.b)?;
            d.set_item("objective", run.best_objective)?;
            d.set_item("lower_bound", f64::NAN)?;
            d.set_item("gap", f64::NAN)?;
            d.set_item("nodes", run.best.bnb_nodes)?;
            d.set_item("stop", run.stop_name())?;
            d.set_item("bnb_optimal", run.best.bnb_optimal)?;
            d.set_item("labels", PyArray1::from_vec(py, model.labels().to_vec()))?;
            aid_history(&d, &run.iterations)?;
        }
        other => {
            return Err(PyValueError::new_err(format!(
                "algorithm must be 'aid' or 'exact', got {other:?}"
            )))
        }
    }
    d.set_item("rust_seconds", t_rust.elapsed().as_secs_f64())?;
    d.set_item("total_seconds", t_total.elapsed().as_secs_f64())?;
    Ok(d)
}

/// Robust (ramp-loss) SVC or truncated-LAD SVR by the outlier path (Suzumura et al.), one path
/// per C in `cs`, the best locally optimal breakpoint by validation error chosen (without
/// validation data: the end of the first C's path). Returns the chosen model's handle and a dict
/// with every breakpoint (`keep_path`: with its coefficients), the runs and the choice.
#[pyfunction]
#[pyo3(signature = (task, x, y, x_valid, y_valid, path, cs, kernel, gamma, coef0, degree, bias,
    s, s_end, max_events, tol, cache_mb, keep_path))]
#[allow(clippy::too_many_arguments)]
fn fit_robust<'py>(
    py: Python<'py>,
    task: &str,
    x: XArg<'py>,
    y: PyReadonlyArray1<'py, f64>,
    x_valid: Option<XArg<'py>>,
    y_valid: Option<PyReadonlyArray1<'py, f64>>,
    path: &str,
    cs: Vec<f64>,
    kernel: &str,
    gamma: f64,
    coef0: f64,
    degree: u32,
    bias: Option<f64>,
    s: Option<f64>,
    s_end: f64,
    max_events: Option<usize>,
    tol: f64,
    cache_mb: f64,
    keep_path: bool,
) -> PyResult<(SvmModelHandle, Bound<'py, PyDict>)> {
    let t_total = Instant::now();
    let task = match task {
        "svc" => Task::Svc,
        "svr" => Task::Svr,
        t => {
            return Err(PyValueError::new_err(format!(
                "task must be 'svc' or 'svr', got {t:?}"
            )))
        }
    };
    let kind = match path {
        "theta" => PathKind::Theta,
        "s" => PathKind::S,
        p => {
            return Err(PyValueError::new_err(format!(
                "path must be 'theta' or 's', got {p:?}"
            )))
        }
    };
    let mut robust = RobustParams::new()
        .task(task)
        .kind(kind)
        .kernel(kernel_params(kernel, gamma, coef0, degree)?)
        .bias(bias)
        .keep_solutions(keep_path)
        .s_end_fraction(s_end)
        .solver_tol(tol)
        .cache_bytes(usize::try_from(cache_bytes(cache_mb)?).unwrap_or(usize::MAX));
    if let Some(s) = s {
        robust = robust.s_fixed(s);
    }
    if let Some(m) = max_events {
        robust = robust.max_events(m);
    }
    let params = SelectParams::new()
        .robust(robust)
        .method(Method::Path)
        .c_grid(cs)
        .check()
        .map_err(param_err)?;
    let train = dataset(&x, &y, &None, None)?;
    let valid = match (&x_valid, &y_valid) {
        (Some(xv), Some(yv)) => Some(dataset(xv, yv, &None, None)?),
        (None, None) => None,
        _ => {
            return Err(PyValueError::new_err(
                "give both X_valid and y_valid, or neither",
            ))
        }
    };
    let t_rust = Instant::now();
    let fit = py
        .detach(|| {
            let data = RobustData::new(&train).validate_on(valid.as_ref());
            select(&params, &data, &mut Control::default())
        })
        .map_err(fit_err)?;
    let (model, sel) = (fit.model, fit.report);
    let rust_seconds = t_rust.elapsed().as_secs_f64();
    let d = PyDict::new(py);
    let (mut bc, mut bp, mut bkind, mut bobj, mut bout, mut bopt, mut berr, mut brun) = (
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
    );
    let mut betas: Vec<f64> = Vec::new();
    for (k, r) in sel.runs.iter().enumerate() {
        for node in &r.nodes {
            bc.push(r.c);
            bp.push(node.param);
            bkind.push(node.kind.as_str());
            bobj.push(node.objective);
            bout.push(node.n_outliers as i64);
            bopt.push(node.locally_optimal);
            berr.push(node.valid_error.unwrap_or(f64::NAN));
            brun.push(k as i64);
            if let Some(b) = &node.beta {
                betas.extend_from_slice(b);
            }
        }
    }
    let bps = PyDict::new(py);
    let n_nodes = bc.len();
    bps.set_item("C", PyArray1::from_vec(py, bc))?;
    bps.set_item(kind.as_str(), PyArray1::from_vec(py, bp))?;
    bps.set_item("kind", bkind)?;
    bps.set_item("objective", PyArray1::from_vec(py, bobj))?;
    bps.set_item("n_outliers", PyArray1::from_vec(py, bout))?;
    bps.set_item("locally_optimal", PyArray1::from_vec(py, bopt))?;
    bps.set_item("valid_error", PyArray1::from_vec(py, berr))?;
    bps.set_item("run", PyArray1::from_vec(py, brun))?;
    let n = train.len();
    if keep_path && betas.len() == n_nodes * n {
        bps.set_item("coef", PyArray1::from_vec(py, betas).reshape([n_nodes, n])?)?;
    }
    d.set_item("breakpoints", bps)?;
    let runs = PyDict::new(py);
    let col = |f: &dyn Fn(&marginkit::robust::select::Run) -> f64| -> Vec<f64> {
        sel.runs.iter().map(f).collect()
    };
    runs.set_item("C", PyArray1::from_vec(py, col(&|r| r.c)))?;
    runs.set_item(
        "status",
        sel.runs.iter().map(|r| r.end.as_str()).collect::<Vec<_>>(),
    )?;
    runs.set_item("events", PyArray1::from_vec(py, col(&|r| r.events as f64)))?;
    runs.set_item("jumps", PyArray1::from_vec(py, col(&|r| r.d_steps as f64)))?;
    runs.set_item("s_standard", PyArray1::from_vec(py, col(&|r| r.s_standard)))?;
    runs.set_item(
        "final_locally_optimal",
        sel.runs
            .iter()
            .map(|r| r.final_locally_optimal)
            .collect::<Vec<_>>(),
    )?;
    runs.set_item("seconds", PyArray1::from_vec(py, col(&|r| r.seconds)))?;
    d.set_item("runs", runs)?;
    d.set_item("chosen_C", sel.chosen.c)?;
    d.set_item("chosen_param", sel.chosen.param)?;
    d.set_item("chosen_run", sel.chosen.run)?;
    d.set_item("chosen_node", sel.chosen.node)?;
    d.set_item(
        "chosen_valid_error",
        sel.chosen.valid_error.unwrap_or(f64::NAN),
    )?;
    d.set_item("beta", PyArray1::from_vec(py, sel.chosen.beta.clone()))?;
    d.set_item("kernel_diag_shift", bias.map_or(0.0, |b| b * b))?;
    model_items(&d, &model)?;
    d.set_item("rust_seconds", rust_seconds)?;
    d.set_item("total_seconds", t_total.elapsed().as_secs_f64())?;
    Ok((SvmModelHandle { model }, d))
}

/// The optimal margin distribution machine (Zhang & Zhou), two classes, no bias; `labels[0]` is
/// the positive class. Returns the handle (a C-SVC kernel expansion with `rho = 0`) and the
/// report with the recomputed primal, dual and duality gap.
#[pyfunction]
#[pyo3(signature = (x, y, sample_weight, lam, nu, theta, kernel, gamma, coef0, degree, tol,
    cache_mb, max_iter, engine, shrinking, seed))]
#[allow(clippy::too_many_arguments)]
fn fit_odm<'py>(
    py: Python<'py>,
    x: XArg<'py>,
    y: PyReadonlyArray1<'py, f64>,
    sample_weight: Option<PyReadonlyArray1<'py, f64>>,
    lam: f64,
    nu: f64,
    theta: f64,
    kernel: &str,
    gamma: f64,
    coef0: f64,
    degree: u32,
    tol: f64,
    cache_mb: f64,
    max_iter: Option<u64>,
    engine: &str,
    shrinking: bool,
    seed: u64,
) -> PyResult<(SvmModelHandle, Bound<'py, PyDict>)> {
    let t_total = Instant::now();
    let engine = match engine {
        "auto" => OdmSolver::Auto,
        "smo" => OdmSolver::Smo,
        "dcd" => OdmSolver::Dcd,
        e => {
            return Err(PyValueError::new_err(format!(
                "solver must be 'auto', 'smo' or 'dcd', got {e:?}"
            )))
        }
    };
    let mut p = OdmParams::new()
        .lambda(lam)
        .nu(nu)
        .theta(theta)
        .kernel(kernel_params(kernel, gamma, coef0, degree)?)
        .tol(tol)
        .cache_bytes(cache_bytes(cache_mb)?)
        .shrinking(if shrinking {
            Shrinking::On
        } else {
            Shrinking::Off
        })
        .engine(engine)
        .seed(seed);
    if let Some(m) = max_iter {
        p = p.max_iter(m);
    }
    let params = p.check().map_err(param_err)?;
    let data = dataset(&x, &y, &sample_weight, None)?;
    let t_rust = Instant::now();
    let mut obs = SignalObserver::new();
    let fitted = py.detach(|| marginkit::odm::fit(&params, &data, &mut Control::new(&mut obs)));
    obs.into_result()?;
    let fit = fitted.map_err(fit_err)?;
    let (model, report) = (fit.model, fit.report);
    let rust_seconds = t_rust.elapsed().as_secs_f64();
    let d = PyDict::new(py);
    model_items(&d, &model)?;
    d.set_item("primal", report.primal)?;
    d.set_item("dual", report.dual)?;
    d.set_item("gap", report.gap)?;
    d.set_item("status", vec![report.info.status.as_str()])?;
    d.set_item(
        "iterations",
        PyArray1::from_vec(py, vec![report.info.iterations as i64]),
    )?;
    d.set_item("objective", PyArray1::from_vec(py, vec![report.primal]))?;
    d.set_item("warnings", Vec::<String>::new())?;
    d.set_item("engine", format!("{:?}", report.engine).to_lowercase())?;
    d.set_item("rust_seconds", rust_seconds)?;
    d.set_item("total_seconds", t_total.elapsed().as_secs_f64())?;
    Ok((SvmModelHandle { model }, d))
}

/// ODMC clustering (Zhang & Zhou, stochastic mirror descent over a label-generation pool) into
/// `k` clusters (recursive bisection for k > 2). Features are standardized by the library.
#[pyfunction]
#[pyo3(signature = (x, k, lam, nu, theta, kernel, sigma_scale, beta, iterations, max_rounds, tol,
    pool, readout, seed, max_dense))]
#[allow(clippy::too_many_arguments)]
fn fit_odmc<'py>(
    py: Python<'py>,
    x: XArg<'py>,
    k: usize,
    lam: f64,
    nu: f64,
    theta: f64,
    kernel: &str,
    sigma_scale: f64,
    beta: f64,
    iterations: usize,
    max_rounds: usize,
    tol: f64,
    pool: (usize, usize, usize),
    readout: &str,
    seed: u64,
    max_dense: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let t_total = Instant::now();
    let kernel = match kernel {
        "linear" => OdmcKernel::Linear,
        "rbf" | "gaussian" => OdmcKernel::Gaussian { sigma_scale },
        other => {
            return Err(PyValueError::new_err(format!(
                "kernel must be 'linear' or 'rbf', got {other:?}"
            )))
        }
    };
    let readout = match readout {
        "decision" => Readout::Decision,
        "sign" => Readout::Sign,
        "heaviest" => Readout::Heaviest,
        "min_g" => Readout::MinG,
        other => {
            return Err(PyValueError::new_err(format!(
                "readout must be 'decision', 'sign', 'heaviest' or 'min_g', got {other:?}"
            )))
        }
    };
    let params = OdmcParams::new()
        .k(k)
        .lambda(lam)
        .nu(nu)
        .theta(theta)
        .kernel(kernel)
        .beta(beta)
        .iterations(iterations)
        .max_rounds(max_rounds)
        .tol(tol)
        .pool(PoolSpec {
            kmeans: pool.0,
            components: pool.1,
            random: pool.2,
        })
        .readout(readout)
        .seed(seed)
        .max_dense(max_dense)
        .check()
        .map_err(param_err)?;
    // A dense row-major matrix is the library's point layout: one copy; CSR is scattered.
    let points = match &x {
        XArg::Dense(a) => {
            let (n, d) = a.as_array().dim();
            let v: Vec<f64> = match a.as_slice() {
                Ok(s) => s.to_vec(),
                Err(_) => a.as_array().iter().copied().collect(),
            };
            Points { n, d, v }
        }
        XArg::Csr(..) => Points::from_features(&features(&x, None)?)
            .map_err(|e| PyValueError::new_err(e.to_string()))?,
    };
    if points.v.iter().any(|v| !v.is_finite()) {
        return Err(PyValueError::new_err("X contains NaN or infinity"));
    }
    let t_rust = Instant::now();
    let mut obs = SignalObserver::new();
    let res = py.detach(|| {
        odmc::fit(
            &params,
            &OdmcData::Points(&points),
            &mut Control::new(&mut obs),
        )
    });
    obs.into_result()?;
    let fit = res.map_err(cluster_err)?;
    let (model, res) = (fit.model, fit.report);
    let d = PyDict::new(py);
    let labels: Vec<i64> = model.labels.iter().map(|&l| l as i64).collect();
    d.set_item("labels", PyArray1::from_vec(py, labels))?;
    let sizes: Vec<i64> = model.cluster_sizes.iter().map(|&l| l as i64).collect();
    d.set_item("cluster_sizes", PyArray1::from_vec(py, sizes))?;
    d.set_item("iterations", res.iterations)?;
    d.set_item("rounds", res.rounds)?;
    d.set_item("status", res.status.as_str())?;
    let h = &res.history;
    d.set_item(
        "gap",
        PyArray1::from_vec(py, h.iter().map(|r| r.gap).collect::<Vec<_>>()),
    )?;
    d.set_item(
        "relative_gap",
        PyArray1::from_vec(py, h.iter().map(|r| r.relative_gap).collect::<Vec<_>>()),
    )?;
    d.set_item(
        "pool",
        PyArray1::from_vec(py, h.iter().map(|r| r.pool as i64).collect::<Vec<_>>()),
    )?;
    if let Some(p) = &model.paper_labels {
        let p: Vec<i64> = p.iter().map(|&l| l as i64).collect();
        d.set_item("paper_labels", PyArray1::from_vec(py, p))?;
    }
    d.set_item("rust_seconds", t_rust.elapsed().as_secs_f64())?;
    d.set_item("total_seconds", t_total.elapsed().as_secs_f64())?;
    Ok(d)
}

/// Core-set solution of the minimum enclosing ball (`problem` "meb"), hard-margin SVDD ("svdd"),
/// the 2-norm soft-margin SVM ("svm", two classes) or the one-class L2-SVM ("oneclass")
/// (Badoiu-Clarkson core-sets; `nodes > 1`: Notarstefano's distributed consensus over an
/// in-process network of that many nodes on `graph`). Returns the model handle (None for the MEB)
/// and a dict: the core-set ids, the distinct core-set points' ids and dual weights, `r2`, `c2`
/// and, for the MEB, the centre.
#[pyfunction]
#[pyo3(signature = (problem, x, y, kernel, gamma, coef0, degree, c, eps, seed, nodes, graph,
    max_rounds))]
#[allow(clippy::too_many_arguments)]
fn fit_coreset<'py>(
    py: Python<'py>,
    problem: &str,
    x: XArg<'py>,
    y: Option<PyReadonlyArray1<'py, f64>>,
    kernel: &str,
    gamma: f64,
    coef0: f64,
    degree: u32,
    c: f64,
    eps: f64,
    seed: u64,
    nodes: usize,
    graph: &str,
    max_rounds: u64,
) -> PyResult<(Option<SvmModelHandle>, Bound<'py, PyDict>)> {
    let t_total = Instant::now();
    let problem = match problem {
        "meb" => Problem::Meb,
        "svdd" => Problem::Svdd,
        "svm" => Problem::L2Svm { c },
        "oneclass" => Problem::OneClassL2 { c },
        p => {
            return Err(PyValueError::new_err(format!(
                "problem must be 'meb', 'svdd', 'svm' or 'oneclass', got {p:?}"
            )))
        }
    };
    if nodes == 0 {
        return Err(PyValueError::new_err("n_nodes must be >= 1, got 0"));
    }
    let params = CoresetParams::new()
        .problem(problem)
        .kernel(kernel_params(kernel, gamma, coef0, degree)?)
        .eps(eps)
        .seed(seed);
    let valid = params.check().map_err(param_err)?;
    let data = match &y {
        Some(y) => dataset(&x, y, &None, None)?,
        None => {
            let xf = features(&x, None)?;
            let n = xf.n_rows();
            marginkit::Dataset::new(xf, vec![1.0; n], None).map_err(data_err)?
        }
    };
    let consensus = if nodes > 1 {
        Some(
            ConsensusParams::new()
                .coreset(params)
                // The library's message quotes the CLI flag; name the Python parameter instead.
                .graph(graph.parse::<Graph>().map_err(|e| match e {
                    CoresetError::Edges(m) => {
                        PyValueError::new_err(m.replacen("--graph ", "graph ", 1))
                    }
                    other => coreset_err(other),
                })?)
                .max_rounds(max_rounds)
                .check()
                .map_err(param_err)?,
        )
    } else {
        None
    };
    let params = valid;
    let t_rust = Instant::now();
    let out = py.detach(|| -> Result<_, CoresetError> {
        let (pts, labels) = points_for(&data, problem)?;
        let (found, swaps, rounds, agreed) = match &consensus {
            None => {
                let fit = marginkit::coreset::fit(&params, &pts, &mut Control::default())?;
                (fit.model, fit.report.swaps, 0, true)
            }
            Some(cp) => {
                let network = ConsensusData::InProcess {
                    points: &pts,
                    nodes,
                };
                let fit = consensus::fit(cp, &network, &mut Control::default())?;
                (fit.model, 0, fit.report.rounds, fit.report.agreed)
            }
        };
        let model = match problem {
            Problem::Meb => None,
            _ => Some(found.to_svm(labels)?),
        };
        Ok((found, swaps, rounds, agreed, model, labels))
    });
    let (found, swaps, rounds, agreed, model, labels) = out.map_err(coreset_err)?;
    let (msg, kern) = (&found.set, &found.kernel);
    let rust_seconds = t_rust.elapsed().as_secs_f64();
    let d = PyDict::new(py);
    let ids: Vec<i64> = msg.ids.iter().map(|&i| i as i64).collect();
    d.set_item("core_set", PyArray1::from_vec(py, ids))?;
    let pts = &msg.points;
    let distinct: Vec<i64> = pts.ids().iter().map(|&i| i as i64).collect();
    d.set_item("points", PyArray1::from_vec(py, distinct))?;
    d.set_item("weights", PyArray1::from_vec(py, msg.weights.clone()))?;
    d.set_item("r2", msg.r2)?;
    d.set_item("c2", msg.c2)?;
    d.set_item("ridge", kern.ridge)?;
    d.set_item("swaps", swaps)?;
    d.set_item("rounds", rounds)?;
    d.set_item("agreed", agreed)?;
    d.set_item("k", params.k())?;
    d.set_item("labels", PyArray1::from_vec(py, labels.to_vec()))?;
    if problem == Problem::Meb {
        let dim = pts.dim();
        let mut centre = vec![0.0; dim];
        for i in 0..pts.len() {
            for (cj, &v) in centre.iter_mut().zip(pts.row(i)) {
                *cj += msg.weights[i] * v;
            }
        }
        d.set_item("center", PyArray1::from_vec(py, centre))?;
    }
    let handle = match model {
        Some(m) => {
            model_items(&d, &m)?;
            Some(SvmModelHandle { model: m })
        }
        None => None,
    };
    d.set_item("rust_seconds", rust_seconds)?;
    d.set_item("total_seconds", t_total.elapsed().as_secs_f64())?;
    Ok((handle, d))
}
