#!/usr/bin/env python3
"""validate_report.py SCHEMA REPORT...: validate nvtrace reports against docs/report.schema.json.

Also checks what a JSON Schema cannot say: ids are 1..N in order, every parent id exists and comes before
its child, and every call/ioctl link points at an existing call. Exit 0 when all are valid, 1 otherwise.
"""
import json
import sys

import jsonschema


def semantic_errors(rep):
    errs = []
    ids = [c["id"] for c in rep["calls"]]
    if ids != list(range(1, len(ids) + 1)):
        errs.append("call ids are not 1..N in order")
    known = set(ids)
    for c in rep["calls"]:
        if c["parent"] is not None and (c["parent"] not in known or c["parent"] >= c["id"]):
            errs.append(f"call {c['id']}: parent {c['parent']} missing or not before it")
    for i in rep["ioctls"]:
        for cid in i.get("calls", []):
            if cid not in known:
                errs.append(f"ioctl at {i['enter_ns']}: call {cid} does not exist")
    for m in rep["kernel_log"]:
        if m["call"] is not None and m["call"] not in known:
            errs.append(f"kernel_log '{m['text'][:40]}': call {m['call']} does not exist")
    return errs


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1]) as f:
        schema = json.load(f)
    validator = jsonschema.Draft202012Validator(schema)
    bad = 0
    for path in sys.argv[2:]:
        with open(path) as f:
            rep = json.load(f)
        errs = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(rep)]
        if not errs:
            errs = semantic_errors(rep)
        for e in errs[:20]:
            print(f"{path}: {e}")
        bad += bool(errs)
        if not errs:
            print(f"{path}: valid ({len(rep['calls'])} calls, {len(rep['ioctls'])} ioctls)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
