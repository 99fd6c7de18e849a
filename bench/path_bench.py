#!/usr/bin/env python3
"""Regularization-path benchmark: LIBSVM (resp. LIBLINEAR) training each C independently vs the
marginkit path (warm starts) without screening and with Shrink+IT screening.

    python3 bench/path_bench.py                          # breast_cancer, digits_oe; RBF 0.1/d, 1/d, 10/d; linear
    python3 bench/path_bench.py --cases blobs20k --gammas 1   # the synthetic 20,000 x 20 set (slow)
    python3 bench/path_bench.py --out results.md

Grid: 31 values of C, 2^-5 .. 2^10 in steps of 2^0.5 (the issue's setting). marginkit solves the
bias-free SVM (the paper's formulation); LIBSVM/LIBLINEAR solve theirs (LIBSVM with its bias, LIBLINEAR
without a bias feature, -s 3), so times are compared, not objectives. marginkit's objectives with and
without screening are compared (they must agree to 1e-6 relative). Single run per entry; the machine's
load makes small times noisy.

Peers: the `libsvm-official` / `liblinear-official` Python packages (bench/requirements.txt); a missing
peer is reported and skipped. marginkit: `$CARGO_TARGET_DIR/release/marginkit` or
`target/release/marginkit` (build with `cargo build --release -p marginkit-cli`).
"""

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

GRID = [2.0 ** (-5 + 0.5 * k) for k in range(31)]


def binary():
    for d in (os.environ.get("CARGO_TARGET_DIR"), os.path.join(HERE, "..", "target")):
        if d:
            p = os.path.join(d, "release", "marginkit")
            if os.path.exists(p):
                return p
    sys.exit("marginkit binary not found: build with cargo build --release -p marginkit-cli")


def case_file(name, args):
    if name == "blobs20k":
        from run import blobs, write_svm  # the harness's generator (same seed and format)

        os.makedirs(os.path.join(HERE, ".cache"), exist_ok=True)
        path = os.path.join(HERE, ".cache", f"blobs_n20000_d20_seed{args.seed}.svm")
        if not os.path.exists(path):
            x, y = blobs(20000, 20, args.seed)
            write_svm(path, x, y)
        return path
    return os.path.join(args.data_dir, "clf", f"{name}.scale.svm")


def n_features(path):
    d = 0
    with open(path) as f:
        for line in f:
            for tok in line.split()[1:]:
                d = max(d, int(tok.split(":")[0]))
    return d


def marginkit_path(exe, path, extra, screening):
    cmd = [exe, "path", path, "--json", "--screening", screening] + extra
    t = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    wall = time.perf_counter() - t
    return json.loads(out), wall


def libsvm_each(path, gamma):
    try:
        from libsvm.svmutil import svm_problem, svm_parameter, svm_train, svm_read_problem
    except ImportError:
        return None
    y, x = svm_read_problem(path)
    prob = svm_problem(y, x)
    t = time.perf_counter()
    for c in GRID:
        svm_train(prob, svm_parameter(f"-s 0 -t 2 -g {gamma} -c {c} -e 0.001 -m 200 -q"))
    return time.perf_counter() - t


def liblinear_each(path):
    try:
        from liblinear.liblinearutil import problem, parameter, train, svm_read_problem
    except ImportError:
        return None
    y, x = svm_read_problem(path)
    prob = problem(y, x)
    t = time.perf_counter()
    for c in GRID:
        train(prob, parameter(f"-s 3 -c {c} -e 0.1 -q"))
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default="breast_cancer,digits_oe")
    ap.add_argument("--gammas", default="0.1,1,10", help="RBF gamma as multiples of 1/d")
    ap.add_argument("--no-linear", action="store_true")
    ap.add_argument("--data-dir", default="/work/shared/data")
    ap.add_argument("--seed", type=int, default=20261121)
    ap.add_argument("--out")
    args = ap.parse_args()
    exe = binary()
    grid_flags = ["--c-min", str(GRID[0]), "--c-max", str(GRID[-1]), "--grid", str(len(GRID))]
    rows = []
    for name in args.cases.split(","):
        path = case_file(name, args)
        d = n_features(path)
        configs = [(f"RBF {g}/d", float(g) / d) for g in args.gammas.split(",")]
        if not args.no_linear:
            configs.append(("linear", None))
        for label, gamma in configs:
            extra = grid_flags + (["-g", repr(gamma)] if gamma else ["--linear"])
            print(f"{name} {label} ...", file=sys.stderr)
            none, _ = marginkit_path(exe, path, extra, "none")
            it, _ = marginkit_path(exe, path, extra, "it")
            peer = libsvm_each(path, gamma) if gamma else liblinear_each(path)
            rel = max(
                abs(a["objective"] - b["objective"]) / abs(a["objective"])
                for a, b in zip(none["points"], it["points"])
            )
            rate = sum(p["screening_rate"] for p in it["points"]) / len(it["points"])
            rows.append((name, label, peer, none["total_seconds"], it["total_seconds"], rel, rate))
    lines = [
        "| data | kernel | peer each C (s) | marginkit path (s) | marginkit Shrink+IT (s) | IT / peer | IT / path | max rel obj diff | mean IT rate |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, label, peer, t_none, t_it, rel, rate in rows:
        peer_s = f"{peer:.3f}" if peer is not None else "n/a"
        ratio = f"{t_it / peer:.3f}" if peer else "n/a"
        lines.append(
            f"| {name} | {label} | {peer_s} | {t_none:.3f} | {t_it:.3f} | {ratio} | {t_it / t_none:.3f} | {rel:.1e} | {rate:.3f} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
