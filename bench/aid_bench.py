#!/usr/bin/env python3
"""AID benchmark: AID-LAD vs HiGHS (scikit-learn QuantileRegressor) and AID-SVM vs LIBSVM / LIBLINEAR,
side by side with ratios.

    python3 bench/aid_bench.py                                  # the default (small) sizes
    python3 bench/aid_bench.py --lad 200000x10,1000000x100 --svm 200000x10 --out bench/aid_results.md

LAD data (our generator, P9 of the digest: the paper does not give one): X ~ N(0, 1)^(n x m),
beta_j = 1 + (j mod 3), intercept 0.5, noise Student-t with 2 degrees of freedom (heavy tails), and 5% of
the rows (chosen at random) get a gross outlier of +-50; numpy default_rng(seed).
Peers: QuantileRegressor(quantile=0.5, alpha=0, fit_intercept=True, solver='highs-ipm' and 'highs'), the
same LP (sum of absolute residuals with an intercept). marginkit: `aid lad` (AID, stops with the optimality
certificate) and `lad` (the full LP by our Frisch-Newton interior point), both through
`examples/aid_npy.rs` reading the same .npy files (file reading not timed; the peers' time is the fit call).
Objectives are recomputed here in numpy for every solver: sum |y - X b - b0|.
`--highs-solvers highs-ipm-lean,highs-ipm-dual` add the same HiGHS interior point (scipy's own HiGHS build) handed
the LP directly, without scikit-learn's and linprog's copies: scikit-learn's LP itself, or its LP dual (the only
form that fits in memory at n = 1e6; see the comment above highs_lean_worker), each in a child process with its
own peak RSS and CPU time. `--lean-presolve off` turns HiGHS's presolve off (faster and leaner on this LP).

SVM data: two Gaussian classes (label +1 for 2/3 of the rows), the first two features shifted by +-0.8,
the others pure noise, uniform(-1.5, 1.5) noise (overlapping classes), C = 0.1 (the paper's M).
Peers: LIBLINEAR `-s 3 -c C -B 1 -e 0.001` (L1-loss dual; it regularizes the bias, so its model is scored
on our problem: 1/2|w|^2 + C sum hinge, w without the bias) and LIBSVM `-t 0 -c C -e 0.001` (the same
problem as AID: unregularized bias; primal = -dual objective at convergence) for n <= --libsvm-max.
AID-SVM linear: gap tolerance --gap-tol (default 1e-6, not the paper's 1e-4: at 1e-4 LIBLINEAR's
uncertified model scored up to 1.7e-5 lower on our problem than AID's, see bench/results/aid.md).
"Accurate" is measured twice per row: (1) the objective of the paper's problem (1/2|w|^2 + C sum hinge,
unregularized bias), recomputed here in numpy for both models, as (E_AID - E_LIBLINEAR) / E_LIBLINEAR (<= 0:
AID at least as accurate); (2) the accuracy on a held-out split of --test-n rows drawn from the same
generator with seed + 1.
CPU seconds (user + sys) are reported beside wall seconds: ours from /proc/self/stat around the fit, LIBLINEAR's from
time.process_time() around train() (single-threaded, in process).

Medians of --repeats runs (default 1: the machine is shared; say so when quoting numbers).
"""

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
CACHE = os.environ.get("AID_BENCH_CACHE", os.path.join(HERE, ".cache"))  # --cache overrides


def lad_data(n, m, seed):
    import numpy as np

    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, m))
    beta = 1.0 + (np.arange(m) % 3)
    y = 0.5 + x @ beta + rng.standard_t(2, size=n)
    out = rng.random(n) < 0.05
    y[out] += rng.choice([-50.0, 50.0], size=int(out.sum()))
    return x, y


def svm_data(n, m, seed):
    import numpy as np

    rng = np.random.default_rng(seed)
    y = np.where(np.arange(n) % 3 == 0, -1.0, 1.0)
    x = rng.uniform(-1.5, 1.5, size=(n, m))
    x[:, : min(2, m)] += 0.8 * y[:, None]
    return x, y


def cached(kind, n, m, seed):
    import numpy as np

    os.makedirs(CACHE, exist_ok=True)
    base = os.path.join(CACHE, f"{kind}_n{n}_m{m}_s{seed}")
    if not os.path.exists(base + ".X.npy"):
        x, y = (lad_data if kind == "lad" else svm_data)(n, m, seed)
        np.save(base + ".X.npy", x)
        np.save(base + ".y.npy", y)
    return base + ".X.npy", base + ".y.npy"


def example_binary():
    for d in (os.environ.get("CARGO_TARGET_DIR"), os.path.join(HERE, "..", "target")):
        if d:
            p = os.path.join(d, "release", "examples", "aid_npy")
            if os.path.exists(p):
                return p
    sys.exit("build first: cargo build --release -p marginkit --example aid_npy")


TIMEOUT = None  # seconds for one run of ours (--ours-time-limit)


def run_cmd(cmd, timeout):
    """Runs cmd in its own process group; on timeout kills the whole group (not only /usr/bin/time, whose
    child would otherwise run on) and returns (None, stdout so far, stderr so far)."""
    import signal

    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
        return p.returncode, out, err
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        return None, out, err


def run_ours(method, xf, yf, *extra):
    """Runs the example; under /usr/bin/time -v when present, adding its peak RSS (MB) as "rss_mb" and
    its CPU seconds (user + sys, including the file reading) as "cpu_s"; under prlimit --as when
    --mem-limit-gb is set. --ours-time-limit kills the whole process group."""
    cmd = guarded([example_binary(), method, xf, yf, *map(str, extra)])
    timed = os.path.exists("/usr/bin/time")
    rc, stdout, stderr = run_cmd(cmd, TIMEOUT)
    trace = [ln for ln in stderr.splitlines() if ln.startswith("t ")]
    if rc is None:
        return {"seconds": None, "timeout": TIMEOUT, "trace_tail": trace[-3:]}
    if rc != 0:
        raise RuntimeError(stderr)

    res = json.loads(stdout.strip().splitlines()[-1])
    if trace:
        res["trace"] = trace
    if timed:
        parse_time_v(stderr, res)
        if "proc_cpu_s" in res:
            res["cpu_s"] = res["proc_cpu_s"]
    return res


def load_now():
    return os.getloadavg()[0]


def median(v):
    v = sorted(v)
    return v[len(v) // 2]


def lad_row(n, m, args):
    import numpy as np

    xf, yf = cached("lad", n, m, args.seed)
    # Memory-mapped: the parent holds no copy while AID and the lean HiGHS children run.
    x, y = np.load(xf, mmap_mode="r"), np.load(yf, mmap_mode="r")
    row = {"n": n, "m": m, "load_before": load_now()}
    aid = [run_ours("lad-aid", xf, yf, *(["--trace"] if args.trace else [])) for _ in range(args.repeats)]
    print(json.dumps(aid[0]), flush=True)
    if aid[0]["seconds"] is None:
        row.update({"aid_s": None, "aid_obj": None, "iterations": None, "r0": None, "rT": None, "stop": "timeout"})
    else:
        row["aid_s"] = median([a["seconds"] for a in aid])
        row["aid_obj"] = aid[0]["objective"]
        row["aid_rss_mb"] = aid[0].get("rss_mb")
        row["aid_cpu_s"] = median([a.get("fit_cpu_s", a.get("cpu_s", float("nan"))) for a in aid])
        row["aid_lb"] = aid[0].get("lower_bound")
        row.update({k: aid[0][k] for k in ("iterations", "r0", "rT", "init_seconds", "stop")})
    row["load_after_aid"] = load_now()
    if n * m <= args.full_max_cells:
        full = [run_ours("lad-full", xf, yf) for _ in range(args.repeats)]
        row["full_cpu_s"] = median([a.get("fit_cpu_s", float("nan")) for a in full]) if full[0]["seconds"] else None
        row["full_s"] = median([a["seconds"] for a in full]) if full[0]["seconds"] is not None else None
        row["full_obj"] = full[0].get("objective")
    else:
        row["full_s"], row["full_obj"] = None, None
    from sklearn.linear_model import QuantileRegressor

    for solver in args.highs_solvers.split(","):
        if not solver:
            continue
        if solver in LEAN_SOLVERS:
            if n * m > args.lean_max_cells:
                row[solver + "_s"] = None
                continue
            runs = [run_lean(solver, xf, yf, args.highs_time_limit) for _ in range(args.repeats)]
            ok = [r for r in runs if r.get("objective") is not None]
            r0 = runs[0]
            row[solver + "_run"] = r0
            row[solver + "_s"] = median([r["seconds"] for r in ok]) if ok else r0.get("seconds")
            row[solver + "_cpu_s"] = median([r["cpu_s"] for r in ok]) if ok else r0.get("cpu_s")
            row[solver + "_obj"] = r0.get("objective")
            row[solver + "_rss_mb"] = r0.get("rss_mb")
            row[solver + "_timeout"] = not ok
            print(json.dumps({"n": n, "m": m, solver: r0}), flush=True)
            continue
        if n * m > args.highs_max_cells:
            row[solver + "_s"] = None
            continue
        ts, cs = [], []
        import warnings

        x, y = np.asarray(x), np.asarray(y)  # scikit-learn's path: in memory, as a user calls it
        for _ in range(args.repeats):
            q = QuantileRegressor(quantile=0.5, alpha=0.0, fit_intercept=True, solver=solver,
                                  solver_options={"time_limit": args.highs_time_limit})
            t0, c0 = time.perf_counter(), time.process_time()
            ok = True
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    q.fit(x, y)
                except TypeError:  # HiGHS stopped at the time limit without a solution
                    ok = False
            ts.append(time.perf_counter() - t0)
            cs.append(time.process_time() - c0)
        row[solver + "_s"] = median(ts)
        row[solver + "_cpu_s"] = median(cs)
        row[solver + "_obj"] = float(np.abs(y - q.predict(x)).sum()) if ok else None
        row[solver + "_timeout"] = (not ok) or row[solver + "_s"] >= 0.98 * args.highs_time_limit
        print(json.dumps({"n": n, "m": m, solver: row[solver + "_s"], "obj": row[solver + "_obj"]}), flush=True)
    row["load_after"] = load_now()
    return row


# ---- HiGHS without scikit-learn's (and scipy.linprog's) copies ------------------------------------------
#
# scikit-learn's QuantileRegressor(solver='highs-ipm') builds A_eq = [1, X, -1, -X, I, -I] by
# scipy.sparse.hstack and calls scipy.optimize.linprog, which converts A_eq to COO (copy=True), vstacks it
# and converts it back to CSC before HiGHS copies it again; at 1e6 x 100 that process is OOM-killed at
# 17.8 GB (measured). The "lean" runs below hand HiGHS the same kind of LP directly, through the HiGHS build
# that scipy ships (scipy.optimize._highspy._core, the very solver linprog(method='highs-ipm') calls), with
# the options linprog passes (solver 'ipm', presolve on, crossover at HiGHS's default), CSC arrays built
# once (float64 values, int32 indices, no dense copies) and freed as soon as HiGHS holds its own copy:
#   highs-ipm-lean: scikit-learn's LP itself: min 0.5 1'u + 0.5 1'v over (s0, s, t0, t, u, v) >= 0,
#                   s0 - t0 + X (s - t) + u - v = y  (quantile 0.5, alpha 0; objective = LAD / 2).
#   highs-ipm-dual: its LP dual, max y'u s.t. [1 X]'u = 0, -1 <= u <= 1 (m + 1 rows, n columns); the
#                   coefficients are minus the row duals. Strong duality: the same optimal value.
# Every objective is recomputed in numpy from the returned coefficients: sum |y - X b - b0|.
LEAN_SOLVERS = ("highs-ipm-lean", "highs-ipm-dual")


def highs_lean_worker(form, xf, yf, time_limit):
    """Solves the LAD LP of (xf, yf) in the given form; prints one JSON line (seconds, cpu_s, status, objective)."""
    import numpy as np
    import scipy.optimize._highspy._core as hc

    x = np.load(xf, mmap_mode="r")
    y = np.load(yf)
    n, m = x.shape
    t0, c0 = time.perf_counter(), time.process_time()
    if form == "highs-ipm-lean":
        p = m + 1
        ncol = 2 * p + 2 * n
        nnz = 2 * p * n + 2 * n
        val = np.empty(nnz)
        col = val[: p * n].reshape(p, n)  # columns 1, X: each n long
        col[0] = 1.0
        np.copyto(col[1:], x.T)
        val[p * n : 2 * p * n] = -val[: p * n]
        val[2 * p * n : 2 * p * n + n] = 1.0
        val[2 * p * n + n :] = -1.0
        idx = np.empty(nnz, dtype=np.int32)
        ar = np.arange(n, dtype=np.int32)
        idx[: 2 * p * n].reshape(2 * p, n)[:] = ar
        idx[2 * p * n : 2 * p * n + n] = ar
        idx[2 * p * n + n :] = ar
        start = np.empty(ncol + 1, dtype=np.int32)
        start[: 2 * p + 1] = np.arange(2 * p + 1, dtype=np.int64) * n
        start[2 * p + 1 :] = 2 * p * n + np.arange(1, 2 * n + 1, dtype=np.int64)
        cost = np.concatenate([np.zeros(2 * p), np.full(2 * n, 0.5)])
        lower, upper = np.zeros(ncol), np.full(ncol, np.inf)
        rlo = rhi = y
        nrow = n
    elif form == "highs-ipm-dual":
        p = m + 1
        ncol, nrow, nnz = n, p, p * n
        if nnz >= 2**31:
            raise SystemExit("more than 2^31 nonzeros")
        val = np.empty((n, p))
        val[:, 0] = 1.0
        val[:, 1:] = x
        val = val.reshape(-1)
        idx = np.empty((n, p), dtype=np.int32)
        idx[:] = np.arange(p, dtype=np.int32)
        idx = idx.reshape(-1)
        start = (np.arange(n + 1, dtype=np.int64) * p).astype(np.int32)
        cost = -y
        lower, upper = np.full(n, -1.0), np.full(n, 1.0)
        rlo = rhi = np.zeros(p)
    else:
        raise SystemExit(f"unknown form {form}")
    del x
    build_s = time.perf_counter() - t0
    h = hc._Highs()
    # AID_BENCH_HIGHS_PRESOLVE=off (--lean-presolve off) turns HiGHS's presolve off (linprog's
    # options={'presolve': False}); AID_BENCH_HIGHS_LOG=1 prints HiGHS's log on stderr.
    presolve = os.environ.get("AID_BENCH_HIGHS_PRESOLVE", "on")
    log = os.environ.get("AID_BENCH_HIGHS_LOG", "") == "1"
    for k, v in (("output_flag", log), ("log_to_console", log), ("solver", "ipm"), ("presolve", presolve),
                 ("time_limit", float(time_limit))):
        h.setOptionValue(k, v)
    # One copy into HiGHS from the arrays' pointers (Highs::passModel with arrays); integrality all
    # continuous (0), passed explicitly because an empty array is not a null pointer.
    integ = np.zeros(ncol, dtype=np.int32)
    st = h.passModel(int(ncol), int(nrow), int(nnz), int(hc.MatrixFormat.kColwise), int(hc.ObjSense.kMinimize),
                     0.0, cost, lower, upper, np.ascontiguousarray(rlo), np.ascontiguousarray(rhi),
                     start, idx, val, integ)
    del start, idx, val, integ, cost, lower, upper
    if st == hc.HighsStatus.kError:
        raise SystemExit("passModel failed")
    t1 = time.perf_counter()
    h.run()
    solve_s = time.perf_counter() - t1
    status = h.modelStatusToString(h.getModelStatus())
    info = h.getInfo()
    out = {"form": form, "n": n, "m": m, "status": status, "presolve": presolve, "build_s": build_s, "solve_s": solve_s,
           "ipm_nit": info.ipm_iteration_count, "crossover_nit": info.crossover_iteration_count,
           "highs_objective": info.objective_function_value, "objective": None, "highs_version": h.version()}
    if h.getModelStatus() == hc.HighsModelStatus.kOptimal:
        sol = h.getSolution()
        if form == "highs-ipm-lean":
            v = np.asarray(sol.col_value[: 2 * p])
            coef = v[:p] - v[p:]
        else:
            coef = -np.asarray(sol.row_dual)
        del h, sol
        x = np.load(xf, mmap_mode="r")
        r = y - coef[0]
        for a in range(0, n, 1 << 18):  # blocks: no n x m temporary
            r[a : a + (1 << 18)] -= x[a : a + (1 << 18)] @ coef[1:]
        out["objective"] = float(np.abs(r).sum())
    out["seconds"] = time.perf_counter() - t0
    out["cpu_s"] = time.process_time() - c0
    print(json.dumps(out), flush=True)


MEM_LIMIT_GB = None  # --mem-limit-gb: address-space cap (prlimit --as) for the lean HiGHS and our runs


def guarded(cmd):
    """Prefixes cmd with /usr/bin/time -v (peak RSS, CPU) and prlimit --as (memory cap) when available."""
    if MEM_LIMIT_GB and os.path.exists("/usr/bin/prlimit"):
        cmd = ["/usr/bin/prlimit", f"--as={int(MEM_LIMIT_GB * 2**30)}"] + cmd
    if os.path.exists("/usr/bin/time"):
        cmd = ["/usr/bin/time", "-v"] + cmd
    return cmd


def parse_time_v(stderr, res):
    import re

    mm = re.search(r"Maximum resident set size \(kbytes\): (\d+)", stderr)
    if mm:
        res["rss_mb"] = int(mm.group(1)) / 1024.0
    u = re.search(r"User time \(seconds\): ([0-9.]+)", stderr)
    sy = re.search(r"System time \(seconds\): ([0-9.]+)", stderr)
    if u and sy:
        res["proc_cpu_s"] = float(u.group(1)) + float(sy.group(1))
    return res


def run_lean(form, xf, yf, time_limit):
    """Runs highs_lean_worker in a child process (own peak RSS; killed 120 s after HiGHS's time limit)."""
    cmd = guarded([sys.executable, os.path.abspath(__file__), "--highs-lean-worker", form, xf, yf, str(time_limit)])
    rc, stdout, stderr = run_cmd(cmd, time_limit + 600)
    logdir = os.environ.get("AID_BENCH_HIGHS_LOGDIR")
    if logdir:  # --lean-log DIR: HiGHS's own log and /usr/bin/time's report, one file per run
        os.makedirs(logdir, exist_ok=True)
        with open(os.path.join(logdir, f"{form}_{os.path.basename(xf)[:-6]}.log"), "w") as f:
            f.write(stdout + stderr)  # HiGHS logs to stdout
    if rc is None:
        return {"form": form, "status": "killed (timeout)", "objective": None}
    lines = [ln for ln in stdout.strip().splitlines() if ln.startswith("{")]
    if rc != 0 or not lines:
        tail = [ln for ln in stderr.strip().splitlines() if not ln.startswith("\t")]
        res = {"form": form, "status": f"failed (exit {rc})" + (": " + tail[-1][:200] if tail else ""),
               "objective": None}
        return parse_time_v(stderr, res)
    return parse_time_v(stderr, json.loads(lines[-1]))


def svm_primal(x, ypm, w, b, c):
    import numpy as np

    return 0.5 * float(w @ w) + c * float(np.maximum(0.0, 1.0 - ypm * (x @ w + b)).sum())


def svm_row(n, m, args):
    import numpy as np
    import scipy.sparse as sp

    xf, yf = cached("svm", n, m, args.seed)
    x, y = np.load(xf), np.load(yf)
    xt, yt = svm_data(args.test_n, m, args.seed + 1)
    c = args.c
    row = {"n": n, "m": m, "load_before": load_now()}
    extra = [c, "--gap-tol", args.gap_tol] + (["--engine", args.engine] if args.engine else [])
    aid = [run_ours("svm-aid", xf, yf, *extra) for _ in range(args.repeats)]
    row["aid_s"] = median([a["seconds"] for a in aid])
    # The fit's own CPU seconds (the example reads /proc/self/stat around the fit; file reading excluded).
    row["aid_cpu_s"] = median([a.get("fit_cpu_s", a.get("cpu_s", float("nan"))) for a in aid])
    row["aid_obj_reported"] = aid[0]["objective"]
    row["aid_lb"] = aid[0]["lower_bound"]
    row.update({k: aid[0][k] for k in ("iterations", "r0", "rT", "stop")})
    apos = aid[0]["pos_label"]
    aw, ab = np.array(aid[0]["w"]), aid[0]["b"]
    ypm_a = np.where(y == apos, 1.0, -1.0)
    row["aid_obj"] = svm_primal(x, ypm_a, aw, ab, c)
    row["aid_acc"] = float(np.mean(np.where(xt @ aw + ab > 0, apos, -apos) == yt))
    row["load_after_aid"] = load_now()
    from run import CaptureFd1

    from liblinear.liblinear import parameter, problem
    from liblinear.liblinearutil import train

    ts, cs = [], []
    for _ in range(args.repeats):
        prob = problem(y, sp.csr_matrix(x))
        with CaptureFd1():
            t0, c0 = time.perf_counter(), time.process_time()
            mdl = train(prob, parameter(f"-s 3 -c {c!r} -B 1 -e 0.001 -q"))
            ts.append(time.perf_counter() - t0)
            cs.append(time.process_time() - c0)
    w, b = mdl.get_decfun(0)
    pos = mdl.get_labels()[0]
    ypm = np.where(y == pos, 1.0, -1.0)
    w = np.array(w)
    row["liblinear_s"] = median(ts)
    row["liblinear_cpu_s"] = median(cs)
    row["liblinear_obj"] = svm_primal(x, ypm, w, b, c)
    row["liblinear_acc"] = float(np.mean(np.where(xt @ w + b > 0, pos, -pos) == yt))
    if n <= args.libsvm_max:
        from libsvm.svm import svm_parameter, svm_problem
        from libsvm.svmutil import svm_train

        ts = []
        for _ in range(args.repeats):
            prob = svm_problem(y, sp.csr_matrix(x))
            with CaptureFd1() as cap:
                t0 = time.perf_counter()
                svm_train(prob, svm_parameter(f"-s 0 -t 0 -c {c!r} -e 0.001 -m 200"))
                ts.append(time.perf_counter() - t0)
        import re

        objs = [float(v) for v in re.findall(r"obj = ([-+0-9.eE]+)", cap.text)]
        row["libsvm_s"] = median(ts)
        row["libsvm_obj"] = -objs[0] if objs else None
    row["load_after"] = load_now()
    return row


def fmt(v, spec=".3g"):
    return "n/a" if v is None else format(v, spec)


def tfmt(r, solver):
    v = r.get(solver + "_s")
    if v is None:
        return "not run"
    return f"> {v:.0f} (time limit)" if r.get(solver + "_timeout") else fmt(v)


def ipm_ratio(r):
    ipm = r.get("highs-ipm_s")
    if ipm is None or r["aid_s"] is None:
        return "n/a"
    return ("< " if r.get("highs-ipm_timeout") else "") + format(r["aid_s"] / ipm, ".2f")


def rel(a, b):
    return None if a is None or b is None else (a - b) / abs(b)


def main():
    if len(sys.argv) == 6 and sys.argv[1] == "--highs-lean-worker":
        highs_lean_worker(sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lad", default="200000x10", help="comma-separated NxM sizes for LAD")
    ap.add_argument("--svm", default="200000x10", help="comma-separated NxM sizes for linear SVM")
    ap.add_argument("--c", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--gap-tol", type=float, default=1e-6, help="AID-SVM relative gap tolerance")
    ap.add_argument("--engine", default=None, help="AID-SVM linear engine: auto, dcd, smo or N (SMO up to N clusters)")
    ap.add_argument("--test-n", type=int, default=100000, help="held-out rows for the SVM accuracy")
    ap.add_argument("--libsvm-max", type=int, default=50000, help="largest n for LIBSVM -t 0 (slow)")
    ap.add_argument("--highs-max-cells", type=float, default=2.5e7, help="skip HiGHS above n*m")
    ap.add_argument("--highs-time-limit", type=float, default=300.0,
                    help="HiGHS time limit in seconds (a capped run is reported as '> limit')")
    ap.add_argument("--highs-solvers", default="highs-ipm,highs",
                    help="comma-separated: scikit-learn solvers (highs-ipm, highs) and/or the lean HiGHS IPM runs "
                         "highs-ipm-lean (scikit-learn's LP handed to HiGHS directly) and highs-ipm-dual (its LP dual)")
    ap.add_argument("--lean-max-cells", type=float, default=float("inf"),
                    help="skip the lean HiGHS runs (highs-ipm-lean, highs-ipm-dual) above n*m")
    ap.add_argument("--mem-limit-gb", type=float, default=12.0,
                    help="address-space cap (prlimit --as) for each run of ours and each lean HiGHS child; 0: none")
    ap.add_argument("--lean-presolve", default="on", choices=["on", "off"],
                    help="HiGHS presolve in the lean runs (scikit-learn/linprog default: on)")
    ap.add_argument("--lean-log", default=None, help="directory for HiGHS's log of each lean run")
    ap.add_argument("--trace", action="store_true", help="AID-LAD prints one line per iteration on stderr")
    ap.add_argument("--full-max-cells", type=float, default=1e8, help="skip our full LP above n*m")
    ap.add_argument("--ours-time-limit", type=float, default=None, help="kill a run of ours after this many s")
    ap.add_argument("--out", default=None)
    ap.add_argument("--cache", default=None,
                    help="directory for the generated .npy data (default bench/.cache or $AID_BENCH_CACHE; "
                         "800,000 x 50 is 326 MB: put big runs under /tmp and delete them after)")
    args = ap.parse_args()
    global TIMEOUT, CACHE, MEM_LIMIT_GB
    TIMEOUT = args.ours_time_limit
    MEM_LIMIT_GB = args.mem_limit_gb or None
    os.environ["AID_BENCH_HIGHS_PRESOLVE"] = args.lean_presolve
    if args.lean_log:
        os.environ["AID_BENCH_HIGHS_LOG"] = "1"
        os.environ["AID_BENCH_HIGHS_LOGDIR"] = os.path.abspath(args.lean_log)
    if args.cache:
        CACHE = args.cache
    lines = []
    lean = ["### LAD: AID-LAD vs HiGHS IPM handed the LP directly (lean; CPU = user + sys of the fit/solve)", "",
            "| n | m | AID wall s | AID CPU s | AID peak RSS MB | AID stop | HiGHS form | presolve | HiGHS wall s | HiGHS CPU s | HiGHS peak RSS MB | HiGHS status | IPM it. | **AID / HiGHS (CPU)** | (E_AID - E_HiGHS) / E_HiGHS | scikit-learn highs-ipm CPU s |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    if args.lad:
        lines += ["### LAD: AID-LAD vs the full LP (ours) vs HiGHS (scikit-learn QuantileRegressor)", "",
                  "| n | m | r^0 | r^T | T | AID s | AID peak RSS MB | full LP (ours) s | HiGHS-ipm s | HiGHS (simplex) s | AID / HiGHS-ipm | AID / ours-full | objective rel. diff AID vs ours-full; vs HiGHS-ipm | load (1-min) |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for size in args.lad.split(","):
            n, m = map(int, size.lower().split("x"))
            r = lad_row(n, m, args)
            print(json.dumps(r), flush=True)
            for solver in LEAN_SOLVERS:
                lr = r.get(solver + "_run")
                if lr is None:
                    continue
                acpu, hcpu = r.get("aid_cpu_s"), r.get(solver + "_cpu_s")
                ratio = None if acpu is None or hcpu is None or r.get(solver + "_obj") is None else acpu / hcpu
                lean.append(
                    f"| {n:,} | {m} | {fmt(r['aid_s'])} | {fmt(acpu)} | {fmt(r.get('aid_rss_mb'), '.0f')} | "
                    f"{r.get('stop')} | {solver} | {lr.get('presolve', '-')} | {fmt(lr.get('seconds'))} | "
                    f"{fmt(hcpu)} | {fmt(lr.get('rss_mb'), '.0f')} | {lr.get('status')} | {lr.get('ipm_nit', '-')} | "
                    f"**{fmt(ratio, '.3f')}** | {fmt(rel(r['aid_obj'], r.get(solver + '_obj')), '.1e')} | "
                    f"{fmt(r.get('highs-ipm_cpu_s'))} |")
            ipm = r.get("highs-ipm_s")
            if r["aid_s"] is None:
                lines.append(f"| {n:,} | {m} | - | - | - | > {args.ours_time_limit:.0f} (killed) | - | {fmt(r['full_s'])} | "
                             f"{tfmt(r, 'highs-ipm')} | {tfmt(r, 'highs')} | - | - | - | {r['load_before']:.1f} |")
                continue
            full_ratio = None if r["full_s"] is None else r["aid_s"] / r["full_s"]
            lines.append(
                f"| {n:,} | {m} | {100*r['r0']:.2f}% | {100*r['rT']:.2f}% | {r['iterations']} | {fmt(r['aid_s'])} | "
                f"{fmt(r.get('aid_rss_mb'), '.0f')} | "
                f"{fmt(r['full_s'])} | {tfmt(r, 'highs-ipm')} | {tfmt(r, 'highs')} | "
                f"{ipm_ratio(r)} | {fmt(full_ratio, '.2f')} | "
                f"{fmt(rel(r['aid_obj'], r['full_obj']), '.1e')}; {fmt(rel(r['aid_obj'], r.get('highs-ipm_obj')), '.1e')} | "
                f"{r['load_before']:.1f}-{r['load_after']:.1f} |")
        lines.append("")
        if len(lean) > 3:
            lines += lean + [""]
    if args.svm:
        lines += [f"### Linear SVM (C = {args.c}): AID-SVM (gap tolerance {args.gap_tol:g}) vs LIBLINEAR (-s 3 -B 1 -e 0.001)", "",
                  "| n | m | r^0 | r^T | T | AID wall s | AID CPU s | LIBLINEAR wall s | LIBLINEAR CPU s | AID / LIBLINEAR (CPU) | AID gap | (E_AID - E_LIBLINEAR) / E_LIBLINEAR | held-out acc. AID / LIBLINEAR | LIBSVM s | load (1-min) |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for size in args.svm.split(","):
            n, m = map(int, size.lower().split("x"))
            r = svm_row(n, m, args)
            print(json.dumps(r), flush=True)
            ls = r.get("libsvm_s")
            gap = (r["aid_obj_reported"] - r["aid_lb"]) / r["aid_obj_reported"]
            lines.append(
                f"| {n:,} | {m} | {100*r['r0']:.3f}% | {100*r['rT']:.2f}% | {r['iterations']} | {fmt(r['aid_s'])} | "
                f"{fmt(r['aid_cpu_s'])} | {fmt(r['liblinear_s'])} | {fmt(r['liblinear_cpu_s'])} | "
                f"{r['aid_cpu_s'] / r['liblinear_cpu_s']:.2f} | {gap:.1e} | {fmt(rel(r['aid_obj'], r['liblinear_obj']), '+.1e')} | "
                f"{r['aid_acc']:.4f} / {r['liblinear_acc']:.4f} | {fmt(ls)} | {r['load_before']:.1f}-{r['load_after']:.1f} |")
        lines.append("")
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
