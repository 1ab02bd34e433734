#!/bin/sh
# nvtrace check - reads the report from standard input. The text output's head said "report: -", which a new user
# took for a missing name; it says "report: - (standard input)", while --json keeps the argument as given ("-").
set -eu
nvtrace=$1 report=$2 dir=$3
rm -rf "$dir"
mkdir -p "$dir"
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
printf 'check any-call\n  absent ioctl NV_ESC_RM_FREE\n' > "$dir/e.expect"
rc=0
"$nvtrace" check - --expect "$dir/e.expect" < "$report" > "$dir/out" 2> "$dir/err" || rc=$?
[ "$rc" -le 1 ] || fail "check -: exit $rc: $(cat "$dir/err")"
[ "$(head -n 1 "$dir/out")" = "report: - (standard input)" ] || fail "first line: $(head -n 1 "$dir/out")"
rc=0
"$nvtrace" check - --expect "$dir/e.expect" --json < "$report" > "$dir/json" 2> "$dir/err" || rc=$?
[ "$rc" -le 1 ] || fail "check - --json: exit $rc: $(cat "$dir/err")"
python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); assert j["report"] == "-", j["report"]' "$dir/json" ||
    fail "--json: report is not \"-\""
echo "ok"
