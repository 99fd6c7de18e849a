"""Exact distributed kernel SVM: `mpirun -np P marginkit-mpi train -s 0 -t 2` (row-partitioned SMO,
one thread per rank) against single-process `marginkit train --solver smo` (the same pair SMO) at 1 and
2 threads, on RBF C-SVC blobs (default n = 50,000); and the block working-set engine over MPI
(`marginkit-mpi train --solver block`) at P = 1 and 2 against `marginkit train --solver block` at 1 thread.

    python3 bench/mpi_kernel.py [--n 50000] [--repeats 3] [--marginkit PATH] [--mpi PATH] [--out PAGE]
    python3 bench/mpi_kernel.py --out bench/results/mpi_kernel.md   # the results page
    python3 bench/mpi_kernel.py --smoke                              # smoke run (or --quick): 2,000 rows, 1 repeat

Data: bench/block_smo_bench.py's blobs (bench/run.py's generator, d = 20, seed 20261121, %.17g text),
read from its cache (target/block-bench) when present, else generated there (numpy and scipy: the
first run then creates target/venv from bench/requirements.txt and re-runs itself inside it). C = 1,
gamma = 0.05, -e 1e-3, -m 200 (per rank), shrinking on, and a second pair of runs with -h 0, whose
model files must be identical bytes at every P and thread count (the exit status is 1 when they are
not; with shrinking the objectives must agree to 1e-6 relative). The block engine (no shrinking: it
runs once, with the -h 1 series) must write identical model files at P = 1, 2 and in one process. Times: medians of --repeats of
`train_seconds` of marginkit's JSON report (the solve, without reading the file). Binaries, found as
bench/pages.py says (--marginkit and --mpi override); mpirun (OpenMPI) on PATH. The load average before
and after is printed and written to the page (--out): timings taken under load are not comparable with
those of a quiet machine.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import pages  # noqa: E402

SEED = 20261121
FLAGS = ["-s", "0", "-t", "2", "-c", "1", "-g", "0.05", "-e", "1e-3", "-m", "200", "-q", "--json"]


def data(n):
    """block_smo_bench's blobs file of n rows (its cache, else generated into it)."""
    path = os.path.join(ROOT, "target", "block-bench", f"blobs_n{n}_d20_seed{SEED}.svm")
    if os.path.exists(path):
        return path
    try:
        import numpy  # noqa: F401
        import scipy  # noqa: F401
    except ImportError:
        pages.ensure_venv("venv", "requirements.txt")
    import block_smo_bench
    return block_smo_bench.data(n, SEED)[2]


def run_json(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1"))
    if r.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def objective(rep):
    o = rep["objective"]
    return o[0] if isinstance(o, list) else o


def median_runs(cmd, repeats, model):
    reps = [run_json(cmd) for _ in range(repeats)]
    out = dict(reps[-1])
    out["median_seconds"] = statistics.median(r["train_seconds"] for r in reps)
    out["obj"] = objective(reps[-1])
    with open(model, "rb") as f:
        out["model_bytes"] = f.read()
    return out


def mpi_version():
    r = subprocess.run(["mpirun", "--version"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines = r.stdout.strip().splitlines()
    return lines[0] if lines else "unknown"


BLOCK = "--solver block"


def series(marginkit, mpi, path, shrink, repeats, work, block=False):
    """Single process at 1 and 2 threads, then P = 1 and 2; with `block`, then the block engine in one
    process (1 thread) and at P = 1 and 2: [(name, report)]."""
    flags = FLAGS + ["-h", str(shrink)]
    rows = []
    for threads in (1, 2):
        m = os.path.join(work, f"single{threads}_h{shrink}.model")
        cmd = [marginkit, "train", *flags, "--solver", "smo", "--threads", str(threads), path, m]
        rows.append((f"marginkit train --solver smo, {threads} thread(s)", median_runs(cmd, repeats, m)))
    for p in (1, 2):
        m = os.path.join(work, f"mpi{p}_h{shrink}.model")
        cmd = ["mpirun", "--oversubscribe", "-np", str(p), mpi, "train", *flags, "--threads", "1", path, m]
        rows.append((f"marginkit-mpi, P = {p} (1 thread/rank)", median_runs(cmd, repeats, m)))
    if block:
        m = os.path.join(work, "single_block.model")
        cmd = [marginkit, "train", *flags, "--solver", "block", "--threads", "1", path, m]
        rows.append((f"marginkit train {BLOCK}, 1 thread", median_runs(cmd, repeats, m)))
        for p in (1, 2):
            m = os.path.join(work, f"mpi{p}_block.model")
            cmd = ["mpirun", "--oversubscribe", "-np", str(p), mpi, "train", *flags, "--solver", "block",
                   "--threads", "1", path, m]
            rows.append((f"marginkit-mpi {BLOCK}, P = {p} (1 thread/rank)", median_runs(cmd, repeats, m)))
    return rows


def table(rows):
    base = rows[0][1]["median_seconds"]
    out = ["| run | seconds | vs marginkit 1 thread | objective |", "|---|---|---|---|"]
    for name, r in rows:
        out.append(f"| {name} | {r['median_seconds']:.3f} | {base / r['median_seconds']:.2f}x | {r['obj']:.10g} |")
    return out


NETWORKS = (("10 Gb Ethernet", 20e-6, 10e9 / 8), ("InfiniBand HDR", 2e-6, 200e9 / 8))
RECORD_BYTES = 13 * 8  # one rank's record in the selection all-gathers


def collective_cost(p, lat, bw, per_rank_bytes):
    """One collective at P ranks: ceil(log2 P) latencies plus (P - 1) x the bytes a rank sends."""
    return 0.0 if p == 1 else (p - 1).bit_length() * lat + (p - 1) * per_rank_bytes / bw


def block_model(blk1, blk2, pair_iters, pair_per_iter):
    """The block engine's rows of the P = 64 model, from its P = 1 and P = 2 runs."""
    iters = max(blk2["iterations"], 1)
    calls = blk2["collectives"]
    # Bytes a rank sends per collective at P = 2 (each sends to the one other rank).
    per_rank = blk2["bytes"] / max(2 * calls, 1)
    c1 = blk1["train_seconds"] - blk1["comm_seconds"]
    c2 = blk2["train_seconds"] - blk2["comm_seconds"]
    # compute(P) = a + b / P through the two measured points: a is the replicated part (Q_BB, the
    # local solve, the merge of the candidates), b the part split by rows (columns, gradient).
    b = max(2.0 * (c1 - c2), 0.0)
    a = max(c1 - b, 0.0)
    out = [
        "",
        f"Block engine (`{BLOCK}`): {iters:,} local steps (pair steps) in {calls} collectives at P = 2, "
        f"{calls / iters:.4f} per step against the pair engine's {pair_per_iter:.1f} ({pair_iters:,} steps); "
        f"{per_rank:.0f} bytes sent per rank and collective (the ranks' best q candidates of each side, and "
        "the records and rows of the working set's new members). Compute modelled as a + b / P through the "
        f"measured P = 1 and P = 2 compute ({c1:.3f} s and {c2:.3f} s): a = {a:.3f} s replicated on every "
        f"rank (Q_BB, the local solve), b = {b:.3f} s split by rows (the new columns, the gradient); every "
        "collective costs as above with the bytes a rank sends at P = 2 (pessimistic: the rows are split "
        "among the ranks, only the candidate lists grow with P).",
        "",
        "| P | compute s | " + " | ".join(f"{name}: communication s | total s | speed-up" for name, _, _ in NETWORKS) + " |",
        "|---|---|" + "---|---|---|" * len(NETWORKS),
    ]
    for p in (1, 2, 4, 8, 16, 32, 64):
        c = a + b / p
        cells = []
        for _, lat, bw in NETWORKS:
            comm = calls * collective_cost(p, lat, bw, per_rank)
            cells.append(f"{comm:.3f} | {c + comm:.3f} | {c1 / (c + comm):.1f}x")
        out.append(f"| {p} | {c:.3f} | " + " | ".join(cells) + " |")
    out += [
        "",
        "Speed-ups against the block engine's P = 1 compute. The block engine replaces hundreds of pair "
        "steps' collectives by the two all-gathers of one outer iteration; what bounds it instead is its "
        "replicated part (a), which does not shrink with P.",
    ]
    return out


def scaling_model(mpi1, mpi2, n):
    """The section "Model of scaling to P = 64" from the measured P = 1 compute and P = 2 counts."""
    iters = max(mpi2["iterations"], 1)
    per_iter = mpi2["collectives"] / iters
    compute = mpi1["train_seconds"] - mpi1["comm_seconds"]
    out = [
        "## Model of scaling to P = 64",
        "",
        f"Assumptions: the compute of P = 1 ({compute:.3f} s for {iters:,} iterations, "
        f"{compute / iters * 1e6:.0f} us per iteration over {n:,} rows) divides evenly among the P ranks "
        "(each holds n / P rows; the larger total cache is ignored, so this is pessimistic for compute); the "
        f"iterations stay those of P = 2 ({iters:,}; with -h 0 they are the single process's whatever P is); "
        f"every iteration makes the {per_iter:.1f} collectives measured at P = 2, each costing ceil(log2 P) "
        f"latencies plus (P - 1) x {RECORD_BYTES} bytes at the link's bandwidth (an all-gather of the "
        "13-double records; the row broadcasts are smaller); the end (one all-gather of O(n) doubles) and the "
        "shrinking steps are left out. Two networks: 10 Gb Ethernet (20 us latency) and InfiniBand HDR "
        "(200 Gb/s, 2 us).",
        "",
        "| P | compute s | " + " | ".join(f"{name}: communication s | total s | speed-up" for name, _, _ in NETWORKS) + " |",
        "|---|---|" + "---|---|---|" * len(NETWORKS),
    ]
    for p in (1, 2, 4, 8, 16, 32, 64):
        c = compute / p
        cells = []
        for _, lat, bw in NETWORKS:
            per = collective_cost(p, lat, bw, RECORD_BYTES)
            comm = iters * per_iter * per
            cells.append(f"{comm:.3f} | {c + comm:.3f} | {compute / (c + comm):.1f}x")
        out.append(f"| {p} | {c:.3f} | " + " | ".join(cells) + " |")
    out += [
        "",
        "SMO moves two variables per iteration and every iteration waits for two to four collectives, so the "
        "latency, not the bytes, bounds the speed-up: ranks pay off while the compute per iteration per rank "
        "(about n / P rows of gradient update and kernel slices) stays well above a few latencies. The "
        "compute per iteration grows with n and the latency does not, so larger data scale to more ranks. "
        "A working set of q variables per round (the block engine's, below) divides the rounds, and with "
        "them the latency, by about q / 2.",
    ]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--smoke", "--quick", action="store_true", help="smoke run: 2,000 rows, 1 repeat")
    ap.add_argument("--marginkit", help="the marginkit binary")
    ap.add_argument("--mpi", help="the marginkit-mpi binary")
    ap.add_argument("--out", help="write the results page (Markdown) here")
    a = ap.parse_args()
    if a.smoke:
        a.n, a.repeats = 2_000, 1
    marginkit = pages.find_marginkit(a.marginkit)
    mpi = pages.find_marginkit(a.mpi, mpi=True)
    if shutil.which("mpirun") is None:
        raise SystemExit("mpirun (OpenMPI) is not on PATH")
    path = data(a.n)
    page = pages.Page("Exact distributed kernel SVM (marginkit-mpi train -s 0 -t 2)")
    work = tempfile.mkdtemp(prefix="mk_mpi_kernel_")
    both = series(marginkit, mpi, path, 1, a.repeats, work, block=True)
    on = [r for r in both if BLOCK not in r[0]]
    blocks = [r for r in both if BLOCK in r[0]]
    off = series(marginkit, mpi, path, 0, a.repeats, work)
    identical = len({r["model_bytes"] for _, r in off}) == 1
    block_identical = len({r["model_bytes"] for _, r in blocks}) == 1
    obj0 = on[0][1]["obj"]
    agree = all(abs(r["obj"] - obj0) <= 1e-6 * max(abs(obj0), 1.0) for _, r in on)
    mpi2 = dict(on)["marginkit-mpi, P = 2 (1 thread/rank)"]
    mpi1 = dict(on)["marginkit-mpi, P = 1 (1 thread/rank)"]
    blk2 = dict(blocks)[f"marginkit-mpi {BLOCK}, P = 2 (1 thread/rank)"]
    blk1 = dict(blocks)[f"marginkit-mpi {BLOCK}, P = 1 (1 thread/rank)"]
    iters = max(mpi2["iterations"], 1)
    lines = [
        f"Data: blobs {a.n:,} x 20 (bench/block_smo_bench.py's), RBF C-SVC, C = 1, gamma = 0.05, -e 1e-3, "
        f"200 MB cache per rank. Times: medians of {a.repeats}, the solve only (`train_seconds`). "
        f"MPI: {mpi_version()}.",
        "",
        "Shrinking on (`-h 1`), and the block engine (which does not shrink):",
        "",
        *table(on + blocks),
        "",
        "Shrinking off (`-h 0`):",
        "",
        *table(off),
        "",
        f"Model files with -h 0 identical at every P and thread count: {'yes' if identical else 'NO'}. "
        f"Objectives with -h 1 within 1e-6 relative: {'yes' if agree else 'NO'}. "
        f"Block engine's model files identical at P = 1, 2 and in one process: "
        f"{'yes' if block_identical else 'NO'}.",
        f"P = 2, -h 1: {iters} iterations, {mpi2['collectives']} collectives, {mpi2['bytes_per_iteration']:.0f} "
        f"bytes and {mpi2['messages_per_iteration']:.1f} messages sent per iteration ({mpi2['bytes']} bytes in "
        f"all); communication (time inside the collectives, waiting included) {mpi2['comm_seconds']:.3f} s of "
        f"{mpi2['train_seconds']:.3f} s on rank 0, per rank {mpi2['comm_seconds_per_rank']}; rows per rank "
        f"{mpi2['rows_per_rank']}; kernel cache misses per rank {mpi2['cache_misses_per_rank']}.",
        f"P = 1: {mpi1['train_seconds']:.3f} s, of which {mpi1['comm_seconds']:.3f} s in the (local) collectives.",
        f"Block engine, P = 2: {blk2['iterations']} local steps, {blk2['collectives']} collectives, "
        f"{blk2['bytes_per_iteration']:.0f} bytes and {blk2['messages_per_iteration']:.3f} messages sent per "
        f"step ({blk2['bytes']} bytes in all); communication {blk2['comm_seconds']:.3f} s of "
        f"{blk2['train_seconds']:.3f} s on rank 0.",
        "",
        "Per iteration every rank takes part in two all-gathers of 13 doubles and at most two broadcasts "
        "of one row (20 doubles here; a row every rank already received is not sent again): the traffic "
        "does not grow with n, the latency of two to four collectives per iteration does not shrink "
        "with P, and each rank's work is its n / P rows' part of the selection, the gradient update and "
        "the kernel columns it misses.",
    ]
    lines += ["", *scaling_model(mpi1, mpi2, a.n)]
    lines += block_model(blk1, blk2, iters, mpi2["collectives"] / iters)
    smoke = None
    if a.smoke:
        smoke = (f"n = {a.n:,} smoke run", "python3 bench/mpi_kernel.py --out bench/results/mpi_kernel.md")
    page.write(a.out, "\n".join(lines), (), smoke)
    shutil.rmtree(work, ignore_errors=True)
    if not (identical and agree and block_identical):
        sys.exit(1)


if __name__ == "__main__":
    main()
