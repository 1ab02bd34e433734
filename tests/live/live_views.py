#!/usr/bin/env python3
"""The views of a live capture on this kernel (function tracing refused: an ioctl-only run; docs/tree.md,
docs/export.md): `nvtrace run` of fionread_loop N, then `nvtrace tree DIR` and `nvtrace export DIR --format html`
of the capture directory, the page loaded in headless chromium (the checks of tests/cli/export_html_browser.py).

Usage: live_views.py NVTRACE FIONREAD_LOOP N WORK_DIR
Root and tracefs are needed, and chromium; without them the test skips (exit 77), and fails when CI=true.
"""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
import export_html_browser as page  # noqa: E402

SKIP = 77


def skip(why):
    if os.environ.get("CI") == "true":
        page.fail(why + "; CI=true: not skipped")
    print("SKIP: " + why)
    sys.exit(SKIP)


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    nvtrace, loop, n, work = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    if os.geteuid() != 0:
        skip("not root")
    if not os.path.isdir("/sys/kernel/tracing/instances"):
        skip("tracefs is not mounted at /sys/kernel/tracing")
    exe = page.chromium()
    if not exe:
        skip("chromium is not installed (scripts/setup.sh installs it)")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    cap = os.path.join(work, "run")
    r = subprocess.run([nvtrace, "run", "--out", cap, "--", loop, str(n)], capture_output=True, text=True)
    if r.returncode != 0:
        page.fail(f"nvtrace run: exit {r.returncode}: {r.stderr[-2000:]}")

    r = subprocess.run([nvtrace, "tree", cap, "--color=never"], capture_output=True, text=True)
    if r.returncode != 0:
        page.fail(f"nvtrace tree {cap}: exit {r.returncode}: {r.stderr}")
    lines = [l for l in r.stdout.splitlines() if re.search(r"\bFIONREAD\b", l)]
    if len(lines) != 1 or not re.search(rf"\b{n}x\b", lines[0]) or "unknown" in lines[0]:
        page.fail(f"nvtrace tree: expected one FIONREAD line with {n}x and known latency:\n{r.stdout}")
    if "no calls in the report" not in r.stdout:
        page.fail(f"nvtrace tree: an ioctl-only run does not say it has no calls:\n{r.stdout}")

    html = os.path.join(work, "run.html")
    page.export(nvtrace, cap, html)
    dom = page.load(exe, html, work)
    slices = [e for e in dom.find("g", data_kind="ioctl") if e["attrs"].get("data-label") == "FIONREAD"]
    if len(slices) != n:
        page.fail(f"{html}: {len(slices)} FIONREAD slices on the timeline, expected {n}")
    comp = dom.find(id="completeness")
    if not comp or not page.text(comp[0]).strip().startswith("complete:"):
        page.fail(f"{html}: no completeness line")
    png = os.path.join(work, "run.png")
    page.screenshot_ok(exe, html, png, work)  # fails when blank
    print(f"ok: tree and html of a live ioctl-only capture ({n} FIONREAD)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
