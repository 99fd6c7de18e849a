"""Shared pieces of the method estimators: binary targets, kernel-expansion models from the core."""

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ._common import check_choice, check_int, check_real, resolve_gamma, to_core

KERNELS = {"linear", "poly", "rbf", "sigmoid"}


def binary_targets(est, y):
    """Sets `classes_` and returns y as +-1 (+1 = classes_[1]); two classes only."""
    check_classification_targets(y)
    est.classes_, y_enc = np.unique(y, return_inverse=True)
    if len(est.classes_) != 2:
        raise ValueError(
            f"Only binary classification is supported. {type(est).__name__} is a two-class "
            f"method; the data has {len(est.classes_)} classes"
        )
    return np.where(y_enc == 1, 1.0, -1.0)


def kernel_args(est, X):
    """(kernel, gamma, coef0, degree) for the core, gamma resolved like scikit-learn's."""
    check_choice("kernel", est.kernel, KERNELS)
    est._gamma = float(resolve_gamma(est.gamma, X))
    return (est.kernel, est._gamma, check_real("coef0", est.coef0),
            check_int("degree", est.degree, low=0, high=(1 << 32) - 1))


def sign_of(labels):
    """+1 when the core's positive class (labels[0]) is +1 = classes_[1], else -1."""
    return 1.0 if len(labels) == 0 or labels[0] == 1.0 else -1.0


class KernelExpansionMixin:
    """A fitted kernel expansion `f(x) = sum_j dual_coef_j K(sv_j, x) + intercept_` held by the
    core's model handle; `_sign` turns the core's orientation into scikit-learn's."""

    def _set_expansion(self, handle, raw, X, sign):
        self._handle = handle
        self._sign = float(sign)
        self.support_ = np.asarray(raw["sv_indices"], dtype=np.int32)
        self.support_vectors_ = X[self.support_]
        self.dual_coef_ = self._sign * np.asarray(raw["sv_coef"])
        self.intercept_ = -self._sign * np.asarray(raw["rho"])

    def _expansion(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, order="C",
                          reset=False)
        return self._sign * self._handle.decision_values(to_core(X))[:, 0]


def classifier_tags(tags):
    tags.input_tags.sparse = True
    tags.classifier_tags.multi_class = False
    return tags


class BinaryClassifierMixin(ClassifierMixin):
    """A two-class classifier whose `decision_function` is positive for `classes_[1]`."""

    def predict(self, X):
        """Class labels."""
        check_is_fitted(self)
        return self.classes_[(self.decision_function(X) > 0).astype(np.intp)]

    def __sklearn_tags__(self):
        return classifier_tags(super().__sklearn_tags__())
