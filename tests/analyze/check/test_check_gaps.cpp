// The checker and completeness.gaps: a check is inconclusive only when its evidence could lie in a gap
// (docs/expectations.md, "How a check is decided"). Small synthetic reports: three phases, ioctl-only (the common
// case where function_graph is refused), recorded events on CPUs 1 and 2 that place a gap between its CPU's
// neighbouring events.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "nvtrace/expect.hpp"
#include "nvtrace/report.hpp"
#include "nvtrace/report_io.hpp"

namespace nvtrace {
namespace {

constexpr std::uint64_t kFionread = 0x541b;

ExpectFile inline_expect(std::string_view text) {
    auto e = parse_expectations(text, "inline.expect");
    if (!e) ADD_FAILURE() << e.error().message;
    return e ? *e : ExpectFile{};
}

std::map<std::string, Check> checks(const Report& r, std::string_view expect) {
    std::map<std::string, Check> m;
    for (const auto& c : check_report(r, inline_expect(expect)))
        m[c.id] = c;
    return m;
}

// Phases one [1000, 2000) ns, two [2000, 3000), three [3000, ...): one FIONREAD in phase one, nothing else.
// CPU 1 and CPU 2 each record an event (sched_switch) in every phase, at 1500/2500/3500 and 1600/2600/3600.
Report phased_report() {
    Report r;
    r.source.kind = "file";
    int i = 0;
    for (const char* p : {"one", "two", "three"}) {
        std::uint64_t begin = 1000 * static_cast<std::uint64_t>(++i);
        r.markers.push_back({begin, 9, std::string("nvtrace-phase: ") + p});
        for (int cpu : {1, 2}) {
            EventRecord e;
            e.name = "sched:sched_switch";
            e.ts_ns = begin + 400 + 100 * static_cast<std::uint64_t>(cpu);
            e.cpu = cpu;
            r.events.push_back(e);
        }
    }
    IoctlRecord io;
    io.pid = 9;
    io.fd = 4;
    io.cmd = kFionread;
    io.name = "FIONREAD";
    io.ret = 0;
    io.enter_ns = 1200;
    io.exit_ns = 1210;
    io.phase = "one";
    r.ioctls.push_back(io);
    return r;
}

void add_gap(Report& r, std::string kind, int cpu, std::optional<std::uint64_t> ts,
             std::optional<std::uint64_t> count = std::nullopt) {
    Gap g;
    g.kind = std::move(kind);
    g.cpu = cpu;
    g.ts_ns = ts;
    g.count = count;
    r.completeness.gaps.push_back(g);
    r.completeness.complete = false;
    if (g.kind == "lost_events" && count) r.completeness.lost_events += *count;
    r.completeness.reasons.push_back("a gap");
}

constexpr std::string_view kPerPhase =
    "check one-none\n  phase one\n  absent ioctl 0x5401\n"
    "check two-none\n  phase two\n  absent ioctl 0x5401\n"
    "check three-none\n  phase three\n  absent ioctl 0x5401\n"
    "check one-seen\n  phase one\n  ioctl 0x541b\n"
    "check two-seen\n  phase two\n  ioctl 0x541b\n";

// "CPU:1 [LOST 5 EVENTS]" before CPU 1's event at 2500: the events lost lie between 1500 and 2500, in phases one
// and two, not three.
TEST(Check, AbsenceWithGapInWindowIsInconclusive) {
    Report r = phased_report();
    add_gap(r, "lost_events", 1, 2500, 5);
    auto m = checks(r, kPerPhase);
    for (const char* id : {"one-none", "two-none"}) {
        EXPECT_EQ(m[id].result, "inconclusive") << id << ": " << m[id].why;
        EXPECT_NE(m[id].why.find("data was lost (5 events lost on CPU 1 between 1.5 us and 2.5 us)"), std::string::npos)
            << m[id].why;
    }
    EXPECT_EQ(m["three-none"].result, "pass") << m["three-none"].why;
}

TEST(Check, PresenceFoundOutsideGapPasses) {
    Report r = phased_report();
    add_gap(r, "lost_events", 2, 3600, 5);  // CPU 2 between 2600 and 3600
    auto m = checks(r, kPerPhase);
    EXPECT_EQ(m["one-seen"].result, "pass") << m["one-seen"].why;
    EXPECT_EQ(m["one-none"].result, "pass") << m["one-none"].why;
}

// Not seen in a phase no gap touches is a failure, although data was lost elsewhere in the run (before: any loss
// made every missing thing inconclusive).
TEST(Check, MissingIoctlInPhaseWithoutGapFailsDespiteGapElsewhere) {
    Report r = phased_report();
    add_gap(r, "lost_events", 1, 3500, 5);  // CPU 1 between 2500 and 3500: phases two and three
    auto m = checks(r, std::string(kPerPhase) + std::string("check three-seen\n  phase three\n  ioctl 0x541b\n"));
    EXPECT_EQ(m["two-seen"].result, "inconclusive") << m["two-seen"].why;
    EXPECT_EQ(m["three-seen"].result, "inconclusive") << m["three-seen"].why;
    r.completeness.gaps.front().ts_ns = 1500;  // CPU 1 before its first event: phase one only
    m = checks(r, kPerPhase);
    EXPECT_EQ(m["two-seen"].result, "fail") << m["two-seen"].why;
    EXPECT_EQ(m["one-none"].result, "inconclusive") << m["one-none"].why;
    EXPECT_EQ(m["two-none"].result, "pass") << m["two-none"].why;
}

// The lost events lie between the gap's CPU's own neighbouring events: CPU 2's before 2600 is 1600, so a loss on
// CPU 2 at 2600 does not reach phase three, and the events of CPU 1 do not widen or narrow it.
TEST(Check, GapOnOtherCpuDoesNotReachPastItsCpusNextEvent) {
    Report r = phased_report();
    add_gap(r, "lost_events", 2, 2600, std::nullopt);
    auto m = checks(r, kPerPhase);
    EXPECT_EQ(m["two-none"].result, "inconclusive") << m["two-none"].why;
    EXPECT_NE(m["two-none"].why.find("an unknown number of events lost on CPU 2 between 1.6 us and 2.6 us"),
              std::string::npos)
        << m["two-none"].why;
    EXPECT_EQ(m["three-none"].result, "pass") << m["three-none"].why;
}

// A function trace whose header says 12,325 of 70,138 entries were overwritten and that marks
// "##### CPU 2 buffer started ####" before CPU 2's event at 2600 (tests/data/cases/
// function-text-annotate-cpu-buffer-started.txt has this shape): CPU 2 lost its events before 2600.
TEST(Check, BufferStartedGapNamesTheOverwrittenEntriesAndItsCpu) {
    Report r = phased_report();
    r.events.erase(r.events.begin() + 1);  // CPU 2's first event is now the one at 2600
    r.completeness.entries_in_buffer = 57813;
    r.completeness.entries_written = 70138;
    r.completeness.overruns = 12325;
    add_gap(r, "buffer_started", 2, 2600);
    auto m = checks(r, kPerPhase);
    for (const char* id : {"one-none", "two-none"}) {
        EXPECT_EQ(m[id].result, "inconclusive") << id;
        EXPECT_NE(m[id].why.find("12,325 entries overwritten on CPU 2 before 2.6 us (the buffer wrapped)"),
                  std::string::npos)
            << m[id].why;
    }
    EXPECT_EQ(m["three-none"].result, "pass") << m["three-none"].why;
}

// The same header without any buffer_started mark says nothing of where: every phase is inconclusive.
TEST(Check, OverwrittenEntriesWithoutMarksCoverEveryPhase) {
    Report r = phased_report();
    r.completeness.entries_in_buffer = 57813;
    r.completeness.entries_written = 70138;
    r.completeness.overruns = 12325;
    r.completeness.complete = false;
    auto m = checks(r, kPerPhase);
    for (const char* id : {"one-none", "two-none", "three-none"}) {
        EXPECT_EQ(m[id].result, "inconclusive") << id;
        EXPECT_NE(m[id].why.find("12325 ring-buffer overruns"), std::string::npos) << m[id].why;
    }
}

// A gap without a time (a text trace without timestamps) or without a CPU's neighbours covers everything.
TEST(Check, GapWithoutTimeCoversEveryPhase) {
    Report r = phased_report();
    add_gap(r, "elided", -1, std::nullopt);
    auto m = checks(r, kPerPhase);
    for (const char* id : {"one-none", "two-none", "three-none"})
        EXPECT_EQ(m[id].result, "inconclusive") << id;
    EXPECT_NE(m["three-none"].why.find("lines elided"), std::string::npos) << m["three-none"].why;
}

// An elided row names no CPU: its lines lie between the events of any CPU around it (2500 and 2600 here).
TEST(Check, ElidedRowIsBoundedByTheEventsAroundIt) {
    Report r = phased_report();
    add_gap(r, "elided", -1, 2500);
    auto m = checks(r, kPerPhase);
    EXPECT_EQ(m["one-none"].result, "pass") << m["one-none"].why;
    EXPECT_EQ(m["two-none"].result, "inconclusive") << m["two-none"].why;
    EXPECT_EQ(m["three-none"].result, "pass") << m["three-none"].why;
}

// Returns without their entry damage the call tree, not the ioctls: an ioctl check is decided as usual.
TEST(Check, OrphanReturnsDoNotMakeIoctlChecksInconclusive) {
    Report r = phased_report();
    r.completeness.complete = false;
    r.completeness.diagnostics.push_back(make_diagnostic(Diag::orphan_return, 3, "cpu 1 ts 1500 ns: f"));
    auto m = checks(r, kPerPhase);
    EXPECT_EQ(m["two-seen"].result, "fail") << m["two-seen"].why;
    EXPECT_EQ(m["one-none"].result, "pass") << m["one-none"].why;
}

// /dev/kmsg records overwritten before they were read: kernel-log facts cannot be decided by absence, ioctl facts
// can.
TEST(Check, OverwrittenKernelLogMakesOnlyLogAbsenceInconclusive) {
    Report r = phased_report();
    r.completeness.complete = false;
    r.completeness.diagnostics.push_back(make_diagnostic(Diag::orphan_return, 1, "cpu 1 ts 1500 ns: f"));
    r.completeness.reasons = {"1 returns without their entry",
                              "kernel log records were overwritten before they were read"};
    KernelLogMessage k;
    k.kind = "nv_status";
    k.text = "NVRM: nvAssertFailed";
    r.kernel_log.push_back(k);
    auto m = checks(r, std::string(kPerPhase) + "check no-xid\n  absent log xid\n");
    EXPECT_EQ(m["no-xid"].result, "inconclusive") << m["no-xid"].why;
    EXPECT_NE(m["no-xid"].why.find("kernel log records were overwritten"), std::string::npos) << m["no-xid"].why;
    EXPECT_EQ(m["one-none"].result, "pass") << m["one-none"].why;
}

// A capture's /dev/kmsg record that is not `<prio>,<seq>,<ts_usec>,<flags>;<msg>` (kernel/printk/printk.c
// devkmsg_read's layout: a sequence number that is not a number, no ';', a record cut short) may have been any
// message, an Xid included: the report is incomplete and `absent log` cannot pass. It was counted as an error that
// left the report complete, so `absent log xid` passed over the record it could not read.
TEST(Check, KmsgRecordThatCannotBeReadMakesAbsentLogInconclusive) {
    for (const char* bad : {"6,1,notanumber,-;NVRM: Xid (PCI:0000:01:00): 79", "6,2,1000,-", "6,", "4;x"}) {
        SCOPED_TRACE(bad);
        EventStream st;
        st.kmsg = {KmsgRecordText{"6,1,1000,-;nvidia-uvm: Loaded the UVM driver"}, KmsgRecordText{bad}};
        Report r = build_report(st);
        EXPECT_FALSE(r.completeness.complete);
        EXPECT_EQ(r.completeness.diagnostic_count(Diag::malformed_kmsg_record), 1u);
        EXPECT_EQ(r.completeness.unreadable_lines(), 1u);
        ASSERT_FALSE(r.completeness.reasons.empty());
        EXPECT_NE(r.completeness.reasons.back().find("1 record could not be read"), std::string::npos)
            << r.completeness.reasons.back();
        auto m = checks(r, "check no-xid\n  absent log xid\n");
        EXPECT_EQ(m["no-xid"].result, "inconclusive") << m["no-xid"].why;
    }
    // Every record readable: complete, and the absence passes.
    EventStream ok;
    ok.kmsg = {KmsgRecordText{"6,1,1000,-;nvidia-uvm: Loaded the UVM driver"}};
    Report r = build_report(ok);
    EXPECT_TRUE(r.completeness.complete);
    EXPECT_EQ(checks(r, "check no-xid\n  absent log xid\n")["no-xid"].result, "pass");
}

// A live capture that read its kernel log from /dev/kmsg (kmsg_clock recorded, no printk:console line): lost
// ring-buffer events cannot hide a kernel-log line, so `absent log xid` passes; ioctl facts in the lost span stay
// inconclusive. With a line that came through the ring buffer (attached "console"), the loss hides log lines too.
// The same gap text three times is named once, counted.
TEST(Check, RingBufferLossDoesNotHideKernelLogReadFromKmsg) {
    Report r = phased_report();
    r.kmsg_clock = KmsgClockOffset{"local", 0, 0, "same_clock"};
    for (int k = 0; k < 3; ++k)
        add_gap(r, "lost_events", 1, 2500);
    r.completeness.overruns = 556;
    KernelLogMessage k;
    k.kind = "nv_status";
    k.text = "NVRM: nvAssertFailed";
    k.seq = 7;
    k.attached = "time";
    r.kernel_log.push_back(k);
    std::string expect = std::string(kPerPhase) + "check no-xid\n  absent log xid\n";
    auto m = checks(r, expect);
    EXPECT_EQ(m["no-xid"].result, "pass") << m["no-xid"].why;
    EXPECT_EQ(m["two-none"].result, "inconclusive") << m["two-none"].why;
    EXPECT_NE(m["two-none"].why.find("an unknown number of events lost on CPU 1 between 1.5 us and 2.5 us (x3)"),
              std::string::npos)
        << m["two-none"].why;

    r.kernel_log[0].attached = "console";
    m = checks(r, expect);
    EXPECT_EQ(m["no-xid"].result, "inconclusive") << m["no-xid"].why;

    r.kernel_log[0].attached = "time";
    r.kmsg_clock.reset();  // not a kmsg capture: where the log came from is not known
    m = checks(r, expect);
    EXPECT_EQ(m["no-xid"].result, "inconclusive") << m["no-xid"].why;
}

// A data_loss diagnostic has no place: every phase.
TEST(Check, DataLossDiagnosticCoversEveryPhase) {
    Report r = phased_report();
    r.completeness.complete = false;
    r.completeness.diagnostics.push_back(make_diagnostic(Diag::damaged_page, 1, "raw/instance/cpu1 page 3: bad"));
    auto m = checks(r, kPerPhase);
    EXPECT_EQ(m["three-none"].result, "inconclusive");
    EXPECT_NE(m["three-none"].why.find("damaged_page: 1 (raw/instance/cpu1 page 3: bad)"), std::string::npos)
        << m["three-none"].why;
}

// A trace file read as `nvtrace check` reads it (load_report_input: the format found from the text).
Report report_of_trace(const std::string& text, const std::string& name) {
    auto path = std::filesystem::temp_directory_path() / (std::to_string(::getpid()) + "-" + name);
    std::ofstream(path) << text;
    auto r = load_report_input(path.string());
    std::filesystem::remove(path);
    if (!r) ADD_FAILURE() << r.error().message;
    return r ? *r : Report{};
}

// Phases one [10, 150), two [150, 200), three [200, 240), four [240, 500), five [500, ...) us, marked on CPU 2.
// CPU 1's last event before the loss is at 200 (a function_graph leaf returns at 201), its first after it at
// 300: the lost events lie between 200 and 300, where phases three and four may have held the call `absent` says
// is not there; phases one, two and five cannot have.
constexpr std::string_view kAbsentPerPhase =
    "check one\n  phase one\n  absent call nv_isr\n"
    "check two\n  phase two\n  absent call nv_isr\n"
    "check three\n  phase three\n  absent call nv_isr\n"
    "check four\n  phase four\n  absent call nv_isr\n"
    "check five\n  phase five\n  absent call nv_isr\n";

void expect_lost_span_reaches_three_and_four(const Report& r, const std::string& span) {
    auto m = checks(r, kAbsentPerPhase);
    for (const char* id : {"one", "two", "five"})
        EXPECT_EQ(m[id].result, "pass") << id << ": " << m[id].why;
    for (const char* id : {"three", "four"}) {
        EXPECT_EQ(m[id].result, "inconclusive") << id << ": " << m[id].why;
        EXPECT_NE(m[id].why.find(span), std::string::npos) << id << ": " << m[id].why;
    }
}

// "CPU:N [LOST M EVENTS]" was placed at the time of the line before it (any CPU's), and CPU N's event at that
// time, its last one before the loss, was taken for its first one after: the span ended before the mark, and an
// absent fact of a phase the real lost span reaches passed. The mark is printed with CPU N's first record after
// the loss (kernel/trace/trace.c print_trace_line: "CPU:%d [LOST %lu EVENTS]" before that CPU's entry; trace-cmd's
// trace-read.c prints "CPU:%d [%lld EVENTS DROPPED]" before the record that has missed_events), so the gap takes
// that record's time, as a trace.dat record's or a capture page's missed events do.
TEST(Check, LostEventsMarkSpansToItsCpusNextEventInEveryTextFormat) {
    // function_graph text with the abstime column (Documentation/trace/ftrace.rst, funcgraph-abstime), in the
    // kernel's order (the mark right before CPU 1's line); CPU 2's marker of phase three has the time of CPU 1's
    // last event before the loss.
    const std::string fgraph =
        "# tracer: function_graph\n"
        "#\n"
        " 1000.000005 |   2)  prog-100    |   1.000 us    |  nv_isr [nvidia]();\n"
        " 1000.000010 |   2)  prog-100    |               |  /* nvtrace-phase: one */\n"
        " 1000.000100 |   1)  prog-100    |   1.000 us    |  nvidia_ioctl [nvidia]();\n"
        " 1000.000150 |   2)  prog-100    |               |  /* nvtrace-phase: two */\n"
        " 1000.000160 |   2)  prog-100    |   1.000 us    |  rm_ioctl [nvidia]();\n"
        " 1000.000200 |   1)  prog-100    |   1.000 us    |  rm_ioctl [nvidia]();\n"
        " 1000.000200 |   2)  prog-100    |               |  /* nvtrace-phase: three */\n"
        " 1000.000220 |   2)  prog-100    |   1.000 us    |  rm_ioctl [nvidia]();\n"
        " 1000.000240 |   2)  prog-100    |               |  /* nvtrace-phase: four */\n"
        "CPU:1 [LOST 100 EVENTS]\n"
        " 1000.000300 |   1)  prog-100    |   1.000 us    |  rm_free [nvidia]();\n"
        " 1000.000450 |   1)  prog-100    |   1.000 us    |  rm_ioctl [nvidia]();\n"
        " 1000.000500 |   2)  prog-100    |               |  /* nvtrace-phase: five */\n"
        " 1000.000600 |   1)  prog-100    |   1.000 us    |  rm_ioctl [nvidia]();\n";
    Report g = report_of_trace(fgraph, "lost-fgraph.txt");
    ASSERT_EQ(g.completeness.gaps.size(), 1u);
    EXPECT_EQ(g.completeness.gaps[0].ts_ns, 1000000300000u);
    EXPECT_EQ(g.completeness.gaps[0].line, 12u);
    expect_lost_span_reaches_three_and_four(g, "100 events lost on CPU 1 between 1000000200 us and 1000000300 us");

    // The function tracer's text (kernel/trace/trace_output.c, trace_fn_trace), the line before the mark being
    // CPU 1's own: CPU 2's markers come between the mark and CPU 1's next line (text put together from several
    // reads); the mark still waits for CPU 1's line.
    const std::string function =
        "# tracer: function\n"
        "#\n"
        "          prog-100     [002] .....  1000.000005: nv_isr <-__handle_irq_event_percpu\n"
        "          prog-100     [002] .....  1000.000010: tracing_mark_write: nvtrace-phase: one\n"
        "          prog-100     [001] .....  1000.000100: nvidia_ioctl <-nvidia_unlocked_ioctl\n"
        "          prog-100     [002] .....  1000.000150: tracing_mark_write: nvtrace-phase: two\n"
        "          prog-100     [002] .....  1000.000160: rm_ioctl <-nvidia_ioctl\n"
        "          prog-100     [001] .....  1000.000200: rm_ioctl <-nvidia_ioctl\n"
        "CPU:1 [LOST 100 EVENTS]\n"
        "          prog-100     [002] .....  1000.000200: tracing_mark_write: nvtrace-phase: three\n"
        "          prog-100     [002] .....  1000.000220: rm_ioctl <-nvidia_ioctl\n"
        "          prog-100     [002] .....  1000.000240: tracing_mark_write: nvtrace-phase: four\n"
        "          prog-100     [001] .....  1000.000300: rm_free <-nvidia_ioctl\n"
        "          prog-100     [001] .....  1000.000450: rm_ioctl <-nvidia_ioctl\n"
        "          prog-100     [002] .....  1000.000500: tracing_mark_write: nvtrace-phase: five\n"
        "          prog-100     [001] .....  1000.000600: rm_ioctl <-nvidia_ioctl\n";
    Report f = report_of_trace(function, "lost-function.txt");
    ASSERT_EQ(f.completeness.gaps.size(), 1u);
    EXPECT_EQ(f.completeness.gaps[0].ts_ns, 1000000300000u);
    EXPECT_EQ(f.completeness.gaps[0].line, 9u);
    expect_lost_span_reaches_three_and_four(f, "100 events lost on CPU 1 between 1000000200 us and 1000000300 us");

    // trace-cmd report (trace-read.c), in the same order; "CPU:1 [EVENTS DROPPED]" when the count is not known.
    const std::string tc =
        "version = 6\n"
        "cpus=4\n"
        "          prog-100   [002]  1000.000005: function:             nv_isr <-- __handle_irq_event_percpu\n"
        "          prog-100   [002]  1000.000010: print:                tracing_mark_write: nvtrace-phase: one\n"
        "          prog-100   [001]  1000.000100: function:             nvidia_ioctl <-- nvidia_unlocked_ioctl\n"
        "          prog-100   [002]  1000.000150: print:                tracing_mark_write: nvtrace-phase: two\n"
        "          prog-100   [002]  1000.000160: function:             rm_ioctl <-- nvidia_ioctl\n"
        "          prog-100   [001]  1000.000200: function:             rm_ioctl <-- nvidia_ioctl\n"
        "CPU:1 [EVENTS DROPPED]\n"
        "          prog-100   [002]  1000.000200: print:                tracing_mark_write: nvtrace-phase: three\n"
        "          prog-100   [002]  1000.000220: function:             rm_ioctl <-- nvidia_ioctl\n"
        "          prog-100   [002]  1000.000240: print:                tracing_mark_write: nvtrace-phase: four\n"
        "          prog-100   [001]  1000.000300: function:             rm_free <-- nvidia_ioctl\n"
        "          prog-100   [001]  1000.000450: function:             rm_ioctl <-- nvidia_ioctl\n"
        "          prog-100   [002]  1000.000500: print:                tracing_mark_write: nvtrace-phase: five\n"
        "          prog-100   [001]  1000.000600: function:             rm_ioctl <-- nvidia_ioctl\n";
    Report t = report_of_trace(tc, "lost-trace-cmd.txt");
    ASSERT_EQ(t.completeness.gaps.size(), 1u);
    EXPECT_EQ(t.completeness.gaps[0].ts_ns, 1000000300000u);
    expect_lost_span_reaches_three_and_four(
        t, "an unknown number of events lost on CPU 1 between 1000000200 us and 1000000300 us");
}

// A return whose entry was lost (an orphan, entry_seen false) has an inferred entry time, its own less its duration:
// no event was recorded then, and the entry may lie in the very gap. CPU 1's loss before its event at 3500 spans
// (2500, 3500); the orphan's inferred entry at 3100 had shortened it to (3100, 3500), leaving phase two out.
TEST(Check, OrphanReturnsInferredEntryTimeDoesNotNarrowALostEventsGap) {
    Report r = phased_report();
    r.events.erase(r.events.begin() + 4);  // CPU 1's event at 3500: the orphan's return is its first after the loss
    Call orphan;
    orphan.id = 1;
    orphan.cpu = 1;
    orphan.pid = 9;
    orphan.function = "schedule";
    orphan.entry_seen = false;
    orphan.entry_ns = 3100;
    orphan.duration_ns = 400;
    r.calls.push_back(orphan);
    add_gap(r, "lost_events", 1, 3500, 5);
    auto m = checks(r, kPerPhase);
    EXPECT_EQ(m["one-none"].result, "pass") << m["one-none"].why;
    for (const char* id : {"two-none", "three-none"}) {
        EXPECT_EQ(m[id].result, "inconclusive") << id << ": " << m[id].why;
        EXPECT_NE(m[id].why.find("5 events lost on CPU 1 between 2.5 us and 3.5 us"), std::string::npos)
            << id << ": " << m[id].why;
    }
}

// A mark no line of its CPU follows (a trace cut after it) has no time of its own: it may hide anything, anywhere.
TEST(Check, LostEventsMarkWithoutALaterLineOfItsCpuCoversEveryPhase) {
    const std::string text =
        "# tracer: function\n"
        "#\n"
        "          prog-100     [002] .....  1000.000010: tracing_mark_write: nvtrace-phase: one\n"
        "          prog-100     [001] .....  1000.000100: rm_ioctl <-nvidia_ioctl\n"
        "          prog-100     [002] .....  1000.000500: tracing_mark_write: nvtrace-phase: four\n"
        "CPU:1 [LOST 7 EVENTS]\n"
        "          prog-100     [002] .....  1000.000600: rm_ioctl <-nvidia_ioctl\n";
    Report r = report_of_trace(text, "lost-at-end.txt");
    ASSERT_EQ(r.completeness.gaps.size(), 1u);
    EXPECT_FALSE(r.completeness.gaps[0].ts_ns);
    auto m = checks(r, "check one\n  phase one\n  absent call nv_isr\n");
    EXPECT_EQ(m["one"].result, "inconclusive") << m["one"].why;
}

// A live capture's /dev/kmsg records with a jump in seq (read() said EPIPE: the kernel overwrote them before they
// were read) are records missing, counted: `absent log xid` cannot pass, ioctl facts are not touched. The report
// said only "kernel log records were overwritten" when the EPIPE was seen, and nothing when it was not recorded.
TEST(Check, KmsgSeqGapInALiveCaptureIsMissingLogRecordsOnly) {
    EventStream st;
    st.kmsg = {KmsgRecordText{"6,10,1000,-;nvidia-uvm: Loaded the UVM driver"},
               KmsgRecordText{"6,14,2000,-;nvidia-uvm: done"}};
    Report r = build_report(st);
    EXPECT_FALSE(r.completeness.complete);
    EXPECT_EQ(r.completeness.diagnostic_count(Diag::kmsg_seq_gap), 3u);
    ASSERT_FALSE(r.completeness.reasons.empty());
    EXPECT_NE(std::find(r.completeness.reasons.begin(), r.completeness.reasons.end(),
                        "3 kernel log records were overwritten before they were read"),
              r.completeness.reasons.end())
        << fmt::format("{}", fmt::join(r.completeness.reasons, "; "));
    auto m = checks(r, "check no-xid\n  absent log xid\n");
    EXPECT_EQ(m["no-xid"].result, "inconclusive") << m["no-xid"].why;
    EXPECT_NE(m["no-xid"].why.find("seq 14 follows seq 10: 3 record(s) missing"), std::string::npos) << m["no-xid"].why;

    Report p = phased_report();
    p.completeness.complete = false;
    p.completeness.diagnostics.push_back(make_diagnostic(Diag::kmsg_seq_gap, 3, "seq 14 follows seq 10"));
    auto pm = checks(p, kPerPhase);
    EXPECT_EQ(pm["one-none"].result, "pass") << pm["one-none"].why;
}

// A driver's line written from user space (echo "NVRM: Xid ..." > /dev/kmsg: facility 1) is no evidence of the
// driver printing it: `log xid` does not pass on it and `absent log xid` does not fail; the evidence says it was not
// counted. It passed, and the message said source NVRM.
TEST(Check, XidLineWrittenFromUserSpaceIsNotAnXidOfTheDriver) {
    EventStream st;
    st.kmsg = {KmsgRecordText{"11,10,1000,-;NVRM: Xid (PCI:0000:01:00): 79, pid=1, GPU has fallen off the bus."}};
    Report r = build_report(st);
    ASSERT_EQ(r.kernel_log.size(), 1u);
    EXPECT_EQ(r.kernel_log[0].source, "user");
    EXPECT_EQ(r.kernel_log[0].kind, "xid");
    auto m = checks(r, "check xid\n  log xid xid=79\ncheck no-xid\n  absent log xid\n");
    EXPECT_EQ(m["xid"].result, "fail") << m["xid"].why;
    EXPECT_NE(m["xid"].evidence.find("1 xid line(s) written from user space not counted"), std::string::npos)
        << m["xid"].evidence;
    EXPECT_EQ(m["no-xid"].result, "pass") << m["no-xid"].why;
    EXPECT_NE(m["no-xid"].evidence.find("1 xid line(s) written from user space not counted"), std::string::npos)
        << m["no-xid"].evidence;
    // The kernel's own line (facility 0) is one.
    EventStream k;
    k.kmsg = {KmsgRecordText{"3,10,1000,-;NVRM: Xid (PCI:0000:01:00): 79, pid=1, GPU has fallen off the bus."}};
    auto km = checks(build_report(k), "check xid\n  log xid xid=79\n");
    EXPECT_EQ(km["xid"].result, "pass") << km["xid"].why;
    // A saved report edited to say source NVRM beside facility 1 (only an edit can make one): still user space's.
    Report e = build_report(st);
    e.kernel_log[0].source = "NVRM";
    e.kernel_log[0].fields.erase("text_source");
    EXPECT_EQ(checks(e, "check xid\n  log xid xid=79\n")["xid"].result, "fail");
}

}  // namespace
}  // namespace nvtrace
