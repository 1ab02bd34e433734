// Tier 2: the ioctl statistics of a live ioctl-only capture (this kernel refuses function tracing): `nvtrace run`
// of fionread_loop prints the table of requests, and report.json's ioctl_stats are those of its ioctls; the CSV
// export of the run is its ioctls, not a bare header. Needs root and tracefs (REQUIRE_LIVE).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "live_util.hpp"

using namespace nvtrace::live;

namespace {
std::string us(std::uint64_t ns) {
    return fmt::format("{:.3f}", static_cast<double>(ns) / 1e3);
}
}  // namespace

TEST(LiveIoctlStats, RunPrintsTheRequestTableAndTheReportHoldsItsStats) {
    REQUIRE_LIVE();
    auto before = tracefs_snapshot();
    std::string out = temp_dir();
    Ran r = run({NVTRACE_BIN, "run", "--no-preload", "--out", out, "--", FIONREAD_LOOP_BIN, "200"});
    ASSERT_EQ(r.rc, 0) << r.err << r.out;

    nlohmann::json rep = load_json(out + "/report.json");
    // The FIONREAD calls as recorded: their count, summed and largest latency.
    std::uint64_t n = 0, total = 0, max = 0;
    nlohmann::json device = nullptr;
    for (const auto& io : rep["ioctls"]) {
        if (io["name"] != "FIONREAD") continue;
        ++n;
        ASSERT_TRUE(io["duration_ns"].is_number_unsigned()) << io.dump();
        const std::uint64_t d = io["duration_ns"];
        EXPECT_EQ(d, io["exit_ns"].get<std::uint64_t>() - io["enter_ns"].get<std::uint64_t>());
        total += d;
        max = std::max(max, d);
        device = io["fd_path"];
    }
    ASSERT_EQ(n, 200u);
    const nlohmann::json* row = nullptr;
    for (const auto& s : rep["ioctl_stats"])
        if (s["name"] == "FIONREAD" && s["pid"].is_null()) row = &s;
    ASSERT_TRUE(row) << rep["ioctl_stats"].dump(1);
    EXPECT_EQ((*row)["count"], 200);
    EXPECT_EQ((*row)["errors"], 0);
    EXPECT_EQ((*row)["unfinished"], 0);
    EXPECT_EQ((*row)["latency_unknown"], 0);
    EXPECT_EQ((*row)["total_ns"], total);
    EXPECT_EQ((*row)["max_ns"], max);
    EXPECT_EQ((*row)["mean_ns"], total / 200);
    EXPECT_EQ((*row)["device"], device);

    // The summary's table: its header and the FIONREAD row with the same figures in us.
    EXPECT_NE(r.out.find("ioctl requests: "), std::string::npos) << r.out;
    const std::string want =
        fmt::format("{:>9} {:>7} {:>13} {:>13} {:>13}  ", 200, 0, us(total), us(total / 200), us(max));
    bool found = false;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);)
        if (line.rfind(want, 0) == 0 && line.find(" FIONREAD") != std::string::npos) found = true;
    EXPECT_TRUE(found) << "no row '" << want << "... FIONREAD' in:\n" << r.out;

    // `nvtrace report DIR` prints the same table (the streamed route of a capture directory).
    Ran again = run({NVTRACE_BIN, "report", out});
    ASSERT_EQ(again.rc, 0) << again.err;
    EXPECT_NE(again.out.find(want), std::string::npos) << again.out;

    // The CSV of an ioctl-only run: one row per ioctl.
    Ran csv = run({NVTRACE_BIN, "export", out, "--format", "csv"});
    ASSERT_EQ(csv.rc, 0) << csv.err;
    std::size_t rows = 0, fionread_rows = 0;
    std::istringstream in(csv.out);
    std::string header;
    std::getline(in, header);
    EXPECT_EQ(header.rfind("enter_ns,exit_ns,duration_ns,pid,comm,fd,device,", 0), 0u) << header;
    for (std::string line; std::getline(in, line);) {
        ++rows;
        if (line.find(",FIONREAD,0x541b,") != std::string::npos) ++fionread_rows;
    }
    EXPECT_EQ(rows, rep["ioctls"].size());
    EXPECT_EQ(fionread_rows, 200u);
    EXPECT_EQ(tracefs_snapshot(), before);
}
