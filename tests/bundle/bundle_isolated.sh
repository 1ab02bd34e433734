#!/usr/bin/env bash
# bundle_isolated.sh BUNDLE BUILD_NVTRACE: the bundle runs with the build machine's development libraries out of
# reach (ctest bundle.isolated).
#  1. ldd of every bundled binary and library resolves each library inside the bundle or to glibc's own, none missing
#     (a bundled library is read with LD_LIBRARY_PATH=BUNDLE/lib: at run time bin/nvtrace's DT_RPATH serves its
#     dependencies; step 3 shows that without any LD_LIBRARY_PATH).
#  2. MANIFEST records the glibc requirement, and it is the highest GLIBC_x.y that objdump finds in the bundle.
#  3. In a private mount namespace where /dev/null is bind-mounted over the system copy of every bundled library
#     (libtracefs, libtraceevent, libtracecmd, libfmt, libstdc++, ...), with LD_LIBRARY_PATH empty, bin/nvtrace
#     --version, decode ioctl and report on the bundled case file succeed, while the build tree's nvtrace (which
#     uses the system copies) fails to start there: the hiding works.
set -u
B=$1 BUILD_NVTRACE=$2
fail=0
bad() { echo "FAIL: $*"; fail=1; }
glibc() { case $(basename "$1") in linux-vdso.so*|ld-linux*|libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libresolv.so*|libmvec.so*) return 0 ;; esac; return 1; }

[ -x "$B/bin/nvtrace" ] || { echo "FAIL: no $B/bin/nvtrace (bundle.layout must run first)"; exit 1; }
[ -f "$B/lib/libnvtrace_preload.so" ] || bad "no lib/libnvtrace_preload.so"
[ -x "$B/scripts/gpu-check.sh" ] || bad "no scripts/gpu-check.sh"
[ -f "$B/share/nvtrace/scenarios/cuda-malloc/scenario.conf" ] || bad "no share/nvtrace/scenarios/cuda-malloc/scenario.conf"
[ -f "$B/share/nvtrace/scenarios/hostregister-bar/path.expect" ] || bad "no hostregister-bar/path.expect"
n=0
for f in $(find "$B/bin" "$B/lib" "$B/libexec" -type f | sort); do
    file -b "$f" | grep -q '^ELF' || continue
    n=$((n + 1))
    if file -b "$f" | grep -q 'with debug_info\|not stripped'; then bad "$f is not stripped"; fi
    while read -r line; do
        case $line in
            *"not found"*) bad "$(basename "$f"): $line" ;;
            *"=>"*) name=${line%% *}; path=$(echo "$line" | sed 's/.*=> \([^ ]*\).*/\1/')
                    glibc "$name" && continue
                    case $path in "$B"/*) ;; *) bad "$(basename "$f") resolves $name to $path, outside the bundle" ;; esac ;;
        esac
    done < <(case $f in "$B"/lib/*) LD_LIBRARY_PATH=$B/lib ldd "$f" 2>&1 ;; *) ldd "$f" 2>&1 ;; esac)
done
echo "checked ldd of $n ELF files"
[ "$n" -ge 3 ] || bad "only $n ELF files in the bundle"
ls "$B"/libexec/nvtrace/scenario-cuda-malloc >/dev/null 2>&1 && ! ldd "$B"/libexec/nvtrace/scenario-cuda-malloc | grep -q libcudart \
    && echo "scenario-cuda-malloc: static CUDA runtime (no libcudart)" \
    || { [ -e "$B/libexec/nvtrace/scenario-cuda-malloc" ] && bad "scenario-cuda-malloc needs libcudart"; }

want=$(find "$B" -type f -exec sh -c 'objdump -T "$1" 2>/dev/null' _ {} \; | grep -o 'GLIBC_[0-9][0-9.]*' | sort -uV | tail -1)
got=$(sed -n 's/^glibc required: \([0-9.]*\).*/\1/p' "$B/MANIFEST")
[ -n "$got" ] || bad "MANIFEST has no 'glibc required:' line"
[ "GLIBC_$got" = "$want" ] || bad "MANIFEST says glibc $got, objdump finds $want"
grep -q '^commit: [0-9a-f]\{40\}' "$B/MANIFEST" || bad "MANIFEST has no commit"
grep -q '^build type: ' "$B/MANIFEST" || bad "MANIFEST has no build type"
echo "MANIFEST: glibc required $got"

# The system copies of what the bundle carries (MANIFEST: "NAME (from PATH)").
hide=$(sed -n 's/^  [^ ]* (from \(.*\))$/\1/p' "$B/MANIFEST" | while read -r p; do readlink -f "$p"; echo "$p"; done | sort -u)
[ -n "$hide" ] || bad "MANIFEST lists no bundled library"
if [ "$(id -u)" -eq 0 ]; then ns=(unshare -m --propagation private); else ns=(unshare -r -m --propagation private); fi
if ! "${ns[@]}" true 2>/dev/null; then
    echo "no mount namespace here (${ns[*]} refused): only the ldd checks ran"
    [ "${CI:-}" = true ] && bad "CI=true: the namespace check must run"
    exit $fail
fi
case_file=$B/share/nvtrace/cases/fgraph-irq-nested-module-suffix.txt
# shellcheck disable=SC2016
"${ns[@]}" env -i PATH=/usr/bin:/bin LD_LIBRARY_PATH= B="$B" BUILD_NVTRACE="$BUILD_NVTRACE" CASE="$case_file" HIDE="$hide" bash -c '
    set -u; rc=0
    for p in $HIDE; do [ -f "$p" ] && { mount --bind /dev/null "$p" || { echo "FAIL: cannot hide $p"; rc=1; }; }; done
    if "$BUILD_NVTRACE" --version >/dev/null 2>&1; then echo "FAIL: the build tree nvtrace still starts: hiding did not work"; rc=1
    else echo "control: the build tree nvtrace does not start with the system libraries hidden"; fi
    "$B/bin/nvtrace" --version || { echo "FAIL: bundle nvtrace --version"; rc=1; }
    out=$("$B/bin/nvtrace" decode ioctl 0xc020462a 2>&1) || { echo "FAIL: decode ioctl: $out"; rc=1; }
    echo "$out" | grep -q NV_ESC_RM_CONTROL || { echo "FAIL: decode ioctl 0xc020462a does not name NV_ESC_RM_CONTROL: $out"; rc=1; }
    out=$("$B/bin/nvtrace" report "$CASE" 2>&1) || { echo "FAIL: report $CASE: $out"; rc=1; }
    echo "$out" | grep -q "calls:" || { echo "FAIL: report printed no calls line: $out"; rc=1; }
    echo "$out" | head -3
    exit $rc' || fail=1
[ $fail = 0 ] && echo "bundle runs with its own libraries only"
exit $fail
