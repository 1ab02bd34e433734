# Harness self-check (busybox sh): proves module loading, the static test binaries and the file hand-back, and
# that the guest kernel shows the null_blk call chain the function_graph test expects, using tracefs directly.
# Run: tests/vm/vm.sh --out /tmp/vm-smoke --modules "null_blk vgem" --bin build/static/bin/odirect_read \
#        --script tests/vm/guest/smoke.sh
# shellcheck shell=sh
set -u
# shellcheck source-path=SCRIPTDIR source=lib.sh
. /lib/vm-guest.sh
T=$VM_TRACEFS
status=0

vm_step "modules: $(cut -d' ' -f1 /proc/modules | tr '\n' ' ')"
[ -b /dev/nullb0 ] || { echo "smoke: /dev/nullb0 missing"; status=1; }

vm_tracefs_snapshot > /tmp/tracefs-before.txt

# function_graph on null_blk, scoped to this shell; odirect_read is forked from it (function-fork follows it).
echo ':mod:null_blk' > "$T/set_ftrace_filter"
echo $$ > "$T/set_ftrace_pid"
echo 1 > "$T/options/function-fork"
echo function_graph > "$T/current_tracer"
: > "$T/trace"
if odirect_read /dev/nullb0 4; then
    vm_step "odirect_read ok"
else
    echo "smoke: odirect_read failed"
    status=1
fi
echo 0 > "$T/tracing_on"
cat "$T/trace" > /tmp/trace.txt
# Restore the defaults.
echo nop > "$T/current_tracer"
echo > "$T/set_ftrace_filter"
echo > "$T/set_ftrace_pid"
echo 0 > "$T/options/function-fork"
echo 1 > "$T/tracing_on"

vm_tracefs_snapshot > /tmp/tracefs-after.txt
grep -q 'null_queue_rq' /tmp/trace.txt || { echo "smoke: no null_queue_rq in the trace"; status=1; }

vm_send_file available_tracers "$T/available_tracers" || status=1
vm_send_file tracefs-before.txt /tmp/tracefs-before.txt || status=1
vm_send_file tracefs-after.txt /tmp/tracefs-after.txt || status=1
vm_send_file trace.txt /tmp/trace.txt || status=1
exit "$status"
