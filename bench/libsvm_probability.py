"""LIBSVM's `-b 1` training, opened up: the folds, cross-validated decision values and residuals
that LIBSVM's own Platt sigmoids and SVR Laplace scale are fitted on, next to LIBSVM's fitted values.

Used by crates/marginkit/tests/probability_libsvm.rs (through MARGINKIT_PYTHON, an interpreter with
libsvm-official from bench/requirements.txt). Usage: `python libsvm_probability.py JOB_JSON`; prints
one JSON object.

LIBSVM draws its probability folds from the C library's `rand()` and never seeds it. This script seeds
it with `srand(1)` (the C default) through ctypes before `svm_train(... -b 1)`, then seeds it again
and replays the same draws in the order svm.cpp makes them (svm_binary_svc_probability: one shuffle
per class pair, pairs in LIBSVM's order; svm_svr_probability: svm_cross_validation's shuffle), so
the folds below are the ones LIBSVM used. The fold models are trained by LIBSVM itself with the
options svm.cpp gives them (C = 1 with class weights C+ and C-, no probability).

Job (JSON):
  {"kind": "svc", "train": PATH, "test": PATH, "opts": "-t 2 -g 0.05 -e 1e-8", "c": 4.0,
   "folds": [[fold of each pair row], ...] or null}
    -> {"labels", "prob_a", "prob_b",
        "pairs": [{"folds": LIBSVM's fold of each pair row, "dec": CV decision values on them,
                   "given_dec": CV decision values on the given folds (when given)}],
        "test_dec": [[one value per pair] per test row], "test_prob": [[one per class] per row],
        "test_pred": [label per row]}
    Pair rows are class i's rows then class j's, each in file order (LIBSVM's svm_group_classes
    order, which marginkit uses too); the +1 class is class i.
  {"kind": "svr", "train": PATH, "opts": "-s 3 -t 2 -g 0.5 -c 1 -p 0.1 -e 1e-8", "folds": [...] or null}
    -> {"sigma": LIBSVM's probA, "folds": LIBSVM's fold of each row, "residuals": y - CV prediction
        on them, "given_residuals": the same on the given folds (when given)}
  {"kind": "predict", "model": PATH, "test": PATH}
    -> {"prob_a", "prob_b": as LIBSVM read them from the model file, "test_prob", "test_pred":
        LIBSVM's svm_predict_probability with that model}
"""

import ctypes
import json
import sys

from libsvm.svm import gen_svm_nodearray, libsvm
from libsvm.svmutil import svm_load_model, svm_read_problem, svm_train

LIBC = ctypes.CDLL(None)
N_FOLD = 5


def shuffled(n):
    """svm.cpp's shuffle: perm[i] swapped with perm[i + rand() % (n - i)]."""
    perm = list(range(n))
    for i in range(n):
        j = i + LIBC.rand() % (n - i)
        perm[i], perm[j] = perm[j], perm[i]
    return perm


def folds_of(perm):
    """Fold k holds perm[k n / 5 .. (k + 1) n / 5)."""
    n = len(perm)
    fold = [0] * n
    for k in range(N_FOLD):
        for i in perm[k * n // N_FOLD:(k + 1) * n // N_FOLD]:
            fold[i] = k
    return fold


def values(model, row, k):
    node, _ = gen_svm_nodearray(row)
    buf = (ctypes.c_double * k)()
    libsvm.svm_predict_values(model, node, buf)
    return buf[:k]


def binary_cv_dec(y, x, opts, cp, cn, fold, order):
    """Cross-validated decision values of one pair (y = +1 / -1), as svm_binary_svc_probability
    computes them on the folds `fold`, each fold model trained on its rows in the order `order`."""
    n = len(y)
    dec = [0.0] * n
    for k in range(N_FOLD):
        train = [i for i in order if fold[i] != k]
        test = [i for i in range(n) if fold[i] == k]
        ty = [y[i] for i in train]
        n_pos = sum(1 for v in ty if v > 0)
        if n_pos == 0 or n_pos == len(ty):
            for i in test:
                dec[i] = 0.0 if not ty else (1.0 if n_pos else -1.0)
            continue
        m = svm_train(ty, [x[i] for i in train], f"{opts} -q -c 1 -w1 {cp!r} -w-1 {cn!r}")
        first = m.get_labels()[0]
        for i in test:
            dec[i] = values(m, x[i], 1)[0] * first
    return dec


def svc(job):
    y, x = svm_read_problem(job["train"])
    ty, tx = svm_read_problem(job["test"])
    LIBC.srand(1)
    model = svm_train(y, x, f"{job['opts']} -q -b 1 -c {job['c']!r}")
    labels = model.get_labels()
    nc = len(labels)
    LIBC.srand(1)
    pairs = []
    p = 0
    for i in range(nc):
        for j in range(i + 1, nc):
            rows = [r for r in range(len(y)) if y[r] == labels[i]]
            rows += [r for r in range(len(y)) if y[r] == labels[j]]
            py = [1.0 if y[r] == labels[i] else -1.0 for r in rows]
            px = [x[r] for r in rows]
            # svm.cpp trains a fold on perm[0 .. begin) then perm[end .. n): perm's order.
            perm = shuffled(len(rows))
            fold = folds_of(perm)
            c = job["c"]
            dec = binary_cv_dec(py, px, job["opts"], c, c, fold, perm)
            entry = {"folds": fold, "dec": dec}
            if job.get("folds"):
                given = job["folds"][p]
                entry["given_dec"] = binary_cv_dec(
                    py, px, job["opts"], c, c, given, range(len(rows)))
            pairs.append(entry)
            p += 1
    n_pairs = nc * (nc - 1) // 2
    test_dec, test_prob, test_pred = [], [], []
    for row in tx:
        test_dec.append(values(model, row, n_pairs))
        node, _ = gen_svm_nodearray(row)
        buf = (ctypes.c_double * nc)()
        test_pred.append(libsvm.svm_predict_probability(model, node, buf))
        test_prob.append(buf[:nc])
    return {
        "labels": labels,
        "prob_a": [model.probA[k] for k in range(n_pairs)],
        "prob_b": [model.probB[k] for k in range(n_pairs)],
        "pairs": pairs,
        "test_dec": test_dec,
        "test_prob": test_prob,
        "test_pred": test_pred,
    }


def residuals(y, x, opts, fold, order):
    """y - the prediction of the model trained without the row's fold (svm_cross_validation), each
    fold model trained on its rows in the order `order`."""
    n = len(y)
    res = [0.0] * n
    for k in range(N_FOLD):
        train = [i for i in order if fold[i] != k]
        m = svm_train([y[i] for i in train], [x[i] for i in train], f"{opts} -q")
        for i in range(n):
            if fold[i] == k:
                res[i] = y[i] - values(m, x[i], 1)[0]
    return res


def svr(job):
    y, x = svm_read_problem(job["train"])
    LIBC.srand(1)
    model = svm_train(y, x, f"{job['opts']} -q -b 1")
    LIBC.srand(1)
    # svm_cross_validation trains a fold on perm[0 .. begin) then perm[end .. n): perm's order.
    perm = shuffled(len(y))
    fold = folds_of(perm)
    out = {"sigma": model.probA[0], "folds": fold,
           "residuals": residuals(y, x, job["opts"], fold, perm)}
    if job.get("folds"):
        out["given_residuals"] = residuals(y, x, job["opts"], job["folds"], range(len(y)))
    return out


def predict(job):
    model = svm_load_model(job["model"])
    _, tx = svm_read_problem(job["test"])
    nc = model.get_nr_class()
    n_pairs = nc * (nc - 1) // 2
    test_prob, test_pred = [], []
    for row in tx:
        node, _ = gen_svm_nodearray(row)
        buf = (ctypes.c_double * nc)()
        test_pred.append(libsvm.svm_predict_probability(model, node, buf))
        test_prob.append(buf[:nc])
    return {
        "prob_a": [model.probA[k] for k in range(n_pairs)],
        "prob_b": [model.probB[k] for k in range(n_pairs)],
        "test_prob": test_prob,
        "test_pred": test_pred,
    }


def main():
    job = json.loads(sys.argv[1])
    out = {"svc": svc, "svr": svr, "predict": predict}[job["kind"]](job)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
