#!/usr/bin/env bash
# bench/side_by_side.sh [--reps N] LABEL=CMD...: the same measurement for two or more builds (or commands) in one
# run, alternated (run 1 of every command, then run 2 of every command, ...), so that a change in the machine's
# load falls on every side alike. Each CMD is a bash -c string (its stdout and stderr are discarded) run under
# `/usr/bin/time`; prints, per label, the median CPU time (user + sys), the median max RSS and every run's
# (wall, user, sys, max RSS KB), and the load average before and after. Not part of the test suite.
#   bench/side_by_side.sh --reps 7 base="/work/base/build-perf/tracer/nvtrace report /tmp/bcap --json" \
#                                   head="build-perf/tracer/nvtrace report /tmp/bcap --json"
set -euo pipefail
reps=5
if [[ ${1:-} == --reps ]]; then
    reps=$2
    shift 2
fi
if [[ $# -lt 1 || ${1:-} == -h || ${1:-} == --help ]]; then
    sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
labels=() cmds=()
for a in "$@"; do
    [[ $a == *=* ]] || { echo "side_by_side.sh: expected LABEL=CMD, got: $a" >&2; exit 2; }
    labels+=("${a%%=*}")
    cmds+=("${a#*=}")
done
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 0; r < reps; r++)); do
    for i in "${!cmds[@]}"; do
        /usr/bin/time -f "${labels[$i]} %e %U %S %M" -a -o "$out" bash -c "${cmds[$i]}" >/dev/null 2>&1 \
            || { echo "side_by_side.sh: ${labels[$i]} failed: ${cmds[$i]}" >&2; exit 1; }
    done
done
echo "load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"
awk -v order="${labels[*]}" '
    NF == 5 { n[$1]++; w[$1, n[$1]] = $2; u[$1, n[$1]] = $3; s[$1, n[$1]] = $4; m[$1, n[$1]] = $5 }
    function median(a, k,    i, j, t, v) {
        for (i = 1; i <= k; i++) v[i] = a[i]
        for (i = 2; i <= k; i++) for (j = i; j > 1 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
        return k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
    }
    END {
        split(order, names, " ")
        for (x = 1; x in names; x++) {
            l = names[x]; k = n[l]; raw = ""
            for (i = 1; i <= k; i++) { cpu[i] = u[l, i] + s[l, i]; rss[i] = m[l, i]; wall[i] = w[l, i]
                raw = raw sprintf(" [%s %s %s %s]", w[l, i], u[l, i], s[l, i], m[l, i]) }
            printf "%-16s median of %d: CPU %.3f s, max RSS %.1f MB, wall %.2f s\n", l, k, median(cpu, k),
                median(rss, k) / 1000, median(wall, k)
            printf "%-16s runs (wall user sys maxrss_kb):%s\n", "", raw
        }
    }' "$out"
