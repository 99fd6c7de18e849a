"""Core-set solutions of the minimum enclosing ball and its SVM mappings (Badoiu-Clarkson core-sets;
with n_nodes > 1, Notarstefano's distributed core-set consensus over an in-process network):
MinimumEnclosingBall, CoresetSVDD, CoresetOneClassSVM, CoresetSVC.

A core-set of k = ceil(1/eps) points whose MEB, grown by (1 + eps), covers every point. The SVDD
and SVM mappings need a kernel with constant diagonal K(x, x) (RBF; or rows of equal norm).
"""

import numpy as np
from sklearn.base import BaseEstimator, OutlierMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _core
from ._common import DEFAULTS, check_int, check_real, seed_from, to_core, warn_stop
from ._kernelmodel import BinaryClassifierMixin, KernelExpansionMixin, binary_targets, kernel_args


def _network(est):
    nodes = check_int("n_nodes", est.n_nodes, low=1)
    if not isinstance(est.graph, str):
        raise ValueError(f"graph must be a string ('er:P', 'ring', 'grid', 'complete' or "
                         f"'edges:FILE'), got {est.graph!r}")
    return nodes, est.graph, check_int("max_rounds", est.max_rounds, low=1)


def _set_common(est, raw):
    est.core_set_ = np.asarray(raw["core_set"], dtype=np.int64)
    est.core_points_ = np.asarray(raw["points"], dtype=np.int64)
    est.core_weights_ = np.asarray(raw["weights"])
    est.radius_ = float(np.sqrt(max(raw["r2"], 0.0)))
    est.n_rounds_ = int(raw["rounds"])
    est.agreed_ = bool(raw["agreed"])
    est.fit_report_ = {k: raw[k] for k in ("swaps", "rounds", "agreed", "rust_seconds",
                                           "total_seconds")}
    if est.n_nodes > 1:
        warn_stop(type(est).__name__, "agreed" if est.agreed_ else "no_agreement", {"agreed"},
                  "the nodes did not agree on a core-set within max_rounds; increase max_rounds")


_CORESET = DEFAULTS["coreset"]


class MinimumEnclosingBall(BaseEstimator):
    """(1 + eps)-approximate minimum enclosing ball of the rows of X by a core-set.

    Parameters: eps in (0, 1) (core-set of ceil(1/eps) points); n_nodes (1: centralized; more:
    the distributed consensus over `graph`: 'er:P', 'ring', 'grid', 'complete', or 'edges:FILE',
    a text file of 0-based node pairs `FROM TO`, one per line, `#` comments); max_rounds
    (consensus round budget, used only with n_nodes > 1: a ConvergenceWarning when the nodes
    have not agreed within it); random_state (initial subsets, network randomness).

    Fitted attributes: center_, radius_ (of the core-set's ball: radius_ <= exact MEB radius, and
    every row lies within (1 + eps) radius_ of center_), core_set_ (row indices, a multiset),
    core_points_/core_weights_ (the distinct core-set rows and their dual weights), agreed_,
    n_rounds_, fit_report_.

    decision_function uses the grown radius (1 + eps) radius_, the ball the core-set guarantees
    to cover: it is >= 0 on every training row (rows on the core-set ball's own boundary would
    otherwise score -1e-13 by rounding).
    """

    def __init__(self, *, eps=_CORESET["eps"], n_nodes=1, graph=_CORESET["graph"],
                 max_rounds=_CORESET["max_rounds"], random_state=None):
        self.eps = eps
        self.n_nodes = n_nodes
        self.graph = graph
        self.max_rounds = max_rounds
        self.random_state = random_state

    def fit(self, X, y=None):
        """Computes the ball of the rows of X (y is ignored)."""
        nodes, graph, rounds = _network(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, order="C")
        self._eps = check_real("eps", self.eps)
        _, raw = _core.fit_coreset("meb", to_core(X), None, "linear", 1.0, 0.0, 3, 1.0,
                                   self._eps, seed_from(self.random_state), nodes, graph, rounds)
        _set_common(self, raw)
        self.center_ = np.asarray(raw["center"])
        return self

    def decision_function(self, X):
        """((1 + eps) radius_)^2 - |x - center_|^2: >= 0 inside the grown ball (every training
        row)."""
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        X = X.toarray() if hasattr(X, "toarray") else X
        grown = (1.0 + self._eps) * self.radius_
        return grown ** 2 - ((X - self.center_) ** 2).sum(axis=1)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class CoresetSVDD(KernelExpansionMixin, OutlierMixin, BaseEstimator):
    """Hard-margin support vector data description (the MEB in the kernel's feature space) by a
    core-set. predict: +1 inside the ball, -1 outside.

    Parameters: kernel ('rbf' by default; any kernel with constant K(x, x)), gamma, degree,
    coef0 as in SVC; eps, n_nodes, graph, max_rounds, random_state as in MinimumEnclosingBall.

    Fitted attributes: support_, support_vectors_, dual_coef_, intercept_, offset_,
    radius_ (feature-space radius r of the core-set's ball), core_set_, core_points_,
    core_weights_, agreed_, n_rounds_, fit_report_.

    decision_function(x) = ((1 + eps) r)^2 - |phi(x) - c|^2 = sum_j dual_coef_j K(sv_j, x) +
    intercept_: the grown ball the core-set guarantees to cover every training point, so
    predict(X_train) is all +1 (the core-set ball itself has its own support points on its
    boundary, where rounding gives -1e-13). intercept_ includes the growth term.
    """

    _problem = "svdd"
    # Whether the decision uses the (1 + eps)-grown ball (SVDD) or the model's own (one-class).
    _grow = True

    def __init__(self, *, kernel="rbf", gamma="scale", degree=3, coef0=0.0, eps=_CORESET["eps"],
                 n_nodes=1, graph=_CORESET["graph"], max_rounds=_CORESET["max_rounds"],
                 random_state=None):
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.eps = eps
        self.n_nodes = n_nodes
        self.graph = graph
        self.max_rounds = max_rounds
        self.random_state = random_state

    def _c(self):
        return 1.0

    def fit(self, X, y=None):
        """Fits the description of X (y is ignored)."""
        nodes, graph, rounds = _network(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, order="C")
        kernel, gamma, coef0, degree = kernel_args(self, X)
        eps = check_real("eps", self.eps)
        handle, raw = _core.fit_coreset(self._problem, to_core(X), None, kernel, gamma, coef0,
                                        degree, self._c(), eps, seed_from(self.random_state),
                                        nodes, graph, rounds)
        self._set_expansion(handle, raw, X, 1.0)
        # ((1 + eps) r)^2 - r^2 added to the core's r^2 - |phi(x) - c|^2.
        self._shift = ((1.0 + eps) ** 2 - 1.0) * max(raw["r2"], 0.0) if self._grow else 0.0
        self.intercept_ = self.intercept_ + self._shift
        self.offset_ = -float(self.intercept_[0])
        _set_common(self, raw)
        return self

    def decision_function(self, X):
        """Positive inside, negative outside."""
        return self._expansion(X) + self._shift

    def score_samples(self, X):
        """decision_function(X) + offset_ (the kernel expansion without its constant)."""
        return self.decision_function(X) + self.offset_

    def predict(self, X):
        """+1 for inliers, -1 for outliers."""
        return np.where(self.decision_function(X) >= 0, 1, -1)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class CoresetOneClassSVM(CoresetSVDD):
    """One-class 2-norm soft-margin SVM (no bias, penalty C) by a core-set; otherwise as
    CoresetSVDD. decision_function(x) = w'phi(x) - rho.

    Defaults C = 100, eps = 0.01: every support point has slack x_i / C > 0, so a small C (or a
    10-point core-set) calls almost every training point an outlier (measured on 300 Gaussian
    points: 0% inliers at C = 1, 87% at C = 100 and eps = 0.01). The decision is the model's own
    (no (1 + eps) growth): its support points' negative values are their slacks, not rounding.
    """

    _problem = "oneclass"
    _grow = False

    def __init__(self, *, C=100.0, kernel="rbf", gamma="scale", degree=3, coef0=0.0, eps=0.01,
                 n_nodes=1, graph=_CORESET["graph"], max_rounds=_CORESET["max_rounds"],
                 random_state=None):
        super().__init__(kernel=kernel, gamma=gamma, degree=degree, coef0=coef0, eps=eps,
                         n_nodes=n_nodes, graph=graph, max_rounds=max_rounds,
                         random_state=random_state)
        self.C = C

    def _c(self):
        return check_real("C", self.C)


class CoresetSVC(KernelExpansionMixin, BinaryClassifierMixin, BaseEstimator):
    """Two-class 2-norm soft-margin SVM (squared hinge, regularized bias; the CVM mapping onto
    the MEB) by a core-set.

    Parameters: C, kernel ('rbf'; any kernel with constant K(x, x)), gamma, degree, coef0, and
    eps, n_nodes, graph, max_rounds, random_state as in MinimumEnclosingBall. The default eps is
    0.01 (a core-set of 100 points): the (1 + eps) guarantee is on the ball, not on accuracy,
    and a 10-point core-set (eps = 0.1) classifies poorly (measured: 0.84 vs 0.97 training
    accuracy on 300 overlapping points).

    Fitted attributes: classes_, support_, support_vectors_, dual_coef_, intercept_ (the bias
    sum_j l_j x_j), radius_, core_set_, core_points_, core_weights_, agreed_, n_rounds_,
    fit_report_.
    """

    def __init__(self, *, C=1.0, kernel="rbf", gamma="scale", degree=3, coef0=0.0, eps=0.01,
                 n_nodes=1, graph=_CORESET["graph"], max_rounds=_CORESET["max_rounds"],
                 random_state=None):
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.eps = eps
        self.n_nodes = n_nodes
        self.graph = graph
        self.max_rounds = max_rounds
        self.random_state = random_state

    def fit(self, X, y):
        """Fits the model."""
        nodes, graph, rounds = _network(self)
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64, order="C")
        y_pm = binary_targets(self, y)
        kernel, gamma, coef0, degree = kernel_args(self, X)
        handle, raw = _core.fit_coreset("svm", to_core(X), y_pm, kernel, gamma, coef0, degree,
                                        check_real("C", self.C), check_real("eps", self.eps),
                                        seed_from(self.random_state), nodes, graph, rounds)
        self._set_expansion(handle, raw, X, 1.0 if raw["labels"][0] == 1.0 else -1.0)
        _set_common(self, raw)
        return self

    def decision_function(self, X):
        """Scores, positive for classes_[1]."""
        return self._expansion(X)

