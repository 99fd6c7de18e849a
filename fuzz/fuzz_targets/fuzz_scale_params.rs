//! Fuzzes the svm-scale parameter-file reader; accepted parameters must survive an exact
//! write/read round trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use marginkit::data::scale::ScaleParams;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = ScaleParams::read(data) {
        let mut out = Vec::new();
        p.write_exact(&mut out).expect("writing to memory");
        let back = ScaleParams::read(&out[..]).expect("re-reading written parameters");
        assert_eq!(back, p);
        let mut svm = Vec::new();
        p.write(&mut svm).expect("writing to memory");
        ScaleParams::read(&svm[..]).expect("re-reading %.16g parameters");
    }
});
