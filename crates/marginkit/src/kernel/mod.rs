//! Kernels: the specification, point evaluation, blocked parallel rows, the LRU column cache, the
//! Q matrices the solvers read and the blocked weighted sums that prediction reads.

pub(crate) mod batch;
pub mod cache;
pub mod qmatrix;
pub(crate) mod quant;

use crate::data::{ops, Row};
use crate::error::{positive, ParamError};

/// A kernel function, with LIBSVM's parameterization and numbering (`-t`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KernelSpec {
    /// `u'v` (`-t 0`).
    Linear,
    /// `(gamma u'v + coef0)^degree` (`-t 1`).
    Poly {
        /// gamma > 0.
        gamma: f64,
        /// coef0 (any finite value).
        coef0: f64,
        /// degree >= 0.
        degree: u32,
    },
    /// `exp(-gamma |u - v|^2)` (`-t 2`).
    Rbf {
        /// gamma > 0.
        gamma: f64,
    },
    /// `tanh(gamma u'v + coef0)` (`-t 3`).
    Sigmoid {
        /// gamma > 0.
        gamma: f64,
        /// coef0 (any finite value).
        coef0: f64,
    },
    /// Kernel values given in the data (`-t 4`): column 0 holds the sample's 1-based serial
    /// number, column `k` holds `K(x, x_k)` (LIBSVM's `0:i` convention).
    Precomputed,
}

impl KernelSpec {
    /// LIBSVM's kernel number (`-t`).
    pub fn libsvm_code(&self) -> u8 {
        match self {
            KernelSpec::Linear => 0,
            KernelSpec::Poly { .. } => 1,
            KernelSpec::Rbf { .. } => 2,
            KernelSpec::Sigmoid { .. } => 3,
            KernelSpec::Precomputed => 4,
        }
    }
    /// LIBSVM's kernel name in model files.
    pub fn libsvm_name(&self) -> &'static str {
        match self {
            KernelSpec::Linear => "linear",
            KernelSpec::Poly { .. } => "polynomial",
            KernelSpec::Rbf { .. } => "rbf",
            KernelSpec::Sigmoid { .. } => "sigmoid",
            KernelSpec::Precomputed => "precomputed",
        }
    }
    /// Checks the parameters (gamma > 0, finite coef0).
    ///
    /// # Errors
    /// [`ParamError`] naming the offending parameter.
    pub fn check(&self) -> Result<(), ParamError> {
        match *self {
            KernelSpec::Linear | KernelSpec::Precomputed => Ok(()),
            KernelSpec::Rbf { gamma } => positive("gamma", gamma).map(|_| ()),
            KernelSpec::Poly { gamma, coef0, .. } | KernelSpec::Sigmoid { gamma, coef0 } => {
                positive("gamma", gamma)?;
                if coef0.is_finite() {
                    Ok(())
                } else {
                    Err(ParamError::OutOfRange {
                        name: "coef0",
                        value: coef0,
                        range: "finite values",
                    })
                }
            }
        }
    }
    /// True when the kernel needs squared row norms (RBF).
    pub fn needs_norms(&self) -> bool {
        matches!(self, KernelSpec::Rbf { .. })
    }
    /// Applies the kernel's outer function to an inner product `dot = u'v`, with squared norms
    /// `na = |u|^2`, `nb = |v|^2` (used by RBF only).
    #[inline]
    pub fn from_dot(&self, dot: f64, na: f64, nb: f64) -> f64 {
        match *self {
            KernelSpec::Linear | KernelSpec::Precomputed => dot,
            KernelSpec::Poly {
                gamma,
                coef0,
                degree,
            } => powi(gamma * dot + coef0, degree),
            // Clamp: rounding can make the squared distance slightly negative.
            KernelSpec::Rbf { gamma } => (-gamma * (na + nb - 2.0 * dot).max(0.0)).exp(),
            KernelSpec::Sigmoid { gamma, coef0 } => (gamma * dot + coef0).tanh(),
        }
    }
    /// `K(u, v)` for two rows (for a precomputed kernel, `u` is the row of kernel values and `v`
    /// the training row whose column 0 holds its serial number).
    pub fn eval(&self, u: Row<'_>, v: Row<'_>) -> f64 {
        match self {
            KernelSpec::Precomputed => u.get(v.get(0) as usize),
            KernelSpec::Rbf { .. } => {
                self.from_dot(ops::dot(u, v), ops::sq_norm(u), ops::sq_norm(v))
            }
            _ => self.from_dot(ops::dot(u, v), 0.0, 0.0),
        }
    }
}

/// `x^n` by squaring, exactly as repeated multiplication would round for small n.
#[inline]
pub fn powi(base: f64, n: u32) -> f64 {
    let (mut acc, mut b, mut t) = (1.0, base, n);
    while t > 0 {
        if t & 1 == 1 {
            acc *= b;
        }
        b *= b;
        t >>= 1;
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_values() {
        let u = [1.0, 2.0];
        let v = [0.0, 1.0];
        let (u, v) = (Row::Dense(&u), Row::Dense(&v));
        assert_eq!(KernelSpec::Linear.eval(u, v), 2.0);
        let p = KernelSpec::Poly {
            gamma: 0.5,
            coef0: 1.0,
            degree: 3,
        };
        assert!((p.eval(u, v) - 8.0).abs() < 1e-12);
        let r = KernelSpec::Rbf { gamma: 0.5 };
        assert!((r.eval(u, v) - (-1.0f64).exp()).abs() < 1e-12);
        let s = KernelSpec::Sigmoid {
            gamma: 0.5,
            coef0: 0.0,
        };
        assert!((s.eval(u, v) - 1.0f64.tanh()).abs() < 1e-12);
        assert!(KernelSpec::Rbf { gamma: f64::NAN }.check().is_err());
        assert!(KernelSpec::Rbf { gamma: 0.0 }.check().is_err());
    }

    #[test]
    fn precomputed_uses_serial_number() {
        let train = [2.0, 0.0, 0.0, 0.0];
        let test = [0.0, 0.1, 0.2, 0.3];
        assert_eq!(
            KernelSpec::Precomputed.eval(Row::Dense(&test), Row::Dense(&train)),
            0.2
        );
    }
}
