//! Output paths that are not regular files: a device like `/dev/null`, `/dev/stdout`, a FIFO and
//! a symbolic link are written, never replaced by a regular file.

use std::path::Path;

mod common;
use common::*;

fn heart(name: &str) -> String {
    data(name).to_str().unwrap().to_owned()
}

/// `marginkit train -q heart_scale.train OUT` in `dir`, which must succeed.
fn train_heart(dir: &Path, out: &Path) {
    let o = run(
        &[
            "train",
            "-q",
            &heart("heart_scale.train"),
            out.to_str().unwrap(),
        ],
        dir,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn is_symlink(p: &Path) -> bool {
    std::fs::symlink_metadata(p)
        .unwrap()
        .file_type()
        .is_symlink()
}

/// `marginkit train heart_scale DEVICE`, as root in CI, replaced the device with a regular file.
/// The device here is made like `/dev/null` (1, 3) in a temporary directory; making it needs
/// CAP_MKNOD, which CI has (it runs as root). Without it the test says so and checks nothing,
/// because the devices it would otherwise write are the system's own.
#[cfg(target_os = "linux")]
#[test]
fn train_and_predict_into_a_device_keep_the_device() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let dev = dir.path().join("null");
    let made = std::process::Command::new("mknod")
        .args(["-m", "666"])
        .arg(&dev)
        .args(["c", "1", "3"])
        .output()
        .expect("mknod (coreutils) must be installed");
    if !made.status.success() {
        eprintln!(
            "skipped: mknod is not permitted here ({}); CI runs as root and checks this",
            String::from_utf8_lossy(&made.stderr).trim()
        );
        return;
    }
    let dev_s = dev.to_str().unwrap();
    train_heart(dir.path(), &dev);
    assert!(std::fs::symlink_metadata(&dev)
        .unwrap()
        .file_type()
        .is_char_device());
    // Predict's output into the device; the model is a regular file.
    let model = dir.path().join("m.model");
    train_heart(dir.path(), &model);
    let o = run(
        &[
            "predict",
            &heart("heart_scale.test"),
            model.to_str().unwrap(),
            dev_s,
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("Accuracy = "));
    assert!(std::fs::symlink_metadata(&dev)
        .unwrap()
        .file_type()
        .is_char_device());
}

/// `predict TEST MODEL /dev/stdout` prints the labels on the command's own standard output.
#[cfg(target_os = "linux")]
#[test]
fn predict_into_dev_stdout_prints_the_labels() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("m.model");
    train_heart(dir.path(), &model);
    let file_out = dir.path().join("labels.txt");
    let o = run(
        &[
            "predict",
            "-q",
            &heart("heart_scale.test"),
            model.to_str().unwrap(),
            file_out.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(o.status.success());
    let expected = std::fs::read_to_string(&file_out).unwrap();
    assert!(!expected.is_empty());
    let o = run(
        &[
            "predict",
            "-q",
            &heart("heart_scale.test"),
            model.to_str().unwrap(),
            "/dev/stdout",
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout), expected);
}

/// A FIFO given as the model path: the reader gets the whole model and the FIFO stays a FIFO.
#[cfg(unix)]
#[test]
fn train_into_a_fifo_feeds_its_reader() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("model.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo (coreutils) must be installed");
    assert!(made.success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    train_heart(dir.path(), &fifo);
    let model = reader.join().unwrap();
    assert!(model.starts_with("svm_type c_svc\n"), "{model:.80}");
    assert!(model.contains("\nSV\n"));
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
}

/// A symbolic link given as the model path: the link stays, its target gets the model.
#[cfg(unix)]
#[test]
fn train_through_a_symlink_writes_its_target() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("models")).unwrap();
    let link = dir.path().join("current.model");
    std::os::unix::fs::symlink("models/v1.model", &link).unwrap();
    train_heart(dir.path(), &link);
    assert!(is_symlink(&link));
    let target = std::fs::read_to_string(dir.path().join("models/v1.model")).unwrap();
    assert!(target.starts_with("svm_type c_svc\n"));
}

/// Every output is checked before the work starts: with an output that cannot be written and a
/// training file that does not exist, the error names the output, so nothing was read or trained.
#[test]
fn unwritable_outputs_fail_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("outdir")).unwrap();
    let missing = "no_such_training_file.svm";
    let model = data("heart_scale.train");
    let model_s = model.to_str().unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["train", "-q", missing, "outdir"],
        vec!["train", "-q", missing, "no_dir/m.model"],
        vec!["train", "-q", "--linear", missing, "outdir"],
        vec!["train", "-q", "-s", "odm", missing, "outdir"],
        vec!["train", "-q", missing, "m.model", "--state-file", "outdir"],
        vec!["predict", missing, model_s, "outdir"],
        vec!["scale", "-o", "outdir", missing],
        vec!["scale", "-s", "no_dir/range", missing],
        vec!["path", "-q", "--plot", "outdir", missing],
        vec![
            "path",
            "-q",
            "--valid",
            missing,
            "--best-model",
            "no_dir/b.model",
            missing,
        ],
        vec!["aid", "lad", "-q", missing, "outdir"],
        vec!["aid", "svm", "-q", "--plot", "no_dir/p.svg", missing],
        vec!["lad", missing, "outdir"],
        vec!["cluster", "kmeans", "-q", "-o", "outdir", missing],
        vec!["cluster", "odmc", "-q", "--plot", "no_dir/p.svg", missing],
        vec!["coreset", "svm", "--model", "outdir", missing],
        vec![
            "robust",
            "svc",
            "--path",
            "s",
            "--plot",
            "no_dir/p.svg",
            missing,
        ],
    ];
    for args in cases {
        let o = run(&args, d);
        fails(&o, "cannot be written");
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(!e.contains(missing), "{args:?} read its input first: {e}");
    }
    assert!(d.join("outdir").is_dir());
    assert!(!d.join("no_dir").exists());
}

/// LIBSVM's `-g 0` means gamma = 1/num_features: the same model as no `-g` at all.
#[test]
fn gamma_zero_is_libsvm_default() {
    let dir = tempfile::tempdir().unwrap();
    let tr = heart("heart_scale.train");
    for (args, out) in [
        (vec!["train", "-q", &tr, "a.model"], "a.model"),
        (vec!["train", "-q", "-g", "0", &tr, "b.model"], "b.model"),
    ] {
        let o = run(&args, dir.path());
        assert!(
            o.status.success(),
            "{out}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let read = |n: &str| std::fs::read_to_string(dir.path().join(n)).unwrap();
    assert_eq!(read("a.model"), read("b.model"));
    // heart_scale has 13 features: the model file records gamma = 1/13.
    assert!(read("a.model").contains("gamma 0.07692307692307693\n"));
}

/// `marginkit scale FILE | head -1`: the reader closes the pipe after one line; the write error
/// ends the run quietly with 141 (128 + SIGPIPE), as a panic in printing does. The scaled digits
/// set (600 kB) is far more than a pipe buffer holds, so the write after the close fails.
#[cfg(unix)]
#[test]
fn scale_into_a_closed_pipe_ends_quietly() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let src =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/clf/digits_oe.train.svm");
    let mut child = Command::new(BIN)
        .args(["scale", src.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    assert!(!first.is_empty());
    drop(out);
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(141),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
