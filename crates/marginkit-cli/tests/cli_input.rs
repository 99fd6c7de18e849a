//! Input errors that say what to do: CSV given without `--csv`, or with another delimiter.

mod common;
use common::*;

#[test]
fn csv_looking_input_suggests_the_flags() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("c.csv"), "a,b,label\n1,2,0\n3,4,1\n").unwrap();
    std::fs::write(d.join("s.csv"), "a;b;label\n1;2;0\n3;4;1\n").unwrap();
    let o = run(&["train", "c.csv", "m"], d);
    fails(&o, "c.csv:1:1:");
    fails(
        &o,
        "hint: the first line looks like CSV; read it with --csv (",
    );
    let o = run(&["train", "s.csv", "m"], d);
    fails(&o, "read it with --csv --delimiter ';'");
    let o = run(&["train", "--csv", "s.csv", "m"], d);
    fails(
        &o,
        "hint: the first line is split by ';', not ',': add --delimiter ';'",
    );
    // With the flags the files are read.
    let o = run(
        &["train", "-q", "--csv", "--delimiter", ";", "s.csv", "m"],
        d,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // LIBSVM text with a bad token gets no CSV hint.
    std::fs::write(d.join("bad.svm"), "1 1:0.5\n-1 2:x\n").unwrap();
    let o = run(&["train", "bad.svm", "m2"], d);
    fails(&o, "bad.svm:2:");
    assert!(!String::from_utf8_lossy(&o.stderr).contains("hint"));
}
