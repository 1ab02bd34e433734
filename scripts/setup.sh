#!/usr/bin/env bash
# Installs everything nvtrace needs on Debian 12 (build, tests, the qemu test guest), builds it into
# build/, and says how to run it. Run as root or as a user with sudo.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=()
[ "$(id -u)" -eq 0 ] || SUDO=(sudo)

packages=(
  build-essential cmake pkg-config clang libclang-rt-14-dev clang-format   # toolchain, fuzzers
  libtracefs-dev libtraceevent-dev libtracecmd-dev trace-cmd                # tracefs, event decoding, trace.dat
  libfmt-dev libcli11-dev nlohmann-json3-dev libexpected-dev googletest libgtest-dev libxxhash-dev libelf-dev
  libsimdjson-dev                                                           # saved reports' calls (nvtrace diff)
  python3 python3-jsonschema                                                # report schema tests
  python3-pandas python3-matplotlib jupyter-nbconvert python3-nbformat python3-ipykernel  # notebook test
  qemu-system-x86 busybox-static cpio kmod file libdrm-dev                  # qemu test guest (tests/vm)
  util-linux                                                                # setpriv, mountpoint
  chromium python3-pil                                                      # HTML export test (headless)
  slurm-wlm munge                                                           # 3-node Slurm test (tests/slurm)
)
"${SUDO[@]}" apt-get update
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${packages[@]}"

cmake -S . -B build -DNVTRACE_WERROR=ON
cmake --build build -j"$(nproc)"

cat <<'MSG'

nvtrace is built: build/tracer/nvtrace

Run the main job (as root; tracefs must be mounted: mount -t tracefs nodev /sys/kernel/tracing):
  sudo build/tracer/nvtrace run -- <program> [args]                 # ioctls + kernel log of one program
  sudo build/tracer/nvtrace run --module nvidia -- <cuda program>   # + function_graph of nvidia.ko
Without a GPU, the qemu test guest runs function_graph on a real module: scripts/test.sh (tier 3).
Run the tests: scripts/test.sh
MSG
