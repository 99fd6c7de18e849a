"""Aggregate and iterative disaggregate (Park & Klabjan 2016): LADRegressor (exact least absolute
deviations regression) and AIDSVC (the C-SVM, linear or kernel), both solving small clustered
problems until the optimality certificate (or the gap tolerance) holds.
"""

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _core
from ._common import DEFAULTS, check_choice, check_int, check_real, seed_from, to_core, warn_stop
from ._kernelmodel import (
    BinaryClassifierMixin,
    KernelExpansionMixin,
    binary_targets,
    kernel_args,
    sign_of,
)


_AID = DEFAULTS["aid"]


def _opt_real(name, v):
    return None if v is None else check_real(name, v)


def _aid_common(est):
    r0 = _opt_real("r0", est.r0)
    gap_tol = check_real("gap_tol", est.gap_tol)
    max_iter = check_int("max_iter", est.max_iter, low=0)
    time_limit = _opt_real("time_limit", est.time_limit)
    return r0, gap_tol, max_iter, time_limit


def _warn_aid(est, gap_tol):
    """ConvergenceWarning unless the fit is certified optimal, or within a requested gap.

    LADRegressor(algorithm='lp') stops with 'optimal' (the polished vertex passed the simplex
    optimality test) or 'interior' (the interior-point solution, converged to its own tolerance,
    whose vertex could not be certified; lower_bound_ is its dual value): both are successful
    solves of the full LP, so neither warns.
    """
    ok = {"optimal", "interior"}
    if gap_tol > 0:
        ok.add("gap")
    if est.stop_ == "no_split":
        hint = ("every cluster is uniform but the gap is above gap_tol, no certificate (a "
                "smaller tol of the aggregated solves, or a larger gap_tol)")
    else:
        hint = "increase max_iter or time_limit (see history_ for the gap reached)"
    warn_stop(type(est).__name__, est.stop_, ok, hint)


def _history(raw):
    h = {k: np.asarray(v) for k, v in raw["history"].items()}
    for k in ("clusters", "violating"):
        h[k] = h[k].astype(np.int64)
    return h


class LADRegressor(RegressorMixin, BaseEstimator):
    """Least absolute deviations regression, `min sum_i |y_i - x_i'coef - intercept|`, solved
    exactly.

    Parameters
    ----------
    algorithm : 'aid' (aggregate & iterative disaggregate: LPs on cluster centroids, split until
        every cluster lies on one side of the fit; stops with the optimality certificate) or 'lp'
        (the full LP by clarabel, polished to a vertex).
    fit_intercept : bool.
    r0 : initial aggregation rate |K^0| / n (None: the paper's rule).
    gap_tol : AID stops when (E_best - lower bound) / E_best <= gap_tol (0: only the certificate).
    max_iter : AID iterations at most. time_limit : seconds (None: no limit).
    random_state : seeds the sample fit and the k-means centres of the initial clustering.

    Fitted attributes: coef_, intercept_, objective_ (sum of absolute residuals), lower_bound_,
    certified_ (True when the LP optimum is certified), stop_ (why it stopped: 'optimal',
    'no_split', 'gap', 'max_iterations', 'time_limit'; 'lp': 'optimal' or 'interior', an
    uncertified interior-point optimum; a ConvergenceWarning unless 'optimal', 'interior' or,
    with gap_tol > 0, 'gap'), n_iter_,
    history_ (per AID iteration: clusters, r, lower_bound, objective, best_objective, gap, ...),
    fit_report_.
    """

    def __init__(self, *, algorithm="aid", fit_intercept=True, r0=None, gap_tol=0.0,
                 max_iter=_AID["max_iter"], time_limit=None, random_state=None):
        self.algorithm = algorithm
        self.fit_intercept = fit_intercept
        self.r0 = r0
        self.gap_tol = gap_tol
        self.max_iter = max_iter
        self.time_limit = time_limit
        self.random_state = random_state

    def fit(self, X, y):
        """Fits the model."""
        check_choice("algorithm", self.algorithm, {"aid", "lp"})
        if not isinstance(self.fit_intercept, (bool, np.bool_)):
            raise ValueError(f"fit_intercept must be a bool, got {self.fit_intercept!r}")
        r0, gap_tol, max_iter, time_limit = _aid_common(self)
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64, order="C",
                             y_numeric=True)
        p = X.shape[1] + int(bool(self.fit_intercept))
        if X.shape[0] < p:
            raise ValueError(
                f"LAD needs at least as many samples as coefficients ({p}); got n_samples = "
                f"{X.shape[0]}"
            )
        raw = _core.fit_lad(to_core(X), np.asarray(y, dtype=np.float64), self.algorithm,
                            bool(self.fit_intercept), r0, gap_tol, max_iter, time_limit,
                            seed_from(self.random_state))
        self.coef_ = np.asarray(raw["coef"])
        self.intercept_ = float(raw["intercept"])
        self.objective_ = float(raw["objective"])
        self.lower_bound_ = float(raw["lower_bound"])
        self.certified_ = bool(raw["certified"])
        self.stop_ = raw["stop"]
        if "history" in raw:
            self.history_ = _history(raw)
            self.n_iter_ = len(self.history_["objective"])
        else:
            self.history_ = {}
            self.n_iter_ = 1
        self.fit_report_ = {k: raw[k] for k in ("stop", "rust_seconds", "total_seconds")}
        _warn_aid(self, gap_tol)
        return self

    def predict(self, X):
        """Predicted values."""
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        return np.asarray(X @ self.coef_).ravel() + self.intercept_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class AIDSVC(KernelExpansionMixin, BinaryClassifierMixin, BaseEstimator):
    """Two-class C-SVM (hinge loss, unregularized bias: the problem of `sklearn.svm.SVC`) solved by
    aggregate & iterative disaggregate: the SVM on weighted cluster centroids, clusters split until
    none straddles the margin.

    Parameters
    ----------
    C : penalty. kernel : 'linear' (aggregation in the input space; coef_ and intercept_), or
        'rbf', 'poly', 'sigmoid' (the paper's Appendix B: averaged Gram entries; O(n^2) kernel
        evaluations per iteration at worst). gamma, degree, coef0 : as in SVC.
    tol : tolerance of the aggregated solves. r0, gap_tol, max_iter, time_limit, random_state :
        as in LADRegressor (default gap_tol: the paper's, the library's default).
    engine : 'auto' or 'dcd' (both: dual coordinate descent with an augmented Lagrangian for the
        bias, at every size; linear kernel only; ValueError otherwise).

    Fitted attributes: classes_, coef_/intercept_ (linear) or support_, support_vectors_,
    dual_coef_, intercept_ (kernel; a refit clears the other kernel's attributes), objective_
    (the primal objective of the returned model on all the data), lower_bound_, stop_ (as in
    LADRegressor: a ConvergenceWarning unless 'optimal' or, with gap_tol > 0, 'gap'), n_iter_,
    history_, fit_report_.
    """

    def __init__(self, *, C=_AID["C"], kernel="linear", gamma="scale", degree=3, coef0=0.0,
                 tol=_AID["tol"], r0=None, gap_tol=_AID["gap_tol"], max_iter=_AID["max_iter"],
                 time_limit=None, random_state=None, engine="auto"):
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.tol = tol
        self.r0 = r0
        self.gap_tol = gap_tol
        self.max_iter = max_iter
        self.time_limit = time_limit
        self.random_state = random_state
        self.engine = engine

    def fit(self, X, y):
        """Fits the model."""
        r0, gap_tol, max_iter, time_limit = _aid_common(self)
        check_choice("engine", self.engine, {"auto", "dcd"})
        if self.engine == "dcd" and self.kernel != "linear":
            raise ValueError(f"engine='dcd' needs kernel='linear', got kernel={self.kernel!r}")
        # A refit with another kernel must not keep the other branch's fitted attributes.
        for attr in ("coef_", "intercept_", "support_", "support_vectors_", "dual_coef_"):
            self.__dict__.pop(attr, None)
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64, order="C")
        y_pm = binary_targets(self, y)
        kernel, gamma, coef0, degree = kernel_args(self, X)
        handle, raw = _core.fit_aid_svc(
            to_core(X), y_pm, check_real("C", self.C), kernel, gamma, coef0, degree,
            check_real("tol", self.tol), r0, gap_tol, max_iter, time_limit,
            seed_from(self.random_state), self.engine)
        sign = sign_of(raw["labels"])
        if handle is None:
            self._handle = None
            self._sign = sign
            self.coef_ = sign * np.asarray(raw["w"])[None, :]
            self.intercept_ = np.array([sign * raw["b"]])
        else:
            self._set_expansion(handle, raw, X, sign)
        self.objective_ = float(raw["objective"])
        self.lower_bound_ = float(raw["lower_bound"])
        self.stop_ = raw["stop"]
        self.history_ = _history(raw)
        self.n_iter_ = len(self.history_["objective"])
        self.fit_report_ = {k: raw[k] for k in ("stop", "rust_seconds", "total_seconds")}
        _warn_aid(self, gap_tol)
        return self

    def decision_function(self, X):
        """Signed distance-like scores, positive for classes_[1]."""
        check_is_fitted(self)
        if self._handle is None:
            X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
            s = X @ self.coef_[0] if not sp.issparse(X) else np.asarray(X @ self.coef_[0])
            return np.asarray(s).ravel() + self.intercept_[0]
        return self._expansion(X)


__all__ = ["LADRegressor", "AIDSVC"]
