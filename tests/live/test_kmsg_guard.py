#!/usr/bin/env python3
"""Unit test of kmsg_guard.py's counting on files (never on the host's log: no GPU-monitor line is ever written
there to prove that the guard works). Usage: test_kmsg_guard.py GUARD. Exit 0 when every case gives the expected
status, 1 otherwise (each failing case is named)."""
import os
import subprocess
import sys
import tempfile

GUARD = sys.argv[1]
XID = "NVRM: Xid (PCI:0000:01:00): 79, pid=1, GPU has fallen off the bus."
failures = []


def guard(action, state, log):
    env = dict(os.environ)
    env.pop("CI", None)
    r = subprocess.run([sys.executable, GUARD, action, state, "--log", log], capture_output=True, text=True, env=env)
    return r.returncode, r.stdout + r.stderr


def case(name, before, after, want, rewrite=False):
    """`before` lines are in the log at `record`; `after` lines are appended (or, with rewrite, replace it)."""
    with tempfile.TemporaryDirectory() as d:
        log, state = os.path.join(d, "log"), os.path.join(d, "state")
        with open(log, "w") as f:
            f.writelines(line + "\n" for line in before)
        rc, out = guard("record", state, log)
        if rc != 0:
            failures.append(f"{name}: record exited {rc}: {out}")
            return
        with open(log, "w" if rewrite else "a") as f:
            f.writelines(line + "\n" for line in after)
        rc, out = guard("check", state, log)
        if rc != want:
            failures.append(f"{name}: check exited {rc}, expected {want}: {out}")


# Lines that were there before (an earlier run's) do not count; only new ones do.
case("old Xid line, nothing new", ["[    1.0] boot", f"[    2.0] {XID}"], [], 0)
case("neutral tagged line added", ["[    1.0] boot"], ["[    3.0] nvtrace-test: kmsg probe 1f2e3d4c"], 0)
case("Xid line added (dmesg text)", ["[    1.0] boot"], ["[    3.0] nvtrace-test: kmsg probe 1", f"[    3.1] {XID}"], 1)
case("NVRM line without Xid added", ["a"], ["[   9.0] NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0x38:1)"], 1)
case("fallen off the bus without NVRM added", ["a"], ["[   9.0] pcieport: GPU has fallen off the bus"], 1)
case("Xid word alone added", ["a"], ["[   9.0] nvidia-nvlink: Xid 74 reported"], 1)
# /dev/kmsg record form (PRIO,SEQ,TS,FLAGS;TEXT): sequence numbers, not line numbers.
case("kmsg records, neutral", ["6,100,1000,-;boot"], ["3,101,2000,-;nvtrace-test: kmsg probe x"], 0)
case("kmsg records, Xid", ["6,100,1000,-;boot"], ["3,101,2000,-;nvtrace-test: x", f"3,102,2001,-;{XID}"], 1)
case("kmsg dictionary line is not a record", ["6,100,1000,-;boot"], ["3,101,2000,-;x", " SUBSYSTEM=pci"], 0)
# Records after the saved one gone (ring buffer wrapped: 101 missing) or the file shrank: cannot tell, so fail.
case("kmsg records lost", ["6,100,1000,-;boot"], ["6,150,3000,-;later"], 1, rewrite=True)
case("log file shrank", ["a", "b", "c"], ["a"], 1, rewrite=True)

for f in failures:
    print("FAIL:", f)
print(f"{'FAIL' if failures else 'ok'}: {len(failures)} failing case(s)")
sys.exit(1 if failures else 0)
