//! `marginkit scale`: svm-scale's flags (-l -u -y -s -r) and parameter file format.
use std::path::PathBuf;

use clap::Args;

use std::io::Write;

use marginkit::data::libsvm_fmt::{read_libsvm_path, write_libsvm, ReadOptions};
use marginkit::data::scale::ScaleParams;
use marginkit::data::write_output;

use crate::common::input::io_context;
use crate::common::{CliError, Exit, Outcome};

pub fn run(a: ScaleArgs) -> Exit {
    let mut inputs = vec![(a.data_file.as_path(), "data file")];
    if let Some(r) = &a.restore {
        inputs.push((r.as_path(), "-r parameter file"));
    }
    for out in [&a.save, &a.output].into_iter().flatten() {
        crate::common::output::refuse_overwriting_input(out, &inputs)?;
    }
    if let (Some(s), Some(o)) = (&a.save, &a.output) {
        crate::common::output::refuse_overwriting_input(o, &[(s.as_path(), "-s parameter file")])?;
    }
    let mut outputs: Vec<(&std::path::Path, &str)> = Vec::new();
    outputs.extend(a.save.as_deref().map(|p| (p, "-s")));
    outputs.extend(a.output.as_deref().map(|p| (p, "-o")));
    crate::common::output::check_outputs(&outputs)?;
    let data = read_libsvm_path(&a.data_file, &ReadOptions::default())
        .map_err(|e| io_context(&a.data_file, e))?;
    let params = if let Some(r) = &a.restore {
        let f = std::fs::File::open(r).map_err(|e| CliError(format!("{}: {e}", r.display())))?;
        ScaleParams::read(std::io::BufReader::new(f)).map_err(|e| io_context(r, e))?
    } else {
        let y = match a.y_range.as_deref() {
            Some([lo, hi]) => Some((*lo, *hi)),
            _ => None,
        };
        ScaleParams::fit(&data, a.lower, a.upper, y)?
    };
    if let Some(s) = &a.save {
        write_output(s, |w| {
            // Shortest round-trip numbers (svm-scale writes %.16g, which can lose the last bit):
            // restoring this file reproduces the scaled output exactly, and svm-scale reads it.
            params
                .write_exact(&mut *w)
                .map_err(|e| std::io::Error::other(e.to_string()))
        })
        .map_err(|e| CliError(format!("{}: {e}", s.display())))?;
    }
    let scaled = params
        .apply(&data)
        .map_err(|e| CliError(format!("{}: {e}", a.data_file.display())))?;
    // As svm-scale: a lower bound other than 0 maps every zero to a non-zero value.
    let (before, after) = (data.x.count_nonzero(), scaled.x.count_nonzero());
    if after > before {
        eprintln!(
            "marginkit: warning: scaling made the data denser: {before} non-zero values became {after}; \
             if the features are non-negative and sparse, use -l 0 rather than the default -l -1"
        );
    }
    let to_io = |e: marginkit::IoError| std::io::Error::other(e.to_string());
    match &a.output {
        Some(out) => write_output(out, |w| write_libsvm(&mut *w, &scaled).map_err(to_io))
            .map_err(|e| CliError(format!("{}: {e}", out.display())))?,
        None => {
            let stdout = std::io::stdout();
            let mut lock = std::io::BufWriter::new(stdout.lock());
            write_libsvm(&mut lock, &scaled)?;
            lock.flush()?;
        }
    }
    Ok(Outcome::Done)
}

/// `marginkit scale`.
#[derive(Debug, Args)]
pub struct ScaleArgs {
    /// Lower bound of the scaled features.
    #[arg(short = 'l', default_value_t = -1.0, allow_negative_numbers = true)]
    pub lower: f64,
    /// Upper bound of the scaled features.
    #[arg(short = 'u', default_value_t = 1.0, allow_negative_numbers = true)]
    pub upper: f64,
    /// Scale the labels too, to [Y_LOWER, Y_UPPER].
    #[arg(short = 'y', num_args = 2, value_names = ["Y_LOWER", "Y_UPPER"], allow_negative_numbers = true)]
    pub y_range: Option<Vec<f64>>,
    /// Save the scaling parameters to this file (svm-scale's format, with exact numbers: `-r` on
    /// the same data reproduces the output byte for byte).
    #[arg(short = 's')]
    pub save: Option<PathBuf>,
    /// Restore the scaling parameters from this file (-l, -u and -y are then taken from it).
    #[arg(short = 'r', conflicts_with = "save")]
    pub restore: Option<PathBuf>,
    /// Write the scaled data here instead of stdout.
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    /// Data to scale (`.gz` or `-` for stdin).
    pub data_file: PathBuf,
}
