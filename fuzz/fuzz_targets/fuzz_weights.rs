//! Fuzzes the per-sample weight file reader (`train -W FILE`) and the `/proc/meminfo` reader of
//! `-m auto`: never a panic; accepted weights are finite and >= 0.
#![no_main]

use libfuzzer_sys::fuzz_target;
use marginkit::svm::params::mem_available_bytes;
use marginkit::svm::train::parse_sample_weights;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match parse_sample_weights(text) {
        Ok(w) => assert!(w.iter().all(|v| v.is_finite() && *v >= 0.0)),
        Err(e) => assert!(e.line >= 1 && e.column >= 1),
    }
    let _ = mem_available_bytes(text);
});
