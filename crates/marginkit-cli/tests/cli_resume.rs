//! Ctrl-C (a real SIGINT) during `marginkit aid` and `marginkit robust`: exit code 130, a plain
//! LIBSVM model of the current iterate, a state file; `--resume` gives the model of an
//! uninterrupted run byte for byte; foreign and damaged state files are clear errors.
#![cfg(unix)]

use serde_json::Value;

mod common;
use common::*;

/// The rows of an `aid` iteration table (a right-aligned iteration number first).
fn table_rows(stdout: &str) -> usize {
    stdout
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .next()
                .is_some_and(|t| t.parse::<usize>().is_ok())
        })
        .count()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn ctrl_c_stops_aid_and_resume_gives_the_same_model() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    write_overlapping(&p.join("d.svm"), 2500, 10, 0.15);
    let base = ["aid", "svm", "-t", "2", "-g", "2", "-c", "10", "d.svm"];
    // The uninterrupted reference, with its iteration table.
    let mut full = base.to_vec();
    full.push("full.model");
    let o = run(&full, p);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let full_rows = table_rows(&text(&o.stdout));
    assert!(full_rows >= 5, "{}", text(&o.stdout));
    // Interrupted once the first iteration's row is out: the handler is installed and the
    // remaining iterations (each a larger solve) are still to run.
    let mut part = base.to_vec();
    part.push("part.model");
    let o = interrupt_after_line(&part, p, |l| l.starts_with("   0 "));
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(out.contains("\nstop: interrupted\n"), "{out}");
    let rows = table_rows(&out);
    assert!(
        (1..full_rows).contains(&rows),
        "{rows} of {full_rows} rows:\n{out}"
    );
    let state = "part.model.state";
    assert!(err.contains(&format!("--resume {state}")), "{err}");
    assert!(p.join(state).exists());
    let m = std::fs::read_to_string(p.join("part.model")).unwrap();
    assert!(
        m.starts_with("svm_type c_svc\nkernel_type") && !m.contains("status"),
        "{m:.60}"
    );
    // Refused: other parameters, a damaged file, the state file as the model file.
    let mut other = base.to_vec();
    other[7] = "11";
    other.extend(["--resume", state, "x.model"]);
    let o = run(&other, p);
    assert_eq!(o.status.code(), Some(1));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("part.model.state: the AID state file was written with -c 10 (now -c 11)"),
        "{e}"
    );
    let mut bytes = std::fs::read(p.join(state)).unwrap();
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
    res.extend(["--resume", state, "part.model"]);
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

/// Linux only: the wait for the signal reads the child's signal mask and CPU time from `/proc`
/// (`robust` prints nothing before its fit ends).
#[cfg(target_os = "linux")]
#[test]
fn ctrl_c_stops_robust_and_resume_gives_the_same_path() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    write_overlapping(&p.join("r.svm"), 1000, 4, 0.3);
    let base = [
        "robust", "svc", "r.svm", "--path", "theta", "-g", "4", "-c", "100,1,10", "-q",
    ];
    let mut full = base.to_vec();
    full.extend(["--save-model", "full.model"]);
    let o = run(&full, p);
    assert!(o.status.success(), "{}", text(&o.stderr));
    // Interrupted after 120 ms of CPU time in the fit: past the short C = 100 path (20
    // breakpoints), far from the end of the long C = 1 and C = 10 paths.
    let mut part = base.to_vec();
    part.extend([
        "--save-model",
        "part.model",
        "--state-file",
        "r.state",
        "--json",
    ]);
    let o = interrupt_after_cpu(&part, p, 12);
    assert_eq!(o.status.code(), Some(130), "{}", text(&o.stderr));
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["interrupted"], true);
    assert_eq!(j["status"], "interrupted");
    assert_eq!(j["state_file"], "r.state");
    let done = runs(&j).iter().filter(|r| r["end"] == "completed").count();
    assert!(done < 3, "{j}");
    eprintln!(
        "robust: interrupted with {done} of 3 paths finished: {}",
        j["runs"]
    );
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
        e.contains("r.state: the robust state file was written with -c 100,1,10 (now -c 1,10,101)"),
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
