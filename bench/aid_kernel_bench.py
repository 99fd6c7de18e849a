#!/usr/bin/env python3
"""Kernel (RBF) AID-SVM vs LIBSVM, side by side: CPU seconds (one thread each) and objectives.

    python3 bench/aid_kernel_bench.py --sizes 30000x10 --c 1 --gamma 0.1
    python3 bench/aid_kernel_bench.py --sizes 30000x10 --c 0.1 --gamma 0.1 --rank 100 --full
    python3 bench/aid_kernel_bench.py --sizes 30000x10 --c 0.1 --gamma 0.5 --rank auto --full --cache /tmp/c

--rank R runs the Nystrom-steered kernel AID (`KernelSteering::Nystrom`, R landmarks: linear AID on
Nystrom features, then an exact warm-started SMO on the full problem certified by its duality gap; `--rank auto`:
`NystromRank::Auto`, rank 100 unless its sampled Nystrom residual exceeds 0.9, then a cold exact SMO);
without it the paper's averaged-Gram kernel AID (Appendix B). --full also times our own full SMO
(`svm-full`, `marginkit train -t 2` semantics, eps 1e-3) on the same problem.

Data: bench/aid_bench.py's SVM generator (two overlapping classes, 2/3 positive, features uniform(-1.5, 1.5),
the first two shifted by +-0.8; numpy default_rng(seed)). Problem: the C-SVM with an unregularized bias and an
RBF kernel exp(-gamma |x - x'|^2), what LIBSVM `-s 0 -t 2` solves. LIBSVM: `-s 0 -t 2 -g G -c C -e 0.001 -m 200`
in this process with OMP_NUM_THREADS=1; its primal objective at convergence is minus the dual `obj` it prints
(reported as the dual value, a lower bound, and compared with AID's bound and best objective).
AID: `examples/aid_npy.rs svm-aid X y C gamma` with RAYON_NUM_THREADS=1 under /usr/bin/time (user + sys CPU);
it stops at the relative gap 1e-4 between its best full-data primal E_best and its certified lower bound.
CPU time rather than wall time because the machine is shared (load is recorded with each row).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import aid_bench  # noqa: E402
from aid_bench import cached, example_binary  # noqa: E402


def ours(xf, yf, c, gamma, rank=None, method="svm-aid"):
    env = dict(os.environ, RAYON_NUM_THREADS="1")
    cmd = ["/usr/bin/time", "-f", "CPU %U %S RSS %M", example_binary(), method, xf, yf, str(c), str(gamma)]
    if rank:
        cmd.append(str(rank))
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    m = re.search(r"CPU ([0-9.]+) ([0-9.]+) RSS (\d+)", out.stderr)
    res["cpu"] = float(m.group(1)) + float(m.group(2))
    res["rss_mb"] = int(m.group(3)) / 1024.0
    return res


def libsvm(xf, yf, c, gamma):
    import numpy as np
    import scipy.sparse as sp
    from libsvm.svm import svm_parameter, svm_problem
    from libsvm.svmutil import svm_train
    from run import CaptureFd1

    x, y = np.load(xf), np.load(yf)
    prob = svm_problem(y, sp.csr_matrix(x))
    with CaptureFd1() as cap:
        t0, w0 = time.process_time(), time.perf_counter()
        svm_train(prob, svm_parameter(f"-s 0 -t 2 -g {gamma!r} -c {c!r} -e 0.001 -m 200"))
        cpu, wall = time.process_time() - t0, time.perf_counter() - w0
    obj = [float(v) for v in re.findall(r"obj = ([-+0-9.eE]+)", cap.text)]
    nsv = [int(v) for v in re.findall(r"nSV = (\d+)", cap.text)]
    it = [int(v) for v in re.findall(r"#iter = (\d+)", cap.text)]
    return {"cpu": cpu, "wall": wall, "dual": -obj[0] if obj else None, "nsv": nsv[0] if nsv else None,
            "iter": it[0] if it else None}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="30000x10")
    ap.add_argument("--c", type=float, default=1.0)
    ap.add_argument("--gamma", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-libsvm", action="store_true")
    ap.add_argument("--rank", default="0",
                    help="Nystrom rank, or auto (NystromRank::Auto: rank 100 when its sampled residual is <= 0.9, "
                         "else a cold exact SMO); 0: the averaged Gram of Appendix B")
    ap.add_argument("--cache", default=None, help="data cache directory (default: bench/aid_bench.py's)")
    ap.add_argument("--full", action="store_true", help="also time our full SMO")
    args = ap.parse_args()
    if args.cache:
        aid_bench.CACHE = args.cache
    if args.rank != "auto" and int(args.rank) < 0:
        ap.error("--rank: auto or a non-negative number")
    rank = None if args.rank in ("0", "") else args.rank
    print("| n | m | C | gamma | steering | AID CPU s | AID RSS MB | r^0 | r^T | T | AID E_best | AID lower bound | AID gap | "
          "LIBSVM CPU s | LIBSVM #iter | LIBSVM nSV | LIBSVM dual | AID / LIBSVM | (E_best - LIBSVM dual)/dual | "
          "our full SMO CPU s | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for size in args.sizes.split(","):
        n, m = map(int, size.lower().split("x"))
        xf, yf = cached("svm", n, m, args.seed)
        load0 = os.getloadavg()[0]
        a = ours(xf, yf, args.c, args.gamma, rank)
        print(json.dumps(a), file=sys.stderr, flush=True)
        full = ours(xf, yf, args.c, args.gamma, method="svm-full") if args.full else None
        print(json.dumps(full), file=sys.stderr, flush=True)
        lv = None if args.skip_libsvm else libsvm(xf, yf, args.c, args.gamma)
        print(json.dumps(lv), file=sys.stderr, flush=True)
        load1 = os.getloadavg()[0]
        gap = (a["objective"] - a["lower_bound"]) / a["objective"]
        ratio = "n/a" if lv is None else f"{a['cpu'] / lv['cpu']:.2f}"
        dev = "n/a" if lv is None or lv["dual"] is None else f"{(a['objective'] - lv['dual']) / abs(lv['dual']):.1e}"
        fin = a.get("finish") or {}
        if rank is None:
            steer = "averaged Gram"
        elif fin.get("rank") == 0:
            steer = f"Nystrom {rank}: cold (residual {fin['residual']:.2f}), {fin['smo_iterations']} SMO it."
        else:
            res = f", residual {fin['residual']:.2f}" if "residual" in fin else ""
            steer = f"Nystrom {rank} (rank {fin.get('rank')}{res}), {fin.get('smo_iterations')} SMO it."
        print(f"| {n:,} | {m} | {args.c:g} | {args.gamma:g} | {steer} | {a['cpu']:.2f} | {a['rss_mb']:.0f} | {100*a['r0']:.2f}% | "
              f"{100*a['rT']:.2f}% | {a['iterations']} | {a['objective']:.6f} | {a['lower_bound']:.6f} | {gap:.1e} | "
              f"{'n/a' if lv is None else format(lv['cpu'], '.2f')} | {'n/a' if lv is None else lv['iter']} | "
              f"{'n/a' if lv is None else lv['nsv']} | "
              f"{'n/a' if lv is None else format(lv['dual'], '.6f')} | {ratio} | {dev} | "
              f"{'n/a' if full is None else format(full['cpu'], '.2f')} | {load0:.1f}-{load1:.1f} |",
              flush=True)


if __name__ == "__main__":
    main()
