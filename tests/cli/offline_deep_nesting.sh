#!/bin/sh
# The offline readers of a saved report's call tree on a report whose calls nest 100,000 deep (each call the parent
# of the next: another producer's report, or one made to crash a reader). export --format chrome walked the tree
# recursively and died of SIGSEGV; every export format, tree and check now read it without recursion (exit 0, or 1
# for check's failed expectations), and chrome's slices nest. fleet, whose outlier comparison is nvtrace diff's,
# refuses a report deeper than kDiffMaxDepth (include/nvtrace/diff.hpp) with exit 2 naming it, its depth and the
# bound (it grew memory with the depth squared first).
set -eu
nvtrace=$1 base=$2 expect=$3 dir=$4
rm -rf "$dir"
mkdir -p "$dir/fleet/base" "$dir/fleet/deep"
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
python3 - "$base" "$dir" <<'PY'
import json, sys
base, d = sys.argv[1], sys.argv[2]
j = json.load(open(base))
for depth, name in ((100000, "deep.json"), (5000, "fleet/deep/report.json")):
    # Every call spans [1 ns, 2 ns]: each nests exactly in its parent, and only the innermost has self time (one
    # folded stack, not 100,000 of up to 100,000 frames each).
    j["calls"] = [{"id": i, "parent": i - 1 if i > 1 else None, "cpu": 0, "pid": 1, "comm": "x", "depth": i - 1,
                   "function": "f%d" % (i % 7), "entry_ns": 1, "duration_ns": 1}
                  for i in range(1, depth + 1)]
    j["graph"] = []
    json.dump(j, open("%s/%s" % (d, name), "w"))
PY
cp "$base" "$dir/fleet/base/report.json"
for f in json chrome folded csv html; do
    rc=0
    "$nvtrace" export "$dir/deep.json" --format "$f" -o "$dir/out.$f" 2> "$dir/err" || rc=$?
    [ "$rc" = 0 ] || fail "export --format $f of a 100,000-deep report: exit $rc: $(cat "$dir/err")"
done
python3 - "$dir/out.chrome" <<'PY' || fail "chrome export of the deep report does not nest"
import json, sys
ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e["ph"] in "BE"]
depth = deepest = 0
for e in ev:
    depth += 1 if e["ph"] == "B" else -1
    assert depth >= 0
    deepest = max(deepest, depth)
assert depth == 0 and deepest == 100000, (depth, deepest)
PY
# The one leaf has all the self time. The graph the stacks come from holds paths up to its byte cap
# (analyze/path_tree.hpp): the deep part of the chain is the row "[beyond N paths]" with the leaf under it.
[ "$(wc -l < "$dir/out.folded")" = 1 ] || fail "folded: $(wc -l < "$dir/out.folded") lines"
grep -qx '\[beyond_[0-9]*_paths\];f5 1' "$dir/out.folded" || fail "folded: $(head -c 300 "$dir/out.folded")"
[ "$(wc -l < "$dir/out.csv")" = 100001 ] || fail "csv: $(wc -l < "$dir/out.csv") lines"
rc=0
"$nvtrace" tree "$dir/deep.json" > "$dir/tree" 2> "$dir/err" || rc=$?
[ "$rc" = 0 ] || fail "tree: exit $rc: $(cat "$dir/err")"
grep -q '\[depth 100000\] `- f5$' "$dir/tree" || fail "tree: no line for the deepest call"
rc=0
"$nvtrace" check "$dir/deep.json" --expect "$expect" > "$dir/check" 2> "$dir/err" || rc=$?
[ "$rc" -le 1 ] || fail "check: exit $rc: $(cat "$dir/err")"
rc=0
"$nvtrace" fleet "$dir/fleet" > "$dir/fleet.out" 2> "$dir/err" || rc=$?
[ "$rc" = 2 ] || fail "fleet with a 5,000-deep report: exit $rc, expected 2: $(cat "$dir/err")"
grep -qx "nvtrace fleet: $dir/fleet/deep/report.json: its calls nest 5000 deep: nvtrace fleet compares call trees up to 4096 calls deep" \
    "$dir/err" || fail "fleet: $(cat "$dir/err")"
