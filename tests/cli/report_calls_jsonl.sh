#!/bin/sh
# nvtrace report --calls-jsonl (docs/report.md): the calls of a function_graph text go to the JSON Lines file,
# one per line, the same calls as without the option; report.calls is empty and source says where they went;
# a capture directory is refused (exit 2).
set -eu
nvtrace=$1 case=$2 dir=$3
mkdir -p "$dir"
"$nvtrace" report "$case" --json > "$dir/whole.json"
"$nvtrace" report "$case" --calls-jsonl "$dir/calls.jsonl" --json > "$dir/streamed.json"
python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
whole = json.load(open(d + "/whole.json"))
streamed = json.load(open(d + "/streamed.json"))
lines = [json.loads(l) for l in open(d + "/calls.jsonl")]
assert streamed["calls"] == [], "report.calls must be empty"
assert streamed["source"]["calls_count"] == len(lines), (streamed["source"], len(lines))
assert sorted(lines, key=lambda c: c["id"]) == whole["calls"], "the lines are not the report's calls"
assert streamed["graph"] == whole["graph"]
assert streamed["completeness"] == whole["completeness"]
print("ok:", len(lines), "calls")
PY
mkdir -p "$dir/capture"
rc=0
"$nvtrace" report "$dir/capture" --calls-jsonl "$dir/x.jsonl" > /dev/null 2> "$dir/err" || rc=$?
[ "$rc" = 2 ] || { echo "exit $rc for a directory, expected 2" >&2; exit 1; }
grep -q -- "--calls-jsonl takes a trace file" "$dir/err" || { cat "$dir/err" >&2; exit 1; }
# A report made with --calls-jsonl holds none of its calls: diff would show every call as added, a folded export
# would be empty. Both are refused (exit 2) saying where the calls are.
for cmd in "diff $dir/streamed.json $dir/whole.json" "export --format folded $dir/streamed.json"; do
    rc=0
    $nvtrace $cmd > "$dir/out" 2> "$dir/err" || rc=$?
    [ "$rc" = 2 ] || { echo "nvtrace $cmd: exit $rc, expected 2" >&2; cat "$dir/err" >&2; exit 1; }
    grep -q "calls were written to $dir/calls.jsonl (--calls-jsonl), not into the report" "$dir/err" ||
        { cat "$dir/err" >&2; exit 1; }
    [ ! -s "$dir/out" ] || { echo "nvtrace $cmd wrote output" >&2; exit 1; }
done
"$nvtrace" diff "$dir/whole.json" "$dir/whole.json" > /dev/null
