#!/usr/bin/env bash
# Runs every cargo-fuzz target for SECONDS each (default 60) with AddressSanitizer (nightly), one
# after the other, and prints one line per target: runs executed, corpus size, crashes. Inputs:
# the committed fuzz/regressions/<target>/ and fuzz/seeds/<target>/; new corpus entries go to the
# git-ignored fuzz/corpus/<target>/, which later runs start from too. Crash inputs land in
# fuzz/artifacts/<target>/ (keep each in fuzz/regressions/<target>/ and as a unit test next to
# its parser). CI runs the stable, sanitizer-free variant: fuzz/ci.sh.
# Usage: bash fuzz/run_all.sh [SECONDS] [TARGET,TARGET...]
# (needs nightly + cargo-fuzz; default: all targets). FUZZ_JOBS=k: k targets at a time.
set -uo pipefail
secs="${1:-60}"
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here" || exit 1
targets=$(sed -n 's/^name = "\(fuzz_[a-z_]*\)"/\1/p' Cargo.toml)
if [ -n "${2:-}" ]; then targets=$(echo "$2" | tr ',' ' '); fi
# FUZZ_JOBS=k runs k targets at a time (default 1: one after the other). The budget is wall
# time per target, so on a busy machine concurrent targets each execute fewer inputs.
jobs="${FUZZ_JOBS:-1}"
logs="$(mktemp -d)"
run_one() {
  local t="$1"
  mkdir -p "corpus/$t" "seeds/$t" "regressions/$t"
  cargo +nightly fuzz run -O -a "$t" "corpus/$t" "regressions/$t" "seeds/$t" -- \
    -max_total_time="$secs" -print_final_stats=1 \
    >"$logs/$t.log" 2>&1
  echo $? >"$logs/$t.rc"
}
if [ "$jobs" -gt 1 ]; then
  # Build every target first (one cargo at a time), then run them concurrently.
  cargo +nightly fuzz build -O -a >"$logs/build.log" 2>&1 || { tail -n 30 "$logs/build.log"; exit 1; }
fi
running=0
for t in $targets; do
  if [ "$jobs" -gt 1 ]; then
    run_one "$t" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
      wait -n
      running=$((running - 1))
    fi
  else
    run_one "$t"
  fi
done
wait
status=0
for t in $targets; do
  rc=$(cat "$logs/$t.rc" 2>/dev/null || echo '?')
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$logs/$t.log" | tail -1)
  corpus=$(find "corpus/$t" -type f | wc -l)
  crashes=$(find "artifacts/$t" -type f 2>/dev/null | wc -l)
  echo "$t: ${secs}s, ${runs:-?} runs, corpus $corpus files, crash files $crashes, exit $rc"
  if [ "$rc" != 0 ]; then
    status=1
    tail -n 30 "$logs/$t.log"
  fi
done
rm -rf "$logs"
exit $status
