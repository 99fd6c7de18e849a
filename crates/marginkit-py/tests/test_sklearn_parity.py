"""The same models as scikit-learn's (LIBSVM-based) SVMs at the same parameters, on the shared
data sets: support vectors, coefficients, intercepts, decision values and predictions."""

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn.svm as sk

import marginkit as mk

from conftest import assert_same_predictions

# docs/tolerance-policy.md (TP-1): at the default tol 1e-3, decision values within
# 1e-3 x (1 + |value|) and labels equal except near-ties. Coefficients are not unique to that
# precision (a flat dual, e.g. a linear kernel), so at the default tol they are compared at 1%
# of their scale, and at tight tol (1e-7, test_tight_tolerance_coefficients) at 1e-4.


def _close(a, b):
    np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-3)


def _compare_classifier(ours, ref, Xte, coef_atol=None):
    np.testing.assert_array_equal(ours.classes_, ref.classes_)
    np.testing.assert_array_equal(ours.n_support_, ref.n_support_)
    np.testing.assert_array_equal(ours.support_, ref.support_)
    assert ours.dual_coef_.shape == ref.dual_coef_.shape
    assert ours.intercept_.shape == ref.intercept_.shape
    scale = np.abs(ref.dual_coef_).max()
    np.testing.assert_allclose(ours.dual_coef_, ref.dual_coef_,
                               atol=coef_atol if coef_atol is not None else 1e-2 * scale)
    _close(ours.intercept_, ref.intercept_)
    np.testing.assert_allclose(
        np.asarray(ours.support_vectors_.todense() if sp.issparse(ours.support_vectors_)
                   else ours.support_vectors_),
        np.asarray(ref.support_vectors_.todense() if sp.issparse(ref.support_vectors_)
                   else ref.support_vectors_))
    d_ours, d_ref = ours.decision_function(Xte), ref.decision_function(Xte)
    assert d_ours.shape == d_ref.shape
    _close(d_ours, d_ref)
    assert_same_predictions(ours.predict(Xte), ref.predict(Xte), d_ours)


@pytest.mark.parametrize("kernel,params", [
    ("rbf", dict(C=1.0)),
    ("rbf", dict(C=10.0, gamma=0.05)),
    ("linear", dict(C=0.5)),
    ("poly", dict(C=1.0, degree=3, coef0=1.0, gamma="auto")),
    ("sigmoid", dict(C=1.0, gamma=0.01, coef0=0.0)),
])
def test_svc_binary_heart(heart, kernel, params):
    Xtr, ytr, Xte, _ = heart
    ours = mk.SVC(kernel=kernel, **params).fit(Xtr, ytr)
    ref = sk.SVC(kernel=kernel, **params).fit(Xtr, ytr)
    _compare_classifier(ours, ref, Xte)
    if kernel == "linear":
        _close(ours.coef_, ref.coef_)


@pytest.mark.parametrize("kernel", ["rbf", "linear", "poly"])
def test_tight_tolerance_coefficients(heart, wine, kernel):
    Xtr, ytr, Xte, _ = heart
    ours = mk.SVC(kernel=kernel, C=0.5, tol=1e-7).fit(Xtr, ytr)
    ref = sk.SVC(kernel=kernel, C=0.5, tol=1e-7).fit(Xtr, ytr)
    _compare_classifier(ours, ref, Xte, coef_atol=1e-4)
    X, y = wine
    ours = mk.SVC(kernel=kernel, C=0.5, tol=1e-7).fit(X, y)
    ref = sk.SVC(kernel=kernel, C=0.5, tol=1e-7).fit(X, y)
    _compare_classifier(ours, ref, X, coef_atol=1e-4)


@pytest.mark.parametrize("shape", ["ovr", "ovo"])
@pytest.mark.parametrize("name", ["iris", "wine"])
def test_svc_multiclass(request, name, shape):
    X, y = request.getfixturevalue(name)
    ours = mk.SVC(C=3.0, decision_function_shape=shape).fit(X, y)
    ref = sk.SVC(C=3.0, decision_function_shape=shape).fit(X, y)
    _compare_classifier(ours, ref, X)


def test_svc_multiclass_linear_coef(iris):
    X, y = iris
    ours = mk.SVC(kernel="linear", C=2.0).fit(X, y)
    ref = sk.SVC(kernel="linear", C=2.0).fit(X, y)
    _compare_classifier(ours, ref, X)
    _close(ours.coef_, ref.coef_)


def test_svc_string_labels_and_class_weight(iris):
    X, y = iris
    names = np.array(["setosa", "versicolor", "virginica"])[y.astype(int)]
    for cw in ({"virginica": 3.0}, "balanced"):
        ours = mk.SVC(class_weight=cw).fit(X, names)
        ref = sk.SVC(class_weight=cw).fit(X, names)
        _compare_classifier(ours, ref, X)
        np.testing.assert_allclose(ours.class_weight_, ref.class_weight_)


def test_svc_sample_weight(heart):
    Xtr, ytr, Xte, _ = heart
    w = np.linspace(0.2, 3.0, len(ytr))
    ours = mk.SVC(C=2.0).fit(Xtr, ytr, sample_weight=w)
    ref = sk.SVC(C=2.0).fit(Xtr, ytr, sample_weight=w)
    _compare_classifier(ours, ref, Xte)


def test_nusvc(heart, wine):
    Xtr, ytr, Xte, _ = heart
    _compare_classifier(mk.NuSVC(nu=0.3).fit(Xtr, ytr), sk.NuSVC(nu=0.3).fit(Xtr, ytr), Xte)
    X, y = wine
    _compare_classifier(mk.NuSVC(nu=0.2).fit(X, y), sk.NuSVC(nu=0.2).fit(X, y), X)


def test_sparse_input_equals_dense(heart):
    Xtr, ytr, Xte, _ = heart
    dense = mk.SVC(C=4.0).fit(Xtr, ytr)
    sparse = mk.SVC(C=4.0).fit(sp.csr_matrix(Xtr), ytr)
    assert sp.issparse(sparse.support_vectors_)
    np.testing.assert_array_equal(dense.support_, sparse.support_)
    np.testing.assert_allclose(dense.dual_coef_, sparse.dual_coef_, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dense.decision_function(Xte),
                               sparse.decision_function(sp.csr_matrix(Xte)), atol=1e-12)
    # Unsorted CSR indices are canonicalized on a copy; the caller's matrix is untouched.
    m = sp.csr_matrix(Xte)
    rev = sp.csr_matrix((m.data.copy(), m.indices.copy(), m.indptr.copy()), shape=m.shape)
    for i in range(rev.shape[0]):
        a, b = rev.indptr[i], rev.indptr[i + 1]
        rev.indices[a:b] = rev.indices[a:b][::-1]
        rev.data[a:b] = rev.data[a:b][::-1]
    rev.has_sorted_indices = False
    before = rev.indices.copy()
    np.testing.assert_allclose(sparse.decision_function(rev), dense.decision_function(Xte),
                               atol=1e-12)
    np.testing.assert_array_equal(rev.indices, before)


@pytest.mark.parametrize("cls,params", [
    ("SVR", dict(C=10.0, epsilon=0.5)),
    ("SVR", dict(C=100.0, epsilon=1.0, kernel="linear")),
    ("NuSVR", dict(C=10.0, nu=0.4)),
])
def test_regression_boston(boston, cls, params):
    Xtr, ytr, Xte, _ = boston
    ours = getattr(mk, cls)(**params).fit(Xtr, ytr)
    ref = getattr(sk, cls)(**params).fit(Xtr, ytr)
    np.testing.assert_array_equal(ours.support_, ref.support_)
    assert ours.dual_coef_.shape == ref.dual_coef_.shape
    # Coefficients live on the scale of C; predictions on the scale of y (tens).
    np.testing.assert_allclose(ours.dual_coef_, ref.dual_coef_, atol=1e-3 * params["C"])
    np.testing.assert_allclose(ours.intercept_, ref.intercept_, atol=1e-2)
    np.testing.assert_allclose(ours.predict(Xte), ref.predict(Xte), atol=1e-2)
    if params.get("kernel") == "linear":
        assert ours.coef_.shape == ref.coef_.shape
        np.testing.assert_allclose(ours.coef_, ref.coef_, rtol=1e-3, atol=1e-2)


def test_svr_diabetes_gamma_scale(diabetes):
    X, y = diabetes
    ours = mk.SVR(C=100.0, epsilon=5.0).fit(X, y)
    ref = sk.SVR(C=100.0, epsilon=5.0).fit(X, y)
    assert ours._gamma == pytest.approx(ref._gamma, rel=1e-12)
    np.testing.assert_array_equal(ours.support_, ref.support_)
    np.testing.assert_allclose(ours.predict(X), ref.predict(X), atol=0.1)


def test_one_class(wine):
    X, _ = wine
    ours = mk.OneClassSVM(nu=0.1, gamma=0.1).fit(X)
    ref = sk.OneClassSVM(nu=0.1, gamma=0.1).fit(X)
    np.testing.assert_array_equal(ours.support_, ref.support_)
    np.testing.assert_allclose(ours.dual_coef_, ref.dual_coef_, atol=1e-3)
    np.testing.assert_allclose(ours.offset_, ref.offset_, atol=1e-3)
    np.testing.assert_allclose(ours.decision_function(X), ref.decision_function(X), atol=1e-3)
    np.testing.assert_allclose(ours.score_samples(X), ref.score_samples(X), atol=1e-3)
    assert_same_predictions(ours.predict(X), ref.predict(X), ours.decision_function(X))


def test_precomputed_and_callable_kernel(heart):
    Xtr, ytr, Xte, _ = heart
    Ktr, Kte = Xtr @ Xtr.T, Xte @ Xtr.T
    pre = mk.SVC(kernel="precomputed", C=0.5).fit(Ktr, ytr)
    ref = sk.SVC(kernel="precomputed", C=0.5).fit(Ktr, ytr)
    np.testing.assert_array_equal(pre.support_, ref.support_)
    _close(pre.decision_function(Kte), ref.decision_function(Kte))
    call = mk.SVC(kernel=lambda a, b: a @ b.T, C=0.5).fit(Xtr, ytr)
    np.testing.assert_allclose(call.decision_function(Xte), pre.decision_function(Kte),
                               atol=1e-12)
    with pytest.raises(ValueError, match="square"):
        mk.SVC(kernel="precomputed").fit(Kte, ytr[: Kte.shape[0]])


def test_probability(heart, iris):
    Xtr, ytr, Xte, _ = heart
    ours = mk.SVC(probability=True, random_state=0).fit(Xtr, ytr)
    p = ours.predict_proba(Xte)
    assert p.shape == (len(Xte), 2)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
    # Platt's sigmoid is monotone: the probability of classes_[1] orders like the decision.
    d = ours.decision_function(Xte)
    order = np.argsort(d)
    assert np.all(np.diff(p[order, 1]) >= -1e-12)
    np.testing.assert_allclose(ours.predict_log_proba(Xte), np.log(p))
    X, y = iris
    p3 = mk.SVC(probability=True, random_state=1).fit(X, y).predict_proba(X)
    assert p3.shape == (150, 3)
    assert (p3.argmax(axis=1) == y).mean() > 0.9
    # Same seed, same model; no probability -> no predict_proba attribute.
    again = mk.SVC(probability=True, random_state=0).fit(Xtr, ytr)
    np.testing.assert_array_equal(again.predict_proba(Xte), p)
    assert not hasattr(mk.SVC().fit(Xtr, ytr), "predict_proba")
