//! The data part of every fingerprint.
//!
//! FNV-1a is sequential, so a data set split by rows across processes is hashed in row order:
//! [`hash_shape`] with the whole data set's sizes, then every shard's [`hash_rows`] in shard
//! order on the state the previous shard passed on. The result is [`hash_dataset`]'s.

use super::Fnv;
use crate::data::Dataset;

/// Adds the data set (sizes, labels, weights, every non-zero feature) to a fingerprint.
pub(crate) fn hash_dataset(h: &mut Fnv, data: &Dataset) {
    hash_shape(h, data.len(), data.n_features());
    hash_rows(h, data);
}

/// The sizes part of [`hash_dataset`]: `rows` and `features` of the whole data set.
pub(crate) fn hash_shape(h: &mut Fnv, rows: usize, features: usize) {
    h.u64(rows as u64);
    h.u64(features as u64);
}

/// The rows part of [`hash_dataset`]: every row's label, weight and non-zero features.
pub(crate) fn hash_rows(h: &mut Fnv, data: &Dataset) {
    for i in 0..data.len() {
        h.f64(data.y[i]);
        h.f64(data.weight(i));
        for (k, v) in data.x.row(i).iter() {
            if v != 0.0 {
                h.u64(k as u64);
                h.f64(v);
            }
        }
        h.u64(u64::MAX);
    }
}
