//! Fuzzes the state-file readers of the method commands (`marginkit aid ... --resume STATE`,
//! `marginkit robust ... --resume STATE`, `marginkit path ... --resume STATE`):
//! `AidCheckpoint::from_bytes`, `RobustCheckpoint::from_bytes` and `PathCheckpoint::from_bytes`. An accepted state must write back to exactly the bytes it was
//! read from (the forms have no slack). State files end in a checksum of their body, so random
//! bytes rarely get past it: the input is also tried as a body with its checksum appended
//! (FNV-1a 64, computed here independently), which fuzzes the parsers behind the checksum.
#![no_main]

use libfuzzer_sys::fuzz_target;
use marginkit::aid::AidCheckpoint;
use marginkit::path::PathCheckpoint;
use marginkit::robust::RobustCheckpoint;

fn fnv1a(b: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &x in b {
        h ^= u64::from(x);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn check(data: &[u8]) {
    if let Ok(c) = AidCheckpoint::from_bytes(data) {
        assert_eq!(c.to_bytes(), data);
        assert!(c.n_iterations() == c.iterations().len());
    }
    if let Ok(c) = RobustCheckpoint::from_bytes(data) {
        assert_eq!(c.to_bytes(), data);
    }
    if let Ok(c) = PathCheckpoint::from_bytes(data) {
        assert_eq!(c.to_bytes(), data);
        assert!(c.n_points() == c.points().len());
    }
}

fuzz_target!(|data: &[u8]| {
    check(data);
    let mut sealed = data.to_vec();
    sealed.extend_from_slice(&fnv1a(data).to_le_bytes());
    check(&sealed);
});
