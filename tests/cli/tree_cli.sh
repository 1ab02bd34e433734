#!/bin/sh
# nvtrace tree end to end (docs/tree.md): a trace, the report.json built from it and its export give the same tree;
# a capture directory gives the tree of its report.json; colours only on a terminal (script(1) gives one), never
# with NO_COLOR unless --color=always; bad input and options are exit 2 with the file or option named.
set -eu
nvtrace=$1 data=$2 dir=$3
rm -rf "$dir"
mkdir -p "$dir"
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
seed=$data/tree/fgraph-nv-alloc-pages-seed.txt

# The body (after the input: line) of each form of the same data is the same.
"$nvtrace" tree "$seed" > "$dir/text.txt"
"$nvtrace" report "$seed" -o "$dir/seed.json" > /dev/null
"$nvtrace" tree "$dir/seed.json" > "$dir/saved.txt"
"$nvtrace" export "$seed" --format json > "$dir/exported.json"
"$nvtrace" tree - < "$dir/exported.json" > "$dir/stdin.txt"
head -1 "$dir/text.txt" | grep -qx "input: $seed" || fail "first line: $(head -1 "$dir/text.txt")"
for f in saved stdin; do
    tail -n +2 "$dir/text.txt" > "$dir/a"
    tail -n +2 "$dir/$f.txt" > "$dir/b"
    cmp -s "$dir/a" "$dir/b" || { diff "$dir/a" "$dir/b" >&2; fail "tree of the $f report differs from the trace's"; }
done
grep -q '^       1.950        1.950        0.180       12x  |  |- nv_get_kern_phys_address \[nvidia\]$' "$dir/text.txt" ||
    fail "no collapsed nv_get_kern_phys_address line: $(cat "$dir/text.txt")"

# A capture directory (ioctl-only, as on a kernel that refuses function tracing) and its report.json.
cap=$data/capture_dir/fionread20
"$nvtrace" tree "$cap" | tail -n +2 > "$dir/cap.txt"
"$nvtrace" tree "$cap/report.json" | tail -n +2 > "$dir/cap-json.txt"
cmp -s "$dir/cap.txt" "$dir/cap-json.txt" || fail "capture directory and its report.json give different trees"
grep -q '20x  `- FIONREAD  (ret=0 x20)$' "$dir/cap.txt" || fail "no FIONREAD leaf: $(cat "$dir/cap.txt")"

# Options reach the view.
"$nvtrace" tree "$seed" --focus nv_alloc_contig_pages --depth 1 --min-time 1us > "$dir/opts.txt"
grep -q '^nv_alloc_contig_pages: 1 outermost call, from 1 caller path:$' "$dir/opts.txt" || fail "focus: $(cat "$dir/opts.txt")"
grep -q 'nv_alloc_contig_pages \[nvidia\]  (+8 paths below --depth 1)$' "$dir/opts.txt" || fail "depth: $(cat "$dir/opts.txt")"
"$nvtrace" tree "$seed" --group-by thread --module nvidia -d 1 | grep -q '^     380.000            -      380.000        1x  \[thread unknown\]' ||
    fail "--group-by thread"

# Colours: none into a pipe or a file; on a terminal unless NO_COLOR is set (and not empty); --color wins.
esc=$(printf '\033')
"$nvtrace" tree "$seed" | grep -q "$esc" && fail "colour codes into a pipe"
"$nvtrace" tree "$seed" --color=always | grep -q "$esc\[1m" || fail "--color=always gave no colour"
if command -v script > /dev/null; then
    script -qec "'$nvtrace' tree '$seed'" /dev/null > "$dir/tty.txt" < /dev/null
    grep -q "$esc\[1m" "$dir/tty.txt" || fail "no colour on a terminal: $(head -3 "$dir/tty.txt")"
    NO_COLOR=1 script -qec "'$nvtrace' tree '$seed'" /dev/null > "$dir/tty-nocolor.txt" < /dev/null
    grep -q "$esc" "$dir/tty-nocolor.txt" && fail "colour on a terminal with NO_COLOR=1"
    NO_COLOR= script -qec "'$nvtrace' tree '$seed'" /dev/null > "$dir/tty-empty.txt" < /dev/null
    grep -q "$esc\[1m" "$dir/tty-empty.txt" || fail "an empty NO_COLOR turned colour off (no-color.org: set and not empty)"
    script -qec "'$nvtrace' tree '$seed' --color=never" /dev/null > "$dir/tty-never.txt" < /dev/null
    grep -q "$esc" "$dir/tty-never.txt" && fail "colour on a terminal with --color=never"
else
    echo "note: script(1) not installed; the terminal cases were not run" >&2
fi

# Exit 2, with the file and the place or the option named.
expect2() {
    want=$1
    shift
    rc=0
    "$nvtrace" tree "$@" > "$dir/out" 2> "$dir/err" || rc=$?
    [ "$rc" = 2 ] || fail "exit $rc for '$*', expected 2"
    grep -q -- "$want" "$dir/err" || fail "'$*': stderr lacks '$want': $(cat "$dir/err")"
}
head -c 700 "$dir/seed.json" > "$dir/truncated.json"
expect2 "truncated.json: not valid JSON: .*line [0-9]*, column [0-9]*" "$dir/truncated.json"
expect2 "$dir/missing.txt" "$dir/missing.txt"
printf 'not a trace\nat all\n' > "$dir/garbage.txt"
expect2 "garbage.txt" "$dir/garbage.txt"
expect2 "--min-time: expected a duration such as 10us" "$seed" --min-time 10xs
expect2 "--group-by: expected phase, api, ioctl or thread, got 'cpu'" "$seed" --group-by cpu
# Every --depth outside 1..2^32-1 gets the one message naming the range (0 and -1 were worded differently).
for d in 0 -1 -5 abc 1.5 4294967296 99999999999; do
    expect2 "--depth: expected a whole number of levels from 1 to 4294967295, got '$d'" "$seed" --depth "$d"
done
"$nvtrace" tree "$seed" --depth 4294967295 > /dev/null || fail "--depth 4294967295: exit $?"
expect2 "color" "$seed" --color=sometimes
echo "ok"
