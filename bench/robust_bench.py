#!/usr/bin/env python3
"""Robust SVM benchmark: the whole outlier path (OP) for one C against CCCP on the paper's 5-point
grid, and the growth of the path cost with n.

    python3 bench/robust_bench.py                      # compare: breast_cancer, auto, boston, blobs20k (linear)
    python3 bench/robust_bench.py --scaling            # path cost vs n (1e3, 1e4, 5e4; linear and RBF)
    python3 bench/robust_bench.py --out results.md

Times are the library's own per-C seconds from `marginkit robust ... --json` (`runs[0].seconds`:
the standard SVM solve plus the path or the CCCP grid; file reading excluded), medians of
--repeats runs (default 3; 1 for n >= 20000). SVR sets: the shared `.scale.svm` inputs in [-1, 1]
with standardized outputs. blobs: bench/run.py's generator (two Gaussian blobs in 10-D, Bayes error
0.1, 15% label noise), unscaled. A run longer than --timeout seconds is skipped and reported as such.
marginkit: `$CARGO_TARGET_DIR/release/marginkit` or `target/release/marginkit`.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import pages  # noqa: E402


def cache_dir():
    d = os.path.join(HERE, ".cache")
    os.makedirs(d, exist_ok=True)
    return d


def blobs_file(n, seed=1):
    from run import blobs, write_svm

    path = os.path.join(cache_dir(), f"robust_blobs_n{n}_d10_seed{seed}.svm")
    if not os.path.exists(path):
        x, y = blobs(n, 10, seed, bayes_error=0.1, label_noise=0.15)
        write_svm(path, x, y)
    return path


def standardized(data_dir, name):
    path = os.path.join(cache_dir(), f"{name}.std.svm")
    if not os.path.exists(path):
        rows = [l.split(" ", 1) for l in open(os.path.join(data_dir, "reg", f"{name}.scale.svm")).read().split("\n") if l.strip()]
        ys = [float(r[0]) for r in rows]
        m, s = statistics.mean(ys), statistics.stdev(ys)
        with open(path + ".tmp", "w") as f:
            for (a, b) in rows:
                f.write("%.17g %s\n" % ((float(a) - m) / s, b))
        os.replace(path + ".tmp", path)
    return path


def run(bin_, task, path, kind, kernel, c, cccp, timeout):
    args = [bin_, "robust", task, path, "--path", kind, "-t", str(kernel), "-c", str(c), "--json"]
    if cccp:
        args.append("--cccp")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        sys.exit(out.stderr)
    r = json.loads(out.stdout)["runs"][0]
    # CPU seconds of the whole process (user + system; includes reading the file), the figure
    # to compare on a shared machine where wall time depends on the load.
    r["cpu"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return r


def timed(bin_, task, path, kind, kernel, c, cccp, repeats, timeout):
    runs = []
    for _ in range(repeats):
        r = run(bin_, task, path, kind, kernel, c, cccp, timeout)
        if r is None:
            return None
        runs.append(r)
    r = runs[0]
    r["median_seconds"] = statistics.median(x["seconds"] for x in runs)
    r["median_cpu"] = statistics.median(x["cpu"] for x in runs)
    return r


def fmt(r):
    return "skipped (> timeout)" if r is None else "%.3f" % r["median_seconds"]


def fmt_cpu(r):
    return "-" if r is None else "%.3f" % r["median_cpu"]


def compare(args, bin_):
    cases = [
        ("breast_cancer", "svc", os.path.join(args.data_dir, "clf", "breast_cancer.scale.svm"), [0, 2]),
        ("auto", "svr", standardized(args.data_dir, "auto"), [0, 2]),
        ("boston", "svr", standardized(args.data_dir, "boston"), [0, 2]),
        ("blobs20k", "svc", blobs_file(20000), [0]),
    ]
    if args.only:
        cases = [c for c in cases if c[0] in args.only.split(",")]
    lines = [
        "| data | n | kernel | path | OP seconds (CPU) | OP breakpoints | OP jumps | CCCP (5 points) seconds (CPU) | CCCP outer rounds | OP <= CCCP (CPU) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, task, path, kernels in cases:
        n = sum(1 for l in open(path) if l.strip())
        reps = 1 if n >= 20000 else args.repeats
        for k in kernels:
            for kind in ("theta", "s"):
                op = timed(bin_, task, path, kind, k, args.c, False, reps, args.timeout)
                cc = timed(bin_, task, path, kind, k, args.c, True, reps, args.timeout)
                ok = "" if op is None or cc is None else ("yes" if op["median_cpu"] <= cc["median_cpu"] else "no")
                lines.append(
                    "| %s | %d | %s | %s | %s (%s) | %s | %s | %s (%s) | %s | %s |"
                    % (
                        name, n, "linear" if k == 0 else "RBF 1/d", kind, fmt(op), fmt_cpu(op),
                        "-" if op is None else op["breakpoints"], "-" if op is None else op["jumps"],
                        fmt(cc), fmt_cpu(cc), "-" if cc is None else cc["jumps"], ok,
                    )
                )
                print(lines[-1], flush=True)
    return lines


def scaling(args, bin_):
    lines = [
        "| n | kernel | OP-theta seconds (CPU) | breakpoints | jumps | events | max active set |",
        "|---|---|---|---|---|---|---|",
    ]
    for n in [int(v) for v in args.sizes.split(",")]:
        path = blobs_file(n)
        for k in [int(v) for v in args.kernels.split(",")]:
            r = timed(bin_, "svc", path, "theta", k, args.c, False, 1, args.timeout)
            lines.append(
                "| %d | %s | %s (%s) | %s | %s | %s | %s |"
                % (
                    n, "linear" if k == 0 else "RBF 1/d", fmt(r), fmt_cpu(r),
                    *(("-",) * 4 if r is None else (r["breakpoints"], r["jumps"], r["events"], r["max_active"])),
                )
            )
            print(lines[-1], flush=True)
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=os.path.join(os.path.dirname(HERE), "data"),
                    help="real data sets (default: the repository's data/)")
    ap.add_argument("--c", type=float, default=1.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--scaling", action="store_true")
    ap.add_argument("--out")
    ap.add_argument("--only", help="comma-separated case names of the comparison (default: all)")
    ap.add_argument("--sizes", default="1000,10000,50000", help="n of the scaling runs")
    ap.add_argument("--kernels", default="0,2", help="kernels (-t) of the scaling runs")
    ap.add_argument("--bin", help="marginkit binary (default: the release build)")
    args = ap.parse_args()
    bin_ = args.bin or pages.find_marginkit()
    lines = scaling(args, bin_) if args.scaling else compare(args, bin_)
    if args.out:
        with open(args.out + ".tmp", "w") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(args.out + ".tmp", args.out)


if __name__ == "__main__":
    main()
