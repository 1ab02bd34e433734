// report_example [--broken]: prints a report with every section populated (a nested tree, an orphan
// return, an unclosed call, an ioctl linked to its calls, a kernel-log line attached to a call, phases, an API
// call from a uprobe pair with the ioctl inside it),
// built by the real analysis from a synthetic event stream. --broken removes a required field, so the
// schema test can show that validation fails when it should.
#include <cstring>
#include <iostream>

#include <nlohmann/json.hpp>

#include "../../analyze/json_values.hpp"
#include "nvtrace/report.hpp"

using namespace nvtrace;

int main(int argc, char** argv) {
    EventStream s;
    s.comms[100] = "scenario";
    auto ev = [](std::uint64_t ts, EventBody b) { return Event{ts, 1, 100, false, std::move(b)}; };
    FuncEntry e1{0xffffffffc0001000, "nvidia_unlocked_ioctl", "nvidia", 0};
    FuncEntry e2{0xffffffffc0002000, "nvidia_ioctl", "nvidia", 1};
    FuncExit x2{0xffffffffc0002000, "nvidia_ioctl", "nvidia", 1, 1200, 1800, std::nullopt, 0, 0};
    FuncExit x1{0xffffffffc0001000, "nvidia_unlocked_ioctl", "nvidia", 0, 1100, 2000, std::nullopt, 0, 0};
    FuncExit orphan{0xffffffffc0003000, "uvm_ioctl", "nvidia_uvm", 0, 2500, 2600, std::nullopt, 0, -22};
    FuncEntry open{0xffffffffc0004000, "nv_alloc_pages", "nvidia", 0};
    s.events = {
        ev(1000, Marker{"nvtrace-phase: cudaMalloc"}),
        ev(1040, Marker{"nvtrace-ioctl enter fd=5 dev=/dev/nvidiactl cmd=0xc020462a name=NV_ESC_RM_CONTROL "
                        "ctrl=0x20800110"}),
        // A uprobe pair around the ioctl (kernel/trace/trace_uprobe.c print_uprobe_event): api_calls.
        ev(1045, OtherEvent{"nvtrace_100", "cuMemAlloc_v2", "(0x7f0000001000) dptr=0x7ffd0000 bytesize=16777216"}),
        ev(1050, IoctlEnter{5, 0xc020462a, 0x7ffd0000}), ev(1100, e1), ev(1200, e2),
        ev(1300, ConsoleLine{"NVRM: Xid (PCI:0000:01:00): 13, pid=100, name=scenario, Graphics Exception"}),
        ev(1800, x2), ev(2000, x1), ev(2100, IoctlExit{0}),
        ev(2150, OtherEvent{"nvtrace_100", "cuMemAlloc_v2__return", "(0x7f0000001000 <- 0x7f0000002000) ret=0"}),
        ev(2600, orphan), ev(2700, Marker{"nvtrace-phase-end"}), ev(2800, open)};
    s.buffer_stats.push_back({1, "instance", 0, 0});
    s.kmsg.push_back({"6,10,2,-;nvidia-uvm: Loaded the UVM driver, major device number 511."});
    s.kmsg_clock = KmsgClockOffset{"local", 0, 0, "same_clock"};
    Report r = build_report(s);
    r.source.kind = "example";
    r.source_links = SourceLinks{"/src/open-gpu-kernel-modules",
                                 2,
                                 {{"nvidia_ioctl", "nvidia_ioctl", {{"kernel-open/nvidia/nv.c", 2400}}}},
                                 {{"nv_alloc_pages", "nv_alloc_pages", {{"a.c", 10}, {"b.c", 20}}}},
                                 {"uvm_ioctl"}};
    r.checks.push_back({"ioctl-path", "inconclusive", "", "example"});
    nlohmann::json j = to_json(r);
    if (argc > 1 && std::strcmp(argv[1], "--broken") == 0) j["calls"][0].erase("duration_ns");
    std::cout << j.dump(1) << "\n";
    return 0;
}
