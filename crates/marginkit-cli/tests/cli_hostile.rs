//! Hostile inputs that invite a panic, an abort, a hang or a silently wrong result: each must end
//! in a clear error (or a documented warning) and never leave an output file behind.

use std::path::Path;

mod common;
use common::*;

const TINY: &str = "1 1:0.5 2:1\n-1 1:-0.5 2:-1\n1 1:0.7 2:0.2\n-1 1:-0.9 2:0.1\n";

fn tiny(dir: &Path) -> String {
    let p = dir.join("tiny.svm");
    std::fs::write(&p, TINY).unwrap();
    p.to_str().unwrap().to_owned()
}

/// `--threads 100000` would start 100,000 OS threads (minutes of spinning): refused at once.
#[test]
fn a_thread_count_beyond_the_limit_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = tiny(dir.path());
    for args in [
        vec!["train", "--threads", "100000", &d, "m.model"],
        vec!["path", "--threads", "1025", "-q", &d],
        vec!["cluster", "kmeans", "--threads", "5000", "-q", &d],
    ] {
        let o = run(&args, dir.path());
        fails(&o, "exceeds the limit of 1024");
        assert_eq!(o.status.code(), Some(1), "{args:?}");
    }
    assert!(!dir.path().join("m.model").exists());
}

/// `grid --log2c -1e308,1e308,1e-300`: the count saturates the cast and `+ 1` would wrap (a
/// panic in debug builds, "empty grid" in release); refused as "more than 10000 values".
#[test]
fn a_grid_range_with_an_overflowing_count_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = tiny(dir.path());
    for r in ["-1e308,1e308,1e-300", "0,1e308,1"] {
        let o = run(&["grid", "-q", "--log2c", r, &d], dir.path());
        fails(&o, "more than 10000 values");
    }
}

/// `path --grid 100000000000000` would abort on a failed allocation (and 1e9 takes 7.6 GB): the
/// log grid is capped at 100,000 points like the epsilon path.
#[test]
fn a_huge_path_grid_is_a_parameter_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = tiny(dir.path());
    for g in ["100001", "100000000000000"] {
        let o = run(&["path", "-q", "--grid", g, &d], dir.path());
        fails(&o, "outside 1..=100000");
        assert_eq!(o.status.code(), Some(1));
    }
}

/// `robust -t 4` on a file without serial numbers is the precomputed-kernel error naming the
/// row, not a kernel whose every entry reads column 0 (all zero, exit 0).
#[test]
fn robust_precomputed_kernel_needs_serials() {
    let dir = tempfile::tempdir().unwrap();
    let d = tiny(dir.path());
    let o = run(
        &[
            "robust",
            "svc",
            "--path",
            "theta",
            "-q",
            "-t",
            "4",
            "--save-model",
            "r.model",
            &d,
        ],
        dir.path(),
    );
    fails(&o, "precomputed kernel: the serial number");
    assert!(!dir.path().join("r.model").exists());
}

/// k-means with fewer distinct points than k leaves a cluster empty (documented); the CLI says
/// so instead of only listing a size of 0.
#[test]
fn kmeans_on_duplicates_warns_about_empty_clusters() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("dup.svm");
    std::fs::write(&p, "1 1:1\n1 1:1\n1 1:1\n-1 1:2\n").unwrap();
    let o = run(
        &[
            "cluster",
            "kmeans",
            "-k",
            "3",
            "--json",
            "-o",
            "c.out",
            p.to_str().unwrap(),
        ],
        dir.path(),
    );
    let j = json(&o);
    let mut sizes: Vec<u64> = j["cluster_sizes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    sizes.sort_unstable();
    assert_eq!(sizes, [0, 1, 3]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("1 of the k = 3 clusters are empty"), "{err}");
}

/// `coreset --nodes 1000000000000` would abort ("memory allocation of 24000000000000 bytes
/// failed"): it is the empty-shard error at once.
#[test]
fn coreset_with_more_nodes_than_points_is_an_error_not_an_abort() {
    let dir = tempfile::tempdir().unwrap();
    let d = tiny(dir.path());
    let o = run(
        &["coreset", "meb", "-q", "--nodes", "1000000000000", &d],
        dir.path(),
    );
    fails(&o, "node 0 has no data");
    assert_eq!(o.status.code(), Some(1));
}

/// All sample weights zero: "nothing to train on" with the file's count, with or without `-v`
/// (not a cross-validation fold's size, such as "all 2 sample weights" for 4 rows).
#[test]
fn all_zero_weights_name_the_whole_set_also_under_cross_validation() {
    let dir = tempfile::tempdir().unwrap();
    let d = tiny(dir.path());
    std::fs::write(dir.path().join("w0"), "0\n0\n0\n0\n").unwrap();
    for extra in [
        &[][..],
        &["-v", "2"],
        &["--linear"],
        &["--linear", "-v", "2"],
    ] {
        let mut args = vec!["train", "-W", "w0"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&[&d, "w.model"]);
        let o = run(&args, dir.path());
        fails(&o, "all 4 sample weights are zero");
        assert!(!dir.path().join("w.model").exists(), "{args:?}");
    }
}

/// An output path that is an input file (`train d d`, `predict t m t`, `predict t m m`,
/// `scale -o d d`) would replace the user's input with the output: refused, the input intact.
#[test]
fn outputs_that_are_inputs_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = tiny(dir.path());
    let o = run(&["train", "-q", &d, "m.model"], dir.path());
    assert!(o.status.success());
    for (args, needle) in [
        (vec!["train", "-q", &d, &d], "is the training data file"),
        (
            vec!["train", "--linear", "-q", &d, &d],
            "is the training data file",
        ),
        (vec!["predict", &d, "m.model", &d], "is the test data file"),
        (
            vec!["predict", &d, "m.model", "m.model"],
            "is the model file",
        ),
        (vec!["scale", "-o", &d, &d], "is the data file"),
        (vec!["scale", "-s", &d, &d], "is the data file"),
    ] {
        let o = run(&args, dir.path());
        fails(&o, needle);
    }
    assert_eq!(std::fs::read_to_string(&d).unwrap(), TINY);
    let model = std::fs::read_to_string(dir.path().join("m.model")).unwrap();
    assert!(model.starts_with("svm_type"), "{model}");
}
