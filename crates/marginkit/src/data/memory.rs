//! The memory guard: every dense allocation whose size depends on the data (a weight vector per
//! feature index, `n x d` dense rows, `n x n` kernel matrices) is checked here before it happens.
//!
//! LIBSVM text gives feature indices, not a feature count, so one stray index such as
//! `2000000000:1` makes every dense structure two billion columns wide. Allocating first and
//! failing later aborts the process (Rust's allocation failure is not recoverable) or gets it
//! killed by the kernel after minutes of swapping; a refusal with the arithmetic is what a user
//! can act on.
//!
//! The budget is the memory the system can still give ([`available_bytes`]): `MemAvailable` from
//! `/proc/meminfo`, lowered to what a cgroup v2 limit leaves (`memory.max - memory.current`, as
//! inside a container), and to `MARGINKIT_MAX_MEMORY_MB` when that environment variable is set
//! (for shared machines and for tests). Without any of these sources (not Linux) only sizes that
//! cannot be addressed at all are refused.

use super::Features;
use crate::error::DataError;

/// Environment variable (MB, fractions allowed) that caps the memory budget of the guard.
pub const MAX_MEMORY_ENV: &str = "MARGINKIT_MAX_MEMORY_MB";

/// The memory the guard lets one dense structure use, in bytes: the least of `MemAvailable`,
/// the room under a cgroup v2 limit and [`MAX_MEMORY_ENV`]; `None` when none of them is known.
pub fn available_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| mem_available_bytes(&t));
    let cgroup = cgroup_room_bytes();
    let env = std::env::var(MAX_MEMORY_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|mb| mb.is_finite() && *mb >= 0.0)
        .map(|mb| (mb * 1048576.0) as u64);
    [meminfo, cgroup, env].into_iter().flatten().min()
}

/// `memory.max - memory.current` of this process's cgroup (v2), when it has a finite limit.
fn cgroup_room_bytes() -> Option<u64> {
    let cg = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    // cgroup v2 has the single line `0::/path`.
    let rel = cg.lines().find_map(|l| l.strip_prefix("0::"))?.trim();
    let dir = std::path::Path::new("/sys/fs/cgroup").join(rel.trim_start_matches('/'));
    let read = |name: &str| -> Option<u64> {
        std::fs::read_to_string(dir.join(name))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    let max = read("memory.max")?; // "max" (no limit) does not parse
    let current = read("memory.current").unwrap_or(0);
    Some(max.saturating_sub(current))
}

/// Bytes of a dense `rows x cols` array of `f64`, or `None` when that does not fit in `u64`.
pub fn dense_bytes(rows: usize, cols: usize) -> Option<u64> {
    (rows as u64).checked_mul(cols as u64)?.checked_mul(8)
}

/// Checks that a dense `rows x cols` array of `f64` (`what` names it: "k-means centres",
/// "dense rows") fits in the memory budget ([`available_bytes`]) before it is allocated.
///
/// # Errors
/// [`DataError::DenseTooLarge`] when it does not (or its size overflows the address space).
pub fn dense_bytes_check(what: &'static str, rows: usize, cols: usize) -> Result<(), DataError> {
    check_with(what, rows, cols, available_bytes(), None)
}

fn check_with(
    what: &'static str,
    rows: usize,
    cols: usize,
    available: Option<u64>,
    widest: Option<(usize, usize)>,
) -> Result<(), DataError> {
    let bytes = dense_bytes(rows, cols);
    let limit = available.unwrap_or(isize::MAX as u64);
    match bytes {
        Some(b) if b <= limit && b <= isize::MAX as u64 => Ok(()),
        _ => Err(DataError::DenseTooLarge {
            what,
            rows,
            cols,
            bytes: bytes.unwrap_or(u64::MAX),
            available: limit,
            widest,
        }),
    }
}

impl Features {
    /// The largest feature index (1-based, LIBSVM's numbering) and the first sample (1-based)
    /// that has it, when the widest column holds a stored value; `None` for dense storage or
    /// when the width comes from elsewhere (a model, an explicit width).
    pub fn widest_feature(&self) -> Option<(usize, usize)> {
        let Features::Sparse(m) = self else {
            return None;
        };
        let last = m.n_cols().checked_sub(1)?;
        (0..m.n_rows()).find_map(|i| {
            let (idx, _) = m.row(i);
            (idx.last().map(|&k| k as usize) == Some(last)).then_some((last + 1, i + 1))
        })
    }

    /// Checks that `rows` dense rows as wide as this matrix (`rows x n_cols` values of `f64`;
    /// `what` names them) fit in the memory budget; the error names the feature index that sets
    /// the width and the sample it is in.
    ///
    /// # Errors
    /// [`DataError::DenseTooLarge`] when they do not.
    pub fn check_dense_rows(&self, what: &'static str, rows: usize) -> Result<(), DataError> {
        self.check_dense_rows_within(what, rows, available_bytes())
    }

    fn check_dense_rows_within(
        &self,
        what: &'static str,
        rows: usize,
        available: Option<u64>,
    ) -> Result<(), DataError> {
        check_with(
            what,
            rows,
            self.n_cols(),
            available,
            self.widest_feature().filter(|_| rows > 0),
        )
    }
}

/// Weights a linear model may always have, whatever the data: 2^24 (a hashed text vocabulary),
/// about 100 MB of model text per weight column.
pub const LINEAR_WIDTH_FLOOR: usize = 1 << 24;
/// Beyond the floor, weights allowed per value stored in the training data. A feature no
/// training sample has gets weight 0 from every LIBLINEAR solver, so a model far wider than its
/// data is a file of zeros (a stray index such as `2000000000:1` makes two billion lines).
pub const LINEAR_WIDTH_PER_VALUE: usize = 64;

impl Features {
    /// Checks that a linear model of `n_classes` weight columns over these features stays a
    /// sane LIBLINEAR file: at most `max(2^24, 64 x stored values)` weights, then that its
    /// weight vectors fit in memory.
    ///
    /// # Errors
    /// [`DataError::TooWideForLinearModel`] or [`DataError::DenseTooLarge`].
    pub fn check_linear_model_width(&self, n_classes: usize) -> Result<(), DataError> {
        let nnz = match self {
            Features::Dense(m) => m.n_rows().saturating_mul(m.n_cols()),
            Features::Sparse(m) => m.nnz(),
        };
        let weights = self.n_cols().saturating_mul(n_classes.max(1));
        if weights > LINEAR_WIDTH_FLOOR.max(nnz.saturating_mul(LINEAR_WIDTH_PER_VALUE)) {
            return Err(DataError::TooWideForLinearModel {
                n_features: self.n_cols(),
                widest_sample: self.widest_feature().map(|(_, s)| s),
                n_classes: n_classes.max(1),
                nnz,
            });
        }
        self.check_dense_rows("the linear model's weights", n_classes.max(1))
    }
}

/// `MemAvailable` in bytes from the text of `/proc/meminfo` (`MemAvailable:  123456 kB`).
pub fn mem_available_bytes(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let mut it = line["MemAvailable:".len()..].split_whitespace();
    let v: u64 = it.next()?.parse().ok()?;
    match it.next() {
        Some("kB") => v.checked_mul(1024),
        None => Some(v),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::CsrMatrix;

    fn huge() -> Features {
        // Rows: {1, 2000000000}, {1, 2}, {1}, {2000000000} (0-based columns below).
        let m = CsrMatrix::new(
            2_000_000_000,
            vec![0, 2, 4, 5, 6],
            vec![0, 1_999_999_999, 0, 1, 0, 1_999_999_999],
            vec![1.0, 1.0, -1.0, 1.0, 0.5, -1.0],
        )
        .unwrap();
        Features::Sparse(m)
    }

    #[test]
    fn refuses_what_does_not_fit_and_names_the_index() {
        let x = huge();
        assert_eq!(x.widest_feature(), Some((2_000_000_000, 1)));
        let e = x
            .check_dense_rows_within("dense rows", 4, Some(1 << 30))
            .unwrap_err();
        match &e {
            DataError::DenseTooLarge {
                rows,
                cols,
                bytes,
                available,
                widest,
                ..
            } => {
                assert_eq!((*rows, *cols), (4, 2_000_000_000));
                assert_eq!(*bytes, 64_000_000_000);
                assert_eq!(*available, 1 << 30);
                assert_eq!(*widest, Some((2_000_000_000, 1)));
            }
            other => panic!("unexpected {other:?}"),
        }
        let msg = e.to_string();
        assert!(
            msg.contains("feature index 2000000000 in sample 1"),
            "{msg}"
        );
        assert!(msg.contains("64.000 GB"), "{msg}");
        assert!(x.check_dense_rows_within("w", 1, Some(16 << 30)).is_ok());
    }

    #[test]
    fn linear_width_is_bounded_by_the_data() {
        let e = huge().check_linear_model_width(1).unwrap_err();
        assert!(matches!(
            e,
            DataError::TooWideForLinearModel {
                n_features: 2_000_000_000,
                widest_sample: Some(1),
                nnz: 6,
                ..
            }
        ));
        // A hashed vocabulary of 2^24 columns over few documents is a normal LIBLINEAR model.
        let m = CsrMatrix::new(1 << 24, vec![0, 1], vec![(1 << 24) - 1], vec![1.0]).unwrap();
        assert!(Features::Sparse(m).check_linear_model_width(1).is_ok());
    }

    #[test]
    fn overflow_is_refused_even_without_a_budget() {
        assert!(check_with("n x n", usize::MAX, 3, None, None).is_err());
        assert!(check_with("n x n", 1 << 20, 1 << 20, None, None).is_ok());
        assert!(check_with("n x n", 1 << 20, 1 << 20, Some(1 << 20), None).is_err());
    }

    #[test]
    fn budget_is_known_on_linux() {
        if std::path::Path::new("/proc/meminfo").exists() {
            assert!(available_bytes().is_some_and(|b| b > 0));
        }
    }
}
