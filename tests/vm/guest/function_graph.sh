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

# The capture directory re-analysed offline (round trip): from the saved raw pages of the top-level
# buffer, formats and kallsyms subset; the gtest compares it with the live report.json.
vm_step "nvtrace report /tmp/r --json"
nvtrace report /tmp/r --json > /tmp/report-offline.json
echo "report $?" >> /tmp/report-offline-status.txt
# The terminal call-path tree of the capture (docs/tree.md); the gtest checks its null_blk chain.
vm_step "nvtrace tree /tmp/r"
nvtrace tree /tmp/r > /tmp/tree.txt 2>&1
echo "tree $?" >> /tmp/report-offline-status.txt

# NVRM/Xid classification of a live kernel-log line: written into the guest's own /dev/kmsg (it dies with the guest),
# never into a host's, where a GPU monitor would read it as a real fault (tests/live/kmsg_guard.py). The line is
# nvidia.ko's Xid 79 report (osinit.c, nvErrorLog_va with ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS;
# ../shared/reference/nvidia-driver.md, NVRM line formats).
vm_step "nvtrace run: an NVRM Xid line written into the guest's kernel log"
nvtrace run -q --no-preload --out /tmp/xid -- /bin/sh -c \
    'echo "<3>NVRM: Xid (PCI:0000:01:00): 79, pid=1, GPU has fallen off the bus." > /dev/kmsg'
echo "$?" > /tmp/xid-exit-status.txt

# nvtrace doctor, and the facts the gtest checks its lines against, read here with other tools:
# "KEY VALUE" lines. null_blk_functions is also what the run's dry-run count (meta.json) must equal.
vm_step "nvtrace doctor --json (uptime $(cut -d" " -f1 /proc/uptime))"
nvtrace doctor --json > /tmp/doctor.json
echo "doctor $?" > /tmp/doctor-facts.txt
{
    echo "available_tracers $(cat "$T/available_tracers")"
    echo "kernel_release $(uname -r)"
    echo "null_blk_initstate $(cat /sys/module/null_blk/initstate)"
    echo "null_blk_version $(cat /sys/module/null_blk/version 2> /dev/null)"
    echo "null_blk_functions $(grep -c '\[null_blk\]$' "$T/available_filter_functions")"
    echo "vgem_sysfs $(test -e /sys/module/vgem && echo present || echo absent)"
} >> /tmp/doctor-facts.txt

# Faults at the top level: each line of faults.txt is "CHECK STATUS", each snapshot must equal
# tracefs-before.txt. A long reader keeps nvtrace busy while it is signalled, once the top level is changed
# (the journal exists: setup takes seconds under TCG). Under TCG the drain loop falls behind a busy program,
# and a run of several seconds outgrew a 1 GB guest: tests/vm/vm.sh gives it 3 GB.
wait_for_journal() {
    i=0
    while [ ! -e /run/nvtrace/journal.json ] && [ "$i" -lt 600 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    sleep 0.5
}
: > /tmp/faults.txt
# SIGINT/SIGTERM/SIGHUP at the top level: a light program (one 4 KiB read every 0.2 s), so that draining and
# analysing stay short under TCG (a busy reader took minutes and ran the guest out of memory).
for sig in INT TERM HUP; do
    vm_step "nvtrace run, SIG$sig once the top level is changed (uptime $(cut -d" " -f1 /proc/uptime))"
    nvtrace run -q --module null_blk --out "/tmp/f-$sig" -- \
        /bin/sh -c 'while :; do /bin/odirect_read /dev/nullb0 1; sleep 0.2; done' &
    pid=$!
    wait_for_journal
    kill "-$sig" "$pid"
    wait "$pid"
    echo "sig$sig $?" >> /tmp/faults.txt
    vm_tracefs_snapshot > "/tmp/tracefs-after-sig$sig.txt"
done
vm_step "nvtrace run, SIGKILL once the top level is changed, then a refused run, then cleanup (uptime $(cut -d" " -f1 /proc/uptime))"
nvtrace run -q --module null_blk --out /tmp/f-kill -- /bin/odirect_read /dev/nullb0 1000000 &
pid=$!
wait_for_journal
kill -KILL "$pid"
wait "$pid"
echo "sigKILL $?" >> /tmp/faults.txt
vm_tracefs_snapshot > /tmp/tracefs-after-kill.txt
nvtrace run -q --module null_blk -- /bin/odirect_read /dev/nullb0 1 2> /tmp/refused.txt
echo "refused-while-journal $?" >> /tmp/faults.txt
nvtrace cleanup > /tmp/cleanup.txt 2>&1
echo "cleanup $?" >> /tmp/faults.txt
vm_tracefs_snapshot > /tmp/tracefs-after-cleanup.txt
nvtrace run -q --module vgem -- /bin/odirect_read /dev/nullb0 1 2>> /tmp/refused.txt
echo "module-not-loaded $?" >> /tmp/faults.txt
nvtrace run -q --module null_blk --filter 'null_*' --notrace null_exit_hctx --max-depth 2 --out /tmp/f-filters \
    -- /bin/odirect_read /dev/nullb0 2
echo "filters $?" >> /tmp/faults.txt
vm_tracefs_snapshot > /tmp/tracefs-after-filters.txt

status=$nvtrace_status
for f in faults.txt refused.txt cleanup.txt tracefs-after-kill.txt tracefs-after-cleanup.txt tracefs-after-filters.txt \
    tracefs-after-sigINT.txt tracefs-after-sigTERM.txt tracefs-after-sigHUP.txt doctor.json doctor-facts.txt \
    report-offline.json report-offline-status.txt tree.txt; do
    vm_send_file "$f" "/tmp/$f" || status=1
done
vm_send_file report-filters.json /tmp/f-filters/report.json || status=1
vm_send_file xid-exit-status.txt /tmp/xid-exit-status.txt || status=1
vm_send_file report-xid.json /tmp/xid/report.json || status=1
echo "$nvtrace_status" > /tmp/nvtrace-exit-status
vm_send_file nvtrace-exit-status /tmp/nvtrace-exit-status || status=1
vm_send_file tracefs-before.txt /tmp/tracefs-before.txt || status=1
vm_send_file tracefs-after.txt /tmp/tracefs-after.txt || status=1
vm_send_file report.json /tmp/r/report.json || status=1
vm_send_file meta.json /tmp/r/meta.json || status=1
exit "$status"
