#!/usr/bin/env python3
"""Guards the host's kernel log against lines a GPU monitor would act on.

    kmsg_guard.py record STATE [--log FILE]   # before the live suite: remember where the log ends
    kmsg_guard.py check STATE [--log FILE]    # after it: fail when a new record looks like a GPU fault

A GPU node's monitoring agents (NVSentinel, gpud, DCGM-based ones) read the kernel log and act on NVRM lines,
Xid reports and "fallen off the bus": a test suite must never write one into a real host's log. The live tests
write only neutral, tagged lines (`nvtrace-test: kmsg probe <uuid>`); NVRM/Xid classification is tested on
files and inside the qemu guest (tests/vm), whose kernel log dies with it.

The log is /dev/kmsg, read non-blocking (one record per read(2); EPIPE when a record was overwritten before it
was read: Documentation/ABI/testing/dev-kmsg), or, with --log, a file holding /dev/kmsg records
("PRIO,SEQ,TS_USEC,FLAGS;TEXT") or plain lines (dmesg output: a line's number is its sequence number).
`record` saves the last sequence number; `check` looks at every record after it. When records after the saved
one were overwritten before `check` could read them (the kernel's ring buffer wrapped), or a file shrank, what
they said is not known: that fails too, since the check could not be made.

Exit status: 0 clean, 1 a matching record was written (or the check could not be made), 2 usage,
77 the log cannot be read here (not root); with CI=true that is a failure (1), as for the live tier.
"""
import errno
import json
import os
import re
import sys

# What the monitors match (NVRM: prefix of nvidia.ko's printks, "Xid" reports, the fallen-off-the-bus text).
PATTERN = re.compile(r"NVRM:|\bXid\b|fallen off the bus")
KMSG_RECORD = re.compile(r"^(\d+),(\d+),")


def read_kmsg():
    """(first_seq_seen, [(seq, text)]) of every record /dev/kmsg still holds."""
    fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    records = []
    try:
        while True:
            try:
                data = os.read(fd, 16384)
            except BlockingIOError:
                break
            except OSError as e:
                if e.errno == errno.EPIPE:  # overwritten while we read: the next read goes on after it
                    continue
                raise
            if not data:
                break
            line = data.decode("utf-8", "replace")
            m = KMSG_RECORD.match(line)
            if m:
                text = line.split(";", 1)[1] if ";" in line else line
                records.append((int(m.group(2)), text.split("\n", 1)[0]))
    finally:
        os.close(fd)
    return records


def read_file(path):
    records = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if line.startswith(" "):  # a /dev/kmsg dictionary line (" SUBSYSTEM=..."): part of the record above
                continue
            m = KMSG_RECORD.match(line)
            if m:
                records.append((int(m.group(2)), line.split(";", 1)[1] if ";" in line else line))
            else:
                records.append((number, line))
    return records


def cannot_read(why):
    ci = os.environ.get("CI") == "true"
    print(f"kmsg_guard: cannot read the kernel log: {why}" + (" (CI=true: a failure)" if ci else "; skipped"))
    return 1 if ci else 77


def main(argv):
    args = argv[1:]
    log = None
    if "--log" in args:
        i = args.index("--log")
        if i + 1 >= len(args):
            print("kmsg_guard: --log needs a FILE", file=sys.stderr)
            return 2
        log = args[i + 1]
        del args[i : i + 2]
    if len(args) != 2 or args[0] not in ("record", "check"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    action, state_path = args
    try:
        records = read_file(log) if log else read_kmsg()
    except OSError as e:
        return cannot_read(f"{log or '/dev/kmsg'}: {e.strerror}")
    source = log or "/dev/kmsg"
    matching = sum(1 for _, t in records if PATTERN.search(t))
    last = records[-1][0] if records else -1

    if action == "record":
        with open(state_path, "w", encoding="utf-8") as f:
            json.dump({"source": source, "last_seq": last, "matching": matching}, f)
        print(f"kmsg_guard: {source} ends at record {last}; {matching} GPU-monitor line(s) already there")
        return 0

    try:
        with open(state_path, encoding="utf-8") as f:
            state = json.load(f)
    except (OSError, ValueError) as e:
        print(f"kmsg_guard: {state_path}: no usable state from `record` ({e})")
        return 1
    if state.get("source") != source:
        print(f"kmsg_guard: {state_path} was recorded from {state.get('source')}, not {source}")
        return 1
    since = state["last_seq"]
    new = [(s, t) for s, t in records if s > since]
    bad = [(s, t) for s, t in new if PATTERN.search(t)]
    for s, t in bad:
        print(f"kmsg_guard: record {s} written during the tests looks like a GPU fault to a monitor: {t}")
    if bad:
        print(f"kmsg_guard: FAIL: {len(bad)} such line(s) in {source} (tests must use a neutral, tagged line)")
        return 1
    # Records after the saved one that are gone (the ring buffer wrapped, or the file was replaced) were not seen.
    first_after = min((s for s, _ in new), default=None)
    if (records and records[-1][0] < since) or (first_after is not None and first_after > since + 1):
        print(f"kmsg_guard: FAIL: records after {since} were lost before they could be read; cannot tell what "
              f"they said")
        return 1
    print(f"kmsg_guard: {len(new)} record(s) written since, none a GPU-monitor line")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
