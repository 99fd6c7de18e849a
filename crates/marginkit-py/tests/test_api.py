"""Errors, pickling, the GIL, input handling, linear models and the regularization path."""

import ast
import dis
import inspect
import os
import pickle
import signal
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
import sklearn.svm as sk
from sklearn.metrics.pairwise import rbf_kernel

import marginkit as mk
from marginkit import _core
from marginkit._common import to_core

from conftest import assert_same_predictions


# ---------------------------------------------------------------- errors carry the Rust message

@pytest.mark.parametrize("est,message", [
    (mk.SVC(C=-1.0), "C must be finite and > 0, got -1"),
    (mk.SVC(C=float("nan")), "C must be finite and > 0, got NaN"),
    (mk.NuSVC(nu=1.5), r"nu = 1.5 is outside \(0, 1\]"),
    (mk.SVC(gamma=-0.5), "gamma must be finite and > 0, got -0.5"),
    (mk.SVR(epsilon=-1.0), "epsilon"),
    (mk.SVC(cache_size=0), "cache_size must be finite and > 0"),
    (mk.LinearSVC(C=0.0), "C must be finite and > 0, got 0"),
    (mk.LinearSVR(epsilon=-1.0), "p must be finite and >= 0, got -1"),
    (mk.LinearSVC(tol=-1e-3), "eps must be finite and > 0"),
    (mk.SVCPath(C_min=10.0, C_max=1.0), "c_min must be <= c_max"),
    (mk.SVCPath(screening="xx"), "screening must be one of"),
    (mk.SVC(kernel="cubic"), "kernel must be one of"),
    (mk.LinearSVC(dual=False, loss="hinge"), "dual=False"),
    (mk.LinearSVR(dual=False), "dual=False"),
])
def test_bad_parameters_raise_value_error(heart, est, message):
    Xtr, ytr, _, _ = heart
    with pytest.raises(ValueError, match=message):
        est.fit(Xtr, ytr)


def test_bad_data_raises_value_error_with_rust_message(heart):
    Xtr, ytr, _, _ = heart
    w = np.ones(len(ytr))
    w[3] = -1.0
    with pytest.raises(ValueError, match=r"sample weight -1 in row 3 \(0-based\) must be finite"):
        mk.SVR().fit(Xtr, ytr, sample_weight=w)
    y = np.where(np.arange(len(ytr)) < 10, 1.0, -1.0)
    with pytest.raises(ValueError, match="specified nu is infeasible"):
        mk.NuSVC(nu=0.9).fit(Xtr, y)
    with pytest.raises(ValueError, match="positive weights belong to the same class"):
        mk.SVC().fit(Xtr, ytr, sample_weight=(ytr > 0).astype(float))
    # Straight into the core: a CSR matrix whose indices decrease within a row.
    bad = (np.array([1.0, 2.0]), np.array([1, 0], dtype=np.int32),
           np.array([0, 2], dtype=np.int32), 3)
    with pytest.raises(ValueError, match="column indices must increase within a row"):
        _core.fit_linear(1, bad, np.array([1.0]), None, 1.0, 0.1, 0.0, None, [], 10, 0, True)
    with pytest.raises(ValueError, match="y has 2 entries but X has 1 rows"):
        _core.fit_linear(1, np.ones((1, 2)), np.array([1.0, 0.0]), None, 1.0, 0.1, 0.0, None,
                         [], 10, 0, True)


def test_predict_feature_mismatch(heart):
    Xtr, ytr, Xte, _ = heart
    m = mk.SVC().fit(Xtr, ytr)
    with pytest.raises(ValueError, match="features"):
        m.predict(Xte[:, :5])


def test_not_converged_warns(heart):
    Xtr, ytr, _, _ = heart
    from sklearn.exceptions import ConvergenceWarning
    with pytest.warns(ConvergenceWarning, match="max_iterations"):
        m = mk.SVC(C=100.0, max_iter=5).fit(Xtr, ytr)
    assert m.fit_status_ == 1
    assert m.fit_report_["status"] == ["max_iterations"]


# ---------------------------------------------------------------- inputs

def test_dense_float64_c_array_is_passed_without_a_python_copy():
    X = np.random.default_rng(0).normal(size=(20, 3))
    assert to_core(X) is X
    S = sp.random(20, 5, density=0.3, format="csr", random_state=0)
    S.sort_indices()
    data, indices, indptr, ncols = to_core(S)
    assert np.shares_memory(data, S.data) and indices is S.indices and indptr is S.indptr
    assert ncols == 5


def _python_peak(fit, *args):
    """Transient bytes allocated through Python's allocators (numpy reports its array buffers to
    tracemalloc) while `fit(*args)` runs: the peak minus what the fitted estimator keeps (its
    fitted attributes, e.g. support_vectors_). The Rust core's own allocations are not counted."""
    import tracemalloc
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        fit(*args)
        now, peak = tracemalloc.get_traced_memory()
        return peak - max(now, base)
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("make", [
    lambda: mk.LinearSVC(max_iter=3),
    lambda: mk.SVC(max_iter=20),
    lambda: mk.ODMClassifier(max_iter=20),
])
def test_fit_makes_no_python_copy_of_contiguous_input(make):
    """Counting check: fitting on a C-contiguous float64 matrix (9.6 MB) or a CSR matrix with
    float64 data and int32 / int64 indices allocates far less than the matrix on the Python side
    (gamma='scale' included); a Fortran-ordered matrix (which has to be converted) is the
    positive control."""
    import warnings
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5000, 240))
    y = np.where(X[:, 0] > 0, 1.0, 0.0)
    est = make()

    def fit(A):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(A, y)

    assert _python_peak(fit, X) < 0.25 * X.nbytes
    # 240 stored values per row in sorted, distinct columns (sp.random is slow at this size).
    k = 240
    cols = (np.arange(k) * 16 + rng.integers(0, 16, size=(5000, k))).ravel().astype(np.int32)
    S = sp.csr_matrix((rng.random(5000 * k), cols, np.arange(0, 5000 * k + 1, k, dtype=np.int32)),
                      shape=(5000, 4000))
    assert S.has_canonical_format
    assert S.indices.dtype == np.int32
    assert _python_peak(fit, S) < 0.25 * S.data.nbytes
    if isinstance(est, mk.LinearSVC):  # the int64 path is the same for every estimator
        S64 = S.copy()
        S64.indices, S64.indptr = S.indices.astype(np.int64), S.indptr.astype(np.int64)
        assert _python_peak(fit, S64) < 0.25 * S64.data.nbytes
    assert _python_peak(fit, np.asfortranarray(X)) >= X.nbytes


def test_fortran_and_int_input_give_the_same_model(heart):
    Xtr, ytr, Xte, _ = heart
    a = mk.SVC().fit(Xtr, ytr).decision_function(Xte)
    b = mk.SVC().fit(np.asfortranarray(Xtr), ytr).decision_function(np.asfortranarray(Xte))
    np.testing.assert_array_equal(a, b)
    Xi = np.round(Xtr * 10).astype(np.int64)
    c = mk.SVC().fit(Xi, ytr).decision_function(Xi)
    d = mk.SVC().fit(Xi.astype(float), ytr).decision_function(Xi.astype(float))
    np.testing.assert_array_equal(c, d)


# ---------------------------------------------------------------- pickling

@pytest.mark.parametrize("make", [
    lambda: mk.SVC(C=2.0, probability=True, random_state=0),
    lambda: mk.NuSVC(nu=0.3),
    lambda: mk.SVR(C=3.0),
    lambda: mk.OneClassSVM(nu=0.2),
    lambda: mk.LinearSVC(),
    lambda: mk.SVCPath(n_Cs=4),
])
def test_pickle_round_trip_predicts_identically(heart, make):
    Xtr, ytr, Xte, _ = heart
    m = make()
    m.fit(Xtr, ytr) if not isinstance(m, mk.OneClassSVM) else m.fit(Xtr)
    m2 = pickle.loads(pickle.dumps(m))
    np.testing.assert_array_equal(m.predict(Xte), m2.predict(Xte))
    if hasattr(m, "decision_function"):
        np.testing.assert_array_equal(m.decision_function(Xte), m2.decision_function(Xte))
    if getattr(m, "probability", False):
        np.testing.assert_array_equal(m.predict_proba(Xte), m2.predict_proba(Xte))


# ---------------------------------------------------------------- the GIL

def _rust_call(func, name):
    """The code object of `func` and the source position (line, column) of its one
    `_core.<name>(...)` call: while a thread's innermost frame executes that CALL, it is in Rust."""
    lines, first = inspect.getsourcelines(func)
    src = textwrap.dedent("".join(lines))
    indent = len(lines[0]) - len(lines[0].lstrip())
    calls = [n for n in ast.walk(ast.parse(src))
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and n.func.attr == name and isinstance(n.func.value, ast.Name)
             and n.func.value.id == "_core"]
    assert len(calls) == 1, f"{func.__qualname__} calls _core.{name} {len(calls)} times"
    return func.__code__, (first + calls[0].lineno - 1, calls[0].col_offset + indent)


def _in_call(ident, code, pos):
    """Whether thread `ident` is executing the CALL instruction of `code` at source position
    `pos` (not an argument's evaluation on the same lines)."""
    f = sys._current_frames().get(ident)
    if f is None or f.f_code is not code:
        return False
    for ins in dis.get_instructions(code):
        if ins.offset == f.f_lasti:
            return ins.opname == "CALL" and (ins.positions.lineno, ins.positions.col_offset) == pos
    return False


def test_rust_call_site_is_recognised():
    """The probe sees a thread inside a `_core` call: here a lock's C-level `acquire`, which
    blocks with the GIL released as Rust does, called the way the estimators call Rust."""
    _core = threading.Lock()
    _core.acquire()

    def caller():
        _core.acquire()

    code, pos = _rust_call(caller, "acquire")
    t = threading.Thread(target=caller)
    t.start()
    try:
        seen = False
        while not seen and t.is_alive():
            seen = _in_call(t.ident, code, pos)
            time.sleep(0.001)
    finally:
        _core.release()
        t.join()
    assert seen
    assert not _in_call(threading.get_ident(), code, pos)


def test_training_releases_the_gil():
    rng = np.random.default_rng(1)
    n = 3000
    X = rng.normal(size=(n, 10))
    y = np.where(X[:, 0] + 0.8 * rng.normal(size=n) > 0, 1, -1)
    m = mk.SVC(C=10.0, gamma=0.5)
    code, pos = _rust_call(mk.SVC._fit_core, "fit_svm")
    done = threading.Event()

    def fit():
        try:
            m.fit(X, y)
        finally:
            done.set()

    # With no forced switching, the fitting thread gives up the GIL only when it blocks or
    # releases it: the main thread can observe it inside `_core.fit_svm` only if Rust released it.
    old = sys.getswitchinterval()
    sys.setswitchinterval(1000.0)
    t = threading.Thread(target=fit)
    try:
        t.start()
        seen = False
        while not seen and not done.is_set():
            seen = _in_call(t.ident, code, pos)
            time.sleep(0.001)
        t.join()
    finally:
        sys.setswitchinterval(old)
    assert seen, "no other thread ran while the fit was in Rust"
    assert m.fit_report_["status"] == ["converged"]


def _interrupt_when_in(code, pos):
    """A watcher thread that sends SIGINT to this process once the main thread is inside the
    `_core` call at `pos` of `code`, where the Rust solver polls for signals."""
    main = threading.main_thread().ident
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            if _in_call(main, code, pos):
                os.kill(os.getpid(), signal.SIGINT)
                return
            time.sleep(0.001)

    th = threading.Thread(target=watch, daemon=True)
    th.start()
    return stop, th


def _fit_interrupted(m, X, y, code, pos):
    # A process started in the background by a non-interactive shell inherits SIGINT ignored, and
    # Python then installs no KeyboardInterrupt handler: install Python's default one for the test.
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    stop, watcher = _interrupt_when_in(code, pos)
    try:
        with pytest.raises(KeyboardInterrupt):
            m.fit(X, y)
    finally:
        stop.set()
        watcher.join()
        signal.signal(signal.SIGINT, old)
    # The solver raised it: the fit stopped before it could store its report.
    assert not hasattr(m, "fit_report_")


def test_ctrl_c_interrupts_training():
    rng = np.random.default_rng(2)
    n = 6000
    X = rng.normal(size=(n, 10))
    y = np.where(X[:, 0] + 2.0 * rng.normal(size=n) > 0, 1, -1)
    # Seconds of solving; the solver polls for signals every 50 ms.
    m = mk.SVC(C=1000.0, gamma=2.0, tol=1e-6, cache_size=1)
    _fit_interrupted(m, X, y, *_rust_call(mk.SVC._fit_core, "fit_svm"))


def test_ctrl_c_interrupts_linear_training():
    rng = np.random.default_rng(3)
    n = 100000
    X = rng.normal(size=(n, 20))
    y = np.where(X[:, 0] + 3.0 * rng.normal(size=n) > 0, 1, -1)
    # Noisy labels, a large C and a tiny tol: thousands of passes (minutes) without the signal;
    # the solver checks for signals after every pass.
    m = mk.LinearSVC(C=1000.0, tol=1e-12, max_iter=100000, loss="hinge")
    _fit_interrupted(m, X, y, *_rust_call(mk.LinearSVC.fit, "fit_linear"))


# ---------------------------------------------------------------- linear models

def _l2_primal(X, y_pm, w, b, B, C, squared):
    margin = 1 - y_pm * (X @ w + b)
    loss = np.maximum(margin, 0)
    loss = loss ** 2 if squared else loss
    wb = b / B
    return 0.5 * (w @ w + wb * wb) + C * loss.sum()


def test_linear_svc_reaches_the_primal_optimum(heart):
    """Oracle: the squared-hinge primal (smooth) minimized by L-BFGS over (w, w_b)."""
    Xtr, ytr, Xte, _ = heart
    C, B = 0.7, 1.0
    m = mk.LinearSVC(C=C, tol=1e-6, max_iter=100000).fit(Xtr, ytr)
    y_pm = np.where(ytr == m.classes_[1], 1.0, -1.0)
    Z = np.hstack([Xtr, np.full((len(ytr), 1), B)])

    def f(v):
        r = np.maximum(1 - y_pm * (Z @ v), 0)
        return 0.5 * v @ v + C * (r @ r), v - 2 * C * Z.T @ (y_pm * r)
    opt = minimize(f, np.zeros(Z.shape[1]), jac=True, method="L-BFGS-B",
                   options=dict(gtol=1e-12, ftol=1e-15, maxiter=10000))
    ours = _l2_primal(Xtr, y_pm, m.coef_[0], m.intercept_[0], B, C, True)
    assert ours <= opt.fun * (1 + 1e-6), (ours, opt.fun)
    ref = sk.LinearSVC(C=C, tol=1e-6, max_iter=100000).fit(Xtr, ytr)
    assert m.coef_.shape == ref.coef_.shape and m.intercept_.shape == ref.intercept_.shape
    np.testing.assert_allclose(m.coef_, ref.coef_, atol=1e-3)
    assert_same_predictions(m.predict(Xte), ref.predict(Xte), m.decision_function(Xte))


def test_linear_svc_multiclass_shapes_and_hinge(iris):
    X, y = iris
    for loss in ("squared_hinge", "hinge"):
        m = mk.LinearSVC(loss=loss, C=1.0, tol=1e-5, max_iter=10000).fit(X, y)
        ref = sk.LinearSVC(loss=loss, C=1.0, tol=1e-5, max_iter=10000).fit(X, y)
        assert m.coef_.shape == ref.coef_.shape == (3, 4)
        assert m.decision_function(X).shape == (150, 3)
        np.testing.assert_allclose(m.coef_, ref.coef_, atol=2e-2)
        assert abs(m.score(X, y) - ref.score(X, y)) <= 2 / 150
    m = mk.LinearSVC(fit_intercept=False).fit(X, y)
    np.testing.assert_array_equal(m.intercept_, 0.0)


def test_linear_svr(boston):
    Xtr, ytr, Xte, _ = boston
    for loss in ("epsilon_insensitive", "squared_epsilon_insensitive"):
        m = mk.LinearSVR(C=1.0, epsilon=0.5, loss=loss, tol=1e-6, max_iter=100000).fit(Xtr, ytr)
        ref = sk.LinearSVR(C=1.0, epsilon=0.5, loss=loss, tol=1e-6, max_iter=100000)
        ref.fit(Xtr, ytr)
        assert m.coef_.shape == ref.coef_.shape and m.intercept_.shape == ref.intercept_.shape
        np.testing.assert_allclose(m.predict(Xte), ref.predict(Xte), rtol=1e-2, atol=0.1)
        sparse = mk.LinearSVR(C=1.0, epsilon=0.5, loss=loss, tol=1e-6, max_iter=100000)
        sparse.fit(sp.csr_matrix(Xtr), ytr)
        np.testing.assert_allclose(sparse.predict(sp.csr_matrix(Xte)), m.predict(Xte),
                                   atol=1e-9)


# ---------------------------------------------------------------- the regularization path

def _box_dual_optimum(Q, C):
    """Oracle: min 1/2 a'Qa - 1'a, 0 <= a <= C by L-BFGS-B (no equality: the bias-free SVM)."""
    n = Q.shape[0]
    opt = minimize(lambda a: (0.5 * a @ Q @ a - a.sum(), Q @ a - 1), np.zeros(n), jac=True,
                   method="L-BFGS-B", bounds=[(0, C)] * n,
                   options=dict(gtol=1e-12, ftol=1e-15, maxiter=50000))
    return opt.fun


def test_path_objectives_match_an_independent_solver(heart):
    Xtr, ytr, Xte, yte = heart
    gamma = 0.1
    Cs = [0.05, 0.5, 2.0, 8.0]
    path = mk.SVCPath(gamma=gamma, grid="list", Cs=Cs, tol=1e-6).fit(Xtr, ytr, Xte, yte)
    np.testing.assert_allclose(path.Cs_, Cs)
    y_pm = np.where(ytr == path.classes_[1], 1.0, -1.0)
    Q = np.outer(y_pm, y_pm) * rbf_kernel(Xtr, gamma=gamma)
    for k, C in enumerate(Cs):
        ref = _box_dual_optimum(Q, C)
        assert path.objective_[k] == pytest.approx(ref, rel=1e-6), (C, path.objective_[k], ref)
        # Its decision function is sum_i alpha_i y_i K(x, x_i) (no bias).
        a = path.dual_coef_path_[k]
        dec = rbf_kernel(Xte, Xtr, gamma=gamma) @ (a * y_pm)
        np.testing.assert_allclose(path.decision_function_path(Xte)[:, k], dec, atol=1e-9)
    assert np.isfinite(path.valid_accuracy_).all()
    assert path.best_index_ == int(np.argmax(path.valid_accuracy_))
    np.testing.assert_allclose(path.score(Xte, yte), path.valid_accuracy_[path.best_index_])


def test_path_screening_does_not_change_the_solutions(heart):
    Xtr, ytr, Xte, _ = heart
    kw = dict(gamma=0.2, C_min=0.01, C_max=100.0, n_Cs=12, tol=1e-6)
    a = mk.SVCPath(screening="it", **kw).fit(Xtr, ytr)
    b = mk.SVCPath(screening=None, **kw).fit(Xtr, ytr)
    np.testing.assert_allclose(a.objective_, b.objective_, rtol=1e-6)
    np.testing.assert_allclose(a.decision_function_path(Xte), b.decision_function_path(Xte),
                               atol=1e-4)
    assert a.screened_.sum() > 0 and b.screened_.sum() == 0


def test_path_linear_engine(heart):
    Xtr, ytr, Xte, _ = heart
    p = mk.SVCPath(kernel="linear", linear_engine=True, grid="list", Cs=[0.1, 1.0],
                   bias=1.0, tol=1e-4).fit(Xtr, ytr)
    assert p.coef_path_.shape == (2, 13)
    # The linear engine's point equals LIBLINEAR's L1-loss SVC with B = 1 at the same C.
    ref = sk.LinearSVC(loss="hinge", C=1.0, tol=1e-6, max_iter=100000).fit(Xtr, ytr)
    np.testing.assert_allclose(p.coef_path_[1], ref.coef_[0], atol=2e-2)
    np.testing.assert_allclose(p.decision_function_path(Xte)[:, 1], ref.decision_function(Xte),
                               atol=5e-2)
