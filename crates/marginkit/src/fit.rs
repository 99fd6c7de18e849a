//! The shape every method's fit takes:
//!
//! ```text
//! fit(&XValidParams, &data, &mut Control<XState>) -> Result<Fit<XModel, XReport, XState>, Error>
//! ```
//!
//! [`Control`] is what a fit is given besides its parameters and data: the observer that sees
//! its progress and may stop it (a [`Cancel`] set by Ctrl-C, a progress line), the state of
//! an earlier, stopped fit to continue from and, for a method whose fit finishes in parts (the
//! points of a path), a callback that receives each part as it is done. [`Fit`] is what it returns: the model, the report
//! (whose [`Report::status`] says how the fit ended) and, when it ended before converging, the
//! state to continue from. A method without resumable state uses `S = ()`.
//!
//! ```
//! use marginkit::fit::Control;
//! use marginkit::solver::Cancel;
//!
//! // No observer, a fresh start.
//! let mut quiet: Control = Control::default();
//! assert!(quiet.resume().is_none());
//!
//! // Stopped by a flag that a signal handler may set; continuing from a saved state.
//! let cancel = Cancel::new();
//! let saved = vec![1.0, 2.0];
//! let mut ctl: Control<'_, Vec<f64>> = Control::new(cancel.clone()).resume_from(&saved);
//! assert_eq!(ctl.resume(), Some(&saved));
//! ```
//!
//! [`Cancel`]: crate::solver::Cancel

use crate::solver::{NoObserver, Observer, Status};

/// What a fit is given besides its parameters and data: an observer, optionally the state of
/// an earlier fit to continue from and, for a fit made of parts of type `P`, a callback that
/// sees each finished part.
pub struct Control<'a, S = (), P = ()> {
    observer: Box<dyn Observer + 'a>,
    resume: Option<&'a S>,
    on_part: Option<Box<OnPart<'a, P>>>,
}

/// The callback that receives each finished part of a fit.
pub type OnPart<'a, P> = dyn FnMut(&P) + 'a;

impl<S, P> Default for Control<'_, S, P> {
    /// No observer and a fresh start.
    fn default() -> Self {
        Self {
            observer: Box::new(NoObserver),
            resume: None,
            on_part: None,
        }
    }
}

impl<'a, S, P> Control<'a, S, P> {
    /// A fresh start watched by `observer` (pass `&mut obs` to keep using it afterwards).
    pub fn new(observer: impl Observer + 'a) -> Self {
        Self {
            observer: Box::new(observer),
            resume: None,
            on_part: None,
        }
    }
    /// Calls `f` with each part of the fit as it is finished (a path's points, also those taken
    /// from the state resumed from).
    #[must_use]
    pub fn on_part(mut self, f: impl FnMut(&P) + 'a) -> Self {
        self.on_part = Some(Box::new(f));
        self
    }
    /// Hands a finished part to the callback, if there is one.
    pub fn part_done(&mut self, part: &P) {
        if let Some(f) = &mut self.on_part {
            f(part);
        }
    }
    /// Continue from `state`, the checkpoint of an earlier fit of the same method on the same
    /// data and parameters.
    #[must_use]
    pub fn resume_from(mut self, state: &'a S) -> Self {
        self.resume = Some(state);
        self
    }
    /// As [`Control::resume_from`], for a state that may be absent.
    #[must_use]
    pub fn resume_opt(mut self, state: Option<&'a S>) -> Self {
        self.resume = state;
        self
    }
    /// The state to continue from, if any.
    pub fn resume(&self) -> Option<&'a S> {
        self.resume
    }
    /// The observer, for the solvers the fit calls.
    pub fn observer(&mut self) -> &mut (dyn Observer + 'a) {
        &mut *self.observer
    }
    /// The observer and the callback for finished parts, borrowed together (a fit that runs
    /// its solvers and reports parts in one loop needs both at once).
    pub fn observer_and_parts(&mut self) -> (&mut (dyn Observer + 'a), Option<&mut OnPart<'a, P>>) {
        (&mut *self.observer, self.on_part.as_deref_mut())
    }
}

impl<S, P> std::fmt::Debug for Control<'_, S, P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Control")
            .field("resume", &self.resume.is_some())
            .field("on_part", &self.on_part.is_some())
            .finish_non_exhaustive()
    }
}

/// A method's report: at least how the fit ended.
pub trait Report {
    /// How the fit ended ([`Status::Converged`] only if every part of it converged).
    fn status(&self) -> Status;
}

/// What a fit returns.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit<M, R, S = ()> {
    /// The model (built from what was done when the fit stopped early).
    pub model: M,
    /// What the fit did and how it ended.
    pub report: R,
    /// The state to continue from (through [`Control::resume_from`]) when the fit stopped
    /// before converging; `None` otherwise.
    pub checkpoint: Option<S>,
}

impl<M, R: Report, S> Fit<M, R, S> {
    /// How the fit ended.
    pub fn status(&self) -> Status {
        self.report.status()
    }
}

/// What a cross-validation returns: the prediction for every sample from the model trained
/// without its fold, and how the folds' fits ended.
///
/// A cross-validation takes `&mut Control<(), usize>`: its observer watches every fold's fit,
/// and its part callback receives the index of each finished fold.
#[derive(Debug, Clone, PartialEq)]
pub struct CrossValidation {
    /// The held-out prediction of every sample (0 for the samples of folds not run when the
    /// observer stopped the cross-validation).
    pub predictions: Vec<f64>,
    /// The worst status over the folds' fits: [`Status::Interrupted`] when the observer
    /// stopped one (the remaining folds are not run).
    pub status: Status,
}

impl Report for CrossValidation {
    fn status(&self) -> Status {
        self.status
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::{Cancel, IterStats};

    #[test]
    fn control_passes_the_observer_and_the_state_through() {
        let cancel = Cancel::new();
        let state = 7u32;
        let mut ctl: Control<'_, u32> = Control::new(cancel.clone()).resume_from(&state);
        let stats = IterStats {
            iterations: 1,
            max_violation: 1.0,
            active: 1,
        };
        assert!(ctl.observer().on_iter(&stats).is_continue());
        cancel.cancel();
        assert!(ctl.observer().on_iter(&stats).is_break());
        assert_eq!(ctl.resume(), Some(&7));
        let none: Control<'_, u32> = Control::default().resume_opt(None);
        assert!(none.resume().is_none());
        let mut seen = Vec::new();
        let mut parts: Control<'_, (), u8> = Control::default().on_part(|p: &u8| seen.push(*p));
        parts.part_done(&3);
        parts.part_done(&5);
        drop(parts);
        assert_eq!(seen, vec![3, 5]);
    }
}
