import os

import numpy as np
import pytest
from sklearn.datasets import load_svmlight_file

DATA = os.path.join(os.path.dirname(__file__), "data")


def load(name, n_features=None, dense=True):
    X, y = load_svmlight_file(os.path.join(DATA, name), n_features=n_features)
    return (X.toarray() if dense else X.tocsr()), y


@pytest.fixture(scope="session")
def heart():
    Xtr, ytr = load("heart_scale.train.svm", n_features=13)
    Xte, yte = load("heart_scale.test.svm", n_features=13)
    return Xtr, ytr, Xte, yte


@pytest.fixture(scope="session")
def iris():
    return load("iris.scale.svm", n_features=4)


@pytest.fixture(scope="session")
def wine():
    return load("wine.scale.svm", n_features=13)


@pytest.fixture(scope="session")
def boston():
    Xtr, ytr = load("boston.train.svm", n_features=13)
    Xte, yte = load("boston.test.svm", n_features=13)
    return Xtr, ytr, Xte, yte


@pytest.fixture(scope="session")
def diabetes():
    return load("diabetes.scale.svm", n_features=10)


def assert_same_predictions(ours, ref, dec_ours=None, tol=1e-6):
    """Equal labels, except where the decision value is within tol of a tie (a flip there is a
    solver-tolerance effect, not a different model); at most one such sample is allowed."""
    ours, ref = np.asarray(ours), np.asarray(ref)
    diff = ours != ref
    if dec_ours is not None and diff.any():
        d = np.abs(np.asarray(dec_ours))
        if d.ndim > 1:
            d = np.min(d, axis=1)
        assert (d[diff] < tol).all() and diff.sum() <= 1, (np.flatnonzero(diff), d[diff])
    else:
        assert not diff.any(), np.flatnonzero(diff)
