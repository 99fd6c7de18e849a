#!/usr/bin/env bash
# Runs every cargo-fuzz target for SECONDS each (default 60), one after the other, from fresh seed
# corpora, and prints one line per target: runs executed, corpus size, crashes. Crash inputs land
# in fuzz/artifacts/<target>/ (turn each into a regression test next to its parser).
# Usage: [MARGINKIT_BIN=path/to/marginkit] bash fuzz/run_all.sh [SECONDS] [TARGET,TARGET...]
# (needs nightly + cargo-fuzz; default: all targets)
set -uo pipefail
secs="${1:-60}"
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/.."
# A given MARGINKIT_BIN (an already built release CLI) skips the build.
if [ -z "${MARGINKIT_BIN:-}" ]; then
  ( cd "$root" && cargo build --release -q -p marginkit-cli ) || exit 1
  MARGINKIT_BIN="${CARGO_TARGET_DIR:-$root/target}/release/marginkit"
fi
MARGINKIT_BIN="$MARGINKIT_BIN" bash "$here/seed_corpus.sh" >/dev/null
cd "$here" || exit 1
targets=$(sed -n 's/^name = "\(fuzz_[a-z_]*\)"/\1/p' Cargo.toml)
if [ -n "${2:-}" ]; then targets=$(echo "$2" | tr ',' ' '); fi
status=0
for t in $targets; do
  log="$(mktemp)"
  cargo +nightly fuzz run -O -a "$t" "corpus/$t" -- -max_total_time="$secs" -print_final_stats=1 >"$log" 2>&1
  rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  corpus=$(find "corpus/$t" -type f | wc -l)
  crashes=$(find "artifacts/$t" -type f 2>/dev/null | wc -l)
  echo "$t: ${secs}s, ${runs:-?} runs, corpus $corpus files, crash files $crashes, exit $rc"
  if [ "$rc" -ne 0 ]; then
    status=1
    tail -n 30 "$log"
  fi
  rm -f "$log"
done
exit $status
