//! Progress of long runs, on stderr, for every command: a live line on a terminal; elsewhere (a
//! pipe, a scheduler's log file, `--json` runs) a plain line with the elapsed time at most once
//! every [`LINE_EVERY`] (or every `MARGINKIT_PROGRESS_SECONDS` seconds when that variable is
//! set); nothing with `-q`. Commands feed it messages (`set`), points of a known count (`inc`),
//! or the solver's iteration reports (it is a [`Observer`]).

use std::io::IsTerminal;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use marginkit::solver::{IterStats, Observer};

/// The least time between two plain progress lines, unless `MARGINKIT_PROGRESS_SECONDS` says
/// otherwise.
pub const LINE_EVERY: Duration = Duration::from_secs(10);

/// The interval of plain lines: `MARGINKIT_PROGRESS_SECONDS` when it holds a finite number
/// >= 0, else [`LINE_EVERY`].
fn line_every() -> Duration {
    std::env::var("MARGINKIT_PROGRESS_SECONDS")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .unwrap_or(LINE_EVERY)
}

enum Mode {
    Off,
    Bar(ProgressBar),
    Lines {
        last: Option<Instant>,
        every: Duration,
    },
}

/// Progress of one command; see the module docs.
pub struct Progress {
    mode: Mode,
    what: String,
    start: Instant,
    pos: u64,
    len: Option<u64>,
}

impl Progress {
    /// Progress of `what` (e.g. "train"), silent when `quiet`.
    pub fn new(quiet: bool, what: &str) -> Self {
        Self::build(quiet, what, None)
    }

    /// Progress over `len` steps (a bar on a terminal; "k/len" in plain lines).
    pub fn with_len(quiet: bool, what: &str, len: Option<usize>) -> Self {
        Self::build(quiet, what, len.map(|n| n as u64))
    }

    fn build(quiet: bool, what: &str, len: Option<u64>) -> Self {
        let start = Instant::now();
        let mode = if quiet {
            Mode::Off
        } else if std::io::stderr().is_terminal() {
            let (b, template) = match len {
                Some(n) => (
                    ProgressBar::new(n),
                    "{spinner} {elapsed} [{bar:30}] {pos}/{len} {msg}",
                ),
                None => (ProgressBar::new_spinner(), "{spinner} {elapsed} {msg}"),
            };
            b.set_style(
                ProgressStyle::with_template(template)
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            b.enable_steady_tick(Duration::from_millis(120));
            Mode::Bar(b)
        } else {
            Mode::Lines {
                last: None,
                every: line_every(),
            }
        };
        Self {
            mode,
            what: what.to_string(),
            start,
            pos: 0,
            len,
        }
    }

    /// The current state, shown at once on a terminal and in the next due plain line.
    pub fn set(&mut self, msg: &str) {
        match &mut self.mode {
            Mode::Off => {}
            Mode::Bar(b) => b.set_message(msg.to_string()),
            Mode::Lines { last, every } => {
                let now = Instant::now();
                let since = now.duration_since(last.unwrap_or(self.start));
                if since >= *every {
                    *last = Some(now);
                    let step = match self.len {
                        Some(n) => format!(" {}/{n}", self.pos),
                        None => String::new(),
                    };
                    eprintln!(
                        "marginkit: [{:.0} s] {}{step}: {msg}",
                        now.duration_since(self.start).as_secs_f64(),
                        self.what
                    );
                }
            }
        }
    }

    /// One step of `len` done, with its message.
    pub fn inc(&mut self, msg: &str) {
        self.pos += 1;
        if let Mode::Bar(b) = &self.mode {
            b.inc(1);
        }
        self.set(msg);
    }

    /// Runs `f` (which prints to the terminal) with the live line hidden, so that the two do not
    /// mix.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.mode {
            Mode::Bar(b) => b.suspend(f),
            _ => f(),
        }
    }

    /// Removes the live line.
    pub fn finish(&self) {
        if let Mode::Bar(b) = &self.mode {
            b.finish_and_clear();
        }
    }
}

impl Observer for Progress {
    fn on_iter(&mut self, s: &IterStats) -> ControlFlow<()> {
        self.set(&format!(
            "iter {} violation {:.3e} active {}",
            s.iterations, s.max_violation, s.active
        ));
        ControlFlow::Continue(())
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
