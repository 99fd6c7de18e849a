"""marginkit: scikit-learn-compatible SVMs over the marginkit Rust core.

Estimators: SVC, NuSVC, SVR, NuSVR, OneClassSVM (LIBSVM formulations, SMO), LinearSVC,
LinearSVR (LIBLINEAR formulations, dual coordinate descent), SVCPath (the regularization path
over C with safe sample screening), LADRegressor, AIDSVC and S3VMClassifier (aggregate & iterative
disaggregate), RobustSVC and RobustSVR (ramp loss, the outlier path), ODMClassifier and ODMC
(optimal margin distribution machine and clustering), MinimumEnclosingBall, CoresetSVDD,
CoresetOneClassSVM and CoresetSVC (core-sets, optionally by distributed consensus). Training
releases the GIL; errors from the Rust core arrive as ValueError (bad parameters or data) or
RuntimeError (numerical breakdown) with its message.
"""

from ._core import __version__
from .aid import AIDSVC, LADRegressor
from .coreset import CoresetOneClassSVM, CoresetSVC, CoresetSVDD, MinimumEnclosingBall
from .linear import LinearSVC, LinearSVR
from .odm import ODMC, ODMClassifier
from .path import SVCPath
from .robust import RobustSVC, RobustSVR
from .s3vm import S3VMClassifier
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
    "LADRegressor",
    "AIDSVC",
    "S3VMClassifier",
    "RobustSVC",
    "RobustSVR",
    "ODMClassifier",
    "ODMC",
    "MinimumEnclosingBall",
    "CoresetSVDD",
    "CoresetOneClassSVM",
    "CoresetSVC",
    "__version__",
]
