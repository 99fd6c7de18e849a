//! Train a C-SVC on heart_scale, evaluate it, save it in LIBSVM's format and load it back.
//!
//! `cargo run --release -p marginkit --example heart_scale`

use marginkit::data::libsvm_fmt::{read_libsvm_path, ReadOptions};
use marginkit::fit::{Control, Fit};
use marginkit::svm::model_io::{load_model, save_model};
use marginkit::svm::train::{cross_validation, fit};
use marginkit::svm::{Gamma, KernelKind, KernelParams, SvmParams};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../marginkit-cli/data");
    let train = read_libsvm_path(dir.join("heart_scale.train"), &ReadOptions::default())?;
    let test = read_libsvm_path(dir.join("heart_scale.test"), &ReadOptions::default())?;

    // svm-train -c 4 -g 0.05 (RBF kernel)
    let params = SvmParams::new()
        .c(4.0)
        .kernel(KernelParams {
            kind: KernelKind::Rbf,
            gamma: Gamma::Value(0.05),
            ..KernelParams::default()
        })
        .check()?;
    let Fit { model, report, .. } = fit(&params, &train, &mut Control::default())?;
    let sp = &report.subproblems[0];
    println!(
        "objective {:.6}, rho {:.6}, {} support vectors, {} iterations, {}",
        sp.objective,
        sp.rho,
        model.total_sv(),
        sp.iterations,
        sp.status.as_str()
    );

    let pred = model.predict(&test.x)?;
    let correct = pred.iter().zip(&test.y).filter(|(p, y)| p == y).count();
    println!("test accuracy {correct}/{}", test.len());

    let cv = cross_validation(&params, &train, 5, &mut Control::default())?.predictions;
    let cv_ok = cv.iter().zip(&train.y).filter(|(p, y)| p == y).count();
    println!("5-fold CV accuracy {cv_ok}/{}", train.len());

    let path = std::env::temp_dir().join("heart_scale.example.model");
    save_model(&path, &model)?;
    let back = load_model(&path)?;
    assert_eq!(back.predict(&test.x)?, pred);
    println!("saved and reloaded {}", path.display());
    Ok(())
}
