#!/usr/bin/env bash
# gpu_check_here.sh BUNDLE WORK: scripts/gpu-check.sh run from the bundle on this machine (no GPU), ctest
# bundle.gpu_check_here. It must refuse a --results folder that exists, finish in under 120 s, and leave exactly one
# file, gpu-check-results.tar.gz, whose summary.txt has a status line for every item of docs/gpu-check.md (an exit
# code, or "skipped" with why) and whose step files are not empty. As root it runs in a private mount namespace, so
# a tracefs that gpu-check.sh mounts is never seen outside.
set -u
B=$1 WORK=$2
fail=0
bad() { echo "FAIL: $*"; fail=1; }
rm -rf "$WORK"; mkdir -p "$WORK/exists"
"$B/scripts/gpu-check.sh" --results "$WORK/exists" >/dev/null 2>"$WORK/refused.txt"
rc=$?
[ $rc -eq 2 ] || bad "an existing --results folder: exit $rc, expected 2"
grep -q "exists" "$WORK/refused.txt" || bad "the refusal does not say the folder exists: $(cat "$WORK/refused.txt")"
[ -z "$(ls -A "$WORK/exists")" ] || bad "gpu-check.sh wrote into an existing folder"

ns=()
if [ "$(id -u)" -eq 0 ] && unshare -m --propagation private true 2>/dev/null; then ns=(unshare -m --propagation private); fi
t0=$(date +%s)
"${ns[@]}" "$B/scripts/gpu-check.sh" --results "$WORK/r" > "$WORK/stdout.txt" 2>&1
rc=$?
secs=$(( $(date +%s) - t0 ))
echo "gpu-check.sh: exit $rc in $secs s"
[ $rc -eq 0 ] || bad "exit $rc: $(tail -5 "$WORK/stdout.txt")"
[ $secs -lt 120 ] || bad "took $secs s (limit 120 s)"
files=$(find "$WORK/r" -mindepth 1 | wc -l)
[ "$files" -eq 1 ] || bad "$WORK/r holds $files entries, expected one archive: $(ls -A "$WORK/r")"
A=$WORK/r/gpu-check-results.tar.gz
[ -f "$A" ] || { bad "no $A"; exit 1; }
mkdir -p "$WORK/x" && tar -C "$WORK/x" -xzf "$A" || { bad "the archive does not unpack"; exit 1; }
S=$WORK/x/summary.txt
[ -f "$S" ] || { bad "no summary.txt in the archive"; exit 1; }
[ -f "$WORK/x/MANIFEST" ] || bad "no MANIFEST in the archive"
for item in uname kernel-config lockdown available-tracers ftrace-filter-writable nvidia-version nvidia-modules \
            nvidia-smi iomem ldd-version nvtrace-version nvtrace-report-case doctor path-census kernel-log-before \
            run-cuda-malloc run-memcpy run-hostregister run-managed run-hostregister-bar run-bar-reserve-map \
            run-gem-mmap run-pytorch run-nvidia-smi kernel-log-after; do
    line=$(grep -P "^$item\t" "$S" | head -1)
    if [ -z "$line" ]; then bad "no status line for $item"; continue; fi
    case $line in
        *"	exit="*"	seconds="*) ;;
        *"	skipped	"*"why: "?*) ;;
        *) bad "status line of $item has neither an exit code nor a reason: $line" ;;
    esac
    f=$(ls "$WORK/x"/[0-9][0-9]-"$item".txt 2>/dev/null | head -1)
    if [ -z "$f" ] || [ ! -s "$f" ]; then bad "no output file (or an empty one) for $item"; fi
done
grep -qP "^total\tseconds=" "$S" || bad "summary.txt has no total line"
# A scenario refused here says why in its file (no GPU: "cannot run here: ...").
grep -q "cannot run here" "$WORK"/x/*-run-cuda-malloc.txt || bad "run-cuda-malloc does not say why it cannot run"
# The census names the documented path's functions.
grep -qP "^cuda-malloc\tnvidia_unlocked_ioctl\t" "$WORK"/x/*-path-census.txt || bad "the census has no cuda-malloc nvidia_unlocked_ioctl row"
left=$(find "${TMPDIR:-/tmp}" -maxdepth 1 -name 'gpu-check.*' -newer "$WORK/refused.txt" 2>/dev/null | wc -l)
[ "$left" -eq 0 ] || bad "gpu-check.sh left $left staging folder(s) in ${TMPDIR:-/tmp}"
cat "$S"
exit $fail
