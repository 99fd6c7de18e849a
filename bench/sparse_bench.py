#!/usr/bin/env python3
"""Sparse RBF: marginkit vs LIBSVM on a synthetic TF-IDF-like set (default 20,000 x 100,000).

    /work/venv/bin/python bench/sparse_bench.py [--n 20000] [--d 100000] [--nnz 60] [--repeats 1]
        [--marginkit target/release/marginkit] [--threads 2,1] [--c 1] [--gamma 1]

Data: each row draws `nnz` term ids from a Zipf(1.1) vocabulary of `d` terms (plus a handful of
"topic" terms per class), weights tf * idf with tf = 1 + log(count) and idf = log(n / df) computed
on the set, rows L2-normalized (like scikit-learn's TfidfVectorizer); labels from a hidden linear
rule with 5% label noise. Written once as LIBSVM text (seeded, cached by its parameters in the
temp directory).

Timed: marginkit's `train_seconds` (solver only; `--json`), LIBSVM's svm_train call on a prebuilt
svm_problem (libsvm-official from pip), both with -t 2 -c C -g GAMMA -e 0.001 -m 200 -h 1. Peak RSS
of marginkit by GNU time: the dense matrix would take n * d * 8 bytes (16 GB at the default size),
so an RSS far below that shows the CSR data was never densified. Objectives are compared.
"""
import argparse
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def make_data(path, n, d, nnz, seed):
    rng = random.Random(seed)
    # Zipf-like term sampling via the inverse CDF on a truncated harmonic series.
    weights = [1.0 / (k + 1) ** 1.1 for k in range(d)]
    total = sum(weights)
    cdf, acc = [], 0.0
    for w in weights:
        acc += w / total
        cdf.append(acc)
    import bisect

    topics = [rng.sample(range(200, d), 40) for _ in range(2)]
    hidden = {t: rng.gauss(0, 1) for t in rng.sample(range(d), 5000)}
    rows, df = [], [0] * d
    for i in range(n):
        cls = i % 2
        counts = {}
        for _ in range(nnz):
            t = bisect.bisect_left(cdf, rng.random())
            t = min(t, d - 1)
            counts[t] = counts.get(t, 0) + 1
        for _ in range(rng.randint(2, 8)):
            t = rng.choice(topics[cls])
            counts[t] = counts.get(t, 0) + 1
        for t in counts:
            df[t] += 1
        rows.append(counts)
    scores = []
    vecs = []
    for counts in rows:
        v = {t: (1.0 + math.log(c)) * math.log(n / df[t]) for t, c in counts.items()}
        norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
        v = {t: x / norm for t, x in v.items()}
        vecs.append(v)
        scores.append(sum(hidden.get(t, 0.0) * x for t, x in v.items()))
    med = statistics.median(scores)
    with open(path, "w") as f:
        for i, v in enumerate(vecs):
            topic = 1 if i % 2 == 0 else -1
            y = topic if (scores[i] > med) == (topic > 0) or rng.random() < 0.7 else -topic
            if rng.random() < 0.05:
                y = -y
            f.write(str(y) + " " + " ".join(f"{t + 1}:{v[t]:.6g}" for t in sorted(v)) + "\n")


def run_marginkit(binary, path, args, threads):
    with tempfile.TemporaryDirectory() as td:
        model = os.path.join(td, "m")
        rss = os.path.join(td, "rss")
        cmd = ["/usr/bin/time", "-o", rss, "-f", "%M", binary, "train", "--json", "--threads", str(threads)] \
            + args + [path, model]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True)
        rep = json.loads(p.stdout.decode())
        rep["_rss_mb"] = int(open(rss).read().split()[-1]) / 1024.0
        return rep


def run_libsvm(path, c, gamma):
    from libsvm.svm import svm_parameter, svm_problem
    from libsvm.svmutil import svm_read_problem, svm_train
    import ctypes
    import re

    y, x = svm_read_problem(path)
    prob = svm_problem(y, x)
    param = svm_parameter(f"-s 0 -t 2 -c {c!r} -g {gamma!r} -e 0.001 -m 200 -h 1")
    libc = ctypes.CDLL(None)
    sys.stdout.flush()
    tmp = tempfile.TemporaryFile(mode="w+b")
    saved = os.dup(1)
    os.dup2(tmp.fileno(), 1)
    try:
        t0 = time.perf_counter()
        m = svm_train(prob, param)
        secs = time.perf_counter() - t0
    finally:
        libc.fflush(None)
        os.dup2(saved, 1)
        os.close(saved)
    tmp.seek(0)
    objs = [float(v) for v in re.findall(r"obj = ([-+0-9.eE]+)", tmp.read().decode())]
    return {"seconds": secs, "objective": objs[0] if objs else None, "n_sv": m.get_nr_sv()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--d", type=int, default=100000)
    ap.add_argument("--nnz", type=int, default=60)
    ap.add_argument("--c", type=float, default=1.0)
    ap.add_argument("--gamma", type=float, default=1.0)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--threads", default="2,1")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-libsvm", action="store_true")
    ap.add_argument("--marginkit", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target")),
                                                        "release", "marginkit"))
    a = ap.parse_args()
    path = os.path.join(tempfile.gettempdir(), f"mk_tfidf_{a.n}_{a.d}_{a.nnz}_{a.seed}.svm")
    if not os.path.exists(path):
        t0 = time.perf_counter()
        make_data(path + ".tmp", a.n, a.d, a.nnz, a.seed)
        os.replace(path + ".tmp", path)
        print(f"data written to {path} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    nnz = sum(len(line.split()) - 1 for line in open(path))
    dense_gb = a.n * a.d * 8 / 1e9
    print(f"data: {a.n} x {a.d}, {nnz} non-zeros ({nnz / a.n:.1f} per row, density {nnz / a.n / a.d:.2e}); "
          f"dense f64 would be {dense_gb:.1f} GB; file {os.path.getsize(path) / 1e6:.1f} MB")
    args = ["-t", "2", "-c", repr(a.c), "-g", repr(a.gamma), "-e", "0.001", "-m", "200", "-h", "1"]
    rows = []
    for t in [int(v) for v in a.threads.split(",")]:
        reps = [run_marginkit(a.marginkit, path, args, t) for _ in range(a.repeats)]
        secs = statistics.median(r["train_seconds"] for r in reps)
        r = reps[0]
        rows.append((f"marginkit threads={t}", secs, r["objective"], r["n_sv"], r["_rss_mb"]))
        print(f"marginkit threads={t}: {secs:.3f} s, obj {r['objective']}, nSV {r['n_sv']}, "
              f"peak RSS {r['_rss_mb']:.0f} MB, cache hit rate {r.get('cache_hit_rate', float('nan')):.3f}", flush=True)
    if not a.no_libsvm:
        reps = [run_libsvm(path, a.c, a.gamma) for _ in range(a.repeats)]
        secs = statistics.median(r["seconds"] for r in reps)
        rows.append(("LIBSVM 3.37 (pip)", secs, reps[0]["objective"], reps[0]["n_sv"], None))
        print(f"LIBSVM: {secs:.3f} s, obj {reps[0]['objective']}, nSV {reps[0]['n_sv']}", flush=True)
    print()
    print("| solver | train s (median of %d) | objective | nSV | peak RSS MB |" % a.repeats)
    print("|---|---|---|---|---|")
    for name, s, o, nsv, rss in rows:
        print(f"| {name} | {s:.3f} | {o} | {nsv} | {'' if rss is None else f'{rss:.0f}'} |")


if __name__ == "__main__":
    main()
