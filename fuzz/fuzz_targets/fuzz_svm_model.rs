//! Fuzzes the LIBSVM model reader. An accepted model must (1) write back to text that re-reads to
//! a model writing the very same text (the written form is a fixed point; it never carries the
//! `status` line, which the reader accepts), and (2) predict on a few rows without panicking
//! (feature mismatches are errors, not crashes).
#![no_main]

use libfuzzer_sys::fuzz_target;
use marginkit::data::{CsrMatrix, DenseMatrix, Features};
use marginkit::solver::Status;
use marginkit::svm::model_io::{read_model_with_status, write_model};

fuzz_target!(|data: &[u8]| {
    let Ok((model, _status)) = read_model_with_status(data) else {
        return;
    };
    let mut text = Vec::new();
    write_model(&mut text, &model).expect("writing to memory");
    let (back, st2) = read_model_with_status(text.as_slice()).expect("re-reading a written model");
    assert_eq!(st2, Status::Converged);
    let mut again = Vec::new();
    write_model(&mut again, &back).expect("writing to memory");
    assert_eq!(
        String::from_utf8_lossy(&text),
        String::from_utf8_lossy(&again)
    );

    // Predict on a dense row as wide as the model (plus a serial-number column for precomputed
    // kernels, bounded to keep the run short) and on an empty sparse row.
    let cols = model.n_features().clamp(1, 4096);
    let dense = DenseMatrix::new(
        2,
        cols,
        (0..2 * cols).map(|k| (k % 7) as f64 * 0.25).collect(),
    )
    .expect("valid shape");
    let sparse = CsrMatrix::new(cols, vec![0, 0], Vec::new(), Vec::new()).expect("valid CSR");
    for x in [Features::Dense(dense), Features::Sparse(sparse)] {
        if let Ok(pred) = model.predict(&x) {
            assert_eq!(pred.len(), x.n_rows());
        }
        if model.has_probability() {
            let _ = model.predict_probability(&x);
        }
    }
});
