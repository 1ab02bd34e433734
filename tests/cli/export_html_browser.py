#!/usr/bin/env python3
"""nvtrace export --format html, loaded in a real headless browser (Debian's chromium; docs/export.md).

For each report the page is written by nvtrace, checked as text (one file: nothing it would fetch), loaded with
`chromium --headless --dump-dom` (the DOM after the page's script ran), and the DOM is searched for the nodes a
reader must see: the icicle frame of a known path with its duration text, the ioctl slices, the checks with
their evidence, the completeness line. The page records its own script errors (window.onerror, console.error,
CSP violations) in <html data-script-errors>; the test asserts there are none and that the script finished
(data-rendered="yes"). A screenshot at 1200x800 must not be blank (many colours, no colour on most pixels).

Usage: export_html_browser.py NVTRACE SOURCE_DIR WORK_DIR
Without chromium the test skips (exit 77), and fails when CI=true. NVTRACE_UPDATE_SCREENSHOT=1 writes the docs
example's screenshot to docs/html-example.png.
"""
import html.parser
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

SKIP = 77


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


class Dom(html.parser.HTMLParser):
    """Elements of the dumped DOM with their attributes and full text (a <title> child's text included)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.elements = []  # dicts: tag, attrs, text (list of chunks, joined later)
        self.stack = []

    def handle_starttag(self, tag, attrs):
        e = {"tag": tag, "attrs": dict(attrs), "text": []}
        self.elements.append(e)
        if tag not in ("meta", "br", "img", "input", "link", "hr", "path", "rect", "line"):
            self.stack.append(e)

    def handle_startendtag(self, tag, attrs):
        self.elements.append({"tag": tag, "attrs": dict(attrs), "text": []})

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i]["tag"] == tag:
                del self.stack[i:]
                break

    def handle_data(self, data):
        for e in self.stack:
            e["text"].append(data)

    def find(self, tag=None, **attrs):
        out = []
        for e in self.elements:
            if tag and e["tag"] != tag:
                continue
            if all(e["attrs"].get(k.replace("_", "-")) == v for k, v in attrs.items()):
                out.append(e)
        return out


def text(e):
    return "".join(e["text"])


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


def browser(exe, args, work):
    profile = tempfile.mkdtemp(prefix="chromium-profile-", dir=work)
    env = dict(os.environ, HOME=profile, LC_ALL="C.UTF-8", TZ="UTC")
    cmd = ["timeout", "60", exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-extensions", "--disable-background-networking", "--disable-sync", "--hide-scrollbars",
           "--force-device-scale-factor=1", "--user-data-dir=" + profile] + args
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    shutil.rmtree(profile, ignore_errors=True)
    return r


def export(nvtrace, src, out):
    r = subprocess.run([nvtrace, "export", src, "--format", "html", "-o", out], capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"nvtrace export {src} --format html: exit {r.returncode}: {r.stderr}")
    with open(out, encoding="utf-8") as f:
        page = f.read()
    # One file: nothing to fetch (the only URL is the SVG namespace name, which is never fetched).
    # Elements and attributes that load something, as a parser sees them (report text is escaped: an
    # "<img src=...>" inside a function name is text, not an element).
    raw = Dom()
    raw.feed(page)
    for e in raw.elements:
        if e["tag"] in ("img", "link", "iframe", "object", "embed", "base", "audio", "video", "source", "frame"):
            fail(f"{out}: the page has a <{e['tag']}> element")
        for k in ("src", "href", "action", "poster", "xlink:href", "srcset", "formaction"):
            if k in e["attrs"]:
                fail(f"{out}: <{e['tag']} {k}=...>: the page refers to something outside itself")
    # The page's own CSS and script (the embedded data, escaped JSON, left out) fetch nothing.
    code = re.sub(r'<script type="application/json" id="nvtrace-data">.*?</script>', "", page, flags=re.S).lower()
    for needle in (r"@import", r"url\((?!#)", r"\bfetch\(", r"xmlhttprequest", r"\bimport\(", r"websocket",
                   r"sendbeacon"):
        if re.search(needle, code):
            fail(f"{out}: the page's code refers to something outside itself ({needle!r})")
    if re.search(r"(https?|ftp|wss?|file):", code.replace("http://www.w3.org/2000/svg", "")):
        fail(f"{out}: the page's code holds a URL other than the SVG namespace name")
    start = page.index('<script type="application/json" id="nvtrace-data">')
    body = page[start + len('<script type="application/json" id="nvtrace-data">'):page.index("</script>", start)]
    if "<" in body:
        fail(f"{out}: the embedded JSON holds an unescaped '<'")
    json.loads(body)  # it is JSON
    return page


def load(exe, page_path, work):
    r = browser(exe, ["--dump-dom", "file://" + os.path.abspath(page_path)], work)
    if r.returncode != 0 or "<html" not in r.stdout:
        fail(f"chromium --dump-dom {page_path}: exit {r.returncode}: {r.stderr[-2000:]}")
    dom = Dom()
    dom.feed(r.stdout)
    root = dom.find("html")[0]["attrs"]
    if root.get("data-script-errors") != "0":
        fail(f"{page_path}: script errors: {root.get('data-script-errors')}: {root.get('data-script-error-messages')}")
    if root.get("data-rendered") != "yes":
        fail(f"{page_path}: the page's script did not finish (no data-rendered)")
    return dom


def screenshot_ok(exe, page_path, png, work):
    r = browser(exe, ["--screenshot=" + png, "--window-size=1200,800", "file://" + os.path.abspath(page_path)], work)
    if r.returncode != 0 or not os.path.exists(png):
        fail(f"chromium --screenshot {page_path}: exit {r.returncode}: {r.stderr[-2000:]}")
    size, counts = png_colours(png)
    if size != (1200, 800):
        fail(f"{png}: size {size}, expected 1200x800")
    colours = list(counts.items())
    most = max(n for _, n in colours)
    if len(colours) < 32 or most > 0.97 * 1200 * 800:
        fail(f"{png}: looks blank: {len(colours)} colours, the commonest on {most} of {1200 * 800} pixels")
    print(f"{png}: {len(colours)} colours, the commonest on {100 * most / (1200 * 800):.1f} % of the pixels")


def png_colours(path):
    """(width, height) and {pixel: count} of a PNG: python3-pil when it is there, else zlib on the IDAT chunks
    (8-bit greyscale, RGB or RGBA, not interlaced: what chromium writes)."""
    try:
        from PIL import Image
        im = Image.open(path).convert("RGB")
        return im.size, {c: n for n, c in im.getcolors(maxcolors=1 << 24)}
    except ImportError:
        pass
    with open(path, "rb") as f:
        b = f.read()
    if b[:8] != b"\x89PNG\r\n\x1a\n":
        fail(f"{path}: not a PNG")
    pos, idat, ihdr = 8, b"", None
    while pos < len(b):
        n = struct.unpack(">I", b[pos:pos + 4])[0]
        kind, body = b[pos + 4:pos + 8], b[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = ihdr
    bpp = {0: 1, 2: 3, 6: 4}.get(ctype)
    if depth != 8 or bpp is None or interlace:
        fail(f"{path}: PNG depth {depth} colour type {ctype} interlace {interlace}: install python3-pil")
    raw, stride, prev, counts, i = zlib.decompress(idat), w * bpp, bytearray(w * bpp), {}, 0
    for _ in range(h):
        ft, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):  # the five filters of the PNG specification, section 9
            a = line[x - bpp] if x >= bpp else 0
            c = prev[x - bpp] if x >= bpp else 0
            up = prev[x]
            if ft == 1:
                line[x] = (line[x] + a) & 255
            elif ft == 2:
                line[x] = (line[x] + up) & 255
            elif ft == 3:
                line[x] = (line[x] + ((a + up) >> 1)) & 255
            elif ft == 4:
                p = a + up - c
                pa, pb, pc = abs(p - a), abs(p - up), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else up if pb <= pc else c)) & 255
        for x in range(0, stride, bpp):
            px = bytes(line[x:x + min(bpp, 3)])
            counts[px] = counts.get(px, 0) + 1
        prev = line
    return (w, h), counts


def frame(dom, path):
    f = dom.find("g", data_path=path)
    if len(f) != 1:
        fail(f"expected one icicle frame for {path!r}, found {len(f)}")
    return text(f[0])


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    nvtrace, src_dir, work = sys.argv[1:]
    os.makedirs(work, exist_ok=True)
    exe = chromium()
    if not exe:
        if os.environ.get("CI") == "true":
            fail("chromium is not installed (scripts/setup.sh installs it); CI=true: not skipped")
        print("SKIP: chromium is not installed")
        return SKIP

    # 1. A report with the nv_alloc_pages > nv_alloc_contig_pages path, a phase, ioctls and checks: the fixture
    # tests/data/reports/baseline.json with the checks of `nvtrace check --expect scenarios/cuda-malloc` (pass,
    # FAIL and inconclusive ones) put into it, as `nvtrace run` of the scenario would.
    with open(os.path.join(src_dir, "tests/data/reports/baseline.json")) as f:
        rep = json.load(f)
    r = subprocess.run([nvtrace, "check", os.path.join(src_dir, "tests/data/reports/baseline.json"), "--expect",
                        os.path.join(src_dir, "scenarios/cuda-malloc"), "--json"], capture_output=True, text=True)
    if r.returncode not in (0, 1):
        fail(f"nvtrace check: exit {r.returncode}: {r.stderr}")
    rep["checks"] = json.loads(r.stdout)["checks"]
    # An API call around the first ioctl, shaped as report_example (tests/schema) writes one.
    rep["api_calls"] = [{
        "api": "cuda_driver", "arg_kinds": {"bytesize": "bytes"}, "args": {"bytesize": "1048576"},
        "args_decoded": {"bytesize": "1 MiB"}, "calls": [1], "comm": "cuda_malloc", "cpu": 2, "depth": 0,
        "entry_ns": 999950, "exit_ns": 1045000, "exit_unknown": None, "function": "cuMemAlloc_v2",
        "group": "nvtrace_4242", "id": 1, "ioctl_names": ["NV_ESC_RM_ALLOC"], "ioctls": [0],
        "library": "libcuda.so.1", "parent": None, "phase": "cudaMalloc", "pid": 4242, "result": 0,
        "result_name": "CUDA_SUCCESS", "result_unknown": None}]
    results = {c["result"] for c in rep["checks"]}
    if not {"pass", "fail", "inconclusive"} <= results:
        fail(f"the cuda-malloc checks of baseline.json no longer give pass, fail and inconclusive: {results}")
    example = os.path.join(work, "example-report.json")
    with open(example, "w") as f:
        json.dump(rep, f)
    page = os.path.join(work, "example.html")
    first = export(nvtrace, example, page)
    if export(nvtrace, example, page) != first:
        fail("two exports of one report differ (the page must be deterministic)")
    dom = load(exe, page, work)
    t = frame(dom, "nvidia_unlocked_ioctl > nvidia_ioctl > rm_ioctl > nv_alloc_pages > nv_alloc_contig_pages")
    for want in ("nv_alloc_contig_pages [nvidia]", "calls: 1", "total: 20.000 us", "self: 16.000 us"):
        if want not in t:
            fail(f"the nv_alloc_contig_pages frame lacks {want!r}: {t!r}")
    t = frame(dom, "nvidia_unlocked_ioctl > nvidia_ioctl > rm_ioctl > nv_alloc_pages > nv_alloc_contig_pages > "
                   "nv_get_kern_phys_address")
    if "calls: 4" not in t or "total: 4.000 us" not in t:
        fail(f"nv_get_kern_phys_address: {t!r}")
    root = frame(dom, "all calls")
    if "calls: 24" not in root or "total: 150.000 us" not in root:
        fail(f"root frame: {root!r}")
    ioctls = sorted(e["attrs"]["data-label"] for e in dom.find("g", data_kind="ioctl"))
    if ioctls != ["NV_ESC_RM_ALLOC", "NV_ESC_RM_ALLOC_MEMORY", "UVM_MAP_EXTERNAL_ALLOCATION"]:
        fail(f"ioctl slices: {ioctls}")
    for e in dom.find("g", data_kind="ioctl"):
        if not any(x["tag"] == "rect" for x in dom.elements[dom.elements.index(e):dom.elements.index(e) + 3]):
            fail(f"ioctl {e['attrs']['data-label']} is not a duration slice")
    alloc = [e for e in dom.find("g", data_kind="ioctl") if e["attrs"]["data-label"] == "NV_ESC_RM_ALLOC"][0]
    for want in ("fd 3 /dev/nvidiactl", "status NV_OK", "duration 42.000 us", "phase cudaMalloc"):
        if want not in text(alloc):
            fail(f"NV_ESC_RM_ALLOC slice lacks {want!r}: {text(alloc)!r}")
    if [e["attrs"]["data-label"] for e in dom.find("g", data_kind="phase")] != ["cudaMalloc"]:
        fail("the cudaMalloc phase is not on the timeline")
    api = dom.find("g", data_kind="api")
    if len(api) != 1 or api[0]["attrs"]["data-label"] != "cuMemAlloc_v2" or not all(
            w in text(api[0]) for w in ("libcuda.so.1", "bytesize = 1 MiB", "result 0 CUDA_SUCCESS",
                                        "duration 45.050 us")):
        fail(f"the API call on the timeline: {[text(a) for a in api]}")
    if len(dom.find("g", data_kind="call")) != 3:
        fail(f"root calls on the timeline: {len(dom.find('g', data_kind='call'))}, expected 3")
    rows = dom.find("tr")
    checks = {e["attrs"]["data-check"]: e for e in rows if "data-check" in e["attrs"]}
    if set(checks) != {c["id"] for c in rep["checks"]}:
        fail(f"checks shown: {sorted(checks)}")
    fail_row = checks["map-external-handler"]
    if fail_row["attrs"]["class"] != "check fail" or "UVM_MAP_EXTERNAL_ALLOCATION at 1104000 ns" not in text(fail_row):
        fail(f"map-external-handler row: {fail_row}")
    comp = dom.find(id="completeness")
    if len(comp) != 1 or text(comp[0]) != "complete: yes":
        fail(f"completeness: {[text(c) for c in comp]}")
    png = os.path.join(work, "example.png")
    screenshot_ok(exe, page, png, work)
    if os.environ.get("NVTRACE_UPDATE_SCREENSHOT") == "1":
        shutil.copyfile(png, os.path.join(src_dir, "docs/html-example.png"))
        print("wrote docs/html-example.png")
    print("ok: example report (icicle, phase, ioctl slices, checks, completeness)")

    # 2. ioctl-only, timed: the fionread20 capture directory (a live capture on a kernel without function
    # tracing: 20 FIONREAD ioctls, a kernel-log line). No graph area; the ioctls are slices of their thread.
    page = os.path.join(work, "fionread20.html")
    export(nvtrace, os.path.join(src_dir, "tests/data/capture_dir/fionread20"), page)
    dom = load(exe, page, work)
    if dom.find(id="flame") or dom.find(id="flame-graph"):
        fail("fionread20: an ioctl-only report has a call-tree area")
    if not dom.find(id="no-calls"):
        fail("fionread20: no note that the report has no calls")
    sl = dom.find("g", data_kind="ioctl")
    if len(sl) != 20 or {e["attrs"]["data-label"] for e in sl} != {"FIONREAD"}:
        fail(f"fionread20: ioctl slices {[e['attrs']['data-label'] for e in sl]}")
    if len(dom.find("tbody", id="ioctl-table")) != 1 or len(
            [e for e in dom.elements if e["tag"] == "tr" and "FIONREAD" in text(e)]) < 20:
        fail("fionread20: the ioctl table lacks the 20 FIONREAD rows")
    if not [e for e in dom.find("g", data_kind="log") if "Xid" in e["attrs"].get("data-label", "")]:
        fail("fionread20: the kernel-log line (Xid 79) is not on the timeline")
    screenshot_ok(exe, page, os.path.join(work, "fionread20.png"), work)
    print("ok: fionread20 (ioctl-only capture)")

    # 3. ioctl-only, no timestamps: strace of the NVIDIA driver's ioctls (shared case intel/libva#575). Decoded
    # request names, drawn in recorded order; the truncated last line makes it incomplete.
    page = os.path.join(work, "strace.html")
    export(nvtrace, os.path.join(src_dir, "tests/data/cases/strace-nvidia-ioctl-libva.txt"), page)
    dom = load(exe, page, work)
    labels = [e["attrs"]["data-label"] for e in dom.find("g", data_kind="ioctl")]
    if sorted(labels) != sorted(["NV_ESC_ALLOC_OS_EVENT", "NV_ESC_RM_ALLOC", "NV_ESC_RM_VID_HEAP_CONTROL"] +
                                ["NV_ESC_RM_CONTROL"] * 3 + ["NV_ESC_RM_MAP_MEMORY"] * 2 + ["NV_ESC_RM_ALLOC"]):
        fail(f"strace: ioctl slices {labels}")
    if not dom.find(id="timeline-order-only"):
        fail("strace: no note that the source has no timestamps")
    comp = text(dom.find(id="completeness")[0])
    if not comp.startswith("complete: no: strace_truncated_line: 1"):
        fail(f"strace: completeness {comp!r}")
    print("ok: strace (ioctl-only, no timestamps)")

    # 4. Strings that would break out of HTML or JS: they must come out as text, and the page still runs.
    evil = '</script><img src=x onerror="document.title=1">\'"&amp;<!--\u2028'
    rep = json.loads(json.dumps(rep))
    rep["calls"][0]["function"] = evil
    rep["ioctls"][0]["name"] = evil
    rep["checks"][0]["evidence"] = evil
    rep["checks"][0]["id"] = evil
    rep["source"]["command"] = evil
    rep["graph"] = []
    hostile = os.path.join(work, "hostile-report.json")
    with open(hostile, "w") as f:
        json.dump(rep, f)
    page = os.path.join(work, "hostile.html")
    export(nvtrace, hostile, page)
    dom = load(exe, page, work)
    if dom.find("img"):
        fail("hostile: an <img> element was made from report text")
    if not dom.find("g", data_function=evil):
        fail("hostile: the frame of the hostile function name is missing or altered")
    if not [e for e in dom.find("g", data_kind="ioctl") if e["attrs"]["data-label"] == evil]:
        fail("hostile: the hostile ioctl name is missing or altered")
    if not [e for e in dom.find("tr") if e["attrs"].get("data-check") == evil and evil in text(e)]:
        fail("hostile: the hostile check is missing or altered")
    titles = dom.find("title")
    if not titles or text(titles[0]) != "nvtrace report: " + evil:
        fail(f"hostile: page title {[text(t) for t in titles[:1]]}")
    print("ok: hostile strings stay text")

    # 5. A report past the caps (docs/export.md): 5,000 call paths (2,500 roots with a child each) and 6,000
    # ioctls. The page embeds the 2,000 widest paths and the first 5,000 ioctls, says what it left out, and loads.
    big = json.loads(json.dumps(rep))
    proto_call, proto_io = big["calls"][0], big["ioctls"][0]
    calls, ioctls, t = [], [], 1000
    for i in range(2500):
        calls.append(dict(proto_call, id=2 * i + 1, parent=None, depth=0, kernel_depth=0, function=f"root_{i}",
                          entry_ns=t, duration_ns=1000 + i))
        calls.append(dict(proto_call, id=2 * i + 2, parent=2 * i + 1, depth=1, kernel_depth=1, function=f"leaf_{i}",
                          entry_ns=t + 10, duration_ns=500))
        t += 5000
    for i in range(6000):
        ioctls.append(dict(proto_io, name="NV_ESC_RM_CONTROL", enter_ns=1000 + 2000 * i, exit_ns=1900 + 2000 * i,
                           call=None, calls=[]))
    big.update(calls=calls, ioctls=ioctls, graph=[], checks=[])
    large = os.path.join(work, "large-report.json")
    with open(large, "w") as f:
        json.dump(big, f)
    page = os.path.join(work, "large.html")
    export(nvtrace, large, page)
    dom = load(exe, page, work)
    cap = text(dom.find(id="flame-cap")[0])
    if cap != ("2,000 of 5,000 call paths are in this page (the widest, cap 2,000); 3,000 paths with 3,000 calls "
               "are left out, their time stays inside their parents' frames."):
        fail(f"large: cap line {cap!r}")
    if len(dom.find("g", data_kind="ioctl")) != 5000:
        fail(f"large: {len(dom.find('g', data_kind='ioctl'))} ioctl slices, expected the cap of 5,000")
    left = text(dom.find(id="timeline-left-out")[0])
    for want in ("1,000 ioctls (past the cap of 5000)", "500 root calls (past the cap of 2000)"):
        if want not in left:
            fail(f"large: {left!r} lacks {want!r}")
    # The widest root (root_2499, 1.999 us + its leaf) is among the kept paths; the narrowest is not.
    with open(page, encoding="utf-8") as f:
        body = f.read().split('<script type="application/json" id="nvtrace-data">')[1].split("</script>")[0]
    kept = {n[1] for n in json.loads(body)["flame"]["nodes"]}
    if len(kept) != 2001 or "root_2499" not in kept or "root_500" not in kept or "root_499" in kept:
        fail(f"large: the kept paths are not the 2,000 widest roots: {len(kept)} kept")
    print("ok: a report past the caps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
