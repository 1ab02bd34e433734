// The checker on recorded reports: every outcome (pass, fail with the nearest evidence, inconclusive with what was
// missing). data/gem_mmap_vgem_6.1.report.json is the report of `nvtrace run scenarios/gem-mmap` in the qemu guest
// (Debian 6.1.0-56-amd64, real vgem; data/README.md says how to record it again); the tests check it as recorded
// and then take data away from it, as a lossy capture or another tracer mode would. The NVIDIA cases use small
// synthetic reports (no GPU run recorded yet): version alternatives, untraced RM functions, status fields.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "nvtrace/expect.hpp"
#include "nvtrace/report_io.hpp"

namespace nvtrace {
namespace {

const std::string kData = NVTRACE_CHECK_DATA_DIR;
const std::string kScenarios = NVTRACE_SCENARIOS_DIR;

Report recorded() {
    auto r = read_report_file(kData + "/gem_mmap_vgem_6.1.report.json");
    if (!r) ADD_FAILURE() << r.error().message;
    return r ? *r : Report{};
}

ExpectFile expectations(const std::string& scenario) {
    auto e = read_expectations_file(kScenarios + "/" + scenario + "/path.expect");
    if (!e) ADD_FAILURE() << e.error().message;
    return e ? *e : ExpectFile{};
}

ExpectFile inline_expect(std::string_view text) {
    auto e = parse_expectations(text, "inline.expect");
    if (!e) ADD_FAILURE() << e.error().message;
    return e ? *e : ExpectFile{};
}

std::map<std::string, Check> by_id(const std::vector<Check>& checks) {
    std::map<std::string, Check> m;
    for (const auto& c : checks)
        m[c.id] = c;
    return m;
}

std::string dump(const std::vector<Check>& checks) {
    std::ostringstream s;
    for (const auto& c : checks)
        s << "\n  " << c.result << " " << c.id << " | " << c.evidence << " | " << c.why;
    return s.str();
}

// ---- the recorded gem-mmap run ---------------------------------------------------------------------------

TEST(CheckRecorded, EveryGemMmapCheckPassesOnTheRecordedRun) {
    Report r = recorded();
    ASSERT_FALSE(r.calls.empty());
    auto checks = check_report(r, expectations("gem-mmap"));
    auto s = summarize(checks);
    EXPECT_EQ(s.pass, 16u) << dump(checks);
    EXPECT_EQ(s.fail + s.inconclusive, 0u) << dump(checks);
    auto m = by_id(checks);
    EXPECT_NE(m["mmap-path"].evidence.find("drm_gem_mmap#"), std::string::npos) << m["mmap-path"].evidence;
    EXPECT_NE(m["over-long-einval"].evidence.find("not among the"), std::string::npos);
    EXPECT_NE(m["mmap-path"].why.find("[source: DESIGN.md section 1"), std::string::npos) << m["mmap-path"].why;
}

TEST(CheckRecorded, LostEventsMakeAbsenceInconclusiveButKeepWhatWasSeen) {
    Report r = recorded();
    r.completeness.complete = false;
    r.completeness.lost_events = 7;
    auto m = by_id(check_report(r, expectations("gem-mmap")));
    for (const char* id : {"over-long-einval", "middle-einval", "offset-0-einval", "other-file-eacces",
                           "closed-bo-einval", "private-einval"}) {
        EXPECT_EQ(m[id].result, "inconclusive") << id << ": " << m[id].why;
        EXPECT_NE(m[id].why.find("data was lost (7 lost events)"), std::string::npos) << m[id].why;
    }
    // Seen is seen: chains and results that are in the data still pass.
    EXPECT_EQ(m["mmap-path"].result, "pass");
    EXPECT_EQ(m["zero-filled"].result, "pass");
}

TEST(CheckRecorded, WithoutFunctionGraphChainsAreInconclusiveAndResultsStillDecide) {
    Report r = recorded();
    r.calls.clear();
    r.source.tracer_mode = "events";
    auto m = by_id(check_report(r, expectations("gem-mmap")));
    EXPECT_EQ(m["mmap-path"].result, "inconclusive");
    EXPECT_NE(m["mmap-path"].why.find("no function_graph calls (tracer mode: events)"), std::string::npos)
        << m["mmap-path"].why;
    EXPECT_EQ(m["over-long-einval"].result, "inconclusive");
    EXPECT_EQ(m["create-dumb"].result, "inconclusive") << "calls= needs function_graph: " << m["create-dumb"].why;
    EXPECT_EQ(m["phases-in-order"].result, "pass");
}

// A report made with --calls-jsonl: its calls are in that file, and the chain checks say so (they said the function
// tracer was not used).
TEST(CheckRecorded, ReportWhoseCallsWentToCallsJsonlSaysWhereTheyAre) {
    Report r = recorded();
    r.source.calls_jsonl = "calls.jsonl";
    r.source.calls_count = r.calls.size();
    r.calls.clear();
    auto m = by_id(check_report(r, expectations("gem-mmap")));
    EXPECT_EQ(m["mmap-path"].result, "inconclusive");
    EXPECT_NE(m["mmap-path"].why.find("no calls: its "), std::string::npos) << m["mmap-path"].why;
    EXPECT_NE(m["mmap-path"].why.find(" calls were written to calls.jsonl (--calls-jsonl), not into the report"),
              std::string::npos)
        << m["mmap-path"].why;
}

TEST(CheckRecorded, AWrongResultFailsWithWhatWasSeen) {
    Report r = recorded();
    int changed = 0;
    for (auto& mk : r.markers)
        if (mk.text.rfind("nvtrace-result: mmap-private=", 0) == 0) {
            mk.text = "nvtrace-result: mmap-private=ok";
            ++changed;
        }
    ASSERT_EQ(changed, 1);
    auto m = by_id(check_report(r, expectations("gem-mmap")));
    EXPECT_EQ(m["private-einval"].result, "fail");
    EXPECT_NE(m["private-einval"].evidence.find("mmap-private=ok"), std::string::npos) << m["private-einval"].evidence;
    EXPECT_EQ(m["private-ro-einval"].result, "pass");
}

TEST(CheckRecorded, AMissingChainLinkFailsWithTheNearestEvidence) {
    Report r = recorded();
    std::erase_if(r.calls, [](const Call& c) { return c.function == "drm_gem_shmem_mmap"; });
    auto m = by_id(check_report(r, expectations("gem-mmap")));
    EXPECT_EQ(m["mmap-path"].result, "fail");
    EXPECT_NE(m["mmap-path"].evidence.find("closest: drm_gem_mmap#"), std::string::npos) << m["mmap-path"].evidence;
    EXPECT_NE(m["mmap-path"].evidence.find("> drm_gem_mmap_obj#"), std::string::npos) << m["mmap-path"].evidence;
    EXPECT_NE(m["mmap-path"].evidence.find("no drm_gem_shmem_mmap directly below it"), std::string::npos)
        << m["mmap-path"].evidence;
    EXPECT_NE(m["mmap-path"].why.find("expected line "), std::string::npos) << m["mmap-path"].why;
}

TEST(CheckRecorded, AbsenceOfAFunctionSeenNowhereIsInconclusive) {
    Report r = recorded();
    std::erase_if(r.calls, [](const Call& c) { return c.function == "drm_gem_mmap_obj"; });
    auto m = by_id(check_report(r, expectations("gem-mmap")));
    EXPECT_EQ(m["over-long-einval"].result, "inconclusive");
    EXPECT_NE(m["over-long-einval"].why.find("drm_gem_mmap_obj appears nowhere in this report"), std::string::npos)
        << m["over-long-einval"].why;
}

TEST(CheckRecorded, APresentFunctionFailsAnAbsentRule) {
    auto m = by_id(check_report(recorded(), inline_expect("check no-faults\n  phase mmap-shared\n"
                                                          "  absent call drm_gem_shmem_fault\n")));
    EXPECT_EQ(m["no-faults"].result, "fail");
    EXPECT_NE(m["no-faults"].evidence.find("seen "), std::string::npos) << m["no-faults"].evidence;
    EXPECT_NE(m["no-faults"].evidence.find("drm_gem_shmem_fault#"), std::string::npos);
}

TEST(CheckRecorded, AnUnmarkedPhaseIsInconclusiveAndBreaksThePhaseOrder) {
    Report r = recorded();
    std::erase_if(r.markers, [](const MarkerEntry& mk) { return mk.text == "nvtrace-phase: mmap-middle"; });
    auto m = by_id(check_report(r, expectations("gem-mmap")));
    EXPECT_EQ(m["middle-einval"].result, "inconclusive");
    EXPECT_NE(m["middle-einval"].why.find("phase mmap-middle was never marked"), std::string::npos);
    EXPECT_EQ(m["phases-in-order"].result, "fail");
    EXPECT_NE(m["phases-in-order"].evidence.find("no phase mmap-middle in order"), std::string::npos);
}

// check read a phase marker from its first line only: one write ending the phase before and beginning
// mmap-middle ("nvtrace-phase-end\nnvtrace-phase: mmap-middle\n", one print event) left mmap-middle "never
// marked" and failed the phase order, though the report's calls were labelled mmap-middle from that write.
TEST(CheckRecorded, APhaseBegunOnTheSecondLineOfAMarkerIsMarked) {
    Report r = recorded();
    bool changed = false;
    for (auto& mk : r.markers)
        if (mk.text == "nvtrace-phase: mmap-middle") {
            mk.text = "nvtrace-phase-end\nnvtrace-phase: mmap-middle \t\r\n";
            changed = true;
        }
    ASSERT_TRUE(changed);
    auto m = by_id(check_report(r, expectations("gem-mmap")));
    EXPECT_EQ(m["middle-einval"].result, "pass") << m["middle-einval"].why;
    EXPECT_EQ(m["phases-in-order"].result, "pass") << m["phases-in-order"].evidence;
}

TEST(CheckRecorded, IoctlFactsSeeNamesReturnValuesAndTheCallsInside) {
    auto m = by_id(check_report(recorded(), inline_expect(R"(check good
  ioctls DRM_IOCTL_MODE_CREATE_DUMB, DRM_IOCTL_MODE_MAP_DUMB, DRM_IOCTL_MODE_DESTROY_DUMB
  ioctl DRM_IOCTL_MODE_MAP_DUMB ret=0 calls=drm_gem_dumb_map_offset fd=/dev/dri/card
check wrong-order
  ioctls DRM_IOCTL_MODE_DESTROY_DUMB, DRM_IOCTL_MODE_CREATE_DUMB, DRM_IOCTL_MODE_MAP_DUMB
check wrong-ret
  ioctl DRM_IOCTL_MODE_MAP_DUMB ret=EINVAL
check never
  absent ioctl DRM_IOCTL_GEM_CLOSE
)")));
    EXPECT_EQ(m["good"].result, "pass") << m["good"].why << " | " << m["good"].evidence;
    EXPECT_EQ(m["wrong-order"].result, "fail");
    EXPECT_NE(
        m["wrong-order"].evidence.find("found DRM_IOCTL_MODE_DESTROY_DUMB@6; no DRM_IOCTL_MODE_CREATE_DUMB after that"),
        std::string::npos)
        << m["wrong-order"].evidence;
    EXPECT_EQ(m["wrong-ret"].result, "fail");
    EXPECT_NE(m["wrong-ret"].evidence.find("ret=0"), std::string::npos) << m["wrong-ret"].evidence;
    EXPECT_EQ(m["never"].result, "pass") << m["never"].why;
}

// ---- synthetic NVIDIA reports --------------------------------------------------------------------------------

struct NvReport {
    std::optional<std::string> driver = "580.65.06";
    bool frontend = false;  // <=535 call chain
    bool with_calls = true;
    std::optional<std::string> status = std::nullopt;
    bool bar_overlap_line = false;

    Report build() const {
        Report r;
        r.source.kind = "live", r.source.tracer_mode = "function_graph (top level)";
        r.environment.kernel = "6.18.0-1-amd64", r.environment.nvidia_driver_flavour = "open";
        if (driver) r.environment.modules.emplace()["nvidia"].version = *driver;
        r.markers = {{1, 10, "nvtrace-phase: cudaHostRegister"},
                     {9, 10, "nvtrace-result: cudaHostRegister=cudaErrorInvalidValue"},
                     {10, 10, "nvtrace-phase-end"}};
        std::uint64_t id = 1;
        auto call = [&](const char* fn, std::optional<std::uint64_t> parent, int depth) {
            Call c;
            c.id = id++;
            c.parent = parent;
            c.depth = depth;
            c.function = fn;
            c.entry_ns = 2 + c.id;
            c.duration_ns = 1;
            c.phase = "cudaHostRegister";
            r.calls.push_back(c);
            return c.id;
        };
        std::uint64_t root = 0;
        if (with_calls) {
            std::uint64_t ioctl_fn = 0;
            if (frontend) {
                root = call("nvidia_frontend_unlocked_ioctl", std::nullopt, 0);
                ioctl_fn = call("nvidia_ioctl", call("nvidia_frontend_ioctl", root, 1), 2);
            } else {
                root = call("nvidia_unlocked_ioctl", std::nullopt, 0);
                ioctl_fn = call("nvidia_ioctl", root, 1);
            }
            call("os_lock_user_pages", ioctl_fn, 2);
            call("os_lookup_user_io_memory", ioctl_fn, 2);
        }
        IoctlRecord io;
        io.fd_path = "/dev/nvidia0";
        io.cmd = 0xC0384627;
        io.name = "NV_ESC_RM_ALLOC_MEMORY";
        io.hclass = 0x71;
        io.status = status;
        io.ret = 0;
        io.enter_ns = 2;
        io.exit_ns = 8;
        if (root) io.calls = {root};
        io.phase = "cudaHostRegister";
        r.ioctls.push_back(io);
        if (bar_overlap_line) {
            KernelLogMessage k;
            k.source = "NVRM";
            k.kind = "bar_overlap";
            // The two wordings of nvidia-driver.md 6.2: osmemdesc.c up to 590.48.01, and from 595.44.02.
            bool new_wording = driver && driver->rfind("595", 0) == 0;
            k.text = new_wording
                         ? "NVRM: osCheckGpuBarsOverlapAddrRange(): phys range 0x..-0x.. overlaps with FB or GPU BAR2"
                         : "NVRM: osCreateOsDescriptorFromIoMemory(): phys range 0x..-0x.. overlaps with GPU BARs";
            r.kernel_log.push_back(k);
        }
        return r;
    }
};

TEST(CheckNvidia, HostRegisterBarOnA580DriverWithoutUserSideDecoding) {
    auto m = by_id(check_report(NvReport{}.build(), expectations("hostregister-bar")));
    EXPECT_EQ(m["register-fails-invalid-argument"].result, "pass");
    EXPECT_EQ(m["rm-ioctl-entry"].result, "pass") << m["rm-ioctl-entry"].why;
    EXPECT_EQ(m["io-memory-path"].result, "pass") << m["io-memory-path"].evidence;
    // The status is in the parameter struct: without user-side decoding it is unknown, never a pass.
    EXPECT_EQ(m["rm-status-invalid-address"].result, "inconclusive");
    EXPECT_NE(m["rm-status-invalid-address"].why.find("lack status"), std::string::npos)
        << m["rm-status-invalid-address"].why;
    EXPECT_EQ(m["no-permission-problem"].result, "inconclusive");
    // The decision is made in the RM core: visible part seen, the rest cannot be.
    EXPECT_EQ(m["bar-overlap-check"].result, "inconclusive");
    EXPECT_NE(m["bar-overlap-check"].why.find("ftrace cannot see osCheckGpuBarsOverlapAddrRange"), std::string::npos)
        << m["bar-overlap-check"].why;
    // Every driver version logs the overlap (nvidia-driver.md 5(d) step 4, as corrected): no line is a fail.
    EXPECT_EQ(m["bar-overlap-logged"].result, "fail");
}

TEST(CheckNvidia, StatusFromTheParameterStructDecides) {
    NvReport n;
    n.status = "NV_ERR_INVALID_ADDRESS";
    auto m = by_id(check_report(n.build(), expectations("hostregister-bar")));
    EXPECT_EQ(m["rm-status-invalid-address"].result, "pass");
    EXPECT_EQ(m["no-permission-problem"].result, "pass");
    n.status = "0x1e";  // numbers and names compare by value
    EXPECT_EQ(by_id(check_report(n.build(), expectations("hostregister-bar")))["rm-status-invalid-address"].result,
              "pass");
    n.status = "NV_ERR_INSUFFICIENT_PERMISSIONS";
    m = by_id(check_report(n.build(), expectations("hostregister-bar")));
    EXPECT_EQ(m["rm-status-invalid-address"].result, "fail");
    EXPECT_NE(m["rm-status-invalid-address"].evidence.find("status=NV_ERR_INSUFFICIENT_PERMISSIONS"), std::string::npos)
        << m["rm-status-invalid-address"].evidence;
    EXPECT_EQ(m["no-permission-problem"].result, "fail");
}

// The BAR-overlap line exists in every driver version: printed by osCreateOsDescriptorFromIoMemory up to 590.48.01
// and by osCheckGpuBarsOverlapAddrRange from 595.44.02 (nvidia-driver.md 5(d) step 4, corrected). The hostregister-bar
// expectation once gated it on >= 595.44.02, so a 580 run without the line was inconclusive instead of failing.
TEST(CheckNvidia, TheBarOverlapLineIsRequiredInEveryDriverVersion) {
    for (std::optional<std::string> driver :
         {std::optional<std::string>("535.104.05"), std::optional<std::string>("580.159.04"),
          std::optional<std::string>("590.48.01"), std::optional<std::string>("595.45.04"),
          std::optional<std::string>()}) {
        NvReport n;
        n.driver = driver;
        n.frontend = driver && driver->rfind("535", 0) == 0;
        auto m = by_id(check_report(n.build(), expectations("hostregister-bar")));
        EXPECT_EQ(m["bar-overlap-logged"].result, "fail") << driver.value_or("unknown") << m["bar-overlap-logged"].why;
        EXPECT_NE(m["bar-overlap-logged"].evidence.find("no bar_overlap message"), std::string::npos)
            << m["bar-overlap-logged"].evidence;
        n.bar_overlap_line = true;
        EXPECT_EQ(by_id(check_report(n.build(), expectations("hostregister-bar")))["bar-overlap-logged"].result, "pass")
            << driver.value_or("unknown");
    }
}

// nvidia_ioctl inlined into nvidia_unlocked_ioctl (possible from 545.23.06): the run records it as not traceable
// (environment.not_traceable, from available_filter_functions and /proc/kallsyms), and no check of the documented
// path fails for it: a chain through it is inconclusive with that reason, or its nvidia_unlocked_ioctl alternative
// passes.
TEST(CheckNvidia, AnInlinedNvidiaIoctlIsInconclusiveOrAnAlternativeNeverAFail) {
    NvReport n;
    n.driver = "580.159.04";
    Report r = n.build();
    std::uint64_t ioctl_id = 0;
    for (const Call& c : r.calls)
        if (c.function == "nvidia_ioctl") ioctl_id = c.id;
    ASSERT_NE(ioctl_id, 0u);
    for (Call& c : r.calls)
        if (c.parent == ioctl_id) c.parent = r.calls.front().id;  // its callees hang below nvidia_unlocked_ioctl
    std::erase_if(r.calls, [](const Call& c) { return c.function == "nvidia_ioctl"; });
    r.environment.not_traceable = {
        {{"nvidia_ioctl",
          "not in available_filter_functions nor /proc/kallsyms: inlined in this driver version, not "
          "built, or its module is not loaded"}}};
    for (const char* scenario : {"hostregister-bar", "hostregister"}) {
        auto checks = check_report(r, expectations(scenario));
        // The synthetic report is hostregister-bar's run: the result and kernel-log checks judge other things.
        for (const auto& c : checks) {
            if (c.id == "register-succeeds" || c.id == "bar-overlap-logged") continue;
            EXPECT_NE(c.result, "fail") << scenario << dump(checks);
        }
        auto m = by_id(checks);
        EXPECT_EQ(m["rm-ioctl-entry"].result, "inconclusive") << m["rm-ioctl-entry"].why;
        EXPECT_NE(m["rm-ioctl-entry"].why.find("ftrace cannot see nvidia_ioctl: not in available_filter_functions"),
                  std::string::npos)
            << m["rm-ioctl-entry"].why;
    }
    auto m = by_id(check_report(r, expectations("hostregister-bar")));
    EXPECT_EQ(m["io-memory-path"].result, "pass") << m["io-memory-path"].why;
    EXPECT_NE(m["io-memory-path"].evidence.find("nvidia_unlocked_ioctl#"), std::string::npos)
        << m["io-memory-path"].evidence;
    // Without the run's record the same report fails: nothing says nvidia_ioctl could not be traced.
    r.environment.not_traceable.reset();
    EXPECT_EQ(by_id(check_report(r, expectations("hostregister-bar")))["rm-ioctl-entry"].result, "fail");
}

// A scenario run without the graph because the kernel cannot record it: the call-graph checks say why.
TEST(CheckNvidia, TheRunsReasonForNoGraphIsTheWhyOfTheChainChecks) {
    NvReport n;
    n.with_calls = false;
    Report r = n.build();
    r.source.tracer_mode = "events";
    r.environment.function_graph =
        "function_graph not available: this kernel does not offer it (available_tracers: function nop)";
    auto m = by_id(check_report(r, expectations("hostregister-bar")));
    for (const char* id : {"rm-ioctl-entry", "io-memory-path", "bar-overlap-check"}) {
        EXPECT_EQ(m[id].result, "inconclusive") << id;
        EXPECT_NE(m[id].why.find("no function_graph calls: function_graph not available: this kernel does not "
                                 "offer it (available_tracers: function nop)"),
                  std::string::npos)
            << m[id].why;
    }
    EXPECT_EQ(m["register-fails-invalid-argument"].result, "pass");
}

TEST(CheckNvidia, ChainAlternativesFollowTheDriverVersion) {
    NvReport n;
    n.driver = "535.104.05";
    n.frontend = true;
    EXPECT_EQ(by_id(check_report(n.build(), expectations("hostregister-bar")))["rm-ioctl-entry"].result, "pass");
    n.frontend = false;  // a 535 driver without the nv-frontend frames: the applicable alternative is missing
    auto m = by_id(check_report(n.build(), expectations("hostregister-bar")));
    EXPECT_EQ(m["rm-ioctl-entry"].result, "fail");
    EXPECT_NE(m["rm-ioctl-entry"].evidence.find("nvidia_frontend_unlocked_ioctl is never called"), std::string::npos)
        << m["rm-ioctl-entry"].evidence;
    n.driver = "580.65.06";
    n.frontend = true;  // a >=545 driver showing nv-frontend frames contradicts the documented path
    EXPECT_EQ(by_id(check_report(n.build(), expectations("hostregister-bar")))["rm-ioctl-entry"].result, "fail");
}

TEST(CheckNvidia, EventsOnlyCaptureOnAGpuMachine) {
    NvReport n;
    n.with_calls = false;
    Report r = n.build();
    r.source.tracer_mode = "events";
    auto m = by_id(check_report(r, expectations("hostregister-bar")));
    EXPECT_EQ(m["register-fails-invalid-argument"].result, "pass");
    for (const char* id : {"rm-ioctl-entry", "io-memory-path", "bar-overlap-check"}) {
        EXPECT_EQ(m[id].result, "inconclusive") << id;
        EXPECT_NE(m[id].why.find("no function_graph calls (tracer mode: events)"), std::string::npos) << m[id].why;
    }
}

TEST(CheckNvidia, KernelLogFieldsCompareByValue) {
    Report r = NvReport{}.build();
    KernelLogMessage k;
    k.kind = "xid";
    k.fields = {{"xid", "79"}, {"pci", "0000:01:00"}};
    k.text = "NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.";
    r.kernel_log.push_back(k);
    auto m = by_id(check_report(r, inline_expect("check x31\n  log xid xid=31\ncheck x79\n  log xid xid=0x4f\n"
                                                 "check none\n  absent log fallen_off_bus\n")));
    EXPECT_EQ(m["x31"].result, "fail");
    EXPECT_NE(m["x31"].evidence.find("1 xid message(s), none with these fields"), std::string::npos)
        << m["x31"].evidence;
    EXPECT_EQ(m["x79"].result, "pass");
    EXPECT_EQ(m["none"].result, "pass");
}

// The `GPU ...: GPU has fallen off the bus.` line printed with an Xid 79 is joined to the Xid (kind xid, field
// fallen_off_bus=true) and is no message of its own: "absent log fallen_off_bus" passed on a log where the GPU fell
// off the bus, and "log fallen_off_bus" failed.
TEST(CheckNvidia, FallenOffTheBusJoinedToAnXidIsAFallenOffBusMessage) {
    Report r = NvReport{}.build();
    r.source.kmsg = "dmesg.log";
    KernelLogMessage k;
    k.kind = "xid";
    k.fields = {{"xid", "79"}, {"pci", "0000:b3:00"}, {"device", "0000:b3:00.0"}, {"fallen_off_bus", "true"}};
    k.text = "NVRM: Xid (PCI:0000:b3:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.";
    r.kernel_log.push_back(k);
    const ExpectFile e = inline_expect(
        "check gone\n  absent log fallen_off_bus\ncheck fell\n  log fallen_off_bus pci=0000:b3:00.0\n"
        "check other-gpu\n  log fallen_off_bus pci=0000:17:00.0\ncheck short\n  log fallen_off_bus pci=0000:b3:00\n");
    auto m = by_id(check_report(r, e));
    EXPECT_EQ(m["gone"].result, "fail");
    EXPECT_NE(m["gone"].evidence.find("Xid (PCI:0000:b3:00): 79"), std::string::npos) << m["gone"].evidence;
    EXPECT_EQ(m["fell"].result, "pass") << m["fell"].evidence;
    EXPECT_EQ(m["other-gpu"].result, "fail");
    EXPECT_EQ(m["short"].result, "pass") << m["short"].evidence;  // the Xid line's own form of the address
    r.kernel_log[0].fields.erase("fallen_off_bus");  // an Xid without that line: not a fallen-off-bus message
    m = by_id(check_report(r, e));
    EXPECT_EQ(m["gone"].result, "pass") << m["gone"].evidence;
    EXPECT_EQ(m["fell"].result, "fail");
}

// An Xid line names its GPU as "PCI:0000:01:00" (bus and device, no function). `log fallen_off_bus
// pci=0000:01:00.0`, the address nvidia-smi and lspci -D print, failed on a complete log with that line, because
// the strings differ. Addresses compare by domain, bus and device, and by function when both give one; nvidia-smi's
// 8-digit domain and lspci's address without a domain are the same address.
TEST(CheckNvidia, PciAddressWithAFunctionMatchesAnXidLineThatNamesOnlyTheDevice) {
    Report r = NvReport{}.build();
    r.source.kmsg = "dmesg.log";
    KernelLogMessage k;
    k.kind = "xid";
    k.fields = {{"xid", "79"}, {"pci", "0000:01:00"}, {"fallen_off_bus", "true"}};
    k.text = "NVRM: Xid (PCI:0000:01:00): 79, pid=1, GPU has fallen off the bus.";
    r.kernel_log.push_back(k);
    auto m = by_id(check_report(r, inline_expect("check full\n  log fallen_off_bus pci=0000:01:00.0\n"
                                                 "check smi\n  log xid pci=00000000:01:00.0\n"
                                                 "check lspci\n  log xid pci=01:00.0\n"
                                                 "check audio\n  log xid pci=0000:01:00.1\n"
                                                 "check other\n  log xid pci=0000:02:00.0\n"
                                                 "check domain\n  log xid pci=0001:01:00.0\n")));
    EXPECT_EQ(m["full"].result, "pass") << m["full"].evidence;
    EXPECT_EQ(m["smi"].result, "pass") << m["smi"].evidence;
    EXPECT_EQ(m["lspci"].result, "pass") << m["lspci"].evidence;
    EXPECT_EQ(m["audio"].result, "pass") << m["audio"].evidence;  // the line does not say which function
    EXPECT_EQ(m["other"].result, "fail");
    EXPECT_EQ(m["domain"].result, "fail");
    r.kernel_log[0].fields["pci"] = "0000:01:00.0";  // a line that names the function: compared
    m = by_id(check_report(r, inline_expect("check audio\n  log xid pci=0000:01:00.1\ncheck dev\n  log xid "
                                            "pci=0000:01:00\n")));
    EXPECT_EQ(m["audio"].result, "fail");
    EXPECT_EQ(m["dev"].result, "pass") << m["dev"].evidence;
    // device= names the same address (fresh user: it failed on every Xid without a joined bus line).
    r.kernel_log[0].fields["pci"] = "0000:01:00";
    m = by_id(check_report(r, inline_expect("check dev\n  log xid device=0000:01:00.0\n")));
    EXPECT_EQ(m["dev"].result, "pass") << m["dev"].evidence;
    // With the bus line joined, its full address is the one compared (fresh user: pci=...:00.1 passed through the
    // Xid's own address, which names no function).
    r.kernel_log[0].fields["device"] = "0000:01:00.0";
    m = by_id(check_report(r, inline_expect("check fn1\n  log fallen_off_bus pci=0000:01:00.1\ncheck fn0\n  log "
                                            "fallen_off_bus pci=0000:01:00.0\ncheck dev\n  log xid device=01:00\n")));
    EXPECT_EQ(m["fn1"].result, "fail");
    EXPECT_EQ(m["fn0"].result, "pass") << m["fn0"].evidence;
    EXPECT_EQ(m["dev"].result, "pass") << m["dev"].evidence;
}

// `nvtrace report trace.txt --kmsg dmesg.log` with a log that holds no message: "absent log xid" was inconclusive,
// "the report has no kernel log (not a live capture, no --kmsg)", though --kmsg was given and read.
TEST(CheckNvidia, AnEmptyKernelLogThatWasReadIsEvidenceOfAbsence) {
    Report r = NvReport{}.build();
    r.source.kind = "file";
    r.source.format = "fgraph-text";
    const ExpectFile e = inline_expect("check none\n  absent log xid\n");
    auto m = by_id(check_report(r, e));
    EXPECT_EQ(m["none"].result, "inconclusive");  // no log was read: nothing to tell absence from
    EXPECT_NE(m["none"].why.find("no --kmsg"), std::string::npos) << m["none"].why;
    r.source.kmsg = "dmesg.log";
    m = by_id(check_report(r, e));
    EXPECT_EQ(m["none"].result, "pass") << m["none"].why;
    r.source.kmsg.reset();
    r.source.format = "kernel-log";  // the input itself was the log
    m = by_id(check_report(r, e));
    EXPECT_EQ(m["none"].result, "pass") << m["none"].why;
}

TEST(CheckNvidia, MissingResultMarkerIsInconclusive) {
    Report r = NvReport{}.build();
    r.markers.erase(r.markers.begin() + 1);
    auto m = by_id(check_report(r, expectations("hostregister-bar")));
    EXPECT_EQ(m["register-fails-invalid-argument"].result, "inconclusive");
    EXPECT_NE(m["register-fails-invalid-argument"].why.find("wrote no \"nvtrace-result: cudaHostRegister=...\""),
              std::string::npos)
        << m["register-fails-invalid-argument"].why;
}

TEST(CheckEnvironment, VersionsComeFromModulesTheBannerAndTheKernelRelease) {
    Report r;
    r.environment.kernel = "6.1.0-56-amd64";
    r.environment.nvidia_driver_banner =
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  (dvs-builder@U22)";
    r.environment.nvidia_driver_flavour = "open";
    auto env = check_environment(r);
    ASSERT_TRUE(env.kernel && env.driver && env.flavour);
    EXPECT_EQ(*env.kernel, *parse_driver_version("6.1.0"));
    EXPECT_EQ(*env.driver, *parse_driver_version("580.95.05"));
    EXPECT_EQ(*env.flavour, "open");
    EXPECT_FALSE(check_environment(Report{}).driver);
}

// ---- compiler clones ------------------------------------------------------------------------------------

// nvidia_unlocked_ioctl > nvidia_ioctl<suffix> > rm_ioctl<suffix>, as a driver built by another compiler (or with
// other flags) shows them.
Report clone_report(const std::string& suffix) {
    Report r;
    r.source.kind = "file";
    auto call = [&](std::string fn, std::optional<std::uint64_t> parent, int depth) {
        Call c;
        c.id = r.calls.size() + 1;
        c.parent = parent;
        c.cpu = 0;
        c.pid = 7;
        c.depth = depth;
        c.function = std::move(fn);
        c.entry_ns = 100 + c.id;
        c.duration_ns = 10;
        r.calls.push_back(c);
        return c.id;
    };
    auto root = call("nvidia_unlocked_ioctl", std::nullopt, 0);
    auto mid = call("nvidia_ioctl" + suffix, root, 1);
    call("rm_ioctl" + suffix, mid, 2);
    return r;
}

// `check` compared function names as printed, so a driver rebuilt with GCC's clones (gcc/ipa-sra.cc ".isra.N",
// ipa-cp.cc ".constprop.N", ipa-split.cc ".part.N", hot/cold partitioning ".cold", in combination as
// ".constprop.0.isra.0" or ".part.0.cold") or clang's ThinLTO promotion (".llvm.<hash>") failed chain and call
// checks that name the function, while diff and fleet compared the same names without their suffixes
// (normalise_symbol). An expectation's name matches every clone of its base function, a suffixed name too.
TEST(CheckClones, FunctionsNamedByTheirBaseMatchTheirCompilerClones) {
    const std::string expect =
        "untraced os_alloc_mem.part.0 -- inlined in this build\n"
        "check chain\n  chain nvidia_unlocked_ioctl > nvidia_ioctl >> rm_ioctl\n"
        "check called\n  call rm_ioctl\n"
        "check not-absent\n  absent call nvidia_ioctl\n"
        "check named-clone\n  chain nvidia_ioctl.isra.7 > rm_ioctl.cold\n"
        "check untraced\n  chain nvidia_unlocked_ioctl > os_alloc_mem\n";
    for (const char* suffix : {"", ".isra.0", ".constprop.0", ".part.0", ".cold", ".constprop.0.isra.0", ".part.0.cold",
                               ".isra.1", ".llvm.6081258432745395418"}) {
        SCOPED_TRACE(suffix);
        auto m = by_id(check_report(clone_report(suffix), inline_expect(expect)));
        EXPECT_EQ(m["chain"].result, "pass") << m["chain"].evidence << " | " << m["chain"].why;
        EXPECT_EQ(m["called"].result, "pass") << m["called"].evidence << " | " << m["called"].why;
        EXPECT_EQ(m["not-absent"].result, "fail") << m["not-absent"].evidence;
        EXPECT_NE(m["not-absent"].evidence.find("nvidia_ioctl" + std::string(suffix) + "#2"), std::string::npos)
            << m["not-absent"].evidence;  // the evidence names the call as the trace does
        EXPECT_EQ(m["named-clone"].result, "pass") << m["named-clone"].evidence << " | " << m["named-clone"].why;
        EXPECT_EQ(m["untraced"].result, "inconclusive") << m["untraced"].why;
    }
    // Not a clone suffix: another function (a ".N" alone, a name that only starts like it).
    for (const char* other : {".5", "_v2", ".isra_0"}) {
        SCOPED_TRACE(other);
        auto m = by_id(check_report(clone_report(other), inline_expect(expect)));
        EXPECT_EQ(m["chain"].result, "fail") << m["chain"].evidence;
        EXPECT_EQ(m["not-absent"].result, "inconclusive") << m["not-absent"].why;
        EXPECT_NE(m["not-absent"].why.find("nvidia_ioctl appears nowhere in this report"), std::string::npos)
            << m["not-absent"].why;
    }
}

// An ioctl whose exit was lost (IoctlCollector::loss) has no ret: check said the RM status and hClass need
// user-side decoding, which is not why a TCGETS lacks its result. Each missing field now gives its own cause.
TEST(CheckIoctl, IoctlWithoutItsExitSaysRetIsUnknownBecauseTheExitWasNotRecorded) {
    Report r;
    IoctlRecord io;
    io.fd_path = "/dev/pts/0";
    io.cmd = 0x5401;
    io.name = "TCGETS";
    io.enter_ns = 10;  // ret, exit_ns null: the exit lay in lost events
    r.ioctls.push_back(io);
    auto m = by_id(check_report(r, inline_expect("check ret\n  ioctl TCGETS ret=0\n")));
    ASSERT_EQ(m.count("ret"), 1u);
    EXPECT_EQ(m["ret"].result, "inconclusive");
    EXPECT_NE(m["ret"].why.find("lack ret"), std::string::npos) << m["ret"].why;
    EXPECT_NE(m["ret"].why.find("exit, which was not recorded"), std::string::npos) << m["ret"].why;
    EXPECT_EQ(m["ret"].why.find("user-side decoding"), std::string::npos) << m["ret"].why;
    // A status that is missing still names its own cause.
    m = by_id(check_report(r, inline_expect("check st\n  ioctl TCGETS status=NV_OK\n")));
    EXPECT_NE(m["st"].why.find("need user-side decoding"), std::string::npos) << m["st"].why;
    EXPECT_EQ(m["st"].why.find("exit, which was not recorded"), std::string::npos) << m["st"].why;
}

}  // namespace
}  // namespace nvtrace
