"""What the benchmark scripts share: the pinned virtualenv each runs in (under target/), the marginkit
(and marginkit-mpi) binary they measure, a peer's run in a child process with its own thread pools, and
the results page each writes with `--out` (the command
that regenerates it, the machine, the marginkit commit, the load average before and after, and a
banner on smoke runs).
"""
import hashlib
import importlib.metadata
import json
import os
import platform
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def ensure_venv(name, requirements):
    """Run the calling script inside the virtualenv target/NAME holding the pinned packages of
    bench/REQUIREMENTS: create it on first use, reinstall when the requirements file changes (a hash
    stamp in the venv), and re-exec the script inside it with the same arguments."""
    venv = os.path.join(ROOT, "target", name)
    req = os.path.join(HERE, requirements)
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        print(f"creating {venv} ...", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    stamp = os.path.join(venv, ".requirements.sha256")
    with open(req, "rb") as f:
        want = hashlib.sha256(f.read()).hexdigest()
    have = open(stamp).read().strip() if os.path.exists(stamp) else ""
    if have != want:
        print(f"installing {req} into {venv} ...", file=sys.stderr, flush=True)
        subprocess.run([py, "-m", "pip", "install", "--quiet", "-r", req], check=True)
        with open(stamp, "w") as f:
            f.write(want + "\n")
    if os.path.realpath(sys.prefix) != os.path.realpath(venv):
        os.execv(py, [py, os.path.abspath(sys.argv[0])] + sys.argv[1:])


# The thread pools of the peers' numeric libraries (MKL, OpenMP, OpenBLAS). bench/run.py, imported for
# its data, pins them to one thread in its process for its single-threaded peers.
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")

CHILD_FLAG = "--peer-child"


def run_child(spec, threads):
    """Run the calling script again as `SCRIPT --peer-child JSON(spec)` with THREAD_VARS set to
    `threads`, and return the JSON object its last output line holds. The script's main calls
    `child_spec()` first and, when it returns a spec, does that one measurement and prints it."""
    env = dict(os.environ, **{v: str(threads) for v in THREAD_VARS})
    out = subprocess.run([sys.executable, os.path.abspath(sys.argv[0]), CHILD_FLAG, json.dumps(spec)],
                         env=env, check=True, stdout=subprocess.PIPE, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def child_spec():
    """The spec `run_child` passed to this process, or None in the parent."""
    return json.loads(sys.argv[2]) if sys.argv[1:2] == [CHILD_FLAG] else None


def find_marginkit(path=None, mpi=False):
    """The marginkit binary, or with `mpi` the marginkit-mpi binary: PATH if given; else marginkit at
    $CARGO_TARGET_DIR/release (relative to the repository root when relative), else at target/release;
    marginkit-mpi, a workspace of its own, at $MPI_TARGET_DIR/release if that is set, else at the first
    of $CARGO_TARGET_DIR/release, crates/marginkit-mpi/target/release (where `cargo build --release
    --manifest-path crates/marginkit-mpi/Cargo.toml` puts it) and target/mpi/release that holds it.
    Exits with the build command when it is missing."""
    if path:
        return path
    if mpi:
        name, flag = "marginkit-mpi", "--mpi"
        build = "cargo build --release --manifest-path crates/marginkit-mpi/Cargo.toml"
        if os.environ.get("MPI_TARGET_DIR"):
            targets = [os.environ["MPI_TARGET_DIR"]]
        else:
            targets = [t for t in (os.environ.get("CARGO_TARGET_DIR"), os.path.join("crates", name, "target"),
                                   os.path.join("target", "mpi")) if t]
    else:
        name, flag = "marginkit", "--marginkit"
        build = "cargo build --release -p marginkit-cli"
        targets = [os.environ.get("CARGO_TARGET_DIR", "target")]
    tried = [os.path.join(ROOT, t, "release", name) for t in targets]
    for p in tried:
        if os.path.exists(p):
            return p
    sys.exit(f"no {name} binary at {' or '.join(tried)}: run `{build}` or pass {flag}")


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _mem_gib():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return None


def _git_commit():
    try:
        rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, check=True).stdout.strip()
        # The pages themselves are left out: a run rewrites them.
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no", "--",
                                ".", ":!bench/results"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return rev + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine_line(packages=()):
    """CPU, core count, memory, OS, Python and the versions of `packages` (distribution names)."""
    mem = _mem_gib()
    vers = []
    for p in packages:
        try:
            vers.append(f"{p} {importlib.metadata.version(p)}")
        except importlib.metadata.PackageNotFoundError:
            vers.append(f"{p} (not installed)")
    parts = [f"{_cpu_model()}, {os.cpu_count()} CPUs" + (f", {mem:.0f} GiB RAM" if mem else ""),
             platform.platform(), f"Python {platform.python_version()}"] + vers
    return "; ".join(parts)


def _load():
    return ", ".join(f"{v:.2f}" for v in os.getloadavg())


class Page:
    """A results page: created when the run starts (the load average then), written at the end."""

    def __init__(self, title):
        self.title = title
        script = os.path.relpath(os.path.abspath(sys.argv[0]), ROOT)
        self.command = " ".join(shlex.quote(a) for a in ["python3", script] + sys.argv[1:])
        self.started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        self.t0 = time.monotonic()
        self.load_before = _load()
        print(f"load average before: {self.load_before}", file=sys.stderr, flush=True)

    def text(self, body, packages=(), smoke=None):
        """The page: title, the smoke banner if `smoke` (the real run's command) is given, then the
        command, machine, commit, date, wall time and load lines, then `body` (Markdown)."""
        load_after = _load()
        print(f"load average after: {load_after}", file=sys.stderr, flush=True)
        head = [f"# {self.title}", ""]
        if smoke:
            head += [f"**Smoke run, not a result:** {smoke[0]}; the real run is `{smoke[1]}`. The numbers "
                     "below only show that the script works end to end.", ""]
        head += [f"- Command (from the repository root): `{self.command}`",
                 f"- Machine: {machine_line(packages)}",
                 f"- marginkit commit: {_git_commit()}",
                 f"- Started {self.started}; wall time {time.monotonic() - self.t0:.0f} s",
                 f"- Load average (1, 5, 15 min) before: {self.load_before}; after: {load_after}. Timings taken "
                 "under load are not comparable with those of a quiet machine.", ""]
        return "\n".join(head) + "\n" + body.rstrip("\n") + "\n"

    def write(self, path, body, packages=(), smoke=None):
        """Print `body` on stdout and, if `path`, write the whole page there."""
        sys.stdout.write(body.rstrip("\n") + "\n")
        if path:
            with open(path, "w") as f:
                f.write(self.text(body, packages, smoke))
            print(f"wrote {path}", file=sys.stderr)
        else:
            print(f"load average after: {_load()}", file=sys.stderr, flush=True)
