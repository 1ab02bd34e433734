#!/usr/bin/env python3
"""The HTML page of the qemu guest's function_graph capture (docs/export.md): the report the guest handed back
(tests/vm/guest/function_graph.sh, a null_blk run) exported by this host's nvtrace and loaded in headless chromium
with the checks of tests/cli/export_html_browser.py: the null_queue_rq frame of the icicle with its call count
and a known total, the null_handle_cmd frame under it, no script errors, a non-blank screenshot.

Usage: html_of_guest_report.py NVTRACE GUEST_FILES_DIR WORK_DIR
Skips (77) when the guest handed back no report (the vm tier did not run here), and fails when CI=true.
"""
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
import export_html_browser as page  # noqa: E402


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    nvtrace, files, work = sys.argv[1:]
    report = os.path.join(files, "report.json")
    if not os.path.exists(report):
        if os.environ.get("CI") == "true":
            page.fail(f"{report}: the guest handed back no report (see vm_function_graph); CI=true: not skipped")
        print(f"SKIP: {report} is missing: vm_function_graph did not run")
        return 77
    exe = page.chromium()
    if not exe:
        if os.environ.get("CI") == "true":
            page.fail("chromium is not installed (scripts/setup.sh installs it); CI=true: not skipped")
        print("SKIP: chromium is not installed")
        return 77
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    html = os.path.join(work, "guest.html")
    page.export(nvtrace, report, html)
    dom = page.load(exe, html, work)
    queue = page.frame(dom, "null_queue_rq")
    # The guest's timing decides the unit (a loaded host's qemu made 1.207 ms of it): any unit the page prints.
    if "calls: 4" not in queue or not re.search(r"total: [0-9][0-9,]*\.[0-9]{3} (ns|us|ms|s)\b", queue):
        page.fail(f"the null_queue_rq frame: {queue!r}")
    below = [e for e in dom.find("g") if e["attrs"].get("data-path", "").startswith("null_queue_rq > ")]
    if not any(e["attrs"]["data-path"].endswith("null_handle_cmd") for e in below):
        page.fail(f"no null_handle_cmd frame under null_queue_rq: {[e['attrs']['data-path'] for e in below]}")
    page.screenshot_ok(exe, html, os.path.join(work, "guest.png"), work)  # fails when blank
    print("ok: the guest capture's page")
    return 0


if __name__ == "__main__":
    sys.exit(main())
