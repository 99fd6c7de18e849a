//! The face step's arc search against the objective evaluated from an explicit `Q`.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::{arc_search, Coord, FaceScratch};
use crate::data::design::{DenseRows, DesignRows, KeyedRows};
use crate::data::DenseMatrix;

/// `phi(t) = g'x + x'Qx / 2` at `x = clip(a + t delta) - a`, with `Q` given entry by entry.
fn phi(q: &[Vec<f64>], g: &[f64], a: &[f64], u: &[f64], delta: &[f64], t: f64) -> f64 {
    let x: Vec<f64> = (0..a.len())
        .map(|k| (a[k] + t * delta[k]).clamp(0.0, u[k]) - a[k])
        .collect();
    let mut v = 0.0;
    for k in 0..x.len() {
        v += g[k] * x[k];
        for l in 0..x.len() {
            v += 0.5 * x[k] * q[k][l] * x[l];
        }
    }
    v
}

#[test]
fn arc_search_stops_at_the_first_local_minimum_of_the_projection_arc(
) -> Result<(), Box<dyn std::error::Error>> {
    let (n, d, bias) = (40, 3, 1.0);
    // Cases whose minimum lies past at least three breakpoints (the walk is exercised).
    let mut deep = 0;
    for case in 0..60u64 {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(case);
        let vals: Vec<f64> = (0..n * d).map(|_| rng.gen_range(-1.0..1.0)).collect();
        let m = DenseMatrix::new(n, d, vals.clone())?;
        let rows = DenseRows::new(&m, Some(bias));
        // L1 loss (box [0, C], D = 0) on even cases, L2 loss (D = 1/(2C), no upper bound) on odd.
        let l2 = case % 2 == 1;
        let (dk, uk) = if l2 { (0.5, f64::INFINITY) } else { (0.0, 1.0) };
        let y: Vec<f64> = (0..n)
            .map(|_| if rng.gen_bool(0.5) { 1.0 } else { -1.0 })
            .collect();
        let a: Vec<f64> = (0..n).map(|_| rng.gen_range(0.05..0.95)).collect();
        let u = vec![uk; n];
        let g: Vec<f64> = (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect();
        // A descent direction that pushes many variables out of the box.
        let delta: Vec<f64> = g.iter().map(|&gk| -gk * rng.gen_range(0.5..4.0)).collect();
        let coords: Vec<Coord<usize>> = (0..n)
            .map(|k| Coord {
                i: k,
                key: rows.key(k),
                y: y[k],
                a: a[k],
                qd: rows.sq_norm(k) + dk,
                p: -1.0,
                u: uk,
                d: dk,
            })
            .collect();
        let mut sc = FaceScratch {
            pos: (0..n).collect(),
            g: g.clone(),
            delta: delta.clone(),
            u: vec![0.0; d + 1],
            ..FaceScratch::default()
        };
        let t = arc_search(&rows, &coords, &mut sc);
        // Q from the raw values.
        let q: Vec<Vec<f64>> = (0..n)
            .map(|k| {
                (0..n)
                    .map(|l| {
                        let xx: f64 = (0..d).map(|j| vals[k * d + j] * vals[l * d + j]).sum();
                        y[k] * y[l] * (xx + bias * bias) + if k == l { dk } else { 0.0 }
                    })
                    .collect()
            })
            .collect();
        let f = |t: f64| phi(&q, &g, &a, &u, &delta, t);
        let scale = 1.0 + f(t).abs();
        assert!(t.is_finite() && t > 0.0, "case {case}: t = {t}");
        assert!(f(t) < 0.0, "case {case}: phi(t) = {}", f(t));
        // phi does not increase on [0, t] ...
        let steps = 4000;
        let mut prev = 0.0;
        for s in 1..=steps {
            let v = f(t * s as f64 / steps as f64);
            assert!(
                v <= prev + 1e-10 * scale,
                "case {case}: phi rises before t at step {s}"
            );
            prev = v;
        }
        // ... and does not decrease just after it.
        for h in [1e-6, 1e-4, 1e-3] {
            assert!(
                f(t + h * t) >= f(t) - 1e-10 * scale,
                "case {case}: phi still falls after t = {t} (h = {h})"
            );
        }
        let crossed = (0..n)
            .filter(|&k| {
                let room = if delta[k] > 0.0 {
                    (u[k] - a[k]) / delta[k]
                } else {
                    -a[k] / delta[k]
                };
                room < t
            })
            .count();
        if crossed >= 3 {
            deep += 1;
        }
    }
    assert!(deep >= 10, "only {deep} cases crossed three breakpoints");
    Ok(())
}
