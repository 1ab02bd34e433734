#!/usr/bin/env bash
# gpu-check.sh [BUILD_DIR] [OUT_DIR]: tier 4 of DESIGN.md section 7 on a machine with the NVIDIA driver.
#
# Probes what the machine allows (nvtrace doctor), then runs every CUDA scenario with the most it can capture and
# keeps everything in OUT_DIR (default gpu-check-<UTC time>/):
#   1. nvtrace run scenarios/NAME                  (function_graph on nvidia + nvidia_uvm, ioctls, kernel log)
#   2. if the function tracer is refused there:     nvtrace run --no-graph scenarios/NAME  (the report then says
#      which checks were inconclusive for lack of function tracing)
#   3. if nvtrace cannot trace at all (no tracefs, e.g. a sandboxing kernel): the scenario program alone (TAP)
# Budget: under 8 minutes (each run is limited to 75 s; the rest is skipped, and said so, past 7 minutes).
# Builds what is missing in BUILD_DIR (default: build) first. Needs root or password-less sudo for tracing.
# Exit: 0 when every scenario ran and no check failed; 1 when a check failed; 3 when nothing could run.
set -u
cd "$(dirname "$0")/.." || exit 2
BUILD=${1:-build}
OUT=${2:-gpu-check-$(date -u +%Y%m%dT%H%M%SZ)}
SCENARIOS="cuda-malloc memcpy hostregister hostregister-bar bar-reserve-map managed"
START=$(date +%s)
mkdir -p "$OUT"
log() { echo "gpu-check: $*" | tee -a "$OUT/gpu-check.log" >&2; }

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
    if sudo -n true 2>/dev/null; then SUDO=(sudo -n); else log "not root and no password-less sudo: tracing will be refused"; fi
fi

NVTRACE=$BUILD/tracer/nvtrace
targets="nvtrace"
for s in $SCENARIOS; do targets="$targets scenario-$s"; done
if [ ! -x "$NVTRACE" ] || [ ! -x "$BUILD/scenarios/cuda-malloc/scenario-cuda-malloc" ]; then
    log "building $targets in $BUILD"
    cmake -S . -B "$BUILD" > "$OUT/cmake.txt" 2>&1 || { log "cmake failed: $OUT/cmake.txt"; exit 2; }
    # shellcheck disable=SC2086
    cmake --build "$BUILD" --parallel "$(nproc)" --target $targets > "$OUT/build.txt" 2>&1 \
        || { log "build failed: $OUT/build.txt"; exit 2; }
fi

{ uname -a; cat /proc/driver/nvidia/version 2>&1; nvidia-smi 2>&1 | head -20; } > "$OUT/machine.txt"
"${SUDO[@]}" "$NVTRACE" doctor > "$OUT/doctor.txt" 2>&1
log "nvtrace doctor exit $? ($OUT/doctor.txt)"
"${SUDO[@]}" "$NVTRACE" scenarios > "$OUT/scenarios.txt" 2>&1

failed=0 ran=0
: > "$OUT/statuses.txt"
for s in $SCENARIOS; do
    if [ $(( $(date +%s) - START )) -gt 420 ]; then
        log "$s: skipped, the 8-minute budget is nearly spent"
        echo "$s skipped" >> "$OUT/statuses.txt"
        continue
    fi
    mode=graph
    timeout 75 "${SUDO[@]}" "$NVTRACE" run --out "$OUT/$s" scenarios/"$s" > "$OUT/$s.txt" 2>&1
    st=$?
    if [ "$st" -ne 0 ] && [ "$st" -ne 1 ] && grep -qE "function_graph|function tracer|matched no traceable|filter" "$OUT/$s.txt"; then
        mode=no-graph
        mv "$OUT/$s.txt" "$OUT/$s.graph-refused.txt"
        timeout 75 "${SUDO[@]}" "$NVTRACE" run --no-graph --out "$OUT/$s" scenarios/"$s" > "$OUT/$s.txt" 2>&1
        st=$?
    fi
    if { [ "$st" -ne 0 ] && [ "$st" -ne 1 ] && ! grep -q "^cannot run here" "$OUT/$s.txt"; } ||
       grep -qE "tracefs is not mounted|needs root" "$OUT/$s.txt"; then
        mode=program-only
        mv "$OUT/$s.txt" "$OUT/$s.nvtrace-refused.txt"
        timeout 75 "$BUILD/scenarios/$s/scenario-$s" > "$OUT/$s.txt" 2>&1
        st=$?
        [ "$st" -eq 77 ] && st=3
    fi
    echo "$s $mode $st" >> "$OUT/statuses.txt"
    case $st in
        0) ran=$((ran + 1)); log "$s ($mode): ok" ;;
        1) ran=$((ran + 1)); failed=1; log "$s ($mode): a check FAILED ($OUT/$s.txt)" ;;
        3) log "$s ($mode): $(grep -m1 '^cannot run here' "$OUT/$s.txt" || echo 'cannot run here')" ;;
        *) failed=1; log "$s ($mode): exit $st ($OUT/$s.txt)" ;;
    esac
done
log "done in $(( $(date +%s) - START )) s: $ran scenario(s) ran; reports in $OUT/"
[ "$failed" -ne 0 ] && exit 1
[ "$ran" -eq 0 ] && exit 3
exit 0
