//! `marginkit scale`: svm-scale's flags (-l -u -y -s -r) and parameter file format.

use std::io::Write;

use marginkit::data::libsvm_fmt::{read_libsvm_path, write_libsvm, ReadOptions};
use marginkit::data::scale::ScaleParams;
use marginkit::data::write_output;

use crate::args::ScaleArgs;
use crate::input::io_context;
use crate::{CliError, CliResult};

pub fn run(a: ScaleArgs) -> CliResult {
    let mut inputs = vec![(a.data_file.as_path(), "data file")];
    if let Some(r) = &a.restore {
        inputs.push((r.as_path(), "-r parameter file"));
    }
    for out in [&a.save, &a.output].into_iter().flatten() {
        crate::train::refuse_overwriting_input(out, &inputs)?;
    }
    if let (Some(s), Some(o)) = (&a.save, &a.output) {
        crate::train::refuse_overwriting_input(o, &[(s.as_path(), "-s parameter file")])?;
    }
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
    Ok(())
}
