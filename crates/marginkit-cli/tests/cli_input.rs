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

/// Real-valued targets given to a classifier get a warning that suggests regression; integer
/// class labels do not.
#[test]
fn real_valued_targets_to_a_classifier_are_flagged() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let rows = |frac: bool| -> String {
        (0..24)
            .map(|i| {
                let y = if frac {
                    i as f64 * 0.37 + 0.1
                } else {
                    (i % 12) as f64
                };
                format!(
                    "{y} 1:{} 2:{}\n",
                    (i as f64 * 0.7).sin(),
                    (i as f64 * 1.3).cos()
                )
            })
            .collect()
    };
    std::fs::write(d.join("real.svm"), rows(true)).unwrap();
    std::fs::write(d.join("classes.svm"), rows(false)).unwrap();
    let o = run(&["train", "-q", "real.svm", "r.model"], d);
    assert!(o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("look like regression targets (24 distinct values") && e.contains("-s 3"),
        "{e}"
    );
    let o = run(&["train", "-q", "classes.svm", "c.model"], d);
    assert!(o.status.success());
    assert!(!String::from_utf8_lossy(&o.stderr).contains("regression targets"));
}

/// `scale` warns, as svm-scale does, when the default -l -1 turns the zeros of sparse data into
/// non-zero values, and suggests -l 0; with -l 0 the data stay as sparse and nothing is said.
#[test]
fn scale_warns_before_densifying() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("sp.svm"), "1 1:0.5 5:1\n-1 2:0.2\n1 3:1 4:0.3\n").unwrap();
    let o = run(&["scale", "-o", "a.svm", "sp.svm"], d);
    assert!(o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("5 non-zero values became 15") && e.contains("-l 0"),
        "{e}"
    );
    let o = run(&["scale", "-l", "0", "-o", "b.svm", "sp.svm"], d);
    assert!(o.status.success());
    assert!(!String::from_utf8_lossy(&o.stderr).contains("denser"));
}
