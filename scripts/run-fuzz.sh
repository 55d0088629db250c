#!/bin/sh
# Run every libFuzzer target of a fuzz build for SECONDS each, one after
# the other: its corpus grows in BUILD/corpus/NAME (kept between runs),
# seeded from tests/fuzz/seeds/NAME (inputs that once broke a parser); a
# crash leaves its input as BUILD/crash-* and fails the run.
# Usage: run-fuzz.sh BUILD SECONDS
set -e
build=$1
seconds=$2
found=0
for t in "$build"/fuzz/fuzz_*; do
  [ -x "$t" ] || continue
  found=1
  name=$(basename "$t")
  mkdir -p "$build/corpus/$name"
  seeds=$(dirname "$0")/../tests/fuzz/seeds/$name
  [ -d "$seeds" ] || seeds=
  echo "[fuzz] $name: $seconds s (corpus $build/corpus/$name${seeds:+, seeds $seeds})"
  if ! "$t" -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$build/" \
       "$build/corpus/$name" $seeds >"$build/$name.log" 2>&1; then
    tail -n 40 "$build/$name.log"
    echo "[fuzz] $name FAILED: the input that broke it is in $build/ (crash-*, leak-*, timeout-*); log $build/$name.log"
    exit 1
  fi
  grep -E "^stat::number_of_executed_units|^stat::new_units_added" "$build/$name.log" | tr '\n' ' '
  echo
done
[ "$found" = 1 ] || { echo "[fuzz] no fuzz targets in $build/fuzz"; exit 1; }
