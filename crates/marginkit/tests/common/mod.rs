//! Helpers shared by the oracle tests.
#![allow(dead_code)]

pub mod tol;
