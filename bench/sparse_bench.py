#!/usr/bin/env python3
"""Sparse RBF: marginkit vs LIBSVM on a synthetic TF-IDF-like set (default 20,000 x 100,000).

    python3 bench/sparse_bench.py [--n 20000] [--d 100000] [--nnz 60] [--noise 0.03]
        [--repeats 1] [--marginkit target/release/marginkit] [--threads 1] [--c 1] [--gamma 1]

Data (a learnable text-like problem: the classes use words differently, as real topics do):
- vocabulary of `d` terms with a Zipf(1.1) background frequency (ranks mapped to random term ids);
- each document has Poisson(`nnz`) tokens (at least 10): a share U(0.03, 0.2) drawn from its
  class's topic words (two different Gamma(0.3) weightings of one shared pool of 2,000
  mid-frequency words, so both classes use the same words at different rates), a share
  U(0.2, 0.5) of the rest from one of 30 general topics both classes use (300 words each), the
  remainder from the background Zipf;
- weights tf * idf with tf = 1 + log(count), idf = log(n / df) on the set (terms in every
  document drop out), rows L2-normalized (like scikit-learn's TfidfVectorizer);
- balanced classes, then `noise` (default 3%) of the labels flipped.
Written once as LIBSVM text (seeded, cached by its parameters in the temp directory).

Timed, each solver in its own process under GNU time (user + sys CPU seconds, wall, peak RSS):
marginkit `train --json` (`train_seconds` is the solver's wall time; the process CPU includes
reading the file) and LIBSVM's svm_train on a prebuilt svm_problem (libsvm-official from pip;
the CPU time of the svm_train call alone is taken with time.process_time in the child), both
with -t 2 -c C -g GAMMA -e 0.001 -m 200 -h 1. The dense matrix would take n * d * 8 bytes
(16 GB at the default size), so a peak RSS far below that shows the CSR data was never
densified. Objectives and nSV are compared.
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


def make_data(path, n, d, nnz, seed, noise):
    """Writes the synthetic TF-IDF set (see the module documentation) as LIBSVM text."""
    import numpy as np

    rng = np.random.default_rng(seed)
    # Background vocabulary: Zipf(1.1) over ranks, ranks mapped to random term ids.
    ranks = np.arange(1, d + 1, dtype=float)
    bg = ranks ** -1.1
    bg /= bg.sum()
    term_of_rank = rng.permutation(d)
    # Class topics: two different weightings (Gamma(0.3) draws: a few heavy words each) of one
    # shared pool of 2,000 mid-frequency words, so the classes share vocabulary but not its use.
    pool = rng.choice(np.arange(100, min(d, 20000)), size=min(500, d // 2), replace=False)
    cls_w = [rng.gamma(0.3, size=pool.size) for _ in range(2)]
    cls_w = [w / w.sum() for w in cls_w]
    # General topics both classes use (what a document is "also about"): 30 x 300 words.
    gen = [rng.choice(np.arange(50, min(d, 30000)), size=300, replace=False) for _ in range(30)]
    gen_w = [rng.gamma(0.5, size=300) for _ in range(30)]
    gen_w = [w / w.sum() for w in gen_w]

    lengths = np.maximum(10, rng.poisson(nnz, size=n))
    cls = np.arange(n) % 2
    theta_c = rng.uniform(0.1, 0.4, size=n)  # share of class-topic tokens
    theta_g = rng.uniform(0.2, 0.5, size=n)  # share of general-topic tokens
    n_c = rng.binomial(lengths, theta_c)
    n_g = rng.binomial(lengths - n_c, theta_g)
    n_b = lengths - n_c - n_g
    bg_tokens = term_of_rank[rng.choice(d, size=int(n_b.sum()), p=bg)]
    c_tokens = [term_of_rank[rng.choice(pool, size=int(n_c[cls == k].sum()), p=cls_w[k])] for k in range(2)]
    docs = []
    ob, oc = 0, [0, 0]
    for i in range(n):
        k = cls[i]
        g = rng.integers(30)
        parts = [
            bg_tokens[ob:ob + n_b[i]],
            c_tokens[k][oc[k]:oc[k] + n_c[i]],
            term_of_rank[rng.choice(gen[g], size=n_g[i], p=gen_w[g])],
        ]
        ob += n_b[i]
        oc[k] += n_c[i]
        terms, counts = np.unique(np.concatenate(parts), return_counts=True)
        docs.append((terms, counts))
    df = np.zeros(d)
    for terms, _ in docs:
        df[terms] += 1
    idf = np.log(n / np.maximum(df, 1))
    y = np.where(cls == 0, 1, -1)
    y = np.where(rng.random(n) < noise, -y, y)
    with open(path, "w") as f:
        for i, (terms, counts) in enumerate(docs):
            v = (1.0 + np.log(counts)) * idf[terms]
            keep = v > 0  # a term in every document has idf 0
            terms, v = terms[keep], v[keep]
            v = v / (np.sqrt((v * v).sum()) or 1.0)
            f.write(str(int(y[i])) + " " + " ".join(f"{t + 1}:{x:.6g}" for t, x in zip(terms, v)) + "\n")


def timed(cmd):
    """Runs `cmd` under GNU time: (stdout, user + sys CPU s, wall s, peak RSS MB)."""
    with tempfile.TemporaryDirectory() as td:
        t = os.path.join(td, "time")
        p = subprocess.run(["/usr/bin/time", "-o", t, "-f", "%U %S %e %M"] + cmd,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if p.returncode != 0:
            sys.exit(f"{cmd[0]} failed: {p.stderr.decode()[-2000:]}")
        u, s_, e, m = open(t).read().split()[-4:]
        return p.stdout.decode(), float(u) + float(s_), float(e), int(m) / 1024.0


def run_marginkit(binary, path, args, threads):
    with tempfile.TemporaryDirectory() as td:
        out, cpu, wall, rss = timed([binary, "train", "--json", "--threads", str(threads)] + args
                                    + [path, os.path.join(td, "m")])
    rep = json.loads(out)
    return {"train_s": rep["train_seconds"], "cpu": cpu, "wall": wall, "rss": rss,
            "objective": rep["objective"], "n_sv": rep["n_sv"], "hit": rep.get("cache_hit_rate")}


def libsvm_child(path, c, gamma):
    """In a child process: trains LIBSVM and prints one JSON line."""
    from libsvm.svm import svm_parameter, svm_problem
    from libsvm.svmutil import svm_read_problem, svm_train
    import ctypes
    import re

    y, x = svm_read_problem(path)
    prob = svm_problem(y, x)
    del x
    param = svm_parameter(f"-s 0 -t 2 -c {c!r} -g {gamma!r} -e 0.001 -m 200 -h 1")
    libc = ctypes.CDLL(None)
    sys.stdout.flush()
    tmp = tempfile.TemporaryFile(mode="w+b")
    saved = os.dup(1)
    os.dup2(tmp.fileno(), 1)
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        m = svm_train(prob, param)
        secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        libc.fflush(None)
        os.dup2(saved, 1)
        os.close(saved)
    tmp.seek(0)
    objs = [float(v) for v in re.findall(r"obj = ([-+0-9.eE]+)", tmp.read().decode())]
    print(json.dumps({"train_s": secs, "train_cpu": cpu, "objective": objs[0] if objs else None,
                      "n_sv": m.get_nr_sv()}))


def run_libsvm(path, c, gamma):
    out, cpu, wall, rss = timed([sys.executable, os.path.abspath(__file__), "--libsvm-child", path,
                                 "--c", repr(c), "--gamma", repr(gamma)])
    rep = json.loads(out.strip().splitlines()[-1])
    rep.update({"cpu": cpu, "wall": wall, "rss": rss})
    return rep


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--d", type=int, default=100000)
    ap.add_argument("--nnz", type=int, default=60)
    ap.add_argument("--noise", type=float, default=0.03)
    ap.add_argument("--c", type=float, default=1.0)
    ap.add_argument("--gamma", type=float, default=1.0)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--threads", default="1")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-libsvm", action="store_true")
    ap.add_argument("--data-only", action="store_true", help="write the data set and exit")
    ap.add_argument("--libsvm-child", metavar="DATA", help=argparse.SUPPRESS)
    ap.add_argument("--marginkit", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target")),
                                                        "release", "marginkit"))
    a = ap.parse_args()
    if a.libsvm_child:
        libsvm_child(a.libsvm_child, a.c, a.gamma)
        return
    path = os.path.join(tempfile.gettempdir(), f"mk_tfidf2_{a.n}_{a.d}_{a.nnz}_{a.noise!r}_{a.seed}.svm")
    if not os.path.exists(path):
        t0 = time.perf_counter()
        make_data(path + ".tmp", a.n, a.d, a.nnz, a.seed, a.noise)
        os.replace(path + ".tmp", path)
        print(f"data written to {path} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    nnz = sum(len(line.split()) - 1 for line in open(path))
    dense_gb = a.n * a.d * 8 / 1e9
    print(f"data {path}: {a.n} x {a.d}, {nnz} non-zeros ({nnz / a.n:.1f} per row, density {nnz / a.n / a.d:.2e}); "
          f"dense f64 would be {dense_gb:.1f} GB; file {os.path.getsize(path) / 1e6:.1f} MB", flush=True)
    if a.data_only:
        return
    args = ["-t", "2", "-c", repr(a.c), "-g", repr(a.gamma), "-e", "0.001", "-m", "200", "-h", "1"]
    rows = []

    def add(name, reps):
        med = {k: statistics.median(r[k] for r in reps) for k in ("cpu", "wall", "rss")}
        r = reps[0]
        rows.append((name, med["cpu"], med["wall"], r["train_s"], r["objective"], r["n_sv"], med["rss"]))
        print(f"{name}: CPU {med['cpu']:.1f} s, wall {med['wall']:.1f} s (train {r['train_s']:.1f} s), "
              f"obj {r['objective']}, nSV {r['n_sv']}, peak RSS {med['rss']:.0f} MB", flush=True)

    for t in [int(v) for v in a.threads.split(",")]:
        add(f"marginkit --threads {t}", [run_marginkit(a.marginkit, path, args, t) for _ in range(a.repeats)])
    if not a.no_libsvm:
        add("LIBSVM 3.37 (pip)", [run_libsvm(path, a.c, a.gamma) for _ in range(a.repeats)])
    print()
    print(f"| solver | CPU s (user+sys, process) | wall s | train s | objective | nSV | peak RSS MB |")
    print("|---|---|---|---|---|---|---|")
    for name, cpu, wall, tr, o, nsv, rss in rows:
        print(f"| {name} | {cpu:.1f} | {wall:.1f} | {tr:.1f} | {o} | {nsv} | {rss:.0f} |")


if __name__ == "__main__":
    main()
