//! Core-set solutions as ordinary LIBSVM-format models ([`SvmModel`]): `predict`, `save_model` and
//! `load_model` work on them unchanged (the CLI's `marginkit predict` too).
//!
//! With weights `x_j` on the core-set points `u_j` (only `x_j > 0` become support vectors) and
//! constant base-kernel diagonal `c`:
//!
//! | problem | model | coefficients | `rho` | decision `sum coef_j K(u_j, p) - rho` |
//! |---|---|---|---|---|
//! | L2-SVM (eq. 6/7) | `c_svc`, 2 classes | `l_j x_j` | `-b = -sum l_j x_j` | `f(p) = sum x_j l_j (K(u_j,p) + 1)`, `> 0` = first label |
//! | SVDD (eq. 8) | `one_class` | `2 x_j` | `c + delta + |c|^2 - r^2` | `r^2 - |phi(p) - c|^2` (`> 0` inside the ball) |
//! | one-class L2 | `one_class` | `x_j` | `rho = x'K~x = |c|^2` | `w'phi(p) - rho` |
//!
//! Derivations (digest section 2.3, checked): the Lagrangian of (6) gives `w = sum l_i x_i phi_i`,
//! `b = sum l_i x_i`, `xi_i = x_i / C`, `rho = x'K~x`; for SVDD,
//! `|phi(p) - c|^2 = K(p,p) + delta - 2 sum x_j K(u_j, p) + |c|^2` for a point `p` outside the
//! training ids (the ridge `delta` of the lifted points, see the module docs).

use super::bc::{self, Pool};
use super::space::{FeatureKernel, PointSet, Problem};
use super::{hash4, CoresetError};
use crate::data::{DenseMatrix, Features};
use crate::svm::{SvmModel, SvmType};

/// A node's candidate core-set as sent to its neighbours.
#[derive(Debug, Clone, PartialEq)]
pub struct CoreSetMsg {
    /// Node that produced it.
    pub node: u32,
    /// The `k` ids (a multiset, sorted).
    pub ids: Vec<u64>,
    /// The distinct points, sorted by id.
    pub points: PointSet,
    /// Dual weights of the distinct points in their MEB.
    pub weights: Vec<f64>,
    /// `r^2` of the set.
    pub r2: f64,
    /// `|c|^2` of its centre.
    pub c2: f64,
}

impl CoreSetMsg {
    /// Bytes on the wire ([`CoreSetMsg::encode`]).
    pub fn encoded_len(&self) -> usize {
        let m = self.points.len();
        32 + 8 * self.ids.len() + m * (8 + 8 + 8 + 8 * self.points.dim())
    }

    /// Little-endian wire format: node, k, m, d (u32 each), r2, c2 (f64), k ids, then per distinct
    /// point id, label, weight and d values.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(self.encoded_len());
        let m = self.points.len();
        for v in [
            self.node,
            self.ids.len() as u32,
            m as u32,
            self.points.dim() as u32,
        ] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&self.r2.to_le_bytes());
        b.extend_from_slice(&self.c2.to_le_bytes());
        for id in &self.ids {
            b.extend_from_slice(&id.to_le_bytes());
        }
        for i in 0..m {
            b.extend_from_slice(&self.points.id(i).to_le_bytes());
            b.extend_from_slice(&self.points.label(i).to_le_bytes());
            b.extend_from_slice(&self.weights[i].to_le_bytes());
            for v in self.points.row(i) {
                b.extend_from_slice(&v.to_le_bytes());
            }
        }
        b
    }

    /// Inverse of [`CoreSetMsg::encode`].
    ///
    /// The header's sizes are checked against the buffer length before any allocation, so the
    /// memory used is bounded by the buffer's size.
    ///
    /// # Errors
    /// [`CoresetError::Transport`] for a truncated or inconsistent buffer (sizes that do not
    /// match the length, unsorted ids, an id not among the points, non-finite radii).
    pub fn decode(b: &[u8]) -> Result<Self, CoresetError> {
        let bad = || CoresetError::Transport("malformed core-set message".into());
        let mut pos = 0;
        let mut take = |n: usize| -> Result<&[u8], CoresetError> {
            let s = b.get(pos..pos + n).ok_or_else(bad)?;
            pos += n;
            Ok(s)
        };
        let mut u32s = [0u32; 4];
        for v in u32s.iter_mut() {
            *v = u32::from_le_bytes(take(4)?.try_into().map_err(|_| bad())?);
        }
        let [node, k, m, d] = u32s;
        // Every size in the header is checked against the buffer before anything is allocated:
        // a crafted or truncated message is an error, never a huge allocation or a panic.
        let expected = (k as u64)
            .checked_mul(8)
            .and_then(|ids| {
                (d as u64)
                    .checked_mul(8)
                    .and_then(|row| row.checked_add(24))
                    .and_then(|per| per.checked_mul(m as u64))
                    .and_then(|pts| pts.checked_add(ids))
            })
            .and_then(|body| body.checked_add(32));
        if expected != Some(b.len() as u64) {
            return Err(CoresetError::Transport(format!(
                "malformed core-set message: the header announces {k} ids and {m} points of \
                 dimension {d}, which does not match its {} bytes",
                b.len()
            )));
        }
        let f = |s: &[u8]| -> Result<f64, CoresetError> {
            Ok(f64::from_le_bytes(s.try_into().map_err(|_| bad())?))
        };
        let u = |s: &[u8]| -> Result<u64, CoresetError> {
            Ok(u64::from_le_bytes(s.try_into().map_err(|_| bad())?))
        };
        let r2 = f(take(8)?)?;
        let c2 = f(take(8)?)?;
        let mut ids = Vec::with_capacity(k as usize);
        for _ in 0..k {
            ids.push(u(take(8)?)?);
        }
        let mut points = PointSet::new(d as usize);
        let mut weights = Vec::with_capacity(m as usize);
        let mut row = vec![0.0; d as usize];
        for _ in 0..m {
            let id = u(take(8)?)?;
            let label = f(take(8)?)?;
            weights.push(f(take(8)?)?);
            for v in row.iter_mut() {
                *v = f(take(8)?)?;
            }
            points.push(id, label, &row);
        }
        let sorted = |v: &[u64], strict: bool| {
            v.windows(2)
                .all(|w| if strict { w[0] < w[1] } else { w[0] <= w[1] })
        };
        // A set names only points it carries, both lists canonical (sorted by id).
        if pos != b.len()
            || m == 0
            || !sorted(&ids, false)
            || !sorted(points.ids(), true)
            || ids.iter().any(|id| points.ids().binary_search(id).is_err())
            || !(r2.is_finite() && c2.is_finite())
        {
            return Err(bad());
        }
        Ok(Self {
            node,
            ids,
            points,
            weights,
            r2,
            c2,
        })
    }

    /// The ids of the support points (positive weight).
    pub fn support(&self) -> Vec<u64> {
        (0..self.points.len())
            .filter(|&i| self.weights[i] > 0.0)
            .map(|i| self.points.id(i))
            .collect()
    }

    /// 64-bit fingerprint of `(r^2 bits, ids)`: equal sets give equal fingerprints on every node.
    pub fn fingerprint(&self) -> u64 {
        let mut h = hash4(0x5eed, self.r2.to_bits(), self.ids.len() as u64, 0);
        for (i, id) in self.ids.iter().enumerate() {
            h = hash4(h, *id, i as u64, 1);
        }
        h
    }

    pub(crate) fn from_result(
        pool: &Pool<'_>,
        res: &bc::CoresetResult,
        node: usize,
        d: usize,
    ) -> Self {
        let mut points = PointSet::new(d);
        for &p in &res.meb.distinct {
            let pt = pool.get(p);
            points.push(pt.id, pt.label, pt.row);
        }
        Self {
            node: node as u32,
            ids: res.members.iter().map(|&p| pool.get(p).id).collect(),
            points,
            weights: res.meb.sol.x.clone(),
            r2: res.meb.sol.r2,
            c2: res.meb.sol.c2,
        }
    }
}

/// What a core-set fit finds: the core-set and the problem kernel it was found with.
#[derive(Debug, Clone, PartialEq)]
pub struct CoresetModel {
    /// The core-set: its ids, distinct points, dual weights, `r^2` and `|c|^2`.
    pub set: CoreSetMsg,
    /// The problem kernel `K~` (gamma resolved against the points).
    pub kernel: FeatureKernel,
}

impl CoresetModel {
    /// The core-set as an ordinary LIBSVM-format model ([`to_model`]); `labels` are the two
    /// classes in LIBSVM order (first = `+1`) for the L2-SVM, ignored otherwise.
    ///
    /// # Errors
    /// As [`to_model`].
    pub fn to_svm(&self, labels: [f64; 2]) -> Result<SvmModel, CoresetError> {
        to_model(&self.set, &self.kernel, labels)
    }
}

/// Builds the model of `set` (a core-set of `problem`). `labels` are the two classes in LIBSVM
/// order (first = `+1`) for the L2-SVM, ignored otherwise.
///
/// # Errors
/// [`crate::error::ParamError::Incompatible`] for [`Problem::Meb`] (no kernel model).
pub fn to_model(
    set: &CoreSetMsg,
    kern: &FeatureKernel,
    labels: [f64; 2],
) -> Result<SvmModel, CoresetError> {
    let pts = &set.points;
    let d = pts.dim();
    let support: Vec<usize> = (0..pts.len()).filter(|&i| set.weights[i] > 0.0).collect();
    let diag = if support.is_empty() {
        0.0
    } else {
        kern.base(pts.get(support[0]), pts.get(support[0]))
    };
    let mut rows = Vec::new();
    let mut coef = Vec::new();
    let mut idx = Vec::new();
    let mut n_sv = Vec::new();
    let mut push = |i: usize, c: f64, rows: &mut Vec<f64>, coef: &mut Vec<f64>| {
        rows.extend_from_slice(pts.row(i));
        coef.push(c);
        idx.push(pts.id(i) as usize);
    };
    let (svm_type, rho, model_labels) = match kern.problem {
        Problem::Meb => {
            return Err(crate::error::ParamError::Incompatible(
                "a minimum enclosing ball has no kernel model; use SVDD with a linear kernel",
            )
            .into())
        }
        Problem::L2Svm { .. } => {
            let mut b = 0.0;
            for &i in &support {
                b += pts.label(i) * set.weights[i];
            }
            for class in [1.0, -1.0] {
                let mut cnt = 0;
                for &i in &support {
                    if pts.label(i) == class {
                        push(i, class * set.weights[i], &mut rows, &mut coef);
                        cnt += 1;
                    }
                }
                n_sv.push(cnt);
            }
            (SvmType::CSvc, -b, labels.to_vec())
        }
        Problem::Svdd => {
            for &i in &support {
                push(i, 2.0 * set.weights[i], &mut rows, &mut coef);
            }
            (
                SvmType::OneClass,
                diag + kern.ridge + set.c2 - set.r2,
                Vec::new(),
            )
        }
        Problem::OneClassL2 { .. } => {
            for &i in &support {
                push(i, set.weights[i], &mut rows, &mut coef);
            }
            (SvmType::OneClass, set.c2, Vec::new())
        }
    };
    let m = coef.len();
    let sv = DenseMatrix::new(m, d, rows)?;
    Ok(SvmModel {
        svm_type,
        kernel: kern.kernel,
        labels: model_labels,
        n_sv,
        sv: Features::Dense(sv),
        sv_indices: Some(idx),
        sv_coef: vec![coef],
        rho: vec![rho],
        prob_a: Vec::new(),
        prob_b: Vec::new(),
        sv_norms: Vec::new(),
    }
    .with_norms())
}
