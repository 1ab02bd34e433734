// ReportStream (nvtrace/report_stream.hpp) against build_report + write_json: the same bytes on every test trace
// and capture directory (their calls included), and on synthetic streams for what only streaming can get wrong:
// records handed out while held (preload exit markers, an ioctl in progress while others complete, lost exits),
// calls written by id while they end in another order, ioctls joined by root calls that end after them, /dev/kmsg
// lines placed by time on calls already written, stacks attached across the sink, events out of time order
// (sorted, or counted as late), a pipe and a full disk as output.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "event_builders.hpp"
#include "nvtrace/capture_dir.hpp"
#include "nvtrace/import.hpp"
#include "nvtrace/ioctl.hpp"
#include "nvtrace/report.hpp"
#include "nvtrace/report_stream.hpp"
#include "test_io.hpp"

using namespace nvtrace;

namespace {

const std::string kData = NVTRACE_TEST_DATA;

using test::read_fd;

std::string whole_json(const EventStream& st) {
    std::ostringstream os;
    write_json(build_report(st), os);
    return os.str();
}

// The streamed report of `st` as report.json bytes, written to a temporary file; nullopt when refused.
std::optional<std::string> streamed_json(const EventStream& st, ReportStream::Options options = {}) {
    EventStream side = st;
    side.events.clear();
    auto rs = ReportStream::open(std::filesystem::temp_directory_path().string(), std::move(side), options);
    EXPECT_TRUE(rs) << rs.error().message;
    if (!rs) return std::nullopt;
    for (const Event& ev : st.events)
        (*rs)->add(ev);
    auto f = (*rs)->finish();
    EXPECT_TRUE(f) << f.error().message;
    FILE* tmp = std::tmpfile();
    auto w = (*rs)->write(::fileno(tmp));
    EXPECT_TRUE(w) << w.error().message;
    std::string out = read_fd(::fileno(tmp));
    std::fclose(tmp);
    return out;
}

// `st` with its events in the order the ReportStream's sorter gives within its window: a stable sort by ts_ns.
EventStream by_time(EventStream st) {
    std::stable_sort(st.events.begin(), st.events.end(),
                     [](const Event& a, const Event& b) { return a.ts_ns < b.ts_ns; });
    return st;
}

Event at(std::uint64_t ts, int pid, EventBody body, int cpu = 0) {
    return Event{ts, cpu, pid, false, std::move(body)};
}
Event enter(std::uint64_t ts, int pid, int fd, std::uint64_t cmd) {
    return at(ts, pid, IoctlEnter{fd, cmd, 0});
}
Event exit_ioctl(std::uint64_t ts, int pid, std::int64_t ret) {
    return at(ts, pid, IoctlExit{ret});
}
Event marker(std::uint64_t ts, int pid, std::string text) {
    return at(ts, pid, Marker{std::move(text)});
}

}  // namespace

TEST(ReportStream, SameBytesAsBuildReportOnEveryTestTrace) {
    std::size_t compared = 0, with_records = 0, with_calls = 0;
    for (const auto& e : std::filesystem::directory_iterator(kData + "/cases")) {
        SCOPED_TRACE(e.path().string());
        auto in = import_file(e.path().string());
        if (!in) continue;  // kernel logs and the like: not event streams
        EventStream st = std::move(in->stream);
        // Sorted by time (the route of a capture directory or a trace.dat), and in file order (time_order false:
        // a text trace's streamed report, whose whole report keeps file order too).
        auto s = streamed_json(st);
        ASSERT_TRUE(s);
        EXPECT_EQ(*s, whole_json(by_time(st)));
        ReportStream::Options file_order;
        file_order.time_order = false;
        auto f = streamed_json(st, file_order);
        ASSERT_TRUE(f);
        EXPECT_EQ(*f, whole_json(st));
        ++compared;
        Report r = build_report(st);
        with_records += !r.ioctls.empty() || !r.events.empty() || !r.markers.empty();
        with_calls += !r.calls.empty();
    }
    EXPECT_GE(compared, 8u);
    EXPECT_GE(with_records, 3u);
    EXPECT_GE(with_calls, 5u);
}

TEST(ReportStream, SameBytesAsBuildReportOnTheCaptureDirectories) {
    std::size_t compared = 0;
    for (const auto& e : std::filesystem::directory_iterator(kData + "/capture_dir")) {
        SCOPED_TRACE(e.path().string());
        auto d = read_capture_dir(e.path().string());
        ASSERT_TRUE(d) << d.error().message;
        EventStream st = std::move(d->stream);
        auto s = streamed_json(st);
        ASSERT_TRUE(s);
        EXPECT_EQ(*s, whole_json(st));
        ++compared;
    }
    EXPECT_GE(compared, 1u);
}

// What `nvtrace report DIR` does: the pages streamed by CaptureDirReader into a ReportStream.
TEST(ReportStream, CaptureDirectoryStreamedEqualsItsWholeReport) {
    for (const auto& e : std::filesystem::directory_iterator(kData + "/capture_dir")) {
        SCOPED_TRACE(e.path().string());
        auto reader = CaptureDirReader::open(e.path().string());
        ASSERT_TRUE(reader) << reader.error().message;
        auto rs = ReportStream::open(std::filesystem::temp_directory_path().string(), reader->side());
        ASSERT_TRUE(rs) << rs.error().message;
        auto st = reader->stream([&](Event& ev) {
            (*rs)->add(ev);
            return true;
        });
        ASSERT_TRUE(st) << st.error().message;
        ASSERT_TRUE(*st);
        (*rs)->side().diagnostics = reader->side().diagnostics;
        ASSERT_TRUE((*rs)->finish());
        FILE* tmp = std::tmpfile();
        ASSERT_TRUE((*rs)->write(::fileno(tmp)));
        std::string got = read_fd(::fileno(tmp));
        std::fclose(tmp);
        auto whole = read_capture_dir(e.path().string());
        ASSERT_TRUE(whole);
        EXPECT_EQ(got, whole_json(whole->stream));
        EXPECT_GT((*rs)->ioctls(), 0u);
    }
}

TEST(ReportStream, PreloadMarkersStillFindTheirRecordsWhenAnotherIoctlNestsInASignalHandler) {
    EventStream st;
    st.comms[7] = "app";
    st.fd_paths[{7, 5}] = "/dev/nvidiactl";
    // ioctl A (fd 5), returns; a signal handler's ioctl B (fd 6) with both markers; then A's exit marker.
    st.events = {marker(10, 7, "nvtrace-ioctl enter fd=5 dev=/dev/nvidiactl cmd=0xc020462b hclass=0xa06f"),
                 enter(11, 7, 5, 0xc020462b),
                 exit_ioctl(20, 7, 0),
                 marker(21, 7, "nvtrace-ioctl enter fd=6 cmd=0xc0104600"),
                 enter(22, 7, 6, 0xc0104600),
                 exit_ioctl(23, 7, 0),
                 marker(24, 7, "nvtrace-ioctl exit fd=6 cmd=0xc0104600 ret=0 status=0x0"),
                 marker(25, 7, "nvtrace-ioctl exit fd=5 cmd=0xc020462b ret=0 status=0x1e"),
                 marker(30, 7, "nvtrace-phase: after")};
    auto s = streamed_json(st);
    ASSERT_TRUE(s);
    EXPECT_EQ(*s, whole_json(st));
    Report r = build_report(st);
    ASSERT_EQ(r.ioctls.size(), 2u);
    EXPECT_EQ(r.ioctls[0].hclass, 0xa06fu);
    EXPECT_TRUE(r.ioctls[0].status.has_value());
    EXPECT_EQ(r.ioctls[1].status, "NV_OK");
    EXPECT_EQ(r.markers.size(), 1u);  // the preload lines are folded into ioctls
}

TEST(ReportStream, AnIoctlInProgressKeepsItsPlaceAndItsReturnWhileThousandsComplete) {
    EventStream st;
    st.events.push_back(enter(1, 100, 3, 0x5401));  // pid 100 blocks in its ioctl
    std::uint64_t ts = 2;
    for (int i = 0; i < 10000; ++i) {
        st.events.push_back(enter(ts++, 200, 4, 0x541B));
        st.events.push_back(exit_ioctl(ts++, 200, 0));
    }
    st.events.push_back(exit_ioctl(ts++, 100, -4));
    auto s = streamed_json(st);
    ASSERT_TRUE(s);
    EXPECT_EQ(*s, whole_json(st));
    Report r = build_report(st);
    ASSERT_EQ(r.ioctls.size(), 10001u);
    EXPECT_EQ(r.ioctls[0].pid, 100);
    EXPECT_EQ(r.ioctls[0].ret, -4);
    EXPECT_EQ(r.ioctls[1].enter_ns, 2u);
}

TEST(ReportStream, ExitMarkerOlderThanTheHeldRecordsFindsNothingInBothPaths) {
    // The exit marker of the first ioctl arrives after kHeldRecords other complete ioctls: its record was handed
    // out already, so neither path gives it a status (the documented bound), and both agree.
    EventStream st;
    st.events.push_back(enter(1, 100, 3, 0xc020462b));
    st.events.push_back(exit_ioctl(2, 100, 0));
    std::uint64_t ts = 3;
    for (std::size_t i = 0; i < IoctlCollector::kHeldRecords + 10; ++i) {
        st.events.push_back(enter(ts++, 200, 4, 0x541B));
        st.events.push_back(exit_ioctl(ts++, 200, 0));
    }
    st.events.push_back(marker(ts++, 100, "nvtrace-ioctl exit fd=3 cmd=0xc020462b ret=0 status=0x1e"));
    auto s = streamed_json(st);
    ASSERT_TRUE(s);
    EXPECT_EQ(*s, whole_json(st));
    EXPECT_FALSE(build_report(st).ioctls[0].status.has_value());
}

TEST(ReportStream, LostExitDoesNotHoldEveryLaterRecord) {
    // pid 100's first ioctl never returns in the data (its exit was lost): its next enter closes it, and the
    // records behind it are handed out, in order, with the first one's ret null.
    EventStream st;
    st.events = {enter(1, 100, 3, 0x5401), enter(5, 100, 3, 0x5402), exit_ioctl(6, 100, 0)};
    auto s = streamed_json(st);
    ASSERT_TRUE(s);
    EXPECT_EQ(*s, whole_json(st));
    Report r = build_report(st);
    ASSERT_EQ(r.ioctls.size(), 2u);
    EXPECT_FALSE(r.ioctls[0].ret.has_value());
    EXPECT_EQ(r.ioctls[1].ret, 0);
}

TEST(ReportStream, StackAfterAnEventIsAttachedBeforeTheEventIsWritten) {
    EventStream st;
    st.events = {at(1, 9, OtherEvent{"irq", "irq_handler_entry", "irq=24 name=nvidia"}, 1),
                 at(1, 9, OtherEvent{"ftrace", "kernel_stack", "=> nv_isr\n=> handle_irq"}, 1),
                 at(2, 9, OtherEvent{"ftrace", "kernel_stack", "=> orphan"}, 0), marker(3, 9, "nvtrace-phase: x")};
    auto s = streamed_json(st);
    ASSERT_TRUE(s);
    EXPECT_EQ(*s, whole_json(st));
    Report r = build_report(st);
    ASSERT_EQ(r.events.size(), 2u);
    EXPECT_EQ(r.events[0].stack.size(), 2u);
}

// Calls end child first; report.json lists them by id. The ioctl's root call ends before the ioctl's record is
// handed over, the second root (after the ioctl returned) joins none, the console line is in the inner call and
// the /dev/kmsg line is placed by time on a call written long before finish().
TEST(ReportStream, CallsAreWrittenByIdAndJoinTheirIoctlAndKernelLog) {
    using test::entry;
    using test::exit_;
    EventStream st;
    st.comms[7] = "app";
    st.kmsg = {{"4,10,13,-;NVRM: inside"}};  // 13 us
    st.kmsg_clock = KmsgClockOffset{"global", 0, 0, "same_clock"};
    st.events = {enter(10'000, 7, 5, 0xc020462b),
                 entry(11'000, 7, "sys_ioctl", 0),
                 entry(12'000, 7, "rm_ioctl", 1),
                 at(12'500, 7, ConsoleLine{"NVRM: console"}),
                 exit_(14'500, 7, "rm_ioctl", 1, 12'000, 14'500),
                 exit_(15'000, 7, "sys_ioctl", 0, 11'000, 15'000),
                 exit_ioctl(20'000, 7, 0),
                 entry(25'000, 7, "sys_read", 0),
                 exit_(26'000, 7, "sys_read", 0, 25'000, 26'000)};
    auto s = streamed_json(st);
    ASSERT_TRUE(s);
    EXPECT_EQ(*s, whole_json(st));
    Report r = build_report(st);
    ASSERT_EQ(r.calls.size(), 3u);
    ASSERT_EQ(r.ioctls.size(), 1u);
    EXPECT_EQ(r.ioctls[0].calls, std::vector<std::uint64_t>{1});
    ASSERT_EQ(r.kernel_log.size(), 2u);
    EXPECT_EQ(r.kernel_log[0].call, 2u);
    EXPECT_EQ(r.kernel_log[1].attached, "time");
    EXPECT_EQ(r.kernel_log[1].call, 2u);
    auto j = nlohmann::json::parse(*s);
    ASSERT_EQ(j["calls"].size(), 3u);
    for (std::size_t i = 0; i < 3; ++i)
        EXPECT_EQ(j["calls"][i]["id"], i + 1);
}

// An ioctl whose exit is lost: the root calls entered before the pid's next ioctl are its own, those after are
// the next one's; and an ioctl handed over while a root call entered inside it is still open waits for it.
TEST(ReportStream, RootCallsJoinTheLatestIoctlOfTheirTaskAsInTheWholeReport) {
    using test::entry;
    using test::exit_;
    EventStream st;
    st.events = {
        enter(10, 7, 5, 1),  // its exit is not in the data
        entry(11, 7, "a", 0), exit_(12, 7, "a", 0, 11, 12), enter(20, 7, 5, 2),   entry(21, 7, "b", 0),
        exit_ioctl(22, 7, 0), enter(23, 8, 6, 3),           exit_ioctl(24, 8, 0), exit_(9'000, 7, "b", 0, 21, 9'000)};
    auto s = streamed_json(st);
    ASSERT_TRUE(s);
    EXPECT_EQ(*s, whole_json(st));
    Report r = build_report(st);
    ASSERT_EQ(r.ioctls.size(), 3u);
    EXPECT_EQ(r.ioctls[0].calls, std::vector<std::uint64_t>{1});
    EXPECT_EQ(r.ioctls[1].calls, std::vector<std::uint64_t>{2});
    EXPECT_TRUE(r.ioctls[2].calls.empty());
}

// --calls-jsonl: the calls go to Options::calls as they end (child first), report.json's calls stay empty.
TEST(ReportStream, CallsGoToTheCallSinkWhenOneIsGiven) {
    using test::entry;
    using test::exit_;
    ReportStream::Options o;
    std::vector<std::uint64_t> ids;
    o.calls = [&](Call&& c) { ids.push_back(c.id); };
    auto rs = ReportStream::open(std::filesystem::temp_directory_path().string(), EventStream{}, o);
    ASSERT_TRUE(rs);
    for (const Event& ev : {entry(1, 5, "f", 0), entry(2, 5, "g", 1), exit_(3, 5, "g", 1, 2, 3),
                            exit_(4, 5, "f", 0, 1, 4), marker(10, 5, "a")})
        (*rs)->add(ev);
    ASSERT_TRUE((*rs)->finish());
    EXPECT_EQ(ids, (std::vector<std::uint64_t>{2, 1}));
    EXPECT_EQ((*rs)->calls(), 2u);
    EXPECT_EQ((*rs)->markers(), 1u);
    FILE* tmp = std::tmpfile();
    ASSERT_TRUE((*rs)->write(::fileno(tmp)));
    std::string out = read_fd(::fileno(tmp));
    std::fclose(tmp);
    EXPECT_EQ(out.rfind("{\n \"calls\": [],\n", 0), 0u);
    EXPECT_EQ(nlohmann::json::parse(out)["graph"].size(), 2u);
}

// A marker older than the one before it (another CPU's, read a little later) used to make add() refuse the
// stream, and `nvtrace report` read the whole input again: now it is put in its place.
TEST(ReportStream, EventBackInTimeIsSortedNotRefused) {
    EventStream st;
    st.events = {marker(10, 5, "a"),   marker(30, 5, "c"),        at(20, 6, Marker{"b"}, 1),
                 marker(30, 5, "d"),   enter(40, 5, 3, 0xc0),     at(35, 6, IoctlEnter{4, 0xc1, 0}, 1),
                 exit_ioctl(50, 5, 0), at(45, 6, IoctlExit{0}, 1)};
    auto rs = ReportStream::open(std::filesystem::temp_directory_path().string(), EventStream{});
    ASSERT_TRUE(rs);
    for (Event ev : st.events)
        (*rs)->add(std::move(ev));  // the moving overload: the sorter swaps the event in
    ASSERT_TRUE((*rs)->finish());
    EXPECT_EQ((*rs)->markers(), 4u);
    EXPECT_EQ((*rs)->ioctls(), 2u);
    FILE* tmp = std::tmpfile();
    ASSERT_TRUE((*rs)->write(::fileno(tmp)));
    std::string got = read_fd(::fileno(tmp));
    std::fclose(tmp);
    EXPECT_EQ(got, whole_json(by_time(st)));
    Report r = build_report(by_time(st));
    ASSERT_EQ(r.markers.size(), 4u);
    EXPECT_EQ(r.markers[1].text, "b");
    EXPECT_TRUE(r.completeness.complete);
    for (const auto& d : r.completeness.diagnostics)
        EXPECT_NE(d.name.rfind("late_", 0), 0u) << d.name;
}

// An event older than one already folded (more than the window's 100 ms behind the newest): it is folded in
// arrival order and counted, never dropped and never a reason to read the input again. A late event that is
// listed only (late_event, info) leaves the report complete; a late ioctl entry or exit or marker
// (late_ioctl_or_marker, data_loss) may be paired or placed wrongly, so the report is incomplete.
TEST(ReportStream, EventTooLateForWindowIsCountedNotDropped) {
    const std::uint64_t s = 1'000'000'000;
    auto other = [](std::uint64_t ts, int cpu, std::string name) {
        return Event{ts, cpu, 5, false, OtherEvent{"sched", std::move(name), ""}};
    };
    {
        auto rs = ReportStream::open(std::filesystem::temp_directory_path().string(), EventStream{});
        ASSERT_TRUE(rs);
        std::vector<Event> in = {other(1 * s, 0, "a"), other(2 * s, 0, "b"), other(3 * s, 0, "c"),
                                 other(1 * s + 500, 2, "late"), other(4 * s, 0, "d")};
        for (const Event& ev : in)
            (*rs)->add(ev);
        ASSERT_TRUE((*rs)->finish());
        EXPECT_EQ((*rs)->events(), in.size());  // in == out
        const Report& r = (*rs)->report();
        EXPECT_TRUE(r.completeness.complete);
        const Diagnostic* late = nullptr;
        for (const auto& d : r.completeness.diagnostics)
            if (d.name == "late_event") late = &d;
        ASSERT_NE(late, nullptr);
        EXPECT_EQ(late->severity, "info");
        EXPECT_EQ(late->count, 1u);
        // 1 s + 500 ns arrived after 2 s was folded (3 s is 1 s newer than 2 s: past the 100 ms span).
        EXPECT_NE(late->first_example.find("cpu 2 ts 1000000500 ns: 999999500 ns older"), std::string::npos)
            << late->first_example;
        // Listed where it arrived: after b, before c.
        FILE* tmp = std::tmpfile();
        ASSERT_TRUE((*rs)->write(::fileno(tmp)));
        std::string got = read_fd(::fileno(tmp));
        std::fclose(tmp);
        const auto b = got.find("\"sched:b\""), l = got.find("\"sched:late\""), c = got.find("\"sched:c\"");
        ASSERT_NE(l, std::string::npos);
        EXPECT_LT(b, l);
        EXPECT_LT(l, c);
    }
    {
        auto rs = ReportStream::open(std::filesystem::temp_directory_path().string(), EventStream{});
        ASSERT_TRUE(rs);
        for (Event ev : {marker(1 * s, 5, "a"), marker(2 * s, 5, "b"), marker(3 * s, 5, "c"), marker(10, 7, "late"),
                         enter(4 * s, 5, 3, 0xc0), exit_ioctl(4 * s + 10, 5, 0)})
            (*rs)->add(std::move(ev));
        ASSERT_TRUE((*rs)->finish());
        EXPECT_EQ((*rs)->markers(), 4u);
        EXPECT_EQ((*rs)->ioctls(), 1u);
        const Report& r = (*rs)->report();
        EXPECT_FALSE(r.completeness.complete);
        const Diagnostic* late = nullptr;
        for (const auto& d : r.completeness.diagnostics)
            if (d.name == "late_ioctl_or_marker") late = &d;
        ASSERT_NE(late, nullptr);
        EXPECT_EQ(late->severity, "data_loss");
        EXPECT_EQ(late->count, 1u);
        EXPECT_NE(late->first_example.find("cpu 0 ts 10 ns"), std::string::npos) << late->first_example;
    }
}

TEST(ReportStream, WritesTheSameBytesIntoAPipe) {
    EventStream st;
    for (int i = 0; i < 3000; ++i) {
        st.events.push_back(enter(2 * i + 1, 7, 4, 0x541B));
        st.events.push_back(exit_ioctl(2 * i + 2, 7, 0));
    }
    auto rs = ReportStream::open(std::filesystem::temp_directory_path().string(), EventStream{});
    ASSERT_TRUE(rs);
    for (const Event& ev : st.events)
        (*rs)->add(ev);
    ASSERT_TRUE((*rs)->finish());
    EXPECT_EQ((*rs)->ioctls(), 3000u);
    int p[2];
    ASSERT_EQ(::pipe(p), 0);
    std::string got;
    std::thread reader([&] {
        char buf[65536];
        for (ssize_t n; (n = ::read(p[0], buf, sizeof buf)) > 0;)
            got.append(buf, static_cast<std::size_t>(n));
    });
    auto w = (*rs)->write(p[1]);
    ::close(p[1]);
    reader.join();
    ::close(p[0]);
    ASSERT_TRUE(w) << w.error().message;
    EXPECT_EQ(got, whole_json(st));
}

TEST(ReportStream, FullDiskIsAnErrorNotAShortReport) {
    EventStream st;
    st.events = {enter(1, 7, 4, 0x541B), exit_ioctl(2, 7, 0)};
    auto rs = ReportStream::open(std::filesystem::temp_directory_path().string(), EventStream{});
    ASSERT_TRUE(rs);
    for (const Event& ev : st.events)
        (*rs)->add(ev);
    ASSERT_TRUE((*rs)->finish());
    int full = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
    ASSERT_GE(full, 0);
    auto w = (*rs)->write(full);
    ::close(full);
    ASSERT_FALSE(w);
    EXPECT_NE(w.error().message.find("No space"), std::string::npos) << w.error().message;
}

// Seen: `nvtrace report X.dat -o /dev/full`: the report was linked in place of the device (unlink, then
// link), and /dev/full was a regular file afterwards. An existing output is written into, never replaced.
TEST(ReportStream, OutputThatExistsIsWrittenIntoNotReplaced) {
    EventStream st;
    st.events = {enter(1, 7, 4, 0x541B), exit_ioctl(2, 7, 0)};
    const std::string want = whole_json(st);
    auto streamed = [&]() {
        auto rs = ReportStream::open(std::filesystem::temp_directory_path().string(), EventStream{});
        EXPECT_TRUE(rs);
        for (const Event& ev : st.events)
            (*rs)->add(ev);
        EXPECT_TRUE((*rs)->finish());
        return std::move(*rs);
    };
    // A device stays a device.
    {
        struct stat before {};
        ASSERT_EQ(::stat("/dev/null", &before), 0);
        auto w = streamed()->write_to("/dev/null");
        ASSERT_TRUE(w) << w.error().message;
        struct stat after {};
        ASSERT_EQ(::stat("/dev/null", &after), 0);
        EXPECT_TRUE(S_ISCHR(after.st_mode));
        EXPECT_EQ(after.st_rdev, before.st_rdev);
    }
    // A regular file keeps its inode (and so its other names); a symbolic link is written through.
    auto dir = std::filesystem::temp_directory_path() / ("nvtrace-write-to-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const auto file = dir / "out.json", alias = dir / "alias.json", link = dir / "link.json";
    std::ofstream(file) << "old contents that are longer than nothing";
    std::filesystem::create_hard_link(file, alias);
    std::filesystem::create_symlink(file, link);
    struct stat before {};
    ASSERT_EQ(::stat(file.c_str(), &before), 0);
    ASSERT_TRUE(streamed()->write_to(file.string()));
    struct stat after {};
    ASSERT_EQ(::stat(file.c_str(), &after), 0);
    EXPECT_EQ(after.st_ino, before.st_ino);
    auto slurp = [](const std::filesystem::path& p) {
        std::ifstream in(p, std::ios::binary);
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
    };
    EXPECT_EQ(slurp(alias), want);
    ASSERT_TRUE(streamed()->write_to(link.string()));
    EXPECT_TRUE(std::filesystem::is_symlink(link));
    EXPECT_EQ(slurp(file), want);
    // A new name is the temporary file itself, linked.
    ASSERT_TRUE(streamed()->write_to((dir / "new.json").string()));
    EXPECT_EQ(slurp(dir / "new.json"), want);
    std::filesystem::remove_all(dir);
}

// Spilled calls are written out by id, i.e. as they started, but were spilled as they ended: a parent after its
// children, and the calls of tasks that ran at once interleaved. Read back through a 1 MiB window from the record
// asked for, nearly every record missed it and read 1 MiB (a tasks-shape report of 314 MB read 23.8 GB back).
TEST(ReportStream, SpilledCallsOfInterleavedTasksAreReadBackOnceNotAWindowPerRecord) {
    using test::entry;
    using test::exit_;
    EventStream st;
    constexpr int kTasks = 8;
    for (int k = 0; k < kTasks; ++k)
        st.events.push_back(entry(1 + k, 100 + k, "never_returns", 0));
    // Each round, every task enters a chain of 6 calls, the tasks' entries interleaved, then they return: a chain
    // is spilled innermost first and read back outermost first, the tasks' records side by side.
    std::uint64_t t = 100;
    constexpr int kDepth = 6;
    static const char* const kNames[kDepth] = {"f0", "f1", "f2", "f3", "f4", "f5"};
    std::vector<std::uint64_t> start(kTasks * kDepth);
    for (int round = 0; round < 2'000; ++round) {
        for (int d = 0; d < kDepth; ++d)
            for (int k = 0; k < kTasks; ++k) {
                start[k * kDepth + d] = t;
                st.events.push_back(entry(t++, 100 + k, kNames[d], d + 1));
            }
        for (int d = kDepth - 1; d >= 0; --d)
            for (int k = 0; k < kTasks; ++k) {
                st.events.push_back(exit_(t, 100 + k, kNames[d], d + 1, start[k * kDepth + d], t));
                ++t;
            }
    }
    ReportStream::Options spill_all;
    spill_all.waiting_calls_memory = 0;
    EventStream side = st;
    side.events.clear();
    auto rs = ReportStream::open(std::filesystem::temp_directory_path().string(), std::move(side), spill_all);
    ASSERT_TRUE(rs) << rs.error().message;
    for (const Event& ev : st.events)
        (*rs)->add(ev);
    ASSERT_TRUE((*rs)->finish());
    FILE* tmp = std::tmpfile();
    ASSERT_TRUE((*rs)->write(::fileno(tmp)));
    const std::string out = read_fd(::fileno(tmp));
    std::fclose(tmp);
    EXPECT_EQ(out, whole_json(st));
    EXPECT_GT((*rs)->spill_bytes_read(), 0u);  // the calls past the first 65,536 came back from the file
    // The calls past the first 65,536 (about 30,000 of 96,008) waited in the file, 7.5 MB of the 24 MB report.json:
    // read back once each, in blocks, they come back in about that; the 1 MiB window read 43 MB.
    EXPECT_LT((*rs)->spill_bytes_read(), out.size() / 2) << "report.json " << out.size() << " bytes";
}

TEST(ReportStream, MissingTemporaryDirectoryIsAnError) {
    auto rs = ReportStream::open("/nonexistent/nvtrace", EventStream{});
    ASSERT_FALSE(rs);
    EXPECT_NE(rs.error().message.find("/nonexistent/nvtrace"), std::string::npos);
}

// A call that never returns in the data holds every call entered after it (report.json lists calls by id): past
// ReportStream's in-memory limit (65,536 calls) they wait in a spill file, and are still written by id.
TEST(ReportStream, CallsAfterAnUnclosedCallAreSpilledAndWrittenById) {
    using test::entry;
    using test::exit_;
    EventStream st;
    st.events.push_back(entry(1, 5, "never_returns", 0));
    for (std::uint64_t i = 0; i < 70'000; ++i) {
        const std::uint64_t t = 10 + 4 * i;
        st.events.push_back(entry(t, 6, "outer", 0));
        st.events.push_back(entry(t + 1, 6, "inner", 1));
        st.events.push_back(exit_(t + 2, 6, "inner", 1, t + 1, t + 2));
        st.events.push_back(exit_(t + 3, 6, "outer", 0, t, t + 3));
    }
    auto s = streamed_json(st);
    ASSERT_TRUE(s);
    const std::string whole = whole_json(st);
    EXPECT_EQ(*s, whole);
    EXPECT_EQ(build_report(st).calls.size(), 140'001u);
    // The waiting calls' JSON past the first 65,536 calls: in memory up to waiting_calls_memory bytes, then in the
    // spill file (some thousands of calls in memory here, the rest in the file), or all in the file.
    for (std::size_t memory : {std::size_t(1) << 20, std::size_t(0)}) {
        ReportStream::Options small;
        small.waiting_calls_memory = memory;
        auto m = streamed_json(st, small);
        ASSERT_TRUE(m);
        EXPECT_EQ(*m, whole) << "waiting_calls_memory " << memory;
    }
}
