//! SVM models (in progress).
pub mod linear;
