#!/usr/bin/env bash
# builtin_standin_live.sh NVTRACE WORK (ctest scenario.builtin_driver_standin_runs, LABELS live): `nvtrace run` of a
# scenario that requires modules nvidia and nvidia_uvm and traces them with function_graph, on a stand-in for a
# machine whose driver is built in and whose kernel offers no function_graph ($NVTRACE_TEST_SYSFS_ROOT: module/nvidia
# and module/nvidia_uvm without initstate, kernel/tracing/available_tracers "function nop", as on the CI kernel).
# It must not be refused ("cannot run here"): the program runs, without the graph, report.json says why
# (environment.function_graph), and the call-graph check is inconclusive with that reason while the result check
# passes. Needs root and tracefs (exit 77 otherwise; a failure with CI=true).
set -u
NVTRACE=$1 W=$2
skip() { echo "skipped: $*"; if [ "${CI:-}" = true ]; then exit 1; fi; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root"
[ -r /sys/kernel/tracing/trace_marker ] || [ -r /sys/kernel/debug/tracing/trace_marker ] || skip "tracefs is not mounted"
rm -rf "$W"; mkdir -p "$W/sys/module/nvidia/parameters" "$W/sys/module/nvidia_uvm/parameters" \
    "$W/sys/kernel/tracing" "$W/proc/driver/nvidia" "$W/scenario" "$W/bin"
echo "function nop" > "$W/sys/kernel/tracing/available_tracers"
echo "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build" > "$W/proc/driver/nvidia/version"
cat > "$W/scenario/scenario.conf" <<'CONF'
name standin
summary a scenario that needs the NVIDIA driver (stand-in)
program scenario-standin
module nvidia nvidia_uvm
max-depth 8
requires module nvidia
requires module nvidia_uvm
CONF
cat > "$W/scenario/path.expect" <<'EXPECT'
format nvtrace.expect/1
check entry
  chain nvidia_unlocked_ioctl > nvidia_ioctl
check ran
  result standin = ok
EXPECT
cat > "$W/bin/scenario-standin" <<'PROG'
#!/bin/sh
# The marker a scenario program writes (scenarios/common/scenario_util.hpp), through nvtrace's marker fd or path.
if [ -n "${NVTRACE_TRACE_MARKER_FD:-}" ]; then eval "printf 'nvtrace-result: standin=ok' >&$NVTRACE_TRACE_MARKER_FD"
elif [ -n "${NVTRACE_TRACE_MARKER:-}" ]; then printf 'nvtrace-result: standin=ok' > "$NVTRACE_TRACE_MARKER"; fi
echo "ok 1 - stand-in ran"
PROG
chmod +x "$W/bin/scenario-standin"
NVTRACE_TEST_SYSFS_ROOT=$W/sys NVTRACE_TEST_PROCFS_ROOT=$W/proc \
    "$NVTRACE" run --bin-dir "$W/bin" --out "$W/out" "$W/scenario" > "$W/stdout.txt" 2> "$W/stderr.txt"
rc=$?
cat "$W/stdout.txt" "$W/stderr.txt"
fail=0
bad() { echo "FAIL: $*"; fail=1; }
grep -q "cannot run here" "$W/stdout.txt" && bad "the built-in stand-in was refused"
[ $rc -eq 0 ] || bad "exit $rc, expected 0 (the result check passes, the chain check is inconclusive)"
grep -q "function_graph not available" "$W/stderr.txt" || bad "no progress line saying why the graph is off"
[ -f "$W/out/report.json" ] || { bad "no report.json"; exit 1; }
python3 - "$W/out/report.json" <<'PY' || fail=1
import json, sys
r = json.load(open(sys.argv[1]))
why = r["environment"].get("function_graph", "")
ok = True
def bad(m):
    global ok; ok = False; print("FAIL:", m)
if not why.startswith("function_graph not available: ") or "function nop" not in why:
    bad("environment.function_graph: %r" % why)
checks = {c["id"]: c for c in r["checks"]}
if checks.get("entry", {}).get("result") != "inconclusive" or why not in checks["entry"]["why"]:
    bad("entry check: %r" % checks.get("entry"))
if checks.get("ran", {}).get("result") != "pass":
    bad("ran check: %r" % checks.get("ran"))
if r["source"].get("tracer_mode") != "events":
    bad("tracer_mode %r, expected events" % r["source"].get("tracer_mode"))
sys.exit(0 if ok else 1)
PY
[ $fail = 0 ] && echo "the built-in stand-in runs without the graph and says why"
exit $fail
