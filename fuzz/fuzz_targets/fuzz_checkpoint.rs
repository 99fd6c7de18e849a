//! Fuzzes the fit-checkpoint reader (`--resume STATE`): an accepted checkpoint must write back to
//! exactly the bytes it was read from (the form has no slack), and the SMO snapshot reader inside
//! it is fuzzed on the raw input too. State files end in a checksum of their body, so random
//! bytes rarely get past it: the input is also tried as a body with its checksum appended
//! (FNV-1a 64, computed here independently), which fuzzes the parser behind the checksum.
#![no_main]

use libfuzzer_sys::fuzz_target;
use marginkit::solver::smo::SmoSnapshot;
use marginkit::svm::FitCheckpoint;

fn fnv1a(b: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &x in b {
        h ^= u64::from(x);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fuzz_target!(|data: &[u8]| {
    if let Ok(c) = FitCheckpoint::from_bytes(data) {
        assert_eq!(c.to_bytes(), data);
        assert!(c.n_done() <= c.n_subproblems());
    }
    let mut sealed = data.to_vec();
    sealed.extend_from_slice(&fnv1a(data).to_le_bytes());
    if let Ok(c) = FitCheckpoint::from_bytes(&sealed) {
        assert_eq!(c.to_bytes(), sealed);
        assert!(c.n_done() <= c.n_subproblems());
    }
    if let Ok((s, used)) = SmoSnapshot::from_bytes(data) {
        assert!(used <= data.len());
        assert_eq!(s.to_bytes(), &data[..used]);
        assert_eq!(s.alpha().len(), s.n());
    }
});
