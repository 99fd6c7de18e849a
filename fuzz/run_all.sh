#!/usr/bin/env bash
# Runs every cargo-fuzz target for SECONDS each (default 60), one after the other, from fresh seed
# corpora, and prints one line per target: runs executed, corpus size, crashes. Crash inputs land
# in fuzz/artifacts/<target>/ (turn each into a regression test next to its parser).
# Usage: [MARGINKIT_BIN=path/to/marginkit] bash fuzz/run_all.sh [SECONDS] [TARGET,TARGET...]
# (needs nightly + cargo-fuzz; default: all targets). FUZZ_JOBS=k: k targets at a time.
set -uo pipefail
secs="${1:-60}"
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/.."
# A given MARGINKIT_BIN (an already built release CLI) skips the build.
if [ -z "${MARGINKIT_BIN:-}" ]; then
  ( cd "$root" && cargo build --release -q -p marginkit-cli ) || exit 1
  MARGINKIT_BIN="${CARGO_TARGET_DIR:-$root/target}/release/marginkit"
fi
# The AID / robust state files of fuzz_method_state come from an example (see seed_corpus.sh).
if [ -z "${MARGINKIT_STATES:-}" ]; then
  ( cd "$root" && cargo build --release -q -p marginkit --example method_states ) || exit 1
  MARGINKIT_STATES="${CARGO_TARGET_DIR:-$root/target}/release/examples/method_states"
fi
MARGINKIT_BIN="$MARGINKIT_BIN" MARGINKIT_STATES="$MARGINKIT_STATES" bash "$here/seed_corpus.sh" >/dev/null
cd "$here" || exit 1
targets=$(sed -n 's/^name = "\(fuzz_[a-z_]*\)"/\1/p' Cargo.toml)
if [ -n "${2:-}" ]; then targets=$(echo "$2" | tr ',' ' '); fi
# FUZZ_JOBS=k runs k targets at a time (default 1: one after the other). The budget is wall
# time per target, so on a busy machine concurrent targets each execute fewer inputs.
jobs="${FUZZ_JOBS:-1}"
logs="$(mktemp -d)"
run_one() {
  local t="$1"
  cargo +nightly fuzz run -O -a "$t" "corpus/$t" -- -max_total_time="$secs" -print_final_stats=1 \
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
