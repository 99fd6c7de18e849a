"""Parallel linear SVM: marginkit's primal Newton solver (-s 2, L2-loss SVC) at
--threads 1 and 2 against marginkit's serial dual coordinate descent (-s 1) and LIBLINEAR's -s 2
and -s 1, on n = 200,000 rows, dense and sparse.

    python3 bench/par_linear_bench.py [--repeats 3] [--dual-repeats 1] [--n 200000]
        [--cs 0.1,1] [--cases dense20,dense100,tfidf] [--marginkit PATH] [--no-liblinear]

One command, about 2-3 minutes on a quiet 2-core machine once the data files exist: they are
written once to the temp directory (mk_par_linear_*_200000.{csv,svm}, 320 MB) and reused; writing
them takes a few minutes more the first time (half an hour at load 20). Everything uses LIBLINEAR's defaults for the tolerance (-e 0.01 for -s 2,
0.1 for -s 1) and -B 1. marginkit runs the release CLI (`cargo build --release -p marginkit-cli`)
and is timed by its own `train_seconds` (the solve, without reading the file); LIBLINEAR runs
in-process (liblinear-official, bench/requirements.txt) on a prebuilt problem, timed around
`train` only. Wall seconds are medians of --repeats (--dual-repeats for the slower -s 1 runs,
which are there for reference only); CPU seconds (user + sys) are medians too:
for marginkit those of the whole process (file parsing included, so CPU > wall is normal), for
LIBLINEAR the process time of the `train` call. The speed-up is wall(-s 2, 1 thread) / wall(-s 2,
2 threads) of marginkit; "P rel" is the primal objective relative to the best of all runs (the
same optimum within tolerance); "bit-identical" compares the model files at 1 and 2 threads.

Data (seeded, synthetic):
- dense20 / dense100: two overlapping Gaussian classes, n x 20 and n x 100, 2% labels flipped;
- tfidf: n x 20,000 sparse TF-IDF-like rows (Zipf term frequencies, about 40 terms a row, unit
  L2 norm), labels from a sparse linear teacher with 5% noise.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
TMP = tempfile.gettempdir()


def make_dense(n, d, seed):
    import numpy as np

    rng = np.random.default_rng(seed)
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    x = (rng.standard_normal((n, d)) + 1.5 * y[:, None] / np.sqrt(d)).round(4)
    y = np.where(rng.random(n) < 0.02, -y, y)
    return x, y


def make_tfidf(n, d, seed, terms=40):
    import numpy as np
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, d + 1) ** 1.1
    p /= p.sum()
    counts = rng.poisson(terms, n).clip(1, 4 * terms)
    rows = np.repeat(np.arange(n), counts)
    cols = rng.choice(d, size=rows.size, p=p)
    x = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, d))
    x.sum_duplicates()
    df = np.bincount(x.indices, minlength=d)
    idf = np.log((1.0 + n) / (1.0 + df)) + 1.0
    x.data = np.log1p(x.data) * idf[x.indices]
    norms = np.sqrt(np.asarray(x.multiply(x).sum(axis=1)).ravel())
    x = sp.diags(1.0 / np.maximum(norms, 1e-12)) @ x
    x = sp.csr_matrix(x)
    x.sort_indices()
    teacher = np.where(rng.random(d) < 0.05, rng.standard_normal(d), 0.0)
    y = np.where(x @ teacher >= np.median(x @ teacher), 1.0, -1.0)
    y = np.where(rng.random(n) < 0.05, -y, y)
    return x, y


def write_data(path, x, y):
    """Once (cached by name): sparse data as LIBSVM text, dense data as CSV with the label last
    (written row by row by numpy's C formatter, several times faster than Python formatting).
    Dense values are rounded to 4 decimals when generated and sparse ones written in shortest
    round-trip form, so that LIBLINEAR (fed the arrays) and marginkit (fed the file) see the
    same numbers (to an ulp)."""
    import numpy as np
    import scipy.sparse as sp

    if os.path.exists(path):
        return
    with open(path + ".tmp", "wb") as f:
        if sp.issparse(x):
            ptr, idx, val = x.indptr, x.indices, x.data
            for i in range(x.shape[0]):
                a, b = ptr[i], ptr[i + 1]
                f.write((f"{int(y[i])} " + " ".join(
                    f"{k + 1}:{v!r}" for k, v in zip(idx[a:b].tolist(), val[a:b].tolist())) + "\n")
                    .encode())
        else:
            row = np.empty(x.shape[1] + 1)
            for i in range(x.shape[0]):
                row[:-1] = x[i]
                row[-1] = y[i]
                row.tofile(f, sep=",", format="%.4f")
                f.write(b"\n")
    os.replace(path + ".tmp", path)


def primal(x, y, w, b, c, pos):
    import numpy as np

    ypm = np.where(y == pos, 1.0, -1.0)
    z = np.asarray(x @ w).ravel() + b
    m = np.maximum(0.0, 1.0 - ypm * z)
    return 0.5 * (float(w @ w) + b * b) + c * float(m @ m)


def run_marginkit(binary, data, s, c, threads):
    with tempfile.TemporaryDirectory() as td:
        model = os.path.join(td, "m")
        csv = ["--csv"] if data.endswith(".csv") else []
        cmd = [binary, "train", "--linear", "--json", "-q", "-s", str(s), "-c", repr(c), "-B", "1",
               "--threads", str(threads)] + csv + [data, model]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        rep = json.loads(p.stdout.decode())
        with open(model, "rb") as f:
            rep["_model"] = f.read()
    rep["_cpu"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return rep


def run_liblinear(x, y, s, c):
    import ctypes

    import numpy as np
    import scipy.sparse as sp
    from liblinear.liblinear import parameter, problem
    from liblinear.liblinearutil import train

    prob = problem(y, sp.csr_matrix(x))
    param = parameter(f"-s {s} -c {c!r} -B 1 -q")
    ctypes.CDLL(None).srand(1)
    c0, t0 = time.process_time(), time.perf_counter()
    m = train(prob, param)
    t, cpu = time.perf_counter() - t0, time.process_time() - c0
    w, b = m.get_decfun(0)
    return t, cpu, np.array(w), b, m.get_labels()[0]


def find_marginkit(path):
    if path:
        return path
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target"))
    p = os.path.join(target, "release", "marginkit")
    if not os.path.exists(p):
        sys.exit(f"no marginkit binary at {p}: run `cargo build --release -p marginkit-cli` "
                 "or pass --marginkit")
    return p


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dual-repeats", type=int, default=1)
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--cs", default="0.1,1")
    ap.add_argument("--cases", default="dense20,dense100,tfidf")
    ap.add_argument("--marginkit")
    ap.add_argument("--no-liblinear", action="store_true")
    a = ap.parse_args()
    binary = find_marginkit(a.marginkit)
    cs = [float(v) for v in a.cs.split(",")]
    med = statistics.median
    print(f"# parallel linear SVM, n = {a.n:,}, medians of {a.repeats} (-s 1: {a.dual_repeats}); "
          "wall seconds (cpu = user + sys seconds)\n")
    print("| data | C | mk -s 2 t=1 s (cpu) | mk -s 2 t=2 s (cpu) | speed-up | bit-identical | "
          "mk -s 1 s | LIBLINEAR -s 2 s | LIBLINEAR -s 1 s | mk-s2(t=2)/LL-s2 | P rel: mk -s 2, mk -s 1, "
          "LL -s 2, LL -s 1 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for case in a.cases.split(","):
        if case.startswith("dense"):
            d = int(case[5:])
            x, y = make_dense(a.n, d, 1 + d)
        elif case == "tfidf":
            x, y = make_tfidf(a.n, 20_000, 3)
        else:
            sys.exit(f"unknown case {case}")
        ext = "svm" if case == "tfidf" else "csv"
        path = os.path.join(TMP, f"mk_par_linear_{case}_{a.n}.{ext}")
        write_data(path, x, y)
        for c in cs:
            row = {}
            for key, s, t in [("s2t1", 2, 1), ("s2t2", 2, 2), ("s1", 1, 1)]:
                reps = a.repeats if s == 2 else a.dual_repeats
                rr = [run_marginkit(binary, path, s, c, t) for _ in range(reps)]
                row[key] = (med(r["train_seconds"] for r in rr), med(r["_cpu"] for r in rr),
                            rr[0]["primal_objective"], rr[0]["_model"])
            ll = {}
            if not a.no_liblinear:
                for s in (2, 1):
                    reps = a.repeats if s == 2 else a.dual_repeats
                    rr = [run_liblinear(x, y, s, c) for _ in range(reps)]
                    _, _, w, b, pos = rr[0]
                    ll[s] = (med(r[0] for r in rr), med(r[1] for r in rr), primal(x, y, w, b, c, pos))
            objs = [row["s2t1"][2], row["s1"][2]] + [ll[s][2] for s in (2, 1) if s in ll]
            best = min(objs)
            rel = ", ".join(f"{(o - best) / best:.1e}" for o in objs)
            same = "yes" if row["s2t1"][3] == row["s2t2"][3] else "NO"
            llt = lambda s: f"{ll[s][0]:.3f} ({ll[s][1]:.2f})" if s in ll else "-"
            ratio = f"{row['s2t2'][0] / ll[2][0]:.2f}" if 2 in ll else "-"
            print(f"| {case} | {c:g} | {row['s2t1'][0]:.3f} ({row['s2t1'][1]:.2f}) | "
                  f"{row['s2t2'][0]:.3f} ({row['s2t2'][1]:.2f}) | {row['s2t1'][0] / row['s2t2'][0]:.2f}x | "
                  f"{same} | {row['s1'][0]:.3f} ({row['s1'][1]:.2f}) | {llt(2)} | {llt(1)} | {ratio} | {rel} |",
                  flush=True)


if __name__ == "__main__":
    main()
