#!/usr/bin/env bash
# Runs every test tier (docs/testing.md): unit and golden tests, live tests on this machine's kernel
# (root + tracefs), function_graph in Debian's 6.1 kernel under qemu (tests/vm), and a short libFuzzer
# run of each reader. With CI=true a tier that cannot run is a failure, not a skip.
set -euo pipefail
cd "$(dirname "$0")/.."

# The live tiers need tracefs. Mount it only if it is not mounted, and unmount it again afterwards.
mounted_here=0
if [ "$(id -u)" -eq 0 ] && ! mountpoint -q /sys/kernel/tracing; then
  mount -t tracefs nodev /sys/kernel/tracing && mounted_here=1
fi
cleanup() { if [ "$mounted_here" = 1 ]; then umount /sys/kernel/tracing || true; fi; }
trap cleanup EXIT

cmake --build build -j"$(nproc)"
ctest --test-dir build --output-on-failure --timeout 1200

scripts/fuzz-smoke.sh "${FUZZ_SECONDS:-20}"
