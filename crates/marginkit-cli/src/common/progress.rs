//! Progress on a terminal: a spinner on stderr fed by the solver's observer callbacks. Silent
//! with `-q`, with `--json`, or when stderr is not a terminal.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use marginkit::solver::{Control, IterStats, Observer};

/// A solver observer that shows a spinner with the iteration count and the current violation.
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A spinner when `enabled` and stderr is a terminal; otherwise nothing is drawn.
    pub fn new(enabled: bool) -> Self {
        let bar = (enabled && std::io::stderr().is_terminal()).then(|| {
            let b = ProgressBar::new_spinner();
            b.set_style(
                ProgressStyle::with_template("{spinner} {elapsed} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            b.enable_steady_tick(Duration::from_millis(120));
            b
        });
        Self { bar }
    }
    /// Removes the spinner.
    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

impl Observer for Progress {
    fn on_iter(&mut self, s: &IterStats) -> Control {
        if let Some(b) = &self.bar {
            b.set_message(format!(
                "iter {} violation {:.3e} active {}",
                s.iterations, s.max_violation, s.active
            ));
        }
        Control::Continue
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
