#!/usr/bin/env bash
# bench/tracecmd_capture.sh OUT.dat BUFFER_KB CMD [ARGS...]: the trace-cmd side of the capture benchmarks
# (bench/run.sh). Records syscalls:sys_enter_ioctl / sys_exit_ioctl of CMD and its children in a private
# tracefs instance (set_event_pid + options/event-fork: nvtrace run's scoping) and writes them with
# `trace-cmd extract -B`. `trace-cmd record` cannot be used on kernels that refuse the function tracer (it
# dies with "Can't enable ftrace"). BUFFER_KB: per-CPU ring buffer (0: the kernel's default, as nvtrace
# run). The instance is removed on every exit path. Needs root and tracefs.
set -euo pipefail
out=$1 kb=$2
shift 2
tracefs=/sys/kernel/tracing
name=nvtrace-bench-$$
inst=$tracefs/instances/$name
cleanup() { [[ -d $inst ]] && rmdir "$inst" 2>/dev/null || true; }
trap cleanup EXIT INT TERM
mkdir "$inst"
echo 0 >"$inst/tracing_on"
[[ $kb == 0 ]] || echo "$kb" >"$inst/buffer_size_kb"
echo $$ >"$inst/set_event_pid"
echo 1 >"$inst/options/event-fork"
echo 1 >"$inst/events/syscalls/sys_enter_ioctl/enable"
echo 1 >"$inst/events/syscalls/sys_exit_ioctl/enable"
echo 1 >"$inst/tracing_on"
"$@" >/dev/null
echo 0 >"$inst/tracing_on"
trace-cmd extract -B "$name" -o "$out" >/dev/null 2>&1
