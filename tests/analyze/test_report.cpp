#include <nlohmann/json.hpp>
#include "../../analyze/json_values.hpp"

#include "nvtrace/report.hpp"

#include <sstream>

#include <gtest/gtest.h>

#include "event_builders.hpp"
#include "nvtrace/import.hpp"

using namespace nvtrace;
using namespace nvtrace::test;

TEST(Report, CompleteStreamGivesACompleteReportWithEverySection) {
    EventStream s;
    s.comms[9] = "prog";
    s.events = {Event{1, 0, 9, false, Marker{"nvtrace-phase: alloc"}}, entry(2, 9, "f", 0), exit_(3, 9, "f", 0, 2, 3),
                Event{4, 0, 9, false, Marker{"nvtrace-phase-end"}},    entry(5, 9, "g", 0), exit_(6, 9, "g", 0, 5, 6)};
    s.kmsg.push_back({"11,5,1000,-;NVRM: Xid (PCI:0000:01:00): 79, pid=9, GPU has fallen off the bus."});
    Report r = build_report(s);
    EXPECT_TRUE(r.completeness.complete);
    ASSERT_EQ(r.calls.size(), 2u);
    EXPECT_EQ(r.calls[0].phase, "alloc");
    EXPECT_FALSE(r.calls[1].phase.has_value());
    ASSERT_EQ(r.kernel_log.size(), 1u);
    EXPECT_EQ(r.kernel_log[0].kind, "xid");
    EXPECT_EQ(r.kernel_log[0].ts_ns, 1000000u);
    EXPECT_EQ(r.kernel_log[0].level, 3);
    EXPECT_EQ(r.markers.size(), 2u);

    nlohmann::json j = to_json(r);
    EXPECT_EQ(j["schema"], "nvtrace.report/1");
    for (const char* k : {"source", "environment", "completeness", "calls", "graph", "ioctls", "kernel_log", "checks"})
        EXPECT_TRUE(j.contains(k)) << k;
    EXPECT_TRUE(j["calls"][0]["parent"].is_null());
    EXPECT_EQ(j["calls"][0]["duration_ns"], 1);
    EXPECT_EQ(j["completeness"]["complete"], true);
}

TEST(Report, OverrunLostMarksAndOrphansMakeItIncompleteWithReasons) {
    EventStream s;
    s.events = {Event{1, 0, 9, false, LostEvents{}}, exit_(2, 9, "f", 0, 1, 2)};
    s.buffer_stats.push_back({0, "instance", 17, 0});
    Report r = build_report(s);
    EXPECT_FALSE(r.completeness.complete);
    EXPECT_EQ(r.completeness.overruns, 17u);
    EXPECT_EQ(r.completeness.orphan_returns(), 1u);
    EXPECT_EQ(r.completeness.reasons.size(), 3u);
    bool has_orphan_diag = false;
    for (const auto& d : r.completeness.diagnostics)
        has_orphan_diag |= d.name == "orphan_return" && d.count == 1;
    EXPECT_TRUE(has_orphan_diag);
}

TEST(Report, KernelLogLineFromTheBufferIsAttachedToTheRunningCall) {
    EventStream s;
    s.events = {entry(10, 9, "nv_ioctl", 0),
                Event{15, 0, 9, false, ConsoleLine{"NVRM: GPU 0000:01:00.0: GPU has fallen off the bus."}},
                exit_(20, 9, "nv_ioctl", 0, 10, 20)};
    s.kmsg.push_back({"3,7,15,-;NVRM: GPU 0000:01:00.0: GPU has fallen off the bus."});
    Report r = build_report(s);
    ASSERT_EQ(r.kernel_log.size(), 1u);  // the /dev/kmsg copy of the same line is not repeated
    EXPECT_EQ(r.kernel_log[0].kind, "fallen_off_bus");
    EXPECT_EQ(r.kernel_log[0].call, r.calls[0].id);
    EXPECT_EQ(r.kernel_log[0].level, 3);  // from the /dev/kmsg record: console events carry no level
    EXPECT_EQ(r.kernel_log[0].seq, 7u);
    EXPECT_EQ(r.kernel_log[0].ts_ns, 15u);  // trace clock, from the buffer
}

// The same text printed twice: each /dev/kmsg record completes one console line, in order; a third record
// with that text is a message of its own.
TEST(Report, RepeatedKernelLogLinesPairWithTheirKmsgRecordsInOrder) {
    EventStream s;
    s.events = {Event{10, 0, 9, false, ConsoleLine{"NVRM: Xid 13"}}, Event{11, 0, 9, false, ConsoleLine{"other"}},
                Event{12, 0, 9, false, ConsoleLine{"NVRM: Xid 13"}}};
    s.kmsg = {{"4,1,10,-;NVRM: Xid 13"}, {"5,2,12,-;NVRM: Xid 13"}, {"6,3,13,-;NVRM: Xid 13"}, {"6,4,14,-;other"}};
    Report r = build_report(s);
    ASSERT_EQ(r.kernel_log.size(), 4u);
    EXPECT_EQ(r.kernel_log[0].seq, 1u);
    EXPECT_EQ(r.kernel_log[0].level, 4);
    EXPECT_EQ(r.kernel_log[1].text, "other");
    EXPECT_EQ(r.kernel_log[1].seq, 4u);
    EXPECT_EQ(r.kernel_log[2].seq, 2u);
    EXPECT_EQ(r.kernel_log[2].level, 5);
    EXPECT_EQ(r.kernel_log[3].seq, 3u);  // no console line left for it
    EXPECT_EQ(r.kernel_log[3].ts_ns, 13000u);
}

// Calls and ioctls take the phase whose span holds their start: [begin, next marker), none before the first
// marker or after "nvtrace-phase-end"; a time equal to a marker's belongs to the phase that marker starts.
TEST(Report, ManyPhasesEachCallAndIoctlInItsOwn) {
    EventStream s;
    s.events.push_back(Event{1, 0, 9, false, IoctlEnter{3, 0x541B, 0}});
    s.events.push_back(Event{2, 0, 9, false, IoctlExit{0}});
    for (int p = 0; p < 50; ++p) {
        std::uint64_t t = 100 + 10 * p;
        s.events.push_back(Event{t, 0, 9, false, Marker{"nvtrace-phase: p" + std::to_string(p)}});
        s.events.push_back(Event{t, 0, 9, false, IoctlEnter{3, 0x541B, 0}});
        s.events.push_back(Event{t + 1, 0, 9, false, IoctlExit{0}});
        s.events.push_back(entry(t + 2, 9, "f", 0));
        s.events.push_back(exit_(t + 3, 9, "f", 0, t + 2, t + 3));
    }
    s.events.push_back(Event{600, 0, 9, false, Marker{"nvtrace-phase-end"}});
    s.events.push_back(Event{601, 0, 9, false, IoctlEnter{3, 0x541B, 0}});
    s.events.push_back(Event{602, 0, 9, false, IoctlExit{0}});
    Report r = build_report(s);
    ASSERT_EQ(r.ioctls.size(), 52u);
    ASSERT_EQ(r.calls.size(), 50u);
    EXPECT_FALSE(r.ioctls.front().phase.has_value());
    EXPECT_FALSE(r.ioctls.back().phase.has_value());
    for (int p = 0; p < 50; ++p) {
        EXPECT_EQ(r.ioctls[p + 1].phase, "p" + std::to_string(p));
        EXPECT_EQ(r.calls[p].phase, "p" + std::to_string(p));
    }
}

TEST(Report, KmsgOverwrittenIsIncomplete) {
    EventStream s;
    s.kmsg_overwritten = true;
    Report r = build_report(s);
    EXPECT_FALSE(r.completeness.complete);
}

TEST(Report, StreamedJsonEqualsTheDom) {
    EventStream s;
    s.comms[9] = "prog";
    s.events = {Event{1, 0, 9, false, Marker{"nvtrace-phase: a"}},
                entry(2, 9, "f", 0),
                exit_(3, 9, "f", 0, 2, 3),
                Event{4, 0, 9, false, IoctlEnter{3, 0x541B, 0}},
                Event{5, 0, 9, false, IoctlExit{0}},
                exit_(6, 9, "", 0, 0, 0)};
    s.kmsg.push_back({"3,1,7,-;NVRM: Xid (PCI:0000:01:00): 79, pid=9, GPU has fallen off the bus."});
    Report r = build_report(s);
    r.checks.push_back({"c", "pass", "e", "w"});
    std::ostringstream out;
    write_json(r, out);
    EXPECT_EQ(nlohmann::json::parse(out.str()), to_json(r));
    EXPECT_EQ(to_json(r)["calls"][1]["function"], "?");  // a bare "}" with no entry still has a name
}

TEST(Report, ConsoleLineInTextWithoutTimestampsIsAttachedByOrder) {
    EventStream s;
    Event e = entry(0, -1, "nv_ioctl", 0, 0, 1);
    e.ts_known = false;
    Event c{0, 1, -1, false, ConsoleLine{"NVRM: GPU 0000:01:00.0: GPU has fallen off the bus."}};
    c.ts_known = false;
    Event x = exit_(0, -1, "nv_ioctl", 0, 0, 0, 0, 1);
    x.ts_known = false;
    x.body = FuncExit{0, "nv_ioctl", std::nullopt, 0, 0, 0, 5000, 0, std::nullopt};
    s.events = {e, c, x};
    Report r = build_report(s);
    ASSERT_EQ(r.kernel_log.size(), 1u);
    EXPECT_EQ(r.kernel_log[0].call, r.calls[0].id);
    EXPECT_FALSE(r.kernel_log[0].ts_ns.has_value());
    EXPECT_FALSE(r.calls[0].entry_ns.has_value());
    EXPECT_EQ(r.calls[0].duration_ns, 5000u);
}

TEST(Report, IrqNestedDeeperThanTheOpenCallIsNotADepthGap) {
    EventStream s;
    Event irq = entry(3, 9, "smp_apic_timer_interrupt", 6);
    irq.irq = true;
    s.events = {entry(1, 9, "link_path_walk", 4), irq, exit_(4, 9, "smp_apic_timer_interrupt", 6, 3, 4),
                exit_(5, 9, "link_path_walk", 4, 1, 5)};
    Report r = build_report(s);
    EXPECT_TRUE(r.completeness.complete) << r.completeness.reasons.size();
    bool mid_tree_info = false;
    for (const auto& d : r.completeness.diagnostics) {
        EXPECT_NE(d.name, "depth_gap");
        mid_tree_info |= d.name == "starts_mid_tree" && d.severity == "info";
    }
    EXPECT_TRUE(mid_tree_info);  // the first entry is at depth 4
}

TEST(Report, MissingParentEntriesAreADepthGapThatMakesItIncomplete) {
    EventStream s;
    s.events = {entry(1, 9, "a", 0), entry(2, 9, "c", 2), exit_(3, 9, "c", 2, 2, 3), exit_(4, 9, "a", 0, 1, 4)};
    Report r = build_report(s);
    EXPECT_FALSE(r.completeness.complete);
}

// A run crashed with "invalid UTF-8 byte" (nlohmann::json type_error 316) when a process wrote
// a 0xFF byte to /dev/kmsg or to the trace marker: report.json was cut off and meta.json never written.
TEST(Report, InvalidUtf8InKernelLogAndMarkersIsReplacedNotACrash) {
    EventStream s;
    s.events = {Event{1, 0, 9, false, Marker{"nvtrace-phase: x \xff y"}}};
    s.kmsg.push_back({"6,1,2,-;NVRM: bad \xff byte"});
    Report r = build_report(s);
    std::ostringstream out;
    ASSERT_NO_THROW(write_json(r, out));
    nlohmann::json j = nlohmann::json::parse(out.str());
    ASSERT_EQ(j["markers"].size(), 1u);
    EXPECT_EQ(j["markers"][0]["text"], "nvtrace-phase: x \xEF\xBF\xBD y");  // U+FFFD
    ASSERT_EQ(j["kernel_log"].size(), 1u);
    EXPECT_NE(j["kernel_log"][0]["text"].get<std::string>().find("\xEF\xBF\xBD"), std::string::npos);
}

namespace {
const Diagnostic* diag(const Report& r, const std::string& name) {
    for (const auto& d : r.completeness.diagnostics)
        if (d.name == name) return &d;
    return nullptr;
}
}  // namespace

// orphan_return, unclosed_call and starts_mid_tree had first_example "" and lost_event_marks said
// "cpu 0 before ts 0" for a text file: each names the file and line of its first example.
TEST(Report, DiagnosticExamplesNameTheFileAndLineOfATextTrace) {
    const std::string text =
        "# tracer: function_graph\n"
        " 0)   1.000 us    |      } /* inner */\n"
        " 0)   0.500 us    |      leaf();\n"
        " 0)   2.000 us    |    } /* outer */\n"
        " CPU:0 [LOST 3 EVENTS]\n"
        " 0)               |  open_at_end() {\n"
        " 0)   0.100 us    |    g();\n";
    auto s = read_fgraph_text(text, "lost.txt");
    ASSERT_TRUE(s) << s.error().message;
    Report r = build_report(*s);
    const Diagnostic* d = diag(r, "orphan_return");
    ASSERT_TRUE(d);
    EXPECT_EQ(d->count, 2u);
    EXPECT_EQ(d->first_example, "lost.txt:2: inner");
    ASSERT_TRUE(d = diag(r, "starts_mid_tree"));
    EXPECT_EQ(d->first_example, "lost.txt:3: leaf");
    ASSERT_TRUE(d = diag(r, "unclosed_call"));
    EXPECT_EQ(d->first_example, "lost.txt:6: open_at_end");
    ASSERT_TRUE(d = diag(r, "lost_event_marks"));
    EXPECT_EQ(d->first_example, "lost.txt:5");
}

TEST(Report, DiagnosticExamplesWithoutAFileGiveCpuAndTime) {
    EventStream s;
    s.events = {exit_(500, 7, "schedule", 0, 100, 500, 0, 3), entry(600, 7, "f", 0, 0, 3)};
    Report r = build_report(s);
    const Diagnostic* d = diag(r, "orphan_return");
    ASSERT_TRUE(d);
    EXPECT_EQ(d->first_example, "cpu 3 ts 500 ns: schedule");
    ASSERT_TRUE(d = diag(r, "unclosed_call"));
    EXPECT_EQ(d->first_example, "cpu 3 ts 600 ns: f");
}

namespace {

Event ioctl_enter(std::uint64_t ts, int cpu, int fd, std::uint64_t cmd) {
    IoctlEnter e;
    e.fd = fd;
    e.cmd = cmd;
    return Event{ts, cpu, 9, false, e};
}

Event ioctl_exit(std::uint64_t ts, int cpu, std::int64_t ret) {
    IoctlExit x;
    x.ret = ret;
    return Event{ts, cpu, 9, false, x};
}

Event lost_mark(std::uint64_t ts, int cpu) {
    return Event{ts, cpu, -1, false, LostEvents{3}};
}

constexpr std::uint64_t kFionread = 0x541b, kTcgets = 0x5401;

const IoctlStat* stat_of(const Report& r, std::uint64_t cmd) {
    for (const IoctlStat& st : r.ioctl_stats)
        if (st.cmd == cmd && !st.pid) return &st;
    return nullptr;
}

}  // namespace

// A FIONREAD open when CPU 0 lost events (its exit and the next TCGETS's enter among them): the next exit of the
// task, TCGETS's -ENOTTY, was paired with the FIONREAD, which then read as failed with ENOTTY and TCGETS's latency.
TEST(Report, IoctlExitAfterLostEventsIsNotPairedWithTheIoctlOpenBeforeTheLoss) {
    EventStream s;
    s.events = {ioctl_enter(100, 0, 4, kFionread), lost_mark(150, 0), ioctl_exit(200, 0, -25),
                ioctl_enter(300, 0, 4, kTcgets), ioctl_exit(310, 0, -25)};
    Report r = build_report(s);
    ASSERT_EQ(r.ioctls.size(), 2u);
    const IoctlRecord& fionread = r.ioctls[0];
    EXPECT_EQ(fionread.cmd, kFionread);
    EXPECT_FALSE(fionread.ret) << *fionread.ret;
    EXPECT_FALSE(fionread.exit_ns);
    EXPECT_FALSE(fionread.duration_ns);
    EXPECT_EQ(r.ioctls[1].ret, -25);  // entered after the loss: paired as before
    EXPECT_EQ(r.ioctls[1].duration_ns, 10u);
    const IoctlStat* st = stat_of(r, kFionread);
    ASSERT_TRUE(st);
    EXPECT_EQ(st->errors, 0u);
    EXPECT_EQ(st->unfinished, 1u);
    EXPECT_FALSE(r.completeness.complete);
    const Diagnostic* d = diag(r, "ioctl_outcome_after_loss");
    ASSERT_TRUE(d);
    EXPECT_EQ(d->count, 1u);
    EXPECT_EQ(d->severity, "data_loss");
    EXPECT_EQ(d->first_example, "pid 9 fd 4 cmd 0x541b entered at 100 ns");
    bool reason = false;
    for (const auto& why : r.completeness.reasons)
        reason |= why.find("1 ioctl(s) with an unknown outcome") != std::string::npos;
    EXPECT_TRUE(reason);
}

// An exit on another CPU inside the lost span (sorted before the mark, which comes with CPU 0's first event
// after the loss) is as doubtful; an exit before the span began, or a loss on a CPU whose last event came after
// the exit, leaves the pairing alone.
TEST(Report, IoctlExitInsideTheLostSpanOfAnotherCpuHasAnUnknownOutcome) {
    EventStream s;
    s.events = {ioctl_enter(10, 0, 4, kTcgets),
                ioctl_exit(20, 0, -25),  // before the span: kept
                ioctl_enter(100, 0, 4, kFionread),
                entry(105, 9, "f", 0, 0, 0),  // CPU 0's last event
                ioctl_exit(120, 1, -25),
                entry(130, 7, "g", 0, 0, 2),  // CPU 2's last event
                lost_mark(140, 2),            // CPU 2: after 130
                lost_mark(150, 0)};           // CPU 0: after 105
    Report r = build_report(s);
    ASSERT_EQ(r.ioctls.size(), 2u);
    EXPECT_EQ(r.ioctls[0].ret, -25);
    EXPECT_EQ(r.ioctls[0].duration_ns, 10u);
    EXPECT_FALSE(r.ioctls[1].ret);
    EXPECT_FALSE(r.ioctls[1].duration_ns);
    const Diagnostic* d = diag(r, "ioctl_outcome_after_loss");
    ASSERT_TRUE(d);
    EXPECT_EQ(d->count, 1u);

    EventStream only_cpu2 = s;  // without CPU 0's mark: CPU 2 lost events after the exit (130 > 120)
    only_cpu2.events.pop_back();
    Report kept = build_report(only_cpu2);
    ASSERT_EQ(kept.ioctls.size(), 2u);
    EXPECT_EQ(kept.ioctls[1].ret, -25);
    EXPECT_FALSE(diag(kept, "ioctl_outcome_after_loss"));
}

// `echo 'nvtrace-phase: A ' > trace_marker` (or a CRLF line) named the phase "A " ("A \r"), so `check` and `diff`
// (which trimmed) and the calls' phase disagreed; "nvtrace-phase: " with no name began a phase named "".
TEST(Report, TrailingBlanksAreNotPartOfAPhaseNameAndAnEmptyNameEndsThePhase) {
    EventStream s;
    s.events = {
        Event{10, 0, 9, false, Marker{"nvtrace-phase: A \t\r"}}, entry(20, 9, "f", 0), exit_(21, 9, "f", 0, 20, 21),
        Event{30, 0, 9, false, Marker{"nvtrace-phase: "}},       entry(40, 9, "g", 0), exit_(41, 9, "g", 0, 40, 41)};
    Report r = build_report(s);
    ASSERT_EQ(r.calls.size(), 2u);
    EXPECT_EQ(r.calls[0].phase, "A");
    EXPECT_FALSE(r.calls[1].phase) << *r.calls[1].phase;
}

// One write of two lines (`printf 'nvtrace-phase: A\nnvtrace-phase: B\n' > trace_marker` is one print event) made
// one phase named "A\nnvtrace-phase: B".
TEST(Report, MarkerOfSeveralLinesIsReadLineByLine) {
    EventStream s;
    s.events = {Event{10, 0, 9, false, Marker{"nvtrace-phase: A\nnvtrace-phase: B\n"}},
                entry(20, 9, "f", 0),
                exit_(21, 9, "f", 0, 20, 21),
                Event{30, 0, 9, false, Marker{"x\nnvtrace-phase-end"}},
                entry(40, 9, "g", 0),
                exit_(41, 9, "g", 0, 40, 41)};
    Report r = build_report(s);
    ASSERT_EQ(r.calls.size(), 2u);
    EXPECT_EQ(r.calls[0].phase, "B");
    EXPECT_FALSE(r.calls[1].phase) << *r.calls[1].phase;
    ASSERT_EQ(r.markers.size(), 2u);  // each write kept whole
    EXPECT_EQ(r.markers[0].text, "nvtrace-phase: A\nnvtrace-phase: B\n");
}
