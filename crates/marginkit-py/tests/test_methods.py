"""The method estimators (AID, robust outlier path, ODM, ODMC, core-sets) against independent
oracles: scipy's LP solver, scikit-learn's SVC, the optimality conditions and objectives
recomputed in numpy, the CLI's JSON report, and brute-force enclosing balls."""

import functools
import itertools
import json
import os
import shutil
import subprocess

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog
from sklearn.datasets import dump_svmlight_file, make_blobs
from sklearn.metrics import adjusted_rand_score
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.svm import SVC as SkSVC

import marginkit as mk
from marginkit import _core

# ---------------------------------------------------------------- AID: LAD


def _lad_data(n=60, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, d)), 3)
    y = np.round(X @ np.array([1.5, -2.0, 0.5])[:d] + 0.7 + rng.laplace(size=n), 3)
    return X, y


def _lad_linprog(X, y):
    """min sum(u + v) s.t. X b + b0 + u - v = y, u, v >= 0 (HiGHS)."""
    n, d = X.shape
    A = np.hstack([X, np.ones((n, 1)), np.eye(n), -np.eye(n)])
    c = np.concatenate([np.zeros(d + 1), np.ones(2 * n)])
    bounds = [(None, None)] * (d + 1) + [(0, None)] * (2 * n)
    res = linprog(c, A_eq=A, b_eq=y, bounds=bounds, method="highs")
    assert res.status == 0
    return res.fun


@pytest.mark.parametrize("algorithm", ["aid", "lp"])
def test_lad_objective_equals_scipy_linprog(algorithm):
    X, y = _lad_data()
    ref = _lad_linprog(X, y)
    m = mk.LADRegressor(algorithm=algorithm, r0=0.1).fit(X, y)
    obj = np.abs(y - m.predict(X)).sum()
    np.testing.assert_allclose(obj, ref, rtol=1e-7)
    np.testing.assert_allclose(m.objective_, obj, rtol=1e-9)
    if algorithm == "aid":
        assert m.stop_ == "optimal" and m.certified_
        # AID aggregated: more than one iteration, fewer clusters than rows at the start.
        assert m.history_["clusters"][0] < len(y)
        assert m.lower_bound_ <= obj * (1 + 1e-9)


def test_lad_sparse_equals_dense():
    X, y = _lad_data(80, 3, seed=1)
    a = mk.LADRegressor(r0=0.1, random_state=3).fit(X, y)
    b = mk.LADRegressor(r0=0.1, random_state=3).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(a.objective_, b.objective_, rtol=1e-9)


def test_lad_too_few_samples():
    with pytest.raises(ValueError, match="n_samples = 2"):
        mk.LADRegressor().fit(np.ones((2, 3)), np.ones(2))


# ---------------------------------------------------------------- AID: SVM


def _svm_primal(K, coef, f, y_pm, C):
    return 0.5 * coef @ K @ coef + C * np.maximum(0.0, 1.0 - y_pm * f).sum()


def _two_class(n=300, seed=0, sep=1.2):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, 1, 2)
    X = np.round(rng.normal(size=(n, 4)) + sep * np.where(y == 1, -1, 1)[:, None] *
                 np.array([1.0, 0.5, 0.0, 0.0]), 4)
    return X, y


def test_aid_linear_svc_objective_matches_svc():
    X, y = _two_class()
    y_pm = np.where(y == 2, 1.0, -1.0)
    C = 0.5
    ours = mk.AIDSVC(C=C, r0=0.05, gap_tol=1e-6, tol=1e-7).fit(X, y)
    f = ours.decision_function(X)
    w = ours.coef_[0]
    p_ours = 0.5 * w @ w + C * np.maximum(0, 1 - y_pm * f).sum()
    ref = SkSVC(kernel="linear", C=C, tol=1e-8).fit(X, y)
    fr = ref.decision_function(X)
    wr = ref.coef_[0]
    p_ref = 0.5 * wr @ wr + C * np.maximum(0, 1 - y_pm * fr).sum()
    # AID's objective is the returned model's full-data primal; both optima agree to the gap.
    np.testing.assert_allclose(ours.objective_, p_ours, rtol=1e-9)
    assert abs(p_ours - p_ref) <= 2e-5 * p_ref, (p_ours, p_ref)
    assert ours.lower_bound_ <= p_ref * (1 + 1e-6)
    assert ours.history_["clusters"][0] < len(y)
    assert (ours.predict(X) == ref.predict(X)).mean() > 0.99


def test_aid_kernel_svc_objective_matches_svc():
    X, y = _two_class(200, seed=1, sep=0.8)
    y_pm = np.where(y == 2, 1.0, -1.0)
    C, gamma = 1.0, 0.3
    ours = mk.AIDSVC(C=C, kernel="rbf", gamma=gamma, r0=0.05, gap_tol=1e-6, tol=1e-7).fit(X, y)
    ref = SkSVC(kernel="rbf", gamma=gamma, C=C, tol=1e-8).fit(X, y)

    def primal(model):
        sv = model.support_vectors_
        K = rbf_kernel(sv, sv, gamma=gamma)
        return _svm_primal(K, model.dual_coef_[0], model.decision_function(X), y_pm, C)

    p_ours, p_ref = primal(ours), primal(ref)
    np.testing.assert_allclose(ours.objective_, p_ours, rtol=1e-6)
    assert abs(p_ours - p_ref) <= 1e-4 * p_ref, (p_ours, p_ref)


def test_aid_svc_rejects_multiclass():
    X, y = make_blobs(60, centers=3, random_state=0)
    with pytest.raises(ValueError, match="Only binary classification"):
        mk.AIDSVC().fit(X, y)


# ---------------------------------------------------------------- robust SVC/SVR


def _robust_data(n=80, seed=0):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, 2)), 4)
    y = np.where(X[:, 0] + 0.5 * X[:, 1] > 0, 1, -1)
    flip = rng.choice(n, size=n // 10, replace=False)
    y[flip] = -y[flip]
    return X, y


def _robust_conditions(K, beta, y_pm, C, theta, T, tol):
    """Theorem 4 (SVC) from scratch: slack t = 1 - y f, alpha = y beta."""
    f = K @ beta
    t = 1 - y_pm * f
    a = y_pm * beta
    scale = max(1.0, abs(T))
    for ti, ai in zip(t, a):
        if ti < -tol * scale:
            assert abs(ai) <= tol * C
        elif ti <= tol * scale:
            assert -tol * C <= ai <= C * (1 + tol)
        elif ti < T - tol * scale:
            assert abs(ai - C) <= tol * C
        elif ti > T + tol * scale:
            assert abs(ai - C * theta) <= tol * C
        else:
            raise AssertionError(f"a sample sits on the threshold: t = {ti}, T = {T}")
    return f, t


def test_robust_svc_end_of_path_is_locally_optimal_and_objective_matches():
    X, y = _robust_data()
    gamma, C = 0.5, 1.0
    m = mk.RobustSVC(path="theta", Cs=[C], gamma=gamma).fit(X, y)
    assert m.runs_["status"] == ["completed"]
    y_pm = np.where(y == m.classes_[1], 1.0, -1.0)
    K = rbf_kernel(X, X, gamma=gamma)
    beta = m.coef_full_
    # End of the theta path: theta = 0, s = 0, threshold T = 1 - s = 1.
    assert m.param_ == 0.0
    f, t = _robust_conditions(K, beta, y_pm, C, theta=0.0, T=1.0, tol=1e-6)
    np.testing.assert_allclose(m.decision_function(X), f, atol=1e-8)
    loss = np.maximum(t, 0) - np.maximum(t - 1.0, 0)
    obj = 0.5 * beta @ K @ beta + C * loss.sum()
    bp = m.breakpoints_
    k = m.chosen_["breakpoint"]
    np.testing.assert_allclose(bp["objective"][k], obj, rtol=1e-8)
    assert bp["n_outliers"][k] == int((t > 1.0).sum())
    assert bp["locally_optimal"][k]
    # The ramp loss ignores the flipped labels: it calls every one of them an outlier, and on the
    # training points it disagrees with the clean labels less often than the SVM (scikit-learn's
    # SVC at the same C and gamma).
    clean = np.where(X[:, 0] + 0.5 * X[:, 1] > 0, 1, -1)
    flipped = np.flatnonzero(y != clean)
    assert len(flipped) > 0 and np.all(t[flipped] > 1.0), t[flipped]
    svm = SkSVC(C=C, gamma=gamma).fit(X, y)
    assert (m.predict(X) != clean).sum() < (svm.predict(X) != clean).sum()


def test_robust_svr_end_of_path_meets_the_optimality_conditions():
    """Theorem 5 (with the sign corrections), derived from the primal
    min 1/2 beta'K beta + C sum_i min(|r_i|, s) at theta = 0, r = y - K beta, in numpy:
    beta_i = C sign(r_i) for 0 < |r_i| < s, |beta_i| <= C for r_i = 0, 0 for |r_i| > s."""
    rng = np.random.default_rng(21)
    X = np.round(rng.normal(size=(70, 2)), 4)
    y = X[:, 0] - X[:, 1] + 0.1 * rng.normal(size=70)
    out = rng.choice(70, size=7, replace=False)
    y[out] += rng.choice([-4.0, 4.0], size=7)
    gamma, C, s = 0.5, 1.0, 1.0
    m = mk.RobustSVR(path="theta", Cs=[C], gamma=gamma, s=s).fit(X, y)
    assert m.runs_["status"] == ["completed"] and m.param_ == 0.0
    K = rbf_kernel(X, X, gamma=gamma)
    beta = m.coef_full_
    f = K @ beta
    np.testing.assert_allclose(m.predict(X), f, atol=1e-8)
    r = y - f
    t = np.abs(r)
    tol = 1e-6
    on = t <= tol
    inl = (t > tol) & (t < s)
    outl = t > s
    assert not np.any(np.abs(t - s) <= tol), "a sample sits on the threshold"
    assert np.all(np.abs(beta[on]) <= C * (1 + tol))
    np.testing.assert_allclose(beta[inl], C * np.sign(r[inl]), atol=tol * C)
    np.testing.assert_allclose(beta[outl], 0.0, atol=tol * C)
    # The planted outliers are the ones the truncated loss ignores.
    assert set(np.flatnonzero(outl)) >= set(out[np.abs(y[out] - (X[out, 0] - X[out, 1])) > 3])
    obj = 0.5 * beta @ K @ beta + C * np.minimum(t, s).sum()
    k = m.chosen_["breakpoint"]
    np.testing.assert_allclose(m.breakpoints_["objective"][k], obj, rtol=1e-8)
    assert m.breakpoints_["locally_optimal"][k]
    assert m.breakpoints_["n_outliers"][k] == int(outl.sum())


@functools.lru_cache(maxsize=None)
def _cli():
    """The `marginkit` binary: $MARGINKIT_CLI, else the repository's release build, built here with
    `cargo build --release -p marginkit-cli` when absent (cargo finds it up to date otherwise)."""
    if os.environ.get("MARGINKIT_CLI"):
        cli = os.environ["MARGINKIT_CLI"]
        if not (os.path.isfile(cli) and os.access(cli, os.X_OK)):
            pytest.fail(f"MARGINKIT_CLI={cli} is not an executable file")
        return cli
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.normpath(os.path.join(here, "..", "..", ".."))
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(root, "target")
    cli = os.path.join(target, "release", "marginkit")
    if not os.path.isfile(cli):
        cargo = shutil.which("cargo")
        if cargo is None:
            pytest.fail(f"{cli} is not built and cargo is not on PATH: build it with "
                        "`cargo build --release -p marginkit-cli` or set MARGINKIT_CLI")
        r = subprocess.run([cargo, "build", "--release", "-p", "marginkit-cli"], cwd=root,
                           capture_output=True, text=True)
        if r.returncode != 0:
            pytest.fail(f"`cargo build --release -p marginkit-cli` failed:\n{r.stderr[-4000:]}")
    return cli


@pytest.mark.parametrize("task,path", [("svc", "theta"), ("svc", "s"), ("svr", "theta")])
def test_robust_path_equals_cli_json(tmp_path, task, path):
    cli = _cli()
    X, y = _robust_data(60, seed=3)
    Xv, yv = _robust_data(40, seed=4)
    if task == "svr":
        y = np.round(X[:, 0] - X[:, 1] + 0.1 * np.sign(y), 4)
        yv = np.round(Xv[:, 0] - Xv[:, 1], 4)
    train, valid = str(tmp_path / "train.svm"), str(tmp_path / "valid.svm")
    dump_svmlight_file(X, y, train, zero_based=False)
    dump_svmlight_file(Xv, yv, valid, zero_based=False)
    gamma, cs = 0.5, [0.1, 1.0, 10.0]
    out = subprocess.run(
        [cli, "robust", task, str(train), "--path", path, "--valid", str(valid), "-c",
         ",".join(map(str, cs)), "-t", "2", "-g", str(gamma), "--json", "-q"],
        check=True, capture_output=True, text=True)
    ref = json.loads(out.stdout)
    Est = mk.RobustSVC if task == "svc" else mk.RobustSVR
    m = Est(path=path, Cs=cs, gamma=gamma).fit(X, y, Xv, yv)
    bp = m.breakpoints_
    assert len(bp["C"]) == len(ref["breakpoints"])
    for k, r in enumerate(ref["breakpoints"]):
        assert bp["C"][k] == r["c"] and bp["kind"][k] == r["kind"]
        np.testing.assert_allclose(bp[path][k], r[path], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(bp["objective"][k], r["objective"], rtol=1e-9)
        assert bp["n_outliers"][k] == r["n_outliers"]
        assert bool(bp["locally_optimal"][k]) == r["locally_optimal"]
        np.testing.assert_allclose(bp["valid_error"][k], r["valid_error"], rtol=1e-12)
    assert m.C_ == ref["chosen"]["c"]
    np.testing.assert_allclose(m.param_, ref["chosen"][path], rtol=1e-9, atol=1e-12)


def test_robust_keep_path_and_errors():
    X, y = _robust_data(50, seed=5)
    m = mk.RobustSVC(Cs=[1.0], keep_path=True, gamma=1.0).fit(X, y)
    assert m.coef_path_.shape == (len(m.breakpoints_["C"]), len(y))
    np.testing.assert_allclose(m.coef_path_[m.chosen_["breakpoint"]], m.coef_full_)
    with pytest.raises(ValueError, match="theta"):
        mk.RobustSVC(path="x").fit(X, y)
    with pytest.raises(ValueError, match="C must be"):
        mk.RobustSVC(Cs=[-1.0]).fit(X, y)
    with pytest.raises(ValueError, match=r"s = 1"):
        mk.RobustSVC(s=1.0).fit(X, y)


# ---------------------------------------------------------------- ODM


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_odm_primal_equals_dual(kernel):
    X, y = _two_class(150, seed=2, sep=0.7)
    lam, nu, theta, gamma = 10.0, 0.5, 0.2, 0.25
    m = mk.ODMClassifier(lam=lam, nu=nu, theta=theta, kernel=kernel, gamma=gamma,
                         tol=1e-6).fit(X, y)
    n = len(y)
    y_pm = np.where(y == m.classes_[1], 1.0, -1.0)
    z = np.zeros(n)
    z[m.support_] = m.dual_coef_[0]
    K = X @ X.T if kernel == "linear" else rbf_kernel(X, X, gamma=gamma)
    f = K @ z
    np.testing.assert_allclose(m.decision_function(X), f, atol=1e-8)
    wKw = z @ K @ z
    xi = np.maximum(0, 1 - theta - y_pm * f)
    eps = np.maximum(0, y_pm * f - 1 - theta)
    primal = 0.5 * wKw + lam / n * (xi ** 2 + nu * eps ** 2).sum() / (1 - theta) ** 2
    # A dual point from the coefficients: d = y z, alpha1 = d+, alpha2 = d- (at most one of the
    # two constraints of a sample is active), so weak duality bounds the optimum from below.
    d = y_pm * z
    a1, a2 = np.maximum(d, 0), np.maximum(-d, 0)
    c = n * (1 - theta) ** 2 / (4 * lam)
    dual = (-0.5 * wKw - c * (a1 ** 2 + a2 ** 2 / nu).sum() + (1 - theta) * a1.sum()
            - (1 + theta) * a2.sum())
    assert primal - dual >= -1e-9 * abs(primal)
    assert primal - dual <= 1e-5 * abs(primal), (primal, dual)
    np.testing.assert_allclose(m.primal_objective_, primal, rtol=1e-7)
    assert m.duality_gap_ <= 1e-5 * abs(primal)
    np.testing.assert_array_equal(m.intercept_, [0.0])


def test_odm_sample_weight_zero_drops_the_sample():
    X, y = _two_class(80, seed=3)
    w = np.ones(len(y))
    w[:10] = 0.0
    a = mk.ODMClassifier(tol=1e-8).fit(X, y, sample_weight=w)
    # The loss is lam/m sum_i s_i (...) with m counting every row: 70 rows at lam * 70/80.
    b = mk.ODMClassifier(tol=1e-8, gamma=a._gamma, lam=70 / 80).fit(X[10:], y[10:])
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=1e-6)


# ---------------------------------------------------------------- ODMC


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_odmc_recovers_two_separated_blobs(kernel):
    X, y = make_blobs(n_samples=200, centers=[[-4, 0, 0], [4, 1, 0]], cluster_std=1.0,
                      random_state=0)
    m = mk.ODMC(kernel=kernel, random_state=0)
    labels = m.fit_predict(X)
    np.testing.assert_array_equal(labels, m.labels_)
    acc = max((labels == y).mean(), (labels != y).mean())
    assert acc >= 0.99, acc
    assert sorted(m.cluster_sizes_.tolist()) == sorted(np.bincount(labels).tolist())


def test_odmc_three_clusters():
    X, y = make_blobs(n_samples=150, centers=[[-6, 0], [0, 6], [6, 0]], random_state=1)
    labels = mk.ODMC(n_clusters=3, random_state=0).fit_predict(X)
    assert set(labels.tolist()) == {0, 1, 2}
    assert adjusted_rand_score(y, labels) > 0.9


# ---------------------------------------------------------------- core-sets


def _exact_meb_2d(P):
    """Brute force: the smallest circle through 2 (diameter) or 3 points containing all."""
    best = (np.inf, None)

    def consider(c, r2):
        nonlocal best
        if r2 < best[0] and (((P - c) ** 2).sum(axis=1) <= r2 * (1 + 1e-12) + 1e-15).all():
            best = (r2, c)

    for i, j in itertools.combinations(range(len(P)), 2):
        c = (P[i] + P[j]) / 2
        consider(c, ((P[i] - c) ** 2).sum())
    for i, j, k in itertools.combinations(range(len(P)), 3):
        a, b, cc = P[i], P[j], P[k]
        A = 2 * np.array([b - a, cc - a])
        rhs = np.array([b @ b - a @ a, cc @ cc - a @ a])
        if abs(np.linalg.det(A)) < 1e-12:
            continue
        c = np.linalg.solve(A, rhs)
        consider(c, ((a - c) ** 2).sum())
    return np.sqrt(best[0]), best[1]


@pytest.mark.parametrize("eps,n_nodes", [(0.3, 1), (0.1, 1), (0.2, 4)])
def test_meb_radius_within_eps_of_exact_and_covers_every_point(eps, n_nodes):
    P = np.random.default_rng(7).normal(size=(25, 2))
    r_star, _ = _exact_meb_2d(P)
    m = mk.MinimumEnclosingBall(eps=eps, n_nodes=n_nodes, graph="complete",
                                random_state=1).fit(P)
    assert m.agreed_
    # The core-set ball is the exact MEB of a subset: no larger than the exact ball ...
    assert m.radius_ <= r_star * (1 + 1e-9)
    # ... and grown by (1 + eps) it covers every point, so r* <= (1 + eps) radius_.
    dist = np.sqrt(((P - m.center_) ** 2).sum(axis=1))
    assert dist.max() <= (1 + eps) * m.radius_ * (1 + 1e-9)
    assert r_star <= (1 + eps) * m.radius_
    assert len(m.core_set_) == min(int(np.ceil(1 / eps - 1e-9)), len(P))
    np.testing.assert_allclose(m.center_, m.core_weights_ @ P[m.core_points_], atol=1e-12)


def test_meb_with_all_points_in_the_core_set_is_exact():
    P = np.random.default_rng(8).normal(size=(12, 2))
    r_star, c_star = _exact_meb_2d(P)
    m = mk.MinimumEnclosingBall(eps=0.05).fit(P)
    np.testing.assert_allclose(m.radius_, r_star, rtol=1e-6)
    np.testing.assert_allclose(m.center_, c_star, atol=1e-6)


@pytest.mark.parametrize("Est", [mk.CoresetSVDD, mk.CoresetOneClassSVM])
def test_coreset_svdd_ball_covers_the_data(Est):
    X = np.random.default_rng(9).normal(size=(120, 3))
    gamma, eps = 0.2, 0.1
    m = Est(gamma=gamma, eps=eps).fit(X)
    # Feature-space distances to the centre, recomputed from the core-set weights.
    U = X[m.core_points_]
    w = m.core_weights_
    Kxu = rbf_kernel(X, U, gamma=gamma)
    Kuu = rbf_kernel(U, U, gamma=gamma)
    if Est is mk.CoresetSVDD:
        d2 = 1.0 - 2 * Kxu @ w + w @ Kuu @ w
        assert d2.max() <= ((1 + eps) * m.radius_) ** 2 * (1 + 1e-9)
        # The decision is that of the (1 + eps)-grown ball, the one the core-set guarantees.
        np.testing.assert_allclose(m.decision_function(X), ((1 + eps) * m.radius_) ** 2 - d2,
                                   atol=1e-6)
    else:
        np.testing.assert_allclose(m.decision_function(X), Kxu @ w - w @ Kuu @ w - w @ w / m.C,
                                   atol=1e-9)


@pytest.mark.parametrize("eps", [0.1, 0.01])
def test_coreset_svdd_calls_no_training_point_an_outlier(eps):
    """Every training point lies in the (1 + eps)-grown ball, including the core-set ball's own
    support points (on the core-set ball's boundary, where the ungrown ball would score them
    about -1e-13 by rounding)."""
    X = np.random.default_rng(0).normal(size=(60, 3))
    m = mk.CoresetSVDD(eps=eps).fit(X)
    np.testing.assert_array_equal(m.predict(X), np.ones(len(X)))
    d = m.decision_function(X)
    assert d.min() >= 0
    # The support points (on the core-set ball) score ((1 + eps)^2 - 1) r^2, not ~0.
    np.testing.assert_allclose(d[m.support_], ((1 + eps) ** 2 - 1) * m.radius_ ** 2, rtol=1e-6)
    np.testing.assert_allclose(m.intercept_[0], -m.offset_)
    np.testing.assert_allclose(m.score_samples(X) - m.offset_, d)
    # A point far away is an outlier; a wrong feature count is a ValueError.
    assert m.predict(X[:1] + 100.0)[0] == -1
    with pytest.raises(ValueError):
        m.predict(X[:, :2])
    # The MEB's decision is that of the grown ball too: >= 0 on every row.
    b = mk.MinimumEnclosingBall(eps=eps).fit(X)
    assert b.decision_function(X).min() >= 0


def test_coreset_svc_classifies_blobs_and_matches_its_weights():
    X, y = _two_class(300, seed=4, sep=1.5)
    m = mk.CoresetSVC(C=10.0, gamma=0.2, eps=0.01, random_state=0).fit(X, y)
    assert m.score(X, y) > 0.95
    # f(x) = sum_j x_j l_j (K(u_j, x) + 1), from the core-set weights (independent of rho).
    U = X[m.core_points_]
    lab = np.where(y[m.core_points_] == m.classes_[1], 1.0, -1.0)
    f = rbf_kernel(X, U, gamma=0.2) @ (m.core_weights_ * lab) + m.core_weights_ @ lab
    np.testing.assert_allclose(m.decision_function(X), f, atol=1e-9)


def test_coreset_rejects_non_constant_diagonal():
    X = np.random.default_rng(0).normal(size=(30, 3))
    with pytest.raises(ValueError, match="diagonal is not constant"):
        mk.CoresetSVDD(kernel="linear").fit(X)


# ---------------------------------------------------------------- pickling of the method models


@pytest.mark.parametrize("make,sup", [
    (lambda: mk.AIDSVC(kernel="rbf", gamma=0.3), True),
    (lambda: mk.RobustSVC(gamma=0.5), True),
    (lambda: mk.ODMClassifier(), True),
    (lambda: mk.CoresetSVC(), True),
    (lambda: mk.CoresetSVDD(), False),
])
def test_method_models_pickle(make, sup):
    import pickle
    X, y = _two_class(80, seed=6)
    m = make()
    m.fit(X, y) if sup else m.fit(X)
    m2 = pickle.loads(pickle.dumps(m))
    np.testing.assert_array_equal(m.decision_function(X), m2.decision_function(X))


# ---------------------------------------------------------------- S3VM


def _s3vm_objective(X, y, w, b, c_l, c_u):
    f = X @ w + b
    lab = y != -1
    y_pm = np.where(y[lab] == 2, 1.0, -1.0)
    return (0.5 * w @ w + c_l * np.maximum(0, 1 - y_pm * f[lab]).sum()
            + c_u * np.maximum(0, 1 - np.abs(f[~lab])).sum())


def test_s3vm_exact_equals_brute_force_over_labelings():
    """Oracle: for each of the 2^8 labelings of the unlabeled rows the problem is a weighted
    C-SVM (scikit-learn's SVC with per-sample weights); the S3VM optimum is the best of them."""
    rng = np.random.default_rng(11)
    X = np.round(rng.normal(size=(20, 2)) + np.repeat([[-1.5, 0], [1.5, 0]], 10, axis=0), 3)
    y = np.repeat([1, 2], 10)
    unl = rng.choice(20, size=8, replace=False)
    y[unl] = -1
    c_l, c_u = 5.0, 1.0
    best = np.inf
    lab = y != -1
    for signs in itertools.product([1, 2], repeat=len(unl)):
        yy = y.copy()
        yy[unl] = signs
        if len(set(yy.tolist())) < 2:
            continue
        wts = np.where(lab, c_l, c_u)
        ref = SkSVC(kernel="linear", C=1.0, tol=1e-10).fit(X, yy, sample_weight=wts)
        w, b = ref.coef_[0], ref.intercept_[0]
        best = min(best, _s3vm_objective(X, y, w, b, c_l, c_u))
    m = mk.S3VMClassifier(algorithm="exact", C_labeled=c_l, C_unlabeled=c_u).fit(X, y)
    assert m.stop_ == "optimal"
    ours = _s3vm_objective(X, y, m.coef_[0], m.intercept_[0], c_l, c_u)
    np.testing.assert_allclose(m.objective_, ours, rtol=1e-6)
    np.testing.assert_allclose(ours, best, rtol=1e-5)
    assert m.lower_bound_ <= ours * (1 + 1e-6)
    np.testing.assert_array_equal(m.transduction_[lab], y[lab])
    assert set(m.transduction_.tolist()) == {1, 2}
    # AID-S3VM is a heuristic: never below the optimum; its objective is its model's.
    a = mk.S3VMClassifier(algorithm="aid", C_labeled=c_l, C_unlabeled=c_u, max_iter=5).fit(X, y)
    oa = _s3vm_objective(X, y, a.coef_[0], a.intercept_[0], c_l, c_u)
    np.testing.assert_allclose(a.objective_, oa, rtol=1e-6)
    assert oa >= best * (1 - 1e-6)


# ---------------------------------------------------------------- errors carry the Rust message


@pytest.mark.parametrize("make,target,message", [
    (lambda: mk.ODMClassifier(lam=-1), "y", "lambda must be finite and > 0, got -1"),
    (lambda: mk.ODMC(theta=1.0), None, r"theta = 1 is outside \[0, 1\)"),
    (lambda: mk.AIDSVC(C=0), "y", "C must be finite and > 0, got 0"),
    (lambda: mk.LADRegressor(r0=2.0), "x0", r"r0 = 2 is outside \(0, 1\]"),
    (lambda: mk.MinimumEnclosingBall(eps=1.5), None, r"eps = 1.5 is outside \(0, 1\)"),
    (lambda: mk.RobustSVR(s=-1.0), "x0", r"s = -1 is outside \(0, inf\) for robust SVR"),
    (lambda: mk.S3VMClassifier(C_labeled=-1), "y", "C of labeled rows must be finite and > 0"),
    (lambda: mk.ODMC(kernel="rbf", max_dense=10), None, "above the limit of 10 points"),
    # Ranges the library checks (the estimators check only the types).
    (lambda: mk.AIDSVC(max_iter=0), "y", "maximum AID iterations = 0 is outside >= 1"),
    (lambda: mk.LADRegressor(max_iter=0), "x0", "maximum AID iterations = 0 is outside >= 1"),
    (lambda: mk.S3VMClassifier(max_iter=0), "y", "maximum AID iterations = 0 is outside >= 1"),
    (lambda: mk.ODMC(n_iter=0), None, "iterations must be finite and > 0, got 0"),
    (lambda: mk.ODMC(max_rounds=0), None, "max rounds must be finite and > 0, got 0"),
    (lambda: mk.RobustSVC(bias=-1.0), "y", "bias feature B must be finite and > 0, got -1"),
    (lambda: mk.SVCPath(n_Cs=0), "y", "the grid needs at least one point"),
])
def test_method_errors_are_value_errors_with_the_rust_message(make, target, message):
    X, y = _two_class(60)
    args = {"y": (X, y), "x0": (X, X[:, 0]), None: (X,)}[target]
    with pytest.raises(ValueError, match=message):
        make().fit(*args)


# The estimators whose defaults are the library's, by the family of `_core.DEFAULTS` they read.
_LIBRARY_DEFAULTS = [
    (mk.AIDSVC, "aid", ["C", "tol", "gap_tol", "max_iter"]),
    (mk.LADRegressor, "aid", ["max_iter"]),
    (mk.S3VMClassifier, "s3vm", ["C_labeled", "C_unlabeled", "r0", "max_nodes", "bnb_time_limit"]),
    (mk.RobustSVC, "robust", ["s_end", "tol"]),
    (mk.RobustSVR, "robust", ["s_end", "tol"]),
    (mk.ODMClassifier, "odm", ["lam", "nu", "theta"]),
    (mk.ODMC, "odmc", ["lam", "nu", "theta", "n_iter", "max_rounds", "tol", "pool", "max_dense"]),
    (mk.SVCPath, "path", ["C_min", "C_max", "n_Cs"]),
    (mk.MinimumEnclosingBall, "coreset", ["eps", "max_rounds", "graph"]),
    (mk.CoresetSVDD, "coreset", ["eps", "max_rounds", "graph"]),
    (mk.CoresetOneClassSVM, "coreset", ["max_rounds", "graph"]),
    (mk.CoresetSVC, "coreset", ["max_rounds", "graph"]),
]


@pytest.mark.parametrize("cls,family,names", _LIBRARY_DEFAULTS,
                         ids=[c.__name__ for c, _, _ in _LIBRARY_DEFAULTS])
def test_defaults_are_the_librarys(cls, family, names):
    """get_params() of a default estimator (what help() shows) has the library's constants, with
    the Python parameter's type; `_core.DEFAULTS` lists no parameter that no estimator reads."""
    lib = _core.DEFAULTS[family]
    params = cls().get_params()
    for name in names:
        assert params[name] == lib[name], name
        assert type(params[name]) is type(lib[name]), name
    # ODMC's beta='auto' reads the library's beta as its floor (not a signature default).
    read = {(f, n) for _, f, ns in _LIBRARY_DEFAULTS for n in ns} | {("odmc", "beta")}
    assert read == {(f, n) for f, group in _core.DEFAULTS.items() for n in group}


# ---------------------------------------------------------------- early stops warn


@pytest.mark.parametrize("name,fit", [
    ("robust", lambda X, y: mk.RobustSVC(max_events=1).fit(X, y)),
    ("robust_svr", lambda X, y: mk.RobustSVR(max_events=1).fit(X, X[:, 0])),
    ("aid_svc", lambda X, y: mk.AIDSVC(max_iter=1, gap_tol=0.0).fit(X, y)),
    ("lad", lambda X, y: mk.LADRegressor(max_iter=1).fit(
        X, X[:, 0] + np.random.default_rng(0).laplace(size=len(y)))),
    ("s3vm", lambda X, y: mk.S3VMClassifier(algorithm="exact", max_nodes=1).fit(
        X[:40], np.where(np.arange(40) % 2, y[:40], -1))),
    ("odmc", lambda X, y: mk.ODMC(max_rounds=1, n_iter=1).fit(X)),
    ("meb", lambda X, y: mk.MinimumEnclosingBall(n_nodes=5, graph="ring", max_rounds=1).fit(X)),
])
def test_early_stops_raise_convergence_warning(name, fit):
    from sklearn.exceptions import ConvergenceWarning
    X, y = _two_class(200, seed=3, sep=0.5)
    with pytest.warns(ConvergenceWarning, match="stopped before optimality"):
        m = fit(X, y)
    stop = getattr(m, "stop_", None) or getattr(m, "status_", None)
    if name in ("robust", "robust_svr"):
        assert "event_limit" in m.runs_["status"]
    elif name == "meb":
        assert not m.agreed_
    else:
        assert stop not in ("optimal", "converged")


@pytest.mark.parametrize("fit", [
    lambda X, y: mk.RobustSVC().fit(X, y),
    lambda X, y: mk.AIDSVC().fit(X, y),
    lambda X, y: mk.LADRegressor(algorithm="lp").fit(X, X[:, 0] + 0.1 * X[:, 1] ** 2),
    lambda X, y: mk.LADRegressor().fit(X, X[:, 0] + 0.1 * X[:, 1] ** 2),
    lambda X, y: mk.S3VMClassifier(algorithm="exact").fit(
        X[:20], np.where(np.arange(20) % 3, y[:20], -1)),
    lambda X, y: mk.MinimumEnclosingBall(n_nodes=4, graph="complete").fit(X),
])
def test_complete_fits_do_not_warn(fit):
    import warnings
    from sklearn.exceptions import ConvergenceWarning
    X, y = _two_class(100, seed=3, sep=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        fit(X, y)


def test_aid_svc_refit_with_another_kernel_clears_the_other_attributes():
    X, y = _two_class(80, seed=5)
    m = mk.AIDSVC(kernel="rbf", gamma=0.3).fit(X, y)
    assert hasattr(m, "support_") and not hasattr(m, "coef_")
    m.set_params(kernel="linear").fit(X, y)
    assert hasattr(m, "coef_")
    for attr in ("support_", "support_vectors_", "dual_coef_"):
        assert not hasattr(m, attr), attr
    m.set_params(kernel="rbf").fit(X, y)
    assert not hasattr(m, "coef_") and hasattr(m, "dual_coef_")
    with pytest.raises(ValueError, match="engine='dcd' needs kernel='linear'"):
        mk.AIDSVC(kernel="rbf", engine="dcd").fit(X, y)


@pytest.mark.parametrize("make", [
    lambda: mk.AIDSVC(kernel="poly", degree=2 ** 40),
    lambda: mk.AIDSVC(max_iter=2 ** 70),
    lambda: mk.AIDSVC(random_state=2 ** 70),
    lambda: mk.ODMClassifier(max_iter=2 ** 70),
    lambda: mk.SVC(kernel="poly", degree=2 ** 40),
])
def test_huge_integers_are_value_errors(make):
    X, y = _two_class(40, seed=1)
    with pytest.raises(ValueError, match="must be"):
        make().fit(X, y)


@pytest.mark.parametrize("Est", [mk.RobustSVC, mk.RobustSVR])
def test_robust_validation_targets(Est):
    X, y = _robust_data(40, seed=2)
    Xv, yv = X[:10], y[:10].astype(float)
    # A column vector is accepted (raveled, with scikit-learn's DataConversionWarning) ...
    from sklearn.exceptions import DataConversionWarning
    with pytest.warns(DataConversionWarning):
        Est(Cs=[1.0]).fit(X, y.astype(float), Xv, yv[:, None])
    # ... a length mismatch names both arguments.
    with pytest.raises(ValueError, match="X_valid has 10 rows but y_valid has 9"):
        Est(Cs=[1.0]).fit(X, y.astype(float), Xv, yv[:9])


def test_s3vm_predict_is_strictly_positive_for_classes_1():
    X = np.array([[-2.0], [-1.0], [1.0], [2.0], [0.5], [-0.5]])
    y = np.array([0, 0, 1, 1, -1, -1])
    m = mk.S3VMClassifier(algorithm="exact").fit(X, y)
    m.coef_ = np.array([[1.0]])
    m.intercept_ = np.array([0.0])
    # decision 0 -> classes_[0], like the other classifiers.
    assert m.predict(np.array([[0.0]]))[0] == m.classes_[0]
    assert m.predict(np.array([[1e-9]]))[0] == m.classes_[1]


def test_graph_errors_name_the_python_parameter():
    X = np.random.default_rng(0).normal(size=(30, 2))
    with pytest.raises(ValueError, match=r'^graph "bogus"'):
        mk.MinimumEnclosingBall(n_nodes=3, graph="bogus").fit(X)
    with pytest.raises(ValueError, match="^graph er:P"):
        mk.MinimumEnclosingBall(n_nodes=3, graph="er:x").fit(X)
