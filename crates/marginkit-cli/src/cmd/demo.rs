//! `marginkit demo`: trains and evaluates on heart_scale, built into the binary, so that a new
//! user sees the whole pipeline work with one command.

use clap::Args;

use std::time::Instant;

use marginkit::data::libsvm_fmt::{read_libsvm_bytes, ReadOptions};
use marginkit::fit::{Control, Fit};
use marginkit::svm::train::{cross_validation, fit};
use marginkit::svm::SvmParams;
use serde_json::json;

use crate::common::report::evaluate;
use crate::common::report::fmt_g;
use crate::common::run::init_threads;
use crate::common::{Exit, Outcome};

const TRAIN: &[u8] = include_bytes!("../../data/heart_scale.train");
const TEST: &[u8] = include_bytes!("../../data/heart_scale.test");

pub fn run(a: DemoArgs) -> Exit {
    init_threads(a.threads)?;
    let opts = ReadOptions::default();
    let train = read_libsvm_bytes(TRAIN, &opts)?;
    let test = read_libsvm_bytes(TEST, &opts)?
        .x
        .with_min_cols(train.n_features());
    let test_y = read_libsvm_bytes(TEST, &opts)?.y;
    let params = SvmParams::new().check()?;
    let t0 = Instant::now();
    let Fit { model, report, .. } = fit(&params, &train, &mut Control::default())?;
    let secs = t0.elapsed().as_secs_f64();
    let pred = model.predict(&test)?;
    let m = evaluate(&pred, &test_y, false);
    let cv = cross_validation(&params, &train, 5, &mut Control::default())?.predictions;
    let cvm = evaluate(&cv, &train.y, false);
    let sp = &report.subproblems[0];
    if a.json {
        println!(
            "{}",
            json!({
                "data": "heart_scale",
                "n_train": train.len(), "n_test": test_y.len(), "n_features": train.n_features(),
                "train_seconds": secs, "objective": sp.objective, "rho": sp.rho,
                "n_sv": model.total_sv(), "iterations": sp.iterations, "status": sp.status.as_str(),
                "test_accuracy": m["accuracy"], "cv5_accuracy": cvm["accuracy"],
            })
        );
        return Ok(Outcome::Done);
    }
    println!(
        "marginkit demo: heart_scale (Statlog heart disease), {} training and {} test rows, {} features",
        train.len(),
        test_y.len(),
        train.n_features()
    );
    println!(
        "C-SVC, RBF kernel (gamma = 1/{}), C = 1: trained in {:.2} ms, {} iterations ({})",
        train.n_features(),
        secs * 1e3,
        sp.iterations,
        sp.status.as_str()
    );
    println!(
        "  objective = {}, rho = {}, nSV = {}, nBSV = {}",
        fmt_g(sp.objective),
        fmt_g(sp.rho),
        model.total_sv(),
        sp.n_bsv
    );
    println!(
        "Test accuracy = {}% ({}/{})",
        fmt_g(m["accuracy"].as_f64().unwrap_or(0.0)),
        m["correct"],
        m["total"]
    );
    println!(
        "5-fold cross-validation accuracy on the training rows = {}%",
        fmt_g(cvm["accuracy"].as_f64().unwrap_or(0.0))
    );
    println!("Next: marginkit train -c 4 YOUR_DATA  (flags as LIBSVM's svm-train; see marginkit train --help)");
    Ok(Outcome::Done)
}

/// `marginkit demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Print one JSON object with the results.
    #[arg(long)]
    pub json: bool,
    /// Worker threads (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
}
