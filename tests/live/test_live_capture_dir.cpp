// Tier 2: the raw capture directory on this machine's kernel (docs/formats.md, "Capture directory"):
// `nvtrace report DIR` re-analyses the saved ring-buffer pages into the same report, and a tiny buffer read
// only at the end accounts for every event (kept + overrun).
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "live_util.hpp"

using namespace nvtrace::live;

namespace {

// Text without its first `drop_front` and last `drop_back` lines.
std::string lines_between(const std::string& text, std::size_t drop_front, std::size_t drop_back) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);)
        lines.push_back(l);
    std::string out;
    for (std::size_t i = drop_front; i + drop_back < lines.size(); ++i)
        out += lines[i] + "\n";
    return out;
}

const nlohmann::json* buffer(const nlohmann::json& meta, const std::string& name) {
    for (const auto& b : meta["raw"]["buffers"])
        if (b["name"] == name) return &b;
    return nullptr;
}

}  // namespace

TEST(LiveCaptureDir, ReportOfTheSavedRawDataEqualsTheLiveReport) {
    REQUIRE_LIVE();
    auto before = tracefs_snapshot();
    const std::string probe = kmsg_probe_line();  // neutral: no GPU-monitor line in the host's log
    std::string out = temp_dir();
    // More ioctls than the streamed report holds at once (IoctlCollector::kHeldRecords = 4096): records are
    // written while later pages are still being decoded.
    Ran r = run({NVTRACE_BIN, "run", "-q", "--out", out, "--", FIONREAD_LOOP_BIN, "6000", probe});
    ASSERT_EQ(r.rc, 0) << r.err << r.out;
    EXPECT_EQ(tracefs_snapshot(), before);

    // The directory holds the raw pages and what decodes them.
    nlohmann::json meta = load_json(out + "/meta.json");
    ASSERT_EQ(meta["capture_format"], 1);
    const nlohmann::json* inst = buffer(meta, "instance");
    ASSERT_NE(inst, nullptr) << meta["raw"].dump(1);
    std::uint64_t page = (*inst)["page_size"];
    ASSERT_GT(page, 0u);
    std::uint64_t bytes = 0;
    for (const auto& cpu : (*inst)["cpus"]) {
        struct stat sb {};
        std::string f = out + "/raw/instance/cpu" + std::to_string(cpu.get<int>());
        ASSERT_EQ(::stat(f.c_str(), &sb), 0) << f;
        EXPECT_EQ(static_cast<std::uint64_t>(sb.st_size) % page, 0u) << f;
        bytes += static_cast<std::uint64_t>(sb.st_size);
    }
    EXPECT_EQ(bytes, (*inst)["pages"].get<std::uint64_t>() * page);
    for (const char* f : {"events/header_page", "events/header_event", "events/syscalls/sys_enter_ioctl/format",
                          "events/syscalls/sys_exit_ioctl/format", "events/ftrace/print/format", "comms.json",
                          "fd_paths.json", "buffer_stats.json", "kmsg"})
        EXPECT_EQ(::access((out + "/" + f).c_str(), R_OK), 0) << f;
    EXPECT_NE(slurp(out + "/kmsg").find(probe), std::string::npos);

    Ran rep = run({NVTRACE_BIN, "report", out, "--json"});
    ASSERT_EQ(rep.rc, 0) << rep.err;
    nlohmann::json offline = nlohmann::json::parse(rep.out);
    nlohmann::json live = load_json(out + "/report.json");
    ASSERT_GE(live["ioctls"].size(), 6000u);
    EXPECT_EQ(offline, live) << "the re-analysis differs from the live report";

    // The old behaviour stays available: the saved report.json as it is.
    Ran re = run({NVTRACE_BIN, "report", out, "--reemit", "--json"});
    ASSERT_EQ(re.rc, 0) << re.err;
    EXPECT_EQ(nlohmann::json::parse(re.out), live);
    std::filesystem::remove_all(out);
}

// `nvtrace run` is a capture followed by `nvtrace report DIR`: its report.json has the bytes `report DIR -o`
// writes, and its summary is that of `report DIR` (which adds the "input:" line first; run names its report.json
// last). Markers, diagnostics and checks included: the run's summary left markers and diagnostics out before.
TEST(LiveCaptureDir, RunReportAndSummaryAreThoseOfReportDir) {
    REQUIRE_LIVE();
    auto before = tracefs_snapshot();
    std::string out = temp_dir();
    Ran r = run({NVTRACE_BIN, "run", "--out", out, "--", FIONREAD_LOOP_BIN, "50", kmsg_probe_line()});
    ASSERT_EQ(r.rc, 0) << r.err << r.out;
    EXPECT_EQ(tracefs_snapshot(), before);
    std::string again = temp_dir() + "/report.json";
    Ran rep = run({NVTRACE_BIN, "report", out, "-o", again});
    ASSERT_EQ(rep.rc, 0) << rep.err;
    EXPECT_EQ(slurp(again), slurp(out + "/report.json"));
    EXPECT_NE(r.out.find("markers: "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\nreport: " + out + "/report.json\n"), std::string::npos) << r.out;
    EXPECT_EQ(rep.out.rfind("input: " + out + " (", 0), 0u) << rep.out;
    EXPECT_EQ(lines_between(r.out, 0, 1), lines_between(rep.out, 1, 1)) << "run:\n" << r.out << "report:\n" << rep.out;
    std::filesystem::remove_all(out);
    std::filesystem::remove_all(std::filesystem::path(again).parent_path());
}

// "a run with a tiny buffer and no draining must report exactly the overrun the kernel counted".
// fionread_loop N does exactly N ioctls (checked by the first run, drained as usual); nvtrace writes two
// markers (nvtrace-start, nvtrace-end) into the same buffer. With the smallest buffer and no reading until
// the end, the records kept plus the overrun the kernel counted must be exactly 2N + 2.
TEST(LiveCaptureDir, TinyBufferWithoutDrainingKeptPlusOverrunIsEveryEvent) {
    REQUIRE_LIVE();
    auto before = tracefs_snapshot();
    const int n = 5000;
    // Only the ioctls, the two markers and the program's exec (task:task_rename, where the kernel has it: the comms):
    // no fd-syscall events and no poll brackets (a test hook, docs/testing.md).
    const std::uint64_t expected =
        2u * n + 2u + (std::filesystem::exists("/sys/kernel/tracing/events/task/task_rename") ? 1u : 0u);
    ::setenv("NVTRACE_TEST_NO_FD_EVENTS", "1", 1);
    struct Unset {
        ~Unset() { ::unsetenv("NVTRACE_TEST_NO_FD_EVENTS"); }
    } unset;

    std::string full = temp_dir();
    Ran r0 = run({NVTRACE_BIN, "run", "-q", "--no-preload", "--out", full, "--", FIONREAD_LOOP_BIN, std::to_string(n)});
    ASSERT_EQ(r0.rc, 0) << r0.err;
    nlohmann::json meta0 = load_json(full + "/meta.json");
    nlohmann::json rep0 = load_json(full + "/report.json");
    ASSERT_EQ(rep0["completeness"]["overruns"], 0) << "the drained run must keep everything";
    EXPECT_EQ((*buffer(meta0, "instance"))["records"].get<std::uint64_t>(), expected);

    std::string tiny = temp_dir();
    ::setenv("NVTRACE_TEST_NO_DRAIN", "1", 1);
    Ran r1 = run({NVTRACE_BIN, "run", "-q", "--no-preload", "--buffer-size", "1", "--out", tiny, "--",
                  FIONREAD_LOOP_BIN, std::to_string(n)});
    ::unsetenv("NVTRACE_TEST_NO_DRAIN");
    ASSERT_EQ(r1.rc, 0) << r1.err;
    nlohmann::json meta = load_json(tiny + "/meta.json");
    nlohmann::json rep = load_json(tiny + "/report.json");
    EXPECT_EQ(meta["raw"]["drained_while_running"], false);
    EXPECT_EQ(meta["buffer_size_kb"], 1);
    std::uint64_t kept = (*buffer(meta, "instance"))["records"];
    std::uint64_t overrun = rep["completeness"]["overruns"];
    EXPECT_GT(overrun, 0u);
    EXPECT_EQ(kept + overrun, expected) << "kept " << kept << " + overrun " << overrun;
    EXPECT_EQ(rep["completeness"]["complete"], false);
    bool says_overrun = false;
    for (const auto& why : rep["completeness"]["reasons"])
        if (why.get<std::string>().find("overr") != std::string::npos) says_overrun = true;
    EXPECT_TRUE(says_overrun) << rep["completeness"].dump(1);

    // The incomplete capture re-analyses to the same report too.
    Ran again = run({NVTRACE_BIN, "report", tiny, "--json"});
    ASSERT_EQ(again.rc, 0) << again.err;
    EXPECT_EQ(nlohmann::json::parse(again.out), rep);

    EXPECT_EQ(tracefs_snapshot(), before);
    std::filesystem::remove_all(full);
    std::filesystem::remove_all(tiny);
}

// `nvtrace run --trace-dat`: the saved pages become a trace.dat through `trace-cmd restore`; trace-cmd itself
// opens it with every ioctl event, and nvtrace's own trace.dat reader finds the same ioctls as the live run.
TEST(LiveCaptureDir, TraceDatFromTheRawPagesOpensInTraceCmdWithTheSameIoctls) {
    REQUIRE_LIVE();
    if (run({"trace-cmd", "--version"}).rc == 127) {
        const char* ci = std::getenv("CI");
        if (ci && std::string(ci) == "true") FAIL() << "trace-cmd is part of the CI machine (ci-environment.md)";
        GTEST_SKIP() << "needs trace-cmd";
    }
    auto before = tracefs_snapshot();
    std::string out = temp_dir();
    Ran r =
        run({NVTRACE_BIN, "run", "-q", "--no-preload", "--trace-dat", "--out", out, "--", FIONREAD_LOOP_BIN, "300"});
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(tracefs_snapshot(), before);
    nlohmann::json meta = load_json(out + "/meta.json");
    ASSERT_EQ(meta["trace_dat"], nlohmann::json::array({"trace.dat"})) << r.err;
    nlohmann::json live = load_json(out + "/report.json");
    ASSERT_GE(live["ioctls"].size(), 300u);

    Ran tc = run({"trace-cmd", "report", out + "/trace.dat"});
    ASSERT_EQ(tc.rc, 0) << tc.err;
    std::size_t enters = 0, exits = 0;
    std::istringstream lines(tc.out);
    for (std::string line; std::getline(lines, line);) {
        if (line.find(" sys_enter_ioctl:") != std::string::npos) ++enters;
        if (line.find(" sys_exit_ioctl:") != std::string::npos) ++exits;
    }
    EXPECT_EQ(enters, live["ioctls"].size());
    EXPECT_EQ(exits, live["ioctls"].size());

    Ran own = run({NVTRACE_BIN, "report", out + "/trace.dat", "--json"});
    ASSERT_EQ(own.rc, 0) << own.err;
    nlohmann::json dat = nlohmann::json::parse(own.out);
    ASSERT_EQ(dat["ioctls"].size(), live["ioctls"].size());
    for (std::size_t i = 0; i < dat["ioctls"].size(); ++i)
        for (const char* k : {"pid", "fd", "cmd", "name", "ret", "enter_ns", "exit_ns"})
            EXPECT_EQ(dat["ioctls"][i][k], live["ioctls"][i][k]) << "ioctl " << i << " " << k;
    std::filesystem::remove_all(out);
}

// Every task the events name gets its own comm, never ftrace's "<...>": 7 python threads (one renamed with
// prctl(PR_SET_NAME)) doing FIONREAD, then a forked child that execs python3 again. saved_cmdlines, where comms.json
// came from, had none of the threads or the child (every one "<...>" in 3 of 3 runs): it keeps a task only when it
// was switched out with a record of its CPU waiting, in 128 slots the whole machine shares. Each task prints its
// comm as /proc/self/task/TID/comm gives it; comms.json and every ioctl of the report must say the same.
TEST(LiveCaptureDir, ThreadsAndForkedChildrenHaveTheirOwnCommNotThePlaceholder) {
    REQUIRE_LIVE();
    if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/python3";
    const std::string out = temp_dir();
    const std::string script = out + "-comm_tasks.py";
    {
        std::ofstream f(script);
        f << R"(import ctypes, fcntl, os, sys, termios, threading
def work(name):
    if name:
        ctypes.CDLL(None).prctl(15, name.encode(), 0, 0, 0)  # PR_SET_NAME
    tid = threading.get_native_id()
    with open("/proc/self/task/%d/comm" % tid) as f:
        print("task %d %s" % (tid, f.read().strip()), flush=True)
    r, w = os.pipe()
    for _ in range(20):
        fcntl.ioctl(r, termios.FIONREAD, b"\0\0\0\0")
    os.close(r)
    os.close(w)
if sys.argv[1:] == ["child"]:
    work(None)
    sys.exit(0)
ts = [threading.Thread(target=work, args=(None,)) for _ in range(6)]
ts.append(threading.Thread(target=work, args=("nvt-named",)))
for t in ts:
    t.start()
    t.join()  # one at a time: their lines on stdout do not interleave
pid = os.fork()
if pid == 0:
    os.execv("/usr/bin/python3", ["python3", sys.argv[0], "child"])
os.waitpid(pid, 0)
)";
    }
    Ran r = run({NVTRACE_BIN, "run", "-q", "--out", out, "--", "/usr/bin/python3", script});
    std::filesystem::remove(script);
    ASSERT_EQ(r.rc, 0) << r.out << r.err;
    std::map<int, std::string> truth;  // tid -> comm, as /proc said
    std::istringstream lines(r.out);
    for (std::string l; std::getline(lines, l);) {
        int tid = 0;
        char comm[64] = {};
        if (std::sscanf(l.c_str(), "task %d %63s", &tid, comm) == 2) truth[tid] = comm;
    }
    ASSERT_EQ(truth.size(), 8u) << r.out;  // 7 threads and the child
    nlohmann::json comms = load_json(out + "/comms.json");
    for (const auto& [pid, comm] : comms.items())
        EXPECT_NE(comm.get<std::string>(), "<...>") << "pid " << pid << ": the placeholder is not a comm";
    for (const auto& [tid, comm] : truth) {
        ASSERT_TRUE(comms.contains(std::to_string(tid))) << tid << " " << comms.dump();
        EXPECT_EQ(comms[std::to_string(tid)], comm) << "task " << tid;
    }
    nlohmann::json rep = load_json(out + "/report.json");
    std::map<int, int> ioctls_of;
    for (const auto& io : rep["ioctls"]) {
        const int pid = io["pid"].get<int>();
        if (!truth.count(pid)) continue;
        ++ioctls_of[pid];
        EXPECT_EQ(io["comm"], truth[pid]) << io.dump();
    }
    EXPECT_EQ(ioctls_of.size(), truth.size()) << "every task's FIONREADs are in the report";
    Ran again = run({NVTRACE_BIN, "report", out, "--json"});
    ASSERT_EQ(again.rc, 0) << again.err;
    EXPECT_EQ(nlohmann::json::parse(again.out)["ioctls"], rep["ioctls"]);
}
