#!/usr/bin/env python3
"""RBF C-SVC on large data sets: marginkit's pair SMO (`--solver smo`), its block working-set SMO
(`--solver block`) and Intel oneDAL's SVC (scikit-learn-intelex, CPU "thunder" method), side by side;
with --scaling, training time against n for every engine, LIBSVM included, as a table and a log-log SVG.

    python3 bench/block_smo_bench.py                      # n = 20k, 50k; threads 2; 3 repeats
    python3 bench/block_smo_bench.py --sizes 20000,50000,100000 --threads 1,2
    python3 bench/block_smo_bench.py --threads 1,2 --out bench/results/block_smo.md
    python3 bench/block_smo_bench.py --scaling --out bench/results/scaling.md   # + scaling.svg
    python3 bench/block_smo_bench.py --quick [--scaling]  # smoke run: tiny sizes, 1 repeat

Same data for everyone, written as LIBSVM text with %.17g so marginkit reads the doubles the peers
get. --data blobs (the default): bench/run.py's blobs generator, d = 20, seed 20261121, gamma = 0.05.
--data fashion-mnist: the real Fashion-MNIST images (Xiao, Rasul & Vollgraf 2017; 70,000 rows of
28 x 28 = 784 pixels, the 60,000 training rows then the 10,000 test rows, the first n of them;
past 70,000 rows, virtual examples (DeCoste & Schoelkopf 2002, the standard way to train invariant
SVMs on digit images): the 70,000 images translated by one pixel right, then down, left and up,
up to 350,000 rows, since no real set with d >= 50 and more rows is installable offline), read
from the Debian package dataset-fashion-mnist (`apt-get install dataset-fashion-mnist`, or
--fashion-mnist-dir), pixels / 256 (exact binary fractions in [0, 1)), label +1 for the upper-body
garments (classes 0 T-shirt/top, 2 pullover, 4 coat, 6 shirt: 40% of the rows) and -1 for the rest,
gamma = 0.01 (scikit-learn's 'scale', 1 / (d var x) = 0.0103, rounded). C = 1, eps 1e-3, 200 MB
cache, shrinking on. Times: marginkit's `train_seconds` (solver only, no reading); oneDAL's `SVC.fit` wall
time on an in-memory float64 array (after an untimed warm-up fit on 2,000 rows), with
`daal4py.daalinit(threads)`, in a child process whose MKL and OpenMP pools have that many threads
(bench/run.py pins them to one in this process); LIBSVM's `svm_train` on a prebuilt problem (bench/run.py's run_libsvm).
Medians of --repeats runs. Objectives, all in LIBSVM's min form: marginkit's report; LIBSVM's `obj =`
line; oneDAL's 1/2 c'Kc - sum|c| recomputed from its dual coefficients and support vectors (untimed).

--scaling: n = 10k, 20k, 50k, 100k, 200k (--sizes overrides), threads 1 and 2, series marginkit
`--solver smo`, `block` (`auto`, the default, runs one of them by size and cache), oneDAL, and LIBSVM. LIBSVM is single-threaded: it runs once per n and
its times stand in both thread columns; each of its fits runs in a child process that is stopped after
--libsvm-limit seconds (default 600), and its series ends at the first n where that happens. The page
gives time, ratio to oneDAL, objective agreement with oneDAL, and the growth exponent of time in n per
series (least-squares slope of log time on log n over the sizes in --fit-range, default 50k-200k);
the SVG (--svg, default: --out with .svg) plots time against n on log-log axes, one line per series.
The whole run takes hours on 2 cores, so every finished series (n, engine, threads) is kept in
--cache (default target/block-bench/scaling-cache.json) as it ends, and a later run reuses it: for
marginkit only with the same binary. Stop a run at any time and continue it in the next quiet window;
the page says when each n was measured and the load then.

The first run creates target/venv-onedal from bench/requirements-onedal.txt (pinned; reinstalled when
that file changes) and re-runs itself inside it; the marginkit binary is found as bench/pages.py says
(--marginkit, $CARGO_TARGET_DIR or target/release). The load average before and after is printed and
written to the page: timings taken under load are not comparable with those of a quiet machine.
"""
import argparse
import hashlib
import json
import math
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import pages  # noqa: E402

EPS = 1e-3
PACKAGES = ("scikit-learn-intelex", "daal", "scikit-learn", "numpy", "libsvm-official")
ENGINES = ("smo", "block")


# --data: name -> (description on the pages, RBF gamma, largest n the set has)
DATASETS = {
    "blobs": ("blobs d = 20", 0.05, None),
    "fashion-mnist": ("Fashion-MNIST (d = 784, upper-body garments against the rest)", 0.01, 350000),
}
GAMMA = None  # the --data set's gamma, set by parse_args


def parse_args():
    global GAMMA
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="blobs", choices=sorted(DATASETS), help="the data set (default blobs)")
    ap.add_argument("--fashion-mnist-dir", default=os.path.join("/usr", "share", "datasets", "fashion-mnist"),
                    help="--data fashion-mnist: folder of the four *-ubyte.gz files (default: the Debian "
                         "package's)")
    ap.add_argument("--scaling", action="store_true", help="time against n, every engine, table + SVG")
    ap.add_argument("--sizes", help="comma-separated n (default 20000,50000; --scaling 10000,...,200000)")
    ap.add_argument("--threads", help="comma-separated thread counts (default 2; --scaling 1,2)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=20261121)
    ap.add_argument("--marginkit")
    ap.add_argument("--no-onedal", action="store_true")
    ap.add_argument("--no-libsvm", action="store_true", help="--scaling without the LIBSVM series")
    ap.add_argument("--engines", default="smo,block",
                    help="comma-separated marginkit engines (smo, block; default both); without --scaling, "
                         "an engine left out shows as nan")
    ap.add_argument("--cache",
                    help="--scaling: JSON file of finished points, read and extended as each series ends "
                         "(default target/block-bench/scaling-cache.json; 'none' for no cache)")
    ap.add_argument("--libsvm-repeats", type=int,
                    help="--scaling: LIBSVM fits per n (default --repeats); its times are medians of these")
    ap.add_argument("--libsvm-limit", type=float, default=600.0,
                    help="seconds after which a LIBSVM fit is stopped and its series ends (--scaling)")
    ap.add_argument("--fit-range", default="50000,200000",
                    help="LO,HI: the sizes the growth exponent is fitted over (--scaling)")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: n = 2,000 (--scaling: 1,000, 2,000, 4,000), 1 repeat")
    ap.add_argument("--out", help="write the results page (Markdown) here")
    ap.add_argument("--svg", help="--scaling: write the log-log plot here (default: --out with .svg)")
    a = ap.parse_args()
    if a.quick:
        a.sizes = a.sizes or ("1000,2000,4000" if a.scaling else "2000")
        a.repeats = 1
        a.fit_range = "1000,4000"
    a.sizes = [int(s) for s in (a.sizes or ("10000,20000,50000,100000,200000" if a.scaling else "20000,50000"))
               .split(",")]
    a.threads = [int(t) for t in (a.threads or ("1,2" if a.scaling else "2")).split(",")]
    a.fit_range = tuple(int(v) for v in a.fit_range.split(","))
    a.engines = tuple(e for e in a.engines.split(","))
    if any(e not in ENGINES for e in a.engines):
        ap.error(f"--engines: each must be one of {', '.join(ENGINES)}, got {','.join(a.engines)!r}")
    if a.libsvm_repeats is None:
        a.libsvm_repeats = a.repeats
    a.described, GAMMA, most = DATASETS[a.data]
    a.described += (f" (seed {a.seed})" if a.data == "blobs" else
                    ", first n rows" + (" (past 70,000: the images translated by one pixel right, then down, "
                                        "left and up)" if max(a.sizes) > 70000 else ""))
    if most is not None and max(a.sizes) > most:
        ap.error(f"--sizes: {a.data} has {most:,} rows, asked for {max(a.sizes):,}")
    if a.data == "fashion-mnist":
        missing = [f for f in FASHION_FILES if not os.path.exists(os.path.join(a.fashion_mnist_dir, f))]
        if missing:
            ap.error(f"--fashion-mnist-dir {a.fashion_mnist_dir}: no {', '.join(missing)} "
                     "(apt-get install dataset-fashion-mnist)")
    if a.scaling and a.svg is None and a.out:
        a.svg = os.path.splitext(a.out)[0] + ".svg"
    return a


FASHION_FILES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                 "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")


def fashion_mnist(folder):
    """The 70,000 Fashion-MNIST rows (training set, then test set): pixels / 256, labels +1 for
    classes 0, 2, 4, 6 and -1 otherwise."""
    import gzip

    import numpy as np

    def idx(name, header):
        with gzip.open(os.path.join(folder, name)) as f:
            return np.frombuffer(f.read(), dtype=np.uint8, offset=header)

    x = np.concatenate([idx(FASHION_FILES[0], 16), idx(FASHION_FILES[2], 16)]).reshape(-1, 784) / 256.0
    classes = np.concatenate([idx(FASHION_FILES[1], 8), idx(FASHION_FILES[3], 8)])
    if len(classes) != len(x):
        sys.exit(f"{folder}: {len(x)} images but {len(classes)} labels")
    return x, np.where(np.isin(classes, [0, 2, 4, 6]), 1.0, -1.0)


# One-pixel translations (rows, columns) that extend Fashion-MNIST past its 70,000 images.
SHIFTS = ((0, 1), (1, 0), (0, -1), (-1, 0))


def fashion_rows(folder, n):
    """The first n rows of Fashion-MNIST extended by virtual examples (DeCoste & Schoelkopf 2002):
    the 70,000 images, then all of them translated by one pixel right, then down, left and up
    (the row or column shifted in is 0; labels unchanged), 350,000 rows in all."""
    import numpy as np

    x, y = fashion_mnist(folder)
    xs, ys = [x[:n]], [y[:n]]
    images = x.reshape(-1, 28, 28)
    for dy, dx in SHIFTS:
        k = min(n - sum(len(part) for part in ys), len(x))
        if k <= 0:
            break
        moved = np.zeros((k, 28, 28))
        moved[:, max(dy, 0):28 + min(dy, 0), max(dx, 0):28 + min(dx, 0)] = \
            images[:k, max(-dy, 0):28 - max(dy, 0), max(-dx, 0):28 - max(dx, 0)]
        xs.append(moved.reshape(k, 784))
        ys.append(y[:k])
    return np.concatenate(xs), np.concatenate(ys)


def data(n, a):
    import run  # the blobs generator and LIBSVM writer of the main harness
    cache = os.path.join(ROOT, "target", "block-bench")
    os.makedirs(cache, exist_ok=True)
    if a.data == "blobs":
        x, y = run.blobs(n, 20, a.seed)
        path = os.path.join(cache, f"blobs_n{n}_d20_seed{a.seed}.svm")
    else:
        x, y = fashion_rows(a.fashion_mnist_dir, n)
        path = os.path.join(cache, f"fashion_mnist_n{n}.svm")
    if not os.path.exists(path):
        run.write_svm(path, x, y)
    return x, y, path


def marginkit(binary, solver, threads, path):
    cmd = [binary, "train", "-s", "0", "-t", "2", "-c", "1", "-g", str(GAMMA), "-e", str(EPS), "-m", "200",
           "-h", "1", "-q", "--threads", str(threads), "--solver", solver, "--json", path, path + ".model"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rep = json.loads(out)
    obj = rep["objective"][0] if isinstance(rep["objective"], list) else rep["objective"]
    return rep["train_seconds"], obj


def marginkit_series(binary, solver, threads, path, repeats, label):
    runs = [marginkit(binary, solver, threads, path) for _ in range(repeats)]
    print(f"{label} {solver}: {[round(r[0], 3) for r in runs]}", file=sys.stderr, flush=True)
    return statistics.median(r[0] for r in runs), runs[0][1]


def onedal_objective(svc):
    import numpy as np
    c = svc.dual_coef_.ravel()
    sv = svc.support_vectors_
    nrm = (sv * sv).sum(axis=1)
    quad = 0.0
    step = 512  # rows of K at a time: 512 x n_sv doubles (330 MB at 80,000 support vectors)
    for lo in range(0, len(c), step):
        blk = sv[lo:lo + step]
        d2 = nrm[lo:lo + step, None] + nrm[None, :] - 2.0 * blk @ sv.T
        quad += c[lo:lo + step] @ (np.exp(-GAMMA * np.maximum(d2, 0.0)) @ c)
    return 0.5 * quad - np.abs(c).sum()


def onedal(x, y, threads):
    try:
        import daal4py
        daal4py.daalinit(threads)
    except ImportError:
        pass
    from sklearnex.svm import SVC
    svc = SVC(C=1.0, kernel="rbf", gamma=GAMMA, tol=EPS, cache_size=200, shrinking=True)
    t = time.perf_counter()
    svc.fit(x, y)
    return time.perf_counter() - t, svc


def onedal_series(a, n, threads, repeats, label, objective=True):
    """Median fit time at `threads` and, if `objective`, the dual objective of the last fit, from a
    child process whose MKL and OpenMP pools have `threads` threads (`pages.run_child`: this process
    has them pinned to one)."""
    spec = {"data": a.data, "dir": a.fashion_mnist_dir, "seed": a.seed, "n": n, "threads": threads,
            "repeats": repeats, "objective": objective}
    res = pages.run_child(spec, threads)
    print(f"{label} oneDAL: {[round(s, 3) for s in res['times']]}", file=sys.stderr, flush=True)
    return statistics.median(res["times"]), res["objective"]


def onedal_child(spec):
    """The fits of one oneDAL series (after an untimed warm-up fit on 2,000 rows), printed as JSON."""
    global GAMMA
    GAMMA = DATASETS[spec["data"]][1]
    ns = argparse.Namespace(data=spec["data"], fashion_mnist_dir=spec["dir"], seed=spec["seed"])
    x, y, _ = data(spec["n"], ns)
    t = spec["threads"]
    onedal(x[:2000], y[:2000], t)
    times, svc = [], None
    for _ in range(spec["repeats"]):
        s, svc = onedal(x, y, t)
        times.append(s)
    print(json.dumps({"times": times, "objective": onedal_objective(svc) if spec["objective"] else None}))


def libsvm_fit(x, y, limit):
    """One LIBSVM fit in a forked child, stopped after `limit` seconds: (seconds, objective), or
    None if it was stopped."""
    import multiprocessing as mp

    import run
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)

    def work():
        r = run.run_libsvm(x, y, GAMMA, EPS)
        send.send((r["seconds"], r["objective"]))

    p = ctx.Process(target=work)
    p.start()
    send.close()
    got = recv.poll(limit)
    res = recv.recv() if got else None
    if not got:
        p.terminate()
    p.join()
    return res


def medians_of(k):
    return "one run" if k == 1 else f"medians of {k} runs"


def fmt_t(v):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    return f"{v:.3g}" if v < 1000 else f"{v:.0f}"


def fmt_rel(a, b):
    if a is None or b is None:
        return "—"
    return f"{abs(a - b) / abs(b):.1e}"


def exponent(points, lo, hi):
    """Least-squares slope of log t on log n over the points with lo <= n <= hi (None if < 2)."""
    pts = [(math.log(n), math.log(t)) for n, t in points if lo <= n <= hi and t]
    if len(pts) < 2:
        return None
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx


# ------------------------------------------------------------------ the side-by-side table


def compare(a, binary, page):
    rows = []
    for n in a.sizes:
        _, _, path = data(n, a)
        for t in a.threads:
            label = f"n={n} threads={t}"
            nan = (float("nan"), float("nan"))
            res = {s: marginkit_series(binary, s, t, path, a.repeats, label) if s in a.engines else nan
                   for s in ("smo", "block")}
            if not a.no_onedal:
                res["onedal"] = onedal_series(a, n, t, a.repeats, label)
            rows.append((n, t, res))
    out = [f"RBF C-SVC, {a.described}, C = 1, gamma = {GAMMA}, eps {EPS}, 200 MB cache, "
           f"shrinking on; {medians_of(a.repeats)} (seconds of training).", "",
           "| n | threads | smo s | block s | oneDAL s | block/smo | smo/oneDAL | block/oneDAL "
           "| objective smo | objective block | objective oneDAL |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for n, t, r in rows:
        od = r.get("onedal", (float("nan"), float("nan")))
        out.append(f"| {n:,} | {t} | {r['smo'][0]:.2f} | {r['block'][0]:.2f} | {od[0]:.2f} | "
                   f"{r['block'][0] / r['smo'][0]:.2f} | {r['smo'][0] / od[0]:.2f} | {r['block'][0] / od[0]:.2f} | "
                   f"{r['smo'][1]:.6f} | {r['block'][1]:.6f} | {od[1]:.6f} |")
    smoke = None
    if a.quick:
        smoke = ("n = 2,000 smoke run", "python3 bench/block_smo_bench.py --threads 1,2 --out bench/results/block_smo.md")
    page.write(a.out, "\n".join(out), PACKAGES, smoke)


# ------------------------------------------------------------------ the scaling run


class Cache:
    """Finished series of a scaling run, kept in a JSON file as each ends, so that a run can be
    stopped and continued in another quiet window: an entry is reused only for the same seed, repeats
    and settings and, for marginkit, the same binary (its SHA-256). Each entry keeps when it was
    measured and the load average then; the page lists them."""

    def __init__(self, path, binary, a):
        self.path = path
        data = "" if a.data == "blobs" else f"data={a.data}|"
        self.tag = f"{data}seed={a.seed}|repeats={a.repeats}|libsvm_repeats={a.libsvm_repeats}|limit={a.libsvm_limit:g}"
        with open(binary, "rb") as f:
            self.binary = hashlib.sha256(f.read()).hexdigest()[:16]
        self.entries = {}
        if path and os.path.exists(path):
            with open(path) as f:
                self.entries = json.load(f)

    def key(self, n, series, threads):
        who = f"marginkit:{self.binary}" if series in ENGINES else series
        return f"{self.tag}|n={n}|{who}|threads={threads}"

    def get(self, n, series, threads):
        e = self.entries.get(self.key(n, series, threads))
        if e is not None:
            print(f"n={n} threads={threads} {series}: cached ({e['at']})", file=sys.stderr, flush=True)
        return e

    def put(self, n, series, threads, value):
        e = {"value": value, "at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
             "load": round(os.getloadavg()[0], 2)}
        self.entries[self.key(n, series, threads)] = e
        if self.path:
            tmp = self.path + ".tmp"
            with open(tmp, "w") as f:
                json.dump(self.entries, f, indent=1)
            os.replace(tmp, self.path)
        return e


def scaling(a, binary, page):
    res = {n: {} for n in a.sizes}  # n -> series key -> (seconds or None, objective or None)
    when = {n: [] for n in a.sizes}  # n -> [(measured at, load)] of its series
    libsvm_stopped = None  # the n at which LIBSVM passed the limit
    cache_path = None if a.cache == "none" else (
        a.cache or os.path.join(ROOT, "target", "block-bench", "scaling-cache.json"))
    cache = Cache(None if a.quick else cache_path, binary, a)

    def measured(n, series, threads, measure):
        e = cache.get(n, series, threads) or cache.put(n, series, threads, measure())
        when[n].append((e["at"], e["load"]))
        return e["value"]

    def libsvm_series(x, y, n):
        runs = []
        for _ in range(a.libsvm_repeats):
            r = libsvm_fit(x, y, a.libsvm_limit)
            if r is None:
                print(f"n={n} LIBSVM: {[round(r[0], 3) for r in runs]}, stopped after {a.libsvm_limit:g} s",
                      file=sys.stderr, flush=True)
                return None
            runs.append(r)
        print(f"n={n} LIBSVM: {[round(r[0], 3) for r in runs]}", file=sys.stderr, flush=True)
        return [statistics.median(r[0] for r in runs), runs[0][1]]

    for n in a.sizes:
        x, y, path = data(n, a)
        if not a.no_libsvm and libsvm_stopped is None:
            v = measured(n, "libsvm", 1, lambda: libsvm_series(x, y, n))
            if v is None:
                libsvm_stopped = n
            else:
                res[n]["libsvm"] = tuple(v)
        for i, t in enumerate(a.threads):
            label = f"n={n} threads={t}"
            for s in a.engines:
                res[n][(s, t)] = tuple(measured(
                    n, s, t, lambda: list(marginkit_series(binary, s, t, path, a.repeats, label))))
            if not a.no_onedal:
                # oneDAL's optimum does not depend on the thread count: its objective is computed once
                # per n (with the first thread count's fits).
                res[n][("onedal", t)] = tuple(measured(
                    n, "onedal", t,
                    lambda: list(onedal_series(a, n, t, a.repeats, label, objective=(i == 0)))))
    od_obj = {n: next((v[1] for k, v in res[n].items() if k[0] == "onedal" and v[1] is not None), None)
              for n in a.sizes}

    lo, hi = a.fit_range
    lim = f"> {a.libsvm_limit:g} (stopped)"
    libsvm_note = ("" if a.no_libsvm else
                   " LIBSVM is single-threaded: one series, repeated in every table; a LIBSVM fit is stopped "
                   f"after {a.libsvm_limit:g} s and its series ends there.")
    out = [f"RBF C-SVC training time against n: {a.described}, C = 1, gamma = {GAMMA}, "
           f"eps {EPS}, 200 MB cache, shrinking on; {medians_of(a.repeats)}"
           + ("" if a.no_libsvm else f" (LIBSVM: {medians_of(a.libsvm_repeats)})")
           + ", seconds of training (marginkit's `train_seconds`, oneDAL's"
           + ("" if a.no_libsvm else " and LIBSVM's") + " fit call). Ratios are to oneDAL at the same "
           "thread count (< 1: faster than oneDAL)." + libsvm_note + " The growth "
           f"exponent is the least-squares slope of log time on log n over n = {lo:,}-{hi:,}; the objective "
           "columns give |objective - oneDAL's| / |oneDAL's| (LIBSVM's min form of the dual).", ""]
    keys = [(s, None) for s in a.engines] + [("onedal", None)] + ([] if a.no_libsvm else [("libsvm", None)])
    obj_keys = a.engines + (() if a.no_libsvm else ("libsvm",))
    names = {"smo": "marginkit smo", "block": "marginkit block",
             "onedal": "oneDAL", "libsvm": "LIBSVM"}

    def get(n, key, t):
        k = key if key == "libsvm" else (key, t)
        return res[n].get(k)

    for t in a.threads:
        out += [f"### {t} thread{'s' if t > 1 else ''}", "",
                "| n | " + " | ".join(f"{names[k]} s" for k, _ in keys) + " | "
                + " | ".join(f"{names[k]} / oneDAL" for k, _ in keys if k != "onedal")
                + f" | objective rel. diff to oneDAL: {', '.join(names[k] for k in obj_keys)} |",
                "|---" * (1 + len(keys) + len(keys) - 1 + 1) + "|"]
        for n in a.sizes:
            od = get(n, "onedal", t)
            cells = []
            for k, _ in keys:
                v = get(n, k, t)
                if k == "libsvm" and v is None and libsvm_stopped is not None and n >= libsvm_stopped:
                    cells.append(lim if n == libsvm_stopped else "not run")
                else:
                    cells.append(fmt_t(v[0]) if v else "—")
            ratios = []
            for k, _ in keys:
                if k == "onedal":
                    continue
                v = get(n, k, t)
                ratios.append(f"{v[0] / od[0]:.2f}" if v and od else "—")
            objs = ", ".join(fmt_rel(get(n, k, t)[1] if get(n, k, t) else None, od_obj[n])
                             for k in obj_keys)
            out.append(f"| {n:,} | " + " | ".join(cells) + " | " + " | ".join(ratios) + f" | {objs} |")
        exps = []
        for k, _ in keys:
            pts = [(n, get(n, k, t)[0]) for n in a.sizes if get(n, k, t)]
            e = exponent(pts, lo, hi)
            exps.append(f"{e:.2f}" if e is not None else "—")
        out.append(f"| growth exponent, n = {lo:,}-{hi:,} | " + " | ".join(exps) + " |" + " |" * len(keys))
        out.append("")
    out += ["When each n was measured (UTC; the 1-minute load average as its last series ended): "
            + "; ".join(f"{n:,}: " + (f"{min(w)[0]} to {max(w)[0]}, load {min(l for _, l in w):.2f}-"
                                      f"{max(l for _, l in w):.2f}" if w else "not run")
                        for n, w in when.items()) + ".", ""]
    out += ["oneDAL's dual objective (LIBSVM's min form) per n: "
            + ", ".join(f"{n:,}: {od_obj[n]:.6f}" for n in a.sizes if od_obj[n] is not None) + "."]
    if libsvm_stopped is not None:
        out += ["", f"LIBSVM's series ends at n = {libsvm_stopped:,}: its fit there took more than "
                f"{a.libsvm_limit:g} s and was stopped; larger n were not run."]

    series = []
    colors = {"smo": "#2ca02c", "block": "#9467bd", "onedal": "#d62728", "libsvm": "#555555"}
    for t in a.threads:
        dash = "" if t == max(a.threads) else "7,4"
        for k in a.engines + ("onedal",):
            pts = [(n, get(n, k, t)[0]) for n in a.sizes if get(n, k, t)]
            if pts:
                series.append((f"{names[k]}, {t} thread{'s' if t > 1 else ''}", colors[k], dash, pts, None))
    pts = [(n, res[n]["libsvm"][0]) for n in a.sizes if "libsvm" in res[n]]
    if pts or libsvm_stopped:
        stop = (libsvm_stopped, a.libsvm_limit) if libsvm_stopped else None
        series.append(("LIBSVM, 1 thread", colors["libsvm"], "2,3", pts, stop))
    title = (f"RBF C-SVC training time, {DATASETS[a.data][0]} (C = 1, gamma = {GAMMA}, eps {EPS}, 200 MB cache)"
             + (" — smoke run" if a.quick else ""))
    if a.svg:
        with open(a.svg, "w") as f:
            f.write(svg_loglog(series, title, "n (training rows)", "training time (s)"))
        print(f"wrote {a.svg}", file=sys.stderr)
        styles = [f"solid: {max(a.threads)} thread{'s' if max(a.threads) > 1 else ''}"]
        if min(a.threads) != max(a.threads):
            styles.append(f"dashed: {min(a.threads)} thread{'s' if min(a.threads) > 1 else ''}")
        if not a.no_libsvm:
            styles.append("dotted: LIBSVM")
        out += ["", f"Plot: `{os.path.basename(a.svg)}` (log-log; {', '.join(styles)})."]
    smoke = None
    if a.quick:
        smoke = (f"n = {', '.join(f'{n:,}' for n in a.sizes)} smoke run",
                 "python3 bench/block_smo_bench.py --scaling --out bench/results/scaling.md")
    page.write(a.out, "\n".join(out), PACKAGES, smoke)


# ------------------------------------------------------------------ log-log SVG


def _ticks(lo, hi):
    """1-2-5 ticks within [lo, hi] (positive)."""
    out = []
    e = math.floor(math.log10(lo))
    while 10 ** e <= hi * 1.0001:
        for m in (1, 2, 5):
            v = m * 10 ** e
            if lo <= v <= hi * 1.0001:
                out.append(v)
        e += 1
    return out


def _fmt_tick(v):
    if v >= 1000 and v % 1000 == 0:
        return f"{v / 1000:g}k"
    return f"{v:g}"


def svg_loglog(series, title, xlabel, ylabel):
    """Log-log line plot: series = [(label, color, dasharray, [(x, y)], stop)], where stop = (x, y) is
    drawn as an open marker with '>' meaning the run was stopped at y."""
    from xml.sax.saxutils import escape

    xs = [p[0] for s in series for p in s[3]] + [s[4][0] for s in series if s[4]]
    ys = [p[1] for s in series for p in s[3]] + [s[4][1] for s in series if s[4]]
    x0, x1 = min(xs) / 1.15, max(xs) * 1.15
    y0 = 10 ** math.floor(math.log10(min(ys) / 1.3))
    y1 = 10 ** math.ceil(math.log10(max(ys) * 1.3))
    W, H = 1000, 600
    L, R, T, B = 80, 330, 50, 60  # margins; the legend sits in the right one
    pw, ph = W - L - R, H - T - B

    def px(x):
        return L + pw * (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0))

    def py(y):
        return T + ph * (1 - (math.log(y) - math.log(y0)) / (math.log(y1) - math.log(y0)))

    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
         'font-family="DejaVu Sans, Arial, sans-serif" font-size="13">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{W / 2}" y="28" text-anchor="middle" font-size="15" font-weight="bold">{escape(title)}</text>']
    for v in sorted(set(xs)):
        o.append(f'<line x1="{px(v):.1f}" y1="{T}" x2="{px(v):.1f}" y2="{T + ph}" stroke="#e0e0e0"/>')
        o.append(f'<text x="{px(v):.1f}" y="{T + ph + 18}" text-anchor="middle">{_fmt_tick(v)}</text>')
    for v in _ticks(y0, y1):
        major = abs(math.log10(v) - round(math.log10(v))) < 1e-9
        o.append(f'<line x1="{L}" y1="{py(v):.1f}" x2="{L + pw}" y2="{py(v):.1f}" '
                 f'stroke="{"#c8c8c8" if major else "#ececec"}"/>')
        o.append(f'<text x="{L - 6}" y="{py(v) + 4:.1f}" text-anchor="end">{v:g}</text>')
    o.append(f'<rect x="{L}" y="{T}" width="{pw}" height="{ph}" fill="none" stroke="black"/>')
    o.append(f'<text x="{L + pw / 2}" y="{H - 15}" text-anchor="middle">{escape(xlabel)}</text>')
    o.append(f'<text x="20" y="{T + ph / 2}" text-anchor="middle" '
             f'transform="rotate(-90 20 {T + ph / 2})">{escape(ylabel)}</text>')
    for i, (label, color, dash, pts, stop) in enumerate(series):
        da = f' stroke-dasharray="{dash}"' if dash else ""
        if len(pts) > 1:
            path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
            o.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"{da}/>')
        for x, y in pts:
            o.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3.5" fill="{color}"/>')
        if stop:
            sx, sy = px(stop[0]), py(stop[1])
            if pts:
                o.append(f'<line x1="{px(pts[-1][0]):.1f}" y1="{py(pts[-1][1]):.1f}" x2="{sx:.1f}" y2="{sy:.1f}" '
                         f'stroke="{color}" stroke-width="1" stroke-dasharray="2,3"/>')
            o.append(f'<circle cx="{sx:.1f}" cy="{sy:.1f}" r="5" fill="white" stroke="{color}" stroke-width="2"/>')
            o.append(f'<text x="{sx - 8:.1f}" y="{sy - 9:.1f}" text-anchor="end" fill="{color}">'
                     f'&gt; {stop[1]:g} s, stopped</text>')
        ly = T + 10 + 22 * i
        lx = L + pw + 20
        o.append(f'<line x1="{lx}" y1="{ly}" x2="{lx + 34}" y2="{ly}" stroke="{color}" stroke-width="2"{da}/>')
        o.append(f'<circle cx="{lx + 17}" cy="{ly}" r="3.5" fill="{color}"/>')
        o.append(f'<text x="{lx + 42}" y="{ly + 4}">{escape(label)}</text>')
    o.append("</svg>")
    return "\n".join(o) + "\n"


def main():
    pages.ensure_venv("venv-onedal", "requirements-onedal.txt")
    spec = pages.child_spec()
    if spec is not None:
        onedal_child(spec)
        return
    a = parse_args()
    binary = pages.find_marginkit(a.marginkit)
    if a.scaling:
        page = pages.Page("RBF C-SVC training time against n: marginkit, oneDAL" + ("" if a.no_libsvm else ", LIBSVM"))
        scaling(a, binary, page)
    else:
        page = pages.Page("Block working-set SMO: marginkit smo and block against oneDAL SVC")
        compare(a, binary, page)


if __name__ == "__main__":
    main()
