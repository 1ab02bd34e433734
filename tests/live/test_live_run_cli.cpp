// Tier 2: `nvtrace run` and what it leaves for `nvtrace report DIR`, `cleanup` and `doctor` on this machine's
// kernel (docs/run.md, docs/report.md, docs/cleanup.md, docs/doctor.md): a capture directory that holds what its
// report is made of, instance ownership decided by the owner's identity rather than its pid alone, standard output
// that carries only the JSON with --json, and the signals nvtrace forwards.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "live_util.hpp"

using namespace nvtrace::live;

namespace {

void write_text(const std::string& path, const std::string& text) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << text;
}

// `cd DIR && exec ARGV...` through sh, so that the command's current directory is DIR.
Ran run_in(const std::string& dir, const std::vector<std::string>& argv) {
    std::vector<std::string> sh{"sh", "-c", "cd \"$0\" && exec \"$@\"", dir};
    sh.insert(sh.end(), argv.begin(), argv.end());
    return run(sh);
}

// meta.json rewritten as the run writes it (one-space indentation, sorted keys, a final newline).
void rewrite_meta(const std::string& dir, const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json m = load_json(dir + "/meta.json");
    edit(m);
    write_text(dir + "/meta.json", m.dump(1) + "\n");
}

}  // namespace

// The run checked expectations named by a relative path (report.source.expectations "e.expect"). `nvtrace report
// DIR` started in another directory that holds an unrelated e.expect checked that file (a report other than the
// run's), and from a directory without one it dropped the checks with a warning. The run keeps the bytes it checked
// in DIR/expect/ (meta.json "expectations_copy"), and the report of DIR is the run's from anywhere, byte for byte.
TEST(LiveRunCli, ReportDirStartedElsewhereChecksTheExpectationsTheRunChecked) {
    REQUIRE_LIVE();
    auto before = tracefs_snapshot();
    const std::string home = temp_dir(), other = temp_dir(), empty = temp_dir(), out = temp_dir() + "/cap";
    const std::string run_expect =
        "format nvtrace.expect/1\ncheck saw-fionread\n  ioctl FIONREAD ret=0\ncheck no-tcgets\n  absent ioctl "
        "TCGETS\n";
    write_text(home + "/e.expect", run_expect);
    // Same name, other checks: the first fails on this program, the second would be a new id.
    write_text(other + "/e.expect", "format nvtrace.expect/1\ncheck no-fionread\n  absent ioctl FIONREAD\n");
    Ran r =
        run_in(home, {NVTRACE_BIN, "run", "-q", "--expect", "e.expect", "--out", out, "--", FIONREAD_LOOP_BIN, "20"});
    ASSERT_EQ(r.rc, 0) << r.err << r.out;
    EXPECT_EQ(tracefs_snapshot(), before);
    const std::string saved = slurp(out + "/report.json");
    nlohmann::json live = nlohmann::json::parse(saved);
    ASSERT_EQ(live["source"]["expectations"], "e.expect");
    ASSERT_EQ(live["checks"].size(), 2u) << live["checks"].dump();
    nlohmann::json meta = load_json(out + "/meta.json");
    ASSERT_EQ(meta["expectations_copy"], "expect/e.expect") << meta.dump(1);
    EXPECT_EQ(slurp(out + "/" + meta["expectations_copy"].get<std::string>()), run_expect);
    EXPECT_EQ(meta["working_dir"], std::filesystem::canonical(home).string());

    // The file at the recorded path changed after the run: the copy is what was checked.
    write_text(home + "/e.expect", "format nvtrace.expect/1\ncheck changed\n  absent ioctl FIONREAD\n");
    for (const std::string& where : {home, other, empty}) {
        const std::string again = where + "/again.json";
        Ran rep = run_in(where, {NVTRACE_BIN, "report", out, "-o", again});
        ASSERT_EQ(rep.rc, 0) << where << ": " << rep.err;
        EXPECT_EQ(slurp(again), saved) << "report DIR started in " << where;
        EXPECT_EQ(rep.err.find("not checked"), std::string::npos) << rep.err;
        std::filesystem::remove(again);
    }

    // An explicit --expect F is F, from wherever it is named.
    Ran ex = run_in(empty, {NVTRACE_BIN, "report", out, "--expect", other + "/e.expect", "--json"});
    ASSERT_EQ(ex.rc, 0) << ex.err;
    nlohmann::json checked = nlohmann::json::parse(ex.out);
    ASSERT_EQ(checked["checks"].size(), 1u) << checked["checks"].dump();
    EXPECT_EQ(checked["checks"][0]["id"], "no-fionread");
    EXPECT_EQ(checked["checks"][0]["result"], "fail");
    EXPECT_EQ(checked["source"]["expectations"], other + "/e.expect");

    // A capture made before the copy: a relative path resolved against the run's directory when meta.json has
    // it (home's e.expect is the run's again)...
    write_text(home + "/e.expect", run_expect);
    std::filesystem::remove_all(out + "/expect");
    rewrite_meta(out, [](nlohmann::json& m) { m.erase("expectations_copy"); });
    Ran old_wd = run_in(other, {NVTRACE_BIN, "report", out, "--json"});
    ASSERT_EQ(old_wd.rc, 0) << old_wd.err;
    EXPECT_EQ(nlohmann::json::parse(old_wd.out), live);
    // ... and without it, the checks are not made and the note says why.
    rewrite_meta(out, [](nlohmann::json& m) { m.erase("working_dir"); });
    Ran old = run_in(other, {NVTRACE_BIN, "report", out, "--json"});
    ASSERT_EQ(old.rc, 0) << old.err;
    nlohmann::json unchecked = nlohmann::json::parse(old.out);
    EXPECT_TRUE(!unchecked.contains("checks") || unchecked["checks"].empty()) << unchecked["checks"].dump();
    EXPECT_NE(old.err.find("the run's expectations e.expect are not checked: e.expect is a relative path"),
              std::string::npos)
        << old.err;
    EXPECT_NE(old.err.find("does not record the directory the run was started in"), std::string::npos) << old.err;
}

// An instance named nvtrace-<pid> whose pid is another program now (a killed run's pid reused: here `sleep`, and
// pid 1) was kept as "owner still running", and doctor said `ok leftovers none`. The owner is a running nvtrace
// only when that pid is an nvtrace process that started before the instance was made: these are leftovers.
TEST(LiveRunCli, InstanceWhosePidIsNowAnotherProgramIsALeftoverNotKept) {
    REQUIRE_LIVE();
    pid_t sleeper = ::fork();
    if (sleeper == 0) {
        ::execlp("sleep", "sleep", "300", nullptr);
        ::_exit(127);
    }
    ASSERT_GT(sleeper, 0);
    std::vector<std::string> made;
    // Whatever happens below: the instances made here are removed and the sleeper ended.
    struct Undo {
        pid_t sleeper;
        std::vector<std::string>* made;
        ~Undo() {
            for (const auto& d : *made)
                ::rmdir(d.c_str());
            ::kill(sleeper, SIGKILL);
            ::waitpid(sleeper, nullptr, 0);
        }
    } undo{sleeper, &made};
    std::vector<std::string> names;
    for (int pid : {static_cast<int>(sleeper), 1}) {
        const std::string name = "nvtrace-" + std::to_string(pid);
        const std::string dir = kTracing + "/instances/" + name;
        if (::access(dir.c_str(), F_OK) == 0) continue;  // not this test's to touch
        ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0) << dir << ": " << std::strerror(errno);
        made.push_back(dir);
        names.push_back(name);
    }
    ASSERT_FALSE(names.empty());

    Ran dry = run({NVTRACE_BIN, "cleanup", "--dry-run", "--json"});
    ASSERT_EQ(dry.rc, 0) << dry.err << dry.out;
    nlohmann::json j = nlohmann::json::parse(dry.out);
    for (const auto& name : names) {
        bool listed = false;
        for (const auto& a : j["actions"])
            listed = listed || a["what"] == "remove instance " + name;
        EXPECT_TRUE(listed) << name << ": " << dry.out;
        for (const auto& k : j["kept"])
            EXPECT_EQ(k.get<std::string>().find(name + " "), std::string::npos) << k;
    }
    Ran doc = run({NVTRACE_BIN, "doctor", "--json"});
    nlohmann::json d = nlohmann::json::parse(doc.out);
    nlohmann::json leftovers;
    for (const auto& f : d["findings"])
        if (f["id"] == "leftovers") leftovers = f;
    EXPECT_EQ(leftovers.value("status", ""), "fail") << leftovers.dump();
    for (const auto& name : names)
        EXPECT_NE(leftovers.value("value", "").find("remove instance " + name), std::string::npos) << leftovers.dump();

    Ran clean = run({NVTRACE_BIN, "cleanup"});
    EXPECT_EQ(clean.rc, 0) << clean.err << clean.out;
    for (const auto& dir : made)
        EXPECT_NE(::access(dir.c_str(), F_OK), 0) << dir << " still there:\n" << clean.out;
}

// `nvtrace run --json` wrote the report on standard output, where the program's own output went too, so
// `json.load` of it failed. The program's stdout goes to nvtrace's stderr then (said in a note).
TEST(LiveRunCli, JsonOnStdoutIsNotMixedWithTheProgramsOutput) {
    REQUIRE_LIVE();
    auto before = tracefs_snapshot();
    const std::string out = temp_dir() + "/cap";
    Ran r = run({NVTRACE_BIN, "run", "--json", "--out", out, "--", "sh", "-c",
                 "echo program-line-one; printf 'no newline at the end'"});
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(tracefs_snapshot(), before);
    nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << "stdout is not JSON:\n" << r.out;
    EXPECT_EQ(j, load_json(out + "/report.json"));
    EXPECT_NE(r.err.find("program-line-one\nno newline at the end"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("the program's standard output goes to stderr"), std::string::npos) << r.err;
    // Without --json the program's output is on stdout as before.
    const std::string out2 = temp_dir() + "/cap";
    Ran plain = run({NVTRACE_BIN, "run", "-q", "--out", out2, "--", "sh", "-c", "echo program-line-one"});
    ASSERT_EQ(plain.rc, 0) << plain.err;
    EXPECT_EQ(plain.out, "program-line-one\n");
}

// Started as a shell starts a background job without job control (SIGINT and SIGQUIT ignored: POSIX sh "Signals";
// SIGHUP under nohup), nvtrace gave the program SIGINT's default action back but left SIGQUIT ignored (its SigIgn
// 0x4), so the SIGQUIT it passed on was ignored and the program was SIGKILLed 2 s later (meta.json signal 9). Every
// signal nvtrace passes on (SIGINT, SIGTERM, SIGHUP, SIGQUIT) starts with its default action in the program.
TEST(LiveRunCli, SigquitPassedOnReachesAProgramStartedWithItIgnored) {
    REQUIRE_LIVE();
    auto before = tracefs_snapshot();
    // `trap '' SIG` then exec: the dispositions a background job (and nohup) starts nvtrace with.
    const std::vector<std::string> ignoring{"sh", "-c", "ulimit -c 0; trap '' INT QUIT HUP TERM; exec \"$@\"", "sh"};
    auto with_ignored = [&](std::vector<std::string> argv) {
        argv.insert(argv.begin(), ignoring.begin(), ignoring.end());
        return argv;
    };
    // The program's own view: SigIgn of /proc/self/status has none of the four.
    const std::string out = temp_dir() + "/cap";
    Ran st = run(with_ignored({NVTRACE_BIN, "run", "-q", "--out", out, "--", "cat", "/proc/self/status"}));
    ASSERT_EQ(st.rc, 0) << st.err;
    auto at = st.out.find("SigIgn:");
    ASSERT_NE(at, std::string::npos) << st.out;
    const unsigned long long ign = std::stoull(st.out.substr(at + 7), nullptr, 16);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT})
        EXPECT_EQ(ign & (1ull << (sig - 1)), 0u)
            << "signal " << sig << " ignored in the program: SigIgn " << std::hex << ign;

    // The reproduction: SIGQUIT to nvtrace once the program runs ends the program by SIGQUIT, not SIGKILL.
    const std::string dir = temp_dir(), ready = dir + "/ready", out2 = dir + "/cap";
    Ran q = run_with(with_ignored({NVTRACE_BIN, "run", "-q", "--out", out2, "--", "sh", "-c",
                                   "echo > " + ready + "; exec sleep 30"}),
                     [&](pid_t pid) {
                         for (int i = 0; i < 1200 && ::access(ready.c_str(), F_OK) != 0; ++i)
                             ::usleep(50 * 1000);
                         ::kill(pid, SIGQUIT);
                     });
    EXPECT_EQ(q.rc, 128 + SIGQUIT) << q.err;
    nlohmann::json meta = load_json(out2 + "/meta.json");
    EXPECT_EQ(meta["signal"], SIGQUIT) << meta.dump(1);
    EXPECT_EQ(meta["interrupted_by"], SIGQUIT);
    EXPECT_EQ(tracefs_snapshot(), before);
}

// `--out ''` was ignored (the run went to runs/): refused.
TEST(LiveRunCli, EmptyOutIsRefusedNotIgnored) {
    REQUIRE_LIVE();
    const std::string cwd = temp_dir();
    Ran r = run_in(cwd, {NVTRACE_BIN, "run", "-q", "--out", "", "--", "/bin/true"});
    EXPECT_EQ(r.rc, 2) << r.err;
    EXPECT_NE(r.err.find("--out '': an empty directory name"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(cwd + "/runs"));
}

// `--out LINK` naming a dangling symbolic link said `cannot create LINK: File exists`: now what the link is.
TEST(LiveRunCli, OutNamingADanglingSymlinkSaysItIsOne) {
    REQUIRE_LIVE();
    const std::string dir = temp_dir();
    ASSERT_EQ(::symlink((dir + "/missing").c_str(), (dir + "/dangl").c_str()), 0);
    Ran r = run({NVTRACE_BIN, "run", "-q", "--out", dir + "/dangl", "--", "/bin/true"});
    EXPECT_EQ(r.rc, 2) << r.err;
    EXPECT_NE(r.err.find("--out " + dir + "/dangl: a symbolic link to " + dir + "/missing, which does not exist"),
              std::string::npos)
        << r.err;
    EXPECT_FALSE(std::filesystem::exists(dir + "/missing"));
}

// Started in a directory it cannot write, without --out: `cannot create runs/...: No such file or directory`
// hid the reason. It names the directory and the error now.
TEST(LiveRunCli, ReadOnlyCurrentDirectoryWithoutOutNamesTheReason) {
    REQUIRE_LIVE();
    const std::string mnt = temp_dir();
    Ran m = run({"mount", "-t", "tmpfs", "-o", "size=1m,ro", "tmpfs", mnt});
    ASSERT_EQ(m.rc, 0) << m.err;
    Ran r = run_in(mnt, {NVTRACE_BIN, "run", "-q", "--", "/bin/true"});
    run({"umount", mnt});
    EXPECT_EQ(r.rc, 3) << r.err;
    EXPECT_NE(r.err.find("cannot create runs/ in " + mnt + ": Read-only file system; give --out DIR"),
              std::string::npos)
        << r.err;
}

// `--module ../x` went into :mod:../x and /sys/module/../x unchecked: a module name is what lsmod lists.
TEST(LiveRunCli, ModuleThatIsNotAModuleNameIsRefused) {
    REQUIRE_LIVE();
    const std::string out = temp_dir() + "/cap";
    for (const std::string& bad :
         std::vector<std::string>{"../x", "a/b", "nv idia", "x\x1b[31m", std::string(56, 'a')}) {
        Ran r = run({NVTRACE_BIN, "run", "-q", "--module", bad, "--out", out, "--", "/bin/true"});
        EXPECT_EQ(r.rc, 2) << bad << ": " << r.err;
        EXPECT_NE(r.err.find("not a module name (letters, digits, '_' and '-'"), std::string::npos) << r.err;
        EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
        EXPECT_FALSE(std::filesystem::exists(out));
    }
}

// A newline and ESC in the command reached the terminal raw in the progress line and the summary's `program:`
// line (a forged line, terminal control): shown as \xNN as the other text outputs do.
TEST(LiveRunCli, ControlBytesInTheCommandAreShownEscaped) {
    REQUIRE_LIVE();
    const std::string out = temp_dir() + "/cap";
    Ran r = run({NVTRACE_BIN, "run", "--out", out, "--", "/bin/echo", "a\nprogram: forged\x1b[31m"});
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_NE(r.err.find("nvtrace: tracing /bin/echo a\\x0aprogram: forged\\x1b[31m; capture directory"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.out.find("program: /bin/echo a\\x0aprogram: forged\\x1b[31m (pid "), std::string::npos) << r.out;
    EXPECT_EQ(r.err.find('\x1b'), std::string::npos);
    // The program's own output is its own: echo printed the bytes as given.
    EXPECT_NE(r.out.find("a\nprogram: forged\x1b[31m\n"), std::string::npos);
}
