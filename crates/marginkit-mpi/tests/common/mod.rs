//! What the MPI command tests share: the repository's data, a scratch directory per test file,
//! `mpirun` of one `marginkit-mpi` command, and the check of a run that must fail.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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

/// `mpirun -np NP marginkit-mpi COMMAND... ARGS...` on this machine (oversubscribed).
pub fn mpirun(np: usize, command: &[&str], args: &[&str]) -> Output {
    Command::new("mpirun")
        .args([
            "--oversubscribe",
            "-np",
            &np.to_string(),
            env!("CARGO_BIN_EXE_marginkit-mpi"),
        ])
        .args(command)
        .args(args)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .expect("mpirun (OpenMPI) must be installed to run this test")
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
