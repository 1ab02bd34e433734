#!/usr/bin/env bash
# bench/uprobe_overhead.sh BUILD_DIR [CALLS] [REPS]: what a uprobe costs per probed call (docs/api.md "Cost").
# tests/live/getpid_calls.c (built as BUILD_DIR/tests/getpid_calls) times CALLS calls of libc's getpid (default
# 1000000) with CLOCK_MONOTONIC and prints ns per call. Each rep (default 5) runs, alternately:
#   unprobed  nvtrace run --no-api -- getpid_calls CALLS                  (traced, no probe)
#   probed    nvtrace run --uprobe libc:getpid -- getpid_calls CALLS      (entry + return probe, both recorded)
#   armed     getpid_calls CALLS outside nvtrace while a run with --uprobe libc:getpid traces `sleep`: the probes trap
#             in every process that runs the code; the instance's pid filter drops the events of this one
# and prints each rep's ns per call side by side, then the medians and the probe's cost (probed - unprobed).
# Needs root, tracefs and uprobe_events. Not part of the test suite.
set -euo pipefail
build=$(cd "${1:?usage: bench/uprobe_overhead.sh BUILD_DIR [CALLS] [REPS]}" && pwd)
calls=${2:-1000000}
reps=${3:-5}
nv=$build/tracer/nvtrace
prog=$build/tests/getpid_calls
[[ -x $nv && -x $prog ]] || { echo "uprobe_overhead.sh: build $nv and $prog first (ninja nvtrace getpid_calls)" >&2; exit 2; }
[[ -e /sys/kernel/tracing/uprobe_events ]] || { echo "uprobe_overhead.sh: no uprobe_events on this kernel" >&2; exit 3; }
work=$(mktemp -d /tmp/nvtrace-uprobe-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
ns() { sed -n 's/.*ns_per_call=\([0-9.]*\).*/\1/p'; }
run_one() {  # $1: capture directory name; the rest: nvtrace run options
    local d=$work/$1; shift
    "$nv" run -q --no-preload --out "$d" "$@" -- "$prog" "$calls" | ns
    rm -rf "$d"
}
armed_one() {
    local d=$work/armed
    "$nv" run -q --no-preload --uprobe libc:getpid --out "$d" -- sleep 30 >/dev/null 2>&1 &
    local bg=$!
    # Armed once the run's group is in uprobe_events.
    for _ in $(seq 1 300); do grep -q "^p:nvtrace_$bg/" /sys/kernel/tracing/uprobe_events && break; sleep 0.05; done
    "$prog" "$calls" | ns
    kill -INT "$bg"; wait "$bg" || true
    rm -rf "$d"
}
printf "%-4s %12s %12s %12s   (ns per getpid call, %d calls)\n" rep unprobed probed armed "$calls"
rows=()
for r in $(seq 1 "$reps"); do
    u=$(run_one unprobed --no-api)
    p=$(run_one probed --uprobe libc:getpid)
    a=$(armed_one)
    printf "%-4s %12s %12s %12s\n" "$r" "$u" "$p" "$a"
    rows+=("$u $p $a")
done
printf "%s\n" "${rows[@]}" | python3 -c '
import statistics, sys
rows = [list(map(float, l.split())) for l in sys.stdin if l.strip()]
u, p, a = (statistics.median(c) for c in zip(*rows))
print(f"median: unprobed {u:.1f} ns, probed {p:.1f} ns, armed (not recorded) {a:.1f} ns")
print(f"a probed call costs {p - u:.0f} ns more (entry + return, both recorded); {a - u:.0f} ns when only trapped")
print(f"at 1e5 probed calls/s: {(p - u) * 1e5 / 1e9 * 100:.1f} % of one CPU")
'
