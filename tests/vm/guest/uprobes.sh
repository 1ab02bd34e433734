# Guest side of tests/vm/test_vm_uprobes.cpp (busybox sh, run as /check.sh). The generic `--uprobe LIB:SYMBOL` on a
# real 6.1 kernel (Debian's config: CONFIG_UPROBE_EVENTS=y): `nvtrace run --uprobe libc:getpid` of a dynamically
# linked program (the host's loader and libc.so.6 were copied in with --file: the guest has no other), then the
# report, meta.json, uprobe_events and the top-level tracefs state before and after, handed back; the gtest judges
# them. Exits with nvtrace's status, or 1 when a file could not be handed back.
# shellcheck shell=sh
# shellcheck source-path=SCRIPTDIR source=lib.sh
. /lib/vm-guest.sh
T=$VM_TRACEFS

# buffer_size_kb reads "7 (expanded: 1408)" until a tracer first needs the buffer (tests/vm/README.md): size it.
echo 2048 > "$T/buffer_size_kb"
vm_tracefs_snapshot > /tmp/tracefs-before.txt
cat "$T/uprobe_events" > /tmp/uprobes-before.txt

vm_step "the program alone (its loader and libc work here)"
/data/getpid_calls 5 > /tmp/direct.txt 2>&1
echo "direct $?" > /tmp/statuses.txt
cat /tmp/direct.txt

vm_step "nvtrace run --uprobe libc:getpid -- /data/getpid_calls 5"
nvtrace run --no-preload --uprobe libc:getpid --out /tmp/u -- /data/getpid_calls 5 > /tmp/run.txt 2>&1
run_status=$?
echo "run $run_status" >> /tmp/statuses.txt
cat /tmp/run.txt
cat "$T/uprobe_events" > /tmp/uprobes-after.txt
vm_tracefs_snapshot > /tmp/tracefs-after.txt

status=$run_status
for f in statuses.txt direct.txt run.txt uprobes-before.txt uprobes-after.txt tracefs-before.txt tracefs-after.txt; do
    vm_send_file "$f" "/tmp/$f" || status=1
done
vm_send_file report.json /tmp/u/report.json || status=1
vm_send_file meta.json /tmp/u/meta.json || status=1
exit "$status"
