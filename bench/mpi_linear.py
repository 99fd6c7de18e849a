"""Exact distributed linear SVM: `mpirun -np P marginkit-mpi train --linear -s 2` (one thread per
rank) against single-process `marginkit train --linear -s 2` at 1 and 2 threads, and multi-core
LIBLINEAR (`-s 2 -m 2`), on a dense n x d set (default 1,000,000 x 20).

    python3 bench/mpi_linear.py [--n 1000000] [--d 20] [--repeats 3] [--marginkit PATH] [--mpi PATH]
        [--no-liblinear] [--out PAGE]
    python3 bench/mpi_linear.py --out bench/results/mpi_linear.md   # the results page
    python3 bench/mpi_linear.py --smoke                              # smoke run (or --quick): 20,000 rows, 1 repeat

Binaries, found as bench/pages.py says (--marginkit and --mpi override): marginkit from
`cargo build --release -p marginkit-cli`; marginkit-mpi from
`cargo build --release --manifest-path crates/marginkit-mpi/Cargo.toml`
(crates/marginkit-mpi/target/release/marginkit-mpi; $MPI_TARGET_DIR/release, $CARGO_TARGET_DIR/release
and target/mpi/release are looked in too); mpirun (OpenMPI) on PATH. Multi-core LIBLINEAR is the
`liblinear-multicore` package: the first run creates target/venv-multicore from
bench/requirements-multicore.txt (pinned; reinstalled when that file changes; the virtualenv of
bench/par_linear_bench.py) and re-runs itself inside it; --no-liblinear leaves that row out and needs
no virtualenv. Every run uses C = 1, -B 1 and LIBLINEAR's default tolerance (-e 0.01). Times are
medians of --repeats: `train_seconds` of marginkit's JSON report (the solve, without reading the file
or moving rows), LIBLINEAR's time around `train` (in a process of its own, on a problem built from the
same file). The model files of every marginkit run are compared: they must be identical bytes (the
exit status is 1 when they are not). The data set is written once to bench/.cache (seeded) and
reused. The load average before and after is printed and written to the page (--out): timings
taken under load are not comparable with those of a quiet machine.
"""
import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.path.join(HERE, ".cache")
sys.path.insert(0, HERE)

import pages  # noqa: E402

LIBLINEAR_SNIPPET = r"""
import json, sys, time
from liblinear.liblinearutil import svm_read_problem, problem, parameter, train
y, x = svm_read_problem(sys.argv[1])
prob = problem(y, x, bias=1)
t0 = time.perf_counter()
train(prob, parameter("-s 2 -c 1 -e 0.01 -m 2 -q"))
print(json.dumps({"train_seconds": time.perf_counter() - t0}))
"""


def make_data(n, d, seed=2026):
    """Two overlapping Gaussian classes, 2% labels flipped, 4 decimals (LIBSVM text)."""
    os.makedirs(CACHE, exist_ok=True)
    path = os.path.join(CACHE, f"mpi_linear_dense_n{n}_d{d}_seed{seed}.svm")
    if os.path.exists(path):
        return path
    rng = random.Random(seed)
    shift = 1.5 / d ** 0.5
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        for i in range(n):
            y = 1 if i % 2 == 0 else -1
            feats = " ".join(f"{k + 1}:{rng.gauss(0, 1) + shift * y:.4f}" for k in range(d))
            if rng.random() < 0.02:
                y = -y
            f.write(f"{y} {feats}\n")
    os.replace(tmp, path)
    return path


def run_json(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1"))
    if r.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def median_runs(cmd, repeats, model=None):
    reps = [run_json(cmd) for _ in range(repeats)]
    out = dict(reps[-1])
    out["median_seconds"] = statistics.median(r["train_seconds"] for r in reps)
    if model:
        with open(model, "rb") as f:
            out["model_bytes"] = f.read()
    return out


def mpi_version():
    """The first line of `mpirun --version` (the MPI implementation and its version)."""
    r = subprocess.run(["mpirun", "--version"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines = r.stdout.strip().splitlines()
    return lines[0] if lines else "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--d", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--smoke", "--quick", action="store_true", help="smoke run: 20,000 rows, 1 repeat")
    ap.add_argument("--marginkit", help="the marginkit binary")
    ap.add_argument("--mpi", help="the marginkit-mpi binary")
    ap.add_argument("--no-liblinear", action="store_true", help="leave multi-core LIBLINEAR out (no virtualenv)")
    ap.add_argument("--out", help="write the results page (Markdown) here")
    a = ap.parse_args()
    if a.smoke:
        a.n, a.repeats = 20_000, 1
    marginkit = pages.find_marginkit(a.marginkit)
    mpi = pages.find_marginkit(a.mpi, mpi=True)
    if shutil.which("mpirun") is None:
        raise SystemExit("mpirun (OpenMPI) is not on PATH")
    if not a.no_liblinear:
        pages.ensure_venv("venv-multicore", "requirements-multicore.txt")
    page = pages.Page("Exact distributed linear SVM (marginkit-mpi train --linear -s 2)")
    data = make_data(a.n, a.d)
    work = tempfile.mkdtemp(prefix="mk_mpi_linear_")
    flags = ["--linear", "-s", "2", "-c", "1", "-B", "1", "-q", "--json"]
    rows = []
    models = {}
    for threads in (1, 2):
        m = os.path.join(work, f"single{threads}.model")
        r = median_runs([marginkit, "train", *flags, "--threads", str(threads), data, m], a.repeats, m)
        rows.append((f"marginkit train, {threads} thread(s)", r))
        models[rows[-1][0]] = r["model_bytes"]
    for p in (1, 2):
        m = os.path.join(work, f"mpi{p}.model")
        cmd = ["mpirun", "--oversubscribe", "-np", str(p), mpi, "train", *flags, "--threads", "1", data, m]
        r = median_runs(cmd, a.repeats, m)
        rows.append((f"marginkit-mpi, P = {p} (1 thread/rank)", r))
        models[rows[-1][0]] = r["model_bytes"]
    skipped = None
    if a.no_liblinear:
        skipped = "multi-core LIBLINEAR left out (--no-liblinear)"
    else:
        reps = []
        for _ in range(a.repeats):
            r = subprocess.run([sys.executable, "-c", LIBLINEAR_SNIPPET, data], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
            if r.returncode != 0:
                skipped = f"multi-core LIBLINEAR failed: {r.stderr.strip().splitlines()[-1:]}"
                break
            reps.append(json.loads(r.stdout)["train_seconds"])
        if reps and not skipped:
            rows.append(("LIBLINEAR -s 2 -m 2 (multi-core)", {"median_seconds": statistics.median(reps)}))
    identical = len(set(models.values())) == 1
    base = rows[0][1]["median_seconds"]
    mpi1 = dict(rows)["marginkit-mpi, P = 1 (1 thread/rank)"]
    mpi2 = dict(rows)["marginkit-mpi, P = 2 (1 thread/rank)"]

    # Scaling model to P = 64 from the measured P = 1 compute and P = 2 traffic.
    iters = max(mpi2["iterations"], 1)
    reductions = mpi2["reductions"]
    msg_bytes = 8 * (a.d + 1)
    t_compute = mpi1["compute_seconds"]
    lat, bw = 20e-6, 10e9 / 8
    hop = lat + msg_bytes / bw
    k = mpi2["chunks"]
    model_lines = []
    for p in (1, 2, 4, 8, 16, 32, 64):
        holders = min(p, k)
        depth = (holders - 1) + (p - 1).bit_length()  # pipeline hops + broadcast tree depth
        t = t_compute / holders + reductions * depth * hop
        model_lines.append(f"| {p} | {holders} | {t_compute / holders:.3f} | {reductions * depth * hop:.4f} | {t:.3f} | {t_compute / t:.1f}x |")

    lines = [
        f"Data: dense {a.n:,} x {a.d} (two Gaussian classes, 2% flipped), C = 1, -B 1, -e 0.01. "
        f"Times: medians of {a.repeats}, the solve only (`train_seconds`). MPI: {mpi_version()}.",
        "",
        "| run | seconds | vs marginkit 1 thread |",
        "|---|---|---|",
    ]
    for name, r in rows:
        lines.append(f"| {name} | {r['median_seconds']:.3f} | {base / r['median_seconds']:.2f}x |")
    lines += [
        "",
        f"Model files of all marginkit runs identical: {'yes' if identical else 'NO'}.",
        f"P = 2: {iters} Newton iterations, {reductions} reductions, "
        f"{mpi2['bytes_per_iteration']:.0f} bytes and {mpi2['messages_per_iteration']:.1f} messages sent per "
        f"Newton iteration ({mpi2['bytes']} bytes in all); communication {mpi2['comm_seconds']:.3f} s of "
        f"{mpi2['train_seconds']:.3f} s on rank 0; rows per rank {mpi2['rows_per_rank']}.",
    ]
    if skipped:
        lines.append(f"\n{skipped}.")
    lines += [
        "",
        "## Model of scaling to P = 64",
        "",
        f"Assumptions: the compute of P = 1 ({t_compute:.3f} s, {t_compute / a.n * 1e9:.0f} ns per row for the "
        f"whole solve) divides evenly among the ranks that hold chunks: the solver's cut has {k} chunks "
        "here (at most 32, fixed by the data so that the sums are the single-process ones), so at most "
        f"{k} ranks compute and the others only relay; the same {reductions} reductions (the iterations do "
        "not depend on P: the model is the same bits); each reduction is a pipeline through the holders "
        "(min(P, K) - 1 hops) plus a broadcast of depth ceil(log2 P), each hop "
        f"{msg_bytes} bytes at 10 Gb/s with 20 us latency. The pipeline adds latency, not compute: every "
        "rank computes its chunks' partials before the reduction and only adds d-vectors inside it.",
        "",
        "| P | ranks with chunks | compute s | communication s | total s | speed-up |",
        "|---|---|---|---|---|---|",
        *model_lines,
        "",
        "The pipeline's latency grows linearly with P, so at large P and small d the reductions "
        "dominate. A tree of fixed shape over the chunks (not over the ranks) would cut that to "
        "O(log K) hops and still be exact: if one process also summed its chunk partials by the same "
        "fixed tree, any rank holding whole subtrees could reduce them locally and the bits would not "
        "depend on P. It would change the single-process summation order (models would move by "
        "ulps), so it is not done here.",
    ]
    smoke = None
    if a.smoke:
        smoke = (f"n = {a.n:,} smoke run", "python3 bench/mpi_linear.py --out bench/results/mpi_linear.md")
    page.write(a.out, "\n".join(lines), () if a.no_liblinear else ("liblinear-multicore",), smoke)
    shutil.rmtree(work, ignore_errors=True)
    if not identical:
        sys.exit(1)


if __name__ == "__main__":
    main()
