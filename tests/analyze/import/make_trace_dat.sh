#!/bin/sh
# make_trace_dat.sh OUTDIR FIONREAD_LOOP: the ctest fixture that makes a small real trace.dat for the
# trace.dat reader tests (a committed one would be over 1 MB: the file carries kallsyms and every event
# format). Records syscalls:sys_{enter,exit}_ioctl of `FIONREAD_LOOP 5` in a private tracefs instance and
# writes OUTDIR/ioctl-v7.dat with `trace-cmd extract -B` (`trace-cmd record` dies on kernels that refuse
# the function tracer: ../shared/reference/ci-environment.md sections 3 and 9), then OUTDIR/ioctl-v6.dat
# with `trace-cmd convert --file-version 6`. Then OUTDIR/ioctl-two-buffers.dat: the same loop traced into two
# instances at once, sys_enter_ioctl in one and sys_exit_ioctl in the other (`trace-cmd extract -B A -B B`), so
# each call's entry and exit are in different buffers of the file and only a merge of the buffers by time pairs
# them (the trace.dat streamed report reads all buffers at once; it used to give up on such a file). Optional:
# where it cannot be made, the other files are still written. Then OUTDIR/ioctl-sched.dat: the ioctls and
# sched:sched_process_exit, an event nvtrace has no use of its own for (the report lists it under `events`). Never leaves an instance behind.
# Without root, tracefs or trace-cmd it writes OUTDIR/SKIPPED with the reason and succeeds, unless
# CI=true: then it fails.
set -u
out=$1
loop=$2
mkdir -p "$out"
rm -f "$out"/ioctl-v7.dat "$out"/ioctl-v6.dat "$out"/ioctl-two-buffers.dat "$out"/ioctl-sched.dat "$out"/SKIPPED

skip() {
    if [ "${CI:-}" = true ]; then
        echo "make_trace_dat: cannot make the trace.dat test data on CI: $1" >&2
        exit 1
    fi
    echo "$1" > "$out/SKIPPED"
    echo "make_trace_dat: skipped: $1"
    exit 0
}

[ "$(id -u)" = 0 ] || skip "needs root (tracefs instances)"
command -v trace-cmd > /dev/null 2>&1 || skip "trace-cmd is not installed"
tracefs=/sys/kernel/tracing
[ -d "$tracefs/instances" ] || tracefs=/sys/kernel/debug/tracing
[ -d "$tracefs/instances" ] || skip "no tracefs instances directory"
[ -d "$tracefs/events/syscalls/sys_enter_ioctl" ] || skip "no syscalls:sys_enter_ioctl tracepoint"

name=nvtrace-test-dat-$$
inst=$tracefs/instances/$name
cleanup() { [ -d "$inst" ] && rmdir "$inst" 2> /dev/null; }
trap cleanup EXIT INT TERM
mkdir "$inst" || skip "cannot create a tracefs instance"
echo 0 > "$inst/tracing_on"
echo $$ > "$inst/set_event_pid"
[ -f "$inst/options/event-fork" ] && echo 1 > "$inst/options/event-fork"
echo 1 > "$inst/events/syscalls/sys_enter_ioctl/enable"
echo 1 > "$inst/events/syscalls/sys_exit_ioctl/enable"
echo 1 > "$inst/tracing_on"
"$loop" 5 || { echo "make_trace_dat: $loop failed" >&2; exit 1; }
echo 0 > "$inst/tracing_on"
trace-cmd extract -B "$name" -o "$out/ioctl-v7.dat" > "$out/extract.log" 2>&1 || {
    cat "$out/extract.log" >&2
    exit 1
}
cleanup
[ -d "$inst" ] && { echo "make_trace_dat: instance $name left behind" >&2; exit 1; }
# v6 where this trace-cmd can write it (3.x can: convert --file-version 6).
trace-cmd convert -i "$out/ioctl-v7.dat" --file-version 6 -o "$out/ioctl-v6.dat" > /dev/null 2>&1 ||
    rm -f "$out/ioctl-v6.dat"
echo "make_trace_dat: wrote $out/ioctl-v7.dat"

two_a=$tracefs/instances/$name-enter
two_b=$tracefs/instances/$name-exit
cleanup_two() {
    [ -d "$two_a" ] && rmdir "$two_a" 2> /dev/null
    [ -d "$two_b" ] && rmdir "$two_b" 2> /dev/null
}
trap 'cleanup; cleanup_two' EXIT INT TERM
if mkdir "$two_a" && mkdir "$two_b"; then
    for i in "$two_a" "$two_b"; do
        echo 0 > "$i/tracing_on"
        echo $$ > "$i/set_event_pid"
        [ -f "$i/options/event-fork" ] && echo 1 > "$i/options/event-fork"
    done
    echo 1 > "$two_a/events/syscalls/sys_enter_ioctl/enable"
    echo 1 > "$two_b/events/syscalls/sys_exit_ioctl/enable"
    echo 1 > "$two_a/tracing_on"
    echo 1 > "$two_b/tracing_on"
    "$loop" 5 || { echo "make_trace_dat: $loop failed" >&2; exit 1; }
    echo 0 > "$two_a/tracing_on"
    echo 0 > "$two_b/tracing_on"
    if trace-cmd extract -B "$name-enter" -B "$name-exit" -o "$out/ioctl-two-buffers.dat" > "$out/extract-two.log" 2>&1; then
        echo "make_trace_dat: wrote $out/ioctl-two-buffers.dat"
    else
        rm -f "$out/ioctl-two-buffers.dat"
        echo "make_trace_dat: no two-buffer file: trace-cmd extract failed (see $out/extract-two.log)"
    fi
fi
cleanup_two
[ -d "$two_a" ] || [ -d "$two_b" ] && { echo "make_trace_dat: instance $name-enter/-exit left behind" >&2; exit 1; }

if [ -d "$tracefs/events/sched/sched_process_exit" ] && mkdir "$inst"; then
    echo 0 > "$inst/tracing_on"
    echo $$ > "$inst/set_event_pid"
    [ -f "$inst/options/event-fork" ] && echo 1 > "$inst/options/event-fork"
    echo 1 > "$inst/events/syscalls/sys_enter_ioctl/enable"
    echo 1 > "$inst/events/syscalls/sys_exit_ioctl/enable"
    echo 1 > "$inst/events/sched/sched_process_exit/enable"
    echo 1 > "$inst/tracing_on"
    "$loop" 5 || { echo "make_trace_dat: $loop failed" >&2; exit 1; }
    echo 0 > "$inst/tracing_on"
    if trace-cmd extract -B "$name" -o "$out/ioctl-sched.dat" > "$out/extract-sched.log" 2>&1; then
        echo "make_trace_dat: wrote $out/ioctl-sched.dat"
    else
        rm -f "$out/ioctl-sched.dat"
        echo "make_trace_dat: no ioctl-sched.dat: trace-cmd extract failed (see $out/extract-sched.log)"
    fi
    cleanup
fi
[ -d "$inst" ] && { echo "make_trace_dat: instance $name left behind" >&2; exit 1; }
exit 0
