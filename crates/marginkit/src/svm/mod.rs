//! SVM models (in progress).
