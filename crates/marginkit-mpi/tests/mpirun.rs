//! `mpirun -np P marginkit-mpi` at P = 2, 3 and 4 ranks against the in-process network of P nodes
//! with the same seed and graph (default local stopping rule, one global core-set cap from an
//! all-reduce of the shard sizes): the same core-set (ids, multiplicities, r^2 bits), rounds and
//! bytes, for synchronous runs and for asynchronous runs with loss and delay. The data set has 455
//! rows, so neither 2 nor 3 ranks divide it: the shards have unequal sizes. Needs `mpirun` (OpenMPI) on PATH; as root set
//! OMPI_ALLOW_RUN_AS_ROOT=1 and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1.

use std::path::Path;
use std::process::Command;

use marginkit::coreset::consensus::{self, ConsensusData};
use marginkit::coreset::{points_for, Activation, ConsensusParams, CoresetParams, Graph, Problem};
use marginkit::data::libsvm_fmt::{read_libsvm_path, ReadOptions};
use marginkit::fit::Control;
use marginkit::svm::KernelParams;
use serde_json::Value;

fn data() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../marginkit/tests/data/coreset_breast_cancer.train.svm")
}

fn mpirun(np: usize, args: &[&str]) -> Value {
    let out = Command::new("mpirun")
        .args([
            "--oversubscribe",
            "-np",
            &np.to_string(),
            env!("CARGO_BIN_EXE_marginkit-mpi"),
        ])
        .args(args)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .expect("mpirun (OpenMPI) must be installed to run this test");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

/// The rank counts every test runs at.
const RANKS: [usize; 3] = [2, 3, 4];

#[allow(clippy::too_many_arguments)]
fn check(
    np: usize,
    problem: Problem,
    args: &[&str],
    graph: &str,
    act: Activation,
    drop: f64,
    delay: u32,
    eps: f64,
    seed: u64,
) {
    let d = read_libsvm_path(data(), &ReadOptions::default()).unwrap();
    let (pts, _) = points_for(&d, problem).unwrap();
    let params = ConsensusParams::new()
        .coreset(
            CoresetParams::new()
                .problem(problem)
                .kernel(KernelParams::default())
                .eps(eps)
                .seed(seed),
        )
        .graph(graph.parse::<Graph>().unwrap())
        .activation(act)
        .drop(drop)
        .max_delay(delay)
        .check()
        .unwrap();
    let network = ConsensusData::InProcess {
        points: &pts,
        nodes: np,
    };
    let rep = consensus::fit(&params, &network, &mut Control::default())
        .unwrap()
        .report;
    assert!(rep.agreed);
    let set = &rep.states[0].1;
    let v = mpirun(np, args);
    let ids: Vec<u64> = v["core_set_multiset"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect();
    assert_eq!(ids, set.ids, "core-set ids");
    assert_eq!(
        v["radius2"].as_f64().unwrap().to_bits(),
        set.r2.to_bits(),
        "r^2 bits"
    );
    assert_eq!(v["rounds"].as_u64().unwrap(), rep.rounds);
    assert_eq!(v["bytes_total"].as_u64().unwrap(), rep.bytes_sent);
    assert_eq!(v["agreed"], Value::Bool(true));
}

#[test]
fn two_three_and_four_ranks_equal_in_process_sync() {
    let f = data();
    let f = f.to_str().unwrap();
    for np in RANKS {
        check(
            np,
            Problem::Meb,
            &["meb", f, "--graph", "er:0.3", "--seed", "3", "--json"],
            "er:0.3",
            Activation::Sync,
            0.0,
            0,
            0.1,
            3,
        );
        check(
            np,
            Problem::L2Svm { c: 10.0 },
            &[
                "svm", f, "-c", "10", "--eps", "0.05", "--graph", "ring", "--json",
            ],
            "ring",
            Activation::Sync,
            0.0,
            0,
            0.05,
            1,
        );
    }
}

#[test]
fn two_three_and_four_ranks_equal_in_process_async_with_loss_and_delay() {
    let f = data();
    let f = f.to_str().unwrap();
    for np in RANKS {
        check(
            np,
            Problem::Svdd,
            &[
                "svdd", f, "--graph", "er:0.4", "--async", "0.5", "--drop", "0.3", "--delay", "2",
                "--seed", "9", "--json",
            ],
            "er:0.4",
            Activation::Async { p: 0.5 },
            0.3,
            2,
            0.1,
            9,
        );
    }
}

#[test]
fn own_files_per_rank_equal_the_shards_of_one_file() {
    let text = std::fs::read_to_string(data()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let n = lines.len();
    let whole = data();
    let common = ["--eps", "0.05", "-c", "10", "--graph", "er:0.3", "--json"];
    for np in RANKS {
        let dir =
            std::env::temp_dir().join(format!("marginkit-mpi-test-{}-{np}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for r in 0..np {
            let part = lines[r * n / np..(r + 1) * n / np].join("\n") + "\n";
            std::fs::write(dir.join(format!("part{r}.svm")), part).unwrap();
        }
        let pattern = dir.join("part{rank}.svm");
        let mut a1 = vec!["svm", pattern.to_str().unwrap()];
        a1.extend(common);
        let mut a2 = vec!["svm", whole.to_str().unwrap()];
        a2.extend(common);
        let (own, one) = (mpirun(np, &a1), mpirun(np, &a2));
        std::fs::remove_dir_all(&dir).ok();
        for key in [
            "core_set_multiset",
            "radius2",
            "rounds",
            "train_accuracy",
            "bytes_total",
        ] {
            assert_eq!(own[key], one[key], "{key} at {np} ranks");
        }
        assert!(own["coverage_ratio"].as_f64().unwrap() <= 1.05f64.powi(2) + 1e-9);
    }
}

#[test]
fn tiny_eps_uses_one_global_cap_like_in_process() {
    // eps = 1e-12: k = min(1e12, n) from an all-reduce of the shard sizes, the same k as the
    // in-process run (each rank holds only its shard of the data).
    let f = data();
    let f = f.to_str().unwrap();
    let n = std::fs::read_to_string(data()).unwrap().lines().count() as u64;
    for np in RANKS {
        check(
            np,
            Problem::Meb,
            &["meb", f, "--eps", "1e-12", "--graph", "ring", "--json"],
            "ring",
            Activation::Sync,
            0.0,
            0,
            1e-12,
            1,
        );
        let v = mpirun(
            np,
            &["meb", f, "--eps", "1e-12", "--graph", "ring", "--json"],
        );
        assert_eq!(v["k"].as_u64().unwrap(), n);
        assert_eq!(v["stop_rule"], "local");
        assert_eq!(v["window_proven"], Value::Bool(true));
        // Directed ring of P nodes: D = P - 1, W = 2 D + 1.
        assert_eq!(
            v["window"].as_u64(),
            Some(2 * (np as u64 - 1) + 1),
            "{np} ranks"
        );
    }
}
