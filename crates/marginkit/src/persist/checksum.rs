//! FNV-1a 64: the trailing checksum of every state file and the hash behind every fingerprint.

use super::CheckpointError;

/// FNV-1a, 64 bit: a stable hash (not a cryptographic one).
pub(crate) struct Fnv(pub(crate) u64);

impl Fnv {
    pub fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    pub fn bytes(&mut self, b: &[u8]) {
        for &x in b {
            self.0 ^= u64::from(x);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
    pub fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }
    pub fn f64(&mut self, v: f64) {
        self.u64(v.to_bits());
    }
}

/// Appends the body checksum (FNV-1a of every byte so far, little-endian).
pub(crate) fn seal(mut b: Vec<u8>) -> Vec<u8> {
    let mut h = Fnv::new();
    h.bytes(&b);
    b.extend_from_slice(&h.0.to_le_bytes());
    b
}

/// Verifies and strips the trailing checksum of a [`seal`]ed file of kind `file`.
///
/// # Errors
/// [`CheckpointError::Truncated`] when there is no room for a checksum,
/// [`CheckpointError::Checksum`] when it does not match.
pub(crate) fn unseal<'a>(bytes: &'a [u8], file: &'static str) -> Result<&'a [u8], CheckpointError> {
    let Some(split) = bytes.len().checked_sub(8) else {
        return Err(CheckpointError::Truncated {
            file,
            at: 0,
            need: 8,
        });
    };
    let (body, sum) = bytes.split_at(split);
    let mut h = Fnv::new();
    h.bytes(body);
    let mut want = [0u8; 8];
    want.copy_from_slice(sum);
    if h.0 != u64::from_le_bytes(want) {
        return Err(CheckpointError::Checksum { file });
    }
    Ok(body)
}
