"""Optimal margin distribution machine and clustering (Zhang & Zhou): ODMClassifier and ODMC.

ODM maximizes the margin mean and minimizes the margin variance: with no bias,
`min 1/2 |w|^2 + lam/m sum_i (xi_i^2 + nu eps_i^2) / (1 - theta)^2` subject to
`1 - theta - xi_i <= y_i w'phi(x_i) <= 1 + theta + eps_i`, solved exactly through its dual (a box
QP). ODMC clusters by the minimax relaxation over labelings, by stochastic mirror descent.
"""

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils.validation import _check_sample_weight, validate_data

from . import _core
from ._common import (
    DEFAULTS,
    check_choice,
    check_int,
    check_real,
    max_iter_arg,
    report_dict,
    seed_from,
    to_core,
    warn_status,
    warn_stop,
)
from ._kernelmodel import BinaryClassifierMixin, KernelExpansionMixin, binary_targets, kernel_args


_ODM = DEFAULTS["odm"]
_ODMC = DEFAULTS["odmc"]


class ODMClassifier(KernelExpansionMixin, BinaryClassifierMixin, BaseEstimator):
    """Two-class optimal margin distribution machine.

    Parameters
    ----------
    lam : lambda > 0, the weight of the margin loss (the paper's grid 1, 10, 100, 1000).
    nu : > 0, relative weight of deviations above the margin mean.
    theta : in [0, 1), width of the insensitive zone around margin 1.
    kernel, gamma, degree, coef0 : as in SVC ('linear', 'poly', 'rbf', 'sigmoid').
    tol : stopping tolerance of the dual solver. cache_size : MB. max_iter : -1 (no limit) or
        iterations. solver : 'auto'/'smo' (SMO over the kernel matrix) or 'dcd' (linear kernel
        only). shrinking : bool. random_state : seeds DCD's coordinate order.

    Fitted attributes: classes_, support_, support_vectors_, dual_coef_ (positive for
    classes_[1]), intercept_ (always 0: no bias), primal_objective_, dual_objective_, duality_gap_
    (recomputed by the library from the solution), n_iter_, fit_status_, fit_report_.
    """

    def __init__(self, *, lam=_ODM["lam"], nu=_ODM["nu"], theta=_ODM["theta"], kernel="rbf",
                 gamma="scale", degree=3, coef0=0.0, tol=1e-3, cache_size=200, max_iter=-1,
                 solver="auto", shrinking=True, random_state=None):
        self.lam = lam
        self.nu = nu
        self.theta = theta
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.tol = tol
        self.cache_size = cache_size
        self.max_iter = max_iter
        self.solver = solver
        self.shrinking = shrinking
        self.random_state = random_state

    def fit(self, X, y, sample_weight=None):
        """Fits the model."""
        check_choice("solver", self.solver, {"auto", "smo", "dcd"})
        if not isinstance(self.shrinking, (bool, np.bool_)):
            raise ValueError(f"shrinking must be a bool, got {self.shrinking!r}")
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64, order="C")
        sw = None
        if sample_weight is not None:
            sw = _check_sample_weight(sample_weight, X, dtype=np.float64)
        y_pm = binary_targets(self, y)
        kernel, gamma, coef0, degree = kernel_args(self, X)
        handle, raw = _core.fit_odm(
            to_core(X), y_pm, sw, check_real("lam", self.lam), check_real("nu", self.nu),
            check_real("theta", self.theta), kernel, gamma, coef0, degree,
            check_real("tol", self.tol), check_real("cache_size", self.cache_size),
            max_iter_arg(self.max_iter), self.solver, bool(self.shrinking),
            seed_from(self.random_state))
        self._set_expansion(handle, raw, X, 1.0 if raw["labels"][0] == 1.0 else -1.0)
        self.primal_objective_ = float(raw["primal"])
        self.dual_objective_ = float(raw["dual"])
        self.duality_gap_ = float(raw["gap"])
        self.n_iter_ = int(raw["iterations"][0])
        self.fit_status_ = 0 if raw["status"] == ["converged"] else 1
        self.fit_report_ = report_dict(raw)
        warn_status(raw, "ODMClassifier")
        return self

    def decision_function(self, X):
        """f(x) = w'phi(x), positive for classes_[1]."""
        return self._expansion(X)


class ODMC(ClusterMixin, BaseEstimator):
    """Optimal margin distribution clustering.

    Parameters
    ----------
    n_clusters : >= 2 (more than 2: recursive bisection, clusters of about n / n_clusters);
        1 gives the trivial one-cluster partition, as KMeans does.
    lam, nu, theta : the ODM parameters.
    kernel : 'linear' or 'rbf' (Gaussian with sigma = sigma_scale * sqrt(mean squared distance);
        dense n x n kernel, n <= max_dense). Features are standardized first.
    beta : balance |e'y| <= beta n as a fraction of the points (the paper's 0.03 balanced, 0.3
        imbalanced); 'auto' (default): max(b, n_clusters / n) with b the library's default (the
        paper's balanced setting), raised just enough that an odd number of points (|e'y| >= 1)
        stays feasible on small data.
    n_iter : mirror-descent iterations per round. max_rounds : label-generation rounds.
    tol : relative duality-gap tolerance. pool : (k-means runs, principal directions, random
        projections) seeding the candidate labelings. readout : 'decision' (default), 'sign'
        (the paper's), 'heaviest' or 'min_g'. random_state : seed.

    Fitted attributes: labels_ (0 .. n_clusters - 1, numbered by first appearance),
    cluster_sizes_, n_iter_ (mirror-descent iterations), n_rounds_, status_ ('converged' or why
    not: a ConvergenceWarning), gap_history_ (relative gap per round), fit_report_.
    """

    def __init__(self, n_clusters=2, *, lam=_ODMC["lam"], nu=_ODMC["nu"], theta=_ODMC["theta"],
                 kernel="linear", sigma_scale=1.0, beta="auto", n_iter=_ODMC["n_iter"],
                 max_rounds=_ODMC["max_rounds"], tol=_ODMC["tol"], pool=_ODMC["pool"],
                 readout="decision", random_state=None, max_dense=_ODMC["max_dense"]):
        self.n_clusters = n_clusters
        self.lam = lam
        self.nu = nu
        self.theta = theta
        self.kernel = kernel
        self.sigma_scale = sigma_scale
        self.beta = beta
        self.n_iter = n_iter
        self.max_rounds = max_rounds
        self.tol = tol
        self.pool = pool
        self.readout = readout
        self.random_state = random_state
        self.max_dense = max_dense

    def fit(self, X, y=None):
        """Clusters X (y is ignored)."""
        check_choice("kernel", self.kernel, {"linear", "rbf"})
        check_choice("readout", self.readout, {"decision", "sign", "heaviest", "min_g"})
        pool = tuple(check_int("pool", v, low=0) for v in self.pool)
        if len(pool) != 3:
            raise ValueError(f"pool must be 3 integers, got {self.pool!r}")
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, order="C")
        k = check_int("n_clusters", self.n_clusters, low=1)
        if k > X.shape[0]:
            raise ValueError(f"n_clusters = {k} > n_samples = {X.shape[0]}")
        if k == 1:
            # The one-cluster partition (as KMeans(n_clusters=1)): nothing to solve.
            n = X.shape[0]
            self.labels_ = np.zeros(n, dtype=np.int64)
            self.cluster_sizes_ = np.array([n], dtype=np.int64)
            self.n_iter_, self.n_rounds_, self.status_ = 0, 0, "converged"
            self.gap_history_ = np.zeros(0)
            self.fit_report_ = {"status": "converged", "rust_seconds": 0.0, "total_seconds": 0.0}
            return self
        if isinstance(self.beta, str) and self.beta == "auto":
            beta = min(1.0, max(_ODMC["beta"], k / X.shape[0]))
        else:
            beta = check_real("beta", self.beta)
        raw = _core.fit_odmc(
            to_core(X), k, check_real("lam", self.lam), check_real("nu", self.nu),
            check_real("theta", self.theta), self.kernel,
            check_real("sigma_scale", self.sigma_scale), beta,
            check_int("n_iter", self.n_iter, low=0), check_int("max_rounds", self.max_rounds,
                                                                 low=0),
            check_real("tol", self.tol), pool, self.readout, seed_from(self.random_state),
            check_int("max_dense", self.max_dense, low=1))
        self.labels_ = np.asarray(raw["labels"], dtype=np.int64)
        self.cluster_sizes_ = np.asarray(raw["cluster_sizes"], dtype=np.int64)
        self.n_iter_ = int(raw["iterations"])
        self.n_rounds_ = int(raw["rounds"])
        self.status_ = raw["status"]
        self.gap_history_ = np.asarray(raw["relative_gap"])
        self.fit_report_ = {k: raw[k] for k in ("status", "rust_seconds", "total_seconds")}
        warn_stop("ODMC", self.status_, {"converged"},
                  "the relative gap did not reach tol; increase max_rounds or n_iter")
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags
