#!/bin/sh
# nvtrace export of reports without calls (docs/export.md, "Reports without calls"): chrome dropped an strace's
# ioctls (counted as skipped_instants), folded wrote 0 bytes with exit 0, the CSV of a kernel log was a bare header.
# Every export now either holds data and says on stderr what it holds (exit 0), or is refused with why (exit 2,
# no file written). Inputs, written here after the formats' sources:
#  - strace without -t: "ioctl(fd, request, arg) = ret" lines as strace(1) prints them (the request decoded with
#    _IOC() as strace's ioctl decoder does for a driver it does not know), no time at all;
#  - the same with -T: "<0.000012>" after the result (strace(1): time spent in the syscall);
#  - a dmesg log (printk's "[seconds.micros] text" of dmesg(1)) and the same lines without the time (dmesg -t);
#  - a function tracer's text (tests/data/cases/function-text-stacktrace-rpi.txt: calls, none with a duration);
#  - a capture directory of a run without function tracing (tests/data/capture_dir/fionread20, tracer events).
set -eu
nvtrace=$1 data=$2 dir=$3
rm -rf "$dir"
mkdir -p "$dir"
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
cat > "$dir/strace.txt" <<'T'
openat(AT_FDCWD, "/dev/nvidiactl", O_RDWR|O_CLOEXEC) = 3
ioctl(3, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0xd2, 0x48), 0x7ffd23823b20) = 0
ioctl(3, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2b, 0x28), 0x7ffd23823a90) = 0
close(3)                                = 0
T
sed 's/\(= 0\)$/\1 <0.000012>/' "$dir/strace.txt" > "$dir/strace-T.txt"
cat > "$dir/dmesg.log" <<'T'
[   12.345678] nvidia-uvm: Loaded the UVM driver, major device number 510.
[   13.000001] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023
T
sed 's/^\[[ 0-9.]*\] //' "$dir/dmesg.log" > "$dir/dmesg-t.log"

# run NAME EXPECTED_RC ARGS...: export, keeping stdout and stderr.
run() {
    name=$1 want=$2
    shift 2
    rc=0
    "$nvtrace" export "$@" > "$dir/$name.out" 2> "$dir/$name.err" || rc=$?
    [ "$rc" = "$want" ] || fail "$name: exit $rc, expected $want: $(cat "$dir/$name.err")"
}
has() {  # FILE PATTERN WHAT
    grep -q -- "$2" "$1" || fail "$3: '$2' not in $(cat "$1")"
}

for s in strace strace-T; do
    in=$dir/$s.txt
    # chrome: both ioctls are in the trace (laid out in recorded order), none skipped; stderr says so.
    run "$s-chrome" 0 "$in" --format chrome
    [ "$(grep -c '"name":"ioctl NV_ESC_' "$dir/$s-chrome.out")" = 2 ] || fail "$s chrome: $(cat "$dir/$s-chrome.out")"
    has "$dir/$s-chrome.out" '"synthetic_time":true' "$s chrome"
    has "$dir/$s-chrome.out" '"skipped_instants":0,' "$s chrome counts"
    has "$dir/$s-chrome.out" '"synthetic_instants":2,' "$s chrome counts"
    has "$dir/$s-chrome.err" "the report has no calls (its input (strace) records none): the chrome export holds 2 ioctls (2 without a time laid out in recorded order" "$s chrome stderr"
    # folded: refused, nothing written, even with -o.
    run "$s-folded" 2 "$in" --format folded -o "$dir/$s.folded"
    [ ! -e "$dir/$s.folded" ] || fail "$s folded: a file was written"
    has "$dir/$s-folded.err" "nothing to export as folded: the report has no calls (its input (strace) records none): there is no call stack to fold (it holds 2 ioctls)" "$s folded"
    # csv: the ioctls table by default (with its note), the calls table refused.
    run "$s-csv" 0 "$in" --format csv
    [ "$(wc -l < "$dir/$s-csv.out")" = 3 ] || fail "$s csv: $(cat "$dir/$s-csv.out")"
    run "$s-csv-calls" 2 "$in" --format csv --table calls
    has "$dir/$s-csv-calls.err" "nothing to export as csv --table calls: the report has no calls" "$s csv calls"
    for f in json html; do
        run "$s-$f" 0 "$in" --format $f
        has "$dir/$s-$f.err" "the $f export holds 2 ioctls" "$s $f stderr"
    done
done
# With -T the ioctls have a duration: slices of it.
[ "$(grep -c '"ph":"X".*"name":"ioctl NV_ESC_' "$dir/strace-T-chrome.out")" = 2 ] || fail "strace -T chrome: $(cat "$dir/strace-T-chrome.out")"

for k in dmesg dmesg-t; do
    in=$dir/$k.log
    run "$k-csv" 2 "$in" --format csv
    has "$dir/$k-csv.err" "nothing to export as csv --table calls: the report has no calls (its input (" "$k csv"
    has "$dir/$k-csv.err" "the calls table would be a bare header (it holds 2 kernel-log lines)" "$k csv"
    run "$k-ioctls" 2 "$in" --format csv --table ioctls
    has "$dir/$k-ioctls.err" "the report has no ioctls: the ioctls table would be a bare header (it holds 2 kernel-log lines)" "$k csv ioctls"
    run "$k-stats" 2 "$in" --format csv --table ioctl-stats
    has "$dir/$k-stats.err" "no ioctl statistics" "$k csv ioctl-stats"
    run "$k-folded" 2 "$in" --format folded
    has "$dir/$k-folded.err" "there is no call stack to fold (it holds 2 kernel-log lines)" "$k folded"
    run "$k-chrome" 0 "$in" --format chrome
    [ "$(grep -c '"cat":"kernel_log"' "$dir/$k-chrome.out")" = 2 ] || fail "$k chrome: $(cat "$dir/$k-chrome.out")"
    has "$dir/$k-chrome.err" "the chrome export holds 2 kernel-log lines" "$k chrome stderr"
done
# dmesg -t has no times: its lines are laid out; dmesg's are placed by their time.
has "$dir/dmesg-t-chrome.err" "(2 without a time laid out" "dmesg -t chrome"
if grep -q "synthetic_time\|without a time" "$dir/dmesg-chrome.out" "$dir/dmesg-chrome.err"; then fail "dmesg chrome: laid out although timed"; fi

# A function tracer records hits, not durations: folded has nothing to weigh.
run ftrace-folded 2 "$data/cases/function-text-stacktrace-rpi.txt" --format folded
has "$dir/ftrace-folded.err" "none of the report's .* has a known duration" "function tracer folded"
# A run without function tracing names its tracer.
run cap-chrome 0 "$data/capture_dir/fionread20" --format chrome
has "$dir/cap-chrome.err" "the report has no calls (it was traced with tracer events (no function_graph)): the chrome export holds 20 ioctls" "capture chrome"
# A report with calls says nothing of the kind.
run calls-chrome 0 "$data/reports/baseline.json" --format chrome
[ ! -s "$dir/calls-chrome.err" ] || fail "baseline chrome stderr: $(cat "$dir/calls-chrome.err")"
# -o into a missing directory names -o.
run missing-dir 3 "$data/reports/baseline.json" --format json -o "$dir/no/such/dir/x.json"
has "$dir/missing-dir.err" "nvtrace export: -o $dir/no/such/dir/x.json: cannot write: No such file or directory" "-o missing dir"
echo ok
