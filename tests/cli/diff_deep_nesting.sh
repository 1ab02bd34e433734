#!/bin/sh
# nvtrace diff of a saved report whose calls nest deeper than kDiffMaxDepth (include/nvtrace/diff.hpp): such a
# report (each call the parent of the next, 50,000 deep) crashed the diff with SIGSEGV in its recursive walk; it is
# refused (exit 2) naming the report and its depth. One within the bound is compared.
set -eu
nvtrace=$1 base=$2 dir=$3
mkdir -p "$dir"
python3 - "$base" "$dir" <<'PY'
import json, sys
base, d = sys.argv[1], sys.argv[2]
j = json.load(open(base))
for depth, name in ((50000, "deep"), (4000, "ok")):
    j["calls"] = [{"id": i, "parent": i - 1 if i > 1 else None, "cpu": 0, "pid": 1, "comm": "x", "depth": i - 1,
                   "function": "f%d" % (i % 7), "entry_ns": i, "duration_ns": 1}
                  for i in range(1, depth + 1)]
    j["graph"] = []
    json.dump(j, open("%s/%s.json" % (d, name), "w"))
PY
rc=0
"$nvtrace" diff "$dir/deep.json" "$base" > "$dir/out" 2> "$dir/err" || rc=$?
[ "$rc" = 2 ] || { echo "diff of a 50,000-deep report: exit $rc, expected 2" >&2; cat "$dir/err" >&2; exit 1; }
grep -q "$dir/deep.json: its calls nest 50000 deep: nvtrace diff compares call trees up to 4096 calls deep" \
    "$dir/err" || { cat "$dir/err" >&2; exit 1; }
"$nvtrace" diff "$dir/ok.json" "$dir/ok.json" > "$dir/out"
grep -q "no change" "$dir/out" || { cat "$dir/out" >&2; exit 1; }
