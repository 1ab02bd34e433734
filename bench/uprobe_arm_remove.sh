#!/usr/bin/env bash
# bench/uprobe_arm_remove.sh [N] [LIB]: where the time goes when uprobes are created, enabled in an instance,
# disabled and removed (docs/api.md "Cost"), through tracefs directly (no nvtrace), each step timed with date +%s%N.
# N probes (default 20) at LIB's first exported function (default the CUDA toolkit's libcudart.so.13, which no other
# process runs; else libc's getpid) in a group of this script (nvtbench_<pid>, never nvtrace's), then:
#   create          one write of "p:GROUP/eI LIB:0xOFF" per probe to uprobe_events
#   enable          "1" to each instances/nvtbench-<pid>/events/GROUP/eI/enable
#   disable, three ways (each on a fresh set): each event's enable file; the group's enable file in one write;
#                   rmdir of the instance
#   remove, three ways once disabled: one write of "-:GROUP/eI" per probe; one write of all "-:GROUP/eI" lines;
#                   one write of "-:GROUP/*" (group wildcard: whether this kernel takes it)
# Prints ms per step and per probe. Needs root, tracefs and uprobe_events. Leaves no probe and no instance behind.
set -euo pipefail
n=${1:-20}
t=/sys/kernel/tracing
[[ -e $t/uprobe_events ]] || { echo "uprobe_arm_remove.sh: no uprobe_events on this kernel" >&2; exit 3; }
lib=${2:-}
if [[ -z $lib ]]; then
    for c in /usr/local/cuda/lib64/libcudart.so.13 /lib/x86_64-linux-gnu/libc.so.6; do
        [[ -e $c ]] && { lib=$(readlink -f "$c"); break; }
    done
fi
# The first defined function of .dynsym and its file offset (its PT_LOAD's p_offset + value - p_vaddr).
read -r sym value < <(readelf -W --dyn-syms "$lib" | awk '$4 == "FUNC" && $7 != "UND" && $2 !~ /^0+$/ {print $8, $2; exit}')
off=
while read -r o va fs; do
    if (( 16#$value >= va && 16#$value < va + fs )); then off=$(printf '0x%x' $(( o + 16#$value - va ))); break; fi
done < <(readelf -lW "$lib" | awk '$1 == "LOAD" {print $2, $3, $5}')
[[ -n $off ]] || { echo "uprobe_arm_remove.sh: $sym of $lib is in no PT_LOAD segment" >&2; exit 2; }
group=nvtbench_$$
inst=$t/instances/nvtbench-$$
cleanup() {
    [[ -d $inst ]] && { echo 0 >"$inst/events/$group/enable" 2>/dev/null || true; rmdir "$inst" 2>/dev/null || true; }
    grep "^[pr]:$group/" "$t/uprobe_events" 2>/dev/null | sed 's/^[pr]:\([^ ]*\) .*/-:\1/' | while read -r l; do
        echo "$l" >>"$t/uprobe_events" || true
    done
}
trap cleanup EXIT
now() { date +%s%N; }
ms() { awk -v a="$1" -v b="$2" -v n="$n" 'BEGIN {printf "%9.1f ms  %7.2f ms/probe", (b - a) / 1e6, (b - a) / 1e6 / n}'; }
create() {
    for i in $(seq 1 "$n"); do echo "p:$group/e$i $lib:$off" >>"$t/uprobe_events"; done
}
enable() {
    mkdir "$inst"
    for i in $(seq 1 "$n"); do echo 1 >"$inst/events/$group/e$i/enable"; done
}
remove_each() {
    for i in $(seq 1 "$n"); do echo "-:$group/e$i" >>"$t/uprobe_events"; done
}
remove_batch() {
    local s=""
    for i in $(seq 1 "$n"); do s+="-:$group/e$i"$'\n'; done
    printf "%s" "$s" >>"$t/uprobe_events"
}
echo "$n uprobes at $lib:$off ($sym), kernel $(uname -r)"
for how in each group rmdir; do
    a=$(now); create; b=$(now); echo "create ($how run)          $(ms "$a" "$b")"
    a=$(now); enable; b=$(now); echo "enable                     $(ms "$a" "$b")"
    a=$(now)
    case $how in
        each) for i in $(seq 1 "$n"); do echo 0 >"$inst/events/$group/e$i/enable"; done ;;
        group) echo 0 >"$inst/events/$group/enable" ;;
        rmdir) ;;
    esac
    b=$(now)
    [[ $how != rmdir ]] && echo "disable: $how enable file$([[ $how == each ]] && echo s || echo "  ")  $(ms "$a" "$b")"
    a=$(now); rmdir "$inst"; b=$(now)
    echo "rmdir instance$([[ $how == rmdir ]] && echo " (disables)" || echo "           ") $(ms "$a" "$b")"
    a=$(now)
    case $how in
        each) remove_each; what="remove: one write each    " ;;
        group) remove_batch; what="remove: one write, N lines" ;;
        rmdir) if echo "-:$group/*" >>"$t/uprobe_events" 2>/dev/null; then what="remove: -:GROUP/* (taken) "
               else what="remove: -:GROUP/* REFUSED "; remove_batch; fi ;;
    esac
    b=$(now); echo "$what $(ms "$a" "$b")"
    left=$(grep -c "^[pr]:$group/" "$t/uprobe_events" || true)
    [[ $left == 0 ]] || { echo "uprobe_arm_remove.sh: $left probes left after removal" >&2; exit 1; }
done
