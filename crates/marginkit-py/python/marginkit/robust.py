"""Robust SVMs by the outlier path (Suzumura et al. 2015): RobustSVC (ramp loss) and RobustSVR
(truncated LAD loss).

The loss is `[t]_+ - (1 - theta) [t - T]_+` on the slack t (SVC: 1 - y f(x), T = 1 - s; SVR:
|y - f(x)|, T = s). The path moves theta from 1 (the convex SVM) to 0 at fixed s ('theta'), or s
at theta = 0 ('s'), with exact breakpoints; one path per C in `Cs`. Every locally optimal
breakpoint is a candidate and the lowest validation error (fit(X, y, X_valid, y_valid)) wins;
without validation data the end of the first C's path is the model. The models have no bias
(the paper's); `bias=b` adds a regularized constant feature b (kernel K + b^2).
"""

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils import column_or_1d
from sklearn.utils.validation import validate_data

from . import _core
from ._common import DEFAULTS, check_choice, check_int, check_real, to_core, warn_stop
from ._kernelmodel import BinaryClassifierMixin, KernelExpansionMixin, binary_targets, kernel_args


_ROBUST = DEFAULTS["robust"]


class _RobustBase(KernelExpansionMixin, BaseEstimator):
    _task = None

    def __init__(self, *, path="theta", Cs=(1.0,), kernel="rbf", gamma="scale", degree=3,
                 coef0=0.0, bias=None, s=None, s_end=_ROBUST["s_end"], max_events=None,
                 tol=_ROBUST["tol"],
                 cache_size=200, keep_path=False):
        self.path = path
        self.Cs = Cs
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.bias = bias
        self.s = s
        self.s_end = s_end
        self.max_events = max_events
        self.tol = tol
        self.cache_size = cache_size
        self.keep_path = keep_path

    def _targets(self, y):
        raise NotImplementedError

    def _valid_targets(self, y_valid):
        raise NotImplementedError

    def fit(self, X, y, X_valid=None, y_valid=None):
        """Runs one outlier path per C on (X, y) and keeps the chosen breakpoint's model."""
        check_choice("path", self.path, {"theta", "s"})
        cs = [check_real("Cs", c) for c in np.ravel(self.Cs)]
        bias = None if self.bias is None else check_real("bias", self.bias)
        s = None if self.s is None else check_real("s", self.s)
        max_events = None if self.max_events is None else check_int(
            "max_events", self.max_events, low=1)
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64, order="C",
                             y_numeric=self._task == "svr")
        y_core = self._targets(y)
        xv = yv = None
        if (X_valid is None) != (y_valid is None):
            raise ValueError("give both X_valid and y_valid, or neither")
        if X_valid is not None:
            X_valid = validate_data(self, X_valid, accept_sparse="csr", dtype=np.float64,
                                    order="C", reset=False)
            y_valid = column_or_1d(y_valid, warn=True)
            if X_valid.shape[0] != y_valid.shape[0]:
                raise ValueError(f"X_valid has {X_valid.shape[0]} rows but y_valid has "
                                 f"{y_valid.shape[0]} values")
            xv, yv = to_core(X_valid), self._valid_targets(y_valid)
        kernel, gamma, coef0, degree = kernel_args(self, X)
        handle, raw = _core.fit_robust(
            self._task, to_core(X), y_core, xv, yv, self.path, cs, kernel, gamma, coef0, degree,
            bias, s, check_real("s_end", self.s_end), max_events, check_real("tol", self.tol),
            check_real("cache_size", self.cache_size), bool(self.keep_path))
        sign = 1.0
        if self._task == "svc":
            sign = 1.0 if raw["labels"][0] == 1.0 else -1.0
        self._set_expansion(handle, raw, X, sign)
        self.coef_path_ = None
        bps = dict(raw["breakpoints"])
        if "coef" in bps:
            # Coefficients beta of every breakpoint (f = K beta), oriented like dual_coef_.
            self.coef_path_ = sign * bps.pop("coef")
        self.breakpoints_ = bps
        self.runs_ = dict(raw["runs"])
        self.C_ = float(raw["chosen_C"])
        self.param_ = float(raw["chosen_param"])
        self.chosen_ = {
            "C": self.C_,
            self.path: self.param_,
            "run": int(raw["chosen_run"]),
            "breakpoint": int(np.flatnonzero(bps["run"] == raw["chosen_run"])[0]
                              + raw["chosen_node"]),
            "valid_error": float(raw["chosen_valid_error"]),
        }
        # beta over all training rows (zeros off the support), f(x_i) = (K beta)_i.
        self.coef_full_ = sign * np.asarray(raw["beta"])
        self.fit_report_ = {
            "status": list(self.runs_["status"]),
            "rust_seconds": raw["rust_seconds"],
            "total_seconds": raw["total_seconds"],
        }
        for st in set(self.fit_report_["status"]):
            warn_stop(type(self).__name__, st, {"completed"},
                      "a path stopped at max_events before its end; increase max_events")
        return self


class RobustSVC(BinaryClassifierMixin, _RobustBase):
    """Ramp-loss (robust) two-class SVC along the outlier path.

    Parameters
    ----------
    path : 'theta' (theta from 1 to 0 at s = `s`, default 0) or 's' (s from the standard SVM's
        extreme value to 0 at theta = 0).
    Cs : the C values (one path each). kernel, gamma, degree, coef0 : as in SVC ('linear',
        'poly', 'rbf', 'sigmoid'). bias : None (no bias) or b (constant feature).
    s : the fixed s of the theta path (<= 0). max_events : event limit per path (a
        ConvergenceWarning when a path stops there, status 'event_limit').
    tol : SMO tolerance of the starting SVM (polished exactly afterwards). cache_size : MB.
    keep_path : also keep every breakpoint's coefficients (coef_path_, n_breakpoints x n).

    Fitted attributes: classes_, breakpoints_ (dict of arrays, one entry per breakpoint: C,
    theta or s, kind ('start', 'breakpoint', 'pre_jump', 'post_jump', 'end'), objective,
    n_outliers, locally_optimal, valid_error, run), runs_ (per C: status, events, jumps,
    s_standard, final_locally_optimal, seconds), C_ and param_ (the chosen C and theta or s),
    chosen_, support_, support_vectors_, dual_coef_, intercept_, coef_full_ (coefficients over all
    training rows), coef_path_, fit_report_.
    """

    _task = "svc"

    def _targets(self, y):
        return binary_targets(self, y)

    def _valid_targets(self, y_valid):
        if not np.isin(y_valid, self.classes_).all():
            raise ValueError("y_valid has labels that are not in y")
        return np.where(y_valid == self.classes_[1], 1.0, -1.0)

    def decision_function(self, X):
        """f(x) = sum_j dual_coef_j K(x_j, x) + intercept_, positive for classes_[1]."""
        return self._expansion(X)


class RobustSVR(RegressorMixin, _RobustBase):
    """Robust support vector regression (LAD loss truncated at s) along the outlier path.

    Parameters as RobustSVC, except: s is the fixed threshold of the theta path (> 0, default 1:
    scale the targets), and `s_end` is where the s path stops (a fraction of the standard SVR's
    largest residual). Validation error: mean absolute error. Fitted attributes as RobustSVC
    (no classes_).
    """

    _task = "svr"

    def _targets(self, y):
        return np.asarray(y, dtype=np.float64)

    def _valid_targets(self, y_valid):
        return np.asarray(y_valid, dtype=np.float64)

    def predict(self, X):
        """Predicted values f(x) = sum_j dual_coef_j K(x_j, x) + intercept_."""
        return self._expansion(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags
