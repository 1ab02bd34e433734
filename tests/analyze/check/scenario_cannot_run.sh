#!/bin/sh
# scenario_cannot_run.sh NVTRACE SCENARIO_DIR PROGRAM: on a machine without the NVIDIA driver (CI), a CUDA scenario
# must say "cannot run here" cleanly: the program alone exits 77 with one "cannot run here: ..." line on stderr, and
# `nvtrace run SCENARIO_DIR` exits 3 with "cannot run here: ..." (before tracing anything, so no root is needed).
# Exit 77 (skipped) where the driver is present: there scripts/gpu-check.sh runs the scenarios for real.
nvtrace=$1 dir=$2 prog=$3
if [ -e /dev/nvidiactl ] || [ -e /proc/driver/nvidia/version ]; then
    echo "the NVIDIA driver is present: this test is for machines without it"
    exit 77
fi
err=$("$prog" 2>&1 >/dev/null)
status=$?
[ "$status" -eq 77 ] || { echo "FAIL: $prog exited $status, expected 77 ($err)"; exit 1; }
[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || { echo "FAIL: expected one line on stderr, got: $err"; exit 1; }
case $err in "cannot run here: "*) ;; *) echo "FAIL: stderr is not 'cannot run here: ...': $err"; exit 1 ;; esac
out=$("$nvtrace" run --bin-dir "$(dirname "$prog")" "$dir" 2>&1)
status=$?
[ "$status" -eq 3 ] || { echo "FAIL: nvtrace run $dir exited $status, expected 3: $out"; exit 1; }
case $out in "cannot run here: "*) ;; *) echo "FAIL: nvtrace run printed: $out"; exit 1 ;; esac
echo "ok: $err | $out"
