#!/usr/bin/env python3
"""Production figures of marginkit: threads 1 vs 2 (RBF C-SVC, linear DCD), peak memory of a large
RBF fit against cache + 3x data, and the time Ctrl-C takes to return.

    python3 bench/prod_bench.py [--repeats 3] [--mem-n 200000] [--mem-max-iter N]
        [--skip threads,mem,ctrlc,ctrlc-aid] [--aid-n 20000] [--aid-delays 1,2,3,4,6]

Everything runs the release CLI (`cargo build --release -p marginkit-cli`; --marginkit to override)
on seeded synthetic blobs written as LIBSVM text to the temp directory:
- threads: RBF C-SVC on 20,000 x 20 and 50,000 x 20 (C 1, gamma 1/d, -e 0.001, -m 200) and
  L1-loss linear SVC on 200,000 x 20 (-s 3 -B 1), `train_seconds` from --json, medians of
  --repeats, --threads 1 and 2 interleaved; the model files of every run and of one run at
  --threads 8 must be byte for byte the same;
- memory: RBF C-SVC on --mem-n x 10 with -m 200; peak RSS by GNU time against 200 MB + 3 x the data
  (the dense f64 matrix, n * d * 8 bytes; and the file size);
- ctrl-c: SIGINT 1.5 s into a long RBF fit (-e 1e-7 -m 1); time from the signal to the process exit,
  exit code 130, partial model and state file present;
- ctrl-c aid: SIGINT D seconds (--aid-delays) into kernel AID-SVM (`aid svm -t 2 -g 2 -c 10`, the
  averaged-Gram mode and `--steer nystrom`) on --aid-n x 10 overlapping classes (features uniform
  on [-1, 1] plus 0.15 y: about n^2 kernel values in the first iteration's pair sums); time to
  exit, exit code 130, state file present (none when stopped before the first iteration or in the
  Nystrom mode, which has no resumable state).
"""
import argparse
import hashlib
import json
import os
import signal
import statistics
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
TMP = tempfile.gettempdir()


def blobs(path, n, d, seed, sep):
    import numpy as np

    if os.path.exists(path):
        return
    rng = np.random.default_rng(seed)
    y = np.where(np.arange(n) % 2 == 0, 1, -1)
    x = rng.standard_normal((n, d)) + sep * y[:, None] / np.sqrt(d)
    flip = rng.random(n) < 0.02
    y = np.where(flip, -y, y)
    with open(path + ".tmp", "w") as f:
        for i in range(n):
            f.write(f"{y[i]} " + " ".join(f"{k + 1}:{v:.6g}" for k, v in enumerate(x[i])) + "\n")
    os.replace(path + ".tmp", path)


def train(binary, args, data, threads=None, rss=False):
    with tempfile.TemporaryDirectory() as td:
        cmd = [binary, "train", "--json"] + (["--threads", str(threads)] if threads else []) + args \
            + [data, os.path.join(td, "m")]
        if rss:
            cmd = ["/usr/bin/time", "-o", os.path.join(td, "rss"), "-f", "%M"] + cmd
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True)
        rep = json.loads(p.stdout.decode())
        with open(os.path.join(td, "m"), "rb") as f:
            rep["_model_sha256"] = hashlib.sha256(f.read()).hexdigest()
        if rss:
            rep["_rss_mb"] = int(open(os.path.join(td, "rss")).read().split()[-1]) / 1024.0
        return rep


def bench_threads(binary, reps):
    print("## threads 1 vs 2")
    print("| case | n x d | threads=1 s | threads=2 s | speed-up | model files at 1, 2, 8 threads |")
    print("|---|---|---|---|---|---|")
    rbf = os.path.join(TMP, "mk_blobs_20000_20.svm")
    blobs(rbf, 20000, 20, 1, 1.5)
    rbf50 = os.path.join(TMP, "mk_blobs_50000_20.svm")
    blobs(rbf50, 50000, 20, 5, 1.5)
    lin = os.path.join(TMP, "mk_blobs_200000_20.svm")
    blobs(lin, 200000, 20, 2, 1.5)
    rbf_args = ["-c", "1", "-g", "0.05", "-e", "0.001", "-m", "200"]
    for name, data, nd, args in [
        ("RBF C-SVC", rbf, "20,000 x 20", rbf_args),
        ("RBF C-SVC", rbf50, "50,000 x 20", rbf_args),
        ("linear L1-loss SVC (DCD)", lin, "200,000 x 20", ["--linear", "-s", "3", "-c", "1", "-B", "1"]),
    ]:
        res, models = {}, set()
        # Interleaved (1, 2, 1, 2, ...): a change of the machine's load hits both thread counts.
        runs = {1: [], 2: []}
        for _ in range(reps):
            for t in (1, 2):
                runs[t].append(train(binary, args, data, threads=t))
        for t in (1, 2):
            res[t] = statistics.median(r["train_seconds"] for r in runs[t])
            models |= {r["_model_sha256"] for r in runs[t]}
        models.add(train(binary, args, data, threads=8)["_model_sha256"])
        same = "bit-identical" if len(models) == 1 else f"{len(models)} different files"
        print(f"| {name} | {nd} | {res[1]:.3f} | {res[2]:.3f} | {res[1] / res[2]:.2f}x | {same} |",
              flush=True)


def bench_mem(binary, n, max_iter=None):
    print(f"\n## memory: RBF C-SVC, n = {n:,}, d = 10, -m 200"
          + (f", --max-iter {max_iter}" if max_iter else ""))
    data = os.path.join(TMP, f"mk_blobs_{n}_10.svm")
    blobs(data, n, 10, 3, 4.0)
    t0 = time.perf_counter()
    # The peak is reached once the cache is full (a few thousand iterations): --mem-max-iter
    # measures it without the whole fit.
    extra = ["--max-iter", str(max_iter)] if max_iter else []
    r = train(binary, ["-c", "1", "-g", "0.1", "-m", "200"] + extra, data, rss=True)
    wall = time.perf_counter() - t0
    dense = n * 10 * 8 / 2**20
    filemb = os.path.getsize(data) / 2**20
    print(f"train {r['train_seconds']:.1f} s (wall {wall:.1f} s incl. reading), nSV {r['n_sv']}, "
          f"iterations {r['iterations']}, status {r['status']}, cache hit rate {r['cache_hit_rate']:.3f}")
    print(f"peak RSS {r['_rss_mb']:.0f} MB; budget cache + 3 x dense data = 200 + 3 x {dense:.1f} = "
          f"{200 + 3 * dense:.0f} MB; cache + 3 x file = {200 + 3 * filemb:.0f} MB", flush=True)


def bench_ctrlc(binary, reps):
    print("\n## Ctrl-C: SIGINT 1.5 s into `train`, time to exit")
    data = os.path.join(TMP, "mk_blobs_8000_10_hard.svm")
    blobs(data, 8000, 10, 4, 0.5)
    times = []
    for _ in range(reps):
        with tempfile.TemporaryDirectory() as td:
            m = os.path.join(td, "m")
            p = subprocess.Popen([binary, "train", "-q", "-c", "10000", "-g", "20", "-e", "1e-7", "-m", "1", data, m],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1.5)
            if p.poll() is not None:
                print("finished before the signal; use a harder problem")
                return
            t0 = time.perf_counter()
            p.send_signal(signal.SIGINT)
            code = p.wait()
            dt = time.perf_counter() - t0
            ok = code == 130 and os.path.exists(m + ".state") and "status interrupted" in open(m).read()
            times.append(dt)
            print(f"returned after {dt * 1000:.0f} ms, exit {code}, partial model + state file: {ok}", flush=True)
    print(f"median {statistics.median(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms")


def hard(path, n, seed):
    import numpy as np

    if os.path.exists(path):
        return
    rng = np.random.default_rng(seed)
    y = np.where(np.arange(n) % 2 == 0, 1, -1)
    x = rng.uniform(-1.0, 1.0, (n, 10)) + 0.15 * y[:, None]
    with open(path + ".tmp", "w") as f:
        for i in range(n):
            f.write(f"{y[i]} " + " ".join(f"{k + 1}:{v:.6g}" for k, v in enumerate(x[i])) + "\n")
    os.replace(path + ".tmp", path)


def bench_ctrlc_aid(binary, n, delays):
    print(f"\n## Ctrl-C: SIGINT D s into `aid svm -t 2` ({n:,} x 10), time to exit")
    data = os.path.join(TMP, f"mk_hard_{n}_10.svm")
    hard(data, n, 5)
    print("| mode | D s | return ms | exit | state file |")
    print("|---|---|---|---|---|")
    for mode, extra in [("averaged Gram", []), ("Nystrom", ["--steer", "nystrom"])]:
        times = []
        for d in delays:
            with tempfile.TemporaryDirectory() as td:
                m = os.path.join(td, "m")
                p = subprocess.Popen([binary, "aid", "svm", "-q", "-t", "2", "-g", "2", "-c", "10"] + extra
                                     + [data, m], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(d)
                if p.poll() is not None:
                    print(f"| {mode} | {d} | finished before the signal | {p.returncode} | |")
                    continue
                t0 = time.perf_counter()
                p.send_signal(signal.SIGINT)
                code = p.wait()
                dt = time.perf_counter() - t0
                times.append(dt)
                print(f"| {mode} | {d} | {dt * 1000:.0f} | {code} | {os.path.exists(m + '.state')} |", flush=True)
        if times:
            print(f"{mode}: median {statistics.median(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms "
                  f"(load average {os.getloadavg()[0]:.1f})", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--mem-n", type=int, default=200000)
    ap.add_argument("--mem-max-iter", type=int, default=None)
    ap.add_argument("--skip", default="")
    ap.add_argument("--aid-n", type=int, default=20000)
    ap.add_argument("--aid-delays", default="1,2,3,4,6")
    ap.add_argument("--marginkit", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target")),
                                                        "release", "marginkit"))
    a = ap.parse_args()
    skip = set(a.skip.split(","))
    if "threads" not in skip:
        bench_threads(a.marginkit, a.repeats)
    if "mem" not in skip:
        bench_mem(a.marginkit, a.mem_n, a.mem_max_iter)
    if "ctrlc" not in skip:
        bench_ctrlc(a.marginkit, a.repeats)
    if "ctrlc-aid" not in skip:
        bench_ctrlc_aid(a.marginkit, a.aid_n, [float(v) for v in a.aid_delays.split(",")])


if __name__ == "__main__":
    main()
