#!/usr/bin/env python3
"""Prediction with an RBF C-SVC: marginkit's decision values (`marginkit predict`), Intel oneDAL's
SVC.predict (scikit-learn-intelex) and LIBSVM's svm_predict_values, on the same test rows.

    python3 bench/predict_bench.py                    # n = 20,000 train, 4,000 test; threads 1,2; 3 repeats
    python3 bench/predict_bench.py --quick            # tiny smoke run (2,000 / 400, 1 repeat)
    python3 bench/predict_bench.py --threads 2 --repeats 5

Data: bench/run.py's blobs generator, d = 20, seed 20261121: n_train + n_test rows, the first n_train
train, the rest test, written as LIBSVM text with %.17g (marginkit reads the doubles the peers get).
Model: `marginkit train -s 0 -t 2 -c 1 -g 0.05 -e 0.001 -m 200` (untimed); marginkit and LIBSVM
predict with this very model file (LIBSVM's text format). oneDAL cannot load a LIBSVM model, so its
SVC is fitted on the same rows with the same settings (C = 1, gamma = 0.05, tol 1e-3): the dual
optimum is the same to the tolerance, and the table prints both models' numbers of support vectors.

Times (medians of --repeats, decision-value computation only, reading excluded):
- marginkit: the `predict_seconds` of `marginkit predict --threads N --json` (decision values and
  votes; reading the model and the data and writing the predictions are not in it);
- oneDAL: the wall time of `SVC.predict(X)` on an in-memory float64 array, after one untimed
  warm-up call, with `daal4py.daalinit(N)` threads, in a child process whose MKL and OpenMP pools
  have N threads (bench/run.py pins them to one in this process);
- LIBSVM: the wall time of `svm_predict_values` over the test rows, converted to LIBSVM's node
  arrays beforehand (untimed); LIBSVM is single-threaded, so its time is the same for every N.
marginkit's and LIBSVM's labels from the same model are compared and the number of differing rows
printed. The load average before and after is printed and written to the page
(--out): timings taken under load are not comparable with those of a quiet machine.

    python3 bench/predict_bench.py --out bench/results/predict.md   # the results page

The first run creates target/venv-onedal from bench/requirements-onedal.txt (pinned; reinstalled when
that file changes) and re-runs itself inside it; the marginkit binary is found as bench/pages.py says
(--marginkit, $CARGO_TARGET_DIR or target/release; build it with `cargo build --release -p marginkit-cli`).
"""
import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import pages  # noqa: E402

GAMMA = 0.05
PACKAGES = ("scikit-learn-intelex", "daal", "scikit-learn", "numpy", "libsvm-official")


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n-train", type=int, default=20000)
    ap.add_argument("--n-test", type=int, default=4000)
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=20261121)
    ap.add_argument("--marginkit")
    ap.add_argument("--quick", action="store_true", help="smoke run: 2,000 train and 400 test rows, 1 repeat")
    ap.add_argument("--out", help="write the results page (Markdown) here")
    ap.add_argument("--no-onedal", action="store_true")
    ap.add_argument("--no-libsvm", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.n_train, args.n_test, args.repeats = 2000, 400, 1
    return args


def data(n_train, n_test, seed):
    import run  # the blobs generator of the main harness
    cache = os.path.join(ROOT, "target", "predict-bench")
    os.makedirs(cache, exist_ok=True)
    x, y = run.blobs(n_train + n_test, 20, seed)
    stem = os.path.join(cache, f"blobs_n{n_train}+{n_test}_d20_seed{seed}")
    parts = {}
    for name, lo, hi in (("train", 0, n_train), ("test", n_train, n_train + n_test)):
        path = f"{stem}.{name}.svm"
        if not os.path.exists(path):
            run.write_svm(path, x[lo:hi], y[lo:hi])
        parts[name] = (x[lo:hi], y[lo:hi], path)
    return parts, stem


def marginkit_train(binary, train_path, model_path):
    cmd = [binary, "train", "-s", "0", "-t", "2", "-c", "1", "-g", str(GAMMA), "-e", "0.001", "-m", "200",
           "-h", "1", "-q", "--json", train_path, model_path]
    rep = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    return rep.get("n_sv", rep.get("total_sv"))


def marginkit_predict(binary, threads, test_path, model_path, out_path):
    cmd = [binary, "predict", "-q", "--threads", str(threads), "--json", test_path, model_path, out_path]
    t = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - t
    return json.loads(out)["predict_seconds"], wall


def total_sv(model_path):
    with open(model_path) as f:
        for line in f:
            if line.startswith("total_sv "):
                return int(line.split()[1])
            if line.strip() == "SV":
                break
    return None


def libsvm_predict(model_path, x, repeats):
    from libsvm.svm import gen_svm_nodearray, libsvm as libsvm_c
    from libsvm.svmutil import svm_load_model

    m = svm_load_model(model_path)
    rows = [gen_svm_nodearray({j + 1: float(v) for j, v in enumerate(r) if v != 0.0})[0] for r in x]
    nr = m.get_nr_class()
    dec = (ctypes.c_double * max(1, nr * (nr - 1) // 2))()
    times, labels = [], []
    for _ in range(repeats):
        labels = []
        t = time.perf_counter()
        for xi in rows:
            labels.append(libsvm_c.svm_predict_values(m, xi, dec))
        times.append(time.perf_counter() - t)
    return times, labels


def onedal_fit(x, y, threads):
    try:
        import daal4py
        daal4py.daalinit(threads)
    except ImportError:
        pass
    from sklearnex.svm import SVC
    svc = SVC(C=1.0, kernel="rbf", gamma=GAMMA, tol=1e-3, cache_size=200, shrinking=True)
    svc.fit(x, y)
    return svc


def onedal_predict(svc, x, threads, repeats):
    try:
        import daal4py
        daal4py.daalinit(threads)
    except ImportError:
        pass
    svc.predict(x)  # warm-up (library loading, thread pool)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        svc.predict(x)
        times.append(time.perf_counter() - t)
    return times


def onedal_series(args, threads):
    """oneDAL's predict times at `threads` and its model's support vectors, from a child process
    whose MKL and OpenMP pools have `threads` threads (`pages.run_child`: this process has them
    pinned to one), which fits (untimed) and predicts."""
    spec = {"n_train": args.n_train, "n_test": args.n_test, "seed": args.seed, "threads": threads,
            "repeats": args.repeats}
    res = pages.run_child(spec, threads)
    return res["times"], res["n_sv"]


def onedal_child(spec):
    parts, _ = data(spec["n_train"], spec["n_test"], spec["seed"])
    (xtr, ytr, _), (xte, _, _) = parts["train"], parts["test"]
    svc = onedal_fit(xtr, ytr, spec["threads"])
    times = onedal_predict(svc, xte, spec["threads"], spec["repeats"])
    print(json.dumps({"times": times, "n_sv": len(svc.support_vectors_)}))


def main():
    pages.ensure_venv("venv-onedal", "requirements-onedal.txt")
    spec = pages.child_spec()
    if spec is not None:
        onedal_child(spec)
        return
    args = parse_args()
    args.marginkit = pages.find_marginkit(args.marginkit)
    threads = [int(t) for t in args.threads.split(",")]
    page = pages.Page("Prediction: marginkit predict against oneDAL SVC.predict and LIBSVM")
    parts, stem = data(args.n_train, args.n_test, args.seed)
    (_, _, train_path), (xte, _, test_path) = parts["train"], parts["test"]
    model_path = stem + ".model"
    marginkit_train(args.marginkit, train_path, model_path)
    n_sv = total_sv(model_path)
    out_path = stem + ".pred"

    lib_med, lib_labels = float("nan"), None
    if not args.no_libsvm:
        times, lib_labels = libsvm_predict(model_path, xte, args.repeats)
        lib_med = statistics.median(times)
        print(f"LIBSVM: {[round(s, 3) for s in times]}", file=sys.stderr)
    onedal_sv = None

    rows = []
    for t in threads:
        runs = [marginkit_predict(args.marginkit, t, test_path, model_path, out_path) for _ in range(args.repeats)]
        mk = statistics.median(r[0] for r in runs)
        wall = statistics.median(r[1] for r in runs)
        print(f"threads={t} marginkit predict_seconds: {[round(r[0], 3) for r in runs]}", file=sys.stderr)
        od = float("nan")
        if not args.no_onedal:
            times, onedal_sv = onedal_series(args, t)
            od = statistics.median(times)
            print(f"threads={t} oneDAL: {[round(s, 3) for s in times]}", file=sys.stderr)
        rows.append((t, mk, wall, od))
    differ = None
    if lib_labels is not None:
        with open(out_path) as f:
            ours = [float(line) for line in f]
        differ = sum(1 for a, b in zip(ours, lib_labels) if a != b)

    out = [f"RBF C-SVC on blobs d = 20 (seed {args.seed}), {args.n_train:,} train / {args.n_test:,} test rows, "
           f"C = 1, gamma = {GAMMA}, eps 0.001; {'one run' if args.repeats == 1 else f'medians of {args.repeats}'}, seconds of decision-value computation "
           "(marginkit's `predict_seconds`; the process wall time of `marginkit predict` beside it). "
           f"Support vectors: marginkit/LIBSVM model {n_sv}, oneDAL model {onedal_sv}; labels differing between "
           f"marginkit and LIBSVM (same model): {differ}. LIBSVM is single-threaded: its time stands in every row.",
           "",
           "| threads | marginkit predict s | marginkit process wall s | oneDAL predict s | LIBSVM predict s "
           "| marginkit/oneDAL | marginkit/LIBSVM |",
           "|---|---|---|---|---|---|---|"]
    for t, mk, wall, od in rows:
        out.append(f"| {t} | {mk:.3g} | {wall:.3g} | {od:.3g} | {lib_med:.3g} | {mk / od:.2f} | {mk / lib_med:.2f} |")
    smoke = None
    if args.quick:
        smoke = (f"n = {args.n_train:,} train / {args.n_test:,} test smoke run",
                 "python3 bench/predict_bench.py --out bench/results/predict.md")
    page.write(args.out, "\n".join(out), PACKAGES, smoke)


if __name__ == "__main__":
    main()
