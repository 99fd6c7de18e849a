//! Fuzzes the fit-checkpoint reader (`--resume STATE`): an accepted checkpoint must write back to
//! exactly the bytes it was read from (the form has no slack), and the SMO snapshot reader inside
//! it is fuzzed on the raw input too.
#![no_main]

use libfuzzer_sys::fuzz_target;
use marginkit::solver::smo::SmoSnapshot;
use marginkit::svm::FitCheckpoint;

fuzz_target!(|data: &[u8]| {
    if let Ok(c) = FitCheckpoint::from_bytes(data) {
        assert_eq!(c.to_bytes(), data);
        assert!(c.n_done() <= c.n_subproblems());
    }
    if let Ok((s, used)) = SmoSnapshot::from_bytes(data) {
        assert!(used <= data.len());
        assert_eq!(s.to_bytes(), &data[..used]);
        assert_eq!(s.alpha().len(), s.n());
    }
});
