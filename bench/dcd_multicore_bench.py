"""Multi-core dual coordinate descent: marginkit `train --linear -s 1/3/12/13` at --threads 1
and 2 against multi-core LIBLINEAR (`-m 1` and `-m 2`), side by side on the same data.

multi-core LIBLINEAR installs a Python module named `liblinear`, like liblinear-official
(bench/requirements.txt), so it lives in a virtualenv of its own, and this script runs in it:

    python3 -m venv target/venv-multicore
    target/venv-multicore/bin/pip install -r bench/requirements-multicore.txt
    cargo build --release -p marginkit-cli
    target/venv-multicore/bin/python bench/dcd_multicore_bench.py [--repeats 3]
        [--solvers 1,3,12,13] [--cases dense,sparse] [--marginkit PATH] [--data-dir DIR]

Data (seeded, synthetic, written once to --data-dir, default target/dcd_multicore, and reused):
- dense: 100,000 x 20, two overlapping Gaussian classes, 2% labels flipped (CSV);
- sparse: 200,000 x 50,000 TF-IDF-like rows (Zipf term frequencies, about 40 terms a row,
  unit L2 norm), labels from a sparse linear teacher with 5% noise (LIBSVM text).
The regression solvers (-s 12/13) fit the same files with the labels (+-1) as targets.

Everything runs with C = 1, -B 1 and each solver's default tolerance (-e 0.1; -p 0.1 for SVR).
marginkit is timed by its own `train_seconds` (the solve, without reading the file); LIBLINEAR
in-process around `train` on a prebuilt problem. Times are medians of --repeats wall seconds.
"P rel" is each primal objective relative to the smallest of the row (marginkit's as reported,
LIBLINEAR's recomputed here from its weights): the same optimum within the tolerance. multi-core
LIBLINEAR parallelises -s 1 and -s 3 only; for -s 12/13 its single-thread solver is listed.
The load average is printed with every row: the 2-thread figures only mean something when the
machine is otherwise idle (load < 1.5 on 2 cores).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from par_linear_bench import make_dense, make_tfidf, write_data  # noqa: E402

# multi-core LIBLINEAR's parallel solvers among these.
LL_PARALLEL = {1, 3}


def primal(x, y, w, b, s, c=1.0, p=0.1, pos=None):
    """Primal objective of LIBLINEAR's solver `s` at weights `w` and bias weight `b` (-B 1: the
    bias is a regularized feature of value 1)."""
    import numpy as np

    z = np.asarray(x @ w).ravel() + b
    reg = 0.5 * (float(w @ w) + b * b)
    if s in (1, 3):
        ypm = np.where(y == pos, 1.0, -1.0)
        m = np.maximum(0.0, 1.0 - ypm * z)
    else:
        m = np.maximum(0.0, np.abs(y - z) - p)
    return reg + c * float(m @ m if s in (1, 12) else m.sum())


def run_marginkit(binary, data, s, threads):
    with tempfile.TemporaryDirectory() as td:
        model = os.path.join(td, "m")
        csv = ["--csv"] if data.endswith(".csv") else []
        cmd = [binary, "train", "--linear", "--json", "-q", "-s", str(s), "-c", "1", "-B", "1",
               "--threads", str(threads)] + csv + [data, model]
        out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True)
        rep = json.loads(out.stdout.decode())
        with open(model, "rb") as f:
            rep["_model"] = f.read()
    return rep


def run_liblinear(prob, x, y, s, threads):
    from liblinear.liblinear import parameter
    from liblinear.liblinearutil import train
    import numpy as np

    opts = f"-s {s} -c 1 -B 1 -q" + (f" -m {threads}" if s in LL_PARALLEL else "")
    t0 = time.perf_counter()
    m = train(prob, parameter(opts))
    t = time.perf_counter() - t0
    w, b = m.get_decfun(0)
    pos = m.get_labels()[0] if s in (1, 3) else None
    return t, primal(x, y, np.array(w), b, s, pos=pos)


def find_marginkit(path):
    if path:
        return path
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target"))
    p = os.path.join(target, "release", "marginkit")
    if not os.path.exists(p):
        sys.exit(f"no marginkit binary at {p}: run `cargo build --release -p marginkit-cli` "
                 "or pass --marginkit")
    return p


def load():
    return os.getloadavg()[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--solvers", default="1,3,12,13")
    ap.add_argument("--cases", default="dense,sparse")
    ap.add_argument("--marginkit")
    ap.add_argument("--data-dir", default=os.path.join(REPO, "target", "dcd_multicore"))
    a = ap.parse_args()
    try:
        from liblinear.liblinear import problem
    except ImportError:
        sys.exit("needs multi-core LIBLINEAR: see the usage above (bench/requirements-multicore.txt)")
    import scipy.sparse as sp

    binary = find_marginkit(a.marginkit)
    os.makedirs(a.data_dir, exist_ok=True)
    med = statistics.median
    print(f"# multi-core linear DCD, C = 1, -B 1, default -e; medians of {a.repeats} wall seconds\n")
    print("| data | -s | mk t=1 | mk t=2 | mk speed-up | LL -m 1 | LL -m 2 | LL speed-up | "
          "mk t=2 / LL -m 2 | P rel: mk t=1, mk t=2, LL -m 1, LL -m 2 | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for case in a.cases.split(","):
        if case == "dense":
            x, y = make_dense(100_000, 20, 21)
            path = os.path.join(a.data_dir, "dense_100000x20.csv")
        elif case == "sparse":
            x, y = make_tfidf(200_000, 50_000, 3)
            path = os.path.join(a.data_dir, "tfidf_200000x50000.svm")
        else:
            sys.exit(f"unknown case {case}")
        write_data(path, x, y)
        prob = problem(y, sp.csr_matrix(x))
        for s in (int(v) for v in a.solvers.split(",")):
            l0 = load()
            mk = {t: [run_marginkit(binary, path, s, t) for _ in range(a.repeats)] for t in (1, 2)}
            ll = {t: [run_liblinear(prob, x, y, s, t) for _ in range(a.repeats)]
                  for t in ((1, 2) if s in LL_PARALLEL else (1,))}
            l1 = load()
            tm = {t: med(r["train_seconds"] for r in mk[t]) for t in mk}
            tl = {t: med(r[0] for r in ll[t]) for t in ll}
            objs = [mk[1][0]["primal_objective"], mk[2][0]["primal_objective"]]
            objs += [ll[t][0][1] for t in sorted(ll)]
            best = min(objs)
            rel = ", ".join(f"{(o - best) / abs(best):.1e}" for o in objs)
            ll2 = tl.get(2)
            if ll2 is not None:
                ll_cells = f"{tl[1]:.3f} | {ll2:.3f} | {tl[1] / ll2:.2f}x | {tm[2] / ll2:.2f}"
            else:
                ll_cells = f"{tl[1]:.3f} | - | - | {tm[2] / tl[1]:.2f} (vs -m 1)"
            print(f"| {case} | {s} | {tm[1]:.3f} | {tm[2]:.3f} | {tm[1] / tm[2]:.2f}x | "
                  f"{ll_cells} | {rel} | {l0:.1f}-{l1:.1f} |", flush=True)


if __name__ == "__main__":
    main()
