//! # marginkit
//!
//! Large-margin learning at scale. Every method reduces to one box-constrained QP
//! ([`solver::BoxQp`]) solved by an SMO engine for kernel models ([`solver::smo`]) or a dual
//! coordinate-descent engine for linear models ([`solver::dcd`]).
#![warn(missing_docs)]

pub mod data;
pub mod error;
pub mod kernel;
pub mod solver;
pub mod svm;

pub use data::{CsrMatrix, Dataset, DenseMatrix, Features, Row};
pub use error::{DataError, FitError, IoError, ParamError, ParseError, ParseErrorKind, SolveError};
pub use kernel::KernelSpec;
