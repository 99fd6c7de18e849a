//! Persistence of stopped runs: the one codec, checksum, data fingerprint and error that every
//! method's checkpoint (state file) is written and read with. Each method keeps its own small
//! state type in its own module ([`crate::svm::FitCheckpoint`], [`crate::path::PathCheckpoint`],
//! [`crate::aid::AidCheckpoint`], [`crate::robust::RobustCheckpoint`], and the SMO solver's
//! [`crate::solver::smo::SmoSnapshot`] inside a fit checkpoint); this module holds what they share,
//! so that a state file is read by exactly one bounds-checked decoder and every damaged,
//! foreign or mismatched file is reported as one structured [`CheckpointError`].
//!
//! File form shared by every state file:
//! * an 8-byte ASCII magic naming the kind and the version of the form (`MKFITCK3`,
//!   `MKPATHC3`, `MKAIDCK2`, `MKROBCK4`; `MKSMO001` for an SMO snapshot of the pair engine and
//!   `MKSMOB01` for one of the block engine, which are embedded in a fit checkpoint and have no
//!   checksum of their own);
//! * fields little-endian: integers and counts as `u64` (indices of clustered rows as `u32`),
//!   text as its length and UTF-8 bytes,
//!   floats as their IEEE-754 bits (`f64`, `f32`), so values round-trip bit-exactly; flags and
//!   tags as one byte; an array as its length (`u64`) and then its entries; an optional value
//!   as a tag byte (0 absent, 1 present) and then the value;
//! * the fingerprint (FNV-1a 64 of the data set and of a description of every parameter that
//!   changes the result), so a state file is never continued on other data;
//! * then, in the current version of every kind (`MKFITCK3`, `MKPATHC3`, `MKAIDCK2`,
//!   `MKROBCK4`), the run record: every setting that changes the result as `(flag, value)` text
//!   and the rows, features and hash of every data set, so that a refused resume names what
//!   differs (`RunRecord`, compared by `check_resume`). The previous version of each kind
//!   (`MKFITCK2`, `MKPATHC2`, `MKAIDCK1`, `MKROBCK3`) is the same form without it; it is still
//!   read and continued, and a mismatch against it can only say that the data or parameters
//!   differ;
//! * last, an 8-byte FNV-1a 64 checksum of every byte before it, verified before any
//!   field is read.
//!
//! A reader checks every length against the bytes that are left before it allocates, accepts
//! no trailing bytes and never panics; writing back an accepted file gives the same bytes.

mod checksum;
mod codec;
mod error;
mod fingerprint;
mod record;

pub use error::CheckpointError;
pub use record::DataShape;

pub(crate) use checksum::{seal, unseal, Fnv};
pub(crate) use codec::{Dec, Enc};
pub(crate) use fingerprint::{hash_dataset, hash_rows, hash_shape};
pub(crate) use record::{check_resume, RunRecord};

/// Checks the magic and the checksum of a sealed state file of kind `file`; returns a decoder
/// over the body, positioned after the magic.
///
/// # Errors
/// [`CheckpointError::BadMagic`] for another kind of file, [`CheckpointError::Checksum`] for a
/// damaged one.
pub(crate) fn open<'a>(
    bytes: &'a [u8],
    magic: &'static str,
    file: &'static str,
) -> Result<Dec<'a>, CheckpointError> {
    if !bytes.starts_with(magic.as_bytes()) {
        return Err(bad_magic(bytes, magic, file));
    }
    let body = unseal(bytes, file)?;
    Ok(Dec::at(body, 8, file))
}

/// As [`open`] for a kind with two versions: `current`, whose body carries a [`RunRecord`]
/// after the fingerprint, and `older`, the same form without it (still read, so that its runs
/// can be continued). Returns the decoder and whether the file is of the current version.
///
/// # Errors
/// As [`open`]; the bad magic names the current version.
pub(crate) fn open_either<'a>(
    bytes: &'a [u8],
    current: &'static str,
    older: &'static str,
    file: &'static str,
) -> Result<(Dec<'a>, bool), CheckpointError> {
    if bytes.starts_with(older.as_bytes()) {
        return open(bytes, older, file).map(|d| (d, false));
    }
    open(bytes, current, file).map(|d| (d, true))
}

/// [`CheckpointError::BadMagic`] for `bytes`, which do not start with `magic`.
pub(crate) fn bad_magic(bytes: &[u8], magic: &'static str, file: &'static str) -> CheckpointError {
    CheckpointError::BadMagic {
        file,
        expected: magic,
        found: bytes[..bytes.len().min(magic.len())]
            .escape_ascii()
            .to_string(),
    }
}

/// Variants of a [`seal`]ed state file as an editor could make them: one body byte (after the
/// 8-byte magic) XORed with 0x01, 0x80 or 0xff, the checksum recomputed. Every byte of the
/// first `dense` is changed, then every `stride`-th (tests of the readers and resumes).
#[cfg(test)]
pub(crate) fn resealed_variants(bytes: &[u8], dense: usize, stride: usize) -> Vec<Vec<u8>> {
    let body = &bytes[..bytes.len() - 8];
    let mut out = Vec::new();
    let mut i = 8;
    while i < body.len() {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut b = body.to_vec();
            b[i] ^= flip;
            out.push(seal(b));
        }
        i += if i < dense { 1 } else { stride };
    }
    out
}

/// Stops at the `n`-th report (counted from 0), to make state files in tests.
#[cfg(test)]
pub(crate) struct StopAt(pub usize);

#[cfg(test)]
impl crate::solver::Observer for StopAt {
    fn on_iter(&mut self, _: &crate::solver::IterStats) -> std::ops::ControlFlow<()> {
        if self.0 == 0 {
            return std::ops::ControlFlow::Break(());
        }
        self.0 -= 1;
        std::ops::ControlFlow::Continue(())
    }
}

/// A test of a kind's previous version: `older` (bytes written without a run record, as the
/// previous version wrote them) starts with `prev_magic`, reads back through `read` without a
/// record, and writes back byte for byte through `write`; `current` starts with `magic`.
#[cfg(test)]
pub(crate) fn check_previous_version<T>(
    current: &[u8],
    older: &[u8],
    (magic, prev_magic): (&str, &str),
    read: impl Fn(&[u8]) -> Result<T, CheckpointError>,
    write: impl Fn(&T) -> Vec<u8>,
    has_record: impl Fn(&T) -> bool,
) -> T {
    assert!(current.starts_with(magic.as_bytes()));
    assert!(has_record(&read(current).unwrap()));
    assert!(older.starts_with(prev_magic.as_bytes()));
    assert!(older.len() < current.len());
    let back = read(older).unwrap();
    assert!(!has_record(&back));
    assert_eq!(write(&back), older);
    back
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAGIC: &str = "MKTEST01";
    const FILE: &str = "test state file";

    /// A body with a field of every kind the codec writes.
    fn sample() -> Vec<u8> {
        let mut e = Enc::new(MAGIC);
        e.u8(7);
        e.bool(true);
        e.u64(u64::MAX - 3);
        e.usize(12);
        e.f64(-0.0);
        e.f64(f64::NAN);
        e.f64s(&[1.5, f64::INFINITY, -2.25e-300]);
        e.usizes(&[0, 5, 9]);
        e.u32s(&[1, u32::MAX]);
        e.f32s(&[0.5, -1.0e-30]);
        e.i8s(&[-1, 0, 1]);
        e.bools(&[true, false, true]);
        e.opt_f64(Some(3.0));
        e.opt_f64(None);
        seal(e.finish())
    }

    fn read(bytes: &[u8]) -> Result<(), CheckpointError> {
        let mut d = open(bytes, MAGIC, FILE)?;
        assert_eq!(d.u8()?, 7);
        assert!(d.bool()?);
        assert_eq!(d.u64()?, u64::MAX - 3);
        assert_eq!(d.usize()?, 12);
        assert_eq!(d.f64()?.to_bits(), (-0.0f64).to_bits());
        assert!(d.f64()?.is_nan());
        let v = d.f64s()?;
        assert_eq!(v.len(), 3);
        assert_eq!(v[2].to_bits(), (-2.25e-300f64).to_bits());
        assert_eq!(d.usizes()?, vec![0, 5, 9]);
        assert_eq!(d.u32s()?, vec![1, u32::MAX]);
        assert_eq!(d.f32s()?, vec![0.5, -1.0e-30]);
        assert_eq!(d.i8s()?, vec![-1, 0, 1]);
        assert_eq!(d.bools()?, vec![true, false, true]);
        assert_eq!(d.opt_f64()?, Some(3.0));
        assert_eq!(d.opt_f64()?, None);
        d.finish()
    }

    #[test]
    fn errors_and_states_are_send_sync() {
        fn is_send_sync<T: Send + Sync + 'static>() {}
        is_send_sync::<CheckpointError>();
        is_send_sync::<crate::svm::FitCheckpoint>();
        is_send_sync::<crate::path::PathCheckpoint>();
        is_send_sync::<crate::aid::AidCheckpoint>();
        is_send_sync::<crate::robust::RobustCheckpoint>();
    }

    #[test]
    fn round_trip() {
        let b = sample();
        read(&b).unwrap();
        // The checksum is FNV-1a 64 of the body, little-endian.
        let mut h = Fnv::new();
        h.bytes(&b[..b.len() - 8]);
        assert_eq!(b[b.len() - 8..], h.0.to_le_bytes());
    }

    /// Every proper prefix is refused: by the magic or the checksum (a prefix is not sealed),
    /// never a panic; and every cut of the body, resealed, gives `Truncated`.
    #[test]
    fn truncation_at_every_byte_is_an_error() {
        let b = sample();
        for cut in 0..b.len() {
            let e = read(&b[..cut]).unwrap_err();
            if cut < 8 {
                assert!(matches!(e, CheckpointError::BadMagic { .. }), "{cut}: {e}");
            } else {
                assert!(matches!(e, CheckpointError::Checksum { .. }), "{cut}: {e}");
            }
        }
        let body = &b[..b.len() - 8];
        for cut in 8..body.len() {
            let e = read(&seal(body[..cut].to_vec())).unwrap_err();
            match e {
                CheckpointError::Truncated { file, at, need } => {
                    assert_eq!(file, FILE);
                    assert!(at <= cut && need > 0, "{cut}: {e}");
                }
                other => panic!("{cut}: {other}"),
            }
        }
    }

    #[test]
    fn a_flipped_bit_fails_the_checksum() {
        let b = sample();
        for i in 8..b.len() {
            for bit in 0..8 {
                let mut bad = b.clone();
                bad[i] ^= 1 << bit;
                let e = read(&bad).unwrap_err();
                assert!(
                    matches!(e, CheckpointError::Checksum { .. }),
                    "{i}/{bit}: {e}"
                );
                assert!(e.to_string().contains("checksum"), "{e}");
            }
        }
    }

    #[test]
    fn magic_trailing_bytes_and_lengths() {
        let mut b = sample();
        b[0] = b'X';
        let e = read(&b).unwrap_err();
        assert!(
            e.to_string().contains("not a marginkit test state file"),
            "{e}"
        );
        let mut body = sample();
        body.truncate(body.len() - 8);
        body.push(0);
        let e = read(&seal(body)).unwrap_err();
        assert!(
            matches!(e, CheckpointError::Trailing { extra: 1, .. }),
            "{e}"
        );
        // A length the remaining bytes cannot hold is refused before anything is allocated.
        let mut e = Enc::new(MAGIC);
        e.u64(u64::MAX);
        let b = seal(e.finish());
        let mut d = open(&b, MAGIC, FILE).unwrap();
        assert!(matches!(
            d.f64s().unwrap_err(),
            CheckpointError::Truncated { .. }
        ));
        // A flag byte other than 0 or 1.
        let mut e = Enc::new(MAGIC);
        e.u8(2);
        let b = seal(e.finish());
        let mut d = open(&b, MAGIC, FILE).unwrap();
        let e = d.bool().unwrap_err();
        assert!(matches!(e, CheckpointError::BadTag { value: 2, .. }), "{e}");
    }
}
