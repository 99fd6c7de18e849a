"""Shared helpers: input conversion for the Rust core, parameter resolution, reports."""

import numbers
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.class_weight import compute_class_weight

from . import _core

# The library's defaults of the estimators' parameters (family -> parameter -> value): the
# estimators' __init__ defaults are read from here, so each number is the library's own and
# help() shows it. Defaults that are scikit-learn conventions (the SVC family's C, tol and
# cache_size, random_state) stay literal.
DEFAULTS = _core.DEFAULTS


def to_core(X):
    """What `marginkit._core` takes for a feature matrix.

    Dense input must already be a float64 ndarray (validate_data with dtype=np.float64,
    order="C" makes it one, without copying an array that already is); the Rust side then
    copies it once into the library's own storage. CSR input goes as (data, indices, indptr,
    n_cols); a matrix without canonical format (unsorted or duplicate indices) is canonicalized
    on a copy, the caller's matrix is never modified.
    """
    if sp.issparse(X):
        if X.format != "csr":
            X = X.tocsr()
        if not X.has_canonical_format:
            X = X.copy()
            X.sum_duplicates()
        data = np.ascontiguousarray(X.data, dtype=np.float64)
        indices = X.indices
        indptr = X.indptr
        if indices.dtype not in (np.int32, np.int64):
            indices = indices.astype(np.int64)
        if indptr.dtype not in (np.int32, np.int64):
            indptr = indptr.astype(np.int64)
        return (data, indices, indptr, int(X.shape[1]))
    return X


def resolve_gamma(gamma, X):
    """scikit-learn's gamma: 'scale' = 1 / (n_features * X.var()), computed here with numpy as
    scikit-learn computes it (bit-identical); 'auto' is the library's default, 1 / n_features."""
    n_features = X.shape[1]
    if isinstance(gamma, str):
        if gamma == "scale":
            var = _variance(X)
            return 1.0 / (n_features * var) if var != 0 else 1.0
        if gamma == "auto":
            return _core.default_gamma(n_features)
        raise ValueError(f"gamma must be 'scale', 'auto' or a positive float, got {gamma!r}")
    if isinstance(gamma, numbers.Real) and not isinstance(gamma, bool):
        return float(gamma)
    raise ValueError(f"gamma must be 'scale', 'auto' or a positive float, got {gamma!r}")


# Above this many stored values the variance is computed without a temporary of X's size (the
# input is never copied on the Python side, see docs/python.md); below it exactly as
# scikit-learn computes it, so that gamma='scale' is bit-identical to scikit-learn's.
_BIG = 1 << 20
_BLOCK_VALUES = 1 << 15


def _variance(X):
    """Variance of all entries of X (zeros included for sparse X), scikit-learn's formula."""
    if sp.issparse(X):
        if X.nnz < _BIG:
            return X.multiply(X).mean() - X.mean() ** 2
        size = X.shape[0] * X.shape[1]
        return float(np.dot(X.data, X.data)) / size - (X.data.sum() / size) ** 2
    if X.size < _BIG:
        return X.var()
    # Two passes in row blocks: the mean, then the squared deviations (temporaries of one block).
    mean = X.mean()
    rows = max(1, _BLOCK_VALUES // max(X.shape[1], 1))
    ss = 0.0
    for i in range(0, X.shape[0], rows):
        d = X[i:i + rows] - mean
        ss += float(np.einsum("ij,ij->", d, d))
    return ss / X.size


def check_choice(name, value, choices):
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}, got {value!r}")


# The Rust core takes counts as 64-bit integers (degree as 32-bit): larger values are refused
# here with a ValueError instead of PyO3's OverflowError.
_I64_MAX = (1 << 63) - 1
_U64_MAX = (1 << 64) - 1


def check_int(name, value, low=None, high=_I64_MAX):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if low is not None and value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    if high is not None and value > high:
        raise ValueError(f"{name} must be <= {high}, got {value}")
    return int(value)


def check_real(name, value):
    """Type check only; ranges are the Rust library's (its message is the one users see)."""
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    return float(value)


def max_iter_arg(max_iter):
    """-1 (scikit-learn's 'no limit') -> None; else a positive iteration count."""
    max_iter = check_int("max_iter", max_iter)
    if max_iter == -1:
        return None
    if max_iter < 1:
        raise ValueError(f"max_iter must be -1 (no limit) or >= 1, got {max_iter}")
    return max_iter


def seed_from(random_state):
    """A 64-bit seed for the Rust core from scikit-learn's random_state."""
    if random_state is None:
        return 0
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0 or random_state > _U64_MAX:
            raise ValueError(f"random_state must be in [0, 2^64 - 1], got {random_state}")
        return int(random_state)
    rng = check_random_state(random_state)
    return int(rng.randint(np.iinfo(np.int32).max))


def class_weight_pairs(class_weight, classes, y_enc):
    """(class index, weight) pairs for the Rust core, and scikit-learn's class_weight_."""
    if class_weight is None:
        return [], np.ones(len(classes), dtype=np.float64)
    if isinstance(class_weight, str) and class_weight == "balanced":
        cw = compute_class_weight("balanced", classes=classes, y=classes[y_enc])
    elif isinstance(class_weight, dict):
        known = set(classes.tolist())
        unknown = [k for k in class_weight if k not in known]
        if unknown:
            raise ValueError(f"class_weight has labels {unknown} that are not in the data")
        cw = np.ones(len(classes), dtype=np.float64)
        for k, v in class_weight.items():
            cw[int(np.searchsorted(classes, k))] = check_real("class_weight value", v)
    else:
        raise ValueError(f"class_weight must be a dict, 'balanced' or None, got {class_weight!r}")
    cw = np.asarray(cw, dtype=np.float64)
    return [(float(i), float(w)) for i, w in enumerate(cw)], cw


def warn_status(report, what):
    bad = [s for s in report["status"] if s != "converged"]
    if bad:
        warnings.warn(
            f"{what}: the solver stopped before convergence ({', '.join(sorted(set(bad)))}); "
            "increase max_iter or loosen tol",
            ConvergenceWarning,
        )
    for w in report.get("warnings", []):
        warnings.warn(w, UserWarning)


def warn_stop(what, stop, ok, hint):
    """ConvergenceWarning when a method stopped for another reason than the ones in `ok`."""
    if stop not in ok:
        warnings.warn(f"{what}: stopped before optimality ({stop}); {hint}", ConvergenceWarning)


def report_dict(raw):
    keys = ("status", "iterations", "objective", "warnings", "rust_seconds", "total_seconds")
    return {k: raw[k] for k in keys if k in raw}
