"""The regularization path over C with safe sample screening (Ogawa et al. 2014), as an
estimator: SVCPath.

The path's SVM has no bias term (the paper's formulation); `bias=B` adds the constant feature B
(kernel K + B^2). Every point of the path is the exact optimum at its C (the Rust core re-checks
each screened sample and re-solves when one violates the optimality conditions).
"""

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _core
from ._common import (
    DEFAULTS,
    check_choice,
    check_int,
    check_real,
    max_iter_arg,
    report_dict,
    resolve_gamma,
    to_core,
    warn_status,
)


_PATH = DEFAULTS["path"]


class SVCPath(ClassifierMixin, BaseEstimator):
    """Two-class SVM solved along a grid of C values with warm starts and safe sample screening.

    Parameters
    ----------
    kernel : 'rbf', 'linear', 'poly' or 'sigmoid'. With linear_engine=True the linear kernel is
        solved by dual coordinate descent in the primal weights (best for many samples).
    gamma, degree, coef0 : kernel parameters (gamma as in SVC: 'scale', 'auto' or a float).
    grid : 'log' (n_Cs values log-spaced in [C_min, C_max]), 'list' (the values Cs) or
        'epsilon' (the paper's epsilon-path from Lemma 9's C_min up to C_max, relative
        dual-objective tolerance epsilon_path, at most n_Cs points).
    screening : 'it' (Intersection Test), 'bt1', 'bt2' or None (no screening).
    bias : None (no bias) or the value B of a constant feature.
    tol, cache_size, max_iter, shrinking : solver settings as in SVC.

    Fitted attributes: Cs_ (the C values), objective_, n_support_path_, screening_rate_,
    screened_ (samples fixed by the rule per C), n_iter_path_ (solver iterations per C; n_iter_
    is their sum), valid_accuracy_ (NaN without validation data),
    dual_coef_path_ (alpha_i, shape (n_Cs, n_samples)), coef_path_ and intercept_path_ (linear
    engine), best_index_ (the best validation accuracy, else the last point), classes_.
    predict / decision_function use the point best_index_; decision_function_path gives all.
    """

    def __init__(self, *, kernel="rbf", gamma="scale", degree=3, coef0=0.0, grid="log",
                 C_min=_PATH["C_min"], C_max=_PATH["C_max"], n_Cs=_PATH["n_Cs"], Cs=None,
                 epsilon_path=1e-3,
                 screening="it", bias=None, tol=1e-3, cache_size=200, max_iter=-1,
                 shrinking=True, linear_engine=False):
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.grid = grid
        self.C_min = C_min
        self.C_max = C_max
        self.n_Cs = n_Cs
        self.Cs = Cs
        self.epsilon_path = epsilon_path
        self.screening = screening
        self.bias = bias
        self.tol = tol
        self.cache_size = cache_size
        self.max_iter = max_iter
        self.shrinking = shrinking
        self.linear_engine = linear_engine

    def _grid(self):
        check_choice("grid", self.grid, {"log", "list", "epsilon"})
        if self.grid == "log":
            return ("log", check_real("C_min", self.C_min), check_real("C_max", self.C_max),
                    check_int("n_Cs", self.n_Cs, low=0))
        if self.grid == "list":
            if self.Cs is None:
                raise ValueError("grid='list' needs Cs")
            return ("list", [check_real("Cs", c) for c in np.ravel(self.Cs)])
        return ("epsilon", check_real("epsilon_path", self.epsilon_path),
                check_real("C_max", self.C_max), check_int("n_Cs", self.n_Cs, low=1))

    def fit(self, X, y, X_valid=None, y_valid=None):
        """Computes the path on (X, y); with (X_valid, y_valid) each point is scored on them."""
        check_choice("kernel", self.kernel, {"rbf", "linear", "poly", "sigmoid"})
        if self.screening is not None:
            check_choice("screening", self.screening, {"it", "bt1", "bt2"})
        if self.linear_engine and self.kernel != "linear":
            raise ValueError("linear_engine=True needs kernel='linear'")
        grid = self._grid()
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64, order="C")
        check_classification_targets(y)
        self.classes_, y_enc = np.unique(y, return_inverse=True)
        if len(self.classes_) != 2:
            raise ValueError(
                "Only binary classification is supported. SVCPath is a two-class method; the "
                f"data has {len(self.classes_)} classes"
            )
        # +1 for classes_[1]: the core's labels[0] (first appearance) gets y = +1 internally.
        y_pm = np.where(y_enc == 1, 1.0, -1.0)
        xv = yv = None
        if (X_valid is None) != (y_valid is None):
            raise ValueError("give both X_valid and y_valid, or neither")
        if X_valid is not None:
            X_valid = validate_data(self, X_valid, accept_sparse="csr", dtype=np.float64,
                                    order="C", reset=False)
            yv_raw = np.asarray(y_valid)
            if not np.isin(yv_raw, self.classes_).all():
                raise ValueError("y_valid has labels that are not in y")
            xv, yv = to_core(X_valid), np.where(yv_raw == self.classes_[1], 1.0, -1.0)
        self._gamma = resolve_gamma(self.gamma, X)
        bias = None if self.bias is None else check_real("bias", self.bias)
        kernel = "linear_engine" if self.linear_engine else self.kernel
        handles, raw = _core.fit_path(
            to_core(X), y_pm, xv, yv, kernel, float(self._gamma), check_real("coef0", self.coef0),
            check_int("degree", self.degree, low=0, high=(1 << 32) - 1), grid, self.screening, bias,
            check_real("tol", self.tol), check_real("cache_size", self.cache_size),
            max_iter_arg(self.max_iter), bool(self.shrinking),
        )
        self._handles = handles
        self.fit_report_ = report_dict(raw)
        warn_status(raw, "SVCPath")
        # Decision values of the core are positive for its labels[0].
        self._sign = 1.0 if raw["labels"][0] == 1.0 else -1.0
        self.Cs_ = raw["c"]
        self.objective_ = raw["objective"]
        self.n_support_path_ = raw["n_sv"].astype(np.int64)
        self.screening_rate_ = raw["screening_rate"]
        self.screened_ = (raw["screened_r"] + raw["screened_l"]).astype(np.int64)
        self.valid_accuracy_ = raw["valid_accuracy"]
        self.dual_coef_path_ = raw["alpha"]
        self.path_status_ = list(raw["status"])
        # Per C (0 where screening fixed every variable), and the path's total.
        self.n_iter_path_ = raw["iterations"].astype(np.int64)
        self.n_iter_ = int(self.n_iter_path_.sum())
        if self.linear_engine:
            self.coef_path_ = self._sign * raw["w"]
            self.intercept_path_ = self._sign * raw["intercept"]
        if X_valid is not None and np.isfinite(self.valid_accuracy_).any():
            acc = np.where(np.isfinite(self.valid_accuracy_), self.valid_accuracy_, -np.inf)
            self.best_index_ = int(np.argmax(acc))
        else:
            self.best_index_ = len(self.Cs_) - 1
        self.C_ = float(self.Cs_[self.best_index_])
        return self

    def decision_function_path(self, X):
        """Decision values at every C: shape (n_samples, len(Cs_)), positive for classes_[1]."""
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, order="C",
                          reset=False)
        if self.linear_engine:
            s = X @ self.coef_path_.T
            return np.asarray(s) + self.intercept_path_
        xc = to_core(X)
        cols = [self._sign * h.decision_values(xc)[:, 0] for h in self._handles]
        return np.column_stack(cols)

    def decision_function(self, X):
        """Decision values at C_ (the point best_index_), positive for classes_[1]."""
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, order="C",
                          reset=False)
        k = self.best_index_
        if self.linear_engine:
            return np.asarray(X @ self.coef_path_[k]).ravel() + self.intercept_path_[k]
        return self._sign * self._handles[k].decision_values(to_core(X))[:, 0]

    def predict(self, X):
        """Class labels at C_."""
        check_is_fitted(self)
        return self.classes_[(self.decision_function(X) > 0).astype(np.intp)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.classifier_tags.multi_class = False
        return tags
