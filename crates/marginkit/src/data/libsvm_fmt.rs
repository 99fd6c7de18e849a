//! LIBSVM / svmlight sparse text format: reader and writer.
//!
//! One sample per line: `label index:value index:value ... [# comment]`.
//!
//! Reading rules (see [`ReadOptions`] for the knobs and their defaults):
//! - Tokens are separated by spaces or tabs; `\r\n` line ends are accepted.
//! - The label is any finite number Rust's `f64` parser accepts, so `+1`, `-1`, `2.5e-3` all work.
//! - Feature indices are decimal digits, 1-based and strictly increasing along a line. LIBSVM index
//!   `k` becomes column `k - 1`. With [`Indexing::Precomputed`] index 0 is allowed as well and index
//!   `k` becomes column `k` (LIBSVM's `0:i` serial-number convention for precomputed kernels).
//! - Values must be finite. Values equal to zero are not stored (a missing entry is zero), but their
//!   index still counts towards the number of features.
//! - svmlight extras: a `qid:N` token directly after the label is checked (N must be an integer) and
//!   skipped (query ids are not kept); everything from `#` to the end of a line is a comment; lines
//!   that are blank or only a comment are skipped.
//! - The number of features is the largest column seen plus one, or [`ReadOptions::min_features`]
//!   if that is larger.
//!
//! Errors carry the 1-based line and the 1-based column (character position, a tab counting as
//! one) where the offending token starts. Input that starts with the gzip magic bytes `1f 8b` is decompressed on the fly by
//! [`read_libsvm_bytes`] and [`read_libsvm_path`] (the file name does not matter).
//!
//! The writer prints every number in shortest round-trip form (or C's `%.Ng`, see
//! [`FloatFormat`]), so a written data set re-reads to the same values.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;

use crate::data::{CsrMatrix, Dataset, Features};
use crate::error::{DataError, IoError, ParseError, ParseErrorKind};

/// Default longest accepted line, in bytes without the `\n` (16 MiB).
pub const DEFAULT_MAX_LINE_LEN: usize = 16 << 20;
/// Default largest accepted feature index: 2^31 - 1, LIBSVM's own limit (a C `int`).
pub const DEFAULT_MAX_FEATURE_INDEX: u64 = (1 << 31) - 1;
/// Hard ceiling on the feature index whatever the options say: columns are stored as `u32`.
pub const HARD_MAX_FEATURE_INDEX: u64 = u32::MAX as u64;
/// Default smallest density (stored entries / cells) at which the reader switches to dense storage.
///
/// Dense rows take the kernels' register micro-tiles, which do about 16 times the work per cell
/// of a sparse gather (one dependent addition per stored entry), so dense storage is faster from
/// a density of about 1/16 (see `kernel::batch`); on Fashion-MNIST (density 0.498) an RBF fit on
/// sparse rows took 10 times as long as on dense ones. A quarter keeps a margin and bounds the
/// dense copy at 2.7 times the 12 bytes per entry of the CSR rows.
pub const DEFAULT_DENSIFY_MIN_DENSITY: f64 = 0.25;
/// Default largest dense matrix (in bytes, 8 per cell) the reader will build when densifying (512 MiB).
pub const DEFAULT_DENSIFY_MAX_BYTES: usize = 512 << 20;

/// How feature indices map to columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Indexing {
    /// Indices start at 1; index `k` is column `k - 1` (the normal LIBSVM convention).
    #[default]
    OneBased,
    /// Precomputed kernel: index 0 (the sample's serial number) is allowed and index `k` is column `k`.
    Precomputed,
}

/// Storage of the feature matrix built by the reader.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Storage {
    /// Always compressed sparse rows.
    Sparse,
    /// CSR, converted to dense when the density is at least `min_density` and the dense copy
    /// takes at most `max_bytes` (see [`Features::densify_if`]).
    Auto {
        /// Smallest density (stored non-zeros / cells) for dense storage.
        min_density: f64,
        /// Largest dense matrix in bytes.
        max_bytes: usize,
    },
}

impl Default for Storage {
    fn default() -> Self {
        Storage::Auto {
            min_density: DEFAULT_DENSIFY_MIN_DENSITY,
            max_bytes: DEFAULT_DENSIFY_MAX_BYTES,
        }
    }
}

/// Options of the LIBSVM reader. `ReadOptions::default()` reads ordinary LIBSVM files.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadOptions {
    /// Index convention (default [`Indexing::OneBased`]).
    pub indexing: Indexing,
    /// The data set has at least this many features (columns), e.g. the training set's count
    /// when reading a test file (default 0).
    pub min_features: usize,
    /// Longest accepted line in bytes, without the `\n` (default [`DEFAULT_MAX_LINE_LEN`]).
    pub max_line_len: usize,
    /// Largest accepted feature index (default [`DEFAULT_MAX_FEATURE_INDEX`]; values above
    /// [`HARD_MAX_FEATURE_INDEX`] act as that).
    pub max_feature_index: u64,
    /// Storage choice (default [`Storage::Auto`] with the `DEFAULT_DENSIFY_*` constants).
    pub storage: Storage,
}

impl Default for ReadOptions {
    fn default() -> Self {
        Self {
            indexing: Indexing::OneBased,
            min_features: 0,
            max_line_len: DEFAULT_MAX_LINE_LEN,
            max_feature_index: DEFAULT_MAX_FEATURE_INDEX,
            storage: Storage::default(),
        }
    }
}

impl ReadOptions {
    /// Default options for a precomputed-kernel file (`0:i` serial numbers).
    pub fn precomputed() -> Self {
        Self {
            indexing: Indexing::Precomputed,
            ..Self::default()
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Shared text-input plumbing (also used by the CSV and scale-parameter readers).

/// Reads `\n`-terminated lines into one reused buffer, enforcing a length limit before the
/// line is held in memory in full.
pub(crate) struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    line_no: usize,
    max_len: usize,
}

impl<R: BufRead> LineReader<R> {
    pub(crate) fn new(inner: R, max_len: usize) -> Self {
        Self {
            inner,
            buf: Vec::new(),
            line_no: 0,
            max_len,
        }
    }

    /// Number of the line returned last (1-based; 0 before the first).
    pub(crate) fn line_no(&self) -> usize {
        self.line_no
    }

    /// The next line without its `\n` or `\r\n`, or `None` at the end of the input.
    pub(crate) fn next_line(&mut self) -> Result<Option<&[u8]>, IoError> {
        self.buf.clear();
        let mut saw_any = false;
        loop {
            let avail = match self.inner.fill_buf() {
                Ok(a) => a,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            };
            if avail.is_empty() {
                break;
            }
            saw_any = true;
            let (chunk, used, done) = match avail.iter().position(|&b| b == b'\n') {
                Some(p) => (&avail[..p], p + 1, true),
                None => (avail, avail.len(), false),
            };
            // A trailing '\r' of a CRLF line end does not count towards the limit, so one extra
            // byte is tolerated until the line end is seen.
            let total = self.buf.len() + chunk.len();
            let too_long = if done {
                let last = chunk.last().or(self.buf.last());
                total - usize::from(last == Some(&b'\r')) > self.max_len
            } else {
                total > self.max_len.saturating_add(1)
            };
            if too_long {
                return Err(ParseError {
                    line: self.line_no + 1,
                    column: self.max_len.saturating_add(1),
                    kind: ParseErrorKind::Limit {
                        what: "line length in bytes",
                        limit: self.max_len as u64,
                    },
                }
                .into());
            }
            self.buf.extend_from_slice(chunk);
            self.inner.consume(used);
            if done {
                break;
            }
        }
        if !saw_any {
            return Ok(None);
        }
        self.line_no += 1;
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        Ok(Some(&self.buf))
    }
}

/// 1-based character column of byte offset `off` in `line` (UTF-8 continuation bytes do not count).
pub(crate) fn char_column(line: &[u8], off: usize) -> usize {
    let off = off.min(line.len());
    line[..off].iter().filter(|&&b| (b & 0xC0) != 0x80).count() + 1
}

/// A short, printable copy of an offending token for error messages.
pub(crate) fn snippet(tok: &[u8]) -> String {
    const MAX: usize = 40;
    let cut = &tok[..tok.len().min(MAX)];
    let mut s = String::from_utf8_lossy(cut).into_owned();
    if tok.len() > MAX {
        s.push_str("...");
    }
    s
}

/// Parses a finite-or-not `f64` from ASCII bytes; `None` when it is not a number. The result is
/// always exactly what `str::parse::<f64>` gives (correctly rounded).
#[inline]
pub(crate) fn parse_f64(tok: &[u8]) -> Option<f64> {
    if let Some(v) = parse_simple_decimal(tok) {
        return Some(v);
    }
    // Numbers are ASCII; anything else is rejected before the (UTF-8) parser sees it.
    if tok.is_empty() || !tok.is_ascii() {
        return None;
    }
    std::str::from_utf8(tok).ok()?.parse::<f64>().ok()
}

/// Exact powers of ten representable in an `f64` (10^0 ..= 10^22).
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// Fast path for the common `[+-]digits[.digits]` token (Clinger's fast path): when the digits
/// form an integer `m <= 2^53` and there are `k <= 22` fraction digits, both `m` and `10^k` are
/// exact doubles and one IEEE division rounds `m / 10^k` correctly, so the result equals the
/// correctly rounded `str::parse` result. Anything else returns `None` for the general parser.
#[inline]
fn parse_simple_decimal(tok: &[u8]) -> Option<f64> {
    let (neg, digits) = match tok.first()? {
        b'-' => (true, &tok[1..]),
        b'+' => (false, &tok[1..]),
        _ => (false, tok),
    };
    let mut m: u64 = 0;
    let mut n_digits = 0usize;
    let mut frac: Option<usize> = None;
    for &c in digits {
        if c.is_ascii_digit() {
            if n_digits >= 19 {
                return None;
            }
            // Leading zeros do not use up precision.
            if m != 0 || c != b'0' {
                n_digits += 1;
            }
            m = m * 10 + u64::from(c - b'0');
            if let Some(f) = frac.as_mut() {
                *f += 1;
            }
        } else if c == b'.' && frac.is_none() {
            frac = Some(0);
        } else {
            return None;
        }
    }
    let k = frac.unwrap_or(0);
    let has_digit = digits.len() > usize::from(frac.is_some());
    if !has_digit || m > (1u64 << 53) || k >= POW10.len() {
        return None;
    }
    let v = m as f64 / POW10[k];
    Some(if neg { -v } else { v })
}

/// Opens `path` ("-" is standard input) and transparently decompresses gzip input, detected by
/// its magic bytes.
pub(crate) fn open_input(path: &Path) -> Result<Box<dyn BufRead>, IoError> {
    if path.as_os_str() == "-" {
        let stdin = std::io::stdin();
        maybe_gunzip(stdin.lock())
    } else {
        let f = std::fs::File::open(path)?;
        maybe_gunzip(f)
    }
}

/// Wraps `r` in a gzip decoder when its first two bytes are `1f 8b`.
pub(crate) fn maybe_gunzip<'a, R: Read + 'a>(mut r: R) -> Result<Box<dyn BufRead + 'a>, IoError> {
    let mut head = [0u8; 2];
    let mut got = 0;
    while got < 2 {
        match r.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    let rest = std::io::Cursor::new(head).take(got as u64).chain(r);
    const CAP: usize = 1 << 18;
    if got == 2 && head == [0x1f, 0x8b] {
        let dec = flate2::read::MultiGzDecoder::new(rest);
        Ok(Box::new(BufReader::with_capacity(CAP, dec)))
    } else {
        Ok(Box::new(BufReader::with_capacity(CAP, rest)))
    }
}

#[inline]
fn is_sep(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\x0b' | b'\x0c')
}

// ---------------------------------------------------------------------------------------------
// Reader.

/// Accumulates CSR arrays while lines are parsed.
struct Builder {
    indptr: Vec<usize>,
    indices: Vec<u32>,
    values: Vec<f64>,
    y: Vec<f64>,
    /// Largest column seen plus one.
    n_cols: usize,
}

/// Reads a LIBSVM/svmlight data set from a buffered reader (plain text; see
/// [`read_libsvm_bytes`] / [`read_libsvm_path`] for gzip detection).
///
/// # Errors
/// [`IoError::Parse`] with line and column for malformed tokens
/// ([`ParseErrorKind::Expected`]), index 0 when not precomputed ([`ParseErrorKind::IndexTooSmall`]),
/// non-increasing indices ([`ParseErrorKind::NonIncreasingIndex`]), NaN/infinite labels or values
/// ([`ParseErrorKind::NonFinite`]), exceeded limits ([`ParseErrorKind::Limit`]) and input with no
/// data line ([`ParseErrorKind::Empty`], reported at the line after the last one, column 1);
/// [`IoError::Io`] when reading fails.
pub fn read_libsvm<R: BufRead>(r: R, opts: &ReadOptions) -> Result<Dataset, IoError> {
    let mut lines = LineReader::new(r, opts.max_line_len);
    let mut b = Builder {
        indptr: vec![0],
        indices: Vec::new(),
        values: Vec::new(),
        y: Vec::new(),
        n_cols: 0,
    };
    let max_index = opts.max_feature_index.min(HARD_MAX_FEATURE_INDEX);
    loop {
        let line_no = lines.line_no() + 1;
        let Some(line) = lines.next_line()? else {
            break;
        };
        parse_line(line, line_no, opts.indexing, max_index, &mut b)?;
    }
    if b.y.is_empty() {
        return Err(ParseError {
            line: lines.line_no() + 1,
            column: 1,
            kind: ParseErrorKind::Empty,
        }
        .into());
    }
    let n_cols = b.n_cols.max(opts.min_features);
    // The arrays grew by doubling: give back the unused capacity (up to half of each) before
    // the data is kept for the whole fit (the copy happens before any cache is allocated).
    b.indptr.shrink_to_fit();
    b.indices.shrink_to_fit();
    b.values.shrink_to_fit();
    b.y.shrink_to_fit();
    let csr = CsrMatrix::new(n_cols, b.indptr, b.indices, b.values)?;
    let x = match opts.storage {
        Storage::Sparse => Features::Sparse(csr),
        Storage::Auto {
            min_density,
            max_bytes,
        } => Features::Sparse(csr).densify_if(min_density, max_bytes),
    };
    Ok(Dataset::new(x, b.y, None)?)
}

/// Reads a LIBSVM/svmlight data set from memory; gzip-compressed bytes are detected and decompressed.
///
/// # Errors
/// As [`read_libsvm`]; corrupt gzip data gives [`IoError::Io`].
pub fn read_libsvm_bytes(bytes: &[u8], opts: &ReadOptions) -> Result<Dataset, IoError> {
    if bytes.starts_with(&[0x1f, 0x8b]) {
        read_libsvm(maybe_gunzip(bytes)?, opts)
    } else {
        read_libsvm(bytes, opts)
    }
}

/// Reads a LIBSVM/svmlight file; `"-"` is standard input. Gzip input is detected by its magic
/// bytes (not by the file name) and decompressed.
///
/// # Errors
/// As [`read_libsvm`]; [`IoError::Io`] when the file cannot be opened or read.
pub fn read_libsvm_path(path: impl AsRef<Path>, opts: &ReadOptions) -> Result<Dataset, IoError> {
    read_libsvm(open_input(path.as_ref())?, opts)
}

fn perr(line_b: &[u8], line: usize, off: usize, kind: ParseErrorKind) -> ParseError {
    ParseError {
        line,
        column: char_column(line_b, off),
        kind,
    }
}

/// Next whitespace-separated token at or after `pos`: (start, end).
#[inline]
fn next_token(line: &[u8], mut pos: usize) -> Option<(usize, usize)> {
    while pos < line.len() && is_sep(line[pos]) {
        pos += 1;
    }
    if pos >= line.len() {
        return None;
    }
    let start = pos;
    while pos < line.len() && !is_sep(line[pos]) {
        pos += 1;
    }
    Some((start, pos))
}

/// Parses decimal digits into a u64, `Err(true)` on overflow, `Err(false)` when not all digits.
#[inline]
fn parse_index(tok: &[u8]) -> Result<u64, bool> {
    if tok.is_empty() {
        return Err(false);
    }
    let mut v: u64 = 0;
    for &c in tok {
        if !c.is_ascii_digit() {
            return Err(false);
        }
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(c - b'0')))
            .ok_or(true)?;
    }
    Ok(v)
}

fn parse_line(
    full: &[u8],
    line_no: usize,
    indexing: Indexing,
    max_index: u64,
    b: &mut Builder,
) -> Result<(), ParseError> {
    let line = match full.iter().position(|&c| c == b'#') {
        Some(p) => &full[..p],
        None => full,
    };
    let Some((ls, le)) = next_token(line, 0) else {
        return Ok(()); // blank or comment-only line
    };
    let label_tok = &line[ls..le];
    let label = parse_f64(label_tok).ok_or_else(|| {
        perr(
            full,
            line_no,
            ls,
            ParseErrorKind::Expected {
                expected: "a label (a number)",
                found: snippet(label_tok),
            },
        )
    })?;
    if !label.is_finite() {
        return Err(perr(
            full,
            line_no,
            ls,
            ParseErrorKind::NonFinite { what: "label" },
        ));
    }
    // On an error the whole read fails and the builder is dropped, so a half-added row is harmless.
    let mut prev: Option<u64> = None;
    let mut pos = le;
    let mut first = true;
    while let Some((ts, te)) = next_token(line, pos) {
        pos = te;
        let tok = &line[ts..te];
        if first && tok.starts_with(b"qid:") {
            first = false;
            if parse_index(&tok[4..]).is_err() {
                return Err(perr(
                    full,
                    line_no,
                    ts + 4,
                    ParseErrorKind::Expected {
                        expected: "a query id (digits) after 'qid:'",
                        found: snippet(&tok[4..]),
                    },
                ));
            }
            continue;
        }
        first = false;
        let Some(colon) = tok.iter().position(|&c| c == b':') else {
            return Err(perr(
                full,
                line_no,
                ts,
                ParseErrorKind::Expected {
                    expected: "index:value",
                    found: snippet(tok),
                },
            ));
        };
        let index = match parse_index(&tok[..colon]) {
            Ok(i) if i <= max_index => i,
            Ok(_) | Err(true) => {
                return Err(perr(
                    full,
                    line_no,
                    ts,
                    ParseErrorKind::Limit {
                        what: "feature index",
                        limit: max_index,
                    },
                ))
            }
            Err(false) => {
                return Err(perr(
                    full,
                    line_no,
                    ts,
                    ParseErrorKind::Expected {
                        expected: "a feature index (digits) before ':'",
                        found: snippet(tok),
                    },
                ))
            }
        };
        let min = match indexing {
            Indexing::OneBased => 1,
            Indexing::Precomputed => 0,
        };
        if index < min {
            return Err(perr(
                full,
                line_no,
                ts,
                ParseErrorKind::IndexTooSmall { index, min },
            ));
        }
        if let Some(p) = prev {
            if index <= p {
                return Err(perr(
                    full,
                    line_no,
                    ts,
                    ParseErrorKind::NonIncreasingIndex { index, previous: p },
                ));
            }
        }
        prev = Some(index);
        let vtok = &tok[colon + 1..];
        let value = parse_f64(vtok).ok_or_else(|| {
            perr(
                full,
                line_no,
                ts + colon + 1,
                ParseErrorKind::Expected {
                    expected: "a feature value (a number) after ':'",
                    found: snippet(vtok),
                },
            )
        })?;
        if !value.is_finite() {
            return Err(perr(
                full,
                line_no,
                ts + colon + 1,
                ParseErrorKind::NonFinite {
                    what: "feature value",
                },
            ));
        }
        // index <= HARD_MAX_FEATURE_INDEX = u32::MAX, so the column fits in u32.
        let col = (index - min) as u32;
        b.n_cols = b.n_cols.max(col as usize + 1);
        if value != 0.0 {
            b.indices.push(col);
            b.values.push(value);
        }
    }
    b.y.push(label);
    b.indptr.push(b.indices.len());
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Writer.

/// How the writer prints numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FloatFormat {
    /// Shortest text that parses back to the same `f64` (Rust's `{}`, or `{:e}` for magnitudes
    /// below 1e-5 or at least 1e16). Integral values print without a fraction: `1`, `-1`, `3`.
    #[default]
    Shortest,
    /// C's `printf("%.Ng")` with N significant digits (N = 0 acts as 1), e.g. N = 6 is svm-scale's
    /// `%g` and N = 17 always round-trips.
    Significant(u8),
}

/// Options of the LIBSVM writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WriteOptions {
    /// Index convention: with [`Indexing::OneBased`] column `c` is written as index `c + 1`, with
    /// [`Indexing::Precomputed`] as index `c`.
    pub indexing: Indexing,
    /// Number format for labels and values.
    pub float: FloatFormat,
}

/// Writes a data set in LIBSVM format with [`WriteOptions::default`]: 1-based indices, shortest
/// round-trip numbers (labels like `1` and `-1`, no `+`), zero entries left out.
///
/// When no row has a non-zero in the last column, the first row carries an explicit `n:0` entry
/// for it so that the number of features survives a round trip. Weights are not written (the
/// format has no place for them).
///
/// # Errors
/// [`IoError::Io`] when writing fails; [`IoError::Data`] ([`DataError::NonFinite`]) when a label
/// or value is NaN or infinite (it could not be read back).
pub fn write_libsvm<W: Write>(w: W, ds: &Dataset) -> Result<(), IoError> {
    write_libsvm_with(w, ds, &WriteOptions::default())
}

/// Writes a data set in LIBSVM format with the given options (see [`write_libsvm`]).
///
/// # Errors
/// As [`write_libsvm`].
pub fn write_libsvm_with<W: Write>(w: W, ds: &Dataset, opts: &WriteOptions) -> Result<(), IoError> {
    let mut out = std::io::BufWriter::with_capacity(1 << 16, w);
    let n_cols = ds.x.n_cols();
    let base: usize = match opts.indexing {
        Indexing::OneBased => 1,
        Indexing::Precomputed => 0,
    };
    let last_present = n_cols == 0
        || (0..ds.len()).any(|i| match ds.x.row(i) {
            crate::data::Row::Dense(v) => v[n_cols - 1] != 0.0,
            crate::data::Row::Sparse { indices, values } => {
                indices.last() == Some(&((n_cols - 1) as u32))
                    && values.last().is_some_and(|&v| v != 0.0)
            }
        });
    let mut s = String::with_capacity(256);
    for i in 0..ds.len() {
        s.clear();
        let label = ds.y[i];
        if !label.is_finite() {
            return Err(DataError::NonFinite {
                what: "label",
                row: i,
            }
            .into());
        }
        fmt_float(&mut s, label, opts.float);
        let emit = |s: &mut String, c: usize, v: f64| -> Result<(), IoError> {
            if !v.is_finite() {
                return Err(DataError::NonFinite {
                    what: "feature",
                    row: i,
                }
                .into());
            }
            if v != 0.0 {
                let _ = write!(s, " {}:", c + base);
                fmt_float(s, v, opts.float);
            }
            Ok(())
        };
        match ds.x.row(i) {
            crate::data::Row::Dense(v) => {
                for (c, &x) in v.iter().enumerate() {
                    emit(&mut s, c, x)?;
                }
            }
            crate::data::Row::Sparse { indices, values } => {
                for (&c, &x) in indices.iter().zip(values) {
                    emit(&mut s, c as usize, x)?;
                }
            }
        }
        if i == 0 && !last_present {
            let _ = write!(s, " {}:0", n_cols - 1 + base);
        }
        s.push('\n');
        out.write_all(s.as_bytes())?;
    }
    out.flush()?;
    Ok(())
}

/// Appends `v` to `s` in the requested format.
pub(crate) fn fmt_float(s: &mut String, v: f64, f: FloatFormat) {
    match f {
        FloatFormat::Shortest => {
            let a = v.abs();
            if a != 0.0 && a.is_finite() && !(1e-5..1e16).contains(&a) {
                let _ = write!(s, "{v:e}");
            } else {
                let _ = write!(s, "{v}");
            }
        }
        FloatFormat::Significant(p) => fmt_g(s, v, usize::from(p.max(1))),
    }
}

/// C's `%.{p}g` (p >= 1): `p` significant digits, trailing zeros removed, exponent form when
/// the decimal exponent is below -4 or at least `p`, exponent with a sign and at least two digits.
pub(crate) fn fmt_g(s: &mut String, v: f64, p: usize) {
    if !v.is_finite() {
        s.push_str(if v.is_nan() {
            "nan"
        } else if v > 0.0 {
            "inf"
        } else {
            "-inf"
        });
        return;
    }
    if v == 0.0 {
        s.push_str(if v.is_sign_negative() { "-0" } else { "0" });
        return;
    }
    // Rust's `{:.*e}` rounds the exact binary value correctly, as glibc's printf does.
    let e_form = format!("{:.*e}", p - 1, v);
    let (mant, exp) = e_form.split_once('e').unwrap_or((&e_form, "0"));
    let x: i64 = exp.parse().unwrap_or(0);
    if x < -4 || x >= p as i64 {
        s.push_str(trim_zeros(mant));
        s.push('e');
        s.push(if x < 0 { '-' } else { '+' });
        let _ = write!(s, "{:02}", x.unsigned_abs());
    } else {
        let prec = (p as i64 - 1 - x) as usize;
        let fixed = format!("{v:.prec$}");
        s.push_str(trim_zeros(&fixed));
    }
}

fn trim_zeros(t: &str) -> &str {
    if t.contains('.') {
        t.trim_end_matches('0').trim_end_matches('.')
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(v: f64, p: usize) -> String {
        let mut s = String::new();
        fmt_g(&mut s, v, p);
        s
    }

    #[test]
    fn printf_g_matches_c() {
        // Expected strings are what C's printf prints for these calls.
        assert_eq!(g(0.0001, 6), "0.0001");
        assert_eq!(g(0.00001, 6), "1e-05");
        assert_eq!(g(123456.0, 6), "123456");
        assert_eq!(g(1234567.0, 6), "1.23457e+06");
        assert_eq!(g(-0.5, 6), "-0.5");
        assert_eq!(g(1.0, 16), "1");
        assert_eq!(g(0.1, 17), "0.10000000000000001");
        assert_eq!(g(0.708333, 6), "0.708333");
        assert_eq!(g(1e300, 16), "1e+300");
        assert_eq!(g(2.5e-310, 3), "2.5e-310");
        assert_eq!(g(99.99999, 6), "100");
        assert_eq!(g(999999.5, 6), "1e+06");
    }

    #[test]
    fn shortest_round_trips() {
        for &v in &[
            1.0,
            -1.0,
            0.1,
            1e-7,
            -3.5e20,
            f64::MIN_POSITIVE,
            5e-324,
            f64::MAX,
            123.456,
        ] {
            let mut s = String::new();
            fmt_float(&mut s, v, FloatFormat::Shortest);
            assert_eq!(s.parse::<f64>().unwrap(), v, "{s}");
        }
        let mut s = String::new();
        fmt_float(&mut s, 1.0, FloatFormat::Shortest);
        assert_eq!(s, "1");
    }

    #[test]
    fn fast_decimal_path_agrees_with_std() {
        for t in [
            "0",
            "-0",
            "+1",
            "1.",
            ".5",
            "-.5",
            "0.708333",
            "-0.320755",
            "9007199254740992",
            "9007199254740993",
            "0.1",
            "123456789.123456",
            "0.0000000000000000000001",
            "00000000000000000000000001",
            "1.2345678901234567",
            ".",
            "-",
            "+",
            "1..2",
            "1-2",
        ] {
            let fast = parse_simple_decimal(t.as_bytes());
            let std = t.parse::<f64>().ok();
            if let Some(v) = fast {
                assert_eq!(Some(v.to_bits()), std.map(f64::to_bits), "{t}");
            }
            assert_eq!(
                parse_f64(t.as_bytes()).map(f64::to_bits),
                std.map(f64::to_bits),
                "{t}"
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn parse_f64_is_bitwise_std(t in "[+-]?[0-9]{0,22}(\\.[0-9]{0,24})?([eE][+-]?[0-9]{1,3})?") {
            let std = t.parse::<f64>().ok().map(f64::to_bits);
            proptest::prop_assert_eq!(parse_f64(t.as_bytes()).map(f64::to_bits), std);
        }

        #[test]
        fn parse_f64_of_written_values(bits in proptest::prelude::any::<u64>()) {
            let v = f64::from_bits(bits);
            let t = format!("{v}");
            proptest::prop_assert_eq!(parse_f64(t.as_bytes()).map(f64::to_bits), t.parse::<f64>().ok().map(f64::to_bits));
        }
    }

    #[test]
    fn line_reader_limit_and_crlf() {
        let mut r = LineReader::new(&b"abc\r\nabcd\n"[..], 3);
        assert_eq!(r.next_line().unwrap(), Some(&b"abc"[..]));
        let e = r.next_line().unwrap_err();
        match e {
            IoError::Parse(p) => {
                assert_eq!((p.line, p.column), (2, 4));
                assert!(matches!(p.kind, ParseErrorKind::Limit { limit: 3, .. }));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn char_column_counts_characters() {
        let line = "é 1:x".as_bytes();
        assert_eq!(char_column(line, 4), 4);
    }
}
