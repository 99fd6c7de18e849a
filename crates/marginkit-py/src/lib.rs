//! `marginkit._core`: the Rust side of the Python package `marginkit`.
//!
//! A deliberately small surface: one function per training method, taking the data (a dense
//! C-contiguous float64 matrix or the three arrays of a CSR matrix) and plain parameters, and
//! returning the fitted quantities as numpy arrays in a dict; kernel models also come back as a
//! [`SvmModelHandle`] that predicts (and pickles through LIBSVM's model text). The estimator
//! classes (scikit-learn conventions, parameter resolution, label encoding, sign conventions)
//! live in Python (`python/marginkit/`). A new library method needs one `fit_*` function here
//! (the method modules' are in `methods.rs`) and one thin estimator class there.
//!
//! Training runs with the GIL released. Ctrl-C stops kernel and linear SVMs, the path, ODM and
//! ODMC and raises KeyboardInterrupt: the solvers poll Python's signal handlers through an
//! [`Observer`] (at most every 50 ms; the linear solver between passes, ODMC between rounds).
//! AID, S3VM, the robust path and the core-set routine take no observer in the library and run
//! to their own limits. Rust errors become Python exceptions carrying the Rust message:
//! parameter and data errors `ValueError`, numerical breakdown `RuntimeError`.
//!
//! Copies: the library's [`Dataset`] owns its arrays, so the features are copied once into
//! Rust-owned storage (a row-major memcpy for dense input; the CSR index arrays are widened to
//! the library's `usize`/`u32`). The Python side never copies an input that already is
//! C-contiguous float64 (dense) or canonical CSR with float64 data and int32/int64 indices.

use std::ops::ControlFlow;
use std::time::Instant;

use marginkit::data::{CsrMatrix, Dataset, DenseMatrix, Features};
use marginkit::error::{DataError, FitError, IoError, ParamError, SolveError};
use marginkit::fit::Control;
use marginkit::path::{Grid, PathData, PathParams};
use marginkit::screening::Rule;
use marginkit::solver::{IterStats, Observer, Shrinking};
use marginkit::svm::linear::{LinearParams, LinearSolver};
use marginkit::svm::model_io::{read_model_bytes, write_model};
use marginkit::svm::params::{Gamma, KernelKind, KernelParams, PlattFit, Probability, SvmType};
use marginkit::svm::{SvmModel, SvmParams};
use numpy::{PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

mod methods;

/// Feature matrix as passed from Python: dense, or CSR arrays with the number of columns.
#[derive(FromPyObject)]
enum XArg<'py> {
    Dense(PyReadonlyArray2<'py, f64>),
    Csr(PyReadonlyArray1<'py, f64>, IdxArg<'py>, IdxArg<'py>, usize),
}

/// A CSR index array as scipy stores it (int32, or int64 for large matrices).
#[derive(FromPyObject)]
enum IdxArg<'py> {
    I32(PyReadonlyArray1<'py, i32>),
    I64(PyReadonlyArray1<'py, i64>),
}

impl IdxArg<'_> {
    fn to_vec<T: TryFrom<i64>>(&self, what: &str) -> PyResult<Vec<T>> {
        let conv = |v: i64| {
            T::try_from(v).map_err(|_| {
                PyValueError::new_err(format!("sparse matrix: {what} entry {v} is out of range"))
            })
        };
        match self {
            IdxArg::I32(a) => a.as_array().iter().map(|&v| conv(i64::from(v))).collect(),
            IdxArg::I64(a) => a.as_array().iter().map(|&v| conv(v)).collect(),
        }
    }
}

/// Copies the rows `perm` (all rows in order when `None`) into library features.
fn features(x: &XArg<'_>, perm: Option<&[usize]>) -> PyResult<Features> {
    match x {
        XArg::Dense(a) => {
            let view = a.as_array();
            let (n, d) = view.dim();
            let values: Vec<f64> = match (a.as_slice(), perm) {
                (Ok(s), None) => s.to_vec(),
                (Ok(s), Some(p)) => {
                    let mut v = Vec::with_capacity(p.len() * d);
                    for &i in p {
                        v.extend_from_slice(&s[i * d..(i + 1) * d]);
                    }
                    v
                }
                (Err(_), _) => {
                    let rows: Vec<usize> = perm.map_or_else(|| (0..n).collect(), <[_]>::to_vec);
                    let mut v = Vec::with_capacity(rows.len() * d);
                    for i in rows {
                        v.extend(view.row(i).iter().copied());
                    }
                    v
                }
            };
            let rows = perm.map_or(n, <[_]>::len);
            Ok(Features::Dense(
                DenseMatrix::new(rows, d, values).map_err(data_err)?,
            ))
        }
        XArg::Csr(data, indices, indptr, n_cols) => {
            let vals: Vec<f64> = data.as_array().iter().copied().collect();
            let idx: Vec<u32> = indices.to_vec("index")?;
            let ptr: Vec<usize> = indptr.to_vec("indptr")?;
            if ptr.is_empty() {
                return Err(PyValueError::new_err("sparse matrix: empty indptr"));
            }
            let (ptr, idx, vals) = match perm {
                None => (ptr, idx, vals),
                Some(p) => {
                    let n = ptr.len() - 1;
                    let mut nptr = Vec::with_capacity(p.len() + 1);
                    let mut nidx = Vec::new();
                    let mut nval = Vec::new();
                    nptr.push(0);
                    for &i in p {
                        if i >= n {
                            return Err(PyValueError::new_err("row permutation out of range"));
                        }
                        let (a, b) = (ptr[i], ptr[i + 1]);
                        if a > b || b > idx.len() || b > vals.len() {
                            return Err(PyValueError::new_err(
                                "malformed sparse matrix: indptr out of range",
                            ));
                        }
                        nidx.extend_from_slice(&idx[a..b]);
                        nval.extend_from_slice(&vals[a..b]);
                        nptr.push(nidx.len());
                    }
                    (nptr, nidx, nval)
                }
            };
            Ok(Features::Sparse(
                CsrMatrix::new(*n_cols, ptr, idx, vals).map_err(data_err)?,
            ))
        }
    }
}

fn vec1(a: &Option<PyReadonlyArray1<'_, f64>>, perm: Option<&[usize]>) -> Option<Vec<f64>> {
    a.as_ref().map(|a| {
        let v = a.as_array();
        match perm {
            None => v.iter().copied().collect(),
            Some(p) => p.iter().map(|&i| v[i]).collect(),
        }
    })
}

fn dataset(
    x: &XArg<'_>,
    y: &PyReadonlyArray1<'_, f64>,
    sample_weight: &Option<PyReadonlyArray1<'_, f64>>,
    perm: Option<&[usize]>,
) -> PyResult<Dataset> {
    let n = match x {
        XArg::Dense(a) => a.as_array().dim().0,
        XArg::Csr(_, _, ptr, _) => match ptr {
            IdxArg::I32(a) => a.as_array().len().saturating_sub(1),
            IdxArg::I64(a) => a.as_array().len().saturating_sub(1),
        },
    };
    if let Some(p) = perm {
        if p.len() != n || p.iter().any(|&i| i >= n) {
            return Err(PyValueError::new_err(
                "row permutation does not match the data",
            ));
        }
    }
    let yv = vec1(&Some(y.clone()), perm).unwrap_or_default();
    if yv.len() != n {
        return Err(PyValueError::new_err(format!(
            "y has {} entries but X has {n} rows",
            yv.len()
        )));
    }
    if let Some(w) = sample_weight {
        let wl = w.as_array().len();
        if wl != n {
            return Err(PyValueError::new_err(format!(
                "sample_weight has {wl} entries but X has {n} rows"
            )));
        }
    }
    let xf = features(x, perm)?;
    Dataset::new(xf, yv, vec1(sample_weight, perm)).map_err(data_err)
}

fn data_err(e: DataError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

fn param_err(e: ParamError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

fn fit_err(e: FitError) -> PyErr {
    match e {
        // Infeasible: the user's nu or weights admit no feasible point (bad parameters).
        FitError::Param(_) | FitError::Data(_) | FitError::Solve(SolveError::Infeasible(_)) => {
            PyValueError::new_err(e.to_string())
        }
        other => PyRuntimeError::new_err(other.to_string()),
    }
}

fn io_err(e: IoError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// The library's default gamma (`Gamma::Auto`, LIBSVM's and scikit-learn's `'auto'`) for data
/// with `n_features` columns: the estimators call it for `gamma='auto'` so that the default is
/// resolved by the library's one resolver.
#[pyfunction]
fn default_gamma(n_features: usize) -> f64 {
    Gamma::Auto.resolve(n_features)
}

fn kernel_params(kernel: &str, gamma: f64, coef0: f64, degree: u32) -> PyResult<KernelParams> {
    let kind = KernelKind::from_name(kernel).ok_or_else(|| {
        PyValueError::new_err(format!(
            "kernel must be 'linear', 'poly', 'rbf', 'sigmoid' or 'precomputed', got {kernel:?}"
        ))
    })?;
    Ok(KernelParams {
        kind,
        gamma: Gamma::Value(gamma),
        coef0,
        degree,
    })
}

/// A fitted kernel SVM (LIBSVM layout); predicts, and pickles as LIBSVM model text.
#[pyclass(module = "marginkit._core", frozen)]
struct SvmModelHandle {
    model: SvmModel,
}

#[pymethods]
impl SvmModelHandle {
    /// Decision values, shape (n, n_class * (n_class - 1) / 2) for classifiers (LIBSVM's pair
    /// order and sign: positive means the first class of the pair), (n, 1) otherwise.
    fn decision_values<'py>(
        &self,
        py: Python<'py>,
        x: XArg<'py>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let xf = features(&x, None)?;
        self.model.check_features(&xf).map_err(data_err)?;
        let model = &self.model;
        let rows = py.detach(|| model.decision_values(&xf));
        let width = if model.svm_type.is_classifier() {
            let k = model.labels.len();
            k * (k - 1) / 2
        } else {
            1
        };
        let flat: Vec<f64> = rows.into_iter().flatten().collect();
        let n = xf.n_rows();
        let arr = PyArray1::from_vec(py, flat);
        arr.reshape([n, width])
    }

    /// Predicted labels (classification: the model's labels; regression: values).
    fn predict<'py>(&self, py: Python<'py>, x: XArg<'py>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let xf = features(&x, None)?;
        let model = &self.model;
        let out = py.detach(|| model.predict(&xf)).map_err(data_err)?;
        Ok(PyArray1::from_vec(py, out))
    }

    /// Class probabilities in label order (Platt scaling, pairwise coupling), shape (n, n_class).
    fn predict_proba<'py>(
        &self,
        py: Python<'py>,
        x: XArg<'py>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        if !self.model.svm_type.is_classifier() || self.model.prob_a.is_empty() {
            return Err(PyValueError::new_err(
                "the model has no probability model (fit with probability=True)",
            ));
        }
        let xf = features(&x, None)?;
        let model = &self.model;
        let rows = py
            .detach(|| model.predict_probability(&xf))
            .map_err(data_err)?;
        let k = model.labels.len();
        let flat: Vec<f64> = rows.into_iter().flat_map(|(_, p)| p).collect();
        let arr = PyArray1::from_vec(py, flat);
        arr.reshape([xf.n_rows(), k])
    }

    /// The model in LIBSVM's text format.
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let mut buf = Vec::new();
        write_model(&mut buf, &self.model)
            .map_err(|e| PyValueError::new_err(format!("cannot write the model: {e}")))?;
        Ok(PyBytes::new(py, &buf))
    }

    /// Reads a model from LIBSVM's text format.
    #[staticmethod]
    fn from_bytes(bytes: &[u8]) -> PyResult<Self> {
        Ok(Self {
            model: read_model_bytes(bytes).map_err(io_err)?,
        })
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyBytes>,))> {
        let ctor = py.get_type::<SvmModelHandle>().getattr("from_bytes")?;
        Ok((ctor, (slf.get().to_bytes(py)?,)))
    }
}

/// Lets Ctrl-C stop a training run: every 50 ms of solver progress it takes the GIL for a moment
/// and asks Python whether a signal is pending; a pending KeyboardInterrupt (or any exception a
/// signal handler raised) stops the solve, and the fit function re-raises it.
struct SignalObserver {
    last: Instant,
    raised: Option<PyErr>,
}

impl SignalObserver {
    fn new() -> Self {
        Self {
            last: Instant::now(),
            raised: None,
        }
    }
    /// The pending exception, if a signal stopped the solve.
    fn into_result(self) -> PyResult<()> {
        self.raised.map_or(Ok(()), Err)
    }
}

impl Observer for SignalObserver {
    fn on_iter(&mut self, _stats: &IterStats) -> ControlFlow<()> {
        if self.raised.is_some() {
            return ControlFlow::Break(());
        }
        if self.last.elapsed().as_millis() < 50 {
            return ControlFlow::Continue(());
        }
        self.last = Instant::now();
        match Python::attach(|py| py.check_signals()) {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                self.raised = Some(e);
                ControlFlow::Break(())
            }
        }
    }
}

fn svm_type(name: &str) -> PyResult<SvmType> {
    Ok(match name {
        "c_svc" => SvmType::CSvc,
        "nu_svc" => SvmType::NuSvc,
        "one_class" => SvmType::OneClass,
        "epsilon_svr" => SvmType::EpsSvr,
        "nu_svr" => SvmType::NuSvr,
        other => return Err(PyValueError::new_err(format!("unknown svm_type {other:?}"))),
    })
}

/// Trains a kernel SVM (LIBSVM formulations). `perm` reorders the rows before training (the
/// estimators use it to make LIBSVM's first-appearance class order the sorted order).
/// Returns (handle, dict of fitted arrays and the report).
#[pyfunction]
#[pyo3(signature = (svm_type_name, x, y, sample_weight, perm, kernel, gamma, coef0, degree, c, nu,
    epsilon, tol, cache_mb, shrinking, probability, platt, max_iter, class_weight, seed))]
#[allow(clippy::too_many_arguments)]
fn fit_svm<'py>(
    py: Python<'py>,
    svm_type_name: &str,
    x: XArg<'py>,
    y: PyReadonlyArray1<'py, f64>,
    sample_weight: Option<PyReadonlyArray1<'py, f64>>,
    perm: Option<Vec<usize>>,
    kernel: &str,
    gamma: f64,
    coef0: f64,
    degree: u32,
    c: f64,
    nu: f64,
    epsilon: f64,
    tol: f64,
    cache_mb: f64,
    shrinking: bool,
    probability: bool,
    platt: &str,
    max_iter: Option<u64>,
    class_weight: Vec<(f64, f64)>,
    seed: u64,
) -> PyResult<(SvmModelHandle, Bound<'py, PyDict>)> {
    let t_total = Instant::now();
    let cache = methods::cache_bytes(cache_mb)?;
    let mut params = SvmParams::new()
        .svm_type(svm_type(svm_type_name)?)
        .kernel(kernel_params(kernel, gamma, coef0, degree)?)
        .c(c)
        .nu(nu)
        .epsilon(epsilon)
        .tol(tol)
        .cache_bytes(cache)
        .shrinking(if shrinking {
            Shrinking::On
        } else {
            Shrinking::Off
        })
        .probability(if probability {
            Probability::On
        } else {
            Probability::Off
        })
        .platt(match platt {
            "origin" => PlattFit::ThroughOrigin,
            "libsvm" => PlattFit::WithIntercept,
            other => {
                return Err(PyValueError::new_err(format!(
                    "unknown platt {other:?} (expected 'origin' or 'libsvm')"
                )))
            }
        })
        .seed(seed);
    if let Some(m) = max_iter {
        params = params.max_iter(m);
    }
    for (label, w) in class_weight {
        params = params.class_weight(label, w);
    }
    let params = params.check().map_err(param_err)?;
    let data = dataset(&x, &y, &sample_weight, perm.as_deref())?;
    let t_rust = Instant::now();
    let mut obs = SignalObserver::new();
    let fitted = py.detach(|| {
        marginkit::svm::fit(&params, &data, &mut marginkit::fit::Control::new(&mut obs))
    });
    obs.into_result()?;
    let marginkit::fit::Fit { model, report, .. } = fitted.map_err(fit_err)?;
    let rust_seconds = t_rust.elapsed().as_secs_f64();
    drop(data);

    let d = PyDict::new(py);
    model_items(&d, &model)?;
    report_items(
        &d,
        report
            .subproblems
            .iter()
            .map(|s| (s.status.as_str(), s.iterations, s.objective)),
    )?;
    d.set_item("warnings", report.warnings.clone())?;
    d.set_item("rust_seconds", rust_seconds)?;
    d.set_item("total_seconds", t_total.elapsed().as_secs_f64())?;
    Ok((SvmModelHandle { model }, d))
}

/// The fitted arrays of a LIBSVM-layout model: `sv_indices` (0-based rows of the training data),
/// `sv_coef` (n_class - 1 x n_SV), `rho`, `n_sv`, `labels` (model order), `prob_a`, `prob_b`.
fn model_items(d: &Bound<'_, PyDict>, model: &SvmModel) -> PyResult<()> {
    let py = d.py();
    let idx: Vec<i64> = model
        .sv_indices
        .as_ref()
        .map(|v| v.iter().map(|&i| i as i64).collect())
        .unwrap_or_default();
    d.set_item("sv_indices", PyArray1::from_vec(py, idx))?;
    let rows = model.sv_coef.len();
    let nsv = model.total_sv();
    let flat: Vec<f64> = model.sv_coef.iter().flatten().copied().collect();
    d.set_item(
        "sv_coef",
        PyArray1::from_vec(py, flat).reshape([rows, nsv])?,
    )?;
    d.set_item("rho", PyArray1::from_vec(py, model.rho.clone()))?;
    let n_sv: Vec<i64> = model.n_sv.iter().map(|&v| v as i64).collect();
    d.set_item("n_sv", PyArray1::from_vec(py, n_sv))?;
    d.set_item("labels", PyArray1::from_vec(py, model.labels.clone()))?;
    d.set_item("prob_a", PyArray1::from_vec(py, model.prob_a.clone()))?;
    d.set_item("prob_b", PyArray1::from_vec(py, model.prob_b.clone()))?;
    Ok(())
}

fn report_items<'a>(
    d: &Bound<'_, PyDict>,
    subs: impl Iterator<Item = (&'a str, u64, f64)>,
) -> PyResult<()> {
    let (mut status, mut iters, mut obj) = (Vec::new(), Vec::new(), Vec::new());
    for (s, i, o) in subs {
        status.push(s);
        iters.push(i as i64);
        obj.push(o);
    }
    let py = d.py();
    d.set_item("status", status)?;
    d.set_item("iterations", PyArray1::from_vec(py, iters))?;
    d.set_item("objective", PyArray1::from_vec(py, obj))?;
    Ok(())
}

/// Trains a linear SVM (LIBLINEAR formulations by dual coordinate descent). `solver` is
/// LIBLINEAR's `-s` number (1, 3, 12, 13). Returns a dict: `labels` (model order; binary models
/// have one weight vector, positive for `labels[0]`), `w` (n_vectors x n_features),
/// `intercept` (n_vectors), and the report.
#[pyfunction]
#[pyo3(signature = (solver, x, y, sample_weight, c, eps, p, bias, class_weight, max_passes, seed, shrinking))]
#[allow(clippy::too_many_arguments)]
fn fit_linear<'py>(
    py: Python<'py>,
    solver: u32,
    x: XArg<'py>,
    y: PyReadonlyArray1<'py, f64>,
    sample_weight: Option<PyReadonlyArray1<'py, f64>>,
    c: f64,
    eps: f64,
    p: f64,
    bias: Option<f64>,
    class_weight: Vec<(f64, f64)>,
    max_passes: u64,
    seed: u64,
    shrinking: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let t_total = Instant::now();
    let solver = LinearSolver::from_id(solver).ok_or_else(|| {
        PyValueError::new_err(format!(
            "unknown linear solver -s {solver} (1, 2, 3, 11, 12, 13)"
        ))
    })?;
    let mut params = LinearParams::new(solver)
        .c(c)
        .eps(eps)
        .p(p)
        .seed(seed)
        .max_passes(max_passes)
        .shrinking(if shrinking {
            Shrinking::On
        } else {
            Shrinking::Off
        });
    params = match bias {
        Some(b) => params.bias(b),
        None => params.no_bias(),
    };
    for (label, w) in class_weight {
        params = params.class_weight(label, w);
    }
    let params = params.check().map_err(param_err)?;
    let data = dataset(&x, &y, &sample_weight, None)?;
    let t_rust = Instant::now();
    let mut obs = SignalObserver::new();
    let fit =
        py.detach(|| marginkit::svm::linear::fit(&params, &data, &mut Control::new(&mut obs)));
    obs.into_result()?;
    let fit = fit.map_err(fit_err)?;
    let rust_seconds = t_rust.elapsed().as_secs_f64();
    let m = &fit.model;
    let nf = m.n_features();
    let k = m.n_weight_vectors();
    let mut w = Vec::with_capacity(k * nf);
    let mut b = Vec::with_capacity(k);
    for j in 0..k {
        w.extend_from_slice(&m.weights(j)[..nf]);
        b.push(m.intercept(j));
    }
    let d = PyDict::new(py);
    d.set_item("labels", PyArray1::from_vec(py, m.labels().to_vec()))?;
    d.set_item("w", PyArray1::from_vec(py, w).reshape([k, nf])?)?;
    d.set_item("intercept", PyArray1::from_vec(py, b))?;
    report_items(
        &d,
        fit.report
            .subproblems
            .iter()
            .map(|s| (s.status.as_str(), s.iterations, s.primal_objective)),
    )?;
    d.set_item("warnings", fit.report.warnings.clone())?;
    d.set_item("rust_seconds", rust_seconds)?;
    d.set_item("total_seconds", t_total.elapsed().as_secs_f64())?;
    Ok(d)
}

/// Runs the screened regularization path (bias-free SVM over a C grid, Ogawa et al. 2014).
/// `grid` is ("log", c_min, c_max, points), ("list", [C...]) or ("epsilon", eps, c_max,
/// max_points); `kernel` "linear_engine" selects the DCD engine (primal weights), any other
/// kernel name the SMO engine. Returns (handles per point (kernel engine) or None, dict).
#[pyfunction]
#[pyo3(signature = (x, y, x_valid, y_valid, kernel, gamma, coef0, degree, grid, screening, bias,
    tol, cache_mb, max_iter, shrinking))]
#[allow(clippy::too_many_arguments)]
fn fit_path<'py>(
    py: Python<'py>,
    x: XArg<'py>,
    y: PyReadonlyArray1<'py, f64>,
    x_valid: Option<XArg<'py>>,
    y_valid: Option<PyReadonlyArray1<'py, f64>>,
    kernel: &str,
    gamma: f64,
    coef0: f64,
    degree: u32,
    grid: &Bound<'py, PyAny>,
    screening: Option<&str>,
    bias: Option<f64>,
    tol: f64,
    cache_mb: f64,
    max_iter: Option<u64>,
    shrinking: bool,
) -> PyResult<(Option<Vec<SvmModelHandle>>, Bound<'py, PyDict>)> {
    let t_total = Instant::now();
    let kind: String = grid.get_item(0)?.extract()?;
    let grid = match kind.as_str() {
        "log" => Grid::Log {
            c_min: grid.get_item(1)?.extract()?,
            c_max: grid.get_item(2)?.extract()?,
            points: grid.get_item(3)?.extract()?,
        },
        "list" => Grid::List(grid.get_item(1)?.extract()?),
        "epsilon" => Grid::Epsilon {
            eps: grid.get_item(1)?.extract()?,
            c_max: grid.get_item(2)?.extract()?,
            max_points: grid.get_item(3)?.extract()?,
        },
        other => {
            return Err(PyValueError::new_err(format!(
                "grid must be 'log', 'list' or 'epsilon', got {other:?}"
            )))
        }
    };
    let rule = match screening {
        None => None,
        Some(s) => Some(Rule::from_name(s).ok_or_else(|| {
            PyValueError::new_err(format!(
                "screening must be 'bt1', 'bt2', 'it' or None, got {s:?}"
            ))
        })?),
    };
    let cache = methods::cache_bytes(cache_mb)?;
    let base = if kernel == "linear_engine" {
        PathParams::linear()
    } else {
        let spec = kernel_params(kernel, gamma, coef0, degree)?.resolve(0);
        PathParams::kernel(spec)
    };
    let params = base
        .grid(grid)
        .screening(rule)
        .bias(bias)
        .tol(tol)
        .cache_bytes(cache)
        .max_iter(max_iter)
        .shrinking(if shrinking {
            Shrinking::On
        } else {
            Shrinking::Off
        })
        .keep_solutions(true)
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
    let mut obs = SignalObserver::new();
    let fitted = py.detach(|| -> Result<_, FitError> {
        let path = marginkit::path::fit(
            &params,
            &PathData::new(&train).validate_on(valid.as_ref()),
            &mut Control::new(&mut obs),
        )?
        .model;
        let handles = if kernel == "linear_engine" {
            None
        } else {
            let mut v = Vec::with_capacity(path.points.len());
            for k in 0..path.points.len() {
                v.push(SvmModelHandle {
                    model: path.svm_model(k, &train)?,
                });
            }
            Some(v)
        };
        Ok((path, handles))
    });
    obs.into_result()?;
    let (path, handles) = fitted.map_err(fit_err)?;
    let rust_seconds = t_rust.elapsed().as_secs_f64();
    let d = PyDict::new(py);
    let pts = &path.points;
    let col = |f: &dyn Fn(&marginkit::path::PathPoint) -> f64| -> Vec<f64> {
        pts.iter().map(f).collect()
    };
    d.set_item("c", PyArray1::from_vec(py, col(&|p| p.c)))?;
    d.set_item("objective", PyArray1::from_vec(py, col(&|p| p.objective)))?;
    d.set_item("n_sv", PyArray1::from_vec(py, col(&|p| p.n_sv as f64)))?;
    d.set_item("n_bsv", PyArray1::from_vec(py, col(&|p| p.n_bsv as f64)))?;
    d.set_item(
        "screened_r",
        PyArray1::from_vec(py, col(&|p| p.screened_r as f64)),
    )?;
    d.set_item(
        "screened_l",
        PyArray1::from_vec(py, col(&|p| p.screened_l as f64)),
    )?;
    d.set_item(
        "screening_rate",
        PyArray1::from_vec(py, col(&|p| p.screening_rate)),
    )?;
    d.set_item(
        "rule_seconds",
        PyArray1::from_vec(py, col(&|p| p.rule_seconds)),
    )?;
    d.set_item(
        "solve_seconds",
        PyArray1::from_vec(py, col(&|p| p.solve_seconds)),
    )?;
    d.set_item(
        "iterations",
        PyArray1::from_vec(py, col(&|p| p.iterations as f64)),
    )?;
    d.set_item(
        "kkt_violators_freed",
        PyArray1::from_vec(py, col(&|p| p.kkt_violators_freed as f64)),
    )?;
    d.set_item(
        "valid_accuracy",
        PyArray1::from_vec(py, col(&|p| p.valid_accuracy.unwrap_or(f64::NAN))),
    )?;
    d.set_item(
        "status",
        pts.iter().map(|p| p.status.as_str()).collect::<Vec<_>>(),
    )?;
    let n = train.len();
    let alpha: Vec<f64> = pts.iter().flat_map(|p| p.alpha.iter().copied()).collect();
    let rows = alpha.len().checked_div(n).unwrap_or(0);
    d.set_item("alpha", PyArray1::from_vec(py, alpha).reshape([rows, n])?)?;
    if kernel == "linear_engine" {
        let nf = path.n_features;
        let mut w = Vec::with_capacity(pts.len() * nf);
        let mut b = Vec::with_capacity(pts.len());
        for k in 0..pts.len() {
            let m = path.linear_model(k).map_err(data_err)?;
            w.extend_from_slice(&m.weights(0)[..nf]);
            b.push(m.intercept(0));
        }
        d.set_item("w", PyArray1::from_vec(py, w).reshape([pts.len(), nf])?)?;
        d.set_item("intercept", PyArray1::from_vec(py, b))?;
    }
    d.set_item("labels", PyArray1::from_vec(py, path.labels.to_vec()))?;
    d.set_item("rust_seconds", rust_seconds)?;
    d.set_item("total_seconds", t_total.elapsed().as_secs_f64())?;
    Ok((handles, d))
}

/// The extension module.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<SvmModelHandle>()?;
    m.add_function(wrap_pyfunction!(default_gamma, m)?)?;
    m.add_function(wrap_pyfunction!(fit_svm, m)?)?;
    m.add_function(wrap_pyfunction!(fit_linear, m)?)?;
    m.add_function(wrap_pyfunction!(fit_path, m)?)?;
    methods::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
