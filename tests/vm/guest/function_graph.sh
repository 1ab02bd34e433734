# Guest side of tests/vm/test_vm_function_graph.cpp (busybox sh, run as /check.sh with null_blk loaded).
# Runs nvtrace on null_blk around 4 O_DIRECT reads of /dev/nullb0 and hands back the report and the top-level
# tracefs state from before and after the run; the gtest judges them. Exits with nvtrace's status, or 1 when a file
# could not be handed back.
# shellcheck shell=sh
# shellcheck source-path=SCRIPTDIR source=lib.sh
. /lib/vm-guest.sh
T=$VM_TRACEFS

# The ring buffer stays at its boot-time minimum until a tracer first needs it: buffer_size_kb reads
# "7 (expanded: 1408)" before and "1410" after any tracer ran, whatever that tracer restored. Size it explicitly
# first; a non-default size also shows whether nvtrace puts back what it found rather than the defaults.
echo 2048 > "$T/buffer_size_kb"

vm_tracefs_snapshot > /tmp/tracefs-before.txt

vm_step "nvtrace run --module null_blk --out /tmp/r -- /bin/odirect_read /dev/nullb0 4"
nvtrace run --module null_blk --out /tmp/r -- /bin/odirect_read /dev/nullb0 4
nvtrace_status=$?
vm_step "nvtrace exit status $nvtrace_status"

vm_tracefs_snapshot > /tmp/tracefs-after.txt
ls -la /tmp/r

status=$nvtrace_status
echo "$nvtrace_status" > /tmp/nvtrace-exit-status
vm_send_file nvtrace-exit-status /tmp/nvtrace-exit-status || status=1
vm_send_file tracefs-before.txt /tmp/tracefs-before.txt || status=1
vm_send_file tracefs-after.txt /tmp/tracefs-after.txt || status=1
vm_send_file report.json /tmp/r/report.json || status=1
exit "$status"
