//! Output paths: defaults, overlap with inputs, and the check that every output can be written before the work starts.

use std::io::Write;
use std::path::{Path, PathBuf};

use marginkit::data::{same_file, write_output};

use crate::common::{CliError, CliResult};

/// Default model path: the training file's name + ".model" in the current directory.
pub fn default_model_path(train: &Path) -> PathBuf {
    let name = train
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "stdin".into());
    let name = if name == "-" {
        "stdin".to_string()
    } else {
        name
    };
    PathBuf::from(format!("{name}.model"))
}

/// Refuses a state file that is the model file (the state would overwrite the model, or the
/// model the state), compared by [`same_file`].
pub fn refuse_same_file(state: &Path, model: &Path) -> CliResult {
    if same_file(state, model) {
        return Err(CliError(format!(
            "--state-file {} is the model file: the state would overwrite the model; give another path",
            state.display()
        )));
    }
    Ok(())
}

/// Refuses an output file that is one of the command's input files (`train data data`,
/// `predict t m t`, `scale -o data data`): writing it would replace the input the user still
/// has. Compared by [`same_file`].
pub fn refuse_overwriting_input(output: &Path, inputs: &[(&Path, &str)]) -> CliResult {
    for (input, what) in inputs {
        if same_file(input, output) {
            return Err(CliError(format!(
                "{} is the {what}: writing it would overwrite that input; give another output path",
                output.display()
            )));
        }
    }
    Ok(())
}

/// True for the output name `-` (standard output).
pub fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Writes the predictions to `path` atomically, or to standard output for `-`; errors name the
/// file.
pub fn write_predictions<F>(path: &Path, write: F) -> CliResult
where
    F: FnOnce(&mut dyn Write) -> std::io::Result<()>,
{
    let result = if is_stdout(path) {
        let stdout = std::io::stdout();
        let mut w = std::io::BufWriter::new(stdout.lock());
        write(&mut w).and_then(|()| w.flush())
    } else {
        write_output(path, |w| write(w))
    };
    result.map_err(|e| CliError(format!("{}: {e}", path.display())))
}

/// Checks, before any work starts, that every output the command will write can be written:
/// each `(path, what)` names the output and the flag or argument it came from. The standard
/// output (`-`) needs no check.
pub fn check_outputs(outputs: &[(&Path, &str)]) -> CliResult {
    for (path, what) in outputs {
        if is_stdout(path) {
            continue;
        }
        marginkit::data::check_output(path).map_err(|e| {
            CliError(format!(
                "{} ({what}) cannot be written: {e}; nothing was done",
                path.display()
            ))
        })?;
    }
    Ok(())
}
