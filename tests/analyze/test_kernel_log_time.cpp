// Kernel-log correlation by time (attach_kernel_log_by_time) and through build_report.
#include <gtest/gtest.h>

#include "../../analyze/json_values.hpp"
#include "nvtrace/kernel_log.hpp"
#include "nvtrace/report.hpp"

using namespace nvtrace;

namespace {

Call call(std::uint64_t id, std::optional<std::uint64_t> parent, std::uint64_t entry, std::optional<std::uint64_t> dur,
          int pid = 5) {
    Call c;
    c.id = id;
    c.parent = parent;
    c.entry_ns = entry;
    c.duration_ns = dur;
    c.pid = pid;
    c.function = "f" + std::to_string(id);
    return c;
}

KernelLogMessage kmsg_at(std::uint64_t ts_us) {
    KernelLogMessage m;
    m.ts_ns = ts_us * 1000;
    m.text = "NVRM: something";
    return m;
}

KmsgClockOffset same_clock() {
    return {"local", 0, 0, "same_clock"};
}

}  // namespace

TEST(KernelLogTime, AttachesToTheDeepestCallRunningAtThatTime) {
    // Root 1 [1 ms, 9 ms], child 2 [2 ms, 5 ms], grandchild 3 [3 ms, 4 ms], child 4 [6 ms, 8 ms].
    std::vector<Call> calls{call(1, std::nullopt, 1'000'000, 8'000'000), call(2, 1, 2'000'000, 3'000'000),
                            call(3, 2, 3'000'000, 1'000'000), call(4, 1, 6'000'000, 2'000'000)};
    std::vector<KernelLogMessage> log{kmsg_at(3'500), kmsg_at(2'500), kmsg_at(5'500), kmsg_at(7'000), kmsg_at(20'000)};
    attach_kernel_log_by_time(log, calls, same_clock());
    EXPECT_EQ(log[0].call, 3u);
    EXPECT_EQ(log[1].call, 2u);
    EXPECT_EQ(log[2].call, 1u);  // between the children
    EXPECT_EQ(log[3].call, 4u);
    EXPECT_FALSE(log[4].call.has_value());  // after everything
    for (int i = 0; i < 4; ++i)
        EXPECT_EQ(log[i].attached, "time");
    EXPECT_EQ(log[4].attached, "none");
    EXPECT_EQ(log[0].trace_ts_ns, 3'500'000u);
}

TEST(KernelLogTime, OffsetMapsKmsgTimeToTheTraceClock) {
    std::vector<Call> calls{call(1, std::nullopt, 101'000'000, 1'000'000)};
    std::vector<KernelLogMessage> log{kmsg_at(1'500)};
    attach_kernel_log_by_time(log, calls, KmsgClockOffset{"mono", 100'000'000, 10'000, "measured"});
    EXPECT_EQ(log[0].call, 1u);
    EXPECT_EQ(log[0].trace_ts_ns, 101'500'000u);
    // Without an offset nothing is attached, and the message says so.
    log = {kmsg_at(101'500)};
    attach_kernel_log_by_time(log, calls, KmsgClockOffset{"x86-tsc", std::nullopt, 0, "unknown"});
    EXPECT_FALSE(log[0].call.has_value());
    EXPECT_EQ(log[0].attached, "none");
    EXPECT_FALSE(log[0].trace_ts_ns.has_value());
    log = {kmsg_at(101'500)};
    attach_kernel_log_by_time(log, calls, std::nullopt);
    EXPECT_EQ(log[0].attached, "none");
}

TEST(KernelLogTime, UncertaintyWiderThanTheCallLeavesItUnattached) {
    // The call lasts 5 us; the clock is only known to +-20 us: it cannot be said to have been running.
    std::vector<Call> calls{call(1, std::nullopt, 1'000'000, 5'000)};
    std::vector<KernelLogMessage> log{kmsg_at(1'001)};
    attach_kernel_log_by_time(log, calls, KmsgClockOffset{"mono", 0, 20'000, "measured"});
    EXPECT_FALSE(log[0].call.has_value());
    // Exactly known, it was.
    log = {kmsg_at(1'001)};
    attach_kernel_log_by_time(log, calls, same_clock());
    EXPECT_EQ(log[0].call, 1u);
    // A long root holds the window, but its child starts inside it: stop at the root.
    calls = {call(1, std::nullopt, 0, 10'000'000), call(2, 1, 1'000'500, 5'000)};
    log = {kmsg_at(1'000)};
    attach_kernel_log_by_time(log, calls, same_clock());
    EXPECT_EQ(log[0].call, 1u);
    // Another task's short call overlapping the window makes the long one uncertain too.
    calls = {call(1, std::nullopt, 0, 10'000'000, 5), call(2, std::nullopt, 1'000'500, 5'000, 6)};
    log = {kmsg_at(1'000)};
    attach_kernel_log_by_time(log, calls, same_clock());
    EXPECT_FALSE(log[0].call.has_value());
}

TEST(KernelLogTime, TwoTasksInsideCallsAtThatTimeIsAmbiguous) {
    std::vector<Call> calls{call(1, std::nullopt, 1'000'000, 8'000'000, 5),
                            call(2, std::nullopt, 2'000'000, 8'000'000, 6)};
    std::vector<KernelLogMessage> log{kmsg_at(1'500), kmsg_at(3'000), kmsg_at(9'500)};
    attach_kernel_log_by_time(log, calls, same_clock());
    EXPECT_EQ(log[0].call, 1u);
    EXPECT_FALSE(log[1].call.has_value());  // both running: the record does not say which CPU printed it
    EXPECT_EQ(log[1].attached, "none");
    EXPECT_EQ(log[2].call, 2u);
}

TEST(KernelLogTime, CallsWithoutExitAreNeverTheAnswerAndConsoleMessagesAreKept) {
    std::vector<Call> calls{call(1, std::nullopt, 1'000'000, std::nullopt)};
    std::vector<KernelLogMessage> log{kmsg_at(1'500), kmsg_at(1'500)};
    log[1].attached = "console";
    log[1].call = 7;
    attach_kernel_log_by_time(log, calls, same_clock());
    EXPECT_FALSE(log[0].call.has_value());
    EXPECT_EQ(log[1].call, 7u);
    EXPECT_EQ(log[1].attached, "console");
}

TEST(KernelLogTime, BuildReportAttachesKmsgByTimeAndRecordsTheClock) {
    EventStream s;
    FuncEntry e;
    e.function = "drv_ioctl";
    FuncExit x;
    x.function = "drv_ioctl";
    x.calltime_ns = 1'000'000;
    x.rettime_ns = 3'000'000;
    s.events = {Event{1'000'000, 0, 5, false, e}, Event{3'000'000, 0, 5, false, x}};
    s.kmsg = {{"4,10,2000,-;NVRM: inside"}, {"4,11,5000,-;NVRM: after"}};
    s.kmsg_clock = KmsgClockOffset{"global", 0, 0, "same_clock"};
    Report r = build_report(s);
    ASSERT_EQ(r.kernel_log.size(), 2u);
    ASSERT_EQ(r.calls.size(), 1u);
    EXPECT_EQ(r.kernel_log[0].call, r.calls[0].id);
    EXPECT_EQ(r.kernel_log[0].attached, "time");
    EXPECT_EQ(r.kernel_log[1].attached, "none");
    ASSERT_TRUE(r.kmsg_clock);
    EXPECT_EQ(r.kmsg_clock->basis, "same_clock");
    auto j = to_json(r);
    EXPECT_EQ(j["kmsg_clock"]["trace_clock"], "global");
    EXPECT_EQ(j["kernel_log"][0]["attached"], "time");
    EXPECT_EQ(j["kernel_log"][0]["trace_ts"], 2'000'000);
}
