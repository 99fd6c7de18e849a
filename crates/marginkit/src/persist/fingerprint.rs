//! The data part of every fingerprint.

use super::Fnv;
use crate::data::Dataset;

/// Adds the data set (sizes, labels, weights, every non-zero feature) to a fingerprint.
pub(crate) fn hash_dataset(h: &mut Fnv, data: &Dataset) {
    h.u64(data.len() as u64);
    h.u64(data.n_features() as u64);
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
