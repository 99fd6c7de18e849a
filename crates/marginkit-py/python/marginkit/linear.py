"""Linear SVMs with scikit-learn's interface: LinearSVC, LinearSVR (LIBLINEAR's dual solvers,
trained by marginkit's dual coordinate descent; with dual=False and a squared loss, LIBLINEAR's
primal problems -s 2 / -s 11, trained by marginkit's truncated Newton method on all threads).

As in scikit-learn (and LIBLINEAR), the intercept is learned as the weight of a constant
feature of value `intercept_scaling`, and is therefore regularized. A two-class model has one
weight vector, positive for `classes_[1]`; more classes are one-vs-rest.
"""

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from . import _core
from ._common import (
    check_choice,
    check_int,
    check_real,
    class_weight_pairs,
    report_dict,
    seed_from,
    to_core,
    warn_status,
)


def _check_common(est, squared):
    if est.dual not in ("auto", True, False):
        raise ValueError(f"dual must be 'auto', True or False, got {est.dual!r}")
    if est.dual is False and not squared:
        raise ValueError(
            "dual=False (the primal Newton solver) needs the squared loss "
            "('squared_hinge' or 'squared_epsilon_insensitive')"
        )
    if not isinstance(est.fit_intercept, (bool, np.bool_)):
        raise ValueError(f"fit_intercept must be a bool, got {est.fit_intercept!r}")
    tol = check_real("tol", est.tol)
    c = check_real("C", est.C)
    max_iter = check_int("max_iter", est.max_iter, low=1)
    bias = None
    if est.fit_intercept:
        bias = check_real("intercept_scaling", est.intercept_scaling)
        if not bias > 0:
            raise ValueError(f"intercept_scaling must be > 0, got {bias}")
    return tol, c, max_iter, bias


def _dot(X, W):
    return np.asarray(X @ W.T) if sp.issparse(X) else X @ W.T


class LinearSVC(ClassifierMixin, BaseEstimator):
    """Linear support vector classification (L2-regularized, hinge or squared hinge loss),
    scikit-learn's interface and defaults.

    Parameters: penalty ('l2' only), loss ('squared_hinge' -> LIBLINEAR -s 1, 'hinge' -> -s 3),
    dual ('auto' or True: dual coordinate descent; False with 'squared_hinge': LIBLINEAR -s 2,
    the primal truncated Newton method, parallel), tol, C, multi_class ('ovr' only),
    fit_intercept, intercept_scaling, class_weight, verbose (ignored), random_state (seeds the
    coordinate order), max_iter (passes over the data, or Newton iterations with dual=False).
    """

    def __init__(self, penalty="l2", loss="squared_hinge", *, dual="auto", tol=1e-4, C=1.0,
                 multi_class="ovr", fit_intercept=True, intercept_scaling=1, class_weight=None,
                 verbose=0, random_state=None, max_iter=1000):
        self.penalty = penalty
        self.loss = loss
        self.dual = dual
        self.tol = tol
        self.C = C
        self.multi_class = multi_class
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.class_weight = class_weight
        self.verbose = verbose
        self.random_state = random_state
        self.max_iter = max_iter

    def fit(self, X, y, sample_weight=None):
        """Fits the model."""
        check_choice("penalty", self.penalty, {"l2"})
        check_choice("loss", self.loss, {"squared_hinge", "hinge"})
        check_choice("multi_class", self.multi_class, {"ovr"})
        tol, c, max_iter, bias = _check_common(self, self.loss == "squared_hinge")
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64, order="C")
        check_classification_targets(y)
        sw = None
        if sample_weight is not None:
            sw = _check_sample_weight(sample_weight, X, dtype=np.float64)
        self.classes_, y_enc = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError(
                "This solver needs samples of at least 2 classes in the data, but the data "
                f"contains only one class: {self.classes_[0]!r}"
            )
        cw, self.class_weight_ = class_weight_pairs(self.class_weight, self.classes_, y_enc)
        solver = (2 if self.dual is False else 1) if self.loss == "squared_hinge" else 3
        raw = _core.fit_linear(solver, to_core(X), y_enc.astype(np.float64), sw, c, tol, 0.0,
                               bias, cw, max_iter, seed_from(self.random_state), True)
        self.fit_report_ = report_dict(raw)
        warn_status(raw, "LinearSVC")
        labels = raw["labels"].astype(np.intp)
        w, b = raw["w"], raw["intercept"]
        if len(self.classes_) == 2:
            # The core's single vector is positive for labels[0]; scikit-learn's for classes_[1].
            sign = 1.0 if labels[0] == 1 else -1.0
            self.coef_ = sign * w
            self.intercept_ = sign * b
        else:
            order = np.argsort(labels)
            self.coef_ = w[order]
            self.intercept_ = b[order]
        if not self.fit_intercept:
            self.intercept_ = np.zeros_like(self.intercept_)
        self.n_iter_ = int(np.max(raw["iterations"]))
        return self

    def decision_function(self, X):
        """Signed scores: (n,) for two classes (positive = classes_[1]), else (n, n_classes)."""
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        s = _dot(X, self.coef_) + self.intercept_
        return s.ravel() if s.shape[1] == 1 else s

    def predict(self, X):
        """Class labels."""
        s = self.decision_function(X)
        if s.ndim == 1:
            return self.classes_[(s > 0).astype(np.intp)]
        return self.classes_[np.argmax(s, axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class LinearSVR(RegressorMixin, BaseEstimator):
    """Linear support vector regression (L2-regularized, epsilon-insensitive or squared
    epsilon-insensitive loss), scikit-learn's interface and defaults.

    Parameters: epsilon, tol, C, loss ('epsilon_insensitive' -> LIBLINEAR -s 13,
    'squared_epsilon_insensitive' -> -s 12, or -s 11 (primal truncated Newton, parallel) with
    dual=False), fit_intercept, intercept_scaling, dual ('auto', True or False), verbose
    (ignored), random_state, max_iter (passes, or Newton iterations with dual=False).
    """

    def __init__(self, *, epsilon=0.0, tol=1e-4, C=1.0, loss="epsilon_insensitive",
                 fit_intercept=True, intercept_scaling=1.0, dual="auto", verbose=0,
                 random_state=None, max_iter=1000):
        self.epsilon = epsilon
        self.tol = tol
        self.C = C
        self.loss = loss
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.dual = dual
        self.verbose = verbose
        self.random_state = random_state
        self.max_iter = max_iter

    def fit(self, X, y, sample_weight=None):
        """Fits the model."""
        check_choice("loss", self.loss, {"epsilon_insensitive", "squared_epsilon_insensitive"})
        tol, c, max_iter, bias = _check_common(self, self.loss == "squared_epsilon_insensitive")
        eps = check_real("epsilon", self.epsilon)
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64, order="C",
                             y_numeric=True)
        sw = None
        if sample_weight is not None:
            sw = _check_sample_weight(sample_weight, X, dtype=np.float64)
        if self.loss == "epsilon_insensitive":
            solver = 13
        else:
            solver = 11 if self.dual is False else 12
        raw = _core.fit_linear(solver, to_core(X), np.asarray(y, dtype=np.float64), sw, c, tol,
                               eps, bias, [], max_iter, seed_from(self.random_state), True)
        self.fit_report_ = report_dict(raw)
        warn_status(raw, "LinearSVR")
        self.coef_ = raw["w"][0].copy()
        self.intercept_ = raw["intercept"].copy() if self.fit_intercept else np.zeros(1)
        self.n_iter_ = int(np.max(raw["iterations"]))
        return self

    def predict(self, X):
        """Predicted values."""
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        return _dot(X, self.coef_[None, :]).ravel() + self.intercept_[0]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags
