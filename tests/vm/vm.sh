#!/bin/bash
# Boot Debian 12's distribution kernel under qemu (software emulation) with a busybox initramfs, real modules and
# static test binaries, run one guest script, and hand its files back. How it works: tests/vm/README.md.
#
# Exit status: 0 the guest script exited 0 and every file it sent arrived intact; 1 it failed (or the VM did: timeout,
# panic, no VM-CHECK-EXIT line, a corrupted file); 2 bad arguments or inputs (e.g. a dynamically linked --bin);
# 77 something this host lacks (qemu, busybox-static, the kernel package), i.e. "cannot run here".
set -euo pipefail

readonly EXIT_FAILED=1 EXIT_USAGE=2 EXIT_CANNOT_RUN=77
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
readonly HERE GUEST_DIR="$HERE/guest"

usage() {
    cat <<'EOF'
usage: tests/vm/vm.sh --out DIR --script GUEST_SCRIPT [options]

  --out DIR                 console.log, files/ (what the guest sent back), the initramfs; files/ is emptied first
  --script FILE             guest script (busybox sh), run as /check.sh after the modules are loaded
  --modules "M1 M2 ..."     modules to insmod, dependencies added in load order; M:param=v[:param=v] sets
                            parameters (default for null_blk: nr_devices=1); may be repeated
  --bin HOST[:NAME]         static executable (or #! script), copied to /bin/NAME (default: basename; not the
                            name of a busybox applet); repeatable
  --file HOST[:GUESTPATH]   data file, copied to GUESTPATH (default: /data/basename); repeatable
  --cache DIR               kernel cache (default: ${XDG_CACHE_HOME:-$HOME/.cache}/nvtrace-vm)
  --timeout SECONDS         limit for the boot (default 300)
  --append "ARGS"           extra kernel command line; unknown k=v words reach /check.sh as environment variables

Environment: NVTRACE_VM_KPKG pins the kernel package (e.g. linux-image-6.1.0-56-amd64) instead of the one the
linux-image-amd64 metapackage points at.
Exit status: 0 pass, 1 fail, 2 usage, 77 cannot run on this host.
EOF
}

log() { echo "vm.sh: $*" >&2; }
fail() { log "$*"; exit "$EXIT_FAILED"; }
usage_error() { log "$*"; log "see tests/vm/vm.sh --help"; exit "$EXIT_USAGE"; }
cannot_run() { log "cannot run here: $*"; exit "$EXIT_CANNOT_RUN"; }

# ---------------------------------------------------------------------------------------------------- arguments
out=""
script=""
cache="${XDG_CACHE_HOME:-$HOME/.cache}/nvtrace-vm"
timeout_s=300
append=""
modules=()
bins=()
files=()
while [[ $# -gt 0 ]]; do
    opt=$1
    case $opt in
        -h | --help) usage; exit 0 ;;
        --out | --script | --modules | --bin | --file | --cache | --timeout | --append)
            [[ $# -ge 2 ]] || usage_error "$opt needs a value"
            val=$2
            shift 2
            ;;
        *) usage_error "unknown argument '$opt'" ;;
    esac
    case $opt in
        --out) out=$val ;;
        --script) script=$val ;;
        --modules)
            read -r -a words <<<"$val"
            modules+=("${words[@]}")
            ;;
        --bin) bins+=("$val") ;;
        --file) files+=("$val") ;;
        --cache) cache=$val ;;
        --timeout) timeout_s=$val ;;
        --append) append=$val ;;
    esac
done
[[ -n $out ]] || usage_error "--out DIR is required"
[[ -n $script ]] || usage_error "--script GUEST_SCRIPT is required"
[[ -f $script ]] || usage_error "--script $script: no such file"
[[ $timeout_s =~ ^[1-9][0-9]*$ ]] || usage_error "--timeout must be a positive number of seconds, got '$timeout_s'"

# ---------------------------------------------------------------------------------------------------- host tools
# Everything comes from Debian 12 packages: qemu-system-x86, busybox-static, cpio, binutils (readelf), apt, dpkg,
# coreutils, util-linux (flock), gzip, mawk/gawk.
for tool in qemu-system-x86_64 cpio readelf dpkg-deb flock gzip timeout base64 sha256sum awk; do
    command -v "$tool" >/dev/null || cannot_run "'$tool' not found (apt-get install qemu-system-x86 cpio binutils)"
done
# Debian's busybox-static installs /bin/busybox; the dynamic "busybox" package would need a loader in the guest.
busybox=$(command -v busybox || true)
[[ -n $busybox ]] || cannot_run "busybox not found (apt-get install busybox-static)"
# has_interp FILE: true when FILE is an ELF with a program interpreter (dynamically linked).
has_interp() { readelf -lW "$1" 2>/dev/null | grep -q 'Requesting program interpreter\|^ *INTERP '; }
is_elf() { [[ $(head -c 4 "$1" | od -An -c | tr -d ' ') == '177ELF' ]]; }
has_interp "$busybox" && cannot_run "$busybox is dynamically linked (apt-get install busybox-static)"
applets=$("$busybox" --list)

# ---------------------------------------------------------------------------------------------------- inputs
# Checked before any download, so that a bad input fails fast. HOST paths must not contain ':'.
bin_srcs=()
bin_names=()
for spec in "${bins[@]}"; do
    src=${spec%%:*}
    name=${spec#"$src"}
    name=${name#:}
    [[ -n $name ]] || name=$(basename "$src")
    [[ $name =~ ^[A-Za-z0-9._+-]+$ ]] || usage_error "--bin $spec: bad guest name '$name'"
    # Debian's static busybox runs its own applets before searching PATH (a standalone shell).
    grep -qxF -- "$name" <<<"$applets" &&
        usage_error "--bin $spec: '$name' is a busybox applet, which the guest shell would run instead; rename it"
    [[ -f $src ]] || usage_error "--bin $spec: $src: no such file"
    if is_elf "$src"; then
        has_interp "$src" && usage_error "--bin $spec: $src is dynamically linked (has a program interpreter);" \
            "the guest has no loader and no libc, link it -static"
    elif [[ $(head -c 2 "$src") != '#!' ]]; then
        usage_error "--bin $spec: $src is neither an ELF executable nor a #! script"
    fi
    bin_srcs+=("$src")
    bin_names+=("$name")
done
file_srcs=()
file_dsts=()
for spec in "${files[@]}"; do
    src=${spec%%:*}
    dst=${spec#"$src"}
    dst=${dst#:}
    [[ -n $dst ]] || dst="/data/$(basename "$src")"
    [[ $dst == /* && $dst != *..* ]] || usage_error "--file $spec: the guest path must be absolute, without '..'"
    [[ -f $src ]] || usage_error "--file $spec: $src: no such file"
    file_srcs+=("$src")
    file_dsts+=("$dst")
done

# ---------------------------------------------------------------------------------------------------- kernel
# The kernel package is downloaded and unpacked into the cache once; installing it would also run update-initramfs.
mkdir -p "$cache" || cannot_run "cannot create the cache directory $cache"
cache=$(cd "$cache" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
apt_log="$out/apt.log"
: >"$apt_log"

resolve_kpkg() {
    if [[ -n ${NVTRACE_VM_KPKG:-} ]]; then
        echo "$NVTRACE_VM_KPKG"
        return
    fi
    apt-cache depends linux-image-amd64 2>>"$apt_log" | awk '/Depends: linux-image-/ { print $2; exit }'
}

# download_kpkg PKG: fetch PKG's .deb into the cache as PKG.deb.
download_kpkg() {
    local pkg=$1 tmp
    tmp=$(mktemp -d "$cache/download.XXXXXX")
    # apt-get download as root warns that the download is unsandboxed; harmless.
    if (cd "$tmp" && apt-get download "$pkg") >>"$apt_log" 2>&1; then
        mv "$tmp"/"$pkg"_*.deb "$cache/$pkg.deb"
        rm -rf "$tmp"
        return 0
    fi
    rm -rf "$tmp"
    return 1
}

# A lock, so that parallel runs (ctest -j) download and unpack once.
exec 9>"$cache/.lock"
flock 9

kpkg=""
if command -v apt-cache >/dev/null && command -v apt-get >/dev/null; then
    kpkg=$(resolve_kpkg || true)
    if [[ -z $kpkg || ( ! -d $cache/$kpkg && ! -f $cache/$kpkg.deb ) ]]; then
        if [[ -z $kpkg ]] || ! download_kpkg "$kpkg"; then
            # Empty or outdated package lists (the archive moves to a new kernel ABI with point releases).
            log "kernel package ${kpkg:-of linux-image-amd64} not available; running apt-get update"
            apt-get update >>"$apt_log" 2>&1 || log "apt-get update failed (see $apt_log)"
            kpkg=$(resolve_kpkg || true)
            if [[ -n $kpkg && ! -d $cache/$kpkg && ! -f $cache/$kpkg.deb ]]; then
                download_kpkg "$kpkg" || kpkg=""
            fi
        fi
    fi
fi
if [[ -z $kpkg || ( ! -d $cache/$kpkg && ! -f $cache/$kpkg.deb ) ]]; then
    # No archive access: fall back to the newest kernel already in the cache, if any.
    fallback=$(find "$cache" -mindepth 2 -maxdepth 2 -name .unpacked -printf '%T@ %h\n' 2>/dev/null |
        sort -rn | awk 'NR == 1 { print $2 }')
    [[ -n $fallback ]] || cannot_run "cannot download the kernel package ${kpkg:-(linux-image-amd64)}; see $apt_log"
    log "cannot download ${kpkg:-the kernel package}; using the cached ${fallback##*/}"
    kpkg=${fallback##*/}
fi

kdir="$cache/$kpkg"
if [[ ! -f $kdir/.unpacked ]]; then
    rm -rf "$kdir" "$kdir.tmp"
    dpkg-deb -x "$cache/$kpkg.deb" "$kdir.tmp" || fail "cannot unpack $cache/$kpkg.deb"
    touch "$kdir.tmp/.unpacked"
    mv "$kdir.tmp" "$kdir"
fi
exec 9>&-

kver=${kpkg#linux-image-}
vmlinuz="$kdir/boot/vmlinuz-$kver"
modroot="$kdir/lib/modules/$kver"
[[ -f $vmlinuz ]] || fail "$vmlinuz missing in the unpacked $kpkg"
[[ -d $modroot ]] || fail "$modroot missing in the unpacked $kpkg"

# ---------------------------------------------------------------------------------------------------- initramfs
root="$out/initramfs.d"
rm -rf "$root" "$out/files"
mkdir -p "$root"/{bin,lib/modules,etc,proc,sys,dev,run,tmp,var/tmp,data,root} "$out/files"
chmod 1777 "$root/tmp" "$root/var/tmp"

cp "$busybox" "$root/bin/busybox"
# Applet links made here: faster than "busybox --install" under TCG.
while read -r applet; do
    [[ $applet == busybox ]] || ln -s busybox "$root/bin/$applet"
done <<<"$applets"

for i in "${!bin_srcs[@]}"; do
    cp "${bin_srcs[$i]}" "$root/bin/${bin_names[$i]}"
    chmod 755 "$root/bin/${bin_names[$i]}"
done
for i in "${!file_srcs[@]}"; do
    mkdir -p "$root$(dirname "${file_dsts[$i]}")"
    cp "${file_srcs[$i]}" "$root${file_dsts[$i]}"
done

# Module index: normalised name (dashes as underscores) -> .ko path in the unpacked package.
declare -A ko_path=()
while IFS= read -r ko; do
    n=${ko##*/}
    n=${n%%.ko*}
    ko_path[${n//-/_}]=$ko
done < <(find "$modroot/kernel" -name '*.ko' -o -name '*.ko.xz' -o -name '*.ko.zst')

# stage_module NAME: decompress NAME's .ko into the initramfs (once); prints the staged path.
stage_module() {
    local n=$1 src dst
    src=${ko_path[$n]:-}
    [[ -n $src ]] || usage_error "module '$n' is not in $kpkg (nor built in: see $modroot/modules.builtin)"
    dst="$root/lib/modules/$n.ko"
    if [[ ! -f $dst ]]; then
        case $src in
            *.ko.xz) xz -dc "$src" >"$dst" ;;
            *.ko.zst) zstd -qdc "$src" >"$dst" ;;
            *) cp "$src" "$dst" ;;
        esac
    fi
    echo "$dst"
}

# Dependencies from the .modinfo section ("depends=a,b"), what modinfo -F depends prints; readelf reads it without
# kmod (not installed everywhere) or a modules.dep (the package does not ship one: depmod runs at install time).
declare -A mod_state=()   # visiting | loaded
load_order=()
add_module() {
    local n=${1//-/_} ko deps d
    case ${mod_state[$n]:-} in
        loaded) return ;;
        visiting) fail "module dependency cycle through $n" ;;
    esac
    mod_state[$n]=visiting
    ko=$(stage_module "$n")
    deps=$(readelf -p .modinfo "$ko" | sed -n 's/^ *\[ *[0-9a-f]*\] *depends=//p')
    for d in ${deps//,/ }; do
        add_module "$d"
    done
    mod_state[$n]=loaded
    load_order+=("$n")
}

declare -A mod_params=([null_blk]="nr_devices=1")
for spec in "${modules[@]}"; do
    n=${spec%%:*}
    n=${n//-/_}
    [[ $n =~ ^[A-Za-z0-9_]+$ ]] || usage_error "--modules: bad module name in '$spec'"
    if [[ $spec == *:* ]]; then
        params=${spec#*:}
        mod_params[$n]=${params//:/ }
    fi
    add_module "$n"
done
: >"$root/etc/vm-modules"
for n in "${load_order[@]}"; do
    echo "$n.ko ${mod_params[$n]:-}" >>"$root/etc/vm-modules"
done

cp "$GUEST_DIR/init" "$root/init"
cp "$GUEST_DIR/lib.sh" "$root/lib/vm-guest.sh"
cp "$script" "$root/check.sh"
chmod 755 "$root/init" "$root/check.sh"

initrd="$out/initramfs.cpio.gz"
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0 | gzip -1) >"$initrd"

# ---------------------------------------------------------------------------------------------------- boot
# TCG: /dev/kvm on the CI machines cannot run this guest (reference/ci-environment.md section 8.1).
# quiet loglevel=3 keeps kernel messages (below KERN_ERR) off the console; panic=-1 with -no-reboot turns a panic
# into a qemu exit instead of a hang.
console="$out/console.log"
log "booting $kver (modules: ${load_order[*]:-none}; timeout ${timeout_s} s)"
start_ns=$(date +%s%N)
qemu_status=0
timeout -k 10 "$timeout_s" qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp 2 -m "${NVTRACE_VM_MEMORY:-3072M}" \
    -nographic -no-reboot -kernel "$vmlinuz" -initrd "$initrd" \
    -append "console=ttyS0 quiet loglevel=3 panic=-1${append:+ $append}" \
    </dev/null >"$console" 2>&1 || qemu_status=$?
elapsed=$(( ($(date +%s%N) - start_ns) / 1000000 ))
elapsed_s="$((elapsed / 1000)).$(printf '%03d' $((elapsed % 1000)))"

show_tail() {
    log "last lines of $console (without the base64 lines of handed-back files):"
    tr -d '\r' <"$console" | grep -Ev '^[A-Za-z0-9+/=]{40,}$' | tail -n 40 >&2
    echo >&2
}

# ---------------------------------------------------------------------------------------------------- hand-back
# A file from the guest (tests/vm/guest/lib.sh, vm_send_file): "==VM-FILE-BEGIN name==", base64 lines,
# "==VM-FILE-SHA256 name hex==", "==VM-FILE-END name==". Kernel messages share the serial console: one printed while
# the cursor is at the start of a line is a line of its own ("[    2.803672] text"), one printed in the middle of a
# line splits it: "first part[    2.803672] text" then "rest of the line" on the next line. The awk below drops
# the message and joins the parts again (base64 and the markers never contain "["), then extracts the files and
# prints the last VM-CHECK-EXIT status. The checksum catches what this misses (e.g. printk.time=0).
check_exit=$(awk -v dir="$out/files" '
    {
        gsub(/\r/, "")
        line = pending $0
        pending = ""
        if (match(line, /\[ *[0-9]+\.[0-9]+\] /)) {
            if (RSTART > 1)
                pending = substr(line, 1, RSTART - 1)
            next
        }
    }
    line ~ /^VM-CHECK-EXIT=[0-9]+$/ { status = substr(line, 15); next }
    match(line, /==VM-FILE-BEGIN [A-Za-z0-9_-][A-Za-z0-9._-]*==/) {
        name = substr(line, RSTART + 16, RLENGTH - 18)
        path = dir "/" name ".b64"
        printf "" > path
        inside = 1
        next
    }
    inside && match(line, /==VM-FILE-SHA256 [A-Za-z0-9._-]+ [0-9a-f]+==/) {
        split(substr(line, RSTART + 2, RLENGTH - 4), f, " ")
        if (f[2] == name)
            print f[3] > (dir "/" name ".sha256")
        next
    }
    inside && match(line, /==VM-FILE-END [A-Za-z0-9._-]+==/) { close(path); inside = 0; next }
    inside && line ~ /^[A-Za-z0-9+\/=]+$/ { print line > path }
    END { print status }
' "$console")

handback_errors=0
for b64 in "$out"/files/*.b64; do
    [[ -e $b64 ]] || continue
    name=${b64##*/}
    name=${name%.b64}
    dst="$out/files/$name"
    if ! base64 -d "$b64" >"$dst" 2>/dev/null; then
        log "file '$name' from the guest: invalid base64 (a console message inside it?)"
        handback_errors=$((handback_errors + 1))
    elif [[ ! -f $dst.sha256 ]]; then
        log "file '$name' from the guest: no checksum line (truncated?)"
        handback_errors=$((handback_errors + 1))
    elif [[ $(sha256sum <"$dst" | awk '{ print $1 }') != "$(cat "$dst.sha256")" ]]; then
        log "file '$name' from the guest: checksum mismatch (a console message inside it?)"
        handback_errors=$((handback_errors + 1))
    fi
    rm -f "$b64" "$dst.sha256"
done
sent=$(find "$out/files" -type f -printf '%f ' | sed 's/ $//')

# ---------------------------------------------------------------------------------------------------- verdict
if [[ $qemu_status -eq 124 || $qemu_status -eq 137 ]]; then
    log "qemu timed out after ${timeout_s} s"
    show_tail
    exit "$EXIT_FAILED"
fi
if [[ -z $check_exit ]]; then
    log "the guest printed no VM-CHECK-EXIT line (qemu exit status $qemu_status after ${elapsed_s} s)"
    show_tail
    exit "$EXIT_FAILED"
fi
log "boot took ${elapsed_s} s; VM-CHECK-EXIT=$check_exit; files: ${sent:-none}"
if [[ $check_exit -ne 0 ]]; then
    log "the guest script failed (exit status $check_exit)"
    show_tail
    exit "$EXIT_FAILED"
fi
if [[ $handback_errors -ne 0 ]]; then
    show_tail
    exit "$EXIT_FAILED"
fi
exit 0
