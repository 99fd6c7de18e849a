#!/usr/bin/env python3
"""Core-set consensus benchmark: rounds to consensus vs N and graph density, bytes sent per
node per round, wall time in-process vs MPI ranks, and the core-set L2-SVM vs LIBSVM on a large
synthetic set.

    python3 bench/coreset_bench.py                       # everything, writes bench/results/coreset.md
    python3 bench/coreset_bench.py --sections rounds     # one section (rounds, mpi, svm)
    python3 bench/coreset_bench.py --svm-n 200000        # size of the synthetic SVM set

Section `rounds`: MEB of N Gaussian points in R^50, one per node, eps = 0.1, synchronous rounds; graphs:
a fresh directed Erdos-Renyi graph every round with expected out-degree 1, 3, 10 (p = deg/(N-1)), a
directed ring and a grid. Median over 3 seeds of the first round from which all nodes hold the same
core-set, and of the rounds until the (global, diagnostic) stopping rule fired.

Section `mpi`: the same problem and graph with 2, 4, 8 nodes, in-process (`marginkit coreset`) vs one
node per MPI rank (`mpirun --oversubscribe -np K marginkit-mpi`), median of 3 runs of the wall time of
the whole command (the MPI run includes MPI start-up) and of the consensus loop alone; both must
print the same core-set (checked).

Section `svm`: two Gaussian blobs (bench/run.py's generator, d = 10, Bayes error 0.1, 5% label
noise), n training rows + 10,000 test rows, RBF gamma = 1/d, C = 10. marginkit's core-set L2-SVM
(eps = 0.01: 100 core points, and eps = 0.002: 500) centralized (`--nodes 1`) and on 8 in-process nodes, against LIBSVM's
C-SVC (hinge loss: a different model, same kernel and C) through the `libsvm-official` package; single
run each (LIBSVM's time grows quadratically: it is skipped above --libsvm-max-n).

marginkit: `$CARGO_TARGET_DIR/release/marginkit` (build: cargo build --release -p marginkit-cli);
MPI: `$MPI_TARGET_DIR/release/marginkit-mpi` or crates/marginkit-mpi/target/release/marginkit-mpi
(cargo build --release --manifest-path crates/marginkit-mpi/Cargo.toml). Missing peers are skipped.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
CACHE = os.path.join(HERE, ".cache")


def find(name, dirs):
    for d in dirs:
        if d:
            p = os.path.join(d, "release", name)
            if os.path.exists(p):
                return p
    return None


def marginkit():
    p = find("marginkit", [os.environ.get("CARGO_TARGET_DIR"), os.path.join(ROOT, "target")])
    if not p:
        sys.exit("marginkit binary not found: cargo build --release -p marginkit-cli")
    return p


def marginkit_mpi():
    return find(
        "marginkit-mpi",
        [os.environ.get("MPI_TARGET_DIR"), os.path.join(ROOT, "crates", "marginkit-mpi", "target")],
    )


def gauss_file(n, d, seed):
    import numpy as np

    os.makedirs(CACHE, exist_ok=True)
    path = os.path.join(CACHE, f"gauss_n{n}_d{d}_seed{seed}.svm")
    if not os.path.exists(path):
        from run import write_svm

        x = np.random.default_rng(seed).normal(size=(n, d))
        write_svm(path, x, np.ones(n))
    return path


def blobs_file(n, d, seed, tag):
    os.makedirs(CACHE, exist_ok=True)
    path = os.path.join(CACHE, f"blobs_{tag}_n{n}_d{d}_seed{seed}.svm")
    if not os.path.exists(path):
        from run import blobs, write_svm

        x, y = blobs(n, d, seed)
        write_svm(path, x, y)
    return path


def run_json(cmd, env=None):
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip()}")
    return json.loads(r.stdout), wall


def section_rounds(out, exe, sizes):
    out.append("## Rounds to consensus vs N and graph density (MEB, d = 50, eps = 0.1, one point per node)\n")
    out.append("Median over seeds 1-3. `consensus` = first round from which every node holds the same core-set;")
    out.append("`stop` = rounds until the stopping rule fired; bytes = bytes sent per node per round; seconds =")
    out.append("wall time of the consensus loop (in-process, 2 shared cores).\n")
    out.append("| N | graph | consensus | stop | bytes/node/round | seconds |")
    out.append("|---|---|---|---|---|---|")
    for n in sizes:
        graphs = [(f"ER deg {deg}", f"er:{min(1.0, deg / (n - 1)):.6g}") for deg in (1, 3, 10) if deg < n]
        graphs += [("ring", "ring"), ("grid", "grid")]
        for name, g in graphs:
            rows = []
            for seed in (1, 2, 3):
                f = gauss_file(n, 50, seed)
                v, _ = run_json([exe, "coreset", "meb", f, "--nodes", str(n), "--graph", g, "--seed", str(seed), "--json"])
                assert v["agreed"], (n, g, seed)
                rows.append((v["consensus_round"], v["rounds"], v["bytes_per_node_round"], v["consensus_seconds"]))
            med = [statistics.median(c) for c in zip(*rows)]
            out.append(f"| {n} | {name} (`{g}`) | {med[0]:g} | {med[1]:g} | {med[2]:.0f} | {med[3]:.3f} |")
            print(out[-1], flush=True)
    out.append("")


def section_mpi(out, exe, mpi):
    out.append("## In-process vs MPI ranks (same problem, graph and seed)\n")
    if not mpi or not shutil.which("mpirun"):
        out.append("Skipped: marginkit-mpi or mpirun not found.\n")
        return
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    f = gauss_file(4000, 50, 7)
    out.append("MEB of 4,000 Gaussian points in R^50 split over K nodes, eps = 0.1, ER p = 0.5 per round, seed 1.")
    out.append("Median of 3 runs; `total` = whole command (MPI: includes `mpirun` start-up), `loop` = consensus rounds;")
    out.append("2 physical cores, so 4 and 8 ranks are oversubscribed.\n")
    out.append("| K | rounds | bytes/node/round | in-process total s | MPI total s | in-process loop s | MPI loop s | same core-set |")
    out.append("|---|---|---|---|---|---|---|---|")
    for k in (2, 4, 8):
        args = ["meb", f, "--graph", "er:0.5", "--seed", "1", "--json"]
        ip, mp = [], []
        for _ in range(3):
            v, w = run_json([exe, "coreset"] + args + ["--nodes", str(k)])
            ip.append((w, v["consensus_seconds"], v))
            u, w2 = run_json(["mpirun", "--oversubscribe", "-np", str(k), mpi] + args, env=env)
            mp.append((w2, u["consensus_seconds"], u))
        same = all(a[2]["core_set_multiset"] == b[2]["core_set_multiset"] and a[2]["radius2"] == b[2]["radius2"] for a, b in zip(ip, mp))
        v = ip[0][2]
        out.append(
            f"| {k} | {v['rounds']} | {v['bytes_per_node_round']:.0f} | {statistics.median(x[0] for x in ip):.3f} | "
            f"{statistics.median(x[0] for x in mp):.3f} | {statistics.median(x[1] for x in ip):.4f} | "
            f"{statistics.median(x[1] for x in mp):.4f} | {same} |"
        )
        print(out[-1], flush=True)
    out.append("")


def section_svm(out, exe, n, libsvm_max_n):
    d = 10
    train = blobs_file(n, d, 1, "train")
    test = blobs_file(10000, d, 2, "test")
    gamma = 1.0 / d
    out.append(f"## Core-set L2-SVM vs LIBSVM on a synthetic set (n = {n:,}, d = {d}, RBF gamma = 1/d, C = 10)\n")
    out.append("| method | train s | test accuracy % | support vectors |")
    out.append("|---|---|---|---|")
    for nodes, graph, eps in ((1, "complete", "0.01"), (8, "er:0.5", "0.01"), (1, "complete", "0.002")):
        v, w = run_json([exe, "coreset", "svm", train, "--test", test, "--eps", eps, "-c", "10", "-g", str(gamma),
                         "--nodes", str(nodes), "--graph", graph, "--json"])
        out.append(f"| marginkit core-set L2-SVM, eps {eps} (k = {v['k']}), {nodes} node(s) ({graph}) | {w:.2f} | "
                   f"{v['test_accuracy']:.2f} (train {v['train_accuracy']:.2f}) | {len(v['support'])} |")
        print(out[-1], flush=True)
    if n > libsvm_max_n:
        out.append(f"| LIBSVM C-SVC | skipped (n > {libsvm_max_n:,}) | | |")
    else:
        try:
            from libsvm.svmutil import svm_predict, svm_read_problem, svm_train
        except ImportError:
            out.append("| LIBSVM C-SVC | libsvm-official not installed | | |")
        else:
            y, x = svm_read_problem(train)
            yt, xt = svm_read_problem(test)
            t = time.perf_counter()
            m = svm_train(y, x, f"-s 0 -t 2 -g {gamma} -c 10 -q")
            w = time.perf_counter() - t
            _, acc, _ = svm_predict(yt, xt, m, "-q")
            out.append(f"| LIBSVM 3.37 C-SVC (hinge) | {w:.2f} | {acc[0]:.2f} | {m.get_nr_sv()} |")
            print(out[-1], flush=True)
    out.append("")


LIBSVM_CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from run import blobs
from libsvm.svmutil import svm_predict, svm_train
n, d, gamma = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
x, y = blobs(n, d, 1)
xt, yt = blobs(10000, d, 2)
t = time.perf_counter()
m = svm_train(y, x, f"-s 0 -t 2 -g {gamma} -c 10 -m 1000 -q")
w = time.perf_counter() - t
_, acc, _ = svm_predict(yt, xt, m, "-q")
print(json.dumps({"seconds": w, "accuracy": acc[0], "nsv": m.get_nr_sv()}))
"""


def libsvm_capped(n, d, gamma, cap):
    """LIBSVM C-SVC on blobs(n, d, seed 1) (the same rows as blobs_file(n, d, 1, ...)) in a child
    process killed after `cap` seconds; numpy arrays are passed directly (no text parsing)."""
    t = time.perf_counter()
    try:
        r = subprocess.run([sys.executable, "-c", LIBSVM_CHILD, HERE, str(n), str(d), str(gamma)],
                           capture_output=True, text=True, timeout=cap)
    except subprocess.TimeoutExpired:
        return None, time.perf_counter() - t
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip())
    return json.loads(r.stdout), time.perf_counter() - t


def section_svm_large(out, exe, n, libsvm_n, cap, parts):
    """The n = 1,000,000 comparison: LIBSVM capped at `cap` seconds at n, LIBSVM at `libsvm_n`
    (the largest n it finishes in about 10 minutes here), and the core-set L2-SVM at n."""
    d, gamma = 10, 0.1
    out.append(f"## Core-set L2-SVM vs LIBSVM at n = {n:,} (blobs, d = {d}, RBF gamma = 1/d, C = 10)\n")
    out.append("| method | n | train s (wall) | test accuracy % | support vectors |")
    out.append("|---|---|---|---|---|")
    if "libsvm" in parts:
        for m, c in ((libsvm_n, cap), (n, cap)):
            v, w = libsvm_capped(m, d, gamma, c)
            if v is None:
                out.append(f"| LIBSVM 3.37 C-SVC (hinge, -m 1000) | {m:,} | not finished: killed at the {c:.0f} s cap | | |")
            else:
                out.append(f"| LIBSVM 3.37 C-SVC (hinge, -m 1000) | {m:,} | {v['seconds']:.1f} | {v['accuracy']:.2f} | {v['nsv']} |")
            print(out[-1], flush=True)
    if "coreset" in parts:
        train = blobs_file(n, d, 1, "train")
        test = blobs_file(10000, d, 2, "test")
        for eps in ("0.01",):
            v, w = run_json([exe, "coreset", "svm", train, "--test", test, "--eps", eps, "-c", "10", "-g", str(gamma),
                             "--nodes", "1", "--graph", "complete", "--json"])
            out.append(f"| marginkit core-set L2-SVM, eps {eps} (k = {v['k']}), 1 node | {n:,} | {w:.1f} | "
                       f"{v['test_accuracy']:.2f} (train {v['train_accuracy']:.2f}) | {len(v['support'])} |")
            print(out[-1], flush=True)
    out.append("")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sections", default="rounds,mpi,svm")
    ap.add_argument("--sizes", default="10,30,100,300,1000")
    ap.add_argument("--svm-n", type=int, default=20000)
    ap.add_argument("--libsvm-max-n", type=int, default=100000)
    ap.add_argument("--large-n", type=int, default=1000000)
    ap.add_argument("--large-libsvm-n", type=int, default=30000)
    ap.add_argument("--libsvm-cap", type=float, default=1800.0, help="seconds; LIBSVM is killed after this")
    ap.add_argument("--large-parts", default="libsvm,coreset")
    ap.add_argument("--out", default=os.path.join(HERE, "results/coreset.md"))
    a = ap.parse_args()
    exe = marginkit()
    out = ["# Core-set consensus benchmark (bench/coreset_bench.py)\n",
           f"Command: `python3 bench/coreset_bench.py --sections {a.sections} --sizes {a.sizes} --svm-n {a.svm_n}`; "
           f"machine: {os.cpu_count()} logical cores shared with other jobs.\n"]
    secs = a.sections.split(",")
    if "rounds" in secs:
        section_rounds(out, exe, [int(s) for s in a.sizes.split(",")])
    if "mpi" in secs:
        section_mpi(out, exe, marginkit_mpi())
    if "svm" in secs:
        section_svm(out, exe, a.svm_n, a.libsvm_max_n)
    if "svm1m" in secs:
        section_svm_large(out, exe, a.large_n, a.large_libsvm_n, a.libsvm_cap, a.large_parts.split(","))
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(out) + "\n")
    os.replace(tmp, a.out)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
