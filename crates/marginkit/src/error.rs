//! Error types, one enum per concern, with structured fields.

use thiserror::Error;

pub use crate::persist::CheckpointError;

/// Inconsistent or invalid in-memory data.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum DataError {
    /// An array has the wrong length.
    #[error("{what}: expected {expected} entries, found {found}")]
    Shape {
        /// Which array.
        what: &'static str,
        /// Expected length.
        expected: usize,
        /// Actual length.
        found: usize,
    },
    /// The shards of a data set split across processes disagree, or another shard's data is
    /// invalid (that shard reports the reason).
    #[error("data split across processes: {reason}")]
    Shards {
        /// What went wrong.
        reason: &'static str,
    },
    /// A CSR matrix is malformed.
    #[error("malformed sparse matrix: {reason}")]
    BadCsr {
        /// What is wrong.
        reason: &'static str,
    },
    /// NaN or infinity in labels or features.
    #[error("non-finite {what} in row {row} (0-based)")]
    NonFinite {
        /// "label" or "feature".
        what: &'static str,
        /// 0-based row.
        row: usize,
    },
    /// A negative or non-finite sample weight.
    #[error("sample weight {value} in row {row} (0-based) must be finite and >= 0")]
    BadWeight {
        /// 0-based row.
        row: usize,
        /// The weight.
        value: f64,
    },
    /// Every sample weight is zero: no sample can enter the fit.
    #[error("all {n} sample weights are zero: there is nothing to train on")]
    AllWeightsZero {
        /// Number of samples.
        n: usize,
    },
    /// The data set has no samples.
    #[error("the data set is empty")]
    Empty,
    /// Cross-validation (also the one behind probability models) needs a row to train on
    /// beside every held-out fold.
    #[error("cross-validation needs at least 2 rows; the data has {n}")]
    TooFewRowsForFolds {
        /// Number of rows.
        n: usize,
    },
    /// Classification needs at least two classes.
    #[error("the training data has a single class ({label}); at least two are needed")]
    SingleClass {
        /// The only label.
        label: f64,
    },
    /// Too many classes.
    #[error("{found} classes exceed the limit of {limit}")]
    TooManyClasses {
        /// Number of classes found.
        found: usize,
        /// The limit.
        limit: usize,
    },
    /// The test data has more features than the model knows.
    #[error("the data has {found} features but the model was trained on {expected}")]
    FeatureMismatch {
        /// Features the model knows.
        expected: usize,
        /// Features in the data.
        found: usize,
    },
    /// A precomputed-kernel row is malformed.
    #[error("precomputed kernel: {reason} (row {row}, 0-based)")]
    Precomputed {
        /// 0-based row.
        row: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// nu is infeasible for this data (LIBSVM's nu-SVC check).
    #[error("specified nu is infeasible")]
    InfeasibleNu,
    /// A dense array sized by the data does not fit in the available memory (checked before it
    /// is allocated, by [`crate::data::memory::dense_bytes_check`]).
    #[error("{}", dense_too_large_message(what, *rows, *cols, *bytes, *available, *widest))]
    DenseTooLarge {
        /// What the array is for.
        what: &'static str,
        /// Rows of the array.
        rows: usize,
        /// Columns of the array.
        cols: usize,
        /// Bytes it needs (`u64::MAX` when that overflows).
        bytes: u64,
        /// Bytes available to it.
        available: u64,
        /// The feature index (1-based) that sets the width and the first sample (1-based) that
        /// has it, when the width comes from the data.
        widest: Option<(usize, usize)>,
    },
    /// The bias feature value `B` dwarfs every sample: `x_i'x_j + B^2` rounds to `B^2`.
    #[error("bias feature B = {bias:e} is beyond {limit:.6e} = 2^26 x the largest sample norm ({max_norm:.6e}): every inner product x_i'x_j + B^2 then rounds to B^2 in double precision, the features vanish from the problem and w comes out 0; use a B near the features' scale (LIBLINEAR's usual -B 1)")]
    BiasSwampsFeatures {
        /// The bias feature value.
        bias: f64,
        /// Largest Euclidean norm of a sample.
        max_norm: f64,
        /// The largest accepted `B` for this data.
        limit: f64,
    },
    /// A linear model would have one weight per feature index up to an index that almost no
    /// data backs: its LIBLINEAR file (one line per feature) would be absurdly large.
    #[error("feature index {n_features}{} makes the linear model {n_features} weights wide per class ({n_classes} weight column(s), one line per feature index in LIBLINEAR's model format) while the data stores only {nnz} values; renumber the features densely (drop unused indices)", widest_sample.map(|s| format!(" in sample {s}")).unwrap_or_default())]
    TooWideForLinearModel {
        /// Feature count of the model (the largest index).
        n_features: usize,
        /// The first sample (1-based) with that index, when known.
        widest_sample: Option<usize>,
        /// Weight columns (1 for two classes or regression, else the number of classes).
        n_classes: usize,
        /// Stored values in the training data.
        nnz: usize,
    },
}

/// A syntax or limit error in a text file, with its position.
#[derive(Debug, Error, Clone, PartialEq)]
#[error("line {line}, column {column}: {kind}")]
pub struct ParseError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column (character position in the line) where the problem starts.
    pub column: usize,
    /// What went wrong.
    pub kind: ParseErrorKind,
}

/// What went wrong while parsing.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// A token could not be read as the expected thing.
    #[error("expected {expected}, found {found:?}")]
    Expected {
        /// What was expected.
        expected: &'static str,
        /// What was found (truncated).
        found: String,
    },
    /// Feature indices must be >= 1 (>= 0 for precomputed kernels).
    #[error("feature index {index} is out of range (indices start at {min})")]
    IndexTooSmall {
        /// The index.
        index: u64,
        /// The smallest allowed.
        min: u64,
    },
    /// Feature indices must increase along a line.
    #[error("feature index {index} does not increase (previous {previous})")]
    NonIncreasingIndex {
        /// The index.
        index: u64,
        /// The index before it.
        previous: u64,
    },
    /// NaN or infinity.
    #[error("{what} is not a finite number")]
    NonFinite {
        /// "label", "value", ...
        what: &'static str,
    },
    /// A named limit was exceeded.
    #[error("{what} exceeds the limit of {limit}")]
    Limit {
        /// Which limit.
        what: &'static str,
        /// The limit.
        limit: u64,
    },
    /// The input has no data lines.
    #[error("no data")]
    Empty,
    /// A line has a different number of fields than the header.
    #[error("expected {expected} fields, found {found}")]
    FieldCount {
        /// Expected fields.
        expected: usize,
        /// Fields found.
        found: usize,
    },
    /// A model-file keyword or value is wrong.
    #[error("{0}")]
    Model(String),
    /// The input is not UTF-8 text.
    #[error("invalid UTF-8")]
    Utf8,
}

/// An invalid parameter.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum ParamError {
    /// Must be finite and > 0.
    #[error("{name} must be finite and > 0, got {value}")]
    NotPositive {
        /// Parameter name.
        name: &'static str,
        /// The value.
        value: f64,
    },
    /// Must be finite and >= 0.
    #[error("{name} must be finite and >= 0, got {value}")]
    Negative {
        /// Parameter name.
        name: &'static str,
        /// The value.
        value: f64,
    },
    /// Outside its range.
    #[error("{name} = {value} is outside {range}")]
    OutOfRange {
        /// Parameter name.
        name: &'static str,
        /// The value.
        value: f64,
        /// The allowed range, as text.
        range: &'static str,
    },
    /// A combination that does not make sense.
    #[error("{0}")]
    Incompatible(&'static str),
    /// A bias feature value `B` whose square overflows the solvers' arithmetic.
    #[error("bias feature B = {value:e} is above {limit:e}: B^2 enters every inner product x_i'x_j + B^2 and must stay finite")]
    BiasTooLarge {
        /// The value.
        value: f64,
        /// The largest accepted value.
        limit: f64,
    },
}

/// Numerical breakdown inside a solver (not non-convergence, which is a status).
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum SolveError {
    /// NaN or infinity appeared in the gradient or objective.
    #[error("numerical breakdown: non-finite {what}")]
    NonFinite {
        /// Where.
        what: &'static str,
    },
    /// The problem is infeasible (e.g. equality constraint unreachable within the bounds).
    #[error("infeasible problem: {0}")]
    Infeasible(&'static str),
    /// Inconsistent problem dimensions.
    #[error("problem arrays disagree: {0}")]
    Dimensions(&'static str),
    /// A solver snapshot to continue from is damaged or belongs to another problem.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
}

/// Anything that can go wrong in `fit`.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum FitError {
    /// Invalid parameters.
    #[error(transparent)]
    Param(#[from] ParamError),
    /// Invalid data.
    #[error(transparent)]
    Data(#[from] DataError),
    /// Solver breakdown.
    #[error(transparent)]
    Solve(#[from] SolveError),
    /// A state file to continue from is damaged or belongs to another run.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
}

/// Reading or writing a data or model file.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum IoError {
    /// The OS failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// Syntax or limit error.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// Data consistency.
    #[error(transparent)]
    Data(#[from] DataError),
}

pub(crate) fn positive(name: &'static str, v: f64) -> Result<f64, ParamError> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(ParamError::NotPositive { name, value: v })
    }
}

pub(crate) fn non_negative(name: &'static str, v: f64) -> Result<f64, ParamError> {
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(ParamError::Negative { name, value: v })
    }
}

/// Bytes in a short human unit (GB, MB, kB, bytes) for error messages.
pub(crate) fn human_bytes(b: u64) -> String {
    let b = b as f64;
    if b >= 1e9 {
        format!("{:.3} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.1} kB", b / 1e3)
    } else {
        format!("{b} bytes")
    }
}

/// The message of [`DataError::DenseTooLarge`].
pub(crate) fn dense_too_large_message(
    what: &str,
    rows: usize,
    cols: usize,
    bytes: u64,
    available: u64,
    widest: Option<(usize, usize)>,
) -> String {
    let need = if bytes == u64::MAX {
        "more bytes than memory can address".to_string()
    } else {
        human_bytes(bytes)
    };
    let cause = match widest {
        Some((k, s)) => {
            format!("feature index {k} in sample {s} makes the data {cols} columns wide: ")
        }
        None => String::new(),
    };
    let hint = if widest.is_some() {
        "; renumber the features densely (drop unused indices) or use a method that works on sparse rows (train, robust)"
    } else {
        "; use less data or free memory"
    };
    format!(
        "{cause}{what} would need a dense {rows} x {cols} array of f64 ({need}), more than the {} of memory available{hint}",
        human_bytes(available)
    )
}
