#!/usr/bin/env python3
"""marginkit's Python estimators against scikit-learn's, from Python, on the same data and parameters.

    python bench/py_bench.py                 # full sizes, medians of 3
    python bench/py_bench.py --quick         # small sizes, one repeat (smoke test)

Needs an interpreter with `marginkit` installed (`pip install ./crates/marginkit-py`) and the pinned
peers (`pip install -r crates/marginkit-py/requirements-test.txt`; scikit-learn 1.9.1).

Cases (the data generator is bench/run.py's `blobs`: two Gaussian blobs N(+-mu/2, I), Bayes error 0.1,
5% labels flipped, unscaled; the same seeds as bench/run.py):
- SVC RBF: C = 1, gamma = 1/d, tol 1e-3, cache 200 MB, shrinking on, on n = 10,000 and 20,000, d = 20.
- LinearSVC: L1 loss (hinge) and L2 loss (squared hinge), C = 1, tol 0.1, intercept_scaling 1,
  max_iter 1000, on n = 100,000, d = 20.

Columns: fit wall time of marginkit (`est.fit`, everything from Python's view) and of scikit-learn, their
ratio (< 1: marginkit faster), and the binding's overhead: wall time of `est.fit` minus the time spent
inside the Rust training call (`fit_report_["rust_seconds"]`, measured in Rust around
`svm::fit` / `svm::linear::fit` with the GIL released), as a fraction of the wall time. The overhead
is input validation (scikit-learn's `validate_data`), the one copy of X into the library's storage, the
label encoding and building the fitted attributes. Agreement: fraction of equal training-set predictions.
"""

import argparse
import os
import platform
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import blobs  # noqa: E402  (the shared synthetic-data generator)

SEED = 20261121


def timed_fit(est, X, y):
    t0 = time.perf_counter()
    est.fit(X, y)
    return time.perf_counter() - t0


def bench(name, make_mk, make_sk, X, y, repeats):
    mk_wall, mk_rust, sk_wall = [], [], []
    for _ in range(repeats):
        m = make_mk()
        mk_wall.append(timed_fit(m, X, y))
        mk_rust.append(m.fit_report_["rust_seconds"])
        s = make_sk()
        sk_wall.append(timed_fit(s, X, y))
    agree = float(np.mean(m.predict(X) == s.predict(X)))
    w, r, k = (statistics.median(v) for v in (mk_wall, mk_rust, sk_wall))
    over = [(a - b) / a for a, b in zip(mk_wall, mk_rust)]
    return {
        "case": name, "n": X.shape[0], "d": X.shape[1], "mk": w, "rust": r, "sk": k,
        "ratio": w / k, "overhead": statistics.median(over), "overhead_s": w - r, "agree": agree,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes, 1 repeat")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    import sklearn
    import sklearn.svm as sk

    import marginkit as mk

    reps = 1 if args.quick else args.repeats
    rows = []
    for n in ((2000,) if args.quick else (10000, 20000)):
        X, y = blobs(n, 20, SEED)
        g = 1.0 / 20
        kw = dict(C=1.0, kernel="rbf", gamma=g, tol=1e-3, cache_size=200, shrinking=True)
        print(f"svc n={n} ...", file=sys.stderr)
        rows.append(bench(f"SVC rbf blobs{n // 1000}k", lambda: mk.SVC(**kw), lambda: sk.SVC(**kw),
                          X, y, reps))
    n = 10000 if args.quick else 100000
    X, y = blobs(n, 20, SEED + 1)
    for loss in ("hinge", "squared_hinge"):
        kw = dict(C=1.0, loss=loss, dual=True, tol=0.1, fit_intercept=True, intercept_scaling=1.0,
                  random_state=0, max_iter=1000)
        print(f"linearsvc {loss} n={n} ...", file=sys.stderr)
        rows.append(bench(f"LinearSVC {loss} blobs{n // 1000}k", lambda: mk.LinearSVC(**kw),
                          lambda: sk.LinearSVC(**kw), X, y, reps))

    print(f"Python {platform.python_version()}, scikit-learn {sklearn.__version__}, numpy {np.__version__}, "
          f"marginkit {mk.__version__}; {os.cpu_count()} CPUs; medians of {reps}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print()
    print("| case | n x d | marginkit fit s | sklearn fit s | ratio (< 1: marginkit faster) | inside Rust s | "
          "binding overhead (s, % of fit) | equal train predictions |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['case']} | {r['n']:,} x {r['d']} | {r['mk']:.3f} | {r['sk']:.3f} | {r['ratio']:.2f} | "
              f"{r['rust']:.3f} | {r['overhead_s']:.4f} s, {100 * r['overhead']:.2f}% | {100 * r['agree']:.2f}% |")


if __name__ == "__main__":
    main()
