#!/usr/bin/env bash
# bench/capture_split.sh BUILD_DIR WORK_DIR [IOCTLS]: how nvtrace run's cost splits between the capture and the
# report stage (docs/performance.md, "Capture"). Runs `nvtrace run -q --no-preload --out WORK_DIR/cap --
# fionread_loop IOCTLS` (default 1000000) with the workload wrapped in a shell that, the moment the workload
# ends, copies nvtrace's own /proc/PID/stat and VmHWM and the time: nvtrace's CPU and peak memory for the capture
# alone, and the wall time from then to nvtrace's exit (the report stage). The
# outer /usr/bin/time gives the whole run (capture + report, workload included). Needs root and tracefs.
set -euo pipefail
build=$(cd "$1" && pwd)
work=$2
n=${3:-1000000}
nv=$build/tracer/nvtrace
loop=$build/tests/fionread_loop
[[ -x $nv && -x $loop ]] || { echo "capture_split.sh: build $nv and $loop first" >&2; exit 2; }
mkdir -p "$work"
d=$work/cap
rm -rf "$d"
/usr/bin/time -o "$work/whole.time" -f '%e %U %S %M' "$nv" run -q --no-preload --out "$d" -- /bin/sh -c \
    "/usr/bin/time -o '$work/child.time' -f '%e %U %S %M' '$loop' $n; cat /proc/\$PPID/stat > '$work/at_end.stat'; grep VmHWM /proc/\$PPID/status > '$work/at_end.hwm'; date +%s.%N > '$work/at_end.t'" >/dev/null
date +%s.%N > "$work/done.t"
read -r ww wu ws wm < "$work/whole.time"
read -r _ cu cs _ < "$work/child.time"
tck=$(getconf CLK_TCK)
read -r su ss < <(sed 's/.*) //' "$work/at_end.stat" | awk -v t="$tck" '{ printf "%.2f %.2f\n", $12 / t, $13 / t }')
hwm=$(awk '{ print $2 }' "$work/at_end.hwm")
events=$((2 * n))
after=$(awk -v a="$(cat "$work/at_end.t")" -v b="$(cat "$work/done.t")" 'BEGIN { printf "%.2f", b - a }')
awk -v ww="$ww" -v wu="$wu" -v ws="$ws" -v wm="$wm" -v cu="$cu" -v cs="$cs" -v su="$su" -v ss="$ss" -v hwm="$hwm" \
    -v ev="$events" -v after="$after" 'BEGIN {
    own = wu + ws - cu - cs
    printf "whole run:      %.2f s wall, nvtrace own CPU %.2f s = %.3f us/event, peak %d MB\n", ww, own, own * 1e6 / ev, wm / 1024
    printf "capture phase:  nvtrace CPU %.2f s = %.3f us/event, peak %d MB (at the end of the workload)\n", su + ss, (su + ss) * 1e6 / ev, hwm / 1024
    printf "report stage:   %.2f s CPU = %.3f us/event, %.2f s wall (workload end to nvtrace exit)\n", own - su - ss, (own - su - ss) * 1e6 / ev, after
}'
python3 - "$d" <<'PY'
import json, sys
d = sys.argv[1]
m = json.load(open(d + '/meta.json'))
r = json.load(open(d + '/report.json'))
c = r['completeness']
pages = sum(b['pages'] for b in m['raw']['buffers'])
print(f"kept: {len(r['ioctls'])} ioctls; lost {c['lost_events']}, overrun {c['overruns']}, dropped {c['dropped_events']}; "
      f"complete {c['complete']}; {pages} pages; write_error {m['raw']['write_error']}, decode_error {m['raw']['decode_error']}")
PY
