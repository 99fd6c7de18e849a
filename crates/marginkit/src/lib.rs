//! # marginkit
//!
//! Large-margin learning at scale. Every method reduces to one box-constrained QP
//! ([`solver::BoxQp`]):
//!
//! ```text
//! min_a 1/2 a'Qa + p'a   s.t.  y'a = delta (with a bias),  0 <= a_i <= u_i
//! ```
//!
//! solved by an SMO engine for kernel models ([`solver::smo`]) or a dual
//! coordinate-descent engine for linear models ([`solver::dcd`]), and checked by an independent
//! KKT / duality-gap checker ([`solver::kkt`]).
//!
//! | module | what |
//! |---|---|
//! | [`data`] | [`Dataset`] (dense or CSR features, labels, weights); LIBSVM, CSV readers; svm-scale |
//! | [`kernel`] | [`KernelSpec`]; Q matrices with an LRU column cache, rows computed in parallel blocks |
//! | [`solver`] | the QP, SMO, nu-SMO, DCD, KKT checker |
//! | [`screening`], [`path`] | safe sample screening (BT1, BT2, IT) and the regularization path over C with exact re-checks |
//! | [`aid`] | aggregate and iterative disaggregate: exact LAD, linear and kernel SVM, S3VM by branch and bound |
//! | [`coreset`] | minimum enclosing balls by core-sets (MEB, SVDD, L2-SVM, one-class L2), distributed core-set consensus |
//! | [`model_file`] | what kind of model (or other) file a path holds, for `predict`'s messages |
//! | [`metrics`] | accuracy, mean squared error, squared correlation and R^2 as LIBSVM reports them |
//! | [`plot`] | a minimal SVG line-chart writer |
//! | [`odm`] | the optimal margin distribution machine (ODM) and ODM clustering (ODMC) |
//! | [`cluster`] | k-means, clustering accuracy and Rand index, point sets |
//! | [`fit`] | the shape of every fit: [`fit::Control`] (observer, state to resume from) in, [`fit::Fit`] (model, report, checkpoint) out |
//! | [`persist`] | the state-file codec, checksum, data fingerprint, run record and [`CheckpointError`] every resumable method uses |
//! | [`robust`] | ramp-loss robust SVC/SVR, the outlier-path homotopy (OP-theta, OP-s), CCCP, model selection on the path |
//! | [`svm`] | C-SVC, nu-SVC, one-class, epsilon-SVR, nu-SVR (LIBSVM semantics and model files), linear SVC/SVR (LIBLINEAR semantics and model files), Platt probabilities, cross-validation, grid search |
//!
//! ```
//! use marginkit::data::libsvm_fmt::{read_libsvm_bytes, ReadOptions};
//! use marginkit::fit::Control;
//! use marginkit::svm::{fit, SvmParams};
//!
//! let text = b"+1 1:0.9 2:0.1\n+1 1:0.8 2:0.3\n-1 1:-0.7 2:0.2\n-1 1:-0.9 2:-0.4\n";
//! let data = read_libsvm_bytes(text, &ReadOptions::default())?;
//! let params = SvmParams::new().c(10.0).check()?; // C-SVC, RBF, gamma = 1/n_features
//! let fitted = fit(&params, &data, &mut Control::default())?;
//! assert_eq!(fitted.status(), marginkit::solver::Status::Converged);
//! assert_eq!(fitted.model.predict(&data.x)?, data.y);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

pub mod aid;
pub mod cluster;
pub mod coreset;
pub mod data;
pub mod error;
pub mod fit;
pub mod kernel;
pub mod metrics;
pub mod model_file;
pub mod odm;
pub mod path;
pub mod persist;
pub mod plot;
pub mod robust;
pub mod screening;
pub mod solver;
pub mod svm;

pub use data::{CsrMatrix, Dataset, DenseMatrix, Features, Row};
pub use error::{
    CheckpointError, DataError, FitError, IoError, ParamError, ParseError, ParseErrorKind,
    SolveError,
};
pub use kernel::KernelSpec;
