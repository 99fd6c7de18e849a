//! Fuzzes the LIBLINEAR model reader. An accepted model must write back exactly (write, read,
//! compare; the written form never carries the `status` line, which the reader accepts) and
//! predict on a row of its width without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use marginkit::data::{DenseMatrix, Features};
use marginkit::solver::Status;
use marginkit::svm::linear::LinearModel;

fuzz_target!(|data: &[u8]| {
    let Ok((model, _status)) = LinearModel::read_with_status(data) else {
        return;
    };
    let mut text = Vec::new();
    model.write(&mut text).expect("an accepted model writes");
    let (back, st2) = LinearModel::read_with_status(text.as_slice()).expect("re-reading");
    assert_eq!(back, model);
    assert_eq!(st2, Status::Converged);

    let cols = model.n_features().min(4096);
    let x = DenseMatrix::new(1, cols, (0..cols).map(|k| (k % 5) as f64 - 2.0).collect())
        .expect("valid shape");
    let pred = model.predict(&Features::Dense(x));
    assert_eq!(pred.len(), 1);
});
