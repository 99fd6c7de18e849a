#!/usr/bin/env python3
"""Side-by-side benchmark: marginkit (CLI) against LIBSVM, LIBLINEAR and scikit-learn.

    python3 bench/run.py                       # all cases, 3 repeats, medians
    python3 bench/run.py --quick --no-build    # CI smoke test: tiny sizes, one repeat (< 60 s)
    python3 bench/run.py --cases heart_scale,blobs20k --repeats 5 --out results.md

The script creates target/venv-peers (python3 -m venv + pip install -r bench/requirements.txt, pinned;
reinstalled when that file changes) on first use and re-runs itself inside it (--no-venv uses the current
interpreter instead). It builds marginkit with
`cargo build --release -p marginkit-cli` (--no-build skips that) and skips marginkit with a message when
the binary is missing.

What is timed (wall clock, time.perf_counter, medians over --repeats):
- marginkit: the `train_seconds` field of `marginkit train ... --json` (solver time, excluding reading);
  its peak RSS comes from GNU time (/usr/bin/time -f %M) wrapped around it;
- LIBSVM / LIBLINEAR: only the svmutil.svm_train / liblinearutil.train call on a prebuilt problem;
- scikit-learn: SVC.fit / LinearSVC.fit on a dense float64 array.
Every solver gets the same problem: C, gamma (= 1/d, passed explicitly), eps (-e / tol), cache 200 MB,
shrinking on; linear cases use a regularised bias feature of value 1 everywhere (-B 1, fit_intercept=True
with intercept_scaling=1), and every returned w is scored with the same primal objective.
"""

import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
BUILD_CMD = ["cargo", "build", "--release", "-p", "marginkit-cli"]

# Peers must run single-threaded (BLAS inside numpy/scipy is not what we measure).
for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")


def default_data_dir():
    """The repository's data folder (provenance in data/README.md)."""
    return os.path.join(REPO, "data")


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=default_data_dir(),
                    help="real data sets (default: the repository's data/)")
    ap.add_argument("--repeats", type=int, default=3, help="measurements per solver and case; medians reported")
    ap.add_argument("--quick", action="store_true", help="tiny synthetic sizes, one repeat (CI smoke test)")
    ap.add_argument("--cases", default=None, help="comma-separated case names (see --list)")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument("--out", default=None, help="also write the markdown tables to this file")
    ap.add_argument("--marginkit", default=None, help="path of the marginkit binary (default: cargo's target dir)")
    ap.add_argument("--no-build", action="store_true", help="do not run cargo build")
    ap.add_argument("--no-venv", action="store_true", help="use the current Python instead of target/venv-peers")
    ap.add_argument("--threads", default="2,1", help="marginkit --threads values for kernel cases")
    ap.add_argument("--linear-eps", type=float, default=0.1, help="eps for the linear cases (all solvers)")
    ap.add_argument("--seed", type=int, default=20261121, help="seed of the synthetic data sets")
    return ap.parse_args(argv)


# ------------------------------------------------------------------ venv bootstrap


# ------------------------------------------------------------------ cases

# name -> (kind, source, description). kind: "kernel" (C-SVC RBF) or "linear-l1"/"linear-l2"
# (L1-loss / L2-loss linear SVC, dual CD). source: ("file", train path) or ("blobs", n, d, n_quick).
CASES = {
    "heart_scale": ("kernel", ("file", "clf/heart_scale.train.svm"), "heart_scale train split"),
    "breast_cancer": ("kernel", ("file", "clf/breast_cancer.train.svm"), "breast_cancer train split"),
    "digits_8vr": ("kernel", ("file", "clf/digits_8vr.train.svm"), "digits 8 vs rest train split"),
    "digits_oe": ("kernel", ("file", "clf/digits_oe.train.svm"), "digits odd vs even train split"),
    "blobs20k": ("kernel", ("blobs", 20000, 20, 2000), "two Gaussian blobs, unscaled, Bayes error 0.1, 5% label noise"),
    "heart_scale_lin_l1": ("linear-l1", ("file", "clf/heart_scale.train.svm"), "heart_scale, L1-loss linear SVC"),
    "blobs100k_lin_l1": ("linear-l1", ("blobs", 100000, 20, 10000), "blobs, L1-loss linear SVC (-s 3)"),
    "blobs100k_lin_l2": ("linear-l2", ("blobs", 100000, 20, 10000), "blobs, L2-loss linear SVC (-s 1)"),
}


def blobs(n, d, seed, bayes_error=0.1, label_noise=0.05):
    """Two Gaussian blobs N(+-mu/2, I) in d dims with Bayes error `bayes_error`, then flip a fraction
    `label_noise` of the labels. Features are left unscaled (raw N(., 1) values)."""
    import numpy as np
    from scipy.stats import norm

    rng = np.random.default_rng(seed)
    delta = 2.0 * norm.ppf(1.0 - bayes_error)  # Bayes error of two unit-covariance Gaussians = Phi(-delta/2)
    u = rng.normal(size=d)
    u /= np.linalg.norm(u)
    y = rng.choice(np.array([-1.0, 1.0]), size=n)
    x = rng.normal(size=(n, d)) + np.outer(y * delta / 2.0, u)
    flip = rng.random(n) < label_noise
    y[flip] = -y[flip]
    return x, y


def write_svm(path, x, y):
    """Write dense rows in LIBSVM format with round-trip float formatting (%.17g)."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        for yi, row in zip(y, x):
            f.write("%d " % yi + " ".join("%d:%.17g" % (j + 1, v) for j, v in enumerate(row) if v != 0.0) + "\n")
    os.replace(tmp, path)


def read_svm_dense(path):
    import numpy as np
    from libsvm.svmutil import svm_read_problem

    y, xs = svm_read_problem(path)
    d = max((max(r) if r else 0) for r in xs)
    x = np.zeros((len(y), d))
    for i, r in enumerate(xs):
        for k, v in r.items():
            x[i, k - 1] = v
    return x, np.array(y)


def load_case(name, args):
    """-> (x dense ndarray, y ndarray, path of the LIBSVM-format file marginkit reads)."""
    kind, src, _ = CASES[name]
    if src[0] == "file":
        path = os.path.join(args.data_dir, src[1])
        x, y = read_svm_dense(path)
        return x, y, path
    _, n, d, n_quick = src
    if args.quick:
        n = n_quick
    cache = os.path.join(HERE, ".cache")
    os.makedirs(cache, exist_ok=True)
    seed = args.seed + (0 if kind == "kernel" else 1)
    x, y = blobs(n, d, seed)
    path = os.path.join(cache, f"blobs_n{n}_d{d}_seed{seed}.svm")
    if not os.path.exists(path):
        write_svm(path, x, y)
    return x, y, path


# ------------------------------------------------------------------ capture of C-level output

class CaptureFd1:
    """Redirect file descriptor 1 (where LIBSVM/LIBLINEAR print) into a temp file."""

    def __enter__(self):
        import ctypes

        self.libc = ctypes.CDLL(None)
        sys.stdout.flush()
        self.libc.fflush(None)
        self.tmp = tempfile.TemporaryFile(mode="w+b")
        self.saved = os.dup(1)
        os.dup2(self.tmp.fileno(), 1)
        return self

    def __exit__(self, *exc):
        sys.stdout.flush()
        self.libc.fflush(None)
        os.dup2(self.saved, 1)
        os.close(self.saved)
        self.tmp.seek(0)
        self.text = self.tmp.read().decode("utf-8", "replace")
        self.tmp.close()
        return False


def parse_objs(text):
    import re

    return [float(v) for v in re.findall(r"obj = ([-+0-9.eE]+)", text)]


# ------------------------------------------------------------------ solvers


def run_libsvm(x, y, gamma, eps):
    import time

    import scipy.sparse as sp
    from libsvm.svm import svm_parameter, svm_problem
    from libsvm.svmutil import svm_train

    prob = svm_problem(y, sp.csr_matrix(x))
    param = svm_parameter(f"-s 0 -t 2 -c 1 -g {gamma!r} -e {eps!r} -m 200 -h 1")
    with CaptureFd1() as cap:
        t0 = time.perf_counter()
        m = svm_train(prob, param)
        t = time.perf_counter() - t0
    objs = parse_objs(cap.text)
    return {"seconds": t, "objective": objs[0] if objs else None, "n_sv": m.get_nr_sv()}


def run_sklearn_svc(x, y, gamma, eps):
    import time

    from sklearn.svm import SVC

    clf = SVC(C=1.0, kernel="rbf", gamma=gamma, tol=eps, cache_size=200, shrinking=True, verbose=True)
    with CaptureFd1() as cap:
        t0 = time.perf_counter()
        clf.fit(x, y)
        t = time.perf_counter() - t0
    objs = parse_objs(cap.text)
    return {"seconds": t, "objective": objs[0] if objs else None, "n_sv": int(clf.n_support_.sum())}


def primal_objective(kind, w, x1, ypm, c=1.0):
    """1/2 w'w + C sum loss(y_i w'x_i); x1 has the bias column (value 1) appended."""
    import numpy as np

    m = np.maximum(0.0, 1.0 - ypm * (x1 @ w))
    loss = m if kind == "linear-l1" else m * m
    return 0.5 * float(w @ w) + c * float(loss.sum())


def l2_reference_optimum(x, y):
    """P* of the L2-loss problem from LIBLINEAR's primal Newton solver (-s 2) at eps 1e-8; not timed."""
    import numpy as np
    import scipy.sparse as sp
    from liblinear.liblinear import parameter, problem
    from liblinear.liblinearutil import train

    with CaptureFd1():
        m = train(problem(y, sp.csr_matrix(x)), parameter("-s 2 -c 1 -e 1e-8 -B 1 -q"))
    w, b = m.get_decfun(0)
    w = np.array(list(w) + [b])
    x1 = np.hstack([x, np.ones((x.shape[0], 1))])
    return primal_objective("linear-l2", w, x1, np.where(y == m.get_labels()[0], 1.0, -1.0))


def run_liblinear(x, y, kind, eps):
    import ctypes
    import time

    import numpy as np
    import scipy.sparse as sp
    from liblinear.liblinear import parameter, problem
    from liblinear.liblinearutil import train

    s = 3 if kind == "linear-l1" else 1
    prob = problem(y, sp.csr_matrix(x))
    param = parameter(f"-s {s} -c 1 -e {eps!r} -B 1")
    ctypes.CDLL(None).srand(1)
    with CaptureFd1() as cap:
        t0 = time.perf_counter()
        m = train(prob, param)
        t = time.perf_counter() - t0
    w, b = m.get_decfun(0)
    pos = m.get_labels()[0]
    return {"seconds": t, "w": np.array(list(w) + [b]), "pos": pos,
            "note": "max-iter" if "reaching max number of iterations" in cap.text else ""}


def run_linearsvc(x, y, kind, eps):
    import time

    import numpy as np
    from sklearn.svm import LinearSVC

    clf = LinearSVC(C=1.0, loss="hinge" if kind == "linear-l1" else "squared_hinge", dual=True, tol=eps,
                    fit_intercept=True, intercept_scaling=1.0, random_state=0, max_iter=1000)
    t0 = time.perf_counter()
    clf.fit(x, y)
    t = time.perf_counter() - t0
    return {"seconds": t, "w": np.concatenate([clf.coef_[0], clf.intercept_]), "pos": clf.classes_[1]}


def find_marginkit(args):
    if args.marginkit:
        return args.marginkit if os.path.exists(args.marginkit) else None
    tdir = os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target"))
    p = os.path.join(tdir, "release", "marginkit")
    return p if os.path.exists(p) else None


def build_marginkit(args):
    if args.no_build:
        return
    print("building: " + " ".join(BUILD_CMD), file=sys.stderr)
    r = subprocess.run(BUILD_CMD, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        tail = "\n".join(r.stderr.strip().splitlines()[-3:])
        print(f"cargo build failed (marginkit will be skipped if no binary exists):\n{tail}", file=sys.stderr)


TIME_BIN = "/usr/bin/time"


def run_marginkit(binary, cmd_args, train_path):
    """Run `marginkit train ... --json TRAIN MODEL`; returns the JSON report plus its peak RSS (KiB).

    The peak RSS comes from GNU time (`/usr/bin/time -f %M`), which forks and waits for marginkit
    itself. wait4() on a child of this script is not used: Linux records the parent's RSS high-water
    mark in the child's ru_maxrss at exec (the child starts as a copy of this Python process, which
    holds the data sets and the peers), so it reported 120-380 MB for any run. Without GNU time the
    RSS is reported as unknown.
    """
    import json

    with tempfile.TemporaryDirectory() as td:
        model = os.path.join(td, "model")
        errf = os.path.join(td, "stderr")
        rssf = os.path.join(td, "rss")
        cmd = [binary, "train"] + cmd_args + ["--json", train_path, model]
        full = ([TIME_BIN, "-o", rssf, "-f", "%M"] + cmd) if os.access(TIME_BIN, os.X_OK) else cmd
        with open(errf, "w") as ef:
            p = subprocess.run(full, stdout=subprocess.PIPE, stderr=ef)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: {open(errf).read().strip()[-500:]}")
        text = p.stdout.decode()
        start = text.find("{")
        if start < 0:
            raise RuntimeError(f"`{' '.join(cmd)}` printed no JSON report on stdout (got {text[:200]!r}); "
                               "is this binary the real marginkit CLI?")
        rep = json.loads(text[start:])
        rss = None
        if os.path.exists(rssf):
            lines = [ln for ln in open(rssf).read().split() if ln.strip().isdigit()]
            rss = int(lines[-1]) if lines else None
        rep["_maxrss_kib"] = rss
        rep["_model_text"] = open(model).read() if os.path.exists(model) else None
        return rep


def linear_w_from_model(text, d):
    """w (with the bias weight last) from a LIBLINEAR-format or JSON model written by marginkit."""
    import json

    import numpy as np

    if text is None:
        return None, None
    t = text.lstrip()
    if t.startswith("{"):
        m = json.loads(t)
        w = next((m[k] for k in ("w", "weights", "coef") if k in m), None)
        b = next((m[k] for k in ("b", "intercept", "bias_weight") if k in m), 0.0)
        labels = m.get("labels") or m.get("label")
        if w is None:
            return None, None
        w = np.ravel(np.array(w, dtype=float))
        if len(w) == d:
            w = np.append(w, float(np.ravel([b])[0]))
        return w, (labels[0] if labels else None)
    lines = text.splitlines()
    labels, ws, in_w = None, [], False
    for ln in lines:
        if in_w:
            if ln.strip():
                ws.append(float(ln.split()[0]))
        elif ln.startswith("label "):
            labels = [float(v) for v in ln.split()[1:]]
        elif ln.strip() == "w":
            in_w = True
    if not ws:
        return None, None
    w = np.array(ws)
    if len(w) == d:
        w = np.append(w, 0.0)
    return w, (labels[0] if labels else None)


# ------------------------------------------------------------------ main loop


def median(v):
    v = sorted(x for x in v if x is not None)
    if not v:
        return None
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def fmt_s(v):
    if v is None:
        return "—"
    return f"{v:.3g}" if v >= 0.001 else f"{v:.2e}"


def fmt_rel(v):
    return "—" if v is None else f"{v:.1e}"


def bench_case(name, args, binary, threads):
    import numpy as np

    kind, _, desc = CASES[name]
    x, y, path = load_case(name, args)
    n, d = x.shape
    reps = 1 if args.quick else args.repeats
    res = {"name": name, "kind": kind, "desc": desc, "n": n, "d": d, "file_mb": os.path.getsize(path) / 2**20,
           "dense_mb": n * d * 8 / 2**20, "mk": {}, "mk_err": None, "peers": {}, "maxrss_kib": None}
    times = {}
    objs = {}
    extra = {}
    for _ in range(reps):
        if kind == "kernel":
            gamma = 1.0 / d
            eps = 1e-3
            if binary and res["mk_err"] is None:
                for t in threads:
                    try:
                        rep = run_marginkit(binary, ["-s", "0", "-t", "2", "-c", "1", "-g", repr(gamma), "-e",
                                                     repr(eps), "-m", "200", "-h", "1", "-q", "--threads", str(t)],
                                            path)
                    except Exception as e:  # keep benchmarking the peers
                        res["mk_err"] = str(e)
                        break
                    times.setdefault(f"mk{t}", []).append(rep.get("train_seconds"))
                    o = rep.get("objective")
                    objs[f"mk{t}"] = o[0] if isinstance(o, list) else o
                    if rep["_maxrss_kib"] is not None:
                        res["maxrss_kib"] = max(res["maxrss_kib"] or 0, rep["_maxrss_kib"])
            r = run_libsvm(x, y, gamma, eps)
            times.setdefault("A", []).append(r["seconds"])
            objs["A"] = r["objective"]
            extra["A_nsv"] = r["n_sv"]
            r = run_sklearn_svc(x, y, gamma, eps)
            times.setdefault("B", []).append(r["seconds"])
            objs["B"] = r["objective"]
        else:
            eps = args.linear_eps
            s = "3" if kind == "linear-l1" else "1"
            x1 = np.hstack([x, np.ones((n, 1))])
            if binary and res["mk_err"] is None:
                try:
                    rep = run_marginkit(binary, ["--linear", "-s", s, "-c", "1", "-e", repr(eps), "-B", "1"], path)
                    times.setdefault("mk1", []).append(rep.get("train_seconds"))
                    w, pos = linear_w_from_model(rep["_model_text"], d)
                    if w is not None:
                        pos = pos if pos is not None else y[0]
                        objs["mk1"] = primal_objective(kind, w, x1, np.where(y == pos, 1.0, -1.0))
                    if rep["_maxrss_kib"] is not None:
                        res["maxrss_kib"] = max(res["maxrss_kib"] or 0, rep["_maxrss_kib"])
                except Exception as e:
                    res["mk_err"] = str(e)
            for key, fn in (("A", run_liblinear), ("B", run_linearsvc)):
                r = fn(x, y, kind, eps)
                times.setdefault(key, []).append(r["seconds"])
                ypm = np.where(y == r["pos"], 1.0, -1.0)
                objs[key] = primal_objective(kind, r["w"], x1, ypm)
                if r.get("note"):
                    extra[key + "_note"] = r["note"]
    if kind == "linear-l2":
        extra["p_star"] = l2_reference_optimum(x, y)
    res["times"] = {k: median(v) for k, v in times.items()}
    res["objs"] = objs
    res["extra"] = extra
    res["eps"] = 1e-3 if kind == "kernel" else args.linear_eps
    res["reps"] = reps
    return res


def warm_up(args):
    """One untimed run of each peer on a tiny problem: imports and first-call costs stay out of the table."""
    import numpy as np

    x, y = blobs(200, 5, 0)
    run_libsvm(x, y, 0.2, 1e-3)
    run_sklearn_svc(x, y, 0.2, 1e-3)
    run_liblinear(x, y, "linear-l1", 0.1)
    run_linearsvc(x, y, "linear-l1", 0.1)
    del np


def tables(results, binary, threads):
    out = []
    out.append("Kernel cases: C-SVC, RBF, C = 1, gamma = 1/d, eps 1e-3, cache 200 MB, shrinking on. "
               "Linear cases: -B 1 (regularised bias), C = 1; peer A = LIBLINEAR, peer B = LinearSVC. "
               "Times are training only, medians, in seconds.")
    out.append("")
    t_hdr = " | ".join(f"marginkit s (threads={t})" for t in threads)
    out.append(f"| case | n x d | {t_hdr} | peer A s (LIBSVM / LIBLINEAR) | peer B s (sklearn SVC / LinearSVC) "
               "| marginkit / fastest peer (< 1: marginkit faster) | objective rel. diff (marginkit vs A; B vs A) | marginkit peak RSS | data size |")
    out.append("|" + "---|" * (8 + len(threads)))
    for r in results:
        tm = r["times"]
        peers = [v for v in (tm.get("A"), tm.get("B")) if v]
        fastest = min(peers) if peers else None
        mk_cols, ratios = [], []
        for t in threads:
            v = tm.get(f"mk{t}")
            if r["kind"] != "kernel" and t != 1:
                mk_cols.append("n/a")
                continue
            mk_cols.append(fmt_s(v))
            if v and fastest:
                ratios.append(f"{v / fastest:.2f} (t={t})")
        oa = r["objs"].get("A")

        def rel(o):
            return None if (o is None or oa is None) else abs(o - oa) / max(abs(oa), 1e-300)

        mk_obj = next((r["objs"].get(f"mk{t}") for t in sorted(threads) if r["objs"].get(f"mk{t}") is not None), None)
        objcol = f"{fmt_rel(rel(mk_obj))}; {fmt_rel(rel(r['objs'].get('B')))}"
        rss = "—" if r["maxrss_kib"] is None else f"{r['maxrss_kib'] / 1024:.1f} MB"
        size = f"{r['file_mb']:.2f} MB file, {r['dense_mb']:.2f} MB dense f64"
        out.append(f"| {r['name']} | {r['n']:,} x {r['d']} | " + " | ".join(mk_cols)
                   + f" | {fmt_s(tm.get('A'))} | {fmt_s(tm.get('B'))} | {', '.join(ratios) or '—'} | {objcol} "
                   f"| {rss} | {size} |")
    ker = [r for r in results if r["kind"] == "kernel"]
    if ker:
        out.append("")
        out.append("Kernel cases, reference values: dual objective in LIBSVM's min form (1/2 a'Qa - e'a, "
                   "6 decimals as printed) and nSV.")
        out.append("")
        out.append("| case | LIBSVM objective | LIBSVM nSV | sklearn SVC objective | marginkit objective |")
        out.append("|---|---|---|---|---|")
        for r in ker:
            o = r["objs"]
            mk = next((o.get(f"mk{t}") for t in sorted(threads) if o.get(f"mk{t}") is not None), None)
            cols = ["—" if v is None else f"{v:.6f}" for v in (o.get("A"), None, o.get("B"), mk)]
            cols[1] = str(r["extra"].get("A_nsv", "—"))
            out.append(f"| {r['name']} | " + " | ".join(cols) + " |")
    lin = [r for r in results if r["kind"] != "kernel"]
    if lin:
        out.append("")
        out.append("Linear cases: primal objective P(w) = 1/2 |w|^2 + C sum loss of each solver's returned w "
                   "(bias weight included), recomputed here. L2-loss rows also give P(w) - P*, with P* from "
                   "LIBLINEAR's primal Newton solver (-s 2 -e 1e-8, untimed). (A duality gap built from w alone, at the "
                   "dual point a_i = 2C max(0, 1 - y_i w'x_i), is exact only at the optimum and is orders of "
                   "magnitude looser than P(w) - P* at eps 0.1, so it is not shown.)")
        out.append("")
        out.append("| case | eps | P(w) marginkit | P(w) LIBLINEAR | P(w) LinearSVC | rel. excess over best "
                   "(marginkit; LIBLINEAR; LinearSVC) | (P(w) - P*) / P* (L2 loss) |")
        out.append("|---|---|---|---|---|---|---|")
        for r in lin:
            o = r["objs"]
            vals = [o.get("mk1"), o.get("A"), o.get("B")]
            best = min(v for v in vals if v is not None)
            ex = "; ".join(fmt_rel(None if v is None else (v - best) / abs(best)) for v in vals)
            pstar = "—"
            if r["kind"] == "linear-l2":
                ps = r["extra"]["p_star"]
                pstar = "; ".join(fmt_rel(None if v is None else (v - ps) / abs(ps)) for v in vals)
            notes = " (LIBLINEAR hit its iteration cap)" if r["extra"].get("A_note") else ""
            pw = " | ".join("—" if v is None else f"{v:.10g}" for v in vals)
            out.append(f"| {r['name']}{notes} | {r['eps']:g} | {pw} | {ex} | {pstar} |")
    if not binary:
        out.append("")
        out.append("marginkit: not measured (binary not found; build with `cargo build --release -p marginkit-cli`).")
    for r in results:
        if r["mk_err"]:
            out.append(f"\nmarginkit failed on {r['name']}: {r['mk_err']}")
    return "\n".join(out) + "\n"


def environment_line():
    import importlib.metadata
    import platform

    v = {p: importlib.metadata.version(p) for p in ("libsvm-official", "liblinear-official", "scikit-learn", "numpy")}
    cpu = platform.processor() or platform.machine()
    try:
        for ln in open("/proc/cpuinfo"):
            if ln.startswith("model name"):
                cpu = ln.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"Python {platform.python_version()}, " + ", ".join(f"{k} {x}" for k, x in v.items())
            + f"; {cpu}, {os.cpu_count()} CPUs; {platform.platform()}")


def main():
    args = parse_args(sys.argv[1:])
    if args.list:
        for k, (kind, src, desc) in CASES.items():
            size = f"{src[1]:,} x {src[2]} (quick: {src[3]:,})" if src[0] == "blobs" else src[1]
            print(f"{k:20s} {kind:10s} {size:34s} {desc}")
        return
    if not args.no_venv:
        sys.path.insert(0, HERE)
        import pages

        pages.ensure_venv("venv-peers", "requirements.txt")
    names = list(CASES) if not args.cases else [c.strip() for c in args.cases.split(",") if c.strip()]
    bad = [c for c in names if c not in CASES]
    if bad:
        sys.exit(f"unknown case(s): {', '.join(bad)}; known: {', '.join(CASES)}")
    threads = [int(t) for t in args.threads.split(",")]
    build_marginkit(args)
    binary = find_marginkit(args)
    if not binary:
        print("marginkit binary not found: build with `cargo build --release -p marginkit-cli` "
              "(or pass --marginkit PATH); measuring the peers only.", file=sys.stderr)
    warm_up(args)
    results = []
    for name in names:
        src = CASES[name][1]
        if src[0] == "file" and not os.path.exists(os.path.join(args.data_dir, src[1])):
            print(f"skipping {name}: {os.path.join(args.data_dir, src[1])} not found (see --data-dir)",
                  file=sys.stderr, flush=True)
            continue
        print(f"running {name} ...", file=sys.stderr, flush=True)
        results.append(bench_case(name, args, binary, threads))
    text = f"Environment: {environment_line()}\n\n" + tables(results, binary, threads)
    sys.stdout.write(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
