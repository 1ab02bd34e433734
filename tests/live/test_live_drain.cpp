// Tier 2: the capture's drain on this machine's kernel (docs/run.md "Capture"): while the program runs, only
// full ring-buffer pages are moved to the capture directory (splice), the pages are decoded after the run, and
// the open files are followed through the program's process tree rather than through the decoded events.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "live_util.hpp"

using namespace nvtrace::live;

namespace {

const nlohmann::json* buffer(const nlohmann::json& meta, const std::string& name) {
    for (const auto& b : meta["raw"]["buffers"])
        if (b["name"] == name) return &b;
    return nullptr;
}

}  // namespace

// Before: the drain read trace_pipe_raw every 10 ms with read(), which also hands over the page the kernel is
// still writing, so a program with sparse events cost one mostly empty 4 KiB page per CPU per 10 ms (40 short
// bursts 10 ms apart: 44 pages for 394 records). Now the pages written while the program runs are
// whole (a page is handed over once the kernel has moved on to the next one), and only the last page of each
// CPU, read after tracing stopped, may be partial. An ioctl event takes at most 48 bytes with its header here,
// a time extend 8 more, a page 4096 bytes with a 16-byte header: 64 bytes per record bounds the whole pages.
TEST(LiveDrain, SparseEventsAreWrittenAsFullPagesNotOnePagePerDrain) {
    REQUIRE_LIVE();
    std::string out = temp_dir() + "/cap";
    std::string script =
        "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 "
        "31 32 33 34 35 36 37 38 39 40; do " +
        std::string(FIONREAD_LOOP_BIN) + " 5 || exit 1; sleep 0.01; done";
    Ran r = run({NVTRACE_BIN, "run", "-q", "--no-preload", "--out", out, "--", "/bin/sh", "-c", script});
    ASSERT_EQ(r.rc, 0) << r.err;
    nlohmann::json meta = load_json(out + "/meta.json");
    const nlohmann::json* inst = buffer(meta, "instance");
    ASSERT_NE(inst, nullptr) << meta["raw"].dump();
    const auto pages = (*inst)["pages"].get<std::uint64_t>();
    const auto records = (*inst)["records"].get<std::uint64_t>();
    const auto page_size = (*inst)["page_size"].get<std::uint64_t>();
    const auto cpus = (*inst)["cpus"].size();
    EXPECT_TRUE(meta["raw"]["drained_while_running"].get<bool>());
    // Before, pages read while the kernel was writing them decoded with errors on this kernel (6.18: "an event
    // length of 0 bytes") and 8 of the 402 records were lost.
    EXPECT_TRUE(meta["raw"]["decode_error"].is_null()) << meta["raw"].dump();
    // 40 x 5 FIONREAD ioctls, enter and exit, plus nvtrace's two markers (the shell's own ioctls come on top).
    ASSERT_GE(records, 402u) << meta["raw"].dump();
    const std::uint64_t whole_pages = (records * 64 + (page_size - 16) - 1) / (page_size - 16);
    EXPECT_LE(pages, whole_pages + cpus) << records << " records in " << pages << " pages of " << page_size;
    // The page files hold exactly the pages meta.json counts.
    std::uint64_t bytes = 0;
    for (const auto& cpu : (*inst)["cpus"])
        bytes += std::filesystem::file_size(out + "/raw/instance/cpu" + std::to_string(cpu.get<int>()));
    EXPECT_EQ(bytes, pages * page_size);
    // ... and the offline reader decodes as many records from them (it fails on any other count).
    Ran rep = run({NVTRACE_BIN, "report", out, "--json"});
    ASSERT_EQ(rep.rc, 0) << rep.err;
    nlohmann::json report = nlohmann::json::parse(rep.out);
    EXPECT_EQ(report["ioctls"].size(), 200u);
}

// The open files of the program's processes are found through its process tree (/proc parent links and its
// process group), not only through the pids in its events: a grandchild in a session of its own (setsid) that
// makes no ioctl at all still has its fds recorded. Before, the pids to follow came from the decoded events
// only, and this `sleep` never showed in them.
TEST(LiveDrain, FdPathOfAGrandchildInItsOwnSessionIsRecordedThroughTheProcessTree) {
    REQUIRE_LIVE();
    if (::access("/usr/bin/setsid", X_OK) != 0) GTEST_SKIP() << "needs setsid (util-linux)";
    std::string dir = temp_dir();
    std::string held = dir + "/held-by-grandchild";
    std::ofstream(held) << "x\n";
    std::string out = dir + "/cap";
    // --timeout ends the tree after half a second of 10 ms polls, while the grandchild still holds fd 7.
    Ran r = run({NVTRACE_BIN, "run", "-q", "--no-preload", "--timeout", "0.5", "--out", out, "--", "/bin/sh", "-c",
                 "/usr/bin/setsid /bin/sh -c 'exec sleep 30 7<" + held + "' & wait"});
    ASSERT_TRUE(std::filesystem::exists(out + "/fd_paths.json")) << r.err;
    nlohmann::json meta = load_json(out + "/meta.json");
    nlohmann::json fds = load_json(out + "/fd_paths.json");
    // The grandchild left running when the program ended is ended by nvtrace: its pid is in meta.json.
    int sleep_pid = -1;
    for (const auto& p : meta["descendants_ended"])
        if (p["comm"] == "sleep") sleep_pid = p["pid"].get<int>();
    ASSERT_GT(sleep_pid, 0) << meta["descendants_ended"].dump();
    ASSERT_NE(sleep_pid, meta["pid"].get<int>());
    if (fds.is_object()) fds = fds["samples"];  // format 2: what the polls saw, [pid, fd, path, first, last poll]
    bool found = false;
    for (const auto& f : fds) {  // [pid, fd, path, ...]
        ASSERT_TRUE(f.is_array() && f.size() >= 3) << f.dump();
        EXPECT_NE(f[0].get<int>(), static_cast<int>(::getpid()));
        if (f[0] == sleep_pid && f[1] == 7 && f[2] == held) found = true;
    }
    EXPECT_TRUE(found) << "no [" << sleep_pid << ", 7, \"" << held << "\"] in " << fds.dump();
}
