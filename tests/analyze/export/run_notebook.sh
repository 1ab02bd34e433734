#!/bin/sh
# run_notebook.sh NVTRACE NOTEBOOK FIXTURE_DIR WORK_DIR: executes the notebook with jupyter nbconvert against two
# reports that `nvtrace export` writes here (baseline and driver_upgrade fixtures), then against two reports without
# calls (a capture directory and an strace). Exit 77 (skip) when jupyter or
# the Python packages are missing, unless CI=true (then 1).
set -eu
nvtrace=$1 notebook=$2 fixtures=$3 work=$4

need() {
    if [ "${CI:-}" = true ]; then
        echo "notebook test: $1 (CI=true: failing; install: apt-get install jupyter-nbconvert python3-ipykernel python3-nbformat python3-pandas python3-matplotlib)" >&2
        exit 1
    fi
    echo "SKIP: $1 (apt-get install jupyter-nbconvert python3-ipykernel python3-nbformat python3-pandas python3-matplotlib)"
    exit 77
}
command -v jupyter >/dev/null 2>&1 || need "jupyter not found"
jupyter nbconvert --version >/dev/null 2>&1 || need "jupyter nbconvert not found"
# The kernel runs on the interpreter jupyter itself runs on (its #! line), not necessarily the first python3.
py=$(sed -n '1s/^#! *//p' "$(command -v jupyter)" | cut -d' ' -f1)
[ -x "$py" ] || py=python3
"$py" -c 'import pandas, matplotlib, ipykernel' 2>/dev/null || need "$py: pandas, matplotlib or ipykernel missing"

rm -rf "$work"
mkdir -p "$work"
"$nvtrace" export "$fixtures/baseline.json" --format json -o "$work/report_a.json"
"$nvtrace" export "$fixtures/driver_upgrade.json" --format json -o "$work/report_b.json"
NVTRACE_REPORT="$work/report_a.json" NVTRACE_REPORT_B="$work/report_b.json" NVTRACE_PLOT_DIR="$work" MPLBACKEND=Agg \
    jupyter nbconvert --to notebook --execute --ExecutePreprocessor.timeout=120 \
    --output-dir "$work" --output executed.ipynb "$notebook"
test -s "$work/self_time.png" || { echo "notebook did not write self_time.png" >&2; exit 1; }
test -s "$work/ioctl_counts.png" || { echo "notebook did not write ioctl_counts.png" >&2; exit 1; }
echo "notebook executed: $work/executed.ipynb"

# Reports without calls (every run where function tracing is refused): a capture directory of FIONREAD ioctls and
# an strace of the NVIDIA driver's ioctls. The plot folder does not exist yet: the notebook creates it.
data=$fixtures/..
"$nvtrace" report "$data/capture_dir/fionread20" -o "$work/ioctl_a.json" >/dev/null
"$nvtrace" report "$data/cases/strace-nvidia-ioctl-libva.txt" -o "$work/ioctl_b.json" >/dev/null
NVTRACE_REPORT="$work/ioctl_a.json" NVTRACE_REPORT_B="$work/ioctl_b.json" NVTRACE_PLOT_DIR="$work/ioctl-only/plots" \
    MPLBACKEND=Agg jupyter nbconvert --to notebook --execute --ExecutePreprocessor.timeout=120 \
    --output-dir "$work" --output executed-ioctl-only.ipynb "$notebook"
test -s "$work/ioctl-only/plots/ioctl_counts.png" || { echo "ioctl-only: no ioctl_counts.png" >&2; exit 1; }
test -s "$work/ioctl-only/plots/ioctl_timeline.png" || { echo "ioctl-only: no ioctl_timeline.png" >&2; exit 1; }
test ! -e "$work/ioctl-only/plots/self_time.png" || { echo "ioctl-only: a self-time plot without calls" >&2; exit 1; }
# The per-request table holds the 20 FIONREADs of the capture.
grep -q 'FIONREAD' "$work/executed-ioctl-only.ipynb" || { echo "ioctl-only: no FIONREAD row" >&2; exit 1; }
echo "notebook executed on reports without calls: $work/executed-ioctl-only.ipynb"
