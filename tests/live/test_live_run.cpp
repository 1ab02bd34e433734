// Tier 2: `nvtrace run` on this machine's real kernel (tracepoints, instances, set_event_pid, /dev/kmsg).
// Needs root and tracefs; skips with the reason elsewhere, and fails instead of skipping when CI=true.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "live_util.hpp"

using namespace nvtrace::live;

TEST(LiveRun, CountsExactlyTheTracedProgramsIoctlsAndItsKernelLogLine) {
    REQUIRE_LIVE();
    auto before = tracefs_snapshot();

    // A second process doing its own ioctls the whole time: none of them may appear.
    pid_t other = ::fork();
    if (other == 0) {
        ::execl(FIONREAD_LOOP_BIN, FIONREAD_LOOP_BIN, "0", nullptr);
        ::_exit(127);
    }
    // A neutral line (kmsg_probe_line): the host's kernel log never gets one a GPU monitor would act on.
    const std::string probe = kmsg_probe_line();
    std::string out = temp_dir();
    Ran r = run({NVTRACE_BIN, "run", "--out", out, "--", FIONREAD_LOOP_BIN, "1000", probe});
    ::kill(other, SIGKILL);
    ::waitpid(other, nullptr, 0);
    ASSERT_EQ(r.rc, 0) << r.err << r.out;

    nlohmann::json rep = load_json(out + "/report.json");
    EXPECT_EQ(rep["schema"], "nvtrace.report/1");
    int pid = rep["source"]["pid"];
    std::size_t fionread = 0, from_child = 0, from_other = 0;
    for (const auto& io : rep["ioctls"]) {
        if (io["pid"] == pid) ++from_child;
        if (io["pid"] == other) ++from_other;
        if (io["pid"] == pid && io["name"] == "FIONREAD") {
            ++fionread;
            EXPECT_EQ(io["ret"], 0);
        }
    }
    EXPECT_EQ(fionread, 1000u);
    EXPECT_EQ(from_other, 0u);
    EXPECT_EQ(from_child, rep["ioctls"].size()) << "every recorded ioctl belongs to the traced program";

    bool found = false;
    for (const auto& m : rep["kernel_log"]) {
        if (m["text"] != probe) continue;
        found = true;
        EXPECT_EQ(m["kind"], "other");  // Xid lines are classified in tests/vm and from files
        EXPECT_EQ(m["level"], 3);
    }
    EXPECT_TRUE(found) << rep["kernel_log"].dump(1);
    EXPECT_EQ(rep["completeness"]["complete"], true) << rep["completeness"].dump(1);
    EXPECT_EQ(rep["completeness"]["overruns"], 0);

    Ran v = run({"python3", VALIDATE_REPORT, REPORT_SCHEMA, out + "/report.json"});
    EXPECT_EQ(v.rc, 0) << v.out << v.err;

    EXPECT_EQ(tracefs_snapshot(), before);
}

TEST(LiveRun, ProgramThatCannotBeExecutedIsAUsageErrorAndLeavesNothingBehind) {
    REQUIRE_LIVE();
    auto before = tracefs_snapshot();
    std::string out = temp_dir();
    Ran r = run({NVTRACE_BIN, "run", "--out", out, "--", "/nonexistent/program"});
    EXPECT_EQ(r.rc, 2) << r.err;
    EXPECT_NE(r.err.find("/nonexistent/program"), std::string::npos) << r.err;
    EXPECT_EQ(tracefs_snapshot(), before);
}

// The start announces "capture directory D"; when the program cannot start, D is removed again (nvtrace made it)
// and stderr said nothing of it, so the announced directory was looked for in vain (fresh user).
TEST(LiveRun, ProgramThatCannotBeExecutedSaysTheAnnouncedDirectoryIsNotKept) {
    REQUIRE_LIVE();
    const std::string parent = temp_dir();
    const std::string out = parent + "/capture";
    Ran r = run({NVTRACE_BIN, "run", "--out", out, "--", "/nonexistent/program"});
    EXPECT_EQ(r.rc, 2) << r.err;
    EXPECT_NE(r.err.find("capture directory " + out + "\n"), std::string::npos) << r.err;  // the announcement
    EXPECT_NE(r.err.find("nothing was recorded; capture directory " + out + " not kept"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(out));
    r = run({NVTRACE_BIN, "run", "--out", parent, "--", "/nonexistent/program"});  // a directory that was there
    EXPECT_EQ(r.rc, 2) << r.err;
    EXPECT_NE(r.err.find("nothing was recorded; " + parent + " is as it was"), std::string::npos) << r.err;
    EXPECT_TRUE(std::filesystem::exists(parent));
}

TEST(LiveRun, NotRootIsAnEnvironmentError) {
    REQUIRE_LIVE();
    if (::access("/usr/bin/setpriv", X_OK) != 0) GTEST_SKIP() << "needs setpriv (util-linux)";
    Ran r =
        run({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", NVTRACE_BIN, "run", "--", "true"});
    EXPECT_EQ(r.rc, 3) << r.err;
    EXPECT_NE(r.err.find("needs root"), std::string::npos) << r.err;
}

namespace {

// Runs argv with stdout/stderr to files; once `ready` exists (the traced program made it, so it was released and
// ran) sends `sig` to the command. Waits at most 120 s for `ready`: then the command is killed and rc is -1.
// A fixed delay before the signal could land before nvtrace released the program (0 ioctls under load).
Ran run_and_signal_when_file_exists(const std::vector<std::string>& argv, const std::string& ready, int sig) {
    bool seen = false;
    Ran r = run_with(argv, [&](pid_t pid) {
        for (int i = 0; i < 12000 && !seen; ++i) {
            seen = ::access(ready.c_str(), F_OK) == 0;
            if (!seen) {
                if (::waitpid(pid, nullptr, WNOHANG) == pid) break;  // ended without making it: reported as not seen
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
        }
        ::kill(pid, seen ? sig : SIGKILL);
    });
    if (!seen) r.rc = -1;
    return r;
}

}  // namespace

TEST(LiveRun, SigintStopsTheProgramRestoresStateAndStillWritesTheReport) {
    REQUIRE_LIVE();
    auto before = tracefs_snapshot();
    std::string out = temp_dir();
    // The traced shell makes `ready` only after 100 ioctls of its child (children are traced), then loops until
    // the signal: SIGINT always lands while the program runs, with ioctls already recorded.
    const std::string ready = temp_dir() + "/program-running";
    const std::string loop = FIONREAD_LOOP_BIN;
    Ran r = run_and_signal_when_file_exists({NVTRACE_BIN, "run", "--out", out, "--", "/bin/sh", "-c",
                                             loop + " 100 && : >" + ready + " && exec " + loop + " 0"},
                                            ready, SIGINT);
    ASSERT_NE(r.rc, -1) << "the program never ran (no " << ready << "): " << r.err << r.out;
    EXPECT_EQ(r.rc, 128 + SIGINT) << r.err;
    nlohmann::json rep = load_json(out + "/report.json");
    EXPECT_GT(rep["ioctls"].size(), 0u);
    EXPECT_EQ(tracefs_snapshot(), before);
}

TEST(LiveRun, TimeoutStopsAHangingProgram) {
    REQUIRE_LIVE();
    auto before = tracefs_snapshot();
    std::string out = temp_dir();
    Ran r = run({NVTRACE_BIN, "run", "--timeout", "0.3", "--out", out, "--", "sleep", "30"});
    EXPECT_EQ(r.rc, 0) << r.err;
    nlohmann::json meta = load_json(out + "/meta.json");
    EXPECT_EQ(meta["timed_out"], true);
    EXPECT_EQ(meta["signal"], SIGTERM);
    EXPECT_EQ(tracefs_snapshot(), before);
}

TEST(LiveRun, FunctionGraphRefusedByTheKernelIsAClearEnvironmentError) {
    REQUIRE_LIVE();
    std::string tracers = slurp(kTracing + "/available_tracers");
    if (tracers.find("function_graph") != std::string::npos)
        GTEST_SKIP() << "this kernel has function_graph; the qemu tier tests --module there";
    auto before = tracefs_snapshot();
    // The tracer is checked before the module: this kernel cannot do function_graph for any module.
    Ran r = run({NVTRACE_BIN, "run", "--module", "nvtrace_no_such_module", "--", "true"});
    EXPECT_EQ(r.rc, 3) << r.err;
    EXPECT_NE(r.err.find("function_graph tracer is not available"), std::string::npos) << r.err;
    EXPECT_EQ(tracefs_snapshot(), before);
}

// `nvtrace run --out D --event foo -- true` printed "nvtrace: tracing true; capture directory D" and then the
// --event error: a malformed --event is refused before anything is announced or made.
TEST(LiveRun, MalformedEventIsRefusedBeforeTheRunIsAnnounced) {
    REQUIRE_LIVE();
    std::string out = temp_dir() + "/cap";
    Ran r = run({NVTRACE_BIN, "run", "--out", out, "--event", "foo", "--", "true"});
    EXPECT_EQ(r.rc, 2) << r.err;
    EXPECT_EQ(r.err, "nvtrace run: --event 'foo': expected SYSTEM:EVENT\n");
    EXPECT_FALSE(std::filesystem::exists(out));
}

// `nvtrace report DIR` (the capture directory nvtrace run wrote) summarises the same ioctls, events and kernel
// log as the run printed: each line of the run's summary body is in the report's, in order (the report adds
// markers and diagnostics). And the report.json the run names is an input `nvtrace report` accepts.
TEST(LiveRun, ReportOfTheCaptureDirectoryAndItsReportJsonPrintTheRunsSummary) {
    REQUIRE_LIVE();
    std::string out = temp_dir();
    Ran r = run({NVTRACE_BIN, "run", "--no-preload", "--event", "sched:sched_process_exec", "--out", out, "--",
                 "/bin/sh", "-c", std::string(FIONREAD_LOOP_BIN) + " 30 && " + FIONREAD_LOOP_BIN + " 7"});
    ASSERT_EQ(r.rc, 0) << r.err;
    auto body_of = [](const std::string& text, const std::string& first) {
        std::vector<std::string> lines;
        std::istringstream in(text);
        bool in_body = false;
        for (std::string line; std::getline(in, line);) {
            if (line.rfind(first, 0) == 0) in_body = true;
            if (line.rfind("report: ", 0) == 0) break;
            if (in_body) lines.push_back(line);
        }
        return lines;
    };
    auto run_body = body_of(r.out, "calls: ");
    ASSERT_FALSE(run_body.empty()) << r.out;
    EXPECT_NE(r.out.find("ioctls: 37\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("events: "), std::string::npos) << r.out;
    for (const std::string& input : {out, out + "/report.json"}) {
        Ran rep = run({NVTRACE_BIN, "report", input});
        ASSERT_EQ(rep.rc, 0) << input << ": " << rep.err;
        auto rep_body = body_of(rep.out, "calls: ");
        std::size_t at = 0;
        for (const auto& line : run_body) {
            while (at < rep_body.size() && rep_body[at] != line)
                ++at;
            EXPECT_LT(at, rep_body.size())
                << "'" << line << "' of the run's summary is not in `nvtrace report " << input << "`:\n"
                << rep.out << "\nrun printed:\n"
                << r.out;
        }
    }
}

// fd_paths.json held nvtrace's own fds (/dev/kmsg, trace_pipe_raw, its raw page files):
// nvtrace's start/end markers carry its pid, and that pid was followed like one of the program's.
TEST(LiveRun, FdPathsNeverFollowNvtracesOwnPid) {
    REQUIRE_LIVE();
    std::string out = temp_dir() + "/cap";
    // fionread_loop 0 loops until --timeout ends it: half a second of 10 ms polls sees its pipe for certain.
    Ran r =
        run({NVTRACE_BIN, "run", "-q", "--no-preload", "--timeout", "0.5", "--out", out, "--", FIONREAD_LOOP_BIN, "0"});
    ASSERT_TRUE(std::filesystem::exists(out + "/fd_paths.json")) << r.err;
    nlohmann::json fds = load_json(out + "/fd_paths.json");
    nlohmann::json meta = load_json(out + "/meta.json");
    // Format 2 (fd syscalls recorded) keeps what the polls saw in "samples" ([pid, fd, path, first, last poll]);
    // format 1 is the array of [pid, fd, path] itself.
    if (fds.is_object()) fds = fds["samples"];
    ASSERT_TRUE(fds.is_array()) << fds.dump();
    bool program_pipe = false;
    for (const auto& f : fds) {  // [pid, fd, path, ...]
        ASSERT_TRUE(f.is_array() && f.size() >= 3) << f.dump();
        EXPECT_EQ(f[0], meta["pid"]) << "an fd of another process: " << f.dump();
        const std::string path = f[2].get<std::string>();
        EXPECT_EQ(path.find("trace_pipe_raw"), std::string::npos) << path;
        EXPECT_EQ(path.find("/dev/kmsg"), std::string::npos) << path;
        if (f[0] == meta["pid"] && path.rfind("pipe:[", 0) == 0) program_pipe = true;
    }
    EXPECT_TRUE(program_pipe) << "the program's pipe is not in fd_paths.json: " << fds.dump();
}

// A `nvtrace run -o /sys/kernel/tracing/instances/foo` created (and left) a tracing instance.
TEST(LiveRun, OutInsideTracefsIsRefusedAndCreatesNoInstance) {
    REQUIRE_LIVE();
    auto before = tracefs_snapshot();
    Ran r = run({NVTRACE_BIN, "run", "-q", "--out", kTracing + "/instances/nvtrace-test-out", "--", "true"});
    EXPECT_EQ(r.rc, 2) << r.err;
    EXPECT_NE(r.err.find("inside tracefs"), std::string::npos) << r.err;
    EXPECT_EQ(tracefs_snapshot(), before);
}

// `nvtrace run ... >&-`: the trace_marker fd handed to the program took the free number 1, so the program's
// standard output went into the trace as markers (NVTRACE_TRACE_MARKER_FD=1).
TEST(LiveRun, ClosedStdoutIsNotReusedForTheProgramsMarkerFd) {
    REQUIRE_LIVE();
    auto before = tracefs_snapshot();
    const std::string out = temp_dir(), seen = temp_dir();
    const std::string program = fmt::format(
        "readlink /proc/$$/fd/1 > {0}/fd1 2>&1; echo \"$NVTRACE_TRACE_MARKER_FD\" > {0}/marker_fd; "
        "echo hello-to-stdout",
        seen);
    const std::string cmd = fmt::format("exec '{}' run -q --out '{}' -- sh -c '{}' >&-", NVTRACE_BIN, out, program);
    Ran r = run({"sh", "-c", cmd});
    ASSERT_EQ(r.rc, 0) << r.err;
    const int marker_fd = std::stoi(slurp(seen + "/marker_fd"));
    EXPECT_GE(marker_fd, 3);
    EXPECT_EQ(slurp(seen + "/fd1").find("trace_marker"), std::string::npos) << slurp(seen + "/fd1");
    nlohmann::json rep = load_json(out + "/report.json");
    for (const auto& m : rep["markers"])
        EXPECT_EQ(m["text"].get<std::string>().find("hello-to-stdout"), std::string::npos) << m.dump();
    EXPECT_EQ(tracefs_snapshot(), before);
}
