#!/usr/bin/env bash
# Fuzzes every target on the stable toolchain for SECONDS each (default 25), as CI runs it.
#
# cargo-fuzz builds without a sanitizer (`-s none`, which needs no nightly flags) but with
# libFuzzer's coverage instrumentation and with debug assertions (`-a`: integer overflow is a
# crash too). Each run first executes every committed input, fuzz/regressions/<target>/ (inputs
# that once crashed) and fuzz/seeds/<target>/ (the seed corpus), then mutates for SECONDS. New
# corpus entries go to a scratch directory under target/, so the committed corpora never change.
#
# A crash, a panic, a timeout (> 10 s on one input) or an allocation over libFuzzer's limit
# fails the run: the input is saved under target/fuzz-artifacts/<target>/ and its path and
# base64 are printed. Keep it as a regression: copy it into fuzz/regressions/<target>/ and add
# a unit test next to the parser.
#
# Usage: bash fuzz/ci.sh [SECONDS] [TARGET,TARGET...]
set -euo pipefail
secs="${1:-25}"
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
cargo_fuzz_version="0.13.2"

if ! cargo fuzz --version 2>/dev/null | grep -qF "$cargo_fuzz_version"; then
  cargo install --locked cargo-fuzz --version "$cargo_fuzz_version"
fi

target_dir="$root/target/fuzz"
host="$(rustc -vV | sed -n 's/^host: //p')"
cd "$here"
targets=$(sed -n 's/^name = "\(fuzz_[a-z_]*\)"/\1/p' Cargo.toml)
if [ -n "${2:-}" ]; then targets=$(echo "$2" | tr ',' ' '); fi

echo "== fuzz: build (stable, no sanitizer, debug assertions)"
cargo fuzz build -s none -O -a --target-dir "$target_dir"

status=0
for t in $targets; do
  exe="$target_dir/$host/release/$t"
  scratch="$root/target/fuzz-corpus/$t"
  artifacts="$root/target/fuzz-artifacts/$t"
  rm -rf "$scratch" "$artifacts"
  mkdir -p "$scratch" "$artifacts" "$here/regressions/$t" "$here/seeds/$t"
  log="$artifacts/log"
  rc=0
  "$exe" "$scratch" "$here/regressions/$t" "$here/seeds/$t" \
    -max_total_time="$secs" -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" >"$log" 2>&1 || rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(sed -n 's/.*\(cov: [0-9]*\).*/\1/p' "$log" | tail -1)
  echo "$t: ${secs}s, ${runs:-?} runs, ${cov:-cov: ?}, exit $rc"
  crashes=$(find "$artifacts" -type f ! -name log)
  if [ "$rc" != 0 ] || [ -n "$crashes" ]; then
    status=1
    tail -n 40 "$log"
    for f in $crashes; do
      echo "-- crashing input of $t saved at $f (base64):"
      base64 "$f" | head -c 4096
      echo
    done
  fi
done
exit $status
