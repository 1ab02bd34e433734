#!/usr/bin/env bash
# gpu-bundle.sh [--out DIR] [--build-dir DIR] [--from-build DIR] [--build-type T] [--jobs N]
#
# Builds the portable bundle that runs on a bare GPU machine (docs/gpu-check.md): no compiler, no libtracefs,
# libtraceevent, libtracecmd, fmt or CLI11 there, only the NVIDIA driver (libcuda.so.1) and glibc.
#
#   DIR/bin/nvtrace                        RPATH $ORIGIN/../lib (DT_RPATH, so the bundled libraries' own
#                                          dependencies are found there too)
#   DIR/lib/libnvtrace_preload.so          the LD_PRELOAD ioctl decoder (docs/preload.md)
#   DIR/lib/lib*.so*                       every shared library ldd resolves for the bundled programs, except
#                                          glibc's own (libc, libm, libdl, libpthread, librt, ld-linux); libstdc++
#                                          and libgcc_s are included: the GPU machine may have no C++ toolchain
#   DIR/libexec/nvtrace/scenario-*         the scenario programs; the CUDA ones link the static CUDA runtime and
#                                          load only the driver's libcuda.so.1 (RPATH $ORIGIN/../../lib)
#   DIR/share/nvtrace/scenarios/NAME/      scenario.conf, path.expect, README.md (nvtrace finds them there)
#   DIR/share/nvtrace/cases/               one real trace text, for a smoke test of `nvtrace report` there
#   DIR/scripts/gpu-check.sh               the one-shot check (runs from the bundle, builds nothing)
#   DIR/MANIFEST                           commit, build type and flags, compiler, the highest GLIBC_x.y each binary
#                                          needs, the bundled libraries
#   DIR.tar.gz                             the same, packed (refused when it is 16 MB or more)
#
# Default: a Release build in build-bundle/ (configured here once; later runs rebuild what changed), bundle in
# build-bundle/nvtrace-bundle. --from-build DIR lays out the bundle from an existing build tree instead (no build;
# the tests use it on their own build: every binary is stripped at install, so no debug info is carried). Build from
# a tree that builds and passes its tests: MANIFEST says when the tree had uncommitted changes, and ctest
# bundle.isolated runs the bundled nvtrace on a real trace.
# Exit: 0 bundle written; 1 a bundled binary resolves a library outside the bundle and glibc, or the archive is too
# big; 2 usage, configure or build error.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD

OUT="" BUILD=build-bundle FROM="" TYPE=Release JOBS=$(nproc)
while [ $# -gt 0 ]; do
    case $1 in
        --out) OUT=$2; shift 2 ;;
        --build-dir) BUILD=$2; shift 2 ;;
        --from-build) FROM=$2; shift 2 ;;
        --build-type) TYPE=$2; shift 2 ;;
        --jobs) JOBS=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "gpu-bundle.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
    esac
done
if [ -n "$FROM" ]; then BUILD=$FROM; fi
OUT=${OUT:-$BUILD/nvtrace-bundle}
log() { echo "gpu-bundle: $*" >&2; }

# The scenario programs the bundle must carry (CUDA ones only where the toolkit is found, scenarios/CMakeLists.txt).
SCENARIOS="gem-mmap cuda-malloc memcpy hostregister hostregister-bar bar-reserve-map managed"

if [ -z "$FROM" ]; then
    if [ ! -f "$BUILD/CMakeCache.txt" ]; then
        launcher=()
        if command -v ccache >/dev/null; then
            launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
        fi
        gen=()
        if command -v ninja >/dev/null; then gen=(-G Ninja); fi
        log "configuring $BUILD ($TYPE)"
        mkdir -p "$BUILD"
        # Release at -O2, the optimisation the project's own builds and tests use: GCC 12 at -O3 raises false
        # -Wrestrict/-Warray-bounds warnings inside libstdc++ (GCC PR 105329), which -Werror turns into errors.
        cmake -S "$SRC" -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE="$TYPE" -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
            -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" -DBUILD_TESTING=OFF -DNVTRACE_WERROR=ON "${launcher[@]}" \
            > "$BUILD/gpu-bundle-configure.log" 2>&1 || { log "cmake configure failed: $BUILD/gpu-bundle-configure.log"; exit 2; }
    fi
    targets="nvtrace nvtrace_preload"
    for s in $SCENARIOS; do
        if grep -q "scenario-$s" "$BUILD/build.ninja" "$BUILD/Makefile" 2>/dev/null; then targets="$targets scenario-$s"; fi
    done
    log "building $targets"
    # shellcheck disable=SC2086
    cmake --build "$BUILD" --parallel "$JOBS" --target $targets > "$BUILD/gpu-bundle-build.log" 2>&1 || {
        grep -m3 -A3 -E 'FAILED|error' "$BUILD/gpu-bundle-build.log" >&2
        log "build failed: $BUILD/gpu-bundle-build.log"
        exit 2
    }
fi
[ -x "$BUILD/tracer/nvtrace" ] || { log "$BUILD/tracer/nvtrace is not built"; exit 2; }

rm -rf "$OUT" "$OUT.tar.gz"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
# Installs what is built (install(TARGETS) of a target not built is an error: install the components one by one).
cmake --install "$BUILD" --prefix "$OUT" --strip >/dev/null 2>"$OUT/.install.log" || {
    log "cmake --install failed: $(tail -3 "$OUT/.install.log")"; exit 2; }
rm -f "$OUT/.install.log"
for s in $SCENARIOS; do
    [ -x "$OUT/libexec/nvtrace/scenario-$s" ] || log "note: scenario-$s is not built (no CUDA toolkit?); not bundled"
done
mkdir -p "$OUT/scripts" "$OUT/share/nvtrace/cases"
cp scripts/gpu-check.sh "$OUT/scripts/"
# One real function_graph text (tests/data/cases/README.md) for a smoke test of `nvtrace report` on the target.
cp tests/data/cases/fgraph-irq-nested-module-suffix.txt "$OUT/share/nvtrace/cases/"

# glibc's own libraries: the target's, never carried (they must match its ld-linux).
is_glibc() {
    case $(basename "$1") in
        linux-vdso.so*|ld-linux*|libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libresolv.so*|libmvec.so*) return 0 ;;
    esac
    return 1
}
elves() { find "$OUT/bin" "$OUT/libexec" "$OUT/lib" -type f \( -perm -u+x -o -name '*.so*' \) 2>/dev/null | sort; }
# ldd as the loader sees it at run time: a bundled library is loaded by bin/nvtrace, whose DT_RPATH ($ORIGIN/../lib)
# also serves the library's own dependencies; executables are read as they are.
bundle_ldd() {
    case $1 in "$OUT"/lib/*) LD_LIBRARY_PATH=$OUT/lib ldd "$1" 2>/dev/null ;; *) ldd "$1" 2>/dev/null ;; esac
}

# Copy every library ldd resolves (transitively: ldd lists them all) into lib/, under its soname.
bundled=()
for f in $(elves); do
    while read -r name _ path _; do
        [ -n "${path:-}" ] && [ "${path#/}" != "$path" ] || continue
        is_glibc "$name" && continue
        case $path in "$OUT"/*) continue ;; esac
        if [ ! -e "$OUT/lib/$name" ]; then
            cp -L "$path" "$OUT/lib/$name"
            chmod 0644 "$OUT/lib/$name"
            strip --strip-unneeded "$OUT/lib/$name"
            bundled+=("$name (from $path)")
        fi
    done < <(ldd "$f" 2>/dev/null | grep '=>')
done

# Every resolved library of every binary, now with the bundle in place, must be in the bundle or glibc's.
bad=0
for f in $(elves); do
    while read -r name _ path _; do
        is_glibc "$name" && continue
        case $path in "$OUT"/*) ;; *) log "$(basename "$f") resolves $name to $path (outside the bundle)"; bad=1 ;; esac
    done < <(bundle_ldd "$f" | grep '=>')
done

glibc_need() { objdump -T "$1" 2>/dev/null | { grep -o 'GLIBC_[0-9][0-9.]*' || true; } | sort -uV | tail -1; }
glibcxx_need() { objdump -T "$1" 2>/dev/null | { grep -o 'GLIBCXX_[0-9][0-9.]*' || true; } | sort -uV | tail -1; }
btype=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
# The compile line of nvtrace's main.cpp as the build ran it (flags of the build type included).
compile_line=$(python3 -c 'import json,sys
for e in json.load(open(sys.argv[1])):
    if e["file"].endswith("tracer/cmd/main.cpp"): print(e.get("command", " ".join(e.get("arguments", [])))); break' \
    "$BUILD/compile_commands.json" 2>/dev/null || true)
{
    echo "nvtrace GPU bundle (scripts/gpu-bundle.sh; docs/gpu-check.md)"
    echo "commit: $(git -C "$SRC" rev-parse HEAD 2>/dev/null || echo unknown)$(git -C "$SRC" diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
    echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -srm)"
    echo "build dir: $BUILD"
    echo "build type: ${btype:-RelWithDebInfo (the CMakeLists.txt default; debug info removed at install)}"
    echo "compile line (tracer/cmd/main.cpp): ${compile_line:-unknown (no compile_commands.json)}"
    echo "installed with: cmake --install --strip (no debug info)"
    cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
    echo "compiler: $("${cxx:-c++}" --version 2>/dev/null | head -1)"
    if [ -x /usr/local/cuda/bin/nvcc ]; then echo "cuda toolkit: $(/usr/local/cuda/bin/nvcc --version | tail -1)"; fi
    echo "build machine glibc: $(ldd --version | head -1)"
    overall=""
    for f in $(elves); do
        g=$(glibc_need "$f")
        x=$(glibcxx_need "$f")
        overall=$(printf '%s\n%s\n' "$overall" "$g" | sed '/^$/d' | sort -V | tail -1)
        echo "needs: ${f#"$OUT"/} ${g:-no GLIBC symbol}${x:+ $x}"
    done
    echo "glibc required: ${overall#GLIBC_} (the highest GLIBC_x.y symbol version of every bundled file)"
    echo "bundled libraries:"
    for b in "${bundled[@]}"; do echo "  $b"; done
    echo "scenario programs:"
    for p in "$OUT"/libexec/nvtrace/scenario-*; do
        if [ -e "$p" ]; then echo "  $(basename "$p"): $(ldd "$p" | awk '/=>/ {print $1}' | tr '\n' ' ')"; fi
    done
} > "$OUT/MANIFEST"

tar -C "$(dirname "$OUT")" -czf "$OUT.tar.gz" "$(basename "$OUT")"
size=$(stat -c %s "$OUT.tar.gz")
log "bundle $OUT ($(du -sh "$OUT" | cut -f1)), packed $OUT.tar.gz ($size bytes); $(grep '^glibc required' "$OUT/MANIFEST")"
if [ "$size" -ge 16000000 ]; then log "the archive is $size bytes: over the 16 MB a GPU machine hands back"; bad=1; fi
exit $bad
