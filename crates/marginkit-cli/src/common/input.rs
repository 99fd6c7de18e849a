//! Reading data and model files with the file name in every error.
use crate::common::CliResult;

use clap::Args;

use std::io::Read;
use std::path::Path;

use marginkit::data::csv::{read_csv_path, CsvOptions, Delimiter, LabelColumn};
use marginkit::data::libsvm_fmt::{read_libsvm_path, ReadOptions};
use marginkit::{Dataset, IoError};

use crate::common::CliError;

/// Formats a library I/O error with the file name (and line and column for syntax errors).
pub fn io_context(path: &Path, e: IoError) -> CliError {
    let p = path.display();
    match e {
        IoError::Parse(pe) => CliError(format!("{p}:{}:{}: {}", pe.line, pe.column, pe.kind)),
        IoError::Io(ioe) => CliError(format!("{p}: {ioe}")),
        other => CliError(format!("{p}: {other}")),
    }
}

/// Reads a data set as LIBSVM text (default) or CSV.
pub fn read_data(path: &Path, input: &InputArgs, precomputed: bool) -> Result<Dataset, CliError> {
    let data = if input.csv {
        let label = match input.label_column.as_str() {
            "first" => LabelColumn::First,
            "last" => LabelColumn::Last,
            s => match s.parse::<usize>() {
                Ok(i) => LabelColumn::Index(i),
                Err(_) => LabelColumn::Name(s.to_string()),
            },
        };
        let delimiter = match input.delimiter {
            ',' => Delimiter::Comma,
            ';' => Delimiter::Semicolon,
            '\t' => Delimiter::Tab,
            other => {
                return Err(CliError(format!(
                    "--delimiter '{other}': expected ',', ';' or a tab"
                )))
            }
        };
        let opts = CsvOptions {
            label,
            delimiter,
            ..CsvOptions::default()
        };
        read_csv_path(path, &opts)
    } else {
        let opts = if precomputed {
            ReadOptions::precomputed()
        } else {
            ReadOptions::default()
        };
        read_libsvm_path(path, &opts)
    };
    data.map_err(|e| {
        let parse_failed = matches!(e, IoError::Parse(_));
        let mut err = io_context(path, e);
        if parse_failed {
            if let Some(hint) = format_hint(path, input) {
                err.0.push_str("\n  hint: ");
                err.0.push_str(&hint);
            }
        }
        err
    })
}

/// A hint when a file that failed to parse looks like another format: CSV given without
/// `--csv`, or CSV with another delimiter than `--delimiter`. Judged from the first line.
fn format_hint(path: &Path, input: &InputArgs) -> Option<String> {
    use std::io::{BufRead, BufReader};
    if path.as_os_str() == "-" || path.extension().is_some_and(|e| e == "gz") {
        return None;
    }
    let mut first = String::new();
    BufReader::new(std::fs::File::open(path).ok()?)
        .take(64 * 1024)
        .read_line(&mut first)
        .ok()?;
    let count = |c: char| first.matches(c).count();
    let (commas, semis, tabs) = (count(','), count(';'), count('\t'));
    let likely = [(commas, ','), (semis, ';'), (tabs, '\t')]
        .into_iter()
        .max_by_key(|(n, _)| *n)
        .filter(|(n, _)| *n > 0)?
        .1;
    let flag = match likely {
        ',' => "--delimiter ','".to_string(),
        ';' => "--delimiter ';'".to_string(),
        _ => "--delimiter $'\\t'".to_string(),
    };
    if !input.csv {
        Some(format!(
            "the first line looks like CSV; read it with --csv{} (and --label-column if the label is not the last column)",
            if likely == ',' { String::new() } else { format!(" {flag}") }
        ))
    } else if likely != input.delimiter {
        Some(format!(
            "the first line is split by {likely:?}, not {:?}: add {flag}",
            input.delimiter
        ))
    } else {
        None
    }
}

/// Options shared by every command that reads a data file.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Input")]
pub struct InputArgs {
    /// Read the data as CSV instead of LIBSVM text.
    #[arg(long)]
    pub csv: bool,
    /// CSV label column: first, last, a 0-based index or a header name.
    #[arg(long, default_value = "last", requires = "csv")]
    pub label_column: String,
    /// CSV field delimiter.
    #[arg(long, default_value = ",", requires = "csv")]
    pub delimiter: char,
}

/// Attaches per-sample weights read from `path` (see
/// [`marginkit::svm::train::parse_sample_weights`]) to `data`.
pub fn with_weight_file(data: Dataset, path: &Path) -> CliResult<Dataset> {
    let text =
        std::fs::read_to_string(path).map_err(|e| CliError(format!("{}: {e}", path.display())))?;
    let w = marginkit::svm::train::parse_sample_weights(&text).map_err(|e| {
        CliError(format!(
            "{}:{}:{}: {}",
            path.display(),
            e.line,
            e.column,
            e.kind
        ))
    })?;
    if w.len() != data.len() {
        return Err(CliError(format!(
            "{}: {} weights for {} training samples",
            path.display(),
            w.len(),
            data.len()
        )));
    }
    let Dataset { x, y, .. } = data;
    Ok(Dataset::new(x, y, Some(w))?)
}
