//! SVM models with LIBSVM's semantics (C-SVC, nu-SVC, one-class, epsilon-SVR, nu-SVR) and
//! LIBLINEAR-class linear models.
//!
//! Every kernel formulation is turned into a [`crate::solver::BoxQp`] by [`train`] and solved by
//! [`crate::solver::smo`]; multiclass classification is one-vs-one as in LIBSVM.

pub mod checkpoint;
pub mod grid;
pub mod linear;
pub mod model;
pub mod model_io;
pub mod params;
pub mod probability;
mod report;
pub mod shard;
pub mod train;

pub use checkpoint::FitCheckpoint;
pub use model::SvmModel;
pub use params::{
    Gamma, KernelKind, KernelParams, PlattFit, SvmParams, SvmSolver, SvmType, SvmValidParams,
};
pub use report::SubproblemReport;
pub use shard::{fit_shard, KernelShard};
pub use train::{fit, FitReport};
