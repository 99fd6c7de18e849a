"""Predictions equal scikit-learn's on every data set in the repository's `data/` folder
(classification: SVC and NuSVC on the test split of each binary set and on the multiclass sets;
regression: SVR and NuSVR), at the same parameters. Provenance of the files: `data/README.md`."""

import glob
import os

import numpy as np
import pytest
import sklearn.svm as sk
from sklearn.datasets import load_svmlight_file

import marginkit as mk

from conftest import assert_same_predictions

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.normpath(os.path.join(HERE, "..", "..", "..", "data"))


def _names(sub, suffix):
    names = sorted(os.path.basename(p)[: -len(suffix)]
                   for p in glob.glob(os.path.join(DATA, sub, "*" + suffix)))
    # An empty list would parametrize the tests below away without a failure.
    if not names:
        raise FileNotFoundError(f"no {sub}/*{suffix} files in {DATA} (see data/README.md)")
    return names


def _split(sub, name):
    tr = os.path.join(DATA, sub, f"{name}.train.svm")
    te = os.path.join(DATA, sub, f"{name}.test.svm")
    Xtr, ytr = load_svmlight_file(tr)
    Xte, yte = load_svmlight_file(te, n_features=Xtr.shape[1])
    return Xtr.toarray(), ytr, Xte.toarray(), yte


@pytest.mark.parametrize("name", _names("clf", ".train.svm"))
@pytest.mark.parametrize("cls,params", [("SVC", dict(C=1.0)), ("SVC", dict(C=10.0)),
                                        ("NuSVC", dict(nu=0.15))])
def test_binary_sets(name, cls, params):
    Xtr, ytr, Xte, _ = _split("clf", name)
    ours = getattr(mk, cls)(**params).fit(Xtr, ytr)
    ref = getattr(sk, cls)(**params).fit(Xtr, ytr)
    d_ours, d_ref = ours.decision_function(Xte), ref.decision_function(Xte)
    np.testing.assert_allclose(d_ours, d_ref, rtol=1e-3, atol=1e-3)
    assert_same_predictions(ours.predict(Xte), ref.predict(Xte), d_ours,
                            tol=1e-6 * (1 + np.abs(d_ours).max()))


@pytest.mark.parametrize("name", _names("multiclass", ".scale.svm"))
def test_multiclass_sets(name):
    X, y = load_svmlight_file(os.path.join(DATA, "multiclass", f"{name}.scale.svm"))
    X = X.toarray()
    ours = mk.SVC(C=2.0).fit(X, y)
    ref = sk.SVC(C=2.0).fit(X, y)
    np.testing.assert_array_equal(ours.support_, ref.support_)
    d_ours = ours.decision_function(X)
    np.testing.assert_allclose(d_ours, ref.decision_function(X), rtol=1e-3, atol=1e-3)
    assert_same_predictions(ours.predict(X), ref.predict(X), d_ours)


@pytest.mark.parametrize("name", _names("reg", ".train.svm"))
@pytest.mark.parametrize("cls", ["SVR", "NuSVR"])
def test_regression_sets(name, cls):
    Xtr, ytr, Xte, _ = _split("reg", name)
    # C on the scale of the targets so that the fit is not trivially flat.
    C = float(np.std(ytr)) or 1.0
    params = dict(C=C, epsilon=0.1 * C) if cls == "SVR" else dict(C=C, nu=0.5)
    ours = getattr(mk, cls)(**params).fit(Xtr, ytr)
    ref = getattr(sk, cls)(**params).fit(Xtr, ytr)
    p_ours, p_ref = ours.predict(Xte), ref.predict(Xte)
    # tol 1e-3 bounds the KKT violation; in prediction units that is 1e-3 x C x sum |K| <= C.
    np.testing.assert_allclose(p_ours, p_ref, rtol=1e-3, atol=1e-3 * C)
