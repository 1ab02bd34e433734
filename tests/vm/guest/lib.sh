# Helpers for guest check scripts; tests/vm/vm.sh puts this file at /lib/vm-guest.sh. Use: . /lib/vm-guest.sh
# busybox sh, no bash features.
# shellcheck shell=sh

VM_TRACEFS=/sys/kernel/tracing

# Top-level tracefs state that a tracer must leave as it found it (see vm_tracefs_snapshot).
VM_TRACEFS_STATE_FILES="current_tracer set_ftrace_filter set_ftrace_notrace set_ftrace_pid set_graph_function
set_graph_notrace set_event set_event_pid tracing_on tracing_thresh trace_clock buffer_size_kb max_graph_depth
options/function-fork options/funcgraph-proc options/funcgraph-abstime"

# vm_send_file NAME PATH: hand PATH back to the host, which writes it to OUT/files/NAME.
# On the console: "==VM-FILE-BEGIN NAME==", the content in base64 (busybox base64, 76 columns),
# "==VM-FILE-SHA256 NAME <hex>==", "==VM-FILE-END NAME==". Base64 survives the serial console (which turns \n into
# \r\n) and lets the host drop kernel messages that land between the lines; the checksum catches one that lands
# inside a line. NAME: letters, digits, '.', '_', '-'; not starting with '.'.
vm_send_file() {
    _name=$1
    _path=$2
    case $_name in
        '' | .* | *[!A-Za-z0-9._-]*)
            echo "vm_send_file: bad name '$_name' (letters, digits, . _ - only)" >&2
            return 2
            ;;
    esac
    if [ ! -f "$_path" ] || [ ! -r "$_path" ]; then
        echo "vm_send_file: $_path: not a readable file" >&2
        return 1
    fi
    _sum=$(sha256sum < "$_path") || return 1
    echo "==VM-FILE-BEGIN $_name=="
    base64 "$_path" || return 1
    echo "==VM-FILE-SHA256 $_name ${_sum%% *}=="
    echo "==VM-FILE-END $_name=="
}

# vm_tracefs_snapshot [FILE...]: print the named tracefs files (default: VM_TRACEFS_STATE_FILES), each as a
# "--- name" line followed by its content, then the listing of instances/. Two snapshots compare with diff.
vm_tracefs_snapshot() {
    if [ "$#" -eq 0 ]; then
        # Word splitting of the list is intended.
        # shellcheck disable=SC2086
        set -- $VM_TRACEFS_STATE_FILES
    fi
    for _f in "$@"; do
        echo "--- $_f"
        if [ -e "$VM_TRACEFS/$_f" ]; then
            cat "$VM_TRACEFS/$_f" 2>&1 || echo "<read failed>"
        else
            echo "<absent>"
        fi
    done
    echo "--- instances/"
    ls -1 "$VM_TRACEFS/instances" 2>&1
}

# vm_step TEXT: a visible marker in console.log.
vm_step() {
    echo "VM-STEP: $*"
}
