#!/bin/sh
# The text outputs of the offline commands on a saved report whose strings hold control bytes (anyone may write a
# report.json): a function name, a device path, a kernel-log line, a comm and the host with a newline followed by a
# forged line, ESC sequences and DEL. No output may hold a line that starts with the forged text or a raw ESC/DEL:
# they are shown as \xNN (include/nvtrace/visible_text.hpp; docs/tree.md, docs/fleet.md, docs/export.md, docs/report.md).
set -eu
nvtrace=$1 base=$2 dir=$3
rm -rf "$dir"
mkdir -p "$dir/fleet/a" "$dir/fleet/b"
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
python3 - "$base" "$dir" <<'PY'
import json, sys
base, d = sys.argv[1], sys.argv[2]
j = json.load(open(base))
j["calls"][0]["function"] = "nvidia_ioctl\nFORGED call\x1b[2J"
j["calls"][1]["comm"] = "x\nFORGED comm\x7f"
j["ioctls"][0]["fd_path"] = "/dev/nvidia0\nFORGED ioctl\x1b]0;t\x07"
j["kernel_log"] = [{"seq": 1, "ts_ns": 5, "level": 3, "level_known": True, "facility": 0, "source": "NVRM",
                    "kind": "other", "text": "NVRM: x\x1b[31m\rFORGED log", "fields": {}, "call": None}]
j.setdefault("environment", {})["host"] = "n1\nFORGED host"
json.dump(j, open(d + "/ctl.json", "w"))
json.dump(j, open(d + "/fleet/a/report.json", "w"))
j["calls"][0]["function"] = "other\nFORGED other"
json.dump(j, open(d + "/fleet/b/report.json", "w"))
PY
check() {  # FILE WHAT
    grep -q '^FORGED' "$1" && fail "$2: a forged line: $(grep '^FORGED' "$1")"
    if LC_ALL=C grep -q "$(printf '[\033\177\r]')" "$1"; then fail "$2: a raw control byte"; fi
    grep -q 'FORGED' "$1" || fail "$2: the names are not shown at all"
}
"$nvtrace" report "$dir/ctl.json" -v > "$dir/summary.txt" || fail "report: exit $?"
check "$dir/summary.txt" "report's summary"
grep -q 'nvidia0\\x0aFORGED ioctl\\x1b]0;t\\x07' "$dir/summary.txt" || fail "summary: $(cat "$dir/summary.txt")"
"$nvtrace" tree "$dir/ctl.json" > "$dir/tree.txt" || fail "tree: exit $?"
check "$dir/tree.txt" tree
for t in calls ioctls; do
    "$nvtrace" export "$dir/ctl.json" --format csv --table $t > "$dir/$t.csv" || fail "csv $t: exit $?"
    check "$dir/$t.csv" "csv $t"
done
"$nvtrace" export "$dir/ctl.json" --format folded > "$dir/folded.txt" || fail "folded: exit $?"
grep -q '^FORGED' "$dir/folded.txt" && fail "folded: a forged stack"
"$nvtrace" fleet "$dir/fleet" > "$dir/fleet.txt" || fail "fleet: exit $?"
check "$dir/fleet.txt" fleet
grep -q '^n1\\x0aFORGED host ' "$dir/fleet.txt" || fail "fleet: $(cat "$dir/fleet.txt")"
