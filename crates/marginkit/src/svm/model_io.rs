//! LIBSVM's model text format, read and written so that LIBSVM itself can load our files and we
//! can load LIBSVM's.
//!
//! Floats are written in the shortest form that reads back to the same `f64` (exact round trip),
//! labels as integers when they are integral (LIBSVM reads labels with `%d`). Writing to a path goes
//! through a temporary file in the same directory that is renamed into place, so a failed write
//! never leaves a half-written model.

use crate::solver::Status;
use std::io::{BufRead, Write};
use std::path::Path;

use super::model::SvmModel;
use super::params::SvmType;
use crate::data::libsvm_fmt::LineReader;
use crate::data::{CsrMatrix, Features};
use crate::error::{IoError, ParseError, ParseErrorKind};
use crate::kernel::KernelSpec;

/// Largest `nr_class` accepted when reading.
pub const MAX_NR_CLASS: usize = 65_536;
/// Largest `total_sv` accepted when reading.
pub const MAX_TOTAL_SV: usize = 1 << 31;
/// Largest feature index accepted in SV lines.
pub const MAX_FEATURE_INDEX: u64 = (1 << 31) - 1;
/// Longest line accepted (bytes).
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// Formats a float so that it reads back exactly (shortest round-trip digits), in a form C's
/// `strtod`/`%lf` accept.
pub fn fmt_f64(v: f64) -> String {
    if v == 0.0 {
        return "0".to_string();
    }
    let a = v.abs();
    if (1e-5..1e16).contains(&a) {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

/// Formats a label: an integer when integral (LIBSVM's `%d`), else a float.
pub fn fmt_label(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        format!("{}", v as i64)
    } else {
        fmt_f64(v)
    }
}

fn join(v: &[f64], f: fn(f64) -> String) -> String {
    v.iter().map(|&x| f(x)).collect::<Vec<_>>().join(" ")
}

/// Writes `model` in LIBSVM's format, a file LIBSVM's own tools load whatever the fit's status
/// (a fit that stopped early reports that in its report, not in the model file).
///
/// LIBSVM's format has no feature-count line: a reader takes the largest index among the
/// support vectors. When the model is wider than that (the training data had features that no
/// support vector uses), the last support vector gets an explicit `index:0` entry at the
/// model's width, which changes no kernel value and lets a reader recover the training data's
/// feature count.
///
/// # Errors
/// Any I/O error of `w`.
pub fn write_model<W: Write>(mut w: W, model: &SvmModel) -> std::io::Result<()> {
    writeln!(w, "svm_type {}", model.svm_type.name())?;
    writeln!(w, "kernel_type {}", model.kernel.libsvm_name())?;
    match model.kernel {
        KernelSpec::Poly {
            gamma,
            coef0,
            degree,
        } => {
            writeln!(w, "degree {degree}")?;
            writeln!(w, "gamma {}", fmt_f64(gamma))?;
            writeln!(w, "coef0 {}", fmt_f64(coef0))?;
        }
        KernelSpec::Rbf { gamma } => writeln!(w, "gamma {}", fmt_f64(gamma))?,
        KernelSpec::Sigmoid { gamma, coef0 } => {
            writeln!(w, "gamma {}", fmt_f64(gamma))?;
            writeln!(w, "coef0 {}", fmt_f64(coef0))?;
        }
        KernelSpec::Linear | KernelSpec::Precomputed => {}
    }
    writeln!(w, "nr_class {}", model.n_class())?;
    writeln!(w, "total_sv {}", model.total_sv())?;
    writeln!(w, "rho {}", join(&model.rho, fmt_f64))?;
    if model.svm_type.is_classifier() {
        writeln!(w, "label {}", join(&model.labels, fmt_label))?;
    }
    if !model.prob_a.is_empty() {
        writeln!(w, "probA {}", join(&model.prob_a, fmt_f64))?;
    }
    if !model.prob_b.is_empty() {
        writeln!(w, "probB {}", join(&model.prob_b, fmt_f64))?;
    }
    if model.svm_type.is_classifier() {
        let n: Vec<String> = model.n_sv.iter().map(|c| c.to_string()).collect();
        writeln!(w, "nr_sv {}", n.join(" "))?;
    }
    writeln!(w, "SV")?;
    let mut line = String::new();
    let mut widest = 0usize;
    for k in 0..model.total_sv() {
        line.clear();
        for row in &model.sv_coef {
            line.push_str(&fmt_f64(row[k]));
            line.push(' ');
        }
        let r = model.sv.row(k);
        if model.kernel == KernelSpec::Precomputed {
            line.push_str(&format!("0:{} ", fmt_label(r.get(0))));
        } else {
            for (c, v) in r.iter() {
                if v != 0.0 {
                    line.push_str(&format!("{}:{} ", c + 1, fmt_f64(v)));
                    widest = widest.max(c + 1);
                }
            }
            if k + 1 == model.total_sv() && widest < model.n_features() {
                line.push_str(&format!("{}:0 ", model.n_features()));
            }
        }
        writeln!(w, "{line}")?;
    }
    w.flush()
}

/// Writes `model` to `path` atomically (temporary file, then rename).
///
/// # Errors
/// Any I/O error; the target is left untouched on failure.
pub fn save_model(path: &Path, model: &SvmModel) -> std::io::Result<()> {
    crate::data::write_output(path, |w| write_model(w, model))
}

/// Reads a status name as written in model files and reports ([`Status::as_str`]).
pub fn status_from_name(s: &str) -> Option<Status> {
    [
        Status::Converged,
        Status::MaxIterations,
        Status::TimeLimit,
        Status::Interrupted,
    ]
    .into_iter()
    .find(|st| st.as_str() == s)
}

/// Model lines as text, on top of the data reader's bounded line reader.
struct Lines<R> {
    inner: LineReader<R>,
    line_no: usize,
}

impl<R: BufRead> Lines<R> {
    fn next_line(&mut self) -> Result<Option<&str>, IoError> {
        let line_no = self.inner.line_no() + 1;
        let line = self.inner.next_line()?;
        if line.is_some() {
            self.line_no = line_no;
        }
        match line {
            None => Ok(None),
            Some(b) => std::str::from_utf8(b).map(Some).map_err(|_| {
                IoError::Parse(ParseError {
                    line: line_no,
                    column: 1,
                    kind: ParseErrorKind::Utf8,
                })
            }),
        }
    }
    fn err(&self, column: usize, kind: ParseErrorKind) -> IoError {
        IoError::Parse(ParseError {
            line: self.line_no,
            column,
            kind,
        })
    }
}

fn model_err(line: usize, column: usize, msg: String) -> IoError {
    IoError::Parse(ParseError {
        line,
        column,
        kind: ParseErrorKind::Model(msg),
    })
}

/// Splits a line into (1-based column, token) pairs.
fn tokens(s: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, ch) in s.char_indices() {
        if ch.is_ascii_whitespace() {
            if let Some(b) = start.take() {
                out.push((b + 1, &s[b..i]));
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(b) = start {
        out.push((b + 1, &s[b..]));
    }
    out
}

fn parse_f64(line: usize, col: usize, tok: &str, what: &'static str) -> Result<f64, IoError> {
    match tok.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        Ok(_) => Err(IoError::Parse(ParseError {
            line,
            column: col,
            kind: ParseErrorKind::NonFinite { what },
        })),
        Err(_) => Err(IoError::Parse(ParseError {
            line,
            column: col,
            kind: ParseErrorKind::Expected {
                expected: what,
                found: tok.chars().take(32).collect(),
            },
        })),
    }
}

fn parse_usize(line: usize, col: usize, tok: &str, what: &'static str) -> Result<usize, IoError> {
    tok.parse::<usize>().map_err(|_| {
        IoError::Parse(ParseError {
            line,
            column: col,
            kind: ParseErrorKind::Expected {
                expected: what,
                found: tok.chars().take(32).collect(),
            },
        })
    })
}

#[derive(Default)]
struct Header {
    svm_type: Option<SvmType>,
    kernel_name: Option<String>,
    degree: Option<u32>,
    gamma: Option<f64>,
    coef0: Option<f64>,
    nr_class: Option<usize>,
    total_sv: Option<usize>,
    rho: Vec<f64>,
    labels: Vec<f64>,
    prob_a: Vec<f64>,
    prob_b: Vec<f64>,
    n_sv: Vec<usize>,
    status: Option<Status>,
}

/// Reads a model in LIBSVM's format.
///
/// # Errors
/// [`IoError::Parse`] with the line and column of the first problem (unknown keyword, missing
/// or inconsistent field, malformed number, a limit exceeded), or an I/O error.
pub fn read_model<R: BufRead>(r: R) -> Result<SvmModel, IoError> {
    read_model_with_status(r).map(|(m, _)| m)
}

/// The solver status a model file records: [`Status::Converged`] unless the file has a
/// `status NAME` line. The reader accepts that line as the flag of a fit that stopped early;
/// [`write_model`] never writes it, so that LIBSVM's reader (which refuses unknown keywords)
/// loads every file marginkit writes.
///
/// # Errors
/// As [`read_model`].
pub fn read_model_with_status<R: BufRead>(r: R) -> Result<(SvmModel, Status), IoError> {
    let mut lines = Lines {
        inner: LineReader::new(r, MAX_LINE_BYTES),
        line_no: 0,
    };
    let h = read_header(&mut lines)?;
    let header_line = lines.line_no;
    let shape = h.shape(header_line)?;
    let (sv_coef, sv) = read_support_vectors(&mut lines, &shape, header_line)?;
    let svm_type = shape.svm_type;
    let n_sv = if svm_type.is_classifier() {
        h.n_sv
    } else {
        Vec::new()
    };
    Ok((
        SvmModel {
            svm_type,
            kernel: shape.kernel,
            labels: if svm_type.is_classifier() {
                h.labels
            } else {
                Vec::new()
            },
            n_sv,
            sv,
            sv_indices: None,
            sv_coef,
            rho: h.rho,
            prob_a: h.prob_a,
            prob_b: h.prob_b,
            sv_norms: Vec::new(),
        }
        .with_norms(),
        h.status.unwrap_or(Status::Converged),
    ))
}

/// What the header fixes about the support-vector lines that follow it.
struct Shape {
    svm_type: SvmType,
    kernel: KernelSpec,
    total_sv: usize,
    /// Coefficients at the start of each support-vector line (`nr_class - 1` for classifiers).
    n_coef: usize,
}

/// Reads the header lines up to and including `SV`, each keyword parsed but not yet checked
/// against the others ([`Header::shape`] does that).
fn read_header<R: BufRead>(lines: &mut Lines<R>) -> Result<Header, IoError> {
    let mut h = Header::default();
    loop {
        let line_no = lines.line_no + 1;
        let Some(line) = lines.next_line()? else {
            return Err(model_err(line_no, 1, "missing 'SV' line".into()));
        };
        let toks = tokens(line);
        let Some(&(kc, key)) = toks.first() else {
            continue;
        };
        let vals = &toks[1..];
        let need_one = |what: &str| -> Result<(usize, &str), IoError> {
            match vals {
                [(c, v)] => Ok((*c, *v)),
                _ => Err(model_err(
                    line_no,
                    kc,
                    format!("'{key}' needs exactly one {what}"),
                )),
            }
        };
        match key {
            "svm_type" => {
                let (c, v) = need_one("name")?;
                h.svm_type = Some(
                    SvmType::from_name(v)
                        .ok_or_else(|| model_err(line_no, c, format!("unknown svm_type '{v}'")))?,
                );
            }
            "kernel_type" => {
                let (c, v) = need_one("name")?;
                if !["linear", "polynomial", "rbf", "sigmoid", "precomputed"].contains(&v) {
                    return Err(model_err(line_no, c, format!("unknown kernel_type '{v}'")));
                }
                h.kernel_name = Some(v.to_string());
            }
            "degree" => {
                let (c, v) = need_one("integer")?;
                let d = parse_usize(line_no, c, v, "a degree (integer >= 0)")?;
                h.degree = Some(
                    u32::try_from(d)
                        .map_err(|_| model_err(line_no, c, "degree too large".into()))?,
                );
            }
            "gamma" => {
                let (c, v) = need_one("number")?;
                h.gamma = Some(parse_f64(line_no, c, v, "gamma")?);
            }
            "coef0" => {
                let (c, v) = need_one("number")?;
                h.coef0 = Some(parse_f64(line_no, c, v, "coef0")?);
            }
            "nr_class" => {
                let (c, v) = need_one("integer")?;
                let n = parse_usize(line_no, c, v, "nr_class (integer)")?;
                if !(1..=MAX_NR_CLASS).contains(&n) {
                    return Err(lines.err(
                        c,
                        ParseErrorKind::Limit {
                            what: "nr_class",
                            limit: MAX_NR_CLASS as u64,
                        },
                    ));
                }
                h.nr_class = Some(n);
            }
            "total_sv" => {
                let (c, v) = need_one("integer")?;
                let n = parse_usize(line_no, c, v, "total_sv (integer)")?;
                if n > MAX_TOTAL_SV {
                    return Err(lines.err(
                        c,
                        ParseErrorKind::Limit {
                            what: "total_sv",
                            limit: MAX_TOTAL_SV as u64,
                        },
                    ));
                }
                h.total_sv = Some(n);
            }
            "rho" | "label" | "probA" | "probB" => {
                let mut out = Vec::with_capacity(vals.len());
                for &(c, v) in vals {
                    out.push(parse_f64(line_no, c, v, "a number")?);
                }
                match key {
                    "rho" => h.rho = out,
                    "label" => h.labels = out,
                    "probA" => h.prob_a = out,
                    _ => h.prob_b = out,
                }
            }
            "status" => {
                let (c, v) = need_one("name")?;
                let st = status_from_name(v)
                    .ok_or_else(|| model_err(line_no, c, format!("unknown status '{v}'")))?;
                if h.status.replace(st).is_some() {
                    return Err(model_err(line_no, kc, "'status' given twice".into()));
                }
            }
            "nr_sv" => {
                h.n_sv = vals
                    .iter()
                    .map(|&(c, v)| parse_usize(line_no, c, v, "a count"))
                    .collect::<Result<_, _>>()?;
            }
            "prob_density_marks" => {
                // One-class density marks (LIBSVM >= 3.3): accepted and ignored.
            }
            "SV" => return Ok(h),
            other => {
                return Err(model_err(
                    line_no,
                    kc,
                    format!(
                        "unknown keyword '{}'",
                        other.chars().take(32).collect::<String>()
                    ),
                ))
            }
        }
    }
}

impl Header {
    /// Checks the header's fields against each other (the `SV` line is `header_line`, where
    /// their errors point) and resolves the kernel.
    fn shape(&self, header_line: usize) -> Result<Shape, IoError> {
        let h = self;
        let svm_type = h
            .svm_type
            .ok_or_else(|| model_err(header_line, 1, "missing svm_type".into()))?;
        let kernel_name = h
            .kernel_name
            .clone()
            .ok_or_else(|| model_err(header_line, 1, "missing kernel_type".into()))?;
        let need = |v: Option<f64>, name: &str| {
            v.ok_or_else(|| model_err(header_line, 1, format!("missing {name}")))
        };
        let kernel = match kernel_name.as_str() {
            "linear" => KernelSpec::Linear,
            "polynomial" => KernelSpec::Poly {
                gamma: need(h.gamma, "gamma")?,
                coef0: need(h.coef0, "coef0")?,
                degree: h
                    .degree
                    .ok_or_else(|| model_err(header_line, 1, "missing degree".into()))?,
            },
            "rbf" => KernelSpec::Rbf {
                gamma: need(h.gamma, "gamma")?,
            },
            "sigmoid" => KernelSpec::Sigmoid {
                gamma: need(h.gamma, "gamma")?,
                coef0: need(h.coef0, "coef0")?,
            },
            _ => KernelSpec::Precomputed,
        };
        let nr_class = h
            .nr_class
            .ok_or_else(|| model_err(header_line, 1, "missing nr_class".into()))?;
        let total_sv = h
            .total_sv
            .ok_or_else(|| model_err(header_line, 1, "missing total_sv".into()))?;
        let n_pairs = nr_class * (nr_class - 1) / 2;
        let check_len = |len: usize, want: usize, what: &str| {
            if len == want {
                Ok(())
            } else {
                Err(model_err(
                    header_line,
                    1,
                    format!("{what} has {len} values, expected {want}"),
                ))
            }
        };
        if svm_type.is_classifier() {
            if nr_class < 2 {
                return Err(model_err(header_line, 1, "nr_class must be >= 2".into()));
            }
            check_len(h.rho.len(), n_pairs, "rho")?;
            check_len(h.labels.len(), nr_class, "label")?;
            check_len(h.n_sv.len(), nr_class, "nr_sv")?;
            if h.n_sv.iter().sum::<usize>() != total_sv {
                return Err(model_err(
                    header_line,
                    1,
                    "nr_sv does not add up to total_sv".into(),
                ));
            }
            if !h.prob_a.is_empty() {
                check_len(h.prob_a.len(), n_pairs, "probA")?;
                check_len(h.prob_b.len(), n_pairs, "probB")?;
            }
        } else {
            check_len(h.rho.len(), 1, "rho")?;
            if svm_type.is_regression() && !h.prob_a.is_empty() {
                check_len(h.prob_a.len(), 1, "probA")?;
            }
        }
        let n_coef = if svm_type.is_classifier() {
            nr_class - 1
        } else {
            1
        };
        Ok(Shape {
            svm_type,
            kernel,
            total_sv,
            n_coef,
        })
    }
}

/// Reads the `total_sv` support-vector lines (coefficients, then `index:value` pairs) and
/// checks that only blank lines follow; returns the coefficients per decision function and the
/// support vectors.
fn read_support_vectors<R: BufRead>(
    lines: &mut Lines<R>,
    shape: &Shape,
    header_line: usize,
) -> Result<(Vec<Vec<f64>>, Features), IoError> {
    let (total_sv, n_coef) = (shape.total_sv, shape.n_coef);
    let precomputed = shape.kernel == KernelSpec::Precomputed;
    let mut sv_coef: Vec<Vec<f64>> = vec![Vec::with_capacity(total_sv.min(1 << 20)); n_coef];
    let mut indptr = vec![0usize];
    let mut indices: Vec<u32> = Vec::new();
    let mut values: Vec<f64> = Vec::new();
    let mut n_cols = 0usize;
    for _ in 0..total_sv {
        let line_no = lines.line_no + 1;
        let Some(line) = lines.next_line()? else {
            return Err(model_err(
                line_no,
                1,
                format!(
                    "expected {total_sv} support vectors, found {}",
                    indptr.len() - 1
                ),
            ));
        };
        let toks = tokens(line);
        if toks.len() < n_coef {
            return Err(model_err(
                line_no,
                1,
                format!("expected {n_coef} coefficients"),
            ));
        }
        for (row, &(c, t)) in sv_coef.iter_mut().zip(&toks[..n_coef]) {
            row.push(parse_f64(line_no, c, t, "a coefficient")?);
        }
        let mut prev: Option<u64> = None;
        for &(c, t) in &toks[n_coef..] {
            let Some((is, vs)) = t.split_once(':') else {
                return Err(IoError::Parse(ParseError {
                    line: line_no,
                    column: c,
                    kind: ParseErrorKind::Expected {
                        expected: "index:value",
                        found: t.chars().take(32).collect(),
                    },
                }));
            };
            let idx: u64 = is.parse().map_err(|_| {
                IoError::Parse(ParseError {
                    line: line_no,
                    column: c,
                    kind: ParseErrorKind::Expected {
                        expected: "a feature index",
                        found: is.chars().take(32).collect(),
                    },
                })
            })?;
            let min = u64::from(!precomputed);
            if idx < min {
                return Err(IoError::Parse(ParseError {
                    line: line_no,
                    column: c,
                    kind: ParseErrorKind::IndexTooSmall { index: idx, min },
                }));
            }
            if idx > MAX_FEATURE_INDEX {
                return Err(IoError::Parse(ParseError {
                    line: line_no,
                    column: c,
                    kind: ParseErrorKind::Limit {
                        what: "feature index",
                        limit: MAX_FEATURE_INDEX,
                    },
                }));
            }
            if let Some(p) = prev {
                if idx <= p {
                    return Err(IoError::Parse(ParseError {
                        line: line_no,
                        column: c,
                        kind: ParseErrorKind::NonIncreasingIndex {
                            index: idx,
                            previous: p,
                        },
                    }));
                }
            }
            prev = Some(idx);
            let v = parse_f64(line_no, c + is.len() + 1, vs, "a feature value")?;
            if precomputed
                && (idx != 0 || !(1.0..=MAX_FEATURE_INDEX as f64).contains(&v) || v.fract() != 0.0)
            {
                return Err(model_err(line_no, c, format!("a precomputed-kernel support vector is `0:ID` with an integer ID in 1..={MAX_FEATURE_INDEX}")));
            }
            let col = if precomputed { idx } else { idx - 1 } as u32;
            indices.push(col);
            values.push(v);
            n_cols = n_cols.max(col as usize + 1);
        }
        if precomputed && prev.is_none() {
            return Err(model_err(
                line_no,
                1,
                "a precomputed-kernel support vector needs its `0:ID`".into(),
            ));
        }
        indptr.push(indices.len());
    }
    // Anything after the last support vector other than blank lines is a corrupt file.
    while let Some(line) = lines.next_line()? {
        if !line.trim().is_empty() {
            return Err(model_err(
                lines.line_no,
                1,
                format!("unexpected text after {total_sv} support vectors"),
            ));
        }
    }
    let csr = CsrMatrix::new(n_cols, indptr, indices, values)
        .map_err(|e| model_err(header_line, 1, e.to_string()))?;
    Ok((sv_coef, Features::Sparse(csr).densify_if(0.5, 1 << 30)))
}

/// Reads a model from memory.
///
/// # Errors
/// As [`read_model`].
pub fn read_model_bytes(bytes: &[u8]) -> Result<SvmModel, IoError> {
    read_model(bytes)
}

/// Reads a model file.
///
/// # Errors
/// As [`read_model`], plus failure to open the file.
pub fn load_model(path: &Path) -> Result<SvmModel, IoError> {
    load_model_with_status(path).map(|(m, _)| m)
}

/// Reads a model file and the solver status it records (see [`read_model_with_status`]).
///
/// # Errors
/// As [`read_model`], plus failure to open the file.
pub fn load_model_with_status(path: &Path) -> Result<(SvmModel, Status), IoError> {
    let f = std::fs::File::open(path)?;
    read_model_with_status(std::io::BufReader::new(f))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = "svm_type c_svc\nkernel_type rbf\ngamma 0.5\nnr_class 2\ntotal_sv 3\nrho 0.25\nlabel 1 -1\nnr_sv 2 1\nSV\n1 1:0.5 3:-1\n0.25 2:1\n-1.25 1:0.1 2:0.2 3:0.3\n";

    #[test]
    fn read_write_round_trip_exact() {
        let m = read_model_bytes(SMALL.as_bytes()).unwrap();
        assert_eq!(m.total_sv(), 3);
        assert_eq!(m.labels, vec![1.0, -1.0]);
        let mut out = Vec::new();
        write_model(&mut out, &m).unwrap();
        let m2 = read_model_bytes(&out).unwrap();
        assert_eq!(m.sv_coef, m2.sv_coef);
        assert_eq!(m.rho, m2.rho);
        assert_eq!(m.kernel, m2.kernel);
        for k in 0..3 {
            for c in 0..3 {
                assert_eq!(m.sv.row(k).get(c), m2.sv.row(k).get(c));
            }
        }
    }

    #[test]
    fn float_format_round_trips() {
        for v in [
            0.1,
            1e-7,
            1e300,
            -2.5e-308,
            123456789.0123,
            1.0 / 3.0,
            5e-324,
        ] {
            assert_eq!(fmt_f64(v).parse::<f64>().unwrap(), v);
        }
        assert_eq!(fmt_label(-1.0), "-1");
        assert_eq!(fmt_label(2.5), "2.5");
    }

    fn err_line(input: &str) -> (usize, ParseErrorKind) {
        match read_model_bytes(input.as_bytes()) {
            Err(IoError::Parse(e)) => (e.line, e.kind),
            other => panic!("expected a parse error, got {other:?}"),
        }
    }

    #[test]
    fn corrupt_models_are_rejected_with_positions() {
        let (l, _) = err_line(&SMALL.replace("gamma 0.5", "gamma x"));
        assert_eq!(l, 3);
        let (l, k) = err_line(&SMALL.replace("nr_class 2", "nr_class 1000000"));
        assert_eq!(l, 4);
        assert!(matches!(
            k,
            ParseErrorKind::Limit {
                what: "nr_class",
                ..
            }
        ));
        let (l, _) = err_line(&SMALL.replace("total_sv 3", "total_sv 4"));
        assert_eq!(l, 9);
        let (l, k) = err_line(&SMALL.replace("2:1\n", "2:1 1:3\n"));
        assert_eq!(l, 11);
        assert!(matches!(k, ParseErrorKind::NonIncreasingIndex { .. }));
        let (l, _) = err_line(&SMALL.replace("svm_type c_svc", "svm_typo c_svc"));
        assert_eq!(l, 1);
        let (_, k) = err_line(&SMALL.replace("0.25 2:1", "nan 2:1"));
        assert!(matches!(k, ParseErrorKind::NonFinite { .. }));
        let (l, _) = err_line(&format!("{SMALL}garbage\n"));
        assert_eq!(l, 13);
        let (_, _) = err_line("svm_type c_svc\n");
    }

    #[test]
    fn precomputed_support_vectors_must_be_a_serial_only() {
        // `0:1e300` (a fuzz_svm_model input) must be refused, not overflow in check_features.
        for sv in ["0:1e300", "0:-3", "0:2.5", "0:0", "5:1", "", "0:1 2:1"] {
            let text = format!(
                "svm_type c_svc\nkernel_type precomputed\nnr_class 2\ntotal_sv 2\nrho 0.5\nlabel 1 -1\nnr_sv 1 1\nSV\n1 {sv}\n-1 0:2\n"
            );
            match read_model_bytes(text.as_bytes()) {
                Err(IoError::Parse(e)) => assert_eq!(e.line, 9, "{sv}"),
                other => panic!("{sv}: expected a parse error, got {other:?}"),
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..400)) {
            let _ = read_model_bytes(&bytes);
        }

        #[test]
        fn mutated_models_never_panic(pos in 0usize..200, byte in proptest::num::u8::ANY) {
            let mut b = SMALL.as_bytes().to_vec();
            let p = pos % b.len();
            b[p] = byte;
            let _ = read_model_bytes(&b);
        }
    }
}
