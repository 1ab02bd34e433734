#!/usr/bin/env bash
# gpu-check.sh --results DIR [--bundle BUNDLE] [--budget SECONDS]
#
# The one-shot check for a machine with an NVIDIA GPU (docs/gpu-check.md). It runs FROM THE BUNDLE that
# scripts/gpu-bundle.sh makes (BUNDLE: the folder above this script unless given) and builds nothing.
#
# DIR must not exist (a retry never reuses a results folder). Everything goes into ONE archive,
# DIR/gpu-check-results.tar.gz, rewritten after every step, so a run that is killed still leaves what it had
# collected. Inside it: summary.txt (one line per step: name, exit code, seconds, why it was skipped), NN-name.txt
# for each step's output, runs/NAME/ for each `nvtrace run` (report.json, meta.json; raw/ pages are dropped when
# the archive would pass 15 MB, and summary.txt says so).
#
# Every step runs under `timeout -k`; one failing step never stops the others; the whole run stays under the
# budget (default 360 s): a step that no longer fits is skipped, with that reason. Nothing is written to the
# kernel log, and the tracing state is left as it was found (tracefs is mounted only when it is not, and unmounted
# again; the writability of set_ftrace_filter is tested in a private instance that is removed).
# Exit: 0 when the archive is complete (every step ran or says why not), 2 for a usage error (DIR exists).
set -u

RESULTS="" BUNDLE="" BUDGET=360
while [ $# -gt 0 ]; do
    case $1 in
        --results) RESULTS=${2:-}; shift 2 || shift ;;
        --bundle) BUNDLE=${2:-}; shift 2 || shift ;;
        --budget) BUDGET=${2:-}; shift 2 || shift ;;
        -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "gpu-check.sh: unknown argument '$1' (gpu-check.sh --results DIR [--bundle DIR] [--budget S])" >&2
           exit 2 ;;
    esac
done
if [ -z "$RESULTS" ]; then echo "gpu-check.sh: --results DIR is required (a folder that does not exist yet)" >&2; exit 2; fi
if [ -e "$RESULTS" ] || [ -L "$RESULTS" ]; then
    echo "gpu-check.sh: $RESULTS exists; a retry never reuses a results folder: give a new one" >&2
    exit 2
fi
mkdir -p "$(dirname "$RESULTS")" && mkdir "$RESULTS" || { echo "gpu-check.sh: cannot create $RESULTS" >&2; exit 2; }
RESULTS=$(cd "$RESULTS" && pwd)
BUNDLE=${BUNDLE:-$(cd "$(dirname "$0")/.." && pwd)}
BUNDLE=$(cd "$BUNDLE" && pwd)
NVTRACE=$BUNDLE/bin/nvtrace
SCENARIO_ROOT=$BUNDLE/share/nvtrace/scenarios
ARCHIVE=$RESULTS/gpu-check-results.tar.gz
START=$(date +%s)

# The archive's contents are staged outside DIR, so that DIR only ever holds the one archive.
W=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX") || { echo "gpu-check.sh: mktemp failed" >&2; exit 2; }
SUMMARY=$W/summary.txt
N=0
MOUNTED=""

elapsed() { echo $(( $(date +%s) - START )); }
pack() {
    tar -C "$W" -czf "$RESULTS/.partial.tar.gz" . 2>/dev/null
    local size
    size=$(stat -c %s "$RESULTS/.partial.tar.gz" 2>/dev/null || echo 0)
    if [ "$size" -gt 15000000 ]; then
        # The largest run first: its raw pages, then its report.
        local big
        big=$(du -s "$W"/runs/*/raw 2>/dev/null | sort -n | tail -1 | cut -f2)
        [ -n "$big" ] || big=$(find "$W/runs" -type f -size +1M -printf '%s %p\n' 2>/dev/null | sort -n | tail -1 | cut -d' ' -f2)
        if [ -n "$big" ]; then
            echo "archive-trim	dropped ${big#"$W"/} ($(du -sh "$big" | cut -f1)): the archive was $size bytes (limit 15 MB)" >> "$SUMMARY"
            rm -rf "$big"
            pack
            return
        fi
    fi
    mv -f "$RESULTS/.partial.tar.gz" "$ARCHIVE"
}
finish() {
    if [ -n "$MOUNTED" ]; then
        if umount "$MOUNTED" 2>/dev/null; then echo "tracefs-unmounted	$MOUNTED (mounted by gpu-check)" >> "$SUMMARY"; fi
    fi
    echo "total	seconds=$(elapsed)	budget=$BUDGET" >> "$SUMMARY"
    pack
    rm -rf "$W"
}
trap finish EXIT
trap 'echo "interrupted	by a signal at $(elapsed) s" >> "$SUMMARY"; exit 130' INT TERM HUP

note() { echo "$*" >> "$SUMMARY"; }
# skip NAME WHY: the step did not run; its file says why.
skip() {
    N=$((N + 1))
    local f
    f=$(printf '%02d-%s.txt' "$N" "$1")
    echo "skipped: $2" > "$W/$f"
    printf '%s\tskipped\tseconds=0\twhy: %s\n' "$1" "$2" >> "$SUMMARY"
    pack
}
# step NAME LIMIT CMD...: CMD under `timeout -k 5 LIMIT` (cut to what is left of the budget), stdout and stderr
# into NN-NAME.txt; a status line in summary.txt; the archive rewritten.
step() {
    local name=$1 limit=$2
    shift 2
    local left=$(( BUDGET - $(elapsed) - 10 ))
    if [ "$left" -lt 3 ]; then skip "$name" "the ${BUDGET} s budget is spent ($(elapsed) s elapsed)"; return 0; fi
    [ "$limit" -gt "$left" ] && limit=$left
    N=$((N + 1))
    local f t0 rc
    f=$(printf '%02d-%s.txt' "$N" "$name")
    t0=$(date +%s)
    # The command as run; a shell function passed as `bash -c "BODY; NAME ARGS"` shows as its call only.
    local shown="$*"
    case $shown in "bash -c "*"() "*) shown="bash -c ... ${shown##*; }" ;; esac
    { echo "\$ $shown"; echo "# limit ${limit} s, started at $(elapsed) s"; } > "$W/$f"
    timeout -k 5 "$limit" "$@" >> "$W/$f" 2>&1 < /dev/null
    rc=$?
    local why=""
    [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && why="	why: stopped at its ${limit} s limit"
    printf '%s\texit=%d\tseconds=%d%s\n' "$name" "$rc" $(( $(date +%s) - t0 )) "$why" >> "$SUMMARY"
    LAST_RC=$rc LAST_FILE=$W/$f
    pack
    return 0
}

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
    if sudo -n true 2>/dev/null; then SUDO=(sudo -n); else note "note	not root and no password-less sudo: tracing and some files are refused"; fi
fi
note "gpu-check	bundle=$BUNDLE	started=$(date -u +%Y-%m-%dT%H:%M:%SZ)	budget=$BUDGET s"
if [ -f "$BUNDLE/MANIFEST" ]; then cp "$BUNDLE/MANIFEST" "$W/MANIFEST"; else note "note	no MANIFEST in $BUNDLE"; fi

# ---- the machine: cheapest and most certain first ----------------------------------------------------------
step uname 5 uname -a
kernel_config() {
    if [ -r /proc/config.gz ]; then echo "# /proc/config.gz"; zcat /proc/config.gz; return; fi
    local c=/boot/config-$(uname -r)
    if [ -r "$c" ]; then echo "# $c"; cat "$c"; return; fi
    echo "not readable: no /proc/config.gz (CONFIG_IKCONFIG_PROC) and no $c"
    return 1
}
step kernel-config 10 bash -c "$(declare -f kernel_config); kernel_config"
step lockdown 5 bash -c 'f=/sys/kernel/security/lockdown; if [ -r $f ]; then cat $f; else echo "not readable: $f (securityfs not mounted, or no lockdown LSM)"; grep -o "lockdown=[a-z]*" /proc/cmdline || true; exit 1; fi'

TRACEFS=""
for d in /sys/kernel/tracing /sys/kernel/debug/tracing; do
    if [ -r "$d/available_tracers" ]; then TRACEFS=$d; break; fi
done
if [ -z "$TRACEFS" ] && [ "$(id -u)" -eq 0 ] && grep -qw tracefs /proc/filesystems && [ -d /sys/kernel/tracing ]; then
    if mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null; then
        TRACEFS=/sys/kernel/tracing MOUNTED=/sys/kernel/tracing
        note "tracefs-mounted	/sys/kernel/tracing (was not mounted; unmounted at the end)"
    fi
fi
if [ -n "$TRACEFS" ]; then
    step available-tracers 5 bash -c "echo 'top level:'; cat $TRACEFS/available_tracers; echo 'current_tracer:'; cat $TRACEFS/current_tracer"
    # A private instance: what it offers, whether its set_ftrace_filter takes an append of nothing (opening without
    # O_TRUNC keeps the filter), and whether the function tracer can be set there. The instance is removed again.
    probe_filter() {
        local i=$1/instances/gpu-check-$$
        if ! mkdir "$i" 2>/dev/null; then
            echo "cannot create a private instance ($i)"
            if : >> "$1/set_ftrace_filter" 2>/dev/null; then echo "top-level set_ftrace_filter: writable (append of nothing)"
            else echo "top-level set_ftrace_filter: not writable: $( : 2>&1 >> "$1/set_ftrace_filter")"; fi
            return 1
        fi
        echo "instance available_tracers: $(cat "$i/available_tracers" 2>&1)"
        if [ -e "$i/set_ftrace_filter" ]; then
            if : >> "$i/set_ftrace_filter" 2>/dev/null; then echo "instance set_ftrace_filter: writable (append of nothing)"
            else echo "instance set_ftrace_filter: not writable: $( { : >> "$i/set_ftrace_filter"; } 2>&1)"; fi
        else
            echo "instance set_ftrace_filter: absent (no function tracing in instances)"
        fi
        # The tracer test traces one function only: the instance's own filter is set to a function that exists
        # (never left empty, which would hook every function), then the tracer is set with tracing off, then nop.
        local fn t err
        fn=$(grep -m1 -xE 'vfs_read|ksys_read|do_sys_openat2' "$1/available_filter_functions" 2>/dev/null)
        if [ -z "$fn" ] || ! echo "$fn" > "$i/set_ftrace_filter" 2>/dev/null; then
            echo "instance tracer test: not made (no function to filter on, or the instance filter refused it)"
        else
            echo 0 > "$i/tracing_on"
            for t in function_graph function; do
                grep -qw "$t" "$i/available_tracers" 2>/dev/null || { echo "instance current_tracer=$t: not listed"; continue; }
                if err=$( { echo "$t" > "$i/current_tracer"; } 2>&1); then echo "instance current_tracer=$t (filter $fn): accepted"
                else echo "instance current_tracer=$t (filter $fn): refused: ${err##*: }"; fi
                echo nop > "$i/current_tracer" 2>/dev/null
            done
        fi
        rmdir "$i" && echo "instance removed"
    }
    step ftrace-filter-writable 10 bash -c "$(declare -f probe_filter); probe_filter $TRACEFS"
else
    skip available-tracers "tracefs is not mounted and could not be mounted here ($( [ "$(id -u)" -eq 0 ] && echo 'no tracefs in /proc/filesystems' || echo 'not root'))"
    skip ftrace-filter-writable "no tracefs"
fi

step nvidia-version 5 cat /proc/driver/nvidia/version
step nvidia-modules 10 bash -c 'for m in /sys/module/nvidia*; do [ -e "$m" ] || { echo "no /sys/module/nvidia*"; break; }
    echo "== $m: initstate=$(cat $m/initstate 2>/dev/null || echo "none (built in)") version=$(cat $m/version 2>/dev/null) srcversion=$(cat $m/srcversion 2>/dev/null) taint=$(cat $m/taint 2>/dev/null)"
    ls $m $m/parameters 2>/dev/null | tr "\n" " "; echo; done
    echo "== /proc/modules (nvidia):"; grep -i nvidia /proc/modules || echo "none"
    echo "== /proc/driver/nvidia:"; ls -R /proc/driver/nvidia 2>&1 | head -50
    echo "== /dev/nvidia*:"; ls -la /dev/nvidia* 2>&1'
if command -v nvidia-smi >/dev/null; then step nvidia-smi 30 nvidia-smi -q
else skip nvidia-smi "nvidia-smi is not in PATH"; fi
step iomem 5 bash -c 'found=0; for d in /sys/bus/pci/devices/*; do [ "$(cat $d/vendor 2>/dev/null)" = 0x10de ] || continue
    found=1; b=$(basename $d); echo "== $b class=$(cat $d/class) device=$(cat $d/device)"; grep -n "$b" /proc/iomem
    echo "resource (start end flags per BAR):"; cat $d/resource; ls -la $d/resource[0-9]* 2>&1; done
    [ $found = 1 ] || { echo "no NVIDIA PCI device (vendor 0x10de) in /sys/bus/pci/devices"; exit 1; }'
step ldd-version 5 ldd --version

# ---- what nvtrace sees --------------------------------------------------------------------------------------
if [ -x "$NVTRACE" ]; then
    step nvtrace-version 5 "$NVTRACE" --version
    # The bundled libraries load and read a trace (libtracefs, libtraceevent, libtracecmd, fmt): no tracing needed.
    case_file=$BUNDLE/share/nvtrace/cases/fgraph-irq-nested-module-suffix.txt
    if [ -r "$case_file" ]; then step nvtrace-report-case 20 "$NVTRACE" report "$case_file"
    else skip nvtrace-report-case "no $case_file in the bundle"; fi
    step doctor 20 "${SUDO[@]}" "$NVTRACE" doctor --json
else
    skip nvtrace-version "no $NVTRACE (not a bundle: build one with scripts/gpu-bundle.sh)"
    skip doctor "no $NVTRACE"
fi

# Every function a scenario's documented path names (chain, call, untraced lines of path.expect): in /proc/kallsyms
# (exists in this kernel, and in which module) and in available_filter_functions (ftrace can hook it). Settles which
# are inlined or untraceable without tracing anything.
census() {
    local tracefs=$1 root=$2
    local ks=/tmp/gpu-check-ks.$$ ff=/tmp/gpu-check-ff.$$
    awk '{m = ($4 == "") ? "kernel" : $4; print $3, m}' /proc/kallsyms 2>/dev/null | sort -u -k1,1 > "$ks"
    if [ -n "$tracefs" ] && [ -r "$tracefs/available_filter_functions" ]; then
        awk '{print $1}' "$tracefs/available_filter_functions" | sort -u > "$ff"
        ffnote=""
    else
        : > "$ff"; ffnote="(available_filter_functions not readable)"
    fi
    [ -s "$ks" ] || echo "note: /proc/kallsyms is not readable"
    echo "scenario	function	kallsyms	traceable	declared $ffnote"
    for e in "$root"/*/path.expect; do
        local s
        s=$(basename "$(dirname "$e")")
        sed 's/#.*//' "$e" | awk -v s="$s" '
            $1 == "untraced" { for (i = 2; i <= NF && $i != "--"; i++) print s, $i, "untraced" }
            { for (i = 1; i <= NF; i++) if ($i == "chain" || $i == "call") {
                for (j = i + 1; j <= NF && $j != "when"; j++) if ($j != ">" && $j != ">>") print s, $j, "chain"
                break } }' 
    done | sort -u | while read -r s fn kind; do
        k=$(awk -v f="$fn" '$1 == f {print $2; exit}' "$ks")
        t=no; grep -qx "$fn" "$ff" && t=yes
        [ -s "$ff" ] || t=unknown
        printf '%s\t%s\t%s\t%s\t%s\n' "$s" "$fn" "${k:-absent}" "$t" "$kind"
    done
    rm -f "$ks" "$ff"
}
if [ -d "$SCENARIO_ROOT" ]; then
    step path-census 30 "${SUDO[@]}" bash -c "$(declare -f census); census '$TRACEFS' '$SCENARIO_ROOT'"
else
    skip path-census "no scenarios in $SCENARIO_ROOT"
fi

kmsg() {
    if command -v dmesg >/dev/null && dmesg 2>/dev/null; then return 0; fi
    # No dmesg: /dev/kmsg read without blocking (dd stops at EAGAIN, the end of the buffer).
    dd if=/dev/kmsg iflag=nonblock bs=8192 2>/dev/null
    return 0
}
step kernel-log-before 10 "${SUDO[@]}" bash -c "$(declare -f kmsg); kmsg"

# ---- nvtrace run: the scenarios, a PyTorch program, nvidia-smi ------------------------------------------------
mkdir -p "$W/runs"
graph_ok=no
if [ -n "$TRACEFS" ] && grep -qw function_graph "$TRACEFS/available_tracers" 2>/dev/null; then graph_ok=yes; fi
# run_one NAME LIMIT nvtrace-run-arguments...: one `nvtrace run` into runs/NAME; the run's own --timeout is set
# short of the step's limit so that nvtrace stops the program and still writes its report.
run_one() {
    local name=$1 limit=$2
    shift 2
    local left=$(( BUDGET - $(elapsed) - 10 ))
    [ "$limit" -gt "$left" ] && limit=$left
    if [ "$limit" -lt 8 ]; then skip "run-$name" "the ${BUDGET} s budget is spent ($(elapsed) s elapsed)"; return; fi
    LAST_RC=0 LAST_FILE=/dev/null
    step "run-$name" "$limit" "${SUDO[@]}" "$NVTRACE" run --timeout $(( limit - 6 )) --out "$W/runs/$name" "$@"
}
if [ ! -x "$NVTRACE" ]; then
    skip runs "no $NVTRACE"
else
    for s in cuda-malloc memcpy hostregister managed hostregister-bar bar-reserve-map gem-mmap; do
        if [ ! -d "$SCENARIO_ROOT/$s" ]; then skip "run-$s" "no scenario $s in $SCENARIO_ROOT"; continue; fi
        if [ $graph_ok = yes ]; then
            run_one "$s" 40 "$SCENARIO_ROOT/$s"
            # The kernel lists function_graph but refuses it (EPERM, lockdown): the same run without the graph.
            if [ "${LAST_RC:-0}" -eq 3 ] && grep -qE "function_graph|function tracer|set_ftrace|filter" "$LAST_FILE" &&
               ! grep -q "^cannot run here" "$LAST_FILE"; then
                rm -rf "$W/runs/$s"
                note "note	run-$s retried with --no-graph: function_graph was refused ($(grep -m1 -E 'function_graph|filter' "$LAST_FILE" | cut -c1-160))"
                run_one "$s-no-graph" 40 --no-graph "$SCENARIO_ROOT/$s"
            fi
        else
            # nvtrace drops the graph itself where function_graph is not available, and says why in the report.
            note "note	run-$s: no function_graph here ($( [ -n "$TRACEFS" ] && echo "available_tracers: $(tr '\n' ' ' < "$TRACEFS/available_tracers")" || echo 'no tracefs')): ioctls, markers and kernel log only"
            run_one "$s" 40 "$SCENARIO_ROOT/$s"
        fi
    done
    PY=$(command -v python3 || true)
    if [ -z "$PY" ]; then
        skip run-pytorch "no python3 in PATH"
    elif ! timeout -k 5 60 "$PY" -c 'import torch' > "$W/pytorch-import.txt" 2>&1; then
        skip run-pytorch "python3 ($PY) has no usable torch: $(tail -1 "$W/pytorch-import.txt")"
    else
        cat > "$W/pytorch_check.py" <<'EOF'
# A first CUDA context from PyTorch and one host-to-device copy (gpu-check.sh).
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())
x = torch.zeros(1, device="cuda")
h = torch.arange(1024, dtype=torch.float32)
d = h.to("cuda")
torch.cuda.synchronize()
print("device", torch.cuda.get_device_name(0), "sum", float(d.sum()), float(x.sum()))
EOF
        # Without the graph: a framework's context set-up is hundreds of thousands of driver calls; the scenarios
        # carry the call graph.
        run_one pytorch 60 --no-graph -- "$PY" "$W/pytorch_check.py"
    fi
    if command -v nvidia-smi >/dev/null; then run_one nvidia-smi 30 --no-graph -- nvidia-smi -q
    else skip run-nvidia-smi "nvidia-smi is not in PATH"; fi
fi
step kernel-log-after 10 "${SUDO[@]}" bash -c "$(declare -f kmsg); kmsg"
exit 0
