#!/usr/bin/env python3
"""RBF C-SVC on large blobs: marginkit's pair SMO (`--solver smo`), its block working-set SMO
(`--solver block`) and Intel oneDAL's SVC (scikit-learn-intelex, CPU "thunder" method), side by side.

    python3 bench/block_smo_bench.py                      # n = 20k, 50k; threads 2; 3 repeats
    python3 bench/block_smo_bench.py --sizes 20000,50000,100000 --threads 1,2

Same data for everyone (bench/run.py's blobs generator, d = 20, seed 20261121, written as LIBSVM text
with %.17g so marginkit reads the doubles oneDAL gets), C = 1, gamma = 0.05, eps 1e-3, 200 MB cache,
shrinking on (marginkit). Times: marginkit's `train_seconds` (solver only, no reading); oneDAL's
`SVC.fit` wall time on an in-memory float64 array. Medians of --repeats runs. Objectives: marginkit's
report; oneDAL's dual objective 1/2 c'Kc - sum|c| recomputed from its dual coefficients and support
vectors (untimed). The machine's load average is printed before and after: timings taken under load
are not comparable with those of a quiet machine.

The first run creates target/venv-onedal from bench/requirements-onedal.txt (pinned) and re-runs
itself inside it; the marginkit binary comes from target/release (build it with
`cargo build --release -p marginkit-cli`) or --marginkit.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
VENV = os.path.join(ROOT, "target", "venv-onedal")
REQ = os.path.join(HERE, "requirements-onedal.txt")


def ensure_venv():
    py = os.path.join(VENV, "bin", "python")
    if os.path.realpath(sys.prefix) == os.path.realpath(VENV):
        return
    if not os.path.exists(py):
        print(f"creating {VENV} ...", file=sys.stderr)
        subprocess.check_call([sys.executable, "-m", "venv", VENV])
        subprocess.check_call([py, "-m", "pip", "install", "-q", "-r", REQ])
    os.execv(py, [py] + sys.argv)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="20000,50000")
    ap.add_argument("--threads", default="2", help="comma-separated thread counts")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=20261121)
    ap.add_argument("--marginkit", default=os.path.join(ROOT, "target", "release", "marginkit"))
    ap.add_argument("--no-onedal", action="store_true")
    return ap.parse_args()


def data(n, seed):
    sys.path.insert(0, HERE)
    import run  # the blobs generator of the main harness
    cache = os.path.join(ROOT, "target", "block-bench")
    os.makedirs(cache, exist_ok=True)
    x, y = run.blobs(n, 20, seed)
    path = os.path.join(cache, f"blobs_n{n}_d20_seed{seed}.svm")
    if not os.path.exists(path):
        run.write_svm(path, x, y)
    return x, y, path


def marginkit(binary, solver, threads, path):
    cmd = [binary, "train", "-s", "0", "-t", "2", "-c", "1", "-g", "0.05", "-e", "0.001", "-m", "200",
           "-h", "1", "-q", "--threads", str(threads), "--solver", solver, "--json", path, path + ".model"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rep = json.loads(out)
    obj = rep["objective"][0] if isinstance(rep["objective"], list) else rep["objective"]
    return rep["train_seconds"], obj


def onedal_objective(svc, x, gamma):
    import numpy as np
    c = svc.dual_coef_.ravel()
    sv = svc.support_vectors_
    nrm = (sv * sv).sum(axis=1)
    quad = 0.0
    for lo in range(0, len(c), 2048):
        blk = sv[lo:lo + 2048]
        d2 = nrm[lo:lo + 2048, None] + nrm[None, :] - 2.0 * blk @ sv.T
        quad += c[lo:lo + 2048] @ (np.exp(-gamma * np.maximum(d2, 0.0)) @ c)
    return 0.5 * quad - np.abs(c).sum()


def onedal(x, y, threads):
    try:
        import daal4py
        daal4py.daalinit(threads)
    except ImportError:
        pass
    from sklearnex.svm import SVC
    svc = SVC(C=1.0, kernel="rbf", gamma=0.05, tol=1e-3, cache_size=200, shrinking=True)
    t = time.perf_counter()
    svc.fit(x, y)
    return time.perf_counter() - t, svc


def main():
    ensure_venv()
    args = parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    threads = [int(t) for t in args.threads.split(",")]
    print(f"load average before: {os.getloadavg()}", file=sys.stderr)
    rows = []
    for n in sizes:
        x, y, path = data(n, args.seed)
        for t in threads:
            res = {}
            for solver in ("smo", "block"):
                runs = [marginkit(args.marginkit, solver, t, path) for _ in range(args.repeats)]
                res[solver] = (statistics.median(r[0] for r in runs), runs[0][1])
                print(f"n={n} threads={t} {solver}: {[round(r[0], 2) for r in runs]}", file=sys.stderr)
            if not args.no_onedal:
                onedal(x[:2000], y[:2000], t)  # warm-up (library loading)
                times, svc = [], None
                for _ in range(args.repeats):
                    s, svc = onedal(x, y, t)
                    times.append(s)
                print(f"n={n} threads={t} oneDAL: {[round(s, 2) for s in times]}", file=sys.stderr)
                res["onedal"] = (statistics.median(times), onedal_objective(svc, x, 0.05))
            rows.append((n, t, res))
    print(f"load average after: {os.getloadavg()}", file=sys.stderr)
    print("| n | threads | smo s | block s | oneDAL s | block/smo | smo/oneDAL | block/oneDAL "
          "| objective smo | objective block | objective oneDAL |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for n, t, r in rows:
        od = r.get("onedal", (float("nan"), float("nan")))
        print(f"| {n} | {t} | {r['smo'][0]:.2f} | {r['block'][0]:.2f} | {od[0]:.2f} | "
              f"{r['block'][0] / r['smo'][0]:.2f} | {r['smo'][0] / od[0]:.2f} | {r['block'][0] / od[0]:.2f} | "
              f"{r['smo'][1]:.6f} | {r['block'][1]:.6f} | {od[1]:.6f} |")


if __name__ == "__main__":
    main()
