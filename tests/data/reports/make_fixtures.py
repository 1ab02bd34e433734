#!/usr/bin/env python3
"""make_fixtures.py [OUT_DIR]: writes the hand-made diff/export fixture reports (schema nvtrace.report/1).

Each fixture is the baseline (a cudaMalloc-like path: two RM ioctls through nvidia_unlocked_ioctl and one
UVM_MAP_EXTERNAL_ALLOCATION through uvm_ioctl) with one known change, so a test can name exactly what the diff
must find. The files are committed; rerun this script and review the git diff after changing it. The script writes
the fields it sets; the sections the reader derives from them (ioctl_stats, ioctls[].duration_ns, empty api_calls)
come from passing each file once through the current reader and writer:
  for f in tests/data/reports/*.json; do build/tracer/nvtrace export "$f" --format json -o "$f.new" && mv "$f.new" "$f"; done

  baseline.json       driver 545 naming, phase "cudaMalloc", one interrupt under os_alloc_mem
  added_path.json     + nv_check_bar_overlap > nv_get_bar_info under rmapiAllocWithSecInfo
  removed_path.json   - uvm_map_external_allocation_on_gpu > uvm_pmm_gpu_alloc
  count_change.json   nv_get_kern_phys_address 4 -> 8 calls (twice the pages)
  time_change.json    uvm_map_external_allocation_on_gpu 40 us -> 185 us
  retval_change.json  rmapiAllocWithSecInfo returns 0x1e (NV_ERR_INVALID_ADDRESS) instead of 0
  noise.json          same run, other pid and times, durations within +-8%, clone suffixes (.isra.0,
                      .constprop.0, .part.0), "[module]" tails, the interrupt under another function
  renamed_535.json    driver 535 naming: nvidia_frontend_unlocked_ioctl > nvidia_frontend_ioctl > nvidia_ioctl
  driver_upgrade.json added, removed, count and retval changes as above, and nvos_create_alloc 5 us -> 65 us
                      (the 535 -> 545 example of docs/diff.md, against renamed_535.json)
"""
import copy
import json
import os
import sys

US = 1000


def node(fn, dur_us, ret=0, kids=(), module="nvidia", irq=False):
    return {"fn": fn, "dur": int(dur_us * US), "ret": ret, "kids": list(kids), "module": module, "irq": irq}


def baseline_roots():
    irq = node("smp_apic_timer_interrupt", 3, None, [node("irq_enter", 0.5, None, module=None, irq=True)],
               module=None, irq=True)
    rm_alloc = node("nvidia_unlocked_ioctl", 40, 0, [
        node("nvidia_ioctl", 38, 0, [
            node("rm_ioctl", 30, 0, [
                node("RmIoctl", 28, 0, [
                    node("rmapiAllocWithSecInfo", 20, 0, [
                        node("os_alloc_mem", 6, 0, [irq]),
                        node("os_alloc_mem", 2, 0),
                    ])])])])])
    pages = [node("nv_get_kern_phys_address", 1, 0) for _ in range(4)]
    rm_pages = node("nvidia_unlocked_ioctl", 50, 0, [
        node("nvidia_ioctl", 48, 0, [
            node("rm_ioctl", 45, 0, [
                node("nv_alloc_pages", 40, 0, [
                    node("nvos_create_alloc", 5, 0),
                    node("nv_compute_gfp_mask", 1, 0x14cc0),
                    node("nv_alloc_contig_pages", 20, 0, pages),
                ])])])])
    uvm = node("uvm_ioctl", 60, 0, [
        node("uvm_api_map_external_allocation", 55, 0, [
            node("uvm_map_external_allocation_on_gpu", 40, 0, [
                node("uvm_pmm_gpu_alloc", 10, 0, module="nvidia_uvm")], module="nvidia_uvm"),
        ], module="nvidia_uvm")], module="nvidia_uvm")
    return [rm_alloc, rm_pages, uvm]


def find(n, fn):
    if n["fn"] == fn:
        return n
    for k in n["kids"]:
        f = find(k, fn)
        if f:
            return f
    return None


def find_all(roots, fn):
    for r in roots:
        f = find(r, fn)
        if f:
            return f
    raise KeyError(fn)


def grow(roots, path_fn, delta_ns):
    """Adds delta_ns to the duration of path_fn and of every ancestor."""
    def walk(n):
        hit = n["fn"] == path_fn or any([walk(k) for k in n["kids"]])
        if hit:
            n["dur"] += delta_ns
        return hit
    for r in roots:
        walk(r)


def add_bar_check(roots):
    f = find_all(roots, "rmapiAllocWithSecInfo")
    f["kids"].append(node("nv_check_bar_overlap", 4, 0, [node("nv_get_bar_info", 1, 0)]))
    grow(roots, "rmapiAllocWithSecInfo", 4 * US)


def remove_pmm(roots):
    f = find_all(roots, "uvm_api_map_external_allocation")
    gone = f["kids"].pop(0)
    grow(roots, "uvm_api_map_external_allocation", -gone["dur"])


def double_pages(roots):
    f = find_all(roots, "nv_alloc_contig_pages")
    f["kids"] += [node("nv_get_kern_phys_address", 1, 0) for _ in range(4)]
    grow(roots, "nv_alloc_contig_pages", 4 * US)


def slow_uvm(roots):
    grow(roots, "uvm_map_external_allocation_on_gpu", 145 * US)


def slow_rm(roots):
    grow(roots, "nvos_create_alloc", 60 * US)


def fail_alloc(roots):
    find_all(roots, "rmapiAllocWithSecInfo")["ret"] = 0x1E


def to_535(roots):
    out = []
    for r in roots:
        if r["fn"] == "nvidia_unlocked_ioctl":
            inner = r["kids"][0]
            front = node("nvidia_frontend_ioctl", (inner["dur"] + 1 * US) / US, r["ret"], [inner])
            r = node("nvidia_frontend_unlocked_ioctl", (r["dur"] + 2 * US) / US, r["ret"], [front])
        out.append(r)
    return out


def add_noise(roots, seed=7):
    state = [seed]

    def rnd():
        state[0] = (state[0] * 1103515245 + 12345) % (1 << 31)
        return state[0] / float(1 << 31)

    suffix = {"rm_ioctl": ".constprop.0", "os_alloc_mem": ".part.0", "nv_alloc_pages": ".isra.0",
              "nvos_create_alloc": ".isra.0.cold"}

    def walk(n):
        n["dur"] = int(n["dur"] * (0.92 + 0.16 * rnd()))
        n["fn"] = n["fn"] + suffix.get(n["fn"], "")
        if n["fn"] == "uvm_ioctl":
            n["fn"] = "uvm_ioctl [nvidia_uvm]"
        for k in n["kids"]:
            walk(k)
    for r in roots:
        walk(r)
    # The interrupt arrives elsewhere this time.
    alloc = find_all(roots, "os_alloc_mem.part.0")
    irq = alloc["kids"].pop()
    find_all(roots, "uvm_pmm_gpu_alloc")["kids"].append(irq)
    for r in roots:
        walk_fix(r)


def walk_fix(n):
    for k in n["kids"]:
        walk_fix(k)
    # Room for the layout of build(): children start 200 ns in and are 100 ns apart.
    child = sum(k["dur"] for k in n["kids"]) + 200 + 100 * len(n["kids"])
    n["dur"] = max(n["dur"], child)


def build(roots, pid, comm, t0, driver, ioctl_names, klog=None):
    calls, ioctls = [], []
    t = t0

    def emit(n, parent, depth, start):
        cid = len(calls) + 1
        calls.append({"id": cid, "parent": parent, "cpu": 2, "pid": pid, "comm": comm, "depth": depth,
                      "function": n["fn"], "module": n["module"], "entry_ns": start, "duration_ns": n["dur"],
                      "retval": n["ret"], "kernel_depth": depth, "args": None, "retaddr": None, "irq": n["irq"],
                      "entry_seen": True, "exit_seen": True, "phase": "cudaMalloc"})
        cur = start + 200
        for k in n["kids"]:
            emit(k, cid, depth + 1, cur)
            cur += k["dur"] + 100
        return cid

    for r, (name, cmd, path) in zip(roots, ioctl_names):
        enter = t
        cid = emit(r, None, 0, t + 1000)
        exit_ns = t + 1000 + r["dur"] + 1000
        ioctls.append({"pid": pid, "comm": comm, "fd": 3 if "uvm" not in path else 4, "fd_path": path, "cmd": cmd,
                       "name": name, "hclass": None, "status": "NV_OK", "ctrl": None, "ctrl_class": None, "ret": 0,
                       "errno_name": None, "errno_text": None, "enter_ns": enter,
                       "exit_ns": exit_ns, "call": cid, "calls": [cid], "phase": "cudaMalloc"})
        t = exit_ns + 5000
    log = []
    if klog:
        target = next(c for c in calls if c["function"] == klog[0])
        log.append({"ts": target["entry_ns"] + 500, "level": 3, "source": "NVRM", "kind": "other", "fields": {},
                    "text": klog[1], "seq": 1201, "call": target["id"], "attached": "console", "trace_ts": None})
    return {
        "schema": "nvtrace.report/1",
        "source": {"kind": "fixture", "command": "cuda_malloc 1MiB"},
        "environment": {"kernel": "6.1.0-18-amd64", "nvidia_driver_version": driver},
        "completeness": {"complete": True, "lost_events": 0, "orphan_returns": 0, "unclosed_calls": 0,
                         "overruns": 0, "dropped_events": 0, "graph_overruns": 0, "entries_in_buffer": None,
                         "entries_written": None, "elided_spans": 0, "unreadable_lines": 0, "gaps": [],
                         "reasons": [], "diagnostics": []},
        "calls": calls,
        "graph": aggregate(calls),
        "kernel_log": log,
        "ioctls": ioctls,
        "markers": [{"ts": t0 - 100, "pid": pid, "text": "nvtrace-phase: cudaMalloc"},
                    {"ts": t, "pid": pid, "text": "nvtrace-phase-end"}],
        "checks": [],
        "kmsg_clock": None,
        "source_links": None,
        "events": [],
    }


def aggregate(calls):
    """The same rows analyze/call_graph.cpp aggregate_graph makes: one per root path, sorted by path."""
    paths, child = {}, {}
    for c in calls:
        paths[c["id"]] = c["function"] if c["parent"] is None else paths[c["parent"]] + " > " + c["function"]
        if c["parent"] is not None:
            child[c["parent"]] = child.get(c["parent"], 0) + c["duration_ns"]
    rows = {}
    for c in calls:
        p = paths[c["id"]]
        r = rows.setdefault(p, {"path": p, "count": 0, "total_ns": 0, "self_ns": 0, "min_ns": None, "max_ns": 0})
        d = c["duration_ns"]
        r["count"] += 1
        r["total_ns"] += d
        r["self_ns"] += max(d - child.get(c["id"], 0), 0)
        r["min_ns"] = d if r["min_ns"] is None else min(r["min_ns"], d)
        r["max_ns"] = max(r["max_ns"], d)
    return [rows[p] for p in sorted(rows, key=lambda s: s.encode())]


IOCTLS = [("NV_ESC_RM_ALLOC", 0xC030462B, "/dev/nvidiactl"),
          ("NV_ESC_RM_ALLOC_MEMORY", 0xC0384627, "/dev/nvidiactl"),
          ("UVM_MAP_EXTERNAL_ALLOCATION", 0x21, "/dev/nvidia-uvm")]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    variants = {
        "baseline": ([], 4242, 1_000_000, "545.23.08", None),
        "added_path": ([add_bar_check], 4242, 1_000_000, "545.23.08", None),
        "removed_path": ([remove_pmm], 4242, 1_000_000, "545.23.08", None),
        "count_change": ([double_pages], 4242, 1_000_000, "545.23.08", None),
        "time_change": ([slow_uvm], 4242, 1_000_000, "545.23.08", None),
        "retval_change": ([fail_alloc], 4242, 1_000_000, "545.23.08",
                          ("rmapiAllocWithSecInfo", "NVRM: rmapiAllocWithSecInfo: allocation failed: 0x1e")),
        "noise": ([add_noise], 5151, 7_300_000, "545.23.08", None),
        "renamed_535": ([to_535], 4242, 1_000_000, "535.104.05", None),
        "driver_upgrade": ([add_bar_check, remove_pmm, double_pages, slow_rm, fail_alloc], 4343, 2_000_000,
                           "545.23.08", None),
    }
    for name, (edits, pid, t0, driver, klog) in variants.items():
        roots = baseline_roots()
        for e in edits:
            roots = e(roots) or roots
        rep = build(roots, pid, "cuda_malloc", t0, driver, IOCTLS, klog)
        with open(os.path.join(out, name + ".json"), "w") as f:
            json.dump(rep, f, indent=1, sort_keys=True)
            f.write("\n")


if __name__ == "__main__":
    main()
