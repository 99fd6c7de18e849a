//! Where the core-set L2-SVM loses accuracy on noisy data (see bench/results/coreset.md):
//! the exact 2-norm SVM of the same mapping (all points, the simplex QP solved by the SMO
//! engine: [`exact_set`]) against core-sets of `k = ceil(1/eps)` points, on the first `n` rows of
//! a training file, with the test accuracy, `r^2` against the exact `r*^2`, and the margin
//! `rho = (c + 1 + 1/C) - r^2` of each.
//!
//! ```text
//! cargo run --release -p marginkit --example coreset_svm_gap -- TRAIN TEST [n=3000] [C=10] [gamma=0.1]
//! ```

use std::time::Instant;

use marginkit::coreset::model::to_model;
use marginkit::coreset::points_for;
use marginkit::coreset::quality::exact_set;
use marginkit::coreset::summary::accuracy;
use marginkit::coreset::{CoreSetMsg, CoresetParams, FeatureKernel, Problem};
use marginkit::data::libsvm_fmt::{read_libsvm_path, ReadOptions};
use marginkit::fit::Control;
use marginkit::svm::{Gamma, KernelKind, KernelParams};
use marginkit::{Dataset, KernelSpec};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        return Err("usage: coreset_svm_gap TRAIN TEST [n] [C] [gamma]".into());
    }
    let n: usize = args.get(2).map_or(Ok(3000), |s| s.parse())?;
    let c: f64 = args.get(3).map_or(Ok(10.0), |s| s.parse())?;
    let gamma: f64 = args.get(4).map_or(Ok(0.1), |s| s.parse())?;
    let full = read_libsvm_path(&args[0], &ReadOptions::default())?;
    let test = read_libsvm_path(&args[1], &ReadOptions::default())?;
    let rows: Vec<usize> = (0..n.min(full.len())).collect();
    let train: Dataset = full.subset(&rows);
    let problem = Problem::L2Svm { c };
    let kern = FeatureKernel::new(problem, KernelSpec::Rbf { gamma })?;
    let (pts, labels) = points_for(&train, problem)?;
    let diag = 1.0 + 1.0 + 1.0 / c;
    println!(
        "n = {}, C = {c}, gamma = {gamma}, test rows = {}",
        train.len(),
        test.len()
    );
    println!("| model | k | support | r^2 | rho = {diag:.3} - r^2 | train % | test % | seconds |");
    println!("|---|---|---|---|---|---|---|---|");
    let row = |name: &str, set: &CoreSetMsg, secs: f64| -> Result<(), Box<dyn std::error::Error>> {
        let m = to_model(set, &kern, labels)?;
        println!(
            "| {name} | {} | {} | {:.6} | {:.6} | {:.2} | {:.2} | {secs:.1} |",
            set.ids.len(),
            set.support().len(),
            set.r2,
            diag - set.r2,
            accuracy(&m, &train)?,
            accuracy(&m, &test)?
        );
        Ok(())
    };
    let t = Instant::now();
    let exact = exact_set(&pts, &kern).ok_or("the exact solve is out of reach (n > 4000?)")?;
    row(
        "exact L2-SVM (all points, SMO)",
        &exact,
        t.elapsed().as_secs_f64(),
    )?;
    for eps in [0.1, 0.03, 0.01, 0.005, 0.0025] {
        let t = Instant::now();
        let rbf = KernelParams {
            kind: KernelKind::Rbf,
            gamma: Gamma::Value(gamma),
            ..KernelParams::default()
        };
        let cp = CoresetParams::new()
            .problem(problem)
            .kernel(rbf)
            .eps(eps)
            .check()?;
        let set = marginkit::coreset::fit(&cp, &pts, &mut Control::default())?
            .model
            .set;
        row(
            &format!("core-set, eps {eps}"),
            &set,
            t.elapsed().as_secs_f64(),
        )?;
    }
    Ok(())
}
