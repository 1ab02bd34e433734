// The ioctl part of nvtrace diff (analyze/diff/diff_ioctls.cpp): two ioctl-only reports compared by their
// ioctl_stats rows: added / removed requests, count changes, latency changes past the threshold, new errors.
#include <gtest/gtest.h>

#include "../../../analyze/json_values.hpp"
#include "nvtrace/diff.hpp"
#include "nvtrace/ioctl.hpp"
#include "nvtrace/report_io.hpp"

using namespace nvtrace;

namespace {

IoctlRecord rec(std::string dev, std::uint64_t cmd, std::string name, std::int64_t ret, std::uint64_t dur) {
    IoctlRecord r;
    r.pid = 7;
    r.fd = 5;
    r.fd_path = std::move(dev);
    r.cmd = cmd;
    r.name = std::move(name);
    r.ret = ret;
    r.enter_ns = 100;
    r.exit_ns = 100 + dur;
    r.duration_ns = dur;
    return r;
}

Report report(const std::vector<IoctlRecord>& v) {
    Report r;
    r.ioctls = v;
    r.ioctl_stats = ioctl_stats(v);
    return r;
}

const IoctlDiffRow* find(const DiffResult& d, const std::string& name) {
    for (const auto& r : d.ioctls)
        if (r.name == name) return &r;
    return nullptr;
}

}  // namespace

TEST(DiffIoctls, AddedRemovedCountLatencyAndNewErrors) {
    // A: FIONREAD x2 at 1 us, RM_ALLOC at 50 us, RM_FREE. B: FIONREAD x3 at 1 us (count), RM_ALLOC at 100 us
    // (latency: +50 us, +100%) and one ENOTTY (new error), RM_CONTROL (added); RM_FREE removed.
    Report a = report({rec("/dev/pts/0", 0x541b, "FIONREAD", 0, 1000), rec("/dev/pts/0", 0x541b, "FIONREAD", 0, 1000),
                       rec("/dev/nvidiactl", 0xc030462b, "NV_ESC_RM_ALLOC", 0, 50'000),
                       rec("/dev/nvidiactl", 0xc0104629, "NV_ESC_RM_FREE", 0, 3000)});
    Report b = report({rec("/dev/pts/0", 0x541b, "FIONREAD", 0, 1000), rec("/dev/pts/0", 0x541b, "FIONREAD", 0, 1000),
                       rec("/dev/pts/0", 0x541b, "FIONREAD", 0, 1000),
                       rec("/dev/nvidiactl", 0xc030462b, "NV_ESC_RM_ALLOC", 0, 100'000),
                       rec("/dev/nvidiactl", 0xc030462b, "NV_ESC_RM_ALLOC", -25, 100'000),
                       rec("/dev/nvidiactl", 0xc020462a, "NV_ESC_RM_CONTROL", 0, 2000)});
    DiffResult d = diff_reports(a, b, DiffOptions{});
    EXPECT_TRUE(d.ioctls_compared);
    EXPECT_EQ(d.ioctl_summary.added, 1u);
    EXPECT_EQ(d.ioctl_summary.removed, 1u);
    EXPECT_EQ(d.ioctl_summary.count_changes, 2u);  // FIONREAD 2 -> 3, RM_ALLOC 1 -> 2
    EXPECT_EQ(d.ioctl_summary.latency_changes, 1u);
    EXPECT_EQ(d.ioctl_summary.new_errors, 1u);
    EXPECT_TRUE(d.any_change());
    ASSERT_EQ(d.ioctls.size(), 4u);

    const IoctlDiffRow* alloc = find(d, "NV_ESC_RM_ALLOC");
    ASSERT_TRUE(alloc);
    EXPECT_EQ(alloc->status, DiffStatus::changed);
    EXPECT_TRUE(alloc->latency_changed);
    EXPECT_EQ(alloc->delta_mean_ns, 50'000);
    EXPECT_EQ(alloc->new_errors, std::vector<std::string>{"ENOTTY"});
    const IoctlDiffRow* fionread = find(d, "FIONREAD");
    ASSERT_TRUE(fionread);
    EXPECT_TRUE(fionread->count_changed);
    EXPECT_FALSE(fionread->latency_changed);
    EXPECT_EQ(fionread->delta_count, 1);
    EXPECT_EQ(find(d, "NV_ESC_RM_CONTROL")->status, DiffStatus::added);
    EXPECT_EQ(find(d, "NV_ESC_RM_FREE")->status, DiffStatus::removed);

    const std::string text = format_diff_text(d);
    EXPECT_NE(text.find("# ioctls by (device, request), every task; latency changes need |delta mean| >= 10.000 us "
                        "and >= 20% of A\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("#  1 added request(s), 1 removed request(s), 2 count change(s), 1 latency change(s), 1 "
                        "with new errors\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("~      1 -> 2         50.000 us   100.000 us   +50.000 us (+100.0%)  nvidiactl "
                        "NV_ESC_RM_ALLOC  [count +1; latency; new errors: ENOTTY x1]\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("+      - -> 1                 -     2.000 us                      -  nvidiactl "
                        "NV_ESC_RM_CONTROL\n"),
              std::string::npos)
        << text;

    const auto j = to_json(d)["ioctls"];
    EXPECT_EQ(j["summary"]["any_change"], true);
    EXPECT_EQ(j["rows"].size(), 4u);

    // The threshold is the tree's: 60 us absolute is not reached by +50 us.
    DiffOptions strict;
    strict.threshold.min_abs_ns = 60'000;
    EXPECT_EQ(diff_reports(a, b, strict).ioctl_summary.latency_changes, 0u);
}

TEST(DiffIoctls, SameRequestsAreNoChange) {
    Report a = report({rec("/dev/pts/0", 0x541b, "FIONREAD", 0, 1000)});
    Report b = report({rec("/dev/pts/0", 0x541b, "FIONREAD", 0, 1100)});  // +10%: noise
    DiffResult d = diff_reports(a, b, DiffOptions{});
    EXPECT_TRUE(d.ioctls.empty());
    EXPECT_FALSE(d.any_change());
    EXPECT_NE(format_diff_text(d).find("#  no ioctl change\n"), std::string::npos);
    DiffOptions all;
    all.keep_unchanged = true;
    EXPECT_EQ(diff_reports(a, b, all).ioctls.size(), 1u);
}

// Two shared strace cases: the k8s blog's UVM_DEINITIALIZE (fd -1, EBADF) and NV_ESC_RM_FREE (fd 3) against the
// gVisor log's 4 NV_ESC_RM_CONTROL on /dev/nvidiactl (mean 21.702 us over the 3 with a duration).
TEST(DiffIoctls, SharedStraceCases) {
    const std::string cases = std::string(NVTRACE_TEST_DATA) + "/cases/";
    auto a = load_report_input(cases + "strace-uvm-eperm-ioc0-stdout-interleave.txt");
    auto b = load_report_input(cases + "strace-gvisor-nvproxy-ex-pairs.txt");
    ASSERT_TRUE(a && b);
    DiffResult d = diff_reports(*a, *b, DiffOptions{});
    EXPECT_EQ(d.ioctl_summary.added, 1u);
    EXPECT_EQ(d.ioctl_summary.removed, 2u);
    ASSERT_EQ(d.ioctls.size(), 3u);
    EXPECT_EQ(d.ioctls[0].status, DiffStatus::added);
    EXPECT_EQ(d.ioctls[0].b->count, 4u);
    EXPECT_EQ(d.ioctls[0].b->mean_ns, 21'702u);
    EXPECT_EQ(d.ioctls[0].new_errors.size(), 0u);
    EXPECT_EQ(d.ioctls[1].status, DiffStatus::removed);
    EXPECT_EQ(d.ioctls[1].name, "UVM_DEINITIALIZE");
    EXPECT_EQ(d.ioctls[1].fd, -1);
    // The other way round, the UVM request's EBADF is a new error of an added request.
    DiffResult back = diff_reports(*b, *a, DiffOptions{});
    EXPECT_EQ(back.ioctl_summary.new_errors, 1u);
}
