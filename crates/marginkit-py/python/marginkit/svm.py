"""Kernel SVMs with scikit-learn's interface: SVC, NuSVC, SVR, NuSVR, OneClassSVM.

Fitted attributes follow scikit-learn's shapes and sign conventions (which are LIBSVM's, except
that for two classes `dual_coef_` and `intercept_` are negated so that a positive decision value
means `classes_[1]`). Classes are ordered as `np.unique(y)`; the training rows are handed to
the Rust core so that its (LIBSVM) class order is that order too, which gives the same
subproblems, support-vector order and pair order as scikit-learn.
"""

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, OutlierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from . import _core
from ._common import (
    check_choice,
    check_int,
    check_real,
    class_weight_pairs,
    max_iter_arg,
    report_dict,
    resolve_gamma,
    seed_from,
    to_core,
    warn_status,
)

_KERNELS = {"linear", "poly", "rbf", "sigmoid", "precomputed"}


def ovr_from_ovo(dec, n_classes):
    """One-vs-rest scores from one-vs-one decision values (LIBSVM pair order, positive = the first
    class of the pair): votes per class plus the summed pairwise margins squashed into
    (-1/3, 1/3), so that the votes decide and the margins only break ties (scikit-learn's
    `decision_function_shape='ovr'`)."""
    n = dec.shape[0]
    votes = np.zeros((n, n_classes))
    margin = np.zeros((n, n_classes))
    k = 0
    for i in range(n_classes):
        for j in range(i + 1, n_classes):
            d = dec[:, k]
            votes[:, i] += d > 0
            votes[:, j] += d <= 0
            margin[:, i] += d
            margin[:, j] -= d
            k += 1
    return votes + margin / (3 * (np.abs(margin) + 1))


class _BaseSVM(BaseEstimator):
    """Shared fit/predict machinery; subclasses set `_svm_type`."""

    _svm_type = None

    def _check_params(self):
        if not callable(self.kernel):
            check_choice("kernel", self.kernel, _KERNELS)
        degree = check_int("degree", self.degree, low=0, high=(1 << 32) - 1)
        coef0 = check_real("coef0", self.coef0)
        tol = check_real("tol", self.tol)
        cache = check_real("cache_size", self.cache_size)
        if not isinstance(self.shrinking, (bool, np.bool_)):
            raise ValueError(f"shrinking must be a bool, got {self.shrinking!r}")
        return degree, coef0, tol, cache

    def _kernel_input(self, X, fit):
        """The matrix handed to the core: X itself, or for precomputed / callable kernels the
        kernel values with LIBSVM's serial-number column in front."""
        if self.kernel == "precomputed" or callable(self.kernel):
            if callable(self.kernel):
                K = self.kernel(X, self._X_fit if not fit else X)
                K = np.asarray(K.toarray() if sp.issparse(K) else K, dtype=np.float64)
            else:
                K = X.toarray() if sp.issparse(X) else X
            if fit and K.shape[0] != K.shape[1]:
                raise ValueError(
                    f"Precomputed matrix must be a square matrix. Input is a {K.shape[0]}x"
                    f"{K.shape[1]} matrix."
                )
            if not fit and K.shape[1] != self.shape_fit_[0]:
                raise ValueError(
                    f"X.shape[1] = {K.shape[1]} should be equal to {self.shape_fit_[0]}, the "
                    "number of samples at training time"
                )
            serial = np.arange(1, K.shape[0] + 1, dtype=np.float64) if fit else np.zeros(K.shape[0])
            return np.ascontiguousarray(np.column_stack([serial, K]))
        return X

    def _fit_core(self, X, y_enc, sample_weight, perm, c, nu, epsilon, probability, cw, seed,
                  platt="origin"):
        degree, coef0, tol, cache = self._check_params()
        self._gamma = resolve_gamma(self.gamma, X) if not (
            self.kernel == "precomputed" or callable(self.kernel)) else 1.0
        self._X_fit = X if callable(self.kernel) else None
        Xk = self._kernel_input(X, fit=True)
        kernel = "precomputed" if callable(self.kernel) else self.kernel
        handle, raw = _core.fit_svm(
            self._svm_type, to_core(Xk), np.asarray(y_enc, dtype=np.float64),
            sample_weight, perm, kernel, float(self._gamma), coef0, degree, c, nu, epsilon,
            tol, cache, bool(self.shrinking), probability, platt, max_iter_arg(self.max_iter), cw,
            seed,
        )
        self._handle = handle
        self.fit_report_ = report_dict(raw)
        warn_status(raw, type(self).__name__)
        self.n_iter_ = np.asarray(raw["iterations"], dtype=np.int32)
        self.fit_status_ = 0 if all(s == "converged" for s in raw["status"]) else 1
        self.shape_fit_ = X.shape
        idx = raw["sv_indices"]
        if perm is not None:
            idx = np.asarray(perm, dtype=np.int64)[idx]
        self.support_ = idx.astype(np.int32)
        if self.kernel == "precomputed" or callable(self.kernel):
            self.support_vectors_ = np.empty((0, 0), dtype=np.float64)
        else:
            self.support_vectors_ = X[self.support_]
        return raw

    def _core_x(self, X):
        return to_core(self._kernel_input(X, fit=False))

    def _validate_predict(self, X):
        check_is_fitted(self)
        accept = False if self.kernel == "precomputed" else "csr"
        return validate_data(self, X, accept_sparse=accept, dtype=np.float64, order="C",
                             reset=False)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self.kernel != "precomputed"
        tags.input_tags.pairwise = self.kernel == "precomputed"
        return tags

    @property
    def coef_(self):
        """Primal weights (linear kernel only), scikit-learn's shape."""
        if self.kernel != "linear":
            raise AttributeError("coef_ is only available when using a linear kernel")
        check_is_fitted(self)
        sv = self.support_vectors_
        svd = sv.toarray() if sp.issparse(sv) else sv
        dc = self.dual_coef_
        n_class = len(self.classes_) if hasattr(self, "classes_") else 0
        if n_class <= 2:
            return dc @ svd
        start = np.concatenate([[0], np.cumsum(self._n_support)])
        rows = []
        for i in range(n_class):
            for j in range(i + 1, n_class):
                si = slice(start[i], start[i + 1])
                sj = slice(start[j], start[j + 1])
                rows.append(dc[j - 1, si] @ svd[si] + dc[i, sj] @ svd[sj])
        return np.asarray(rows)


class _BaseSVC(ClassifierMixin, _BaseSVM):
    """C-SVC and nu-SVC."""

    def fit(self, X, y, sample_weight=None):
        """Fits the classifier. X: array-like or CSR (n_samples, n_features), or the kernel
        matrix (n_samples, n_samples) with kernel='precomputed'."""
        accept = False if self.kernel == "precomputed" else "csr"
        X, y = validate_data(self, X, y, accept_sparse=accept, dtype=np.float64, order="C")
        check_classification_targets(y)
        check_choice("decision_function_shape", self.decision_function_shape, {"ovr", "ovo"})
        if self.break_ties and self.decision_function_shape == "ovo":
            raise ValueError("break_ties must be False when decision_function_shape is 'ovo'")
        sw = None
        if sample_weight is not None:
            sw = _check_sample_weight(sample_weight, X, dtype=np.float64)
        self.classes_, y_enc = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError(
                "The number of classes has to be greater than one; got "
                f"{len(self.classes_)} class"
            )
        # Rows handed over with the first sample of each class first (in sorted class order):
        # LIBSVM's first-appearance order then equals np.unique's order, and the order of the
        # samples inside each class (all the solver sees of the row order) is unchanged.
        if sw is not None and np.count_nonzero(np.bincount(y_enc, weights=sw) > 0) < 2:
            raise ValueError(
                "Invalid input - all samples with positive weights belong to the same class"
            )
        _, first = np.unique(y_enc, return_index=True)
        rest = np.ones(len(y_enc), dtype=bool)
        rest[first] = False
        perm = np.concatenate([first, np.flatnonzero(rest)]).astype(np.int64)
        cw_pairs, self.class_weight_ = class_weight_pairs(self.class_weight, self.classes_, y_enc)
        c = check_real("C", getattr(self, "C", 1.0))
        nu = check_real("nu", getattr(self, "nu", 0.5))
        if not isinstance(self.probability, (bool, np.bool_)):
            raise ValueError(f"probability must be a bool, got {self.probability!r}")
        raw = self._fit_core(X, y_enc, sw, perm.tolist(), c, nu, 0.1, bool(self.probability),
                             cw_pairs, seed_from(self.random_state), self.platt)
        binary = len(self.classes_) == 2
        self._n_support = raw["n_sv"].astype(np.int32)
        self.n_support_ = self._n_support
        self.dual_coef_ = -raw["sv_coef"] if binary else raw["sv_coef"]
        self.intercept_ = raw["rho"] if binary else -raw["rho"]
        self._intercept_ = -raw["rho"]
        self.probA_ = raw["prob_a"]
        self.probB_ = raw["prob_b"]
        return self

    def _ovo(self, X):
        return self._handle.decision_values(self._core_x(X))

    def decision_function(self, X):
        """Binary: shape (n,), positive for classes_[1]. Multiclass: (n, n_classes) with
        decision_function_shape='ovr', else (n, n_classes*(n_classes-1)/2) one-vs-one values."""
        X = self._validate_predict(X)
        dec = self._ovo(X)
        if len(self.classes_) == 2:
            return -dec[:, 0]
        if self.decision_function_shape == "ovr":
            return ovr_from_ovo(dec, len(self.classes_))
        return dec

    def predict(self, X):
        """Class labels (one-vs-one voting, ties to the first class; with break_ties the
        largest one-vs-rest score)."""
        X = self._validate_predict(X)
        if self.break_ties and len(self.classes_) > 2:
            dec = ovr_from_ovo(self._ovo(X), len(self.classes_))
            return self.classes_[np.argmax(dec, axis=1)]
        idx = self._handle.predict(self._core_x(X)).astype(np.intp)
        return self.classes_[idx]

    def _check_proba(self):
        if not self.probability:
            raise AttributeError("predict_proba is not available when probability=False")
        return True

    @property
    def predict_proba(self):
        """Class probabilities (Platt scaling fitted by internal 5-fold cross-validation,
        pairwise coupling), columns in classes_ order. Needs probability=True."""
        self._check_proba()
        return self._predict_proba

    def _predict_proba(self, X):
        X = self._validate_predict(X)
        return self._handle.predict_proba(self._core_x(X))

    @property
    def predict_log_proba(self):
        """Log of predict_proba."""
        self._check_proba()
        return lambda X: np.log(self._predict_proba(X))


class SVC(_BaseSVC):
    """C-Support Vector Classification (LIBSVM's C-SVC), scikit-learn's interface and defaults.

    Parameters match sklearn.svm.SVC: C, kernel ('linear', 'poly', 'rbf', 'sigmoid',
    'precomputed' or a callable), degree, gamma ('scale', 'auto' or a float), coef0, shrinking,
    probability, tol, cache_size (MB), class_weight (dict or 'balanced'), verbose (ignored),
    max_iter (-1 = no limit), decision_function_shape ('ovr' or 'ovo'), break_ties,
    random_state (seeds the probability model's folds).

    platt (not in scikit-learn): how the sigmoids of the probability model are fitted.
    'origin' (default): through the origin (B = 0), so the most probable class is always the
    predicted one. 'libsvm': with intercept, LIBSVM's exact Platt fit (probA_/probB_ as LIBSVM
    computes them from the same cross-validated decision values). 'libsvm' needs
    probability=True.
    """

    _svm_type = "c_svc"

    def __init__(self, *, C=1.0, kernel="rbf", degree=3, gamma="scale", coef0=0.0,
                 shrinking=True, probability=False, tol=1e-3, cache_size=200,
                 class_weight=None, verbose=False, max_iter=-1, decision_function_shape="ovr",
                 break_ties=False, random_state=None, platt="origin"):
        self.C = C
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.shrinking = shrinking
        self.probability = probability
        self.tol = tol
        self.cache_size = cache_size
        self.class_weight = class_weight
        self.verbose = verbose
        self.max_iter = max_iter
        self.decision_function_shape = decision_function_shape
        self.break_ties = break_ties
        self.random_state = random_state
        self.platt = platt


class NuSVC(_BaseSVC):
    """nu-Support Vector Classification (LIBSVM's nu-SVC), scikit-learn's interface.

    Parameters as SVC (platt included), with nu in (0, 1] instead of C.
    """

    _svm_type = "nu_svc"

    def __init__(self, *, nu=0.5, kernel="rbf", degree=3, gamma="scale", coef0=0.0,
                 shrinking=True, probability=False, tol=1e-3, cache_size=200,
                 class_weight=None, verbose=False, max_iter=-1, decision_function_shape="ovr",
                 break_ties=False, random_state=None, platt="origin"):
        self.nu = nu
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.shrinking = shrinking
        self.probability = probability
        self.tol = tol
        self.cache_size = cache_size
        self.class_weight = class_weight
        self.verbose = verbose
        self.max_iter = max_iter
        self.decision_function_shape = decision_function_shape
        self.break_ties = break_ties
        self.random_state = random_state
        self.platt = platt


class _BaseSVR(RegressorMixin, _BaseSVM):
    def fit(self, X, y, sample_weight=None):
        """Fits the regressor."""
        accept = False if self.kernel == "precomputed" else "csr"
        X, y = validate_data(self, X, y, accept_sparse=accept, dtype=np.float64, order="C",
                             y_numeric=True)
        sw = None
        if sample_weight is not None:
            sw = _check_sample_weight(sample_weight, X, dtype=np.float64)
        c = check_real("C", self.C)
        nu = check_real("nu", getattr(self, "nu", 0.5))
        eps = check_real("epsilon", getattr(self, "epsilon", 0.1))
        raw = self._fit_core(X, y, sw, None, c, nu, eps, False, [], 0)
        self._n_support = np.array([0, 0], dtype=np.int32)
        self.n_support_ = self._n_support
        self.dual_coef_ = raw["sv_coef"]
        self.intercept_ = -raw["rho"]
        self._intercept_ = self.intercept_
        return self

    def predict(self, X):
        """Predicted values."""
        X = self._validate_predict(X)
        return self._handle.predict(self._core_x(X))


class SVR(_BaseSVR):
    """epsilon-Support Vector Regression (LIBSVM's epsilon-SVR), scikit-learn's interface.

    Parameters: kernel, degree, gamma, coef0, tol, C, epsilon, shrinking, cache_size, verbose
    (ignored), max_iter.
    """

    _svm_type = "epsilon_svr"

    def __init__(self, *, kernel="rbf", degree=3, gamma="scale", coef0=0.0, tol=1e-3, C=1.0,
                 epsilon=0.1, shrinking=True, cache_size=200, verbose=False, max_iter=-1):
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.tol = tol
        self.C = C
        self.epsilon = epsilon
        self.shrinking = shrinking
        self.cache_size = cache_size
        self.verbose = verbose
        self.max_iter = max_iter


class NuSVR(_BaseSVR):
    """nu-Support Vector Regression (LIBSVM's nu-SVR), scikit-learn's interface.

    Parameters: nu, C, kernel, degree, gamma, coef0, shrinking, tol, cache_size, verbose
    (ignored), max_iter.
    """

    _svm_type = "nu_svr"

    def __init__(self, *, nu=0.5, C=1.0, kernel="rbf", degree=3, gamma="scale", coef0=0.0,
                 shrinking=True, tol=1e-3, cache_size=200, verbose=False, max_iter=-1):
        self.nu = nu
        self.C = C
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.shrinking = shrinking
        self.tol = tol
        self.cache_size = cache_size
        self.verbose = verbose
        self.max_iter = max_iter


class OneClassSVM(OutlierMixin, _BaseSVM):
    """One-class SVM (LIBSVM's, Schoelkopf et al.), scikit-learn's interface.

    predict gives +1 (inlier) / -1 (outlier); decision_function is positive inside;
    score_samples = decision_function + offset_.
    """

    _svm_type = "one_class"

    def __init__(self, *, kernel="rbf", degree=3, gamma="scale", coef0=0.0, tol=1e-3, nu=0.5,
                 shrinking=True, cache_size=200, verbose=False, max_iter=-1):
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.tol = tol
        self.nu = nu
        self.shrinking = shrinking
        self.cache_size = cache_size
        self.verbose = verbose
        self.max_iter = max_iter

    def fit(self, X, y=None, sample_weight=None):
        """Learns the support of X (y is ignored)."""
        accept = False if self.kernel == "precomputed" else "csr"
        X = validate_data(self, X, accept_sparse=accept, dtype=np.float64, order="C")
        sw = None
        if sample_weight is not None:
            sw = _check_sample_weight(sample_weight, X, dtype=np.float64)
        nu = check_real("nu", self.nu)
        raw = self._fit_core(X, np.zeros(X.shape[0]), sw, None, 1.0, nu, 0.1, False, [], 0)
        self._n_support = np.array([0, 0], dtype=np.int32)
        self.n_support_ = self._n_support
        self.dual_coef_ = raw["sv_coef"]
        self.intercept_ = -raw["rho"]
        self._intercept_ = self.intercept_
        self.offset_ = raw["rho"].copy()
        return self

    def decision_function(self, X):
        """Signed distance-like score, positive for inliers."""
        X = self._validate_predict(X)
        return self._handle.decision_values(self._core_x(X))[:, 0]

    def score_samples(self, X):
        """Unshifted scores: decision_function + offset_."""
        return self.decision_function(X) + self.offset_[0]

    def predict(self, X):
        """+1 for inliers, -1 for outliers."""
        X = self._validate_predict(X)
        return self._handle.predict(self._core_x(X)).astype(np.int64)

