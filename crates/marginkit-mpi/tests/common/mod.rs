//! What the MPI command tests share: the repository's data, a scratch directory per test file,
//! `mpirun` of one `marginkit-mpi` command, and the check of a run that must fail.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// A file under the repository's `data/`.
pub fn repo_data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data")
        .join(rel)
}

/// `name` in the scratch directory `dir` of the test target directory (created).
pub fn tmp(dir: &str, name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(dir);
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// The command `mpirun -np NP marginkit-mpi COMMAND... ARGS...` on this machine (oversubscribed).
fn mpirun_command(np: usize, command: &[&str], args: &[&str]) -> Command {
    let mut c = Command::new("mpirun");
    c.args([
        "--oversubscribe",
        "-np",
        &np.to_string(),
        env!("CARGO_BIN_EXE_marginkit-mpi"),
    ])
    .args(command)
    .args(args)
    .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
    .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    c
}

/// Runs `mpirun -np NP marginkit-mpi COMMAND... ARGS...` to its end.
pub fn mpirun(np: usize, command: &[&str], args: &[&str]) -> Output {
    mpirun_command(np, command, args)
        .output()
        .expect("mpirun (OpenMPI) must be installed to run this test")
}

/// Starts `mpirun -np NP marginkit-mpi COMMAND... ARGS...` and reads its standard output line by
/// line; after the first line for which `ready` holds it sends SIGINT to every rank (the
/// children of `mpirun`, each in a process group of its own), then collects the rest. That is
/// what the ranks get from Ctrl-C, without `mpirun`'s delay in passing it on (it turns Ctrl-C
/// into SIGTERM for every rank some tenths of a second later). The commands print such lines (an
/// iteration table's rows) from inside the fit, after every rank installed its handler. Panics
/// if the run ends without printing such a line.
#[allow(dead_code)] // not every suite has a Ctrl-C test
pub fn interrupt_after_line(
    np: usize,
    command: &[&str],
    args: &[&str],
    ready: impl Fn(&str) -> bool,
) -> Output {
    use std::io::{BufRead, BufReader, Read};
    use std::process::Stdio;
    let mut child = mpirun_command(np, command, args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mpirun (OpenMPI) must be installed to run this test");
    let mut out = BufReader::new(child.stdout.take().expect("piped stdout"));
    let mut stdout = String::new();
    loop {
        let start = stdout.len();
        let n = out.read_line(&mut stdout).expect("stdout readable");
        assert!(
            n > 0,
            "{command:?} {args:?} ended before printing the awaited line; stdout:\n{stdout}"
        );
        if ready(stdout[start..].trim_end()) {
            break;
        }
    }
    let kill = Command::new("pkill")
        .args(["-INT", "-P", &child.id().to_string()])
        .status()
        .expect("pkill (procps) runs");
    assert!(kill.success(), "pkill -INT -P {} found no rank", child.id());
    out.read_to_string(&mut stdout).expect("stdout readable");
    let mut stderr = Vec::new();
    child
        .stderr
        .take()
        .expect("piped stderr")
        .read_to_end(&mut stderr)
        .expect("stderr readable");
    let status = child.wait().expect("child reaped");
    Output {
        status,
        stdout: stdout.into_bytes(),
        stderr,
    }
}

/// Runs a command that must fail: nonzero exit, the message (containing `needle`) once, from
/// rank 0, and no model file.
pub fn fails(np: usize, command: &[&str], args: &[&str], model: &Path, needle: &str) {
    let _ = std::fs::remove_file(model);
    let out = mpirun(np, command, args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?} succeeded");
    assert!(
        err.contains(needle),
        "{args:?}: expected '{needle}' in:\n{err}"
    );
    assert_eq!(err.matches("marginkit-mpi: error").count(), 1, "{err}");
    assert!(!model.exists());
}

/// `mpirun -np NP marginkit-mpi COMMAND... FLAGS... --json TRAIN MODEL` (MODEL in the scratch
/// directory `dir`, named by `tag` and NP), which must succeed with one JSON report whose rows per
/// rank add up to its `n`: the report and the model file's bytes.
pub fn run(
    dir: &str,
    command: &[&str],
    tag: &str,
    np: usize,
    flags: &[&str],
    train: &Path,
) -> (Value, Vec<u8>) {
    let model = tmp(dir, &format!("{tag}.np{np}.model"));
    let _ = std::fs::remove_file(&model);
    let mut args: Vec<&str> = flags.to_vec();
    let (t, m) = (train.to_str().unwrap(), model.to_str().unwrap());
    args.extend(["--json", t, m]);
    let out = mpirun(np, command, &args);
    assert!(
        out.status.success(),
        "{tag} P = {np}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["P"].as_u64(), Some(np as u64));
    let rows: u64 = v["rows_per_rank"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_u64().unwrap())
        .sum();
    assert_eq!(rows, v["n"].as_u64().unwrap());
    (v, std::fs::read(&model).unwrap())
}
