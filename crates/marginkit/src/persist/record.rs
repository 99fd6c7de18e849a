//! What a state file was written for, in words a user can act on: every setting that changes
//! the result (named by the flag that sets it, with its value as text) and the shape and hash of
//! every data set. A resume compares the stored record with the current one and names the first
//! difference ([`check_resume`]); the fingerprint stays the final check, so that a difference the
//! record does not name is still refused.

use std::fmt;

use super::{hash_dataset, CheckpointError, Dec, Enc, Fnv};
use crate::data::Dataset;
use crate::kernel::KernelSpec;

/// The shape and content hash of one data set a state file was written for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataShape {
    /// Number of rows.
    pub rows: u64,
    /// Number of features (the largest feature index).
    pub features: u64,
    /// FNV-1a 64 of every label, weight and non-zero feature.
    pub hash: u64,
}

impl DataShape {
    /// A data set's shape and hash, computed elsewhere (over shards: [`super::hash_rows`]).
    pub(crate) fn new(rows: usize, features: usize, hash: u64) -> Self {
        Self {
            rows: rows as u64,
            features: features as u64,
            hash,
        }
    }

    /// The shape and hash of `data`.
    pub(crate) fn of(data: &Dataset) -> Self {
        let mut h = Fnv::new();
        hash_dataset(&mut h, data);
        Self {
            rows: data.len() as u64,
            features: data.n_features() as u64,
            hash: h.0,
        }
    }
}

impl fmt::Display for DataShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} rows, {} features and fingerprint {:016x}",
            self.rows, self.features, self.hash
        )
    }
}

/// The message of [`CheckpointError::Data`].
pub(crate) fn data_message(
    file: &str,
    role: &str,
    stored: &Option<DataShape>,
    now: &Option<DataShape>,
) -> String {
    match (stored, now) {
        (Some(s), Some(n)) => format!("the {file} was written for {role} with {s} (now {n})"),
        (Some(s), None) => {
            format!("the {file} was written for {role} with {s} (now without {role})")
        }
        (None, Some(n)) => format!("the {file} was written without {role} (now {role} with {n})"),
        (None, None) => format!("the {file} was written for other {role}"),
    }
}

/// The settings and data a state file was written for (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct RunRecord {
    /// `(flag, value)` in the method's order.
    settings: Vec<(String, String)>,
    /// `(role, shape)`: "training data", "validation data".
    data: Vec<(String, DataShape)>,
}

impl RunRecord {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a setting: `name` as the user sets it (a command-line flag where there is one),
    /// `value` as text (floats in shortest round-trip form).
    pub fn set(&mut self, name: &str, value: impl fmt::Display) -> &mut Self {
        self.settings.push((name.to_owned(), value.to_string()));
        self
    }

    /// Adds the kernel's settings (`-t` and the parameters of that kernel), resolved.
    pub fn kernel(&mut self, k: &KernelSpec) -> &mut Self {
        self.set("-t", k.libsvm_code());
        match *k {
            KernelSpec::Poly {
                gamma,
                coef0,
                degree,
            } => self.set("-g", gamma).set("-r", coef0).set("-d", degree),
            KernelSpec::Rbf { gamma } => self.set("-g", gamma),
            KernelSpec::Sigmoid { gamma, coef0 } => self.set("-g", gamma).set("-r", coef0),
            KernelSpec::Linear | KernelSpec::Precomputed => self,
        }
    }

    /// Adds a data set (a pass over it).
    pub fn data(&mut self, role: &str, data: &Dataset) -> &mut Self {
        self.data_shape(role, DataShape::of(data))
    }

    /// Adds a data set by its shape and hash (of a data set no process holds whole: see
    /// [`super::hash_rows`]).
    pub fn data_shape(&mut self, role: &str, shape: DataShape) -> &mut Self {
        self.data.push((role.to_owned(), shape));
        self
    }

    /// Appends the record to a state file body.
    pub fn encode(&self, e: &mut Enc) {
        e.usize(self.settings.len());
        for (name, value) in &self.settings {
            e.u8s(name.as_bytes());
            e.u8s(value.as_bytes());
        }
        e.usize(self.data.len());
        for (role, s) in &self.data {
            e.u8s(role.as_bytes());
            e.u64(s.rows);
            e.u64(s.features);
            e.u64(s.hash);
        }
    }

    /// Reads [`RunRecord::encode`]'s form.
    pub fn decode(d: &mut Dec<'_>) -> Result<Self, CheckpointError> {
        // A text's length is checked against the bytes left before anything is allocated
        // (a value may be long: an explicit list of 100,000 values of C).
        fn text(d: &mut Dec<'_>) -> Result<String, CheckpointError> {
            let b = d.u8s()?;
            String::from_utf8(b).map_err(|_| d.invalid("run record", "text not UTF-8"))
        }
        // A setting takes at least two lengths, a data set a length and three numbers.
        let n = d.len(16)?;
        let mut settings = Vec::with_capacity(n);
        for _ in 0..n {
            let name = text(d)?;
            settings.push((name, text(d)?));
        }
        let n = d.len(32)?;
        let mut data = Vec::with_capacity(n);
        for _ in 0..n {
            let role = text(d)?;
            data.push((
                role,
                DataShape {
                    rows: d.u64()?,
                    features: d.u64()?,
                    hash: d.u64()?,
                },
            ));
        }
        Ok(Self { settings, data })
    }

    /// The first difference from `now`, as the error a resume reports: a setting (in `now`'s
    /// order; one set on only one side shows as `(not set)`), then a data set.
    pub fn compare(&self, now: &RunRecord, file: &'static str) -> Result<(), CheckpointError> {
        const UNSET: &str = "(not set)";
        let find = |list: &[(String, String)], name: &str| {
            list.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone())
        };
        let names = now
            .settings
            .iter()
            .map(|(n, _)| n)
            .chain(self.settings.iter().map(|(n, _)| n));
        for name in names {
            let stored = find(&self.settings, name);
            let current = find(&now.settings, name);
            if stored != current {
                return Err(CheckpointError::Setting {
                    file,
                    name: name.clone(),
                    stored: stored.unwrap_or_else(|| UNSET.into()),
                    now: current.unwrap_or_else(|| UNSET.into()),
                });
            }
        }
        let find = |list: &[(String, DataShape)], role: &str| {
            list.iter().find(|(r, _)| r == role).map(|(_, s)| s.clone())
        };
        let roles = now
            .data
            .iter()
            .map(|(r, _)| r)
            .chain(self.data.iter().map(|(r, _)| r));
        for role in roles {
            let stored = find(&self.data, role);
            let current = find(&now.data, role);
            if stored != current {
                return Err(CheckpointError::Data {
                    file,
                    role: role.clone(),
                    stored,
                    now: current,
                });
            }
        }
        Ok(())
    }
}

/// Checks that a state file of kind `file` can be continued by this run: the stored record (a
/// file of an older version has none) against `now`, naming the first difference; then the
/// fingerprints, which also cover what a record does not name.
///
/// # Errors
/// [`CheckpointError::Setting`] or [`CheckpointError::Data`] naming the difference;
/// [`CheckpointError::Fingerprint`] when the records agree (or the file has none) but the
/// fingerprints do not.
pub(crate) fn check_resume(
    file: &'static str,
    stored: (u64, Option<&RunRecord>),
    now: (u64, &RunRecord),
) -> Result<(), CheckpointError> {
    if let Some(r) = stored.1 {
        r.compare(now.1, file)?;
    }
    if stored.0 != now.0 {
        return Err(CheckpointError::Fingerprint {
            file,
            expected: now.0,
            found: stored.0,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::seal;
    use super::*;

    fn rec(c: f64) -> RunRecord {
        let mut r = RunRecord::new();
        r.set("-c", c)
            .kernel(&KernelSpec::Rbf { gamma: 0.5 })
            .set("--seed", 0);
        r.data.push((
            "training data".into(),
            DataShape {
                rows: 270,
                features: 13,
                hash: 0x9f2c,
            },
        ));
        r
    }

    #[test]
    fn round_trip() {
        let mut r = rec(1.0);
        // A long value (an explicit list of 100,000 values of C) and text that is not ASCII.
        let cs: Vec<String> = (0..100_000)
            .map(|i| (0.001 + i as f64 * 1e-7).to_string())
            .collect();
        r.set("--c-list", cs.join(",")).set("rôle", "µ");
        let mut e = Enc::new("MKTEST01");
        r.encode(&mut e);
        let b = seal(e.finish());
        let mut d = super::super::open(&b, "MKTEST01", "test state file").unwrap();
        assert_eq!(RunRecord::decode(&mut d).unwrap(), r);
        d.finish().unwrap();
        // Text that is not UTF-8 is refused.
        let mut e = Enc::new("MKTEST01");
        e.usize(1);
        e.u8s(&[0xff, 0xfe]);
        e.u8s(b"1");
        e.usize(0);
        let b = seal(e.finish());
        let mut d = super::super::open(&b, "MKTEST01", "test state file").unwrap();
        assert!(matches!(
            RunRecord::decode(&mut d),
            Err(CheckpointError::Invalid { .. })
        ));
    }

    #[test]
    fn a_changed_setting_is_named() {
        let e = rec(1.0).compare(&rec(10.0), "fit checkpoint").unwrap_err();
        assert_eq!(
            e,
            CheckpointError::Setting {
                file: "fit checkpoint",
                name: "-c".into(),
                stored: "1".into(),
                now: "10".into(),
            }
        );
        assert_eq!(
            e.to_string(),
            "the fit checkpoint was written with -c 1 (now -c 10)"
        );
        let mut other = rec(1.0);
        other.settings[2].1 = "0.25".into();
        let e = rec(1.0).compare(&other, "fit checkpoint").unwrap_err();
        assert!(e.to_string().contains("-g 0.5 (now -g 0.25)"), "{e}");
        // A setting on one side only.
        let mut lin = RunRecord::new();
        lin.set("-c", 1)
            .kernel(&KernelSpec::Linear)
            .set("--seed", 0);
        lin.data = rec(1.0).data;
        let e = rec(1.0).compare(&lin, "fit checkpoint").unwrap_err();
        assert!(e.to_string().contains("-t 2 (now -t 0)"), "{e}");
        lin.settings[1].1 = "2".into();
        let e = rec(1.0).compare(&lin, "fit checkpoint").unwrap_err();
        assert!(e.to_string().contains("-g 0.5 (now -g (not set))"), "{e}");
    }

    #[test]
    fn changed_data_is_named() {
        let mut other = rec(1.0);
        other.data[0].1.rows = 271;
        let e = rec(1.0).compare(&other, "fit checkpoint").unwrap_err();
        assert_eq!(
            e.to_string(),
            "the fit checkpoint was written for training data with 270 rows, 13 features and \
             fingerprint 0000000000009f2c (now 271 rows, 13 features and fingerprint \
             0000000000009f2c)"
        );
        let mut valid = rec(1.0);
        valid
            .data
            .push(("validation data".into(), other.data[0].1.clone()));
        let e = rec(1.0).compare(&valid, "path checkpoint").unwrap_err();
        assert!(
            e.to_string()
                .ends_with("written without validation data (now validation data with 271 rows, 13 features and fingerprint 0000000000009f2c)"),
            "{e}"
        );
    }

    #[test]
    fn fingerprint_is_the_final_check() {
        let r = rec(1.0);
        assert!(check_resume("f", (7, Some(&r)), (7, &r)).is_ok());
        assert!(matches!(
            check_resume("f", (7, Some(&r)), (8, &r)),
            Err(CheckpointError::Fingerprint { .. })
        ));
        assert!(matches!(
            check_resume("f", (7, None), (8, &r)),
            Err(CheckpointError::Fingerprint { .. })
        ));
        assert!(matches!(
            check_resume("f", (7, Some(&r)), (7, &rec(2.0))),
            Err(CheckpointError::Setting { .. })
        ));
    }
}
