//! CSV reader: one sample per line, numeric fields, one of them the label; dense features.
//!
//! Rules:
//! - The delimiter is `,` by default, or `;` or tab ([`Delimiter`]).
//! - Blank lines are skipped, `\r\n` line ends are accepted, and a UTF-8 byte-order mark at the
//!   start of the input is ignored. Spaces around a field are ignored.
//! - Quoted fields (minimal RFC 4180): a field may be enclosed in `"`; inside, `""` stands for one
//!   `"`. A quoted field cannot span lines. Quotes matter mainly for header names; a quoted number
//!   is read as the number.
//! - Header: [`Header::Auto`] (the default) treats the first non-blank line as a header when any
//!   of its fields is not a number; [`Header::Present`] / [`Header::Absent`] force the choice.
//! - Label: [`LabelColumn::First`], [`LabelColumn::Last`] (the default), [`LabelColumn::Index`]
//!   (0-based) or [`LabelColumn::Name`] (needs a header). All other fields are the features, in
//!   order.
//! - Every line must have as many fields as the first one (header or data); every field must be a
//!   finite number (empty fields are errors: there are no missing values).
//!
//! Errors carry the 1-based line and the 1-based column of the field's first character; the
//! `found` text of [`ParseErrorKind::Expected`] shows the field.

use std::io::BufRead;
use std::path::Path;

use crate::data::libsvm_fmt::{char_column, open_input, parse_f64, snippet, LineReader};
use crate::data::{Dataset, DenseMatrix, Features};
use crate::error::{IoError, ParseError, ParseErrorKind};

pub use crate::data::libsvm_fmt::DEFAULT_MAX_LINE_LEN;

/// Default largest number of fields on one line (2^20).
pub const DEFAULT_MAX_FIELDS: usize = 1 << 20;

/// Field separator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Delimiter {
    /// `,`
    #[default]
    Comma,
    /// `;`
    Semicolon,
    /// Tab.
    Tab,
}

impl Delimiter {
    fn byte(self) -> u8 {
        match self {
            Delimiter::Comma => b',',
            Delimiter::Semicolon => b';',
            Delimiter::Tab => b'\t',
        }
    }
}

/// Whether the first non-blank line is a header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Header {
    /// A header if any field of the first line is not a number.
    #[default]
    Auto,
    /// The first non-blank line is a header.
    Present,
    /// There is no header.
    Absent,
}

/// Which field holds the label.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum LabelColumn {
    /// The first field.
    First,
    /// The last field.
    #[default]
    Last,
    /// Field `i`, 0-based.
    Index(usize),
    /// The field whose header name is this (exact match after unquoting and trimming spaces).
    Name(String),
}

/// Options of the CSV reader. `CsvOptions::default()`: comma, header auto-detected, label last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvOptions {
    /// Field separator (default comma).
    pub delimiter: Delimiter,
    /// Header handling (default [`Header::Auto`]).
    pub header: Header,
    /// Label field (default [`LabelColumn::Last`]).
    pub label: LabelColumn,
    /// Longest accepted line in bytes, without the `\n` (default [`DEFAULT_MAX_LINE_LEN`]).
    pub max_line_len: usize,
    /// Largest number of fields on a line (default [`DEFAULT_MAX_FIELDS`]).
    pub max_fields: usize,
}

impl Default for CsvOptions {
    fn default() -> Self {
        Self {
            delimiter: Delimiter::Comma,
            header: Header::Auto,
            label: LabelColumn::Last,
            max_line_len: DEFAULT_MAX_LINE_LEN,
            max_fields: DEFAULT_MAX_FIELDS,
        }
    }
}

/// One field of a line: byte range of its content (inside the quotes when quoted) and where the
/// field starts (for error columns).
#[derive(Debug, Clone, Copy)]
struct Field {
    start: usize,
    end: usize,
    at: usize,
    quoted: bool,
}

fn perr(line_b: &[u8], line: usize, off: usize, kind: ParseErrorKind) -> ParseError {
    ParseError {
        line,
        column: char_column(line_b, off),
        kind,
    }
}

/// Splits `line` into fields (reusing `out`).
fn split_fields(
    line: &[u8],
    line_no: usize,
    delim: u8,
    max_fields: usize,
    out: &mut Vec<Field>,
) -> Result<(), ParseError> {
    out.clear();
    let is_space = |b: u8| b == b' ' || (b == b'\t' && delim != b'\t');
    let mut pos = 0;
    loop {
        if out.len() == max_fields {
            return Err(perr(
                line,
                line_no,
                pos,
                ParseErrorKind::Limit {
                    what: "fields per line",
                    limit: max_fields as u64,
                },
            ));
        }
        let at = pos;
        while pos < line.len() && is_space(line[pos]) {
            pos += 1;
        }
        if pos < line.len() && line[pos] == b'"' {
            let open = pos;
            pos += 1;
            let start = pos;
            loop {
                match line[pos..].iter().position(|&c| c == b'"') {
                    None => {
                        return Err(perr(
                            line,
                            line_no,
                            open,
                            ParseErrorKind::Expected {
                                expected: "a closing '\"' on the same line",
                                found: snippet(&line[open..]),
                            },
                        ))
                    }
                    Some(q) => {
                        pos += q;
                        if line.get(pos + 1) == Some(&b'"') {
                            pos += 2; // escaped quote
                        } else {
                            break;
                        }
                    }
                }
            }
            let end = pos;
            pos += 1; // closing quote
            while pos < line.len() && is_space(line[pos]) {
                pos += 1;
            }
            if pos < line.len() && line[pos] != delim {
                return Err(perr(
                    line,
                    line_no,
                    pos,
                    ParseErrorKind::Expected {
                        expected: "a delimiter after a closing '\"'",
                        found: snippet(&line[pos..]),
                    },
                ));
            }
            out.push(Field {
                start,
                end,
                at,
                quoted: true,
            });
        } else {
            let start = pos;
            while pos < line.len() && line[pos] != delim {
                pos += 1;
            }
            let mut end = pos;
            while end > start && is_space(line[end - 1]) {
                end -= 1;
            }
            out.push(Field {
                start,
                end,
                at,
                quoted: false,
            });
        }
        if pos >= line.len() {
            return Ok(());
        }
        pos += 1; // delimiter
    }
}

fn field_text(line: &[u8], f: &Field) -> String {
    let raw = String::from_utf8_lossy(&line[f.start..f.end]);
    if f.quoted {
        raw.replace("\"\"", "\"")
    } else {
        raw.into_owned()
    }
}

/// Reads a CSV data set (dense features) from a buffered reader.
///
/// # Errors
/// [`IoError::Parse`] with line and column: [`ParseErrorKind::Expected`] for a field that is not a
/// number, an unterminated quote, or a label name that no header field has (or a missing header);
/// [`ParseErrorKind::NonFinite`] for NaN/infinite fields; [`ParseErrorKind::FieldCount`] when a
/// line's field count differs from the first line's, or when [`LabelColumn::Index`] is beyond it
/// (then `expected` is the index + 1); [`ParseErrorKind::Limit`] for exceeded limits;
/// [`ParseErrorKind::Empty`] when there is no data line. [`IoError::Io`] when reading fails.
pub fn read_csv<R: BufRead>(r: R, opts: &CsvOptions) -> Result<Dataset, IoError> {
    let delim = opts.delimiter.byte();
    let mut lines = LineReader::new(r, opts.max_line_len);
    let mut fields: Vec<Field> = Vec::new();
    let mut n_fields: Option<usize> = None;
    let mut label_at = 0usize;
    let mut y: Vec<f64> = Vec::new();
    let mut values: Vec<f64> = Vec::new();
    let mut first = true;
    loop {
        let line_no = lines.line_no() + 1;
        let Some(mut line) = lines.next_line()? else {
            break;
        };
        if first && line.starts_with(b"\xEF\xBB\xBF") {
            line = &line[3..];
        }
        if line.iter().all(|&b| b == b' ' || b == b'\t') {
            continue;
        }
        split_fields(line, line_no, delim, opts.max_fields, &mut fields)?;
        if first {
            first = false;
            let is_header = match opts.header {
                Header::Present => true,
                Header::Absent => false,
                Header::Auto => fields
                    .iter()
                    .any(|f| parse_f64(&line[f.start..f.end]).is_none()),
            };
            let n = fields.len();
            n_fields = Some(n);
            label_at = match &opts.label {
                LabelColumn::First => 0,
                LabelColumn::Last => n - 1,
                LabelColumn::Index(i) if *i < n => *i,
                LabelColumn::Index(i) => {
                    return Err(perr(
                        line,
                        line_no,
                        line.len(),
                        ParseErrorKind::FieldCount {
                            expected: i.saturating_add(1),
                            found: n,
                        },
                    )
                    .into())
                }
                LabelColumn::Name(name) => {
                    let found = if is_header {
                        fields
                            .iter()
                            .position(|f| field_text(line, f).trim() == name)
                    } else {
                        None
                    };
                    match found {
                        Some(i) => i,
                        None => {
                            return Err(perr(
                                line,
                                line_no,
                                0,
                                ParseErrorKind::Expected {
                                    expected: if is_header {
                                        "a header field named like the label column"
                                    } else {
                                        "a header line (the label column is given by name)"
                                    },
                                    found: snippet(name.as_bytes()),
                                },
                            )
                            .into())
                        }
                    }
                }
            };
            if is_header {
                continue;
            }
        }
        let n = n_fields.unwrap_or(fields.len());
        if fields.len() != n {
            let off = fields.get(n).map_or(line.len(), |f| f.at);
            return Err(perr(
                line,
                line_no,
                off,
                ParseErrorKind::FieldCount {
                    expected: n,
                    found: fields.len(),
                },
            )
            .into());
        }
        for (k, f) in fields.iter().enumerate() {
            let tok = &line[f.start..f.end];
            let v = parse_f64(tok).ok_or_else(|| {
                perr(
                    line,
                    line_no,
                    f.at,
                    ParseErrorKind::Expected {
                        expected: if k == label_at {
                            "a label (a number)"
                        } else {
                            "a feature value (a number)"
                        },
                        found: snippet(tok),
                    },
                )
            })?;
            if !v.is_finite() {
                return Err(perr(
                    line,
                    line_no,
                    f.at,
                    ParseErrorKind::NonFinite {
                        what: if k == label_at {
                            "label"
                        } else {
                            "feature value"
                        },
                    },
                )
                .into());
            }
            if k == label_at {
                y.push(v);
            } else {
                values.push(v);
            }
        }
    }
    if y.is_empty() {
        return Err(ParseError {
            line: lines.line_no() + 1,
            column: 1,
            kind: ParseErrorKind::Empty,
        }
        .into());
    }
    let n_cols = n_fields.unwrap_or(1) - 1;
    let x = DenseMatrix::new(y.len(), n_cols, values)?;
    Ok(Dataset::new(Features::Dense(x), y, None)?)
}

/// Reads a CSV data set from memory; gzip-compressed bytes are detected and decompressed.
///
/// # Errors
/// As [`read_csv`]; corrupt gzip data gives [`IoError::Io`].
pub fn read_csv_bytes(bytes: &[u8], opts: &CsvOptions) -> Result<Dataset, IoError> {
    if bytes.starts_with(&[0x1f, 0x8b]) {
        read_csv(crate::data::libsvm_fmt::maybe_gunzip(bytes)?, opts)
    } else {
        read_csv(bytes, opts)
    }
}

/// Reads a CSV file; `"-"` is standard input; gzip input is detected by its magic bytes.
///
/// # Errors
/// As [`read_csv`]; [`IoError::Io`] when the file cannot be opened or read.
pub fn read_csv_path(path: impl AsRef<Path>, opts: &CsvOptions) -> Result<Dataset, IoError> {
    read_csv(open_input(path.as_ref())?, opts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_fields_and_escapes() {
        let mut v = Vec::new();
        let line = br#" "a ""b""" , 2 ,"3""#;
        split_fields(line, 1, b',', 10, &mut v).unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(field_text(line, &v[0]), "a \"b\"");
        assert_eq!(&line[v[1].start..v[1].end], b"2");
        assert_eq!(&line[v[2].start..v[2].end], b"3");
    }

    #[test]
    fn trailing_delimiter_makes_an_empty_field() {
        let mut v = Vec::new();
        split_fields(b"1,2,", 1, b',', 10, &mut v).unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(v[2].start, v[2].end);
    }
}
