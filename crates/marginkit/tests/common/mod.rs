//! Helpers shared by the oracle tests.
#![allow(dead_code)]

pub mod qp_oracle;
pub mod robust;
pub mod tol;
