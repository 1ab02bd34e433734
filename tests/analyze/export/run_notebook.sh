#!/bin/sh
# run_notebook.sh NVTRACE NOTEBOOK FIXTURE_DIR WORK_DIR: executes the notebook with jupyter nbconvert against two
# reports that `nvtrace export` writes here (baseline and driver_upgrade fixtures). Exit 77 (skip) when jupyter or
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
echo "notebook executed: $work/executed.ipynb"
