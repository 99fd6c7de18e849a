//! Feature (and optional label) scaling compatible with LIBSVM's `svm-scale`.
//!
//! [`ScaleParams::fit`] records, per feature column, the minimum and maximum over all rows, where
//! a sparse row's missing entry counts as 0 (as svm-scale does). [`ScaleParams::apply`] maps a
//! value `v` of a column with range `[min, max]` to
//! `lower` if `v == min`, `upper` if `v == max`, else `lower + (upper - lower) * (v - min) / (max - min)`,
//! and likewise the labels when y scaling is on. Columns whose `min == max` are left out: their
//! scaled value is 0 (svm-scale writes nothing for them). Scaled zeros are not stored in sparse
//! output, as svm-scale writes a feature only when its scaled value is non-zero.
//!
//! Parameter files use svm-scale's text format (`-s` / `-r`):
//! ```text
//! y                  <- optional y section
//! y_lower y_upper
//! y_min y_max
//! x
//! lower upper
//! index min max      <- one line per feature with min != max, 1-based index, increasing
//! ```
//! [`ScaleParams::write`] prints numbers as svm-scale does (`%.16g`), byte for byte;
//! [`ScaleParams::write_exact`] prints shortest round-trip numbers instead (same layout).
//!
//! Differences from svm-scale, on purpose:
//! - A column with no entry in restored parameters is left out (scaled to 0). svm-scale instead
//!   takes that column's range from the data being scaled, so the test set would be scaled
//!   differently from the training set.
//! - Scaled values keep full `f64` precision; svm-scale prints its output with `%g` (6 digits).
//!   Use [`crate::data::libsvm_fmt::FloatFormat::Significant`]`(6)` when writing for identical text.
//! - The parameter reader is strict: one item per line as laid out above (blank lines allowed),
//!   `lower < upper`, `y_lower < y_upper`, `min <= max`, `y_min <= y_max`, increasing indices,
//!   finite numbers, and limits on line length and index.

use std::io::{BufRead, Write};

use crate::data::libsvm_fmt::{
    char_column, fmt_float, parse_f64, snippet, FloatFormat, LineReader, DEFAULT_MAX_FEATURE_INDEX,
    HARD_MAX_FEATURE_INDEX,
};
use crate::data::{CsrMatrix, Dataset, DenseMatrix, Features, Row};
use crate::error::{DataError, FitError, IoError, ParamError, ParseError, ParseErrorKind};

/// Default longest line of a parameter file, in bytes (64 KiB; real lines are under 100 bytes).
pub const DEFAULT_PARAMS_MAX_LINE_LEN: usize = 1 << 16;

/// The range of one feature column.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FeatureRange {
    /// 0-based column (LIBSVM index minus one).
    pub column: usize,
    /// Smallest value seen (missing sparse entries count as 0).
    pub min: f64,
    /// Largest value seen.
    pub max: f64,
}

/// Label scaling: labels in `[min, max]` map to `[lower, upper]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct YScale {
    /// Target lower bound (svm-scale `-y lower upper`).
    pub lower: f64,
    /// Target upper bound.
    pub upper: f64,
    /// Smallest label seen.
    pub min: f64,
    /// Largest label seen.
    pub max: f64,
}

/// Scaling parameters: target interval and the ranges of the scaled columns.
#[derive(Debug, Clone, PartialEq)]
pub struct ScaleParams {
    lower: f64,
    upper: f64,
    y: Option<YScale>,
    /// Columns with `min != max`, increasing.
    ranges: Vec<FeatureRange>,
}

/// Limits of the parameter-file reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScaleReadOptions {
    /// Longest line in bytes (default [`DEFAULT_PARAMS_MAX_LINE_LEN`]).
    pub max_line_len: usize,
    /// Largest feature index (default [`DEFAULT_MAX_FEATURE_INDEX`]).
    pub max_feature_index: u64,
}

impl Default for ScaleReadOptions {
    fn default() -> Self {
        Self {
            max_line_len: DEFAULT_PARAMS_MAX_LINE_LEN,
            max_feature_index: DEFAULT_MAX_FEATURE_INDEX,
        }
    }
}

fn check_interval(
    lname: &'static str,
    uname: &'static str,
    lower: f64,
    upper: f64,
) -> Result<(), ParamError> {
    if !lower.is_finite() {
        return Err(ParamError::OutOfRange {
            name: lname,
            value: lower,
            range: "finite numbers",
        });
    }
    if !(upper.is_finite() && upper > lower) {
        return Err(ParamError::OutOfRange {
            name: uname,
            value: upper,
            range: "finite numbers above the lower limit",
        });
    }
    Ok(())
}

/// Maps `v` from `[min, max]` to `[lo, hi]` exactly as svm-scale does (end points exact).
#[inline]
fn map(v: f64, min: f64, max: f64, lo: f64, hi: f64) -> f64 {
    if v == min {
        lo
    } else if v == max {
        hi
    } else {
        lo + (hi - lo) * (v - min) / (max - min)
    }
}

impl ScaleParams {
    /// Fits scaling parameters: features to `[lower, upper]` (svm-scale `-l -u`, defaults -1 and
    /// 1), labels to `y_range` when given (svm-scale `-y`).
    ///
    /// # Errors
    /// [`FitError::Param`] when a limit is not finite or `upper <= lower` (either pair);
    /// [`FitError::Data`] ([`DataError::Empty`]) for a data set without rows.
    pub fn fit(
        ds: &Dataset,
        lower: f64,
        upper: f64,
        y_range: Option<(f64, f64)>,
    ) -> Result<ScaleParams, FitError> {
        check_interval("lower", "upper", lower, upper)?;
        if let Some((yl, yu)) = y_range {
            check_interval("y_lower", "y_upper", yl, yu)?;
        }
        if ds.is_empty() {
            return Err(DataError::Empty.into());
        }
        let n = ds.len();
        let d = ds.n_features();
        // Per feature: minimum, maximum and stored-value count.
        ds.x.check_dense_rows("the per-feature ranges", 3)?;
        let mut mins = vec![f64::INFINITY; d];
        let mut maxs = vec![f64::NEG_INFINITY; d];
        let mut stored = vec![0usize; d];
        for i in 0..n {
            match ds.x.row(i) {
                Row::Dense(v) => {
                    for (k, &x) in v.iter().enumerate() {
                        mins[k] = mins[k].min(x);
                        maxs[k] = maxs[k].max(x);
                    }
                }
                Row::Sparse { indices, values } => {
                    for (&k, &x) in indices.iter().zip(values) {
                        let k = k as usize;
                        mins[k] = mins[k].min(x);
                        maxs[k] = maxs[k].max(x);
                        stored[k] += 1;
                    }
                }
            }
        }
        let sparse = matches!(ds.x, Features::Sparse(_));
        let mut ranges = Vec::new();
        for k in 0..d {
            let (mut lo, mut hi) = (mins[k], maxs[k]);
            if sparse && stored[k] < n {
                lo = lo.min(0.0);
                hi = hi.max(0.0);
            }
            if lo != hi {
                ranges.push(FeatureRange {
                    column: k,
                    min: lo,
                    max: hi,
                });
            }
        }
        let y = y_range.map(|(yl, yu)| YScale {
            lower: yl,
            upper: yu,
            min: ds.y.iter().copied().fold(f64::INFINITY, f64::min),
            max: ds.y.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        });
        Ok(ScaleParams {
            lower,
            upper,
            y,
            ranges,
        })
    }

    /// Target lower limit for features.
    pub fn lower(&self) -> f64 {
        self.lower
    }
    /// Target upper limit for features.
    pub fn upper(&self) -> f64 {
        self.upper
    }
    /// Label scaling, if any.
    pub fn y_scale(&self) -> Option<&YScale> {
        self.y.as_ref()
    }
    /// Ranges of the scaled columns (those with `min != max`), by increasing column.
    pub fn ranges(&self) -> &[FeatureRange] {
        &self.ranges
    }

    /// Scales a data set. The result has the same storage kind (dense or CSR) and weights, and
    /// `max(ds.n_features(), last scaled column + 1)` columns; columns without a range become 0.
    ///
    /// # Errors
    /// [`DataError::NonFinite`] when a scaled value or label overflows (a value far outside the
    /// fitted range, or y scaling with `y_min == y_max` applied to a different label).
    pub fn apply(&self, ds: &Dataset) -> Result<Dataset, DataError> {
        let n = ds.len();
        let d = ds
            .n_features()
            .max(self.ranges.last().map_or(0, |r| r.column + 1));
        let (lo, hi) = (self.lower, self.upper);
        let x = match &ds.x {
            Features::Dense(m) => {
                let mut v = vec![0.0; n * d];
                for i in 0..n {
                    let src = m.row(i);
                    let dst = &mut v[i * d..(i + 1) * d];
                    for r in &self.ranges {
                        let x = src.get(r.column).copied().unwrap_or(0.0);
                        let s = map(x, r.min, r.max, lo, hi);
                        if !s.is_finite() {
                            return Err(DataError::NonFinite {
                                what: "feature",
                                row: i,
                            });
                        }
                        dst[r.column] = s;
                    }
                }
                Features::Dense(DenseMatrix::new(n, d, v)?)
            }
            Features::Sparse(m) => {
                // The scaled value of a missing (zero) entry, per range; computed once.
                let zero_to: Vec<f64> = self
                    .ranges
                    .iter()
                    .map(|r| map(0.0, r.min, r.max, lo, hi))
                    .collect();
                let mut indptr = Vec::with_capacity(n + 1);
                indptr.push(0);
                let mut indices = Vec::with_capacity(m.nnz());
                let mut values = Vec::with_capacity(m.nnz());
                for i in 0..n {
                    let (idx, val) = m.row(i);
                    let mut p = 0;
                    for (r, &z) in self.ranges.iter().zip(&zero_to) {
                        // Merge walk: skip stored columns without a range.
                        while p < idx.len() && (idx[p] as usize) < r.column {
                            p += 1;
                        }
                        let s = if p < idx.len() && idx[p] as usize == r.column {
                            map(val[p], r.min, r.max, lo, hi)
                        } else {
                            z
                        };
                        if !s.is_finite() {
                            return Err(DataError::NonFinite {
                                what: "feature",
                                row: i,
                            });
                        }
                        if s != 0.0 {
                            indices.push(r.column as u32);
                            values.push(s);
                        }
                    }
                    indptr.push(indices.len());
                }
                Features::Sparse(CsrMatrix::new(d, indptr, indices, values)?)
            }
        };
        let y = match &self.y {
            None => ds.y.clone(),
            Some(ys) => {
                let mut out = Vec::with_capacity(n);
                for (i, &v) in ds.y.iter().enumerate() {
                    let s = map(v, ys.min, ys.max, ys.lower, ys.upper);
                    if !s.is_finite() {
                        return Err(DataError::NonFinite {
                            what: "label",
                            row: i,
                        });
                    }
                    out.push(s);
                }
                out
            }
        };
        Dataset::new(x, y, ds.weights.clone())
    }

    /// Writes the parameters in svm-scale's format with its `%.16g` numbers (byte-identical to
    /// `svm-scale -s` for the same ranges).
    ///
    /// # Errors
    /// [`IoError::Io`] when writing fails.
    pub fn write<W: Write>(&self, w: W) -> Result<(), IoError> {
        self.write_fmt_with(w, FloatFormat::Significant(16))
    }

    /// Writes the parameters in svm-scale's layout with shortest round-trip numbers, so that
    /// [`ScaleParams::read`] gives back exactly these parameters.
    ///
    /// # Errors
    /// [`IoError::Io`] when writing fails.
    pub fn write_exact<W: Write>(&self, w: W) -> Result<(), IoError> {
        self.write_fmt_with(w, FloatFormat::Shortest)
    }

    fn write_fmt_with<W: Write>(&self, mut w: W, f: FloatFormat) -> Result<(), IoError> {
        let mut s = String::new();
        let pair = |s: &mut String, a: f64, b: f64| {
            fmt_float(s, a, f);
            s.push(' ');
            fmt_float(s, b, f);
            s.push('\n');
        };
        if let Some(y) = &self.y {
            s.push_str("y\n");
            pair(&mut s, y.lower, y.upper);
            pair(&mut s, y.min, y.max);
        }
        s.push_str("x\n");
        pair(&mut s, self.lower, self.upper);
        for r in &self.ranges {
            s.push_str(&(r.column + 1).to_string());
            s.push(' ');
            pair(&mut s, r.min, r.max);
        }
        w.write_all(s.as_bytes())?;
        w.flush()?;
        Ok(())
    }

    /// Reads parameters written by svm-scale `-s` or by [`ScaleParams::write`], with default limits.
    ///
    /// # Errors
    /// See [`ScaleParams::read_with`].
    pub fn read<R: BufRead>(r: R) -> Result<ScaleParams, IoError> {
        Self::read_with(r, &ScaleReadOptions::default())
    }

    /// Reads parameters with the given limits.
    ///
    /// # Errors
    /// [`IoError::Parse`] with line and column: [`ParseErrorKind::Expected`] for a missing or
    /// malformed item (wrong section letter, wrong number of fields, not a number, `upper <= lower`,
    /// `max < min`), [`ParseErrorKind::NonFinite`], [`ParseErrorKind::IndexTooSmall`] for index 0,
    /// [`ParseErrorKind::NonIncreasingIndex`], [`ParseErrorKind::Limit`],
    /// [`ParseErrorKind::Empty`] for an empty input; [`IoError::Io`] when reading fails.
    // One piece: a single pass of a line parser whose errors name the line and column it tracks.
    pub fn read_with<R: BufRead>(r: R, opts: &ScaleReadOptions) -> Result<ScaleParams, IoError> {
        let max_index = opts.max_feature_index.min(HARD_MAX_FEATURE_INDEX);
        let mut lines = LineReader::new(r, opts.max_line_len);
        let mut toks: Vec<(usize, usize)> = Vec::with_capacity(4);
        let mut state = Section::Start;
        let mut y: Option<YScale> = None;
        let mut y_limits = (0.0, 0.0);
        let mut x_limits: Option<(f64, f64)> = None;
        let mut ranges: Vec<FeatureRange> = Vec::new();
        let mut prev_index: Option<u64> = None;
        loop {
            let line_no = lines.line_no() + 1;
            let Some(line) = lines.next_line()? else {
                break;
            };
            split_ws(line, &mut toks);
            if toks.is_empty() {
                continue;
            }
            let err = |off: usize, kind: ParseErrorKind| -> IoError {
                ParseError {
                    line: line_no,
                    column: char_column(line, off),
                    kind,
                }
                .into()
            };
            let expect_n = |n: usize, what: &'static str| -> Result<(), IoError> {
                if toks.len() == n {
                    Ok(())
                } else {
                    let off = toks.get(n).map_or(line.len(), |t| t.0);
                    Err(err(
                        off,
                        ParseErrorKind::Expected {
                            expected: what,
                            found: snippet(line),
                        },
                    ))
                }
            };
            let num = |k: usize, what: &'static str| -> Result<f64, IoError> {
                let (a, b) = toks[k];
                let v = parse_f64(&line[a..b]).ok_or_else(|| {
                    err(
                        a,
                        ParseErrorKind::Expected {
                            expected: "a number",
                            found: snippet(&line[a..b]),
                        },
                    )
                })?;
                if v.is_finite() {
                    Ok(v)
                } else {
                    Err(err(a, ParseErrorKind::NonFinite { what }))
                }
            };
            let ordered = |k: usize, a: f64, b: f64, strict: bool, what: &'static str| {
                let ok = if strict { b > a } else { b >= a };
                if ok {
                    Ok(())
                } else {
                    let (s, e) = toks[k];
                    Err(err(
                        s,
                        ParseErrorKind::Expected {
                            expected: what,
                            found: snippet(&line[s..e]),
                        },
                    ))
                }
            };
            match state {
                Section::Start => {
                    let t = &line[toks[0].0..toks[0].1];
                    match t {
                        b"y" if toks.len() == 1 => state = Section::YLimits,
                        b"x" if toks.len() == 1 => state = Section::XLimits,
                        _ => {
                            return Err(err(
                                toks[0].0,
                                ParseErrorKind::Expected {
                                    expected: "a section line 'y' or 'x'",
                                    found: snippet(line),
                                },
                            ))
                        }
                    }
                }
                Section::YLimits => {
                    expect_n(2, "two numbers 'y_lower y_upper'")?;
                    let (a, b) = (num(0, "y_lower")?, num(1, "y_upper")?);
                    ordered(1, a, b, true, "y_upper > y_lower")?;
                    y_limits = (a, b);
                    state = Section::YRange;
                }
                Section::YRange => {
                    expect_n(2, "two numbers 'y_min y_max'")?;
                    let (a, b) = (num(0, "y_min")?, num(1, "y_max")?);
                    ordered(1, a, b, false, "y_max >= y_min")?;
                    y = Some(YScale {
                        lower: y_limits.0,
                        upper: y_limits.1,
                        min: a,
                        max: b,
                    });
                    state = Section::XHeader;
                }
                Section::XHeader => {
                    if !(toks.len() == 1 && &line[toks[0].0..toks[0].1] == b"x") {
                        return Err(err(
                            toks[0].0,
                            ParseErrorKind::Expected {
                                expected: "the section line 'x'",
                                found: snippet(line),
                            },
                        ));
                    }
                    state = Section::XLimits;
                }
                Section::XLimits => {
                    expect_n(2, "two numbers 'lower upper'")?;
                    let (a, b) = (num(0, "lower")?, num(1, "upper")?);
                    ordered(1, a, b, true, "upper > lower")?;
                    x_limits = Some((a, b));
                    state = Section::Ranges;
                }
                Section::Ranges => {
                    expect_n(3, "three fields 'index min max'")?;
                    let (s, e) = toks[0];
                    let tok = &line[s..e];
                    let index = match tok.iter().try_fold(0u64, |acc, &c| {
                        if c.is_ascii_digit() {
                            acc.checked_mul(10)
                                .and_then(|v| v.checked_add(u64::from(c - b'0')))
                                .ok_or(true)
                        } else {
                            Err(false)
                        }
                    }) {
                        Ok(i) if i <= max_index => i,
                        Ok(_) | Err(true) => {
                            return Err(err(
                                s,
                                ParseErrorKind::Limit {
                                    what: "feature index",
                                    limit: max_index,
                                },
                            ))
                        }
                        Err(false) => {
                            return Err(err(
                                s,
                                ParseErrorKind::Expected {
                                    expected: "a feature index (digits)",
                                    found: snippet(tok),
                                },
                            ))
                        }
                    };
                    if index == 0 {
                        return Err(err(s, ParseErrorKind::IndexTooSmall { index, min: 1 }));
                    }
                    if let Some(p) = prev_index {
                        if index <= p {
                            return Err(err(
                                s,
                                ParseErrorKind::NonIncreasingIndex { index, previous: p },
                            ));
                        }
                    }
                    prev_index = Some(index);
                    let (mn, mx) = (num(1, "min")?, num(2, "max")?);
                    ordered(2, mn, mx, false, "max >= min")?;
                    // svm-scale never writes min == max and skips such a feature: so do we.
                    if mn != mx {
                        ranges.push(FeatureRange {
                            column: (index - 1) as usize,
                            min: mn,
                            max: mx,
                        });
                    }
                }
            }
        }
        match (state, x_limits) {
            (Section::Ranges, Some((lower, upper))) => Ok(ScaleParams {
                lower,
                upper,
                y,
                ranges,
            }),
            (Section::Start, _) => Err(ParseError {
                line: lines.line_no() + 1,
                column: 1,
                kind: ParseErrorKind::Empty,
            }
            .into()),
            _ => Err(ParseError {
                line: lines.line_no() + 1,
                column: 1,
                kind: ParseErrorKind::Expected {
                    expected: "more lines (the file ends inside a section)",
                    found: String::new(),
                },
            }
            .into()),
        }
    }
}

/// Where the parameter reader is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    Start,
    YLimits,
    YRange,
    XHeader,
    XLimits,
    Ranges,
}

fn split_ws(line: &[u8], out: &mut Vec<(usize, usize)>) {
    out.clear();
    let mut pos = 0;
    let sep = |b: u8| matches!(b, b' ' | b'\t' | b'\r' | b'\x0b' | b'\x0c');
    while pos < line.len() {
        while pos < line.len() && sep(line[pos]) {
            pos += 1;
        }
        if pos >= line.len() {
            break;
        }
        let s = pos;
        while pos < line.len() && !sep(line[pos]) {
            pos += 1;
        }
        out.push((s, pos));
        if out.len() > 3 {
            break; // enough to report "too many fields"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_end_points_are_exact() {
        assert_eq!(map(2.0, 2.0, 5.0, -1.0, 1.0), -1.0);
        assert_eq!(map(5.0, 2.0, 5.0, -1.0, 1.0), 1.0);
        assert_eq!(map(3.5, 2.0, 5.0, -1.0, 1.0), 0.0);
    }
}
