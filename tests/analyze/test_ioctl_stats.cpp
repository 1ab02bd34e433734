// Report::ioctl_stats (IoctlStats, analyze/ioctl_stats.cpp): per (device, request) counts, errors by errno and
// NV_STATUS name, latency with missing exits, rows per task; the summary's table, the report.json round trip,
// the ioctls CSV; and the shared strace cases (tests/data/cases, values of /work/shared/cases/README.md).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "../../analyze/json_values.hpp"
#include "nvtrace/export.hpp"
#include "nvtrace/ioctl.hpp"
#include "nvtrace/report_io.hpp"

using namespace nvtrace;
namespace fs = std::filesystem;

namespace {

const std::string kCases = std::string(NVTRACE_TEST_DATA) + "/cases/";

IoctlRecord io(int pid, std::string comm, std::string dev, std::uint64_t cmd, std::optional<std::int64_t> ret,
               std::optional<std::uint64_t> duration) {
    IoctlRecord r;
    r.pid = pid;
    r.comm = std::move(comm);
    r.fd = 5;
    r.fd_path = std::move(dev);
    r.cmd = cmd;
    r.name = "NV_ESC_RM_ALLOC";
    r.ret = ret;
    r.enter_ns = 1000;
    if (ret) r.exit_ns = 1000 + duration.value_or(0);
    r.duration_ns = duration;
    return r;
}

Report load(const std::string& name) {
    auto r = load_report_input(kCases + name);
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? std::move(*r) : Report{};
}

}  // namespace

TEST(IoctlStats, ErrorsByErrnoNameAndByNvStatus) {
    std::vector<IoctlRecord> v;
    v.push_back(io(1, "a", "/dev/nvidiactl", 0xc030462b, -25, 100));  // kernel's -errno: ENOTTY
    IoctlRecord printed = io(1, "a", "/dev/nvidiactl", 0xc030462b, -1, 100);
    printed.errno_name = "EPERM";  // strace "= -1 EPERM (...)": the printed name, not -1's
    v.push_back(printed);
    IoctlRecord rm = io(1, "a", "/dev/nvidiactl", 0xc030462b, 0, 100);
    rm.status = "NV_ERR_INVALID_ARGUMENT";  // returned 0, the RM status says it failed
    v.push_back(rm);
    IoctlRecord ok = io(1, "a", "/dev/nvidiactl", 0xc030462b, 0, 100);
    ok.status = "NV_OK";
    v.push_back(ok);
    v.push_back(io(1, "a", "/dev/nvidiactl", 0xc030462b, -512, 100));   // kernel-internal ERESTARTSYS
    v.push_back(io(1, "a", "/dev/nvidiactl", 0xc030462b, -5000, 100));  // past MAX_ERRNO: no name
    v.push_back(io(1, "a", "/dev/nvidiactl", 0xc030462b, 3, 100));      // a positive return is no error
    const auto rows = ioctl_stats(v);
    ASSERT_EQ(rows.size(), 1u);
    const IoctlStat& s = rows[0];
    EXPECT_EQ(s.count, 7u);
    EXPECT_EQ(s.errors, 5u);
    const std::map<std::string, std::uint64_t> want{
        {"ENOTTY", 1}, {"EPERM", 1}, {"NV_ERR_INVALID_ARGUMENT", 1}, {"ERESTARTSYS", 1}, {"ret=-5000", 1}};
    EXPECT_EQ(s.errors_by_name, want);
    EXPECT_EQ(s.device, "/dev/nvidiactl");
    EXPECT_FALSE(s.fd);
    EXPECT_FALSE(s.pid);
}

TEST(IoctlStats, MissingExitIsUnknownLatencyNeverZero) {
    std::vector<IoctlRecord> v{io(1, "a", "/dev/nvidia0", 0x21, 0, 300), io(1, "a", "/dev/nvidia0", 0x21, 0, 100),
                               io(1, "a", "/dev/nvidia0", 0x21, std::nullopt, std::nullopt)};
    auto rows = ioctl_stats(v);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].count, 3u);
    EXPECT_EQ(rows[0].unfinished, 1u);
    EXPECT_EQ(rows[0].latency_unknown, 1u);
    EXPECT_EQ(rows[0].errors, 0u);  // the unfinished call's outcome is not known: not an error
    EXPECT_EQ(rows[0].total_ns, 400u);
    EXPECT_EQ(rows[0].mean_ns, 200u);  // over the 2 calls with a latency, not 3
    EXPECT_EQ(rows[0].min_ns, 100u);
    EXPECT_EQ(rows[0].max_ns, 300u);

    // Only unfinished calls: every latency is null.
    rows = ioctl_stats({io(1, "a", "/dev/nvidia0", 0x21, std::nullopt, std::nullopt)});
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_FALSE(rows[0].total_ns);
    EXPECT_FALSE(rows[0].mean_ns);
    EXPECT_FALSE(rows[0].max_ns);
    EXPECT_EQ(rows[0].latency_unknown, 1u);
}

TEST(IoctlStats, SeveralTasksGetARowEach) {
    std::vector<IoctlRecord> v{
        io(20, "python3", "/dev/nvidiactl", 0x2a, 0, 10), io(10, "worker", "/dev/nvidiactl", 0x2a, -22, 30),
        io(20, "python3", "/dev/nvidiactl", 0x2a, 0, 20), io(10, "worker", "/dev/nvidia-uvm", 0x1, 0, 5)};
    const auto rows = ioctl_stats(v);
    ASSERT_EQ(rows.size(), 4u);  // nvidia-uvm (one task: no task rows), nvidiactl, its two tasks
    EXPECT_EQ(rows[0].device, "/dev/nvidia-uvm");
    EXPECT_FALSE(rows[0].pid);
    EXPECT_EQ(rows[1].device, "/dev/nvidiactl");
    EXPECT_FALSE(rows[1].pid);
    EXPECT_EQ(rows[1].count, 3u);
    EXPECT_EQ(rows[1].errors, 1u);
    EXPECT_EQ(rows[2].pid, 10);
    EXPECT_EQ(rows[2].comm, "worker");
    EXPECT_EQ(rows[2].count, 1u);
    EXPECT_EQ(rows[2].errors_by_name.at("EINVAL"), 1u);
    EXPECT_EQ(rows[2].max_ns, 30u);
    EXPECT_EQ(rows[3].pid, 20);
    EXPECT_EQ(rows[3].count, 2u);
    EXPECT_EQ(rows[3].total_ns, 30u);
    EXPECT_EQ(rows[3].mean_ns, 15u);
    EXPECT_EQ(rows[3].name, "NV_ESC_RM_ALLOC");

    const auto table = ioctl_stats_table(rows, false);
    const std::vector<std::string> want{
        "ioctl requests: 2 (device, request), latency enter -> exit in us",
        "    count  errors         total          mean           max  request",
        "        3       1         0.060         0.020         0.030  nvidiactl NV_ESC_RM_ALLOC  errors: EINVAL x1",
        "        1       1         0.030         0.030         0.030    worker/10  errors: EINVAL x1",
        "        2       0         0.030         0.015         0.020    python3/20",
        "        1       0         0.005         0.005         0.005  nvidia-uvm NV_ESC_RM_ALLOC",
    };
    EXPECT_EQ(table, want);
    // Capped without -v: the rest is counted.
    const auto capped = ioctl_stats_table(rows, false, 1);
    ASSERT_EQ(capped.size(), 6u);
    EXPECT_EQ(capped.back(), "... 1 more request(s) (1 ioctls); -v prints them all");
    EXPECT_TRUE(ioctl_stats_table({}, false).empty());
}

TEST(IoctlStats, UnknownDeviceIsGroupedByFd) {
    IoctlRecord a = io(1, "a", "", 0x21, 0, 1), b = io(1, "a", "", 0x21, 0, 1);
    a.fd_path.reset();
    b.fd_path.reset();
    b.fd = 9;
    const auto rows = ioctl_stats({a, b});
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_FALSE(rows[0].device);
    EXPECT_EQ(rows[0].fd, 5);
    EXPECT_EQ(rows[1].fd, 9);
}

// IoctlStats::add keeps the rows the previous record went to: a record that differs from it only in the comm
// (the same pid after an execve), only in the fd of an unknown device, or only in the device being known, goes to
// rows of its own; a copy taken midway counts on without touching the original's rows.
TEST(IoctlStats, ARecordThatDiffersFromThePreviousOneInOneKeyGetsItsOwnRow) {
    IoctlStats s;
    s.add(io(7, "loader", "/dev/nvidiactl", 0x2a, 0, 10));
    s.add(io(7, "worker", "/dev/nvidiactl", 0x2a, 0, 20));  // same pid, renamed by an execve
    IoctlRecord unknown_fd5 = io(7, "worker", "", 0x2a, 0, 1), unknown_fd9 = unknown_fd5;
    unknown_fd5.fd_path.reset();
    unknown_fd9.fd_path.reset();
    unknown_fd9.fd = 9;
    s.add(unknown_fd5);
    s.add(unknown_fd9);
    IoctlStats copy = s;
    s.add(io(7, "worker", "/dev/nvidiactl", 0x2a, -22, 30));
    copy.add(unknown_fd9);
    const auto rows = s.rows();
    ASSERT_EQ(rows.size(), 5u);  // fd 5, fd 9, then nvidiactl and its two tasks
    EXPECT_EQ(rows[0].fd, 5);
    EXPECT_EQ(rows[0].count, 1u);
    EXPECT_EQ(rows[1].fd, 9);
    EXPECT_EQ(rows[1].count, 1u);
    EXPECT_EQ(rows[2].device, "/dev/nvidiactl");
    EXPECT_EQ(rows[2].count, 3u);
    EXPECT_EQ(rows[2].errors, 1u);
    EXPECT_EQ(rows[3].comm, "loader");
    EXPECT_EQ(rows[3].count, 1u);
    EXPECT_EQ(rows[4].comm, "worker");
    EXPECT_EQ(rows[4].count, 2u);
    EXPECT_EQ(rows[4].max_ns, 30u);
    const auto copied = copy.rows();
    ASSERT_EQ(copied.size(), 5u);
    EXPECT_EQ(copied[1].fd, 9);
    EXPECT_EQ(copied[1].count, 2u);
    EXPECT_EQ(copied[2].count, 2u);
    EXPECT_EQ(copied[2].errors, 0u);
}

// gVisor strace (google/gvisor#9846): 2 complete E/X pairs of 20.731 and 22.494 us, an orphan X of 21.883 us first
// and an orphan E last, all NV_ESC_RM_CONTROL on /dev/nvidiactl fd 3.
TEST(IoctlStats, GvisorStraceCase) {
    Report r = load("strace-gvisor-nvproxy-ex-pairs.txt");
    ASSERT_EQ(r.ioctl_stats.size(), 1u);
    const IoctlStat& s = r.ioctl_stats[0];
    EXPECT_EQ(s.device, "/dev/nvidiactl");
    EXPECT_EQ(s.cmd, 0xc020462au);
    EXPECT_EQ(s.name, "NV_ESC_RM_CONTROL");
    EXPECT_EQ(s.count, 4u);
    EXPECT_EQ(s.errors, 0u);
    EXPECT_EQ(s.unfinished, 1u);
    EXPECT_EQ(s.latency_unknown, 1u);
    EXPECT_EQ(s.total_ns, 20'731u + 22'494u + 21'883u);
    EXPECT_EQ(s.min_ns, 20'731u);
    EXPECT_EQ(s.max_ns, 22'494u);
    EXPECT_EQ(s.mean_ns, (20'731u + 22'494u + 21'883u) / 3);
    EXPECT_EQ(ioctl_stats_table(r.ioctl_stats, false)[2],
              "        4       0        65.108        21.702        22.494  nvidiactl NV_ESC_RM_CONTROL  1 without "
              "latency (1 unfinished)");
}

// strace of libva (intel/libva#575): (fd, nr) (14,0xce), (14,0x2b), (5,0x4a), (5,0x2a)x3, (5,0x4e)x2, (5,0x2b), all
// = 0, no -y (device unknown: grouped by fd), no -T and no times: every latency unknown.
TEST(IoctlStats, LibvaStraceCaseHasNoLatency) {
    Report r = load("strace-nvidia-ioctl-libva.txt");
    std::map<std::pair<int, unsigned>, std::uint64_t> counts;
    for (const IoctlStat& s : r.ioctl_stats) {
        ASSERT_FALSE(s.device);
        ASSERT_TRUE(s.fd);
        counts[{*s.fd, decode_ioc(s.cmd).nr}] = s.count;
        EXPECT_EQ(s.errors, 0u);
        EXPECT_EQ(s.latency_unknown, s.count);
        EXPECT_FALSE(s.total_ns);
    }
    const std::map<std::pair<int, unsigned>, std::uint64_t> want{{{14, 0xce}, 1}, {{14, 0x2b}, 1}, {{5, 0x4a}, 1},
                                                                 {{5, 0x2a}, 3},  {{5, 0x4e}, 2},  {{5, 0x2b}, 1}};
    EXPECT_EQ(counts, want);
}

// The k8s blog strace: ioctl(-1, _IOC(0, 0, 0x2, 0x3000), 0) = -1 EBADF; an nvidiactl ioctl on fd 3 = 0.
TEST(IoctlStats, UvmEpermStraceCaseCountsEbadf) {
    Report r = load("strace-uvm-eperm-ioc0-stdout-interleave.txt");
    ASSERT_EQ(r.ioctl_stats.size(), 2u);
    EXPECT_EQ(r.ioctl_stats[0].fd, -1);
    EXPECT_EQ(r.ioctl_stats[0].errors, 1u);
    EXPECT_EQ(r.ioctl_stats[0].errors_by_name, (std::map<std::string, std::uint64_t>{{"EBADF", 1}}));
    EXPECT_EQ(r.ioctl_stats[1].fd, 3);
    EXPECT_EQ(decode_ioc(r.ioctl_stats[1].cmd).nr, 0x29u);
    EXPECT_EQ(r.ioctl_stats[1].errors, 0u);
}

// report.json keeps the section; a report written before it gets it computed from its ioctls when read.
TEST(IoctlStats, RoundTripThroughReportJson) {
    Report r = load("strace-gvisor-nvproxy-ex-pairs.txt");
    std::ostringstream text;
    write_json(r, text);
    const fs::path file = fs::temp_directory_path() / ("nvtrace-ioctl-stats-" + std::to_string(::getpid()) + ".json");
    std::ofstream(file) << text.str();
    auto back = read_report_file(file.string());
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(to_json(*back)["ioctl_stats"], to_json(r)["ioctl_stats"]);

    nlohmann::json old = nlohmann::json::parse(text.str());
    old.erase("ioctl_stats");
    old["ioctls"][0]["ret"] = -22;  // the stats are the ioctls', not a copy of what was written
    std::ofstream(file) << old.dump();
    auto computed = read_report_file(file.string());
    ASSERT_TRUE(computed) << computed.error().message;
    ASSERT_EQ(computed->ioctl_stats.size(), 1u);
    EXPECT_EQ(computed->ioctl_stats[0].errors_by_name, (std::map<std::string, std::uint64_t>{{"EINVAL", 1}}));
    auto dom = report_from_json(old);
    ASSERT_TRUE(dom);
    EXPECT_EQ(to_json(*dom)["ioctl_stats"], to_json(*computed)["ioctl_stats"]);

    old["ioctl_stats"] = nlohmann::json::array({{{"cmd", 1}, {"count", 1}, {"errors_by_name", {{"E", -1}}}}});
    std::ofstream(file) << old.dump();
    auto bad = read_report_file(file.string());
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message.find("ioctl_stats[0].errors_by_name.E: expected an unsigned integer"),
              std::string::npos)
        << bad.error().message;
    fs::remove(file);
}

TEST(IoctlCsv, OneRowPerIoctlWithRfc4180Quoting) {
    Report r;
    IoctlRecord a = io(7, "my,\"tool\"", "/dev/nvidiactl", 0xc030462b, 0, 250);
    a.status = "NV_ERR_INVALID_ARGUMENT";
    a.arg = 0x7ffd0000;
    a.hclass = 0x41;
    IoctlRecord b = io(8, "line\nbreak", "/dev/pts/0", 0x541b, -25, 40);
    b.name = "FIONREAD";
    r.ioctls = {a, b};
    EXPECT_EQ(default_csv_table(r), CsvTable::ioctls);  // no calls: never a bare header
    std::ostringstream out;
    write_csv(r, CsvTable::ioctls, out);
    EXPECT_EQ(out.str(),
              "enter_ns,exit_ns,duration_ns,pid,comm,fd,device,fd_path_unknown,request,cmd,arg,ret,errno,errno_text,"
              "status,error,hclass,ctrl,ctrl_class,phase,call\n"
              "1000,1250,250,7,\"my,\"\"tool\"\"\",5,/dev/nvidiactl,,NV_ESC_RM_ALLOC,0xc030462b,0x7ffd0000,0,,,"
              "NV_ERR_INVALID_ARGUMENT,NV_ERR_INVALID_ARGUMENT,0x41,,,,\n"
              // A line break in a cell is written as \x0a (docs/export.md "csv"): one row per line.
              "1000,1040,40,8,line\\x0abreak,5,/dev/pts/0,,FIONREAD,0x541b,,-25,ENOTTY,,,ENOTTY,,,,,\n");

    r.ioctl_stats = ioctl_stats(r.ioctls);
    std::ostringstream stats;
    write_csv(r, CsvTable::ioctl_stats, stats);
    // cmd in hex, as in the ioctls table above (it was decimal: the two tables did not join on it).
    EXPECT_EQ(stats.str(),
              "device,fd,cmd,name,pid,comm,count,errors,errors_by_name,unfinished,latency_unknown,total_ns,mean_ns,"
              "min_ns,max_ns\n"
              "/dev/nvidiactl,,0xc030462b,NV_ESC_RM_ALLOC,,,1,1,NV_ERR_INVALID_ARGUMENT=1,0,0,250,250,250,250\n"
              "/dev/pts/0,,0x541b,FIONREAD,,,1,1,ENOTTY=1,0,0,40,40,40,40\n");

    r.calls.push_back(Call{});
    EXPECT_EQ(default_csv_table(r), CsvTable::calls);
    EXPECT_EQ(parse_csv_table("ioctl-stats"), CsvTable::ioctl_stats);
    EXPECT_FALSE(parse_csv_table("ioctl"));
}
