"""Parallel linear SVM: marginkit `train --linear` at --threads 1 and 2 against multi-core LIBLINEAR
(`-m 1` and `-m 2`) on the same data: the primal Newton solver (-s 2) and the dual coordinate descent
solvers (-s 1, 3; -s 12, 13 with --solvers), dense and sparse, n = 200,000.

    python3 bench/par_linear_bench.py [--repeats 3] [--dual-repeats 1] [--n 200000] [--cs 0.1,1]
        [--cases dense20,dense100,tfidf,tfidf50k] [--solvers 2,1,3] [--marginkit PATH] [--no-liblinear]
    python3 bench/par_linear_bench.py --out bench/results/dcd_multicore.md   # the results page
    python3 bench/par_linear_bench.py --quick                                  # smoke run: n = 2,000, 1 repeat

multi-core LIBLINEAR (liblinear-multicore) installs a Python module named `liblinear`, like
liblinear-official (bench/requirements.txt), so this script runs in a virtualenv of its own:
the first run creates target/venv-multicore from bench/requirements-multicore.txt (pinned;
reinstalled when that file changes) and re-runs itself inside it.

The data files are written once to the temp directory (mk_par_linear_*_N.{csv,svm}, about 450 MB
at n = 200,000) and reused; writing them takes a few minutes the first time. Everything uses
LIBLINEAR's defaults for the tolerance (-e 0.01 for -s 2, 0.1 for the dual solvers, -p 0.1 for
SVR) and -B 1. marginkit runs the release CLI (`cargo build --release -p marginkit-cli`; found as
bench/pages.py says) and is timed by its own `train_seconds` (the solve, without reading the
file); LIBLINEAR runs in-process on a prebuilt problem, timed around `train` only. multi-core
LIBLINEAR parallelises -s 1, 2 and 3; for -s 12/13 its single-core solver is listed under -m 1
and -m 2 is left empty. Wall seconds are medians of --repeats (--dual-repeats for the dual
solvers, slow on dense data); CPU seconds (user + sys) are medians too: for marginkit those of the
whole process (file parsing included, so CPU > wall is normal), for LIBLINEAR the process time of
the `train` call. The speed-ups are wall(1 thread) / wall(2 threads); "P rel" is each primal
objective relative to the smallest of the row (marginkit's as reported, LIBLINEAR's recomputed
here from its weights): the same optimum within the tolerance; "bit-identical" compares
marginkit's model files at 1 and 2 threads. The 2-thread figures only mean something on an
otherwise idle machine: the load average before and after is printed and written to the page.

Data (seeded, synthetic):
- dense20 / dense100: two overlapping Gaussian classes, n x 20 and n x 100, 2% labels flipped;
- tfidf / tfidf50k: n x 20,000 / n x 50,000 sparse TF-IDF-like rows (Zipf term frequencies,
  about 40 terms a row, unit L2 norm), labels from a sparse linear teacher with 5% noise.
The regression solvers (-s 12/13) fit the same files with the labels (+-1) as targets.
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
sys.path.insert(0, HERE)

import pages  # noqa: E402

# multi-core LIBLINEAR's parallel solvers (`-m`) among those benchmarked here.
LL_PARALLEL = {1, 2, 3}
DUAL = {1, 3, 12, 13}
PACKAGES = ("liblinear-multicore", "numpy", "scipy")


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


def primal(x, y, w, b, s, c, pos=None, p=0.1):
    """Primal objective of LIBLINEAR's solver `s` at weights `w` and bias weight `b` (-B 1: the bias
    is a regularised feature of value 1): squared hinge (-s 1, 2), hinge (-s 3), squared / plain
    epsilon-insensitive loss (-s 12 / 13)."""
    import numpy as np

    z = np.asarray(x @ w).ravel() + b
    if s in (1, 2, 3):
        m = np.maximum(0.0, 1.0 - np.where(y == pos, 1.0, -1.0) * z)
    else:
        m = np.maximum(0.0, np.abs(y - z) - p)
    loss = float(m @ m) if s in (1, 2, 12) else float(m.sum())
    return 0.5 * (float(w @ w) + b * b) + c * loss


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


def run_liblinear(prob, x, y, s, c, threads):
    """multi-core LIBLINEAR `-s S -m THREADS` (no -m for a solver it does not parallelise):
    (wall, cpu, primal objective)."""
    import ctypes

    import numpy as np
    from liblinear.liblinear import parameter
    from liblinear.liblinearutil import train

    opts = f"-s {s} -c {c!r} -B 1 -q" + (f" -m {threads}" if s in LL_PARALLEL else "")
    ctypes.CDLL(None).srand(1)
    c0, t0 = time.process_time(), time.perf_counter()
    m = train(prob, parameter(opts))
    t, cpu = time.perf_counter() - t0, time.process_time() - c0
    w, b = m.get_decfun(0)
    pos = m.get_labels()[0] if s in (1, 2, 3) else None
    return t, cpu, primal(x, y, np.array(w), b, s, c, pos)


def case_data(case, n):
    if case.startswith("dense"):
        d = int(case[5:])
        return make_dense(n, d, 1 + d), "csv"
    if case == "tfidf":
        return make_tfidf(n, 20_000, 3), "svm"
    if case == "tfidf50k":
        return make_tfidf(n, 50_000, 3), "svm"
    sys.exit(f"unknown case {case}")


def main():
    pages.ensure_venv("venv-multicore", "requirements-multicore.txt")
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dual-repeats", type=int, default=1)
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--cs", default="0.1,1")
    ap.add_argument("--cases", default="dense20,dense100,tfidf,tfidf50k")
    ap.add_argument("--solvers", default="2,1,3", help="comma-separated: 2, 1, 3, 12, 13")
    ap.add_argument("--marginkit")
    ap.add_argument("--no-liblinear", action="store_true")
    ap.add_argument("--quick", action="store_true", help="smoke run: n = 2,000, 1 repeat")
    ap.add_argument("--out", help="write the results page (Markdown) here")
    a = ap.parse_args()
    if a.quick:
        a.n, a.repeats, a.dual_repeats = 2000, 1, 1
    binary = pages.find_marginkit(a.marginkit)
    page = pages.Page("Multi-core linear SVM: marginkit against multi-core LIBLINEAR")
    import scipy.sparse as sp

    from liblinear.liblinear import problem

    cs = [float(v) for v in a.cs.split(",")]
    solvers = [int(v) for v in a.solvers.split(",")]
    med = statistics.median
    runs = lambda k: "one run" if k == 1 else f"medians of {k} runs"  # noqa: E731
    out = [f"n = {a.n:,}, -B 1, LIBLINEAR's default tolerances; wall seconds, {runs(a.repeats)} "
           f"({runs(a.dual_repeats)} for the dual solvers -s 1, 3, 12, 13), CPU seconds (user + sys) in "
           "brackets. LL = multi-core LIBLINEAR (for -s 12/13, its single-core solver).", "",
           "| data | C | -s | mk t=1 s (cpu) | mk t=2 s (cpu) | mk speed-up | bit-identical | LL -m 1 s (cpu) "
           "| LL -m 2 s (cpu) | LL speed-up | mk t=2 / LL -m 2 | P rel: mk t=1, mk t=2, LL -m 1, LL -m 2 | load |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for case in a.cases.split(","):
        (x, y), ext = case_data(case, a.n)
        path = os.path.join(TMP, f"mk_par_linear_{case}_{a.n}.{ext}")
        write_data(path, x, y)
        prob = None if a.no_liblinear else problem(y, sp.csr_matrix(x))
        for c in cs:
            for s in solvers:
                reps = a.dual_repeats if s in DUAL else a.repeats
                load0 = os.getloadavg()[0]
                mk = {}
                for t in (1, 2):
                    rr = [run_marginkit(binary, path, s, c, t) for _ in range(reps)]
                    mk[t] = (med(r["train_seconds"] for r in rr), med(r["_cpu"] for r in rr),
                             rr[0]["primal_objective"], rr[0]["_model"])
                ll = {}
                if prob is not None:
                    for t in ((1, 2) if s in LL_PARALLEL else (1,)):
                        rr = [run_liblinear(prob, x, y, s, c, t) for _ in range(reps)]
                        ll[t] = (med(r[0] for r in rr), med(r[1] for r in rr), rr[0][2])
                load1 = os.getloadavg()[0]
                objs = [mk[1][2], mk[2][2]] + [ll[t][2] if t in ll else None for t in (1, 2)]
                best = min(o for o in objs if o is not None)
                rel = ", ".join("—" if o is None else f"{(o - best) / abs(best):.1e}" for o in objs)
                same = "yes" if mk[1][3] == mk[2][3] else "NO"
                cell = lambda r: f"{r[0]:.3f} ({r[1]:.2f})"  # noqa: E731
                llc = lambda t: cell(ll[t]) if t in ll else "—"  # noqa: E731
                llsp = f"{ll[1][0] / ll[2][0]:.2f}x" if 2 in ll else "—"
                ratio = f"{mk[2][0] / ll[2][0]:.2f}" if 2 in ll else "—"
                line = (f"| {case} | {c:g} | {s} | {cell(mk[1])} | {cell(mk[2])} | {mk[1][0] / mk[2][0]:.2f}x | "
                        f"{same} | {llc(1)} | {llc(2)} | {llsp} | {ratio} | {rel} | {load0:.1f}-{load1:.1f} |")
                print(line, file=sys.stderr, flush=True)
                out.append(line)
    smoke = None
    if a.quick:
        smoke = (f"n = {a.n:,} smoke run", "python3 bench/par_linear_bench.py --out bench/results/dcd_multicore.md")
    page.write(a.out, "\n".join(out), PACKAGES, smoke)


if __name__ == "__main__":
    main()
