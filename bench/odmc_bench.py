#!/usr/bin/env python3
"""ODMC scaling benchmark: time per stochastic-mirror-descent iteration and total time vs n for the
linear kernel (n = 1e3 .. 1e5, d = 20, two overlapping Gaussian blobs), with marginkit's k-means side
by side on the same files (and scikit-learn's KMeans when it is installed).

    python3 bench/odmc_bench.py                        # n = 1000, 3000, 10000, 30000, 100000; medians of 3
    python3 bench/odmc_bench.py --ns 1000,100000 --repeats 1 --out results.md

Both methods run through the CLI (`marginkit cluster odmc|kmeans FILE --json`, default parameters:
ODMC lambda 1, nu 0.5, theta 0.2, beta 0.03, 300 iterations per round, at most 8 rounds; k-means 10
k-means++ restarts); times are marginkit's own `total_seconds` (reading the file excluded) and, for
ODMC, `seconds_per_iteration` = time inside the SMD iterations / iterations (the gap check, best
response and label generation excluded). With a linear cost per iteration, seconds_per_iteration / n
stays flat. marginkit: `$CARGO_TARGET_DIR/release/marginkit` or `target/release/marginkit`.
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import pages  # noqa: E402


def blobs_file(n, d, seed):
    """Two Gaussian blobs, means +-1.5 on the first 3 coordinates, unit variance (deterministic)."""
    os.makedirs(os.path.join(HERE, ".cache"), exist_ok=True)
    path = os.path.join(HERE, ".cache", f"odmc_blobs_n{n}_d{d}_seed{seed}.svm")
    if os.path.exists(path):
        return path
    rng = random.Random(seed)
    with open(path + ".tmp", "w") as f:
        for i in range(n):
            y = 1 if i % 2 == 0 else -1
            xs = [rng.gauss(0.0, 1.0) + (1.5 * y if k < 3 else 0.0) for k in range(d)]
            f.write(("+1" if y > 0 else "-1") + " " + " ".join(f"{k + 1}:{v:.6f}" for k, v in enumerate(xs)) + "\n")
    os.replace(path + ".tmp", path)
    return path


def run_cli(args):
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(args)} failed: {out.stderr}")
    return json.loads(out.stdout)


def sklearn_kmeans(path, seed):
    try:
        from sklearn.cluster import KMeans
        from sklearn.datasets import load_svmlight_file
        from sklearn.preprocessing import StandardScaler
    except ImportError:
        return None
    x, _ = load_svmlight_file(path)
    x = StandardScaler().fit_transform(x.toarray())
    t = time.perf_counter()
    KMeans(n_clusters=2, n_init=10, random_state=seed).fit(x)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ns", default="1000,3000,10000,30000,100000")
    ap.add_argument("--d", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out")
    a = ap.parse_args()
    mk = pages.find_marginkit()
    rows = []
    for n in [int(v) for v in a.ns.split(",")]:
        path = blobs_file(n, a.d, a.seed)
        tmp = os.path.join(HERE, ".cache", "labels.txt")
        od, km, sk = [], [], []
        for r in range(a.repeats):
            od.append(run_cli([mk, "cluster", "odmc", path, "--json", "-q", "-o", tmp, "--seed", str(r)]))
            km.append(run_cli([mk, "cluster", "kmeans", path, "--json", "-q", "-o", tmp, "--seed", str(r)]))
            s = sklearn_kmeans(path, r)
            if s is not None:
                sk.append(s)
        med = lambda xs: statistics.median(xs)
        spi = med([o["seconds_per_iteration"] for o in od])
        rows.append({
            "n": n,
            "odmc_total": med([o["total_seconds"] for o in od]),
            "odmc_iterations": med([o["iterations"] for o in od]),
            "odmc_spi": spi,
            "odmc_spi_per_n": spi / n,
            "odmc_acc": med([o["accuracy"] for o in od]),
            "km_total": med([k["total_seconds"] for k in km]),
            "km_acc": med([k["accuracy"] for k in km]),
            "sk_total": med(sk) if sk else None,
        })
        print(rows[-1], file=sys.stderr)
    lines = [
        f"ODMC (linear kernel) vs k-means, d = {a.d}, medians of {a.repeats} (seeds 0..{a.repeats - 1}); "
        f"command: python3 bench/odmc_bench.py --ns {a.ns} --repeats {a.repeats}",
        "",
        "| n | ODMC total s | ODMC iterations | ODMC s / iteration | (s / iteration) / n | ODMC Acc | k-means s (marginkit) | k-means Acc | k-means s (scikit-learn, n_init 10) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        sk = f"{r['sk_total']:.3f}" if r["sk_total"] is not None else "n/a"
        lines.append(
            f"| {r['n']:,} | {r['odmc_total']:.3f} | {r['odmc_iterations']:.0f} | {r['odmc_spi']:.2e} | "
            f"{r['odmc_spi_per_n']:.2e} | {r['odmc_acc']:.4f} | {r['km_total']:.3f} | {r['km_acc']:.4f} | {sk} |"
        )
    text = "\n".join(lines)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
