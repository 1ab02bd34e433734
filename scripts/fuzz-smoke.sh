#!/usr/bin/env bash
# fuzz-smoke.sh [SECONDS]: builds the libFuzzer targets (fuzz/) with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer in build-fuzz/, and runs each for SECONDS (default 20). Fails on any crash.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
if ! command -v clang++ >/dev/null; then
  if [ "${CI:-}" = true ]; then echo "fuzz-smoke: clang++ missing" >&2; exit 1; fi
  echo "fuzz-smoke: SKIPPED: clang++ not installed"; exit 0
fi
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DNVTRACE_FUZZ=ON -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
targets=$(cd fuzz && ls fuzz_*.cpp 2>/dev/null | sed 's/\.cpp$//')
[ -n "$targets" ] || { echo "fuzz-smoke: no fuzz targets"; exit 0; }
# shellcheck disable=SC2086
cmake --build build-fuzz -j"$(nproc)" --target $targets
passed=0
failed=0
for t in $targets; do
  corpus=build-fuzz/corpus/$t
  mkdir -p "$corpus"
  seeds=()
  [ -d tests/data/cases ] && seeds=(tests/data/cases)
  if build-fuzz/fuzz/"$t" -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
       -print_final_stats=0 "$corpus" "${seeds[@]}" >build-fuzz/"$t".log 2>&1; then
    passed=$((passed + 1)); echo "fuzz $t: ok ($secs s)"
  else
    failed=$((failed + 1)); echo "fuzz $t: FAILED"; tail -40 build-fuzz/"$t".log
  fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
