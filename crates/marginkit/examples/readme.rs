//! The README's "From Rust" example, compiled: `tests/docs_rust.rs` checks that the README's
//! text equals the part between the `docs:begin` and `docs:end` lines.
//!
//! `cargo run --release -p marginkit --example readme` (from the repository's root: it reads
//! `data/clf/heart_scale.train.svm` and writes `heart_scale.model`)

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // docs:begin readme
    use marginkit::data::libsvm_fmt::{read_libsvm_path, ReadOptions};
    use marginkit::fit::Control;
    use marginkit::svm::{fit, model_io::save_model, SvmParams};

    let data = read_libsvm_path("data/clf/heart_scale.train.svm", &ReadOptions::default())?;
    let params = SvmParams::new().c(4.0).check()?;
    let fit = fit(&params, &data, &mut Control::default())?;
    println!(
        "{:?} after {} iterations",
        fit.report.status(),
        fit.report.iterations()
    );
    save_model(std::path::Path::new("heart_scale.model"), &fit.model)?;
    // docs:end
    Ok(())
}
