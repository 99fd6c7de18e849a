#!/usr/bin/env python3
"""Prediction with an RBF C-SVC: marginkit's decision values (`marginkit predict`), Intel oneDAL's
SVC.predict (scikit-learn-intelex) and LIBSVM's svm_predict_values, on the same test rows.

    python3 bench/predict_bench.py                    # n = 20,000 train, 4,000 test; threads 1,2; 3 repeats
    python3 bench/predict_bench.py --quick            # tiny smoke run (2,000 / 400, 1 repeat)
    python3 bench/predict_bench.py --threads 2 --repeats 5
    python3 bench/predict_bench.py --data fashion-mnist   # 20,000 train, 10,000 test Fashion-MNIST rows

Data (--data): blobs, bench/run.py's blobs generator, d = 20, seed 20261121, gamma = 0.05 (the
default); or fashion-mnist, the real Fashion-MNIST images as bench/block_smo_bench.py reads them
(pixels / 256, upper-body garments against the rest, --fashion-mnist-dir), gamma = 0.01. n_train +
n_test rows, the first n_train train, the rest test, written as LIBSVM text with %.17g (marginkit reads
the doubles the peers get). Model: `marginkit train -s 0 -t 2 -c 1 -g GAMMA -e 0.001 -m 200` (untimed);
marginkit and LIBSVM predict with this very model file (LIBSVM's text format). oneDAL cannot load a
LIBSVM model, so its SVC is fitted on the same rows with the same settings (C = 1, the same gamma, tol
1e-3): the dual optimum is the same to the tolerance, and the table prints both models' numbers of
support vectors.

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

# --data: name -> (description on the page, RBF gamma, default n_train, default n_test)
DATASETS = {
    "blobs": ("blobs d = 20", 0.05, 20000, 4000),
    "fashion-mnist": ("Fashion-MNIST (d = 784, pixels / 256, upper-body garments against the rest)",
                      0.01, 20000, 10000),
}
GAMMA = None  # the --data set's gamma, set by parse_args and onedal_child
PACKAGES = ("scikit-learn-intelex", "daal", "scikit-learn", "numpy", "libsvm-official")


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="blobs", choices=sorted(DATASETS), help="the data set (default blobs)")
    ap.add_argument("--fashion-mnist-dir", default=os.path.join("/usr", "share", "datasets", "fashion-mnist"),
                    help="--data fashion-mnist: folder of the four *-ubyte.gz files (default: the Debian "
                         "package's)")
    ap.add_argument("--n-train", type=int, help="training rows (default: 20,000)")
    ap.add_argument("--n-test", type=int, help="test rows (default: 4,000 blobs, 10,000 Fashion-MNIST)")
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=20261121)
    ap.add_argument("--marginkit")
    ap.add_argument("--quick", action="store_true", help="smoke run: 2,000 train and 400 test rows, 1 repeat")
    ap.add_argument("--out", help="write the results page (Markdown) here")
    ap.add_argument("--no-onedal", action="store_true")
    ap.add_argument("--no-libsvm", action="store_true")
    args = ap.parse_args()
    global GAMMA
    args.described, GAMMA, n_train, n_test = DATASETS[args.data]
    args.n_train = args.n_train or n_train
    args.n_test = args.n_test or n_test
    if args.quick:
        args.n_train, args.n_test, args.repeats = 2000, 400, 1
    if args.data == "fashion-mnist":
        import block_smo_bench
        missing = [f for f in block_smo_bench.FASHION_FILES
                   if not os.path.exists(os.path.join(args.fashion_mnist_dir, f))]
        if missing:
            ap.error(f"--fashion-mnist-dir {args.fashion_mnist_dir}: no {', '.join(missing)} "
                     "(apt-get install dataset-fashion-mnist)")
        if args.n_train + args.n_test > 70000:
            ap.error(f"--n-train + --n-test: Fashion-MNIST has 70,000 rows, asked for {args.n_train + args.n_test:,}")
    return args


def data(kind, folder, n_train, n_test, seed):
    import run  # the blobs generator and LIBSVM writer of the main harness
    cache = os.path.join(ROOT, "target", "predict-bench")
    os.makedirs(cache, exist_ok=True)
    if kind == "blobs":
        x, y = run.blobs(n_train + n_test, 20, seed)
        stem = os.path.join(cache, f"blobs_n{n_train}+{n_test}_d20_seed{seed}")
    else:
        import block_smo_bench
        x, y = block_smo_bench.fashion_mnist(folder)
        stem = os.path.join(cache, f"fashion_mnist_n{n_train}+{n_test}")
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
    spec = {"data": args.data, "dir": args.fashion_mnist_dir, "n_train": args.n_train, "n_test": args.n_test,
            "seed": args.seed, "threads": threads, "repeats": args.repeats}
    res = pages.run_child(spec, threads)
    return res["times"], res["n_sv"]


def onedal_child(spec):
    global GAMMA
    GAMMA = DATASETS[spec["data"]][1]
    parts, _ = data(spec["data"], spec["dir"], spec["n_train"], spec["n_test"], spec["seed"])
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
    parts, stem = data(args.data, args.fashion_mnist_dir, args.n_train, args.n_test, args.seed)
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

    seed = f" (seed {args.seed})" if args.data == "blobs" else ""
    out = [f"RBF C-SVC on {args.described}{seed}, {args.n_train:,} train / {args.n_test:,} test rows, "
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
        full = "" if args.data == "blobs" else f" --data {args.data}"
        smoke = (f"n = {args.n_train:,} train / {args.n_test:,} test smoke run",
                 f"python3 bench/predict_bench.py{full} --out bench/results/predict.md")
    page.write(args.out, "\n".join(out), PACKAGES, smoke)


if __name__ == "__main__":
    main()
