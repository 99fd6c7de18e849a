//! Ctrl-C (a real SIGINT) during `marginkit aid` and `marginkit robust`: exit code 130 within a
//! second or two, a plain LIBSVM model of the current iterate, a state file; `--resume` gives the model
//! of an uninterrupted run byte for byte; foreign and damaged state files are clear errors.
#![cfg(unix)]

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;
use common::*;

/// Runs `reference` to the end, then `args` with a SIGINT after 30% of that time; returns (the
/// interrupted run's output, seconds from the signal to the exit), or `None` when the run
/// finished before the signal.
fn interrupt(reference: &[&str], args: &[&str], dir: &Path) -> Option<(Output, f64)> {
    let t0 = Instant::now();
    let o = run(reference, dir);
    let full = t0.elapsed().as_secs_f64();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let child = Command::new(BIN)
        .args(args)
        .arg("--json")
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs_f64((full * 0.3).clamp(0.2, 1.5)));
    let t_sig = Instant::now();
    let k = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(k.success());
    let o = child.wait_with_output().unwrap();
    let secs = t_sig.elapsed().as_secs_f64();
    eprintln!("{args:?}: Ctrl-C returned after {secs:.3} s (full run {full:.2} s)");
    if o.status.code() == Some(0) {
        return None;
    }
    assert_eq!(
        o.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(secs < 2.0, "took {secs} s to stop");
    Some((o, secs))
}

#[test]
fn ctrl_c_stops_aid_and_resume_gives_the_same_model() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    write_overlapping(&p.join("d.svm"), 2500, 10, 0.15);
    let base = [
        "aid", "svm", "-t", "2", "-g", "2", "-c", "10", "-q", "d.svm",
    ];
    let mut full = base.to_vec();
    full.push("full.model");
    let mut part = base.to_vec();
    part.push("part.model");
    let Some((o, _)) = interrupt(&full, &part, p) else {
        eprintln!("the run finished before the signal: nothing to resume");
        return;
    };
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["interrupted"], true);
    let state = j["state_file"].as_str().unwrap().to_string();
    assert_eq!(state, "part.model.state");
    if !j["objective"].is_null() {
        assert_eq!(j["status"], "interrupted");
        let m = std::fs::read_to_string(p.join("part.model")).unwrap();
        assert!(
            m.starts_with("svm_type c_svc\nkernel_type") && !m.contains("status"),
            "{m:.60}"
        );
    }
    // Refused: other parameters, a damaged file, the state file as the model file.
    let mut other = base.to_vec();
    other[7] = "11";
    other.extend(["--resume", &state, "x.model"]);
    let o = run(&other, p);
    assert_eq!(o.status.code(), Some(1));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("part.model.state") && e.contains("other parameters"),
        "{e}"
    );
    let mut bytes = std::fs::read(p.join(&state)).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x10;
    std::fs::write(p.join("bad.state"), &bytes).unwrap();
    let mut bad = base.to_vec();
    bad.extend(["--resume", "bad.state", "x.model"]);
    let o = run(&bad, p);
    assert_eq!(o.status.code(), Some(1));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("bad.state") && e.contains("checksum"), "{e}");
    let mut same = base.to_vec();
    same.extend(["--state-file", "x.model", "x.model"]);
    assert_eq!(run(&same, p).status.code(), Some(1));
    // Resume: the model of the uninterrupted run, byte for byte.
    let mut res = base.to_vec();
    res.extend(["--resume", &state, "part.model"]);
    let o = run(&res, p);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        std::fs::read(p.join("part.model")).unwrap(),
        std::fs::read(p.join("full.model")).unwrap()
    );
}

/// The runs of a `robust --json` report without timings.
fn runs(j: &Value) -> Vec<Value> {
    j["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let mut r = r.clone();
            if let Value::Object(o) = &mut r {
                o.remove("seconds");
            }
            r
        })
        .collect()
}

#[test]
fn ctrl_c_stops_robust_and_resume_gives_the_same_path() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    write_overlapping(&p.join("r.svm"), 700, 4, 0.3);
    let base = [
        "robust", "svc", "r.svm", "--path", "theta", "-g", "4", "-c", "1,10,100", "-q",
    ];
    let mut full = base.to_vec();
    full.extend(["--save-model", "full.model"]);
    let mut part = base.to_vec();
    part.extend(["--save-model", "part.model", "--state-file", "r.state"]);
    let Some((o, _)) = interrupt(&full, &part, p) else {
        eprintln!("the run finished before the signal: nothing to resume");
        return;
    };
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["interrupted"], true);
    assert_eq!(j["status"], "interrupted");
    assert_eq!(j["state_file"], "r.state");
    let m = std::fs::read_to_string(p.join("part.model")).unwrap();
    assert!(
        m.starts_with("svm_type c_svc\nkernel_type") && !m.contains("status"),
        "{m:.60}"
    );
    let mut other = base.to_vec();
    other[8] = "1,10,101";
    other.extend(["--resume", "r.state"]);
    let o = run(&other, p);
    assert_eq!(o.status.code(), Some(1));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("r.state") && e.contains("other parameters"),
        "{e}"
    );
    let mut res = base.to_vec();
    res.extend([
        "--save-model",
        "part.model",
        "--resume",
        "r.state",
        "--json",
    ]);
    let o = run(&res, p);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let jr: Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut fj = base.to_vec();
    fj.extend(["--json", "--save-model", "full2.model"]);
    let jf: Value = serde_json::from_slice(&run(&fj, p).stdout).unwrap();
    assert_eq!(runs(&jr), runs(&jf));
    assert_eq!(jr["status"], "converged");
    assert_eq!(
        std::fs::read(p.join("part.model")).unwrap(),
        std::fs::read(p.join("full.model")).unwrap()
    );
}
