"""marginkit: scikit-learn-compatible SVMs over the marginkit Rust core.

Estimators: SVC, NuSVC, SVR, NuSVR, OneClassSVM (LIBSVM formulations, SMO), LinearSVC,
LinearSVR (LIBLINEAR formulations, dual coordinate descent), SVCPath (the regularization path
over C with safe sample screening). Training releases the GIL; errors from the Rust core arrive
as ValueError (bad parameters or data) or RuntimeError (numerical breakdown) with its message.
"""

from ._core import __version__
from .linear import LinearSVC, LinearSVR
from .path import SVCPath
from .svm import SVC, SVR, NuSVC, NuSVR, OneClassSVM

__all__ = [
    "SVC",
    "NuSVC",
    "SVR",
    "NuSVR",
    "OneClassSVM",
    "LinearSVC",
    "LinearSVR",
    "SVCPath",
    "__version__",
]
