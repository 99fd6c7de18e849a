#!/usr/bin/env bash
# Writes the committed seed corpora fuzz/seeds/<target>/ from tests/data/heart_scale, the small
# golden models and a few hand-written inputs (kept to a few hundred KB: state files come from
# fits on heart_scale's first 40 rows). The state-file seeds need a built CLI and the
# method_states example:
#   cargo build -p marginkit-cli && cargo build -p marginkit --example method_states
#   MARGINKIT_BIN=target/debug/marginkit MARGINKIT_STATES=target/debug/examples/method_states \
#     bash fuzz/seed_corpus.sh
# (the defaults are the release builds under target/).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
data="$here/../crates/marginkit/tests/data"
corpus="$here/seeds"
golden="$here/../tests/data/golden"
bin="${MARGINKIT_BIN:-$here/../target/release/marginkit}"
states="${MARGINKIT_STATES:-${CARGO_TARGET_DIR:-$here/../target}/release/examples/method_states}"
for exe in "$bin" "$states"; do
  if [ ! -x "$exe" ]; then
    echo "seed_corpus.sh: no executable at $exe (see the usage at the top of this script)" >&2
    exit 1
  fi
done
rm -rf "$corpus"
mkdir -p "$corpus/fuzz_libsvm" "$corpus/fuzz_csv" "$corpus/fuzz_scale_params" \
  "$corpus/fuzz_svm_model" "$corpus/fuzz_linear_model" "$corpus/fuzz_checkpoint" "$corpus/fuzz_weights" \
  "$corpus/fuzz_method_state"

# LIBSVM: heart_scale in chunks of 10 lines, each prefixed by a mode byte (see fuzz_libsvm.rs).
i=0
while read -r start; do
  mode=$(( i % 16 ))
  { printf "\\x$(printf %02x "$mode")"; sed -n "${start},$((start + 9))p" "$data/heart_scale"; } \
    > "$corpus/fuzz_libsvm/heart_$i"
  i=$((i + 1))
done < <(seq 1 10 270)
{ printf '\x00'; head -n 20 "$data/iris.scale.svm"; } > "$corpus/fuzz_libsvm/iris"
printf '\x00# c\n+1 qid:1 1:0.5 3:-2 # t\r\n-1 qid:1 2:1e-3\n' > "$corpus/fuzz_libsvm/svmlight"
printf '\x01 1 0:1 1:4 2:6\n-1 0:2 1:6 2:18\n' > "$corpus/fuzz_libsvm/precomputed"
{ printf '\x00'; head -n 5 "$data/heart_scale" | gzip -c; } > "$corpus/fuzz_libsvm/gzip"

# CSV: heart_scale's first rows as a dense CSV with a header (label first), plus quoting cases.
awk 'BEGIN { printf "\x09label"; for (k = 1; k <= 13; k++) printf ",f%d", k; print "" }
     NR <= 30 { for (k = 1; k <= 13; k++) v[k] = 0
                for (j = 2; j <= NF; j++) { split($j, a, ":"); v[a[1]] = a[2] }
                printf "%s", $1; for (k = 1; k <= 13; k++) printf ",%s", v[k]; print "" }' \
  "$data/heart_scale" > "$corpus/fuzz_csv/heart"
printf '\x00"a ""x""",b,y\r\n1,2,3\r\n\r\n4, "5" ,6\n' > "$corpus/fuzz_csv/quoted"
printf '\x01a;b;label\n1;2;3\n' > "$corpus/fuzz_csv/semicolon"
printf '\x02\xef\xbb\xbf1\t2\t3\n4\t5\t6\n' > "$corpus/fuzz_csv/tab_bom"

# svm-scale parameter files.
printf 'x\n-1 1\n1 29 77\n2 0 1\n4 94 200\n' > "$corpus/fuzz_scale_params/x_only"
printf 'y\n0 1\n-1 2\nx\n-1 1\n1 2 6\n2 0 1\n3 0 5\n4 -2.5e-07 0.3\n' > "$corpus/fuzz_scale_params/with_y"
printf 'x\r\n0 1\r\n\r\n1 0 10\r\n3 -5 5\r\n' > "$corpus/fuzz_scale_params/crlf"

# LIBSVM model files: the golden models up to 12 KB (linear, polynomial, RBF kernels, class
# weights, multiclass, one-class), plus hand-written precomputed / probability / SVR / sigmoid
# models.
for f in "$golden"/libsvm/*/*.model; do
  if [ "$(wc -c < "$f")" -le 12000 ]; then
    cp "$f" "$corpus/fuzz_svm_model/$(basename "$(dirname "$f")")_$(basename "$f")"
  fi
done
printf 'svm_type c_svc\nkernel_type precomputed\nnr_class 2\ntotal_sv 2\nrho 0.5\nlabel 1 -1\nnr_sv 1 1\nSV\n1 0:1 \n-1 0:3 \n' \
  > "$corpus/fuzz_svm_model/precomputed"
printf 'svm_type c_svc\nkernel_type rbf\ngamma 0.5\nnr_class 3\ntotal_sv 3\nrho 0.1 -0.2 0.3\nlabel 1 2 3\nprobA -1 -2 -3\nprobB 0.1 0.2 0.3\nnr_sv 1 1 1\nSV\n1 0.5 1:1 3:-1 \n-1 0.25 2:0.5 \n-0.5 -0.25 1:-1 2:2 \n' \
  > "$corpus/fuzz_svm_model/prob3"
printf 'svm_type epsilon_svr\nkernel_type polynomial\ndegree 2\ngamma 1\ncoef0 1\nnr_class 2\ntotal_sv 2\nrho 0\nprobA 0.7\nSV\n1 1:1 \n-1 2:1 \n' \
  > "$corpus/fuzz_svm_model/svr_prob"
printf 'svm_type one_class\nkernel_type sigmoid\ngamma 0.1\ncoef0 -1\nnr_class 2\ntotal_sv 1\nrho 0.2\nSV\n1 1:1e-300 4:1e300 \n' \
  > "$corpus/fuzz_svm_model/oneclass"

# LIBLINEAR model files (golden ones and the library's test models).
for f in "$golden"/liblinear/*/*.model "$data"/*.liblinear; do
  cp "$f" "$corpus/fuzz_linear_model/$(basename "$(dirname "$f")")_$(basename "$f")"
done
printf 'solver_type L2R_L2LOSS_SVR_DUAL\nnr_class 2\nnr_feature 2\nbias 1\nw\n0.5 \n-1e-300 \n3 \n' \
  > "$corpus/fuzz_linear_model/svr_bias"
printf 'solver_type L2R_L1LOSS_SVC_DUAL\nnr_class 3\nlabel 2 0 -7\nnr_feature 1\nbias -1\nw\n1 2 3 \n' \
  > "$corpus/fuzz_linear_model/three_class"
# Models flagged as not converged (the status line).
printf 'svm_type c_svc\nstatus interrupted\nkernel_type linear\nnr_class 2\ntotal_sv 1\nrho 0\nlabel 1 -1\nnr_sv 1 0\nSV\n1 1:1 \n' \
  > "$corpus/fuzz_svm_model/status"
printf 'solver_type L2R_L2LOSS_SVC_DUAL\nstatus max_iterations\nnr_class 2\nlabel 1 -1\nnr_feature 1\nbias -1\nw\n0.5 \n' \
  > "$corpus/fuzz_linear_model/status"

# Weight files (and /proc/meminfo-like text for -m auto).
printf '1\n2\n0\n# comment\n\n3.5\r\n1e-3\n' > "$corpus/fuzz_weights/plain"
printf 'MemTotal:  24000000 kB\nMemAvailable:  1234 kB\n' > "$corpus/fuzz_weights/meminfo"
printf '1\n-1\nnan\n' > "$corpus/fuzz_weights/bad"

# Fit checkpoints (binary state files): made by stopping real fits with --max-iter on the first
# 40 rows of heart_scale.
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
head -n 40 "$data/heart_scale" > "$tmp/heart40"
k=0
for args in "-c 100" "-s 1 -n 0.3" "-s 2" "-s 3 -c 10" "-s 4" "-b 1 -c 10"; do
  for it in 3 40; do
    # shellcheck disable=SC2086
    "$bin" train -q $args --max-iter $it --state-file "$tmp/s" "$tmp/heart40" "$tmp/m" 2>/dev/null || true
    if [ -f "$tmp/s" ]; then
      # The body without its checksum too (the target appends one itself).
      head -c -8 "$tmp/s" > "$corpus/fuzz_checkpoint/heart_${k}_${it}_body"
      mv "$tmp/s" "$corpus/fuzz_checkpoint/heart_${k}_$it"
    fi
  done
  k=$((k + 1))
done
head -n 30 "$data/iris.scale.svm" > "$tmp/iris30"
"$bin" train -q -c 100 --max-iter 20 --state-file "$tmp/s" "$tmp/iris30" "$tmp/m" 2>/dev/null || true
[ -f "$tmp/s" ] && mv "$tmp/s" "$corpus/fuzz_checkpoint/iris"
printf 'MKFITCK2' > "$corpus/fuzz_checkpoint/magic"
printf 'MKFITCK3' > "$corpus/fuzz_checkpoint/magic_current"

# AID, robust and path state files (only an interrupt writes them, so the CLI cannot make them
# reproducibly): the example `method_states` stops real runs after k observer reports, for every
# AID model, every robust method and both path engines, and writes their state files.
"$states" "$tmp/heart40" "$corpus/fuzz_method_state" >/dev/null
# Bodies without their checksums too (the target appends one itself).
for f in "$corpus/fuzz_method_state"/*; do
  head -c -8 "$f" > "${f}_body"
done
printf 'MKAIDCK1' > "$corpus/fuzz_method_state/magic_aid"
printf 'MKROBCK2' > "$corpus/fuzz_method_state/magic_robust"
printf 'MKPATHC2' > "$corpus/fuzz_method_state/magic_path"
# The current versions (with the run record); the committed state files above may be of the
# previous version, which the readers still accept.
printf 'MKAIDCK2' > "$corpus/fuzz_method_state/magic_aid_current"
printf 'MKROBCK4' > "$corpus/fuzz_method_state/magic_robust_current"
printf 'MKPATHC3' > "$corpus/fuzz_method_state/magic_path_current"
echo "seed corpora written under $corpus"
