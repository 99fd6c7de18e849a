#!/usr/bin/env bash
# Builds the (git-ignored) seed corpora in fuzz/corpus/<target>/ from tests/data/heart_scale and
# a few hand-written inputs. Usage: bash fuzz/seed_corpus.sh   (from anywhere)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
data="$here/../crates/marginkit/tests/data"
corpus="$here/corpus"
mkdir -p "$corpus/fuzz_libsvm" "$corpus/fuzz_csv" "$corpus/fuzz_scale_params"

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
echo "seed corpora written under $corpus"
