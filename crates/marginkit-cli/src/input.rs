//! Reading data and model files with the file name in every error.

use std::path::Path;

use marginkit::data::csv::{read_csv_path, CsvOptions, Delimiter, LabelColumn};
use marginkit::data::libsvm_fmt::{read_libsvm_path, ReadOptions};
use marginkit::{Dataset, IoError};

use crate::args::InputArgs;
use crate::CliError;

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
    data.map_err(|e| io_context(path, e))
}
