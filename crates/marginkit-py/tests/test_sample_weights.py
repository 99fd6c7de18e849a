"""Integer sample weights equal repeated rows, for every estimator whose fit takes sample_weight.

Weight w on a row gives the optimum of the data set with that row repeated w times: the same
decision values (to 1e-6 relative) from a tight solve (tol 1e-10) with a fixed gamma (gamma='scale'
uses the unweighted feature variance, which repetition changes). ODMClassifier normalizes its loss
by the number of rows (lam / m), so the weighted fit uses lam * m / sum(w).
"""

import numpy as np
import pytest

import marginkit as mk


def weights_and_repeated(X, y):
    w = (np.arange(len(y)) % 3 + 1).astype(float)
    idx = np.repeat(np.arange(len(y)), w.astype(int))
    return w, X[idx], y[idx]


def assert_same(a, b):
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


@pytest.fixture(scope="module")
def binary(heart):
    Xtr, ytr, Xte, _ = heart
    return Xtr[:90], ytr[:90], Xte


@pytest.fixture(scope="module")
def regression(heart):
    Xtr, _, Xte, _ = heart
    X = Xtr[:90]
    y = X[:, 0] + 0.5 * X[:, 1] - 0.25 * X[:, 4]
    return X, y, Xte


KERNEL_CLASSIFIERS = [
    ("SVC", lambda: mk.SVC(C=3.0, gamma=0.1, tol=1e-10)),
    ("NuSVC", lambda: mk.NuSVC(nu=0.3, gamma=0.1, tol=1e-10)),
]


@pytest.mark.parametrize("name,make", KERNEL_CLASSIFIERS, ids=[n for n, _ in KERNEL_CLASSIFIERS])
def test_kernel_classifiers(binary, name, make):
    X, y, Xte = binary
    w, Xr, yr = weights_and_repeated(X, y)
    a = make().fit(X, y, sample_weight=w)
    b = make().fit(Xr, yr)
    assert_same(a.decision_function(Xte), b.decision_function(Xte))


def test_multiclass_svc(iris):
    X, y = iris
    w, Xr, yr = weights_and_repeated(X, y)
    a = mk.SVC(C=3.0, gamma=0.5, tol=1e-10).fit(X, y, sample_weight=w)
    b = mk.SVC(C=3.0, gamma=0.5, tol=1e-10).fit(Xr, yr)
    assert_same(a.decision_function(X), b.decision_function(X))


REGRESSORS = [
    ("SVR", lambda: mk.SVR(C=5.0, epsilon=0.1, gamma=0.1, tol=1e-10)),
    ("NuSVR", lambda: mk.NuSVR(C=5.0, nu=0.3, gamma=0.1, tol=1e-10)),
    ("LinearSVR-l1", lambda: mk.LinearSVR(C=0.5, epsilon=0.1, tol=1e-10, max_iter=1_000_000)),
    ("LinearSVR-l2", lambda: mk.LinearSVR(C=0.5, epsilon=0.1, loss="squared_epsilon_insensitive",
                                          tol=1e-10, max_iter=1_000_000)),
]


@pytest.mark.parametrize("name,make", REGRESSORS, ids=[n for n, _ in REGRESSORS])
def test_regressors(regression, name, make):
    X, y, Xte = regression
    w, Xr, yr = weights_and_repeated(X, y)
    a = make().fit(X, y, sample_weight=w)
    b = make().fit(Xr, yr)
    assert_same(a.predict(Xte), b.predict(Xte))


LINEAR_CLASSIFIERS = [
    ("LinearSVC-l2", lambda: mk.LinearSVC(C=0.5, tol=1e-10, max_iter=1_000_000)),
    ("LinearSVC-l1", lambda: mk.LinearSVC(C=0.5, loss="hinge", tol=1e-10, max_iter=1_000_000)),
]


@pytest.mark.parametrize("name,make", LINEAR_CLASSIFIERS, ids=[n for n, _ in LINEAR_CLASSIFIERS])
def test_linear_classifiers(binary, name, make):
    X, y, Xte = binary
    w, Xr, yr = weights_and_repeated(X, y)
    a = make().fit(X, y, sample_weight=w)
    b = make().fit(Xr, yr)
    assert_same(a.decision_function(Xte), b.decision_function(Xte))


def test_one_class(binary):
    X, _, Xte = binary
    w, Xr, _ = weights_and_repeated(X, np.zeros(len(X)))
    a = mk.OneClassSVM(nu=0.3, gamma=0.1, tol=1e-10).fit(X, sample_weight=w)
    b = mk.OneClassSVM(nu=0.3, gamma=0.1, tol=1e-10).fit(Xr)
    assert_same(a.decision_function(Xte), b.decision_function(Xte))


def test_odm_classifier_with_lambda_scaled_by_the_row_count(binary):
    X, y, Xte = binary
    w, Xr, yr = weights_and_repeated(X, y)
    lam = 10.0
    a = mk.ODMClassifier(lam=lam * len(y) / w.sum(), gamma=0.1, tol=1e-10).fit(
        X, y, sample_weight=w)
    b = mk.ODMClassifier(lam=lam, gamma=0.1, tol=1e-10).fit(Xr, yr)
    assert_same(a.decision_function(Xte), b.decision_function(Xte))
    np.testing.assert_allclose(a.primal_objective_, b.primal_objective_, rtol=1e-8)
