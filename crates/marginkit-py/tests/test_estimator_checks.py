"""scikit-learn's estimator checks on every estimator.

Expected failures (each also fails, for the same reason, on scikit-learn's own estimator of the
same name with scikit-learn 1.9.1; see docs/python.md):

- check_sample_weight_equivalence_on_dense_data / _on_sparse_data (all estimators but SVCPath):
  the check wants fitting with integer weights to equal fitting on repeated rows to 1e-7. The
  optimum is the same in exact arithmetic, but (a) gamma='scale' is computed from the unweighted
  feature variance, which repetition changes, and (b) the solvers stop at tol (1e-3 / 1e-4), so
  two different QPs agree only to that tolerance. For nu-SVC the weighted problem can also be
  nu-infeasible where the repeated one is not. ODMClassifier also normalizes its loss by the
  number of rows. test_sample_weights.py checks the exact equivalence (fixed gamma, tol 1e-10)
  for every estimator that takes sample_weight.
- NuSVC check_class_weight_classifiers: class weights scale the per-sample bounds of nu-SVC,
  and with the check's weights the nu constraints become infeasible (a ValueError naming it).

One expected failure by design, with no scikit-learn counterpart:

- CoresetSVDD check_outliers_fit_predict and check_outliers_train: the checks want some training
  rows called outliers.
  CoresetSVDD is the hard-margin SVDD: its decision is the (1 + eps)-grown core-set ball, which
  covers every training row by construction, so fit_predict is all +1
  (test_methods.py::test_coreset_svdd_calls_no_training_point_an_outlier).
"""

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

import marginkit as mk

SAMPLE_WEIGHT_EQUIV = {
    "check_sample_weight_equivalence_on_dense_data":
        "weights != repetition to 1e-7: gamma='scale' uses the unweighted variance; solvers stop "
        "at tol (scikit-learn's own estimator fails this check too)",
    "check_sample_weight_equivalence_on_sparse_data":
        "as the dense variant (scikit-learn's own estimator fails this check too)",
}

EXPECTED = {
    "SVC": SAMPLE_WEIGHT_EQUIV,
    "NuSVC": {
        **SAMPLE_WEIGHT_EQUIV,
        "check_class_weight_classifiers":
            "class weights make nu-SVC infeasible on this data (ValueError 'infeasible'); "
            "scikit-learn's NuSVC fails this check too",
    },
    "SVR": SAMPLE_WEIGHT_EQUIV,
    "NuSVR": SAMPLE_WEIGHT_EQUIV,
    "OneClassSVM": SAMPLE_WEIGHT_EQUIV,
    "LinearSVC": SAMPLE_WEIGHT_EQUIV,
    "LinearSVR": SAMPLE_WEIGHT_EQUIV,
    "SVCPath": {},
    "LADRegressor": {},
    "AIDSVC": {},
    "S3VMClassifier": {
        "check_classifiers_classes":
            "the check uses -1 as a class label; -1 marks unlabeled rows (scikit-learn's "
            "semi-supervised convention, as in SelfTrainingClassifier)",
    },
    "RobustSVC": {},
    "RobustSVR": {},
    "ODMClassifier": {
        "check_sample_weight_equivalence_on_dense_data":
            "ODM's loss is lam / m times the weighted sum, m the number of rows: repetition "
            "changes m (weights equal repetition with lam scaled by m / sum(w): "
            "test_sample_weights.py); also gamma='scale' and tol as for SVC",
        "check_sample_weight_equivalence_on_sparse_data": "as the dense variant",
    },
    "ODMC": {},
    "MinimumEnclosingBall": {},
    "CoresetSVDD": {
        "check_outliers_fit_predict":
            "hard-margin SVDD: the (1 + eps)-grown ball covers every training row by "
            "construction, so no training row is an outlier",
        "check_outliers_train":
            "hard-margin SVDD: no training row is an outlier (the check's other assertions, "
            "score_samples - offset_ = decision_function, are in test_methods.py)",
    },
    "CoresetOneClassSVM": {},
    "CoresetSVC": {},
}

ESTIMATORS = [
    mk.SVC(),
    mk.SVC(kernel="linear"),
    mk.SVC(kernel="precomputed"),
    mk.NuSVC(),
    mk.SVR(),
    mk.NuSVR(),
    mk.OneClassSVM(),
    mk.LinearSVC(),
    mk.LinearSVR(),
    mk.SVCPath(n_Cs=5),
    mk.SVCPath(kernel="linear", linear_engine=True, n_Cs=5),
    mk.LADRegressor(),
    mk.LADRegressor(algorithm="lp"),
    mk.AIDSVC(),
    mk.AIDSVC(kernel="rbf"),
    mk.S3VMClassifier(),
    mk.RobustSVC(),
    mk.RobustSVC(path="s"),
    mk.RobustSVR(),
    mk.ODMClassifier(),
    mk.ODMC(),
    mk.MinimumEnclosingBall(),
    mk.CoresetSVDD(),
    mk.CoresetOneClassSVM(),
    mk.CoresetSVC(),
]


def expected_failed(est):
    return EXPECTED[type(est).__name__]


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=expected_failed)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_expected_failures_are_listed_for_every_estimator():
    for est in ESTIMATORS:
        assert type(est).__name__ in EXPECTED
    with pytest.raises(KeyError):
        expected_failed(object())
