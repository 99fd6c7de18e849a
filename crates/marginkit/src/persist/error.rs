//! The one error of reading, checking and continuing from a state file.

use thiserror::Error;

use super::record::{data_message, DataShape};

/// A state file (checkpoint) that cannot be read, or cannot be continued by this run.
///
/// `file` names the kind of state file ("fit checkpoint", "path checkpoint", "AID state file",
/// "robust state file", "SMO snapshot"), so that every message says what was being read.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CheckpointError {
    /// The file does not start with the kind's magic: another kind of file.
    #[error("not a marginkit {file} (bad magic: expected {expected}, found \"{found}\")")]
    BadMagic {
        /// The kind of state file.
        file: &'static str,
        /// The magic of the kind.
        expected: &'static str,
        /// The first bytes of the file (at most 8, non-ASCII escaped).
        found: String,
    },
    /// A state file of an older form of the kind, which this version does not continue.
    #[error(
        "a {file} of an older format ({found}, {reason}): it cannot be continued; run again \
         without --resume"
    )]
    Version {
        /// The kind of state file.
        file: &'static str,
        /// Its magic.
        found: &'static str,
        /// What the older form lacks.
        reason: &'static str,
    },
    /// The trailing checksum does not match the body.
    #[error("{file}: checksum mismatch (the file is damaged or was edited)")]
    Checksum {
        /// The kind of state file.
        file: &'static str,
    },
    /// A field runs past the end of the file.
    #[error("{file}: truncated at byte {at} (a field of {need} bytes does not fit)")]
    Truncated {
        /// The kind of state file.
        file: &'static str,
        /// Offset of the field.
        at: usize,
        /// Bytes the field takes.
        need: u64,
    },
    /// Bytes left over after the last field.
    #[error("{file}: {extra} trailing bytes")]
    Trailing {
        /// The kind of state file.
        file: &'static str,
        /// How many.
        extra: usize,
    },
    /// A tag, flag or code byte with no meaning.
    #[error("{file}: bad {field} {value}")]
    BadTag {
        /// The kind of state file.
        file: &'static str,
        /// Which tag.
        field: &'static str,
        /// Its value.
        value: u64,
    },
    /// A field whose value is impossible (out of range, inconsistent with another field).
    #[error("{file}: {field}: {reason}")]
    Invalid {
        /// The kind of state file.
        file: &'static str,
        /// Which field.
        field: &'static str,
        /// What is wrong.
        reason: &'static str,
    },
    /// The file was written with another value of a setting that changes the result.
    #[error("the {file} was written with {name} {stored} (now {name} {now})")]
    Setting {
        /// The kind of state file.
        file: &'static str,
        /// The setting, as the user sets it (a command-line flag where there is one).
        name: String,
        /// Its value in the file (`(not set)` when the file's run had no such setting).
        stored: String,
        /// Its value in this run.
        now: String,
    },
    /// The file was written for other data (or without a data set this run has, or the other
    /// way round).
    #[error("{}", data_message(file, role, stored, now))]
    Data {
        /// The kind of state file.
        file: &'static str,
        /// Which data set ("training data", "validation data").
        role: String,
        /// Its shape in the file (`None`: the file's run had none).
        stored: Option<DataShape>,
        /// Its shape in this run (`None`: this run has none).
        now: Option<DataShape>,
    },
    /// The fingerprint differs: the file was made for other data or other parameters (one
    /// fingerprint covers both). A file of an older version records no settings, so this is
    /// all a resume from it can say; a newer file says [`CheckpointError::Setting`] or
    /// [`CheckpointError::Data`] instead, unless the difference is one it does not name.
    #[error("the {file} was made with other data or other parameters")]
    Fingerprint {
        /// The kind of state file.
        file: &'static str,
        /// This run's fingerprint.
        expected: u64,
        /// The file's.
        found: u64,
    },
    /// The file was made by another model of the same method.
    #[error("the {file} was made by another model ({found}; this run fits {expected})")]
    WrongModel {
        /// The kind of state file.
        file: &'static str,
        /// This run's model.
        expected: &'static str,
        /// The file's.
        found: &'static str,
    },
    /// The file reads, carries this run's fingerprint, but its contents do not fit the problem
    /// (array lengths, indices, bounds): a damaged or crafted file.
    #[error("the {file} does not fit this problem ({reason})")]
    Mismatch {
        /// The kind of state file.
        file: &'static str,
        /// What does not fit.
        reason: &'static str,
    },
}
