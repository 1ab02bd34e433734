// stream_trace_dat (nvtrace/import.hpp) against read_trace_dat on every trace.dat the fixture make_trace_dat.sh
// made, and the report `nvtrace report FILE.dat` streams from it (ReportStream, tracer/cmd/cmd_report.cpp) against
// the whole report, write_json(build_report(read_trace_dat(...))): the same events in the same order, the same
// comms and diagnostics, the same report.json bytes, from the library and from the command.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <variant>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "../../../analyze/raw_event_decoder.hpp"
#include "nvtrace/import.hpp"
#include "nvtrace/report.hpp"
#include "nvtrace/report_stream.hpp"

using namespace nvtrace;

namespace {
const std::string kDir = NVTRACE_TRACE_DAT_DIR;

bool on_ci() {
    const char* ci = std::getenv("CI");
    return ci && std::string(ci) == "true";
}

// Every trace.dat the fixture wrote (ioctl-v7.dat, and ioctl-v6.dat where trace-cmd could convert), sorted.
std::vector<std::string> dat_files() {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(kDir, ec))
        if (e.path().extension() == ".dat") out.push_back(e.path().string());
    std::sort(out.begin(), out.end());
    return out;
}

std::string skip_reason() {
    std::ifstream skipped(kDir + "/SKIPPED");
    std::string why;
    if (skipped) std::getline(skipped, why);
    return why.empty() ? "the fixture import_make_trace_dat made no trace.dat (ctest runs it)" : why;
}

#define REQUIRE_DATS(files)                                                                     \
    do {                                                                                        \
        if (!trace_dat_supported()) GTEST_SKIP() << "built without libtracecmd (static build)"; \
        if ((files).empty()) {                                                                  \
            if (on_ci()) FAIL() << "no trace.dat test data on CI: " << skip_reason();           \
            GTEST_SKIP() << skip_reason();                                                      \
        }                                                                                       \
    } while (0)

// Every field of an event, for comparing two streams.
std::string describe(const Event& ev) {
    std::string body = std::visit(
        [](const auto& b) -> std::string {
            using T = std::decay_t<decltype(b)>;
            if constexpr (std::is_same_v<T, FuncEntry>)
                return fmt::format("entry {:x} {} {} {}", b.func_addr, b.function, b.module.value_or("-"), b.depth);
            else if constexpr (std::is_same_v<T, FuncExit>)
                return fmt::format("exit {:x} {} {} {} {} {} {} {} {}", b.func_addr, b.function, b.module.value_or("-"),
                                   b.depth, b.calltime_ns, b.rettime_ns, b.duration_ns.value_or(0), b.overrun,
                                   b.retval.value_or(0));
            else if constexpr (std::is_same_v<T, IoctlEnter>)
                return fmt::format("ioctl_enter {} {:x} {:x}", b.fd, b.cmd, b.arg);
            else if constexpr (std::is_same_v<T, IoctlExit>)
                return fmt::format("ioctl_exit {}", b.ret ? std::to_string(*b.ret) : "?");
            else if constexpr (std::is_same_v<T, Marker>)
                return "marker " + b.text;
            else if constexpr (std::is_same_v<T, ConsoleLine>)
                return "console " + b.text;
            else if constexpr (std::is_same_v<T, OtherEvent>)
                return fmt::format("other {}:{} {}", b.system, b.name, b.fields);
            else
                return fmt::format("lost {}", b.count ? std::to_string(*b.count) : "?");
        },
        ev.body);
    return fmt::format("{} cpu={} pid={} irq={} ts_known={} line={} {}", ev.ts_ns, ev.cpu, ev.pid, ev.irq, ev.ts_known,
                       ev.line, body);
}

std::string describe(const std::vector<Diagnostic>& ds) {
    std::string out;
    for (const auto& d : ds)
        out += fmt::format("{} {} {} {}\n", d.name, d.severity, d.count, d.first_example);
    return out;
}

// `seen` (describe() of each event handed over) is `whole`, event for event.
void expect_same_events(const std::vector<std::string>& seen, const std::vector<Event>& whole) {
    ASSERT_EQ(seen.size(), whole.size());
    for (std::size_t i = 0; i < seen.size(); ++i)
        ASSERT_EQ(seen[i], describe(whole[i])) << "event " << i;
}

std::string read_whole(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// The report.json `nvtrace report FILE.dat` wrote before it was streamed: the whole stream's report, with the
// source the command sets.
std::string whole_report_json(const std::string& path) {
    auto s = read_trace_dat(path);
    EXPECT_TRUE(s) << s.error().message;
    if (!s) return "";
    Report r = build_report(*s);
    r.source.kind = "file", r.source.path = path, r.source.format = "trace-dat";
    std::ostringstream out;
    write_json(r, out);
    return out.str();
}

struct Ran {
    int rc = -1;
    std::string out;
};

// `argv` with stdout read whole (stderr passed through): no shell. `stdin_bytes`: written into a pipe on its
// standard input.
Ran run(const std::vector<std::string>& argv, const std::optional<std::string>& stdin_bytes = std::nullopt) {
    int fds[2], in[2] = {-1, -1};
    if (::pipe(fds) != 0) return {};
    if (stdin_bytes && ::pipe(in) != 0) return {};
    pid_t pid = ::fork();
    if (pid == 0) {
        if (stdin_bytes) {
            ::dup2(in[0], 0);
            ::close(in[0]);
            ::close(in[1]);
        }
        ::dup2(fds[1], 1);
        ::close(fds[0]);
        ::close(fds[1]);
        std::vector<char*> a;
        for (const auto& s : argv)
            a.push_back(const_cast<char*>(s.c_str()));
        a.push_back(nullptr);
        ::execv(a[0], a.data());
        ::_exit(127);
    }
    ::close(fds[1]);
    std::thread feeder;
    if (stdin_bytes) {
        ::close(in[0]);
        feeder = std::thread([&] {
            for (std::size_t done = 0; done < stdin_bytes->size();) {
                ssize_t n = ::write(in[1], stdin_bytes->data() + done, stdin_bytes->size() - done);
                if (n <= 0) break;
                done += static_cast<std::size_t>(n);
            }
            ::close(in[1]);
        });
    }
    Ran r;
    char buf[65536];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
        r.out.append(buf, static_cast<std::size_t>(n));
    ::close(fds[0]);
    if (feeder.joinable()) feeder.join();
    int st = 0;
    ::waitpid(pid, &st, 0);
    r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return r;
}
}  // namespace

TEST(TraceDatStream, GivesReadTraceDatsEventsInItsOrderWithItsCommsAndDiagnostics) {
    auto files = dat_files();
    REQUIRE_DATS(files);
    for (const auto& path : files) {
        SCOPED_TRACE(path);
        auto whole = read_trace_dat(path);
        ASSERT_TRUE(whole) << whole.error().message;
        ASSERT_FALSE(whole->events.empty());
        EventStream side;
        std::vector<std::string> streamed;
        std::size_t comms_missing = 0;  // events handed over before their pid's comm was in side.comms
        auto st = stream_trace_dat(path, side, [&](const Event& ev) {
            if (ev.pid > 0 && whole->comms.count(ev.pid) && !side.comms.count(ev.pid)) ++comms_missing;
            streamed.push_back(describe(ev));
            return true;
        });
        ASSERT_TRUE(st) << st.error().message;
        EXPECT_EQ(*st, TraceDatStreamed::done);
        expect_same_events(streamed, whole->events);
        EXPECT_EQ(comms_missing, 0u);
        EXPECT_EQ(side.comms, whole->comms);
        EXPECT_EQ(describe(side.diagnostics), describe(whole->diagnostics));
        EXPECT_TRUE(side.events.empty());
    }
}

// A TraceDatSink gets the ioctl records undecoded (record()), every other event decoded (event()), in one order:
// decoding the records where the sink chooses (here, at once) gives read_trace_dat's events. handle_done() comes
// after each buffer read, before its decoder goes.
TEST(TraceDatStream, SinkGetsPlainRecordsUndecodedAndTheyDecodeToTheSameEvents) {
    auto files = dat_files();
    REQUIRE_DATS(files);
    for (const auto& path : files) {
        SCOPED_TRACE(path);
        auto whole = read_trace_dat(path);
        ASSERT_TRUE(whole) << whole.error().message;
        struct Sink : TraceDatSink {
            EventStream* side = nullptr;
            const std::map<int, std::string>* file_comms = nullptr;  // what the whole reader found
            std::vector<std::string> seen;
            std::size_t records = 0, handles = 0, comms_missing = 0;
            bool event(Event& ev) override {
                seen.push_back(describe(ev));
                return true;
            }
            bool record(const RawRecord& r) override {
                ++records;
                int pid = r.decoder.pid(r.rec);
                if (pid > 0 && file_comms->count(pid) && !side->comms.count(pid)) ++comms_missing;
                Event ev;
                r.decoder.fill(r.rec, r.fields, ev);
                seen.push_back(describe(ev));
                return true;
            }
            void handle_done() override { ++handles; }
        } sink;
        EventStream side;
        sink.side = &side;
        sink.file_comms = &whole->comms;
        auto st = stream_trace_dat(path, side, sink);
        ASSERT_TRUE(st) << st.error().message;
        EXPECT_EQ(*st, TraceDatStreamed::done);
        expect_same_events(sink.seen, whole->events);
        std::size_t ioctl_events = std::count_if(whole->events.begin(), whole->events.end(), [](const Event& ev) {
            return std::holds_alternative<IoctlEnter>(ev.body) || std::holds_alternative<IoctlExit>(ev.body);
        });
        EXPECT_GT(ioctl_events, 0u);
        EXPECT_EQ(sink.records, ioctl_events);
        EXPECT_GE(sink.handles, 1u);
        EXPECT_EQ(sink.comms_missing, 0u);
        EXPECT_EQ(side.comms, whole->comms);
    }
}

TEST(TraceDatStream, StopsWhenTheCallbackSaysSo) {
    auto files = dat_files();
    REQUIRE_DATS(files);
    EventStream side;
    std::size_t seen = 0;
    auto st = stream_trace_dat(files.front(), side, [&](const Event&) { return ++seen < 3; });
    ASSERT_TRUE(st) << st.error().message;
    EXPECT_EQ(*st, TraceDatStreamed::stopped);
    EXPECT_EQ(seen, 3u);
}

TEST(TraceDatStream, AFileLibtracecmdCannotOpenIsTheSameErrorAsReadTraceDat) {
    if (!trace_dat_supported()) GTEST_SKIP() << "built without libtracecmd (static build)";
    auto p = std::filesystem::temp_directory_path() / fmt::format("nvtrace-bad-stream-{}.dat", ::getpid());
    {
        std::ofstream f(p, std::ios::binary);
        f.write("\x17\x08\x44tracing6\0garbage", 19);
    }
    EventStream side;
    bool called = false;
    auto st = stream_trace_dat(p.string(), side, [&](const Event&) { return called = true; });
    auto whole = read_trace_dat(p.string());
    ASSERT_FALSE(st);
    ASSERT_FALSE(whole);
    EXPECT_EQ(st.error().message, whole.error().message);
    EXPECT_FALSE(called);
    std::filesystem::remove(p);
}

// The library path of `nvtrace report FILE.dat`: the streamed report's bytes are the whole report's.
TEST(TraceDatStream, StreamedReportIsTheWholeReportsBytes) {
    auto files = dat_files();
    REQUIRE_DATS(files);
    for (const auto& path : files) {
        SCOPED_TRACE(path);
        auto rs = ReportStream::open(std::filesystem::temp_directory_path().string(), EventStream{});
        ASSERT_TRUE(rs) << rs.error().message;
        ReportStream& r = **rs;
        auto st = stream_trace_dat(path, r.side(), [&](const Event& ev) {
            r.add(ev);
            return true;
        });
        ASSERT_TRUE(st) << st.error().message;
        ASSERT_EQ(*st, TraceDatStreamed::done);
        ASSERT_TRUE(r.finish());
        r.report().source.kind = "file", r.report().source.path = path, r.report().source.format = "trace-dat";
        auto out = std::filesystem::temp_directory_path() / fmt::format("nvtrace-dat-stream-{}.json", ::getpid());
        ASSERT_TRUE(r.write_to(out.string()));
        std::string whole = whole_report_json(path);
        EXPECT_GT(r.ioctls(), 0u);
        EXPECT_EQ(read_whole(out.string()), whole);
        std::filesystem::remove(out);
    }
}

// The command: `nvtrace report FILE.dat --json` and `-o OUT` (both streamed) write the whole report's bytes, and
// the summary of the streamed report is the one `nvtrace report OUT` prints for the report it wrote.
TEST(TraceDatStream, ReportCommandWritesTheWholeReportsBytes) {
    auto files = dat_files();
    REQUIRE_DATS(files);
    for (const auto& path : files) {
        SCOPED_TRACE(path);
        std::string whole = whole_report_json(path);
        Ran json = run({NVTRACE_BIN, "report", path, "--json"});
        EXPECT_EQ(json.rc, 0);
        EXPECT_EQ(json.out, whole);

        auto dir = std::filesystem::temp_directory_path() / fmt::format("nvtrace-dat-cli-{}", ::getpid());
        std::filesystem::create_directories(dir);
        std::string out = (dir / "report.json").string();
        Ran summary = run({NVTRACE_BIN, "report", path, "-o", out});
        EXPECT_EQ(summary.rc, 0);
        EXPECT_EQ(read_whole(out), whole);
        // Nothing else is left in the directory of -o (the temporary files are gone or renamed to OUT).
        std::size_t entries = 0;
        for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir))
            ++entries;
        EXPECT_EQ(entries, 1u);

        // The summary: the lines after "input: ..." equal those of the saved report's summary, but for the
        // "report: OUT" line -o adds.
        Ran saved = run({NVTRACE_BIN, "report", out});
        EXPECT_EQ(saved.rc, 0);
        auto body = [](const std::string& text) { return text.substr(text.find('\n') + 1); };
        EXPECT_EQ(summary.out.rfind(fmt::format("input: {} (trace-dat)\n", path), 0), 0u) << summary.out;
        EXPECT_EQ(body(summary.out), body(saved.out) + "report: " + out + "\n");
        std::filesystem::remove_all(dir);
    }
}

// `cat X.dat | nvtrace report -` was refused ("a trace.dat must be read from a file") although report.md says
// standard input is read whole, then as a file of that content: it is the file's report now (source path "-"),
// and a cut one on standard input is the file's error, naming <stdin>.
TEST(TraceDatStream, TraceDatOnStandardInputIsReportedLikeTheFile) {
    auto files = dat_files();
    REQUIRE_DATS(files);
    for (const auto& path : files) {
        SCOPED_TRACE(path);
        auto s = read_trace_dat(path);
        ASSERT_TRUE(s) << s.error().message;
        Report r = build_report(*s);
        r.source.kind = "file", r.source.path = "-", r.source.format = "trace-dat";
        std::ostringstream want;
        write_json(r, want);
        const std::string bytes = read_whole(path);
        Ran piped = run({NVTRACE_BIN, "report", "-", "--json"}, bytes);
        EXPECT_EQ(piped.rc, 0);
        EXPECT_EQ(piped.out, want.str());
        Ran cut = run({NVTRACE_BIN, "report", "-"}, bytes.substr(0, 5000));
        EXPECT_EQ(cut.rc, 2);
        EXPECT_EQ(cut.out, "");
    }
}

// A trace.dat whose buffers' times interleave (make_trace_dat.sh's ioctl-two-buffers.dat: each call's
// sys_enter_ioctl in one instance buffer, its sys_exit_ioctl in another). The streamed reader used to read the
// buffers one after the other, find times going back and give up (cannot_stream: `nvtrace report` then read
// the file whole). It now reads them at once, by time: read_trace_dat's events in its order, and a report
// whose ioctls have their returns.
TEST(TraceDatStream, BuffersWhoseTimesInterleaveAreStreamedInTimeOrder) {
    if (!trace_dat_supported()) GTEST_SKIP() << "built without libtracecmd (static build)";
    const std::string path = kDir + "/ioctl-two-buffers.dat";
    if (!std::filesystem::exists(path)) {
        if (on_ci()) FAIL() << "no two-buffer trace.dat on CI: " << skip_reason();
        GTEST_SKIP() << "make_trace_dat.sh wrote no ioctl-two-buffers.dat: " << skip_reason();
    }
    auto whole = read_trace_dat(path);
    ASSERT_TRUE(whole) << whole.error().message;
    // The file really interleaves: the whole reader's order is not the buffers one after the other.
    std::size_t enters_before_first_exit = 0;
    for (const Event& ev : whole->events) {
        if (std::holds_alternative<IoctlExit>(ev.body)) break;
        enters_before_first_exit += std::holds_alternative<IoctlEnter>(ev.body);
    }
    ASSERT_EQ(enters_before_first_exit, 1u);

    EventStream side;
    std::vector<std::string> streamed;
    auto st = stream_trace_dat(path, side, [&](const Event& ev) {
        streamed.push_back(describe(ev));
        return true;
    });
    ASSERT_TRUE(st) << st.error().message;
    EXPECT_EQ(*st, TraceDatStreamed::done);
    expect_same_events(streamed, whole->events);

    auto rs = ReportStream::open(std::filesystem::temp_directory_path().string(), EventStream{});
    ASSERT_TRUE(rs) << rs.error().message;
    ReportStream& r = **rs;
    auto st2 = stream_trace_dat(path, r.side(), [&](Event& ev) {
        r.add(std::move(ev));
        return true;
    });
    ASSERT_TRUE(st2);
    ASSERT_EQ(*st2, TraceDatStreamed::done);
    ASSERT_TRUE(r.finish());
    r.report().source.kind = "file", r.report().source.path = path, r.report().source.format = "trace-dat";
    FILE* tmp = std::tmpfile();
    ASSERT_TRUE(r.write(::fileno(tmp)));
    std::string got;
    {
        std::rewind(tmp);
        char buf[65536];
        std::size_t n;
        while ((n = std::fread(buf, 1, sizeof buf, tmp)) > 0)
            got.append(buf, n);
    }
    std::fclose(tmp);
    EXPECT_EQ(got, whole_report_json(path));
    Report wr = build_report(*whole);
    ASSERT_GT(wr.ioctls.size(), 0u);
    EXPECT_TRUE(wr.ioctls.front().ret.has_value());
}

// A trace.dat recorded with an event nvtrace has no use of its own for (make_trace_dat.sh's ioctl-sched.dat:
// sched:sched_process_exit beside the ioctls). Both readers dropped it without a word (the decoder kept only
// the events on a list, and a trace.dat's list was empty), so `report DIR/trace.dat` listed no events where
// `report DIR` listed the run's --event records. Every event the recording chose is kept, streamed or whole.
TEST(TraceDatStream, EveryEventTheRecordingChoseIsKept) {
    if (!trace_dat_supported()) GTEST_SKIP() << "built without libtracecmd (static build)";
    const std::string path = kDir + "/ioctl-sched.dat";
    if (!std::filesystem::exists(path)) {
        if (on_ci()) FAIL() << "no ioctl-sched.dat on CI: " << skip_reason();
        GTEST_SKIP() << "make_trace_dat.sh wrote no ioctl-sched.dat: " << skip_reason();
    }
    auto whole = read_trace_dat(path);
    ASSERT_TRUE(whole) << whole.error().message;
    std::size_t exits = 0, ioctls = 0;
    for (const Event& ev : whole->events) {
        if (const auto* o = std::get_if<OtherEvent>(&ev.body))
            exits += o->system == "sched" && o->name == "sched_process_exit";
        ioctls += std::holds_alternative<IoctlEnter>(ev.body);
    }
    EXPECT_GE(exits, 1u) << "the loop's exit is recorded";
    EXPECT_GE(ioctls, 5u);
    EventStream side;
    std::size_t streamed_exits = 0;
    auto st = stream_trace_dat(path, side, [&](const Event& ev) {
        if (const auto* o = std::get_if<OtherEvent>(&ev.body)) streamed_exits += o->name == "sched_process_exit";
        return true;
    });
    ASSERT_TRUE(st) << st.error().message;
    EXPECT_EQ(streamed_exits, exits);
    Report r = build_report(*whole);
    std::size_t listed = 0;
    for (const auto& e : r.events)
        listed += e.name == "sched:sched_process_exit";
    EXPECT_EQ(listed, exits);
}
