#!/bin/sh
# report_cli.sh NVTRACE CASES_DIR TEST: regression checks of `nvtrace report` as a user runs it (summary text,
# exit codes, standard input). One TEST per ctest test (tests/analyze/import/CMakeLists.txt).
set -u
nv=$1
cases=$2
t=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

case $t in
unknown_duration_unclosed_sys_open)
    # trace-cmd-report-fgraph-v6: sys_open is never closed; the summary printed "0.000 us".
    "$nv" report "$cases/trace-cmd-report-fgraph-v6.txt" >"$tmp/out" || fail "exit $?"
    cat "$tmp/out"
    grep -Eq '^ +1x +unknown +sys_open$' "$tmp/out" || fail "sys_open not shown as unknown"
    ! grep -Eq '0\.000 us +sys_open' "$tmp/out" || fail "sys_open shown as 0.000 us"
    ;;
unknown_duration_function_hit)
    "$nv" report "$cases/function-text-stacktrace-rpi.txt" >"$tmp/out" || fail "exit $?"
    cat "$tmp/out"
    grep -Eq '^ +1x +unknown +dwc_otg_common_irq$' "$tmp/out" || fail "function hit not shown as unknown"
    grep -Eq '^events: 2$' "$tmp/out" || fail "events not counted"
    grep -Eq '^ +1x +ftrace:function$' "$tmp/out" || fail "no ftrace:function line"
    ;;
events_counted_per_name)
    "$nv" report "$cases/fgraph-events-sched-switch-rpi.txt" >"$tmp/out" || fail "exit $?"
    cat "$tmp/out"
    grep -Eq '^ +3x +nvtrace:task_switch$' "$tmp/out" || fail "task switches not counted"
    grep -Eq '^ +2x +sched_switch$' "$tmp/out" || fail "sched_switch not counted"
    grep -Eq '^ +1x +irq_handler_entry$' "$tmp/out" || fail "irq_handler_entry not counted"
    ;;
multiline_kernel_log_indented)
    # nvrm-xid79: one message over 3 physical lines; the continuation lines were printed at column 0.
    "$nv" report "$cases/nvrm-xid79-fallen-off-bus-continuation.log" >"$tmp/out" || fail "exit $?"
    cat "$tmp/out"
    awk '/\[fallen_off_bus\]/ { getline nxt; if (nxt ~ /^      NVRM/) ok = 1 } END { exit !ok }' "$tmp/out" ||
        fail "continuation line not indented"
    ;;
kernel_log_only_input)
    for f in gdrcopy-sanity-copylat-fail.txt cuda-hostregister-cumemaddressreserve-fail.txt; do
        "$nv" report "$cases/$f" >"$tmp/out" || fail "$f: exit $?"
        cat "$tmp/out"
        grep -q "($cases/$f: kernel-log)\|(kernel-log)" "$tmp/out" || fail "$f: not read as a kernel log"
        grep -Eq '^calls: 0 ' "$tmp/out" || fail "$f: calls line"
        grep -q '^  no calls were traced: the input is a kernel log$' "$tmp/out" || fail "$f: does not say no calls were traced"
    done
    ;;
strace_input)
    "$nv" report "$cases/strace-nvidia-ioctl-libva.txt" >"$tmp/out" || fail "exit $?"
    cat "$tmp/out"
    grep -Eq '^ioctls: 9$' "$tmp/out" || fail "not 9 ioctls"
    grep -q 'strace_truncated_line' "$tmp/out" || fail "truncated line not flagged"
    grep -q '^complete: no: ' "$tmp/out" || fail "said complete"
    grep -q 'no kernel calls were traced' "$tmp/out" || fail "does not say no kernel calls were traced"
    ;;
stdin_input)
    "$nv" report - <"$cases/fgraph-retval-merged-format.txt" >"$tmp/a" || fail "report -: exit $?"
    cat "$cases/fgraph-retval-merged-format.txt" | "$nv" report /dev/stdin >"$tmp/b" || fail "/dev/stdin: exit $?"
    "$nv" report "$cases/fgraph-retval-merged-format.txt" >"$tmp/c" || fail "file: exit $?"
    grep -q '(fgraph-text)' "$tmp/a" || fail "report - not fgraph-text"
    # Everything but the input line and the file name in diagnostic examples is the same as for the file.
    unname() { tail -n +2 "$1" | sed -E 's|^(diagnostic: .*: )[^ ]+:([0-9]+):|\1FILE:\2:|'; }
    unname "$tmp/a" >"$tmp/a2"; unname "$tmp/b" >"$tmp/b2"; unname "$tmp/c" >"$tmp/c2"
    grep -q '^diagnostic: .*: FILE:[0-9]*:' "$tmp/c2" || fail "no diagnostic example with a line"
    cmp "$tmp/a2" "$tmp/c2" || fail "report - differs from the file's"
    cmp "$tmp/b2" "$tmp/c2" || fail "/dev/stdin differs from the file's"
    ;;
empty_names_stdin_twice_and_stdout_reused_are_errors)
    # A fresh user's findings (2026-12-01): -o '', --calls-jsonl '' and --kmsg '' were ignored (exit 0, nothing
    # written); `cat F | report - --kmsg -` let --kmsg eat the trace; --calls-jsonl /dev/stdout --json mixed JSON Lines
    # into the report (exit 0, invalid JSON) and --calls-jsonl - made a file named '-'; `report F --json >&-` exit 0:
    # the report's temporary file took descriptor 1 and "standard output" was written into it.
    f=$cases/fgraph-abstime-orphan-close.txt
    for opt in -o --calls-jsonl --kmsg; do
        "$nv" report "$f" "$opt" '' >"$tmp/out" 2>"$tmp/err"
        rc=$?
        [ $rc -eq 2 ] || fail "$opt '': exit $rc"
        grep -q "^nvtrace report: $opt '': an empty file name$" "$tmp/err" || fail "$opt '': $(cat "$tmp/err")"
    done
    cat "$f" | "$nv" report - --kmsg - >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc -eq 2 ] || fail "stdin twice: exit $rc"
    grep -q "standard input can be read only once" "$tmp/err" || fail "stdin twice: $(cat "$tmp/err")"
    for cj in /dev/stdout -; do
        (cd "$tmp" && "$nv" report "$f" --calls-jsonl "$cj" --json >"$tmp/out" 2>"$tmp/err")
        rc=$?
        [ $rc -eq 2 ] || fail "--calls-jsonl $cj --json: exit $rc"
        [ ! -s "$tmp/out" ] || fail "--calls-jsonl $cj: something on stdout"
    done
    [ ! -e "$tmp/-" ] || fail "a file named - was made"
    "$nv" report "$f" --json >&- 2>"$tmp/err"
    rc=$?
    [ $rc -eq 3 ] || fail "--json onto a closed stdout: exit $rc"
    grep -q "cannot write the report to standard output" "$tmp/err" || fail "closed stdout: $(cat "$tmp/err")"
    ;;
random_bytes_refused)
    # `head -c 100000 /dev/urandom > f; nvtrace report f` was exit 0 with "(fgraph-text) calls: 3" 4 times in 5.
    python3 -c 'import random,sys
for seed in range(1, 11):
    random.seed(seed)
    open(sys.argv[1] + "/r%d" % seed, "wb").write(bytes(random.getrandbits(8) for _ in range(100000)))' "$tmp"
    for seed in 1 2 3 4 5 6 7 8 9 10; do
        "$nv" report "$tmp/r$seed" >/dev/null 2>"$tmp/err"
        rc=$?
        [ $rc -eq 2 ] || fail "seed $seed: exit $rc"
        "$nv" report --format fgraph-text "$tmp/r$seed" >/dev/null 2>"$tmp/err"
        rc=$?
        [ $rc -eq 2 ] || fail "seed $seed, --format fgraph-text: exit $rc"
        # `nvtrace check f` was exit 0 on the same bytes.
        "$nv" check "$tmp/r$seed" --expect "$cases/../../../scenarios/gem-mmap/path.expect" >/dev/null 2>"$tmp/err"
        rc=$?
        [ $rc -eq 2 ] || fail "seed $seed, check: exit $rc"
    done
    cat "$tmp/err"
    ;;
dangling_parent_call_is_a_root_in_report_and_tree)
    # A saved report whose call names a parent that is not in it: the call heads its own tree. `nvtrace tree` showed
    # two roots and `nvtrace report` said "(1 roots)" (it counted calls without a parent only).
    printf '# tracer: function_graph\n#\n 0)               |  a() {\n 0)   1.000 us    |    b();\n 0)   3.000 us    |  }\n' \
        >"$tmp/t.txt"
    "$nv" report "$tmp/t.txt" -o "$tmp/r.json" >/dev/null || fail "report: exit $?"
    sed 's/"parent":1,/"parent":77,/' "$tmp/r.json" >"$tmp/d.json"
    grep -q '"parent":77' "$tmp/d.json" || fail "the test's edit did not apply"
    "$nv" report "$tmp/r.json" | grep -q '^calls: 2 (1 roots)$' || fail "the intact report: not 1 root"
    "$nv" report "$tmp/d.json" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err"; fail "exit $?"; }
    cat "$tmp/out"
    grep -q '^calls: 2 (2 roots)$' "$tmp/out" || fail "report: not 2 roots"
    "$nv" tree "$tmp/d.json" >"$tmp/tree" || fail "tree: exit $?"
    [ "$(grep -cE '^ +[0-9.]+ +[0-9.]+ +[0-9.]+ +1x  [ab]$' "$tmp/tree")" = 2 ] || { cat "$tmp/tree"; fail "tree: not 2 roots"; }
    ;;
saved_report_json_input)
    # `nvtrace report runs/X/report.json` (the path nvtrace run prints) was "expected a trace ... found '{'".
    cd_=$cases/../capture_dir/fionread20
    "$nv" report "$cd_/report.json" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err"; fail "exit $?"; }
    cat "$tmp/out"
    grep -q "^input: $cd_/report.json (saved report, nvtrace.report/1)$" "$tmp/out" || fail "input line"
    grep -Eq '^ioctls: 20$' "$tmp/out" || fail "not 20 ioctls"
    grep -Eq '^ +20x fd4 FIONREAD ret=0$' "$tmp/out" || fail "ioctl line"
    grep -Eq '^markers: 2$' "$tmp/out" || fail "not 2 markers"
    grep -Eq '^kernel log: 1 message' "$tmp/out" || fail "kernel log"
    # -o writes it again: read back, the same summary; --json prints the same report.
    "$nv" report "$cd_/report.json" -o "$tmp/again.json" >/dev/null || fail "-o: exit $?"
    "$nv" report "$tmp/again.json" >"$tmp/out2" || fail "report of -o output: exit $?"
    tail -n +2 "$tmp/out" >"$tmp/a"; tail -n +2 "$tmp/out2" >"$tmp/b"
    cmp "$tmp/a" "$tmp/b" || fail "the re-emitted report reads differently"
    "$nv" report "$cd_/report.json" --json >"$tmp/stdout.json" || fail "--json: exit $?"
    "$nv" report "$tmp/stdout.json" >"$tmp/out3" || fail "report of --json output: exit $?"
    tail -n +2 "$tmp/out3" >"$tmp/c"
    cmp "$tmp/a" "$tmp/c" || fail "--json output reads differently"
    ;;
capture_dir_summary_matches_saved_report)
    # `nvtrace report runs/X` re-analyses the raw pages: the same ioctls, markers, events and kernel log as the
    # report.json nvtrace run wrote.
    cd_=$cases/../capture_dir/fionread20
    "$nv" report "$cd_" >"$tmp/dir" || fail "capture dir: exit $?"
    "$nv" report "$cd_/report.json" >"$tmp/saved" || fail "report.json: exit $?"
    cat "$tmp/dir"
    # The capture's summary names the program and the tracer first (meta.json), as `nvtrace run` printed them.
    sed -n 2p "$tmp/dir" | grep -q '^program: tests/fionread_loop 20 .*(pid 13948, exit 0)$' || fail "no program line"
    sed -n 3p "$tmp/dir" | grep -qx 'tracer: events' || fail "no tracer line"
    tail -n +4 "$tmp/dir" >"$tmp/a"; tail -n +2 "$tmp/saved" >"$tmp/b"
    diff "$tmp/b" "$tmp/a" || fail "capture directory summary differs from its saved report's"
    ;;
saved_report_on_stdin)
    # A `cat runs/X/report.json | nvtrace report -` was "<stdin>:1: expected a trace ... found '{'".
    cd_=$cases/../capture_dir/fionread20
    "$nv" report "$cd_/report.json" >"$tmp/file.txt" || fail "file: exit $?"
    cat "$cd_/report.json" | "$nv" report - >"$tmp/pipe.txt" 2>"$tmp/err" || { cat "$tmp/err"; fail "stdin: exit $?"; }
    cat "$tmp/pipe.txt"
    tail -n +2 "$tmp/file.txt" >"$tmp/a"; tail -n +2 "$tmp/pipe.txt" >"$tmp/b"
    diff "$tmp/a" "$tmp/b" || fail "the piped report reads differently from the file"
    printf '{"schema": "nvtrace.report/1",' | "$nv" report - 2>"$tmp/err" >/dev/null
    rc=$?; cat "$tmp/err"
    [ "$rc" = 2 ] || fail "truncated JSON on stdin: exit $rc, expected 2"
    grep -q '<stdin>' "$tmp/err" || fail "no <stdin> in the message"
    # It said "<stdin>: <stdin>: starts with ..." (the name added twice); export says it the same way now.
    grep -q "^nvtrace report: <stdin>: not valid JSON: " "$tmp/err" || fail "message: $(cat "$tmp/err")"
    printf '{"schema": "nvtrace.report/1",' | "$nv" export - --format csv 2>"$tmp/err" >/dev/null
    grep -q "^nvtrace export: <stdin>: not valid JSON: " "$tmp/err" || fail "export: $(cat "$tmp/err")"
    ;;
invalid_saved_report_on_stdin_names_line_and_column)
    # A saved report on stdin that is not JSON said "<stdin>: starts with '{' but is not valid JSON", without the
    # position a file's message gives ("PATH: not valid JSON: ... at line L, column C").
    printf '{"schema": "nvtrace.report/1",' | "$nv" report - 2>"$tmp/err" >/dev/null
    rc=$?; cat "$tmp/err"
    [ "$rc" = 2 ] || fail "exit $rc, expected 2"
    grep -q "^nvtrace report: <stdin>: not valid JSON: .*parse error at line 1, column 31: " "$tmp/err" ||
        fail "message: $(cat "$tmp/err")"
    printf '{"schema": "nvtrace.report/1",' | "$nv" export - --format csv 2>"$tmp/err" >/dev/null
    grep -q "^nvtrace export: <stdin>: not valid JSON: .*parse error at line 1, column 31: " "$tmp/err" ||
        fail "export: $(cat "$tmp/err")"
    printf '{"schema": "nvtrace.report/1",\n "calls": [\n  {"function": }\n' >"$tmp/broken.json"
    "$nv" report "$tmp/broken.json" 2>"$tmp/file_err" >/dev/null
    "$nv" report - <"$tmp/broken.json" 2>"$tmp/err" >/dev/null
    grep -q "at line 3, column 16: " "$tmp/file_err" || fail "file: $(cat "$tmp/file_err")"
    grep -q "^nvtrace report: <stdin>: not valid JSON: .*at line 3, column 16: " "$tmp/err" ||
        fail "line 3: $(cat "$tmp/err")"
    ;;
blank_lines_only_file_is_named_as_such)
    # A file of blank lines was "F:3: expected a trace (...), found '\x09'": a malformed line, where there is none.
    printf '  \n\n\t\n' >"$tmp/blank.txt"
    "$nv" report "$tmp/blank.txt" >/dev/null 2>"$tmp/err"
    rc=$?; cat "$tmp/err"
    [ "$rc" = 2 ] || fail "exit $rc, expected 2"
    grep -qx "nvtrace report: $tmp/blank.txt: only blank lines (3 lines), no trace" "$tmp/err" || fail "$(cat "$tmp/err")"
    printf '\r\n' | "$nv" report - >/dev/null 2>"$tmp/err"
    grep -qx "nvtrace report: <stdin>: only blank lines (1 line), no trace" "$tmp/err" || fail "stdin: $(cat "$tmp/err")"
    ;;
device_refused)
    # `nvtrace report /dev/zero` read until memory ran out (internal error: std::bad_alloc, exit 4).
    "$nv" report /dev/zero >/dev/null 2>"$tmp/err"
    rc=$?; cat "$tmp/err"
    [ "$rc" = 2 ] || fail "exit $rc, expected 2"
    grep -q 'a device, not a trace file' "$tmp/err" || fail "message"
    ;;
directory_without_meta)
    # A plain directory and a killed run's directory (raw/ but no meta.json) said "meta.json: cannot open".
    mkdir -p "$tmp/plain" "$tmp/killed/raw/instance"
    "$nv" report "$tmp/plain" 2>"$tmp/err" >/dev/null; rc=$?; cat "$tmp/err"
    [ "$rc" = 2 ] || fail "plain: exit $rc"
    grep -q 'not a capture directory' "$tmp/err" || fail "plain: message"
    "$nv" report "$tmp/killed" 2>"$tmp/err" >/dev/null; rc=$?; cat "$tmp/err"
    [ "$rc" = 2 ] || fail "killed: exit $rc"
    grep -q 'unfinished capture' "$tmp/err" || fail "killed: message"
    cp -r "$cases/../capture_dir/fionread20" "$tmp/bad"
    printf '{"capture_format":1,' >"$tmp/bad/meta.json"
    "$nv" report "$tmp/bad" 2>"$tmp/err" >/dev/null; rc=$?; cat "$tmp/err"
    [ "$rc" = 2 ] || fail "bad meta: exit $rc"
    grep -q 'meta.json: not valid JSON' "$tmp/err" || fail "bad meta: message"
    "$nv" report "$cases/../capture_dir/fionread20" --reemit --source "$tmp/plain" 2>"$tmp/err" >/dev/null
    rc=$?; cat "$tmp/err"
    [ "$rc" = 2 ] || fail "--reemit --source: exit $rc, expected 2"
    ;;
reemit_of_incomplete_report_names_the_reasons)
    # --reemit of an incomplete saved report printed a bare "complete: NO", dropping the reasons it holds.
    cp -r "$cases/../capture_dir/fionread20" "$tmp/inc"
    python3 - "$tmp/inc/report.json" <<'PY'
import json, sys
p = sys.argv[1]
r = json.load(open(p))
r["completeness"]["complete"] = False
r["completeness"]["reasons"] = ["overrun: 7 events overwritten", "1 elided span"]
json.dump(r, open(p, "w"))
PY
    "$nv" report "$tmp/inc" --reemit -o "$tmp/inc.json" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err"; fail "exit $?"; }
    cat "$tmp/out"
    grep -qx 'complete: no: overrun: 7 events overwritten; 1 elided span' "$tmp/out" || fail "reasons not named"
    ;;
diff_without_calls)
    # Two events-only reports (200000 vs 5 ioctls) printed "no change": nothing had been compared. Reports
    # without calls are compared by their ioctl statistics; without ioctls either, there is nothing to compare.
    r=$cases/../capture_dir/fionread20/report.json
    "$nv" diff "$r" "$r" --exit-code >"$tmp/out" 2>"$tmp/err"; rc=$?; cat "$tmp/out" "$tmp/err"
    [ "$rc" = 0 ] || fail "exit $rc, expected 0"
    grep -q 'only the ioctls are compared' "$tmp/out" && grep -q '^#  no ioctl change$' "$tmp/out" || fail "ioctls"
    k=$cases/nvrm-xid79-fallen-off-bus-continuation.log
    "$nv" diff "$k" "$k" >"$tmp/out" 2>"$tmp/err"; rc=$?; cat "$tmp/out" "$tmp/err"
    [ "$rc" = 2 ] || fail "exit $rc, expected 2"
    grep -q 'or ioctls: nothing to compare' "$tmp/err" || fail "message"
    # Each report's reason, not "run with --module", which does not apply to a kernel log (fresh user).
    grep -q 'continuation.log has no call graph: its input (kernel-log) records no calls' "$tmp/err" || fail "reason"
    ! grep -q 'run with --module' "$tmp/err" || fail "hint for a live run"
    ! grep -q 'no change' "$tmp/out" || fail "said no change"
    # strace (ioctls, no calls) against a kernel log (no syscalls at all): the strace ioctls were all "removed".
    s=$cases/strace-nvidia-ioctl-libva.txt
    "$nv" diff "$s" "$k" >"$tmp/out" 2>"$tmp/err"; rc=$?; cat "$tmp/out" "$tmp/err"
    [ "$rc" = 2 ] || fail "strace vs kernel log: exit $rc, expected 2"
    grep -q 'continuation.log has no ioctls (its input (kernel-log) recorded no ioctl and need not record syscalls: whether ioctls were made is unknown), and neither report has API calls: nothing to compare' "$tmp/err" || fail "strace vs kernel log: message"
    ! grep -q 'removed' "$tmp/out" || fail "strace vs kernel log: requests removed"
    ;;
diff_that_ignores_every_call_compares_nothing)
    # Seen: `diff A B --ignore '*' --exit-code` printed "no change" and exited 0 (a CI gate passed), and
    # `--rename-map DIR` was taken as an empty map.
    a=$cases/../reports/baseline.json b=$cases/../reports/driver_upgrade.json
    "$nv" diff "$a" "$b" --ignore '*' --exit-code >"$tmp/out" 2>"$tmp/err"; rc=$?; cat "$tmp/err"
    [ "$rc" = 2 ] && grep -q 'nothing to compare' "$tmp/err" || fail "--ignore '*': exit $rc"
    ! grep -q 'no change' "$tmp/out" || fail "said no change"
    "$nv" diff "$a" "$b" --rename-map "$cases" >/dev/null 2>"$tmp/err"; rc=$?
    [ "$rc" = 2 ] && grep -q 'a directory, not a file' "$tmp/err" || fail "--rename-map DIR: exit $rc"
    "$nv" diff "$a" "$b" >/dev/null || fail "the plain diff"
    # And option values that said nothing: an empty --min-delta (the default, silently), --max-rows -1 (all rows).
    "$nv" diff "$a" "$b" --min-delta '' >/dev/null 2>"$tmp/err"; rc=$?
    [ "$rc" = 2 ] || fail "--min-delta '': exit $rc"
    "$nv" diff "$a" "$b" --max-rows -1 >/dev/null 2>"$tmp/err"; rc=$?; cat "$tmp/err"
    [ "$rc" = 2 ] && grep -q "expected a whole number >= 0, got '-1'" "$tmp/err" || fail "--max-rows -1: exit $rc"
    ;;
unfinished_capture_and_piped_saved_report_say_what_they_are)
    # Seen: export/check/diff called a killed run's directory "not a capture directory" (report says
    # "an unfinished capture"), and a saved report piped to `report - --calls-jsonl` was "expected a trace".
    mkdir -p "$tmp/killed/raw"
    for cmd in "export $tmp/killed --format csv" "diff $tmp/killed $tmp/killed"; do
        "$nv" $cmd >/dev/null 2>"$tmp/err"; rc=$?; cat "$tmp/err"
        [ "$rc" = 2 ] && grep -q 'an unfinished capture' "$tmp/err" || fail "$cmd: exit $rc"
    done
    cat "$cases/../capture_dir/fionread20/report.json" | "$nv" report - --calls-jsonl "$tmp/c.jsonl" 2>"$tmp/err" >/dev/null
    rc=$?
    [ "$rc" = 2 ] && grep -q 'takes a trace file, not a saved report' "$tmp/err" || fail "piped report: exit $rc, $(cat "$tmp/err")"
    ;;
dmesg_refuses_devices)
    # Seen: `nvtrace dmesg /dev/zero` read 512 MiB before exit 2 (report refuses devices at once).
    "$nv" dmesg /dev/zero >/dev/null 2>"$tmp/err"; rc=$?; cat "$tmp/err"
    [ "$rc" = 2 ] && grep -q 'a device, not a kernel log file' "$tmp/err" || fail "dmesg /dev/zero: exit $rc"
    printf '[    1.0] NVRM: Xid (PCI:0000:01:00): 79, pid=1, GPU has fallen off the bus.\n' >"$tmp/k.log"
    cat "$tmp/k.log" | "$nv" dmesg - | grep -q 'xid=79' || fail "dmesg - of a pipe"
    ;;
names_that_name_nothing_are_refused)
    # Seen: `doctor --module ../kernel` (and '') was "built into the kernel", and a scenario's
    # `requires module` without a name was never checked.
    for m in ../kernel ''; do
        "$nv" doctor --module "$m" >/dev/null 2>"$tmp/err"; rc=$?; cat "$tmp/err"
        [ "$rc" = 2 ] && grep -q 'expected a module name' "$tmp/err" || fail "doctor --module '$m': exit $rc"
    done
    mkdir -p "$tmp/sc/bad"
    printf 'summary a test\nprogram true\nrequires module\n' >"$tmp/sc/bad/scenario.conf"
    "$nv" scenarios --dir "$tmp/sc" >/dev/null 2>"$tmp/err"; rc=$?; cat "$tmp/err"
    [ "$rc" = 2 ] && grep -q "scenario.conf:3: expected a module name after 'requires module'" "$tmp/err" \
        || fail "requires module without a name: exit $rc"
    ;;
unwritable_stderr_is_not_a_crash)
    # The disk of a shared machine filled up during a test run: every error message then threw (fmt::print onto a
    # stderr that cannot be written) and nvtrace aborted (exit 134) instead of exiting with its code.
    "$nv" report "$tmp/missing" 2>/dev/full; rc=$?
    [ "$rc" = 2 ] || fail "report of a missing file, stderr onto /dev/full: exit $rc, expected 2"
    "$nv" diff "$tmp/missing" "$tmp/missing" 2>/dev/full; rc=$?
    [ "$rc" = 2 ] || fail "diff: exit $rc, expected 2"
    "$nv" report "$cases/fgraph-retval-merged-format.txt" >/dev/full 2>/dev/full; rc=$?
    [ "$rc" = 3 ] || fail "stdout and stderr onto /dev/full: exit $rc, expected 3"
    ;;
unknown_command_is_named)
    # `nvtrace bogus` said only "A subcommand is required".
    "$nv" bogus 2>"$tmp/err" >/dev/null; rc=$?; cat "$tmp/err"
    [ "$rc" = 2 ] && grep -q "^nvtrace: 'bogus' is not a command (the commands: run, report," "$tmp/err" ||
        fail "bogus: exit $rc"
    "$nv" --bogus 2>"$tmp/err" >/dev/null; rc=$?; cat "$tmp/err"
    [ "$rc" = 2 ] && grep -q "^nvtrace: '--bogus' is not an option of nvtrace" "$tmp/err" || fail "--bogus: exit $rc"
    ;;
stdout_failure_is_one_line_naming_the_command)
    # Onto /dev/full, dmesg and decode said "nvtrace: cannot write ..." and export said it twice.
    printf '[    1.0] usb 1-1: new device\n' >"$tmp/k.log"
    for cmd in "dmesg $tmp/k.log" "decode ioctl 0x541b" "export $cases/../reports/baseline.json --format csv"; do
        # shellcheck disable=SC2086
        "$nv" $cmd >/dev/full 2>"$tmp/err"; rc=$?; cat "$tmp/err"
        name=${cmd%% *}
        [ "$rc" = 3 ] || fail "$cmd: exit $rc, expected 3"
        [ "$(wc -l <"$tmp/err")" = 1 ] || fail "$cmd: $(wc -l <"$tmp/err") lines on stderr"
        grep -q "^nvtrace $name: " "$tmp/err" || fail "$cmd: not prefixed with 'nvtrace $name:'"
    done
    ;;
kernel_log_examples_escape_control_bytes)
    # `nvtrace dmesg junk.bin` echoed the junk's bytes (a terminal escape among them) in its diagnostics.
    printf '\033]0;owned\007\033[2J\377\376 junk\n' >"$tmp/junk.bin"
    "$nv" dmesg "$tmp/junk.bin" >"$tmp/out" 2>"$tmp/err"; rc=$?; cat -v "$tmp/err"
    [ "$rc" = 2 ] || fail "exit $rc, expected 2"
    ! grep -q "$(printf '\033')" "$tmp/err" || fail "an escape byte reached stderr"
    grep -qF 'found "\x1b]0;owned\x07\x1b[2J\xff\xfe junk"' "$tmp/err" || fail "example not shown as \\xNN"
    "$nv" dmesg --json "$tmp/junk.bin" >"$tmp/j" 2>/dev/null
    ! grep -q "$(printf '\033')" "$tmp/j" || fail "an escape byte reached the JSON"
    ;;
option_error_names_the_command)
    # A first user got "--timeout: Value 0 not in range 0.000000 to 1797...(309 digits)" with no "nvtrace run:".
    "$nv" run --timeout 0 -- true 2>"$tmp/err" >/dev/null; rc=$?; cat "$tmp/err"
    [ "$rc" = 2 ] || fail "exit $rc, expected 2"
    grep -q "^nvtrace run: --timeout: expected a number greater than 0, got '0'" "$tmp/err" || fail "message"
    grep -q "^Run 'nvtrace run --help'" "$tmp/err" || fail "no pointer to --help"
    ;;
stdout_write_failure_is_an_error)
    # `nvtrace report F > /dev/full` exited 0 although nothing was written.
    "$nv" report "$cases/trace-cmd-report-fgraph-v6.txt" >/dev/full 2>"$tmp/err"; rc=$?; cat "$tmp/err"
    [ "$rc" = 3 ] || fail "exit $rc, expected 3"
    grep -q 'cannot write to standard output' "$tmp/err" || fail "message"
    ;;
directories_given_as_files_are_named)
    # `nvtrace dmesg DIR` said "no lines"; `nvtrace scenarios --dir DIR` printed nothing and exited 0;
    # `nvtrace run DIR` (no scenario.conf) tried to execute it.
    "$nv" dmesg "$tmp" 2>"$tmp/err" >/dev/null; rc=$?; cat "$tmp/err"
    [ "$rc" = 2 ] && grep -q 'is a directory' "$tmp/err" || fail "dmesg DIR: exit $rc"
    "$nv" scenarios --dir "$tmp" 2>"$tmp/err" >/dev/null; rc=$?; cat "$tmp/err"
    [ "$rc" = 2 ] && grep -q 'no scenario in' "$tmp/err" || fail "scenarios --dir: exit $rc"
    "$nv" run "$tmp" 2>"$tmp/err" >/dev/null; rc=$?; cat "$tmp/err"
    [ "$rc" = 2 ] && grep -q 'is a directory but not a scenario' "$tmp/err" || fail "run DIR: exit $rc"
    ;;
calls_jsonl_summary_counts_the_written_calls)
    # The --calls-jsonl summary said `calls: 0 (0 roots)`, then listed root paths, then `calls: N written to F`.
    "$nv" report "$cases/fgraph-irq-nested-module-suffix.txt" --calls-jsonl "$tmp/c.jsonl" >"$tmp/out" || fail "exit $?"
    cat "$tmp/out"
    n=$(wc -l <"$tmp/c.jsonl")
    [ "$n" -gt 0 ] || fail "no calls written"
    grep -qx "calls: $n (written to $tmp/c.jsonl)" "$tmp/out" || fail "the calls line"
    [ "$(grep -c '^calls: ' "$tmp/out")" = 1 ] || fail "more than one calls line"
    ;;
output_into_the_capture_directory_is_refused)
    # `nvtrace report DIR -o DIR/report.json` replaced the run's own report without a word.
    cp -r "$cases/../capture_dir/fionread20" "$tmp/cap"
    before=$(cksum <"$tmp/cap/report.json")
    "$nv" report "$tmp/cap" -o "$tmp/cap/report.json" 2>"$tmp/err" >/dev/null; rc=$?; cat "$tmp/err"
    [ "$rc" = 2 ] || fail "exit $rc, expected 2"
    grep -q 'inside the capture directory' "$tmp/err" || fail "message"
    [ "$(cksum <"$tmp/cap/report.json")" = "$before" ] || fail "the run's report was changed"
    "$nv" report "$tmp/cap" -o "$tmp/cap/../cap/new.json" 2>"$tmp/err" >/dev/null; rc=$?
    [ "$rc" = 2 ] || fail "through ..: exit $rc, expected 2"
    "$nv" report "$tmp/cap" -o "$tmp/elsewhere.json" >/dev/null || fail "an output outside failed"
    ;;
links_to_a_capture_and_export_into_it_are_refused)
    # Seen: `report DIR -o L` where L is a hard or symbolic link to DIR/report.json, and `export DIR -o
    # DIR/report.json`, both replaced the run's report (exit 0).
    cp -r "$cases/../capture_dir/fionread20" "$tmp/cap"
    before=$(cksum <"$tmp/cap/report.json")
    ln "$tmp/cap/report.json" "$tmp/hard.json"
    ln -s cap/report.json "$tmp/sym.json"
    for out in "$tmp/hard.json" "$tmp/sym.json"; do
        "$nv" report "$tmp/cap" -o "$out" 2>"$tmp/err" >/dev/null; rc=$?; cat "$tmp/err"
        [ "$rc" = 2 ] || fail "report -o $out: exit $rc, expected 2"
        grep -q 'is a link' "$tmp/err" || fail "report -o $out: message"
    done
    for out in "$tmp/cap/report.json" "$tmp/cap/raw/x.csv" "$tmp/hard.json"; do
        "$nv" export "$tmp/cap" --format csv -o "$out" 2>"$tmp/err" >/dev/null; rc=$?; cat "$tmp/err"
        [ "$rc" = 2 ] || fail "export -o $out: exit $rc, expected 2"
    done
    "$nv" export "$tmp/cap/report.json" --format csv -o "$tmp/sym.json" 2>"$tmp/err" >/dev/null; rc=$?
    [ "$rc" = 2 ] || fail "export onto its input through a link: exit $rc, expected 2"
    [ "$(cksum <"$tmp/cap/report.json")" = "$before" ] || fail "the run's report was changed"
    "$nv" export "$tmp/cap" --format csv -o "$tmp/calls.csv" || fail "an output outside failed"
    # Seen: a dangling link into the directory let both write a new file there.
    ln -s cap/raw/new.json "$tmp/dangling.json"
    "$nv" report "$tmp/cap" -o "$tmp/dangling.json" 2>"$tmp/err" >/dev/null; rc=$?; cat "$tmp/err"
    [ "$rc" = 2 ] && grep -q 'a link into the capture directory' "$tmp/err" || fail "report through a dangling link: $rc"
    "$nv" export "$tmp/cap" --format chrome -o "$tmp/dangling.json" 2>/dev/null >/dev/null; rc=$?
    [ "$rc" = 2 ] || fail "export through a dangling link: exit $rc"
    [ ! -e "$tmp/cap/raw/new.json" ] || fail "a file was written into the capture"
    ;;
calls_jsonl_and_o_naming_one_new_file_are_refused)
    # `--calls-jsonl ./o -o o` (one new file spelled twice) wrote the calls, then the report over them: exit 0,
    # every call lost. So did a dangling link to the other name.
    f="$cases/fgraph-retval-merged-format.txt"
    cd "$tmp" || fail "cd"
    for pair in "./o1 o1" "$tmp/o2 o2" "link3 o3"; do
        set -- $pair
        [ "$1" = link3 ] && ln -s o3 link3
        "$nv" report "$f" --calls-jsonl "$1" -o "$2" 2>"$tmp/err" >/dev/null; rc=$?; cat "$tmp/err"
        [ "$rc" = 2 ] && grep -q 'name the same file' "$tmp/err" || fail "--calls-jsonl $1 -o $2: exit $rc"
    done
    ;;
pipes_to_export_check_and_diff_are_read_once)
    # Seen: `cat X | nvtrace export -` was "-: cannot open", and `diff <(cat A) <(cat B)` "empty input":
    # the pipe was peeked, then read again from where the peek had left it.
    f="$cases/fgraph-retval-merged-format.txt"
    "$nv" export "$f" --format csv >"$tmp/file.csv" || fail "export of the file"
    cat "$f" | "$nv" export - --format csv >"$tmp/pipe.csv" || fail "export -: exit $?"
    cmp "$tmp/file.csv" "$tmp/pipe.csv" || fail "export - differs from the file's"
    "$nv" report "$f" -o "$tmp/r.json" >/dev/null || fail "report -o"
    cat "$tmp/r.json" | "$nv" export - --format csv >"$tmp/saved.csv" || fail "export - of a saved report: exit $?"
    cmp "$tmp/file.csv" "$tmp/saved.csv" || fail "export - of the saved report differs"
    mkfifo "$tmp/a.fifo" "$tmp/b.fifo"
    cat "$f" >"$tmp/a.fifo" & cat "$tmp/r.json" >"$tmp/b.fifo" &
    "$nv" diff "$tmp/a.fifo" "$tmp/b.fifo" >"$tmp/diff.txt" || fail "diff of two FIFOs: exit $?"
    wait
    grep -q 'base: .*a.fifo  (14 calls)' "$tmp/diff.txt" && grep -q 'new: .*b.fifo  (14 calls)' "$tmp/diff.txt" || fail "diff of two FIFOs: $(head -3 "$tmp/diff.txt")"
    printf 'check no-xid\n  absent log xid\n' >"$tmp/e.expect"
    cat "$tmp/r.json" | "$nv" check - --expect "$tmp/e.expect" >"$tmp/check.txt" 2>&1 || fail "check -: exit $?"
    "$nv" check "$tmp/r.json" --expect "$tmp/e.expect" >"$tmp/check-file.txt" || fail "check of the file"
    tail -n +2 "$tmp/check.txt" | cmp - "$(tail -n +2 "$tmp/check-file.txt" >"$tmp/c2"; echo "$tmp/c2")" \
        || fail "check - differs from the file's"
    ;;
size_zero_files_are_read)
    # tracefs `trace` and procfs files report size 0: they were refused as "empty file" without being read.
    "$nv" report /proc/self/status 2>"$tmp/err" >/dev/null; rc=$?; cat "$tmp/err"
    [ "$rc" = 2 ] || fail "exit $rc, expected 2"
    grep -q 'empty file' "$tmp/err" && fail "not read: $(cat "$tmp/err")"
    grep -q '/proc/self/status:1: expected a trace' "$tmp/err" || fail "message"
    : >"$tmp/empty.txt"
    "$nv" report "$tmp/empty.txt" 2>"$tmp/err" >/dev/null; rc=$?
    [ "$rc" = 2 ] && grep -q 'empty.txt: empty file' "$tmp/err" || fail "a really empty file: exit $rc, $(cat "$tmp/err")"
    ;;
calls_jsonl_on_stdin_is_streamed)
    # `cat trace | nvtrace report - --calls-jsonl F` read the whole report into memory and wrote the calls in id
    # order: standard input is now copied to a temporary file and streamed as the file is (the same bytes).
    f="$cases/fgraph-retval-merged-format.txt"
    "$nv" report "$f" --calls-jsonl "$tmp/file.jsonl" >/dev/null || fail "the file"
    cat "$f" | "$nv" report - --calls-jsonl "$tmp/stdin.jsonl" >"$tmp/out.txt" || fail "stdin: exit $?"
    cmp "$tmp/file.jsonl" "$tmp/stdin.jsonl" || fail "the calls from stdin differ from the file's"
    grep -q 'calls: 14 (written to' "$tmp/out.txt" || fail "summary: $(cat "$tmp/out.txt")"
    printf '' | "$nv" report - --calls-jsonl "$tmp/e.jsonl" 2>"$tmp/err" >/dev/null; rc=$?
    [ "$rc" = 2 ] && grep -q '<stdin>: empty input' "$tmp/err" || fail "empty stdin: exit $rc, $(cat "$tmp/err")"
    ;;
empty_kmsg_file_adds_nothing)
    # `--kmsg` with an empty log (a quiet `dmesg > log`) was exit 2, "empty file".
    f="$cases/fgraph-retval-merged-format.txt"
    : >"$tmp/quiet.log"
    "$nv" report "$f" --kmsg "$tmp/quiet.log" --json >"$tmp/with.json" || fail "empty --kmsg: exit $?"
    "$nv" report "$f" --json >"$tmp/without.json" || fail "without --kmsg"
    grep -v '"kmsg"' "$tmp/with.json" >"$tmp/a"; grep -v '"kmsg"' "$tmp/without.json" >"$tmp/b"
    cmp -s "$tmp/a" "$tmp/b" || python3 - "$tmp/with.json" "$tmp/without.json" <<'PY' || fail "the reports differ beyond source.kmsg"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
a["source"].pop("kmsg", None)
sys.exit(0 if a == b else 1)
PY
    ;;
calls_jsonl_onto_the_input_is_refused)
    # `nvtrace report in.txt --calls-jsonl in.txt` truncated in.txt before reading it: "empty file", input lost.
    cp "$cases/trace-cmd-report-fgraph-v6.txt" "$tmp/in.txt"
    size=$(wc -c <"$tmp/in.txt")
    "$nv" report "$tmp/in.txt" --calls-jsonl "$tmp/in.txt" 2>"$tmp/err" >/dev/null; rc=$?; cat "$tmp/err"
    [ "$rc" = 2 ] || fail "exit $rc, expected 2"
    grep -q 'is an input file' "$tmp/err" || fail "message"
    [ "$(wc -c <"$tmp/in.txt")" = "$size" ] || fail "the input was changed"
    ln -s in.txt "$tmp/link.txt"
    "$nv" report "$tmp/in.txt" --calls-jsonl "$tmp/link.txt" -o "$tmp/r.json" 2>"$tmp/err" >/dev/null; rc=$?
    [ "$rc" = 2 ] || fail "through a symlink: exit $rc, expected 2"
    [ "$(wc -c <"$tmp/in.txt")" = "$size" ] || fail "the input was changed through a symlink"
    "$nv" report "$tmp/in.txt" --calls-jsonl "$tmp/calls.jsonl" -o "$tmp/in.txt" 2>"$tmp/err" >/dev/null; rc=$?
    [ "$rc" = 2 ] || fail "-o onto the input: exit $rc, expected 2"
    "$nv" report "$tmp/in.txt" --calls-jsonl "$tmp/calls.jsonl" >/dev/null || fail "a separate output failed"
    [ -s "$tmp/calls.jsonl" ] || fail "no calls written"
    ;;
socket_is_read_once_like_a_pipe_in_every_command)
    # A socket was read whole by `report` (as a pipe) but "cannot open" for check, diff and export, and a named
    # AF_UNIX socket could be read by none of them. Now all four read a socket (named: connected to; or on standard
    # input) once, as a pipe, and give the file's result.
    f="$cases/fgraph-retval-merged-format.txt"
    "$nv" report "$f" -o "$tmp/r.json" >/dev/null || fail "report -o"
    printf 'check no-xid\n  absent log xid\n' >"$tmp/e.expect"
    serve() {  # SOCKET FILE: FILE to every client, until killed
        python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.bind(sys.argv[1]); s.listen(8)
data = open(sys.argv[2], "rb").read()
while True:
    c, _ = s.accept(); c.sendall(data); c.close()' "$1" "$2" &
    }
    on_socket_stdin() {  # FILE CMD...: CMD with a socketpair on standard input that carries FILE
        python3 -c 'import socket, subprocess, sys
a, b = socket.socketpair()
p = subprocess.Popen(sys.argv[2:], stdin=b); b.close()
a.sendall(open(sys.argv[1], "rb").read()); a.shutdown(socket.SHUT_WR)
sys.exit(p.wait())' "$@"
    }
    serve "$tmp/t.sock" "$f"; p1=$!
    serve "$tmp/r.sock" "$tmp/r.json"; p2=$!
    trap 'kill $p1 $p2 2>/dev/null; rm -rf "$tmp"' EXIT
    n=0; while { [ ! -S "$tmp/t.sock" ] || [ ! -S "$tmp/r.sock" ]; } && [ $n -lt 100 ]; do sleep 0.1; n=$((n+1)); done
    unname() { tail -n +2 "$1" | sed -E 's|^(diagnostic: .*: )[^ ]+:([0-9]+):|\1FILE:\2:|'; }
    # report: a trace and a saved report, by socket name and on standard input.
    "$nv" report "$f" >"$tmp/file.txt" || fail "report of the file"
    "$nv" report "$tmp/t.sock" >"$tmp/sock.txt" 2>"$tmp/err" || fail "report SOCKET: exit $?, $(cat "$tmp/err")"
    on_socket_stdin "$f" "$nv" report - >"$tmp/stdin.txt" 2>"$tmp/err" || fail "report - (socket): $(cat "$tmp/err")"
    unname "$tmp/file.txt" >"$tmp/a"; unname "$tmp/sock.txt" >"$tmp/b"; unname "$tmp/stdin.txt" >"$tmp/c"
    cmp "$tmp/a" "$tmp/b" || fail "report SOCKET differs from the file's"
    cmp "$tmp/a" "$tmp/c" || fail "report - (socket) differs from the file's"
    "$nv" report "$tmp/r.json" >"$tmp/saved.txt" || fail "report of the saved report"
    "$nv" report "$tmp/r.sock" >"$tmp/saved-sock.txt" 2>"$tmp/err" || fail "report of a saved report on a socket: $(cat "$tmp/err")"
    tail -n +2 "$tmp/saved.txt" >"$tmp/a"; tail -n +2 "$tmp/saved-sock.txt" >"$tmp/b"
    cmp "$tmp/a" "$tmp/b" || fail "the saved report on a socket reads differently"
    # export
    "$nv" export "$f" --format csv >"$tmp/file.csv" || fail "export of the file"
    for in in "$tmp/t.sock" "$tmp/r.sock"; do
        "$nv" export "$in" --format csv >"$tmp/sock.csv" 2>"$tmp/err" || fail "export $in: $(cat "$tmp/err")"
        cmp "$tmp/file.csv" "$tmp/sock.csv" || fail "export $in differs from the file's"
    done
    on_socket_stdin "$tmp/r.json" "$nv" export - --format csv >"$tmp/stdin.csv" 2>"$tmp/err" || fail "export - (socket): $(cat "$tmp/err")"
    cmp "$tmp/file.csv" "$tmp/stdin.csv" || fail "export - (socket) differs from the file's"
    # check
    "$nv" check "$tmp/r.json" --expect "$tmp/e.expect" >"$tmp/check-file.txt" || fail "check of the file"
    "$nv" check "$tmp/r.sock" --expect "$tmp/e.expect" >"$tmp/check-sock.txt" 2>"$tmp/err" || fail "check SOCKET: $(cat "$tmp/err")"
    on_socket_stdin "$f" "$nv" check - --expect "$tmp/e.expect" >"$tmp/check-stdin.txt" 2>"$tmp/err" || fail "check - (socket): $(cat "$tmp/err")"
    tail -n +2 "$tmp/check-file.txt" >"$tmp/a"
    tail -n +2 "$tmp/check-sock.txt" | cmp - "$tmp/a" || fail "check SOCKET differs from the file's"
    tail -n +2 "$tmp/check-stdin.txt" | cmp - "$tmp/a" || fail "check - (socket) differs from the file's"
    # diff: a trace on one socket, its saved report on another
    "$nv" diff "$f" "$tmp/r.json" >"$tmp/diff-file.txt" || fail "diff of the files"
    "$nv" diff "$tmp/t.sock" "$tmp/r.sock" >"$tmp/diff-sock.txt" 2>"$tmp/err" || fail "diff of two sockets: $(cat "$tmp/err")"
    grep -q 'base: .*t.sock  (14 calls)' "$tmp/diff-sock.txt" && grep -q 'new: .*r.sock  (14 calls)' "$tmp/diff-sock.txt" \
        || fail "diff of two sockets: $(head -3 "$tmp/diff-sock.txt")"
    grep -v '^#  \[[AB]\] ' "$tmp/diff-file.txt" >"$tmp/a"; grep -v '^#  \[[AB]\] ' "$tmp/diff-sock.txt" >"$tmp/b"
    cmp "$tmp/a" "$tmp/b" || fail "diff of two sockets differs from the files'"
    # `diff - -` would read standard input twice: the second was "empty input".
    "$nv" diff - - </dev/null >/dev/null 2>"$tmp/err"; rc=$?
    [ "$rc" = 2 ] && grep -q 'can be read only once' "$tmp/err" || fail "diff - -: exit $rc, $(cat "$tmp/err")"
    ;;
fifo_saved_report_and_kmsg_are_read_once)
    # `report FIFO` of a saved report went to the trace readers only after a peek; `--kmsg FIFO` was read twice
    # (a blank-file test, then the reader: "empty input").
    cd_=$cases/../capture_dir/fionread20
    f="$cases/fgraph-retval-merged-format.txt"
    mkfifo "$tmp/r.fifo" "$tmp/k.fifo"
    "$nv" report "$cd_/report.json" >"$tmp/file.txt" || fail "the file"
    cat "$cd_/report.json" >"$tmp/r.fifo" &
    "$nv" report "$tmp/r.fifo" >"$tmp/fifo.txt" 2>"$tmp/err" || fail "report FIFO: $(cat "$tmp/err")"
    wait
    grep -q "^input: $tmp/r.fifo (saved report, nvtrace.report/1)$" "$tmp/fifo.txt" || fail "input line: $(head -1 "$tmp/fifo.txt")"
    tail -n +2 "$tmp/file.txt" >"$tmp/a"; tail -n +2 "$tmp/fifo.txt" >"$tmp/b"
    cmp "$tmp/a" "$tmp/b" || fail "report FIFO differs from the file's"
    "$nv" report "$f" --kmsg "$cd_/kmsg" --json >"$tmp/k-file.json" || fail "--kmsg FILE"
    cat "$cd_/kmsg" >"$tmp/k.fifo" &
    # (timeout: the second open of the FIFO waited for a writer that had gone)
    timeout 60 "$nv" report "$f" --kmsg "$tmp/k.fifo" --json >"$tmp/k-fifo.json" 2>"$tmp/err" || fail "--kmsg FIFO: exit $?, $(cat "$tmp/err")"
    wait
    python3 - "$tmp/k-file.json" "$tmp/k-fifo.json" <<'PY' || fail "--kmsg FIFO gives other kernel-log messages"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["kernel_log"] and len(a["kernel_log"]) == len(b["kernel_log"]), (len(a["kernel_log"]), len(b["kernel_log"]))
sys.exit(0 if [m["text"] for m in a["kernel_log"]] == [m["text"] for m in b["kernel_log"]] else 1)
PY
    "$nv" report "$f" --kmsg "$tmp" >/dev/null 2>"$tmp/err"; rc=$?
    [ "$rc" = 2 ] && grep -q -- '--kmsg .*is a directory' "$tmp/err" || fail "--kmsg DIR: exit $rc, $(cat "$tmp/err")"
    ;;
calls_jsonl_of_a_failed_report_leaves_the_file_as_it_was)
    # --calls-jsonl truncated its file at the start: a report that then failed (exit 2: --source naming no
    # directory, an input that is not the --format given) left the file emptied, or holding calls under the name a
    # notebook reads. The calls now get the name only once the report is complete.
    f="$cases/fgraph-retval-merged-format.txt"
    for extra in "--source $tmp/no-such-dir" "--format strace"; do
        echo previous >"$tmp/c.jsonl"
        # shellcheck disable=SC2086
        "$nv" report "$f" --calls-jsonl "$tmp/c.jsonl" $extra >/dev/null 2>"$tmp/err"; rc=$?
        [ "$rc" = 2 ] || fail "$extra: exit $rc, $(cat "$tmp/err")"
        [ "$(cat "$tmp/c.jsonl")" = previous ] || fail "$extra: the previous --calls-jsonl file was changed"
    done
    [ -z "$(find "$tmp" -name '.c.jsonl.nvtrace-*' -o -name 'c.jsonl.nvtrace-*')" ] || fail "a temporary file was left"
    "$nv" report "$f" --calls-jsonl "$tmp/c.jsonl" >"$tmp/out" 2>"$tmp/err" || fail "exit $?, $(cat "$tmp/err")"
    n=$(wc -l <"$tmp/c.jsonl")
    [ "$n" -gt 1 ] && ! grep -q previous "$tmp/c.jsonl" || fail "the complete report did not write its $n calls"
    grep -q "written to $tmp/c.jsonl" "$tmp/out" || fail "summary: $(cat "$tmp/out")"
    # Not a regular file: written into, as before (a FIFO read by another program).
    mkfifo "$tmp/c.fifo"
    cat "$tmp/c.fifo" >"$tmp/from-fifo" &
    "$nv" report "$f" --calls-jsonl "$tmp/c.fifo" >/dev/null 2>"$tmp/err" || fail "FIFO: exit $?, $(cat "$tmp/err")"
    wait
    cmp -s "$tmp/from-fifo" "$tmp/c.jsonl" || fail "the FIFO did not get the calls"
    ;;
output_file_that_is_standard_output_is_refused)
    # `report F -o /dev/stdout > f` wrote the report into f and then the summary over its first bytes (two
    # descriptors of one file): exit 0, f neither JSON nor a summary. --calls-jsonl likewise without --json.
    f="$cases/fgraph-retval-merged-format.txt"
    for opt in "-o /dev/stdout" "-o /proc/self/fd/1" "-o -" "--calls-jsonl /dev/stdout"; do
        # shellcheck disable=SC2086
        (cd "$tmp" && "$nv" report "$f" $opt >"$tmp/out" 2>"$tmp/err"); rc=$?
        [ "$rc" = 2 ] || fail "$opt > file: exit $rc"
        grep -q "give a file (standard output carries the summary" "$tmp/err" || fail "$opt: $(cat "$tmp/err")"
        [ ! -s "$tmp/out" ] || fail "$opt: something was written to the file"
    done
    [ ! -e "$tmp/-" ] || fail "a file named - was made"
    "$nv" report "$f" -o /dev/stdout | cat >"$tmp/out" 2>/dev/null
    [ ! -s "$tmp/out" ] || fail "-o /dev/stdout into a pipe: something was written"
    # A character device is no file to keep: /dev/null may be both.
    "$nv" report "$f" -o /dev/null >/dev/null || fail "-o /dev/null > /dev/null: exit $?"
    "$nv" report "$f" --calls-jsonl /dev/null --json >/dev/null || fail "--calls-jsonl /dev/null --json: exit $?"
    ;;
*) fail "unknown test $t" ;;
esac
echo "PASS: $t"
