#!/usr/bin/env python3
"""AID benchmark: AID-LAD vs HiGHS (scikit-learn QuantileRegressor) and AID-SVM vs LIBSVM / LIBLINEAR,
side by side with ratios.

    python3 bench/aid_bench.py                                  # the default (small) sizes
    python3 bench/aid_bench.py --lad 200000x10,1000000x100 --svm 200000x10 --out bench/aid_results.md

LAD data (the issue's generator, P9 of the digest: the paper does not give one): X ~ N(0, 1)^(n x m),
beta_j = 1 + (j mod 3), intercept 0.5, noise Student-t with 2 degrees of freedom (heavy tails), and 5% of
the rows (chosen at random) get a gross outlier of +-50; numpy default_rng(seed).
Peers: QuantileRegressor(quantile=0.5, alpha=0, fit_intercept=True, solver='highs-ipm' and 'highs'), the
same LP (sum of absolute residuals with an intercept). marginkit: `aid lad` (AID, stops with the optimality
certificate) and `lad` (the full LP by our Frisch-Newton interior point), both through
`examples/aid_npy.rs` reading the same .npy files (file reading not timed; the peers' time is the fit call).
Objectives are recomputed here in numpy for every solver: sum |y - X b - b0|.

SVM data: two Gaussian classes (label +1 for 2/3 of the rows), the first two features shifted by +-0.8,
the others pure noise, uniform(-1.5, 1.5) noise (overlapping classes), C = 0.1 (the paper's M).
Peers: LIBLINEAR `-s 3 -c C -B 1 -e 0.001` (L1-loss dual; it regularizes the bias, so its model is scored
on our problem: 1/2|w|^2 + C sum hinge, w without the bias) and LIBSVM `-t 0 -c C -e 0.001` (the same
problem as AID: unregularized bias; primal = -dual objective at convergence) for n <= --libsvm-max.
AID-SVM linear: gap tolerance --gap-tol (default 1e-6, not the paper's 1e-4: at 1e-4 LIBLINEAR's
uncertified model scored up to 1.7e-5 lower on our problem than AID's, see docs/repro/aid_bench_results.md).
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


def run_ours(method, xf, yf, *extra):
    """Runs the example; under /usr/bin/time -v when present, adding its peak RSS (MB) as "rss_mb" and
    its CPU seconds (user + sys, including the file reading) as "cpu_s"."""
    cmd = [example_binary(), method, xf, yf, *map(str, extra)]
    timed = os.path.exists("/usr/bin/time")
    if timed:
        cmd = ["/usr/bin/time", "-v"] + cmd
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return {"seconds": None, "timeout": TIMEOUT}
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    if timed:
        import re

        m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", out.stderr)
        if m:
            res["rss_mb"] = int(m.group(1)) / 1024.0
        u = re.search(r"User time \(seconds\): ([0-9.]+)", out.stderr)
        sy = re.search(r"System time \(seconds\): ([0-9.]+)", out.stderr)
        if u and sy:
            res["cpu_s"] = float(u.group(1)) + float(sy.group(1))
    return res


def load_now():
    return os.getloadavg()[0]


def median(v):
    v = sorted(v)
    return v[len(v) // 2]


def lad_row(n, m, args):
    import numpy as np

    xf, yf = cached("lad", n, m, args.seed)
    x, y = np.load(xf), np.load(yf)
    row = {"n": n, "m": m, "load_before": load_now()}
    aid = [run_ours("lad-aid", xf, yf) for _ in range(args.repeats)]
    print(json.dumps(aid[0]), flush=True)
    if aid[0]["seconds"] is None:
        row.update({"aid_s": None, "aid_obj": None, "iterations": None, "r0": None, "rT": None, "stop": "timeout"})
    else:
        row["aid_s"] = median([a["seconds"] for a in aid])
        row["aid_obj"] = aid[0]["objective"]
        row["aid_rss_mb"] = aid[0].get("rss_mb")
        row["aid_lb"] = aid[0].get("lower_bound")
        row.update({k: aid[0][k] for k in ("iterations", "r0", "rT", "init_seconds", "stop")})
    row["load_after_aid"] = load_now()
    if n * m <= args.full_max_cells:
        full = [run_ours("lad-full", xf, yf) for _ in range(args.repeats)]
        row["full_s"] = median([a["seconds"] for a in full]) if full[0]["seconds"] is not None else None
        row["full_obj"] = full[0].get("objective")
    else:
        row["full_s"], row["full_obj"] = None, None
    from sklearn.linear_model import QuantileRegressor

    for solver in args.highs_solvers.split(","):
        if not solver:
            continue
        if n * m > args.highs_max_cells:
            row[solver + "_s"] = None
            continue
        ts = []
        import warnings

        for _ in range(args.repeats):
            q = QuantileRegressor(quantile=0.5, alpha=0.0, fit_intercept=True, solver=solver,
                                  solver_options={"time_limit": args.highs_time_limit})
            t0 = time.perf_counter()
            ok = True
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    q.fit(x, y)
                except TypeError:  # HiGHS stopped at the time limit without a solution
                    ok = False
            ts.append(time.perf_counter() - t0)
        row[solver + "_s"] = median(ts)
        row[solver + "_obj"] = float(np.abs(y - q.predict(x)).sum()) if ok else None
        row[solver + "_timeout"] = (not ok) or row[solver + "_s"] >= 0.98 * args.highs_time_limit
        print(json.dumps({"n": n, "m": m, solver: row[solver + "_s"], "obj": row[solver + "_obj"]}), flush=True)
    row["load_after"] = load_now()
    return row


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
    ap.add_argument("--highs-solvers", default="highs-ipm,highs", help="comma-separated scikit-learn solvers")
    ap.add_argument("--full-max-cells", type=float, default=1e8, help="skip our full LP above n*m")
    ap.add_argument("--ours-time-limit", type=float, default=None, help="kill a run of ours after this many s")
    ap.add_argument("--out", default=None)
    ap.add_argument("--cache", default=None,
                    help="directory for the generated .npy data (default bench/.cache or $AID_BENCH_CACHE; "
                         "800,000 x 50 is 326 MB: put big runs under /tmp and delete them after)")
    args = ap.parse_args()
    global TIMEOUT, CACHE
    TIMEOUT = args.ours_time_limit
    if args.cache:
        CACHE = args.cache
    lines = []
    if args.lad:
        lines += ["### LAD: AID-LAD vs the full LP (ours) vs HiGHS (scikit-learn QuantileRegressor)", "",
                  "| n | m | r^0 | r^T | T | AID s | AID peak RSS MB | full LP (ours) s | HiGHS-ipm s | HiGHS (simplex) s | AID / HiGHS-ipm | AID / ours-full | objective rel. diff AID vs ours-full; vs HiGHS-ipm | load (1-min) |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for size in args.lad.split(","):
            n, m = map(int, size.lower().split("x"))
            r = lad_row(n, m, args)
            print(json.dumps(r), flush=True)
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
