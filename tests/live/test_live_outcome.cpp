// Tier 2: the program's outcome as scripts see it (`nvtrace run --exit-status program`) and a program that reads
// the terminal (stopped by SIGTTIN, or given the terminal with --tty). Needs root and tracefs.
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "live_util.hpp"

using namespace nvtrace::live;

namespace {

// Runs argv as the leader of a new session whose controlling terminal is a fresh pty (stdin, stdout and stderr
// are its slave): the test's own terminal, if any, is never touched. `input` is written to the master once the
// process started. Returns what the terminal showed and the exit status; the whole session is killed after
// `timeout_s`.
Ran run_on_pty(const std::vector<std::string>& argv, const std::string& input, int timeout_s = 60) {
    int master = -1, slave = -1;
    Ran r;
    if (::openpty(&master, &slave, nullptr, nullptr, nullptr) != 0) {
        r.err = std::string("openpty: ") + std::strerror(errno);
        return r;
    }
    pid_t pid = ::fork();
    if (pid == 0) {
        ::close(master);
        ::setsid();
        ::ioctl(slave, TIOCSCTTY, 0);  // the pty becomes the session's controlling terminal, this group its foreground
        ::dup2(slave, 0);
        ::dup2(slave, 1);
        ::dup2(slave, 2);
        if (slave > 2) ::close(slave);
        std::vector<char*> a;
        for (const auto& s : argv)
            a.push_back(const_cast<char*>(s.c_str()));
        a.push_back(nullptr);
        ::execvp(a[0], a.data());
        ::_exit(127);
    }
    ::close(slave);
    if (!input.empty()) {
        ssize_t w = ::write(master, input.data(), input.size());
        (void)w;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    char buf[4096];
    bool timed_out = false;
    for (;;) {
        if (std::chrono::steady_clock::now() > deadline) {
            timed_out = true;
            ::kill(-pid, SIGKILL);
            ::kill(pid, SIGKILL);
            break;
        }
        pollfd p{master, POLLIN, 0};
        if (::poll(&p, 1, 200) <= 0) {
            int st = 0;
            if (::waitpid(pid, &st, WNOHANG) == pid) {  // ended; what is still buffered is read below
                r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
                pid = -1;
                break;
            }
            continue;
        }
        ssize_t n = ::read(master, buf, sizeof buf);
        if (n <= 0) break;  // EIO: every slave fd is closed
        r.out.append(buf, static_cast<std::size_t>(n));
    }
    for (ssize_t n; (n = ::read(master, buf, sizeof buf)) > 0;)  // non-blocking enough: the slave side is gone
        r.out.append(buf, static_cast<std::size_t>(n));
    ::close(master);
    if (pid > 0) {
        int st = 0;
        ::waitpid(pid, &st, 0);
        r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    if (timed_out) r.err = "timed out after " + std::to_string(timeout_s) + " s";
    return r;
}

}  // namespace

TEST(LiveOutcome, ExitStatusProgramGivesTheProgramsExitCode) {
    REQUIRE_LIVE();
    std::string out = temp_dir();
    Ran r = run({NVTRACE_BIN, "run", "-q", "--exit-status", "program", "--out", out, "--", "sh", "-c", "exit 5"});
    EXPECT_EQ(r.rc, 5) << r.err;
    EXPECT_EQ(load_json(out + "/meta.json")["exit_code"], 5);
    // The default stays: nvtrace's own outcome, 0.
    std::string out2 = temp_dir();
    Ran d = run({NVTRACE_BIN, "run", "-q", "--out", out2, "--", "sh", "-c", "exit 5"});
    EXPECT_EQ(d.rc, 0) << d.err;
    std::string out3 = temp_dir();
    Ran z = run({NVTRACE_BIN, "run", "-q", "--exit-status", "program", "--out", out3, "--", "true"});
    EXPECT_EQ(z.rc, 0) << z.err;
}

TEST(LiveOutcome, ExitStatusProgramOfAProgramKilledBySigsegvIs128Plus11) {
    REQUIRE_LIVE();
    std::string out = temp_dir();
    Ran r =
        run({NVTRACE_BIN, "run", "-q", "--exit-status", "program", "--out", out, "--", "sh", "-c", "kill -SEGV $$"});
    EXPECT_EQ(r.rc, 128 + SIGSEGV) << r.err;
    nlohmann::json meta = load_json(out + "/meta.json");
    EXPECT_EQ(meta["signal"], SIGSEGV);
    EXPECT_TRUE(meta["exit_code"].is_null());
    EXPECT_TRUE(std::filesystem::exists(out + "/report.json"));
    std::string out2 = temp_dir();
    Ran d = run({NVTRACE_BIN, "run", "-q", "--out", out2, "--", "sh", "-c", "kill -SEGV $$"});
    EXPECT_EQ(d.rc, 0) << "without --exit-status the crash is in the summary, not the exit status: " << d.err;
}

TEST(LiveOutcome, NvtracesOwnErrorsComeBeforeTheProgramsStatus) {
    REQUIRE_LIVE();
    // A program that cannot be executed: nvtrace's usage error (2), not the shell's 127.
    Ran r = run({NVTRACE_BIN, "run", "-q", "--exit-status", "program", "--out", temp_dir() + "/x", "--",
                 "/nonexistent/program"});
    EXPECT_EQ(r.rc, 2) << r.err;
    // An unknown value is refused before anything runs.
    Ran bad = run({NVTRACE_BIN, "run", "-q", "--exit-status", "child", "--", "true"});
    EXPECT_EQ(bad.rc, 2) << bad.err;
}

TEST(LiveOutcome, ProgramReadingTheTerminalFromItsBackgroundGroupIsNamedAndEndedWithTheCaptureSaved) {
    REQUIRE_LIVE();
    std::string out = temp_dir() + "/cap";
    auto t0 = std::chrono::steady_clock::now();
    // nvtrace leads the pty's foreground group; the program leads its own group, so its read gets SIGTTIN.
    Ran r =
        run_on_pty({NVTRACE_BIN, "run", "--exit-status", "program", "--out", out, "--", "sh", "-c", "read x"}, "", 60);
    auto took = std::chrono::steady_clock::now() - t0;
    ASSERT_TRUE(r.err.empty()) << r.err << "\n" << r.out;
    EXPECT_NE(r.out.find("nvtrace: program stopped: it reads the terminal; run it with input redirected (< /dev/null) "
                         "or with --tty"),
              std::string::npos)
        << r.out;
    EXPECT_LT(took, std::chrono::seconds(30)) << "nvtrace waited for a program stopped on the terminal";
    nlohmann::json meta = load_json(out + "/meta.json");
    EXPECT_EQ(meta["stopped_on_terminal"], "SIGTTIN");
    EXPECT_EQ(meta["signal"], SIGTERM) << "ended by nvtrace's SIGTERM";
    EXPECT_EQ(r.rc, 128 + SIGTERM) << r.out;
    EXPECT_TRUE(std::filesystem::exists(out + "/report.json"));
}

TEST(LiveOutcome, TtyGivesTheProgramTheTerminalAndTakesItBack) {
    REQUIRE_LIVE();
    std::string out = temp_dir() + "/cap";
    // The outer sh (foreground, same group as nvtrace) reads the second line after nvtrace ended: it can only
    // when nvtrace made its own group the foreground again.
    const std::string script = std::string("'") + NVTRACE_BIN + "' run -q --tty --exit-status program --out '" + out +
                               "' -- sh -c 'read x; test \"$x\" = one'; echo \"rc=$?\"; read y; echo \"y=$y\"";
    Ran r = run_on_pty({"sh", "-c", script}, "one\ntwo\n", 60);
    ASSERT_TRUE(r.err.empty()) << r.err << "\n" << r.out;
    EXPECT_NE(r.out.find("rc=0"), std::string::npos) << "the program did not read its line: " << r.out;
    EXPECT_NE(r.out.find("y=two"), std::string::npos) << "the terminal was not given back: " << r.out;
    EXPECT_EQ(r.out.find("program stopped"), std::string::npos) << r.out;
    nlohmann::json meta = load_json(out + "/meta.json");
    EXPECT_EQ(meta["tty"], true);
    EXPECT_TRUE(meta["stopped_on_terminal"].is_null());
    EXPECT_EQ(meta["exit_code"], 0);
}

TEST(LiveOutcome, TtyWithoutATerminalIsAUsageError) {
    REQUIRE_LIVE();
    Ran r = run_with({"sh", "-c", std::string("'") + NVTRACE_BIN + "' run -q --tty -- true < /dev/null"}, {});
    EXPECT_EQ(r.rc, 2) << r.err;
    EXPECT_NE(r.err.find("--tty: standard input is not a terminal"), std::string::npos) << r.err;
}
