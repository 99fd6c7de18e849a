#!/usr/bin/env python3
"""Regularization-path benchmark: LIBSVM (resp. LIBLINEAR) training each C independently vs the
marginkit path (warm starts) without screening and with Shrink+IT screening.

    python3 bench/path_bench.py                               # breast_cancer, digits_oe; RBF 0.1/d, 1/d, 10/d; linear
    python3 bench/path_bench.py --cases blobs20k              # the synthetic 20,000 x 20 set (generated, seeded)
    python3 bench/path_bench.py --large                       # Table III setting on a synthetic sparse set
    python3 bench/path_bench.py --large --large-n 1000000 --large-d 100000 --large-cref 100,500,2000
    python3 bench/path_bench.py --large --large-start cold    # Table III as the paper runs it (both solves from zero)
    python3 bench/path_bench.py --out results.md --repeat 3

Grid: 31 values of C, 2^-5 .. 2^10 in steps of 2^0.5. marginkit solves the
bias-free SVM (the paper's formulation); LIBSVM/LIBLINEAR solve theirs (LIBSVM with its bias, LIBLINEAR
without a bias feature, -s 3), so times are compared, not objectives. marginkit's objectives with and
without screening are compared (they must agree to 1e-6 relative).

Times are CPU seconds (user + sys), the median of `--repeat` runs: the machine is shared, and CPU time
is less sensitive to other jobs than wall time. marginkit runs with RAYON_NUM_THREADS=1 and the peers
with OMP_NUM_THREADS=1 (one thread each); its CPU time is the sum of the points' `cpu_seconds` (the process's
CPU time between consecutive points, measured inside marginkit), so reading the data is excluded, as it is
for the peers (`time.process_time()` around their training calls only).

Linear rows also report how far LIBLINEAR's solutions are from the optimum: LIBLINEAR stops each C after
its pass limit (300 for -s 3 in liblinear 2.4x) whether or not it converged, while marginkit's DCD runs to
its tolerance (10,000 passes at most). "LL primal excess" is max over C of (P_LIBLINEAR(w) - D*) / |D*|
with D* = -(marginkit's dual objective) <= P* (so it bounds LIBLINEAR's primal suboptimality from
above, up to marginkit's own tolerance). The row "cap 300" runs marginkit's path with --max-iter 300
(LIBLINEAR's pass limit) for a like-for-like time.

Synthetic sets (no download; generated on first use into bench/.cache, seeded with --seed):
* blobs20k: 20,000 x 20 dense, two Gaussian blobs with Bayes error 0.1 and 5% flipped labels
  (`run.blobs`, the harness's generator).
* the large sparse set (`--large`): `sparse_set` below; n rows, d features, about `nnz` nonzeros per row:
  half from a pool of 500 features owned by the row's class, half uniform over all d features, values
  1/sqrt(row nnz) (unit rows, like tf-idf), then 5% of the labels flipped. Table III setting: C_ref = 500 C_min (Lemma 9's C_min = 1/max(Q1)),
  C = C_ref / 0.9 (`--large-cref` takes other multiples of C_min); marginkit path --c-list C_ref,C; the
  time is that of the second point (rule + solve, KKT re-check included), Shrink alone (--screening none)
  vs Shrink+IT (--screening it), wall and CPU (the point's own `cpu_seconds`). `--large-start` picks
  the path's warm start, the paper's cold start (LIBLINEAR trains C from zero; the rule still screens
  from the solution at C_ref), or both; the two are reported as separate rows, never mixed.

Peers: the `libsvm-official` / `liblinear-official` Python packages (bench/requirements.txt); a missing
peer is reported and skipped. marginkit: `$CARGO_TARGET_DIR/release/marginkit` or
`target/release/marginkit` (build with `cargo build --release -p marginkit-cli`).
"""

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time

# The pip builds of LIBSVM/LIBLINEAR use OpenMP: one thread, like marginkit here (and without it their
# spinning threads inflate CPU and wall time many times over on a loaded machine).
os.environ.setdefault("OMP_NUM_THREADS", "1")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import pages  # noqa: E402

GRID = [2.0 ** (-5 + 0.5 * k) for k in range(31)]
LIBLINEAR_PASSES = 300


def cache_dir():
    d = os.path.join(HERE, ".cache")
    os.makedirs(d, exist_ok=True)
    return d


def case_file(name, args):
    if name == "blobs20k":
        from run import blobs, write_svm  # the harness's generator (same seed and format)

        path = os.path.join(cache_dir(), f"blobs_n20000_d20_seed{args.seed}.svm")
        if not os.path.exists(path):
            x, y = blobs(20000, 20, args.seed)
            write_svm(path, x, y)
        return path
    return os.path.join(args.data_dir, "clf", f"{name}.scale.svm")


def sparse_set(n, d, nnz, seed, path, flip=0.05, pool=500, overlap=0.5):
    """Writes the large sparse synthetic set (see the module doc) to `path` (atomically).

    Each class owns a pool of `pool` feature indices (the first 2 * pool indices); a row of class y
    has `nnz` indices: each is, with probability `1 - overlap`, drawn from its class's pool,
    otherwise uniformly from all `d` (both classes share those). Values are 1/sqrt(row nnz) (unit
    rows); then a fraction `flip` of the labels is flipped. The pools give the low effective
    dimension of real text data (without them no sample of a sparse random set is far from the
    margin and nothing can be screened)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    tmp = path + ".tmp"
    chunk = 20000
    with open(tmp, "w") as f:
        for lo in range(0, n, chunk):
            m = min(chunk, n - lo)
            y = rng.choice(np.array([-1, 1]), size=m)
            own = rng.integers(0, pool, size=(m, nnz)) + np.where(y > 0, 0, pool)[:, None]
            anyf = rng.integers(0, d, size=(m, nnz))
            idx = np.where(rng.random((m, nnz)) < overlap, anyf, own)
            idx.sort(axis=1)
            keep = np.ones_like(idx, dtype=bool)
            keep[:, 1:] = idx[:, 1:] != idx[:, :-1]
            cnt = keep.sum(axis=1)
            val = 1.0 / np.sqrt(cnt)
            flips = rng.random(m) < flip
            y[flips] = -y[flips]
            lines = []
            for r in range(m):
                v = "%.6g" % val[r]
                toks = " ".join(f"{j + 1}:{v}" for j in idx[r][keep[r]])
                lines.append(f"{y[r]} {toks}\n")
            f.write("".join(lines))
    os.replace(tmp, path)


def n_features(path):
    d = 0
    with open(path) as f:
        for line in f:
            for tok in line.split()[1:]:
                d = max(d, int(tok.split(":")[0]))
    return d


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def path_cpu(js):
    """CPU seconds of the path itself: the sum of the points' `cpu_seconds` (the process's CPU
    time between consecutive points, measured inside marginkit, so reading the data is excluded),
    or None when the binary does not report it."""
    ts = [p.get("cpu_seconds") for p in js["points"]]
    return None if any(t is None for t in ts) else sum(ts)


def marginkit_path(exe, path, extra, screening):
    """One run: (json, CPU seconds of the path itself): the points' own CPU times (`path_cpu`);
    with an older binary, the run's CPU time scaled by total_seconds / wall (single thread: CPU ~
    wall of the part)."""
    cmd = [exe, "path", path, "--json", "--screening", screening] + extra
    env = dict(os.environ, RAYON_NUM_THREADS="1")
    c0, t0 = child_cpu(), time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env).stdout
    cpu, wall = child_cpu() - c0, time.perf_counter() - t0
    js = json.loads(out)
    own = path_cpu(js)
    return js, own if own is not None else cpu * min(1.0, js["total_seconds"] / wall)


def median_of(k, f):
    runs = [f() for _ in range(k)]
    return runs[0][0], statistics.median(r[1] for r in runs)


def libsvm_each(path, gamma):
    try:
        from libsvm.svmutil import svm_problem, svm_parameter, svm_train, svm_read_problem
    except ImportError:
        return None
    y, x = svm_read_problem(path)
    prob = svm_problem(y, x)
    t = time.process_time()
    for c in GRID:
        svm_train(prob, svm_parameter(f"-s 0 -t 2 -g {gamma} -c {c} -e 0.001 -m 200 -q"))
    return None, time.process_time() - t


def liblinear_each(path, objectives=None):
    """LIBLINEAR -s 3 at every C; with `objectives` (marginkit's dual objectives per C), also the
    largest relative primal excess of LIBLINEAR's solutions over -objective."""
    try:
        from liblinear.liblinearutil import problem, parameter, train, svm_read_problem
    except ImportError:
        return None
    y, x = svm_read_problem(path)
    prob = problem(y, x)
    t = time.process_time()
    models = [train(prob, parameter(f"-s 3 -c {c} -e 0.1 -q")) for c in GRID]
    cpu = time.process_time() - t
    excess = None
    if objectives is not None:
        excess = 0.0
        for c, m, f in zip(GRID, models, objectives):
            w, _ = m.get_decfun()
            s = 1.0 if m.get_labels()[0] == 1 else -1.0
            hinge = 0.0
            for yi, xi in zip(y, x):
                z = s * sum(w[j - 1] * v for j, v in xi.items() if j <= len(w))
                hinge += max(0.0, 1.0 - yi * z)
            primal = 0.5 * sum(v * v for v in w) + c * hinge
            excess = max(excess, (primal + f) / abs(f))
    return excess, cpu


def grid_rows(args, exe):
    grid_flags = ["--c-min", str(GRID[0]), "--c-max", str(GRID[-1]), "--grid", str(len(GRID))]
    rows = []
    for name in args.cases.split(","):
        path = case_file(name, args)
        d = n_features(path)
        configs = [(f"RBF {g}/d", float(g) / d) for g in args.gammas.split(",") if g]
        if not args.no_linear:
            configs.append(("linear", None))
        for label, gamma in configs:
            extra = grid_flags + (["-g", repr(gamma)] if gamma else ["--linear", "--start", args.start])
            print(f"{name} {label} ...", file=sys.stderr)
            none, t_none = median_of(args.repeat, lambda: marginkit_path(exe, path, extra, "none"))
            it, t_it = median_of(args.repeat, lambda: marginkit_path(exe, path, extra, "it"))
            if args.no_peer:
                peer = (None, None)
            elif gamma:
                peer = median_of(args.repeat, lambda: libsvm_each(path, gamma) or (None, None))
            else:
                objs = [p["objective"] for p in none["points"]]
                peer = median_of(args.repeat, lambda: liblinear_each(path, objs) or (None, None))
            rel = max(
                abs(a["objective"] - b["objective"]) / abs(a["objective"])
                for a, b in zip(none["points"], it["points"])
            )
            rate = sum(p["screening_rate"] for p in it["points"]) / len(it["points"])
            iters = sum(p["iterations"] for p in it["points"])
            rows.append((name, label, peer[1], t_none, t_it, rel, rate, iters, peer[0]))
            if not gamma:
                cap = extra + ["--max-iter", str(LIBLINEAR_PASSES)]
                cn, t_cn = median_of(args.repeat, lambda: marginkit_path(exe, path, cap, "none"))
                ci, t_ci = median_of(args.repeat, lambda: marginkit_path(exe, path, cap, "it"))
                # marginkit's own excess at the cap, against its converged objectives.
                ex = max(
                    (b["objective"] - a["objective"]) / abs(a["objective"])
                    for a, b in zip(none["points"], ci["points"])
                )
                relc = max(
                    abs(a["objective"] - b["objective"]) / abs(a["objective"])
                    for a, b in zip(cn["points"], ci["points"])
                )
                ratec = sum(p["screening_rate"] for p in ci["points"]) / len(ci["points"])
                itc = sum(p["iterations"] for p in ci["points"])
                rows.append((name, f"linear, cap {LIBLINEAR_PASSES}", peer[1], t_cn, t_ci, relc, ratec, itc, ("own", ex)))
    lines = [
        "| data | kernel | peer each C (CPU s) | marginkit path (CPU s) | marginkit Shrink+IT (CPU s) | IT / peer | IT / path | max rel obj diff | mean IT rate | IT iterations | LL primal excess |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, label, peer, t_none, t_it, rel, rate, iters, excess in rows:
        peer_s = f"{peer:.3f}" if peer is not None else "n/a"
        ratio = f"{t_it / peer:.3f}" if peer else "n/a"
        if isinstance(excess, tuple):
            ex_s = f"(marginkit's own: {excess[1]:.1e})"
        else:
            ex_s = f"{excess:.1e}" if excess is not None else ""
        lines.append(
            f"| {name} | {label} | {peer_s} | {t_none:.3f} | {t_it:.3f} | {ratio} | {t_it / t_none:.3f} | {rel:.1e} | {rate:.3f} | {iters} | {ex_s} |"
        )
    lines += ["", "Issue-3 targets per row (Shrink+IT path vs the peer each C: <= 0.25; vs marginkit's own path without screening: <= 0.6; same objectives: <= 1e-6 relative at tol 1e-3, the solver tolerance's effect at tol 0.1):", ""]
    lines += ["| data | kernel | IT / peer (<= 0.25) | IT / own path (<= 0.6) | max rel obj diff |", "|---|---|---|---|---|"]
    for name, label, peer, t_none, t_it, rel, rate, iters, excess in rows:
        if "cap" in label:
            continue
        r1 = f"{t_it / peer:.3f} {'met' if t_it / peer <= 0.25 else 'NOT met'}" if peer else "n/a"
        r2 = t_it / t_none
        lines.append(f"| {name} | {label} | {r1} | {r2:.3f} {'met' if r2 <= 0.6 else 'NOT met'} | {rel:.1e} |")
    return lines


def marginkit_path_cpu(exe, path, extra, screening):
    """One run: (json, CPU seconds of the whole process, wall seconds of the whole process)."""
    cmd = [exe, "path", path, "--json", "--screening", screening] + extra
    env = dict(os.environ, RAYON_NUM_THREADS="1")
    c0, t0 = child_cpu(), time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env).stdout
    return json.loads(out), child_cpu() - c0, time.perf_counter() - t0


def large_rows(args, exe):
    path = args.large_file or os.path.join(
        cache_dir(), f"sparse_pool_n{args.large_n}_d{args.large_d}_k{args.large_nnz}_seed{args.seed}.svm"
    )
    if not os.path.exists(path):
        print(f"generating {path} ...", file=sys.stderr)
        sparse_set(args.large_n, args.large_d, args.large_nnz, args.seed, path)
    # Lemma 9: C_min = 1 / max(Q 1), Q = Z Z', Z_i = y_i x_i (computed by marginkit itself).
    probe, _ = marginkit_path(exe, path, ["--linear", "--c-list", "1e-9", "--max-iter", "1"], "none")
    c_min = probe["c_min_trivial"]
    n = probe["n_samples"]
    lines = [
        f"Large sparse set: {os.path.basename(path)}, n = {n}; C_min = {c_min:.4g} (Lemma 9); each run is "
        "`marginkit path --linear --c-list C_ref,C --start S` with C = C_ref/0.9, timed at its second point "
        "(rule + solve, KKT re-check included). Medians of "
        f"{args.repeat}. \"CPU\" is the point's own CPU time (`cpu_seconds`: the process's CPU between the two "
        "points' reports, measured inside marginkit), \"wall\" its rule + solve seconds. Start \"warm\": the "
        "path's default (the second point starts from the scaled first solution); \"cold\": both points "
        "start from zero (screened variables at their fixed values), as LIBLINEAR trains one C in the "
        "paper's Table III; the rule screens from the first point's solution in both. Target: Shrink+IT <= 0.75x Shrink (CPU).",
        "",
        "| start | C_ref / C_min | C_ref | Shrink CPU (s) | Shrink+IT CPU (s) | Shrink+IT / Shrink (CPU) | target <= 0.75 | Shrink wall (s) | Shrink+IT wall (s) | IT rule wall (s) | IT rate | screened R / L | rel obj diff | passes (Shrink / IT) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    starts = ["auto", "cold"] if args.large_start == "both" else [args.large_start]
    for start in starts:
        for mult in [float(v) for v in args.large_cref.split(",")]:
            c_ref = mult * c_min
            c = c_ref / 0.9
            extra = ["--linear", "--start", start, "--c-list", f"{c_ref!r},{c!r}"]
            out = {}
            for scr in ("none", "it"):
                runs = []
                for _ in range(args.repeat):
                    js, cpu, wall = marginkit_path_cpu(exe, path, extra, scr)
                    p = js["points"][1]
                    t = p["rule_seconds"] + p["solve_seconds"]
                    own = p.get("cpu_seconds")
                    runs.append((js, t, own if own is not None else t * min(1.0, cpu / wall)))
                    print(
                        f"  start {start}, C_ref {mult:g} C_min, {scr}: point 2 {t:.3f} s wall, "
                        f"{runs[-1][2]:.3f} s CPU; process {cpu:.1f} s CPU / {wall:.1f} s wall",
                        file=sys.stderr,
                    )
                out[scr] = (runs[0][0], statistics.median(r[1] for r in runs), statistics.median(r[2] for r in runs))
            a, b = out["none"][0]["points"][1], out["it"][0]["points"][1]
            rel = abs(a["objective"] - b["objective"]) / abs(a["objective"])
            ratio = out["it"][2] / out["none"][2]
            lines.append(
                f"| {'warm' if start == 'auto' else start} | {mult:g} | {c_ref:.4g} | {out['none'][2]:.3f} | {out['it'][2]:.3f} | "
                f"{ratio:.3f} | {'met' if ratio <= 0.75 else 'NOT met'} | {out['none'][1]:.3f} | {out['it'][1]:.3f} | "
                f"{b['rule_seconds']:.3f} | {b['screening_rate']:.3f} | {b['screened_r']} / {b['screened_l']} | "
                f"{rel:.1e} | {a['iterations']} / {b['iterations']} |"
            )
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default="breast_cancer,digits_oe")
    ap.add_argument("--gammas", default="0.1,1,10", help="RBF gamma as multiples of 1/d")
    ap.add_argument("--no-linear", action="store_true")
    ap.add_argument("--no-peer", action="store_true", help="skip LIBSVM/LIBLINEAR (marginkit only)")
    ap.add_argument("--data-dir", default=os.path.join(os.path.dirname(HERE), "data"),
                    help="real data sets (default: the repository's data/)")
    ap.add_argument("--seed", type=int, default=20261121)
    ap.add_argument("--repeat", type=int, default=3, help="runs per entry (the median is reported)")
    ap.add_argument("--large", action="store_true", help="only the Table III setting on the large sparse set")
    ap.add_argument("--large-n", type=int, default=1000000)
    ap.add_argument("--large-d", type=int, default=100000)
    ap.add_argument("--large-nnz", type=int, default=20)
    ap.add_argument("--large-cref", default="500", help="C_ref as multiples of C_min, comma-separated")
    ap.add_argument(
        "--large-start",
        default="both",
        choices=["auto", "cold", "both"],
        help="start of the Table III solves: auto (the path's warm start), cold (from zero, as the paper's LIBLINEAR), both",
    )
    ap.add_argument("--large-file", help="use this LIBSVM file instead of generating the large set")
    ap.add_argument(
        "--start",
        default="auto",
        choices=["auto", "scaled", "secant"],
        help="linear paths: marginkit's warm start (path --start)",
    )
    ap.add_argument("--out")
    args = ap.parse_args()
    exe = pages.find_marginkit()
    lines = large_rows(args, exe) if args.large else grid_rows(args, exe)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
