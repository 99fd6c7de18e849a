//! Prediction metrics as LIBSVM's tools report them: accuracy for classification; mean squared
//! error, the squared correlation coefficient and the coefficient of determination for
//! regression. Every front end (CLI, Python, MPI) reports these, so they are computed here once.

/// Classification metrics of predicted labels against true labels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Classification {
    /// Percentage of exact label matches (0-100); NaN for no samples.
    pub accuracy: f64,
    /// Number of exact label matches.
    pub correct: usize,
    /// Number of samples.
    pub total: usize,
}

/// Regression metrics of predicted values against true values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Regression {
    /// Mean squared error; NaN for no samples.
    pub mse: f64,
    /// Squared Pearson correlation of predictions and targets (LIBSVM's "squared correlation
    /// coefficient"); NaN when either side is constant.
    pub squared_correlation: f64,
    /// Coefficient of determination `1 - SS_res / SS_tot`; NaN when the targets are constant.
    pub r2: f64,
}

/// Accuracy of `pred` against `truth` (equal lengths; extra entries of the longer are ignored).
pub fn classification(pred: &[f64], truth: &[f64]) -> Classification {
    let correct = pred.iter().zip(truth).filter(|(p, y)| p == y).count();
    let total = truth.len();
    let accuracy = if total == 0 {
        f64::NAN
    } else {
        100.0 * correct as f64 / total as f64
    };
    Classification {
        accuracy,
        correct,
        total,
    }
}

/// Mean squared error, squared correlation and R^2 of `pred` against `truth`.
pub fn regression(pred: &[f64], truth: &[f64]) -> Regression {
    let n = truth.len() as f64;
    let mse = if truth.is_empty() {
        f64::NAN
    } else {
        pred.iter()
            .zip(truth)
            .map(|(p, y)| (p - y).powi(2))
            .sum::<f64>()
            / n
    };
    let mean = truth.iter().sum::<f64>() / n;
    let ss_tot = truth.iter().map(|y| (y - mean).powi(2)).sum::<f64>();
    let r2 = if ss_tot > 0.0 {
        1.0 - mse * n / ss_tot
    } else {
        f64::NAN
    };
    Regression {
        mse,
        squared_correlation: squared_correlation(pred, truth),
        r2,
    }
}

/// Squared correlation coefficient, with LIBSVM's formula
/// `(n Σpy - Σp Σy)^2 / ((n Σp² - (Σp)²)(n Σy² - (Σy)²))`.
pub fn squared_correlation(p: &[f64], y: &[f64]) -> f64 {
    let n = y.len() as f64;
    let (sp, sy) = (p.iter().sum::<f64>(), y.iter().sum::<f64>());
    let spp = p.iter().map(|v| v * v).sum::<f64>();
    let syy = y.iter().map(|v| v * v).sum::<f64>();
    let spy = p.iter().zip(y).map(|(a, b)| a * b).sum::<f64>();
    let num = n * spy - sp * sy;
    let den = (n * spp - sp * sp) * (n * syy - sy * sy);
    if den > 0.0 {
        num * num / den
    } else {
        f64::NAN
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accuracy_counts_exact_matches() {
        let m = classification(&[1.0, -1.0, 1.0, 2.0], &[1.0, 1.0, 1.0, 2.0]);
        assert_eq!((m.correct, m.total), (3, 4));
        assert_eq!(m.accuracy, 75.0);
        assert!(classification(&[], &[]).accuracy.is_nan());
    }

    /// Hand-computed: y = (1, 2, 3), p = (1, 2, 4): mse = 1/3, SS_tot = 2, R^2 = 1 - 1/2;
    /// correlation of (1,2,3) and (1,2,4) is 0.98198..., squared 0.964285714...
    #[test]
    fn regression_metrics_match_hand_values() {
        let m = regression(&[1.0, 2.0, 4.0], &[1.0, 2.0, 3.0]);
        assert!((m.mse - 1.0 / 3.0).abs() < 1e-15);
        assert!((m.r2 - 0.5).abs() < 1e-15);
        assert!((m.squared_correlation - 27.0 / 28.0).abs() < 1e-15);
        // A constant prediction correlates with nothing, and R^2 can be negative.
        let c = regression(&[5.0, 5.0, 5.0], &[1.0, 2.0, 3.0]);
        assert!(c.squared_correlation.is_nan());
        assert!(c.r2 < 0.0);
    }
}
