"""Linear semi-supervised SVM (Bennett & Demiriz's MIQP): S3VMClassifier, by an exact branch and
bound (small problems) or by AID-S3VM (Park & Klabjan's aggregate & iterative disaggregate, a
heuristic: the paper's optimality claim for it is false, see the library's `aid::s3vm`)."""

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _core
from ._common import DEFAULTS, check_choice, check_int, check_real, seed_from, to_core, warn_stop
from ._kernelmodel import BinaryClassifierMixin


_S3VM = DEFAULTS["s3vm"]


class S3VMClassifier(BinaryClassifierMixin, BaseEstimator):
    """Two-class linear S3VM:
    `min 1/2 |w|^2 + C_labeled sum_labeled hinge(y_i f_i) + C_unlabeled sum_unlabeled
    max(0, 1 - |f_i|)`, `f = w'x + b`. Unlabeled rows have the label -1 (scikit-learn's
    semi-supervised convention); the labeled rows must have two classes.

    Parameters: C_labeled (the default is the paper's), C_unlabeled, balance (mean decision value
    of the unlabeled rows = mean labeled label), algorithm ('aid' or 'exact': branch and bound on
    the full problem, exponential in the number of unlabeled rows), r0 (AID's initial aggregation
    rate), max_iter (AID iterations; 1 = the paper's AID1), max_nodes and bnb_time_limit (each
    branch and bound), random_state.

    A ConvergenceWarning when a branch and bound stops at max_nodes or bnb_time_limit (for
    'aid', the one whose solution is returned). predict: classes_[1] where w'x + b > 0.

    Fitted attributes: classes_, coef_, intercept_, transduction_ (a label for every training
    row: the given one, or the prediction for unlabeled rows), objective_ (the S3VM objective
    of the returned model with the optimal unlabeled signs), lower_bound_ and gap_ ('exact'
    only; NaN for AID), stop_, n_iter_, fit_report_.
    """

    def __init__(self, *, C_labeled=_S3VM["C_labeled"], C_unlabeled=_S3VM["C_unlabeled"],
                 balance=False, algorithm="aid", r0=_S3VM["r0"], max_iter=1,
                 max_nodes=_S3VM["max_nodes"], bnb_time_limit=_S3VM["bnb_time_limit"],
                 random_state=None):
        self.C_labeled = C_labeled
        self.C_unlabeled = C_unlabeled
        self.balance = balance
        self.algorithm = algorithm
        self.r0 = r0
        self.max_iter = max_iter
        self.max_nodes = max_nodes
        self.bnb_time_limit = bnb_time_limit
        self.random_state = random_state

    def fit(self, X, y):
        """Fits on labeled (y != -1) and unlabeled (y == -1) rows."""
        check_choice("algorithm", self.algorithm, {"aid", "exact"})
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64, order="C")
        y = np.asarray(y)
        labeled = y != -1
        check_classification_targets(y[labeled])
        self.classes_ = np.unique(y[labeled])
        if len(self.classes_) != 2:
            raise ValueError(
                "Only binary classification is supported. S3VMClassifier needs labeled rows of "
                f"two classes; the labeled rows have {len(self.classes_)} classes"
            )
        y_core = np.zeros(len(y))
        y_core[labeled] = np.where(y[labeled] == self.classes_[1], 1.0, -1.0)
        tl = None if self.bnb_time_limit is None else check_real("bnb_time_limit",
                                                                   self.bnb_time_limit)
        raw = _core.fit_s3vm(
            to_core(X), y_core, self.algorithm, check_real("C_labeled", self.C_labeled),
            check_real("C_unlabeled", self.C_unlabeled), bool(self.balance),
            check_real("r0", self.r0), check_int("max_iter", self.max_iter, low=0),
            check_int("max_nodes", self.max_nodes, low=1), tl, seed_from(self.random_state))
        sign = 1.0 if raw["labels"][0] == 1.0 else -1.0
        self.coef_ = sign * np.asarray(raw["w"])[None, :]
        self.intercept_ = np.array([sign * raw["b"]])
        self.objective_ = float(raw["objective"])
        self.lower_bound_ = float(raw["lower_bound"])
        self.gap_ = float(raw["gap"])
        self.stop_ = raw["stop"]
        # AID iterations (each one branch and bound); 1 for the exact solve.
        self.n_iter_ = len(raw["history"]["objective"]) if "history" in raw else 1
        self.transduction_ = np.where(labeled, y, self.predict(X))
        self.fit_report_ = {k: raw[k] for k in ("stop", "nodes", "rust_seconds",
                                               "total_seconds")}
        # 'exact': 'limit' = the branch and bound stopped at max_nodes or bnb_time_limit. 'aid':
        # stopping at max_iter is the method (AID1 by default), but an aggregated branch and
        # bound that hit its limit is not solved.
        if self.algorithm == "exact":
            stop = self.stop_
        else:
            stop = "optimal" if raw["bnb_optimal"] else "limit"
        warn_stop("S3VMClassifier", stop, {"optimal"},
                  "the branch and bound hit max_nodes or bnb_time_limit; increase them")
        return self

    def decision_function(self, X):
        """w'x + b, positive for classes_[1]."""
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        return np.asarray(X @ self.coef_[0]).ravel() + self.intercept_[0]

