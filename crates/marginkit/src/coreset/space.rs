//! Points with global ids, and the problem kernels `K~` of the MEB mappings.
//!
//! Every point is a dense row (sparse input is scattered into dense rows once), so that a point
//! received in a message and the same point held by its owner give bit-identical kernel values.

use super::CoresetError;
use crate::data::{ops, Dataset, Features};
use crate::error::{DataError, ParamError};
use crate::kernel::KernelSpec;

/// Points with global ids and labels, stored as dense rows of equal width.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PointSet {
    d: usize,
    ids: Vec<u64>,
    labels: Vec<f64>,
    rows: Vec<f64>,
    sqn: Vec<f64>,
}

/// A borrowed point.
#[derive(Debug, Clone, Copy)]
pub struct PointRef<'a> {
    /// Global id (0-based row of the full data set).
    pub id: u64,
    /// Label `+1/-1` for the SVM mapping, `1` otherwise.
    pub label: f64,
    /// Dense row.
    pub row: &'a [f64],
    /// `row'row`.
    pub sqn: f64,
}

impl PointSet {
    /// An empty set of rows of width `d`.
    pub fn new(d: usize) -> Self {
        Self {
            d,
            ..Self::default()
        }
    }
    /// Rows `idx` of `data` (ids = row numbers). `positive` is the label mapped to `+1`
    /// (others to `-1`); `None` gives every point label `1`.
    pub fn from_dataset(data: &Dataset, idx: &[usize], positive: Option<f64>) -> Self {
        Self::from_dataset_with_ids(data, idx, positive, 0, data.n_features())
    }
    /// As [`PointSet::from_dataset`] with ids `id_offset + row` and rows of width `d` (wider
    /// than the data: zero-padded; narrower: truncated), for shards read from separate files.
    pub fn from_dataset_with_ids(
        data: &Dataset,
        idx: &[usize],
        positive: Option<f64>,
        id_offset: u64,
        d: usize,
    ) -> Self {
        let mut s = Self::new(d);
        let mut buf = vec![0.0; d];
        for &i in idx {
            let label = match positive {
                Some(p) if data.y[i] == p => 1.0,
                Some(_) => -1.0,
                None => 1.0,
            };
            let id = id_offset + i as u64;
            match &data.x {
                Features::Dense(m) => s.push(id, label, m.row(i)),
                Features::Sparse(_) => {
                    buf.iter_mut().for_each(|v| *v = 0.0);
                    for (k, v) in data.x.row(i).iter() {
                        if k < d {
                            buf[k] = v;
                        }
                    }
                    s.push(id, label, &buf);
                }
            }
        }
        s
    }
    /// Appends a point (`row.len()` must equal the width; shorter rows are zero-padded).
    pub fn push(&mut self, id: u64, label: f64, row: &[f64]) {
        let start = self.rows.len();
        self.rows.extend_from_slice(&row[..row.len().min(self.d)]);
        self.rows.resize(start + self.d, 0.0);
        let r = &self.rows[start..];
        self.sqn.push(ops::dense_dot(r, r));
        self.ids.push(id);
        self.labels.push(label);
    }
    /// Appends point `i` of `other`.
    pub fn push_from(&mut self, other: &PointSet, i: usize) {
        self.push(other.ids[i], other.labels[i], other.row(i));
    }
    /// Number of points.
    pub fn len(&self) -> usize {
        self.ids.len()
    }
    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
    /// Row width.
    pub fn dim(&self) -> usize {
        self.d
    }
    /// Global id of point `i`.
    pub fn id(&self, i: usize) -> u64 {
        self.ids[i]
    }
    /// All ids.
    pub fn ids(&self) -> &[u64] {
        &self.ids
    }
    /// Label of point `i`.
    pub fn label(&self, i: usize) -> f64 {
        self.labels[i]
    }
    /// Row of point `i`.
    pub fn row(&self, i: usize) -> &[f64] {
        &self.rows[i * self.d..(i + 1) * self.d]
    }
    /// Point `i`.
    pub fn get(&self, i: usize) -> PointRef<'_> {
        PointRef {
            id: self.ids[i],
            label: self.labels[i],
            row: self.row(i),
            sqn: self.sqn[i],
        }
    }
}

/// The problem mapped onto the MEB dual (paper Section III).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Problem {
    /// Minimum enclosing ball of the rows themselves (eq. 1): linear geometry.
    Meb,
    /// Hard-margin SVDD (eq. 8): the MEB in the kernel's feature space.
    Svdd,
    /// 2-norm soft-margin SVM (eq. 6), CVM-style augmented kernel.
    L2Svm {
        /// Penalty `C > 0`.
        c: f64,
    },
    /// One-class L2-SVM (eq. 6 with `b = 0`, all labels 1).
    OneClassL2 {
        /// Penalty `C > 0`.
        c: f64,
    },
}

/// The kernel `K~` of a [`Problem`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FeatureKernel {
    /// The problem.
    pub problem: Problem,
    /// The base kernel `K` (linear for [`Problem::Meb`]).
    pub kernel: KernelSpec,
    /// Ridge added to `K~(a, a)` for MEB and SVDD (see the module docs).
    pub ridge: f64,
    inv_c: f64,
}

impl FeatureKernel {
    /// The kernel of `problem` over base kernel `kernel` (ignored for MEB), ridge 1e-12.
    ///
    /// # Errors
    /// [`ParamError`] for a bad `C`, kernel parameter or a precomputed kernel.
    pub fn new(problem: Problem, kernel: KernelSpec) -> Result<Self, ParamError> {
        let kernel = match problem {
            Problem::Meb => KernelSpec::Linear,
            _ => kernel,
        };
        kernel.check()?;
        if kernel == KernelSpec::Precomputed {
            return Err(ParamError::Incompatible(
                "core-sets need kernel values between any two points: a precomputed kernel cannot be used",
            ));
        }
        let inv_c = match problem {
            Problem::L2Svm { c } | Problem::OneClassL2 { c } => {
                1.0 / crate::error::positive("C", c)?
            }
            _ => 0.0,
        };
        Ok(Self {
            problem,
            kernel,
            ridge: 1e-12,
            inv_c,
        })
    }

    /// The kernel of already checked parameters ([`super::CoresetParams::check`]).
    pub(crate) fn checked(problem: Problem, kernel: KernelSpec) -> Self {
        let kernel = match problem {
            Problem::Meb => KernelSpec::Linear,
            _ => kernel,
        };
        let inv_c = match problem {
            Problem::L2Svm { c } | Problem::OneClassL2 { c } => 1.0 / c,
            _ => 0.0,
        };
        Self {
            problem,
            kernel,
            ridge: 1e-12,
            inv_c,
        }
    }

    /// The base kernel `K(a, b)`.
    #[inline]
    pub fn base(&self, a: PointRef<'_>, b: PointRef<'_>) -> f64 {
        let dot = ops::dense_dot(a.row, b.row);
        self.kernel.from_dot(dot, a.sqn, b.sqn)
    }

    /// `K~(a, b)`.
    #[inline]
    pub fn eval(&self, a: PointRef<'_>, b: PointRef<'_>) -> f64 {
        let same = a.id == b.id;
        let k = self.base(a, b);
        match self.problem {
            Problem::Meb | Problem::Svdd => k + if same { self.ridge } else { 0.0 },
            Problem::L2Svm { .. } => {
                a.label * b.label * (k + 1.0) + if same { self.inv_c } else { 0.0 }
            }
            Problem::OneClassL2 { .. } => k + if same { self.inv_c } else { 0.0 },
        }
    }

    /// Checks that the mapping can be used with these points: finite values, and for SVDD and
    /// the SVMs a constant base-kernel diagonal (relative tolerance 1e-9).
    ///
    /// # Errors
    /// [`CoresetError::NonConstantDiagonal`], [`DataError::Empty`].
    pub fn check_points(&self, pts: &PointSet) -> Result<(), CoresetError> {
        if pts.is_empty() {
            return Err(DataError::Empty.into());
        }
        if self.problem == Problem::Meb {
            return Ok(());
        }
        let k0 = self.base(pts.get(0), pts.get(0));
        for i in 1..pts.len() {
            let ki = self.base(pts.get(i), pts.get(i));
            if (ki - k0).abs() > 1e-9 * k0.abs().max(1.0) {
                return Err(CoresetError::NonConstantDiagonal {
                    row: pts.id(i) as usize,
                    value: ki,
                    expected: k0,
                });
            }
        }
        Ok(())
    }
}

/// The points of `data` for `problem` (SVM: two classes, the first in LIBSVM order is `+1`) and
/// the class labels (`[1, -1]` when there are none).
///
/// # Errors
/// [`CoresetError::Data`] for an SVM data set without exactly two classes.
pub fn points_for(data: &Dataset, problem: Problem) -> Result<(PointSet, [f64; 2]), CoresetError> {
    let all: Vec<usize> = (0..data.len()).collect();
    data.x.check_dense_rows("the dense points", data.len())?;
    match problem {
        Problem::L2Svm { .. } => {
            let labels = two_classes(data)?;
            Ok((PointSet::from_dataset(data, &all, Some(labels[0])), labels))
        }
        _ => Ok((PointSet::from_dataset(data, &all, None), [1.0, -1.0])),
    }
}

/// Checks that an SVM data set has exactly two classes and returns them in LIBSVM's order (first
/// appearance); the first is mapped to `+1`.
///
/// # Errors
/// [`DataError::SingleClass`], [`DataError::TooManyClasses`].
pub fn two_classes(data: &Dataset) -> Result<[f64; 2], CoresetError> {
    let labels = data.labels_in_order();
    match labels.len() {
        0 => Err(DataError::Empty.into()),
        1 => Err(DataError::SingleClass { label: labels[0] }.into()),
        2 => Ok([labels[0], labels[1]]),
        n => Err(DataError::TooManyClasses { found: n, limit: 2 }.into()),
    }
}

pub(crate) fn param(name: &'static str, value: f64, range: &'static str) -> CoresetError {
    CoresetError::Param(ParamError::OutOfRange { name, value, range })
}
