// open_input (include/nvtrace/input.hpp): every kind of input, read-once inputs (FIFO, socket) and the errors.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "../../../analyze/json_values.hpp"
#include "nvtrace/input.hpp"
#include "nvtrace/report_io.hpp"

using namespace nvtrace;
namespace fs = std::filesystem;

namespace {

const std::string kData = NVTRACE_TEST_DATA;
const std::string kCapture = kData + "/capture_dir/fionread20";
const std::string kFgraph = kData + "/cases/fgraph-retval-merged-format.txt";

std::string slurp(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

struct TempDir {
    fs::path path;
    explicit TempDir(const std::string& name)
        : path(fs::temp_directory_path() / ("nvtrace-input-" + name + "-" + std::to_string(::getpid()))) {
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~TempDir() { fs::remove_all(path); }
    std::string operator/(const std::string& n) const { return (path / n).string(); }
};

void write_all(int fd, const std::string& bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
        ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n <= 0) return;
        done += static_cast<std::size_t>(n);
    }
}

// A FIFO with a writer thread that gives it `bytes` once, as `cat FILE > FIFO &` does.
struct Fifo {
    std::string path;
    std::thread writer;
    Fifo(const std::string& p, std::string bytes) : path(p) {
        EXPECT_EQ(::mkfifo(p.c_str(), 0600), 0);
        writer = std::thread([p, b = std::move(bytes)] {
            int fd = ::open(p.c_str(), O_WRONLY | O_CLOEXEC);
            if (fd < 0) return;
            write_all(fd, b);
            ::close(fd);
        });
    }
    ~Fifo() { writer.join(); }
};

// A named AF_UNIX stream socket that gives `bytes` to each of `connections` clients, then closes.
struct SocketServer {
    int listen_fd = -1;
    std::thread server;
    SocketServer(const std::string& path, std::string bytes, int connections) {
        listen_fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
        EXPECT_EQ(::bind(listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << std::strerror(errno);
        EXPECT_EQ(::listen(listen_fd, 4), 0);
        server = std::thread([this, b = std::move(bytes), connections] {
            for (int i = 0; i < connections; ++i) {
                int c = ::accept(listen_fd, nullptr, nullptr);
                if (c < 0) return;
                write_all(c, b);
                ::close(c);
            }
        });
    }
    ~SocketServer() {
        server.join();
        ::close(listen_fd);
    }
};

}  // namespace

TEST(Input, CaptureDirectoryWithRawPagesIsACaptureDir) {
    auto in = open_input(kCapture);
    ASSERT_TRUE(in) << in.error().message;
    EXPECT_EQ(in->kind, InputKind::capture_dir);
    EXPECT_TRUE(in->has_report_json);
    EXPECT_FALSE(in->read_once);
    EXPECT_EQ(in->name, kCapture);
}

TEST(Input, CaptureDirectoryBeforeTheRawFormatHoldsItsReport) {
    TempDir d("old");
    fs::create_directories(d / "old");
    fs::copy_file(kCapture + "/report.json", d / "old/report.json");
    std::ofstream(d / "old/meta.json") << R"({"tracer_mode": "events"})";  // no "capture_format"
    auto in = open_input(d / "old");
    ASSERT_TRUE(in) << in.error().message;
    EXPECT_EQ(in->kind, InputKind::capture_dir_saved);
    // A report.json alone (a saved report copied into a folder) is what check, diff and export read.
    fs::create_directories(d / "copied");
    fs::copy_file(kCapture + "/report.json", d / "copied/report.json");
    auto copied = open_input(d / "copied");
    ASSERT_TRUE(copied) << copied.error().message;
    EXPECT_EQ(copied->kind, InputKind::capture_dir_saved);
    auto r = load_report_input(d / "copied");
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->ioctls.size(), 20u);
}

TEST(Input, DirectoriesThatAreNotCapturesSayWhy) {
    TempDir d("dirs");
    fs::create_directories(d / "plain");
    fs::create_directories(d / "killed/raw/instance");  // a run killed before it wrote meta.json
    fs::create_directories(d / "bad");
    std::ofstream(d / "bad/meta.json") << R"({"capture_format":1,)";
    struct {
        std::string dir, says;
    } cases[] = {
        {d / "plain", d / "plain" + ": not a capture directory (no meta.json; `nvtrace run` writes one)"},
        {d / "killed", d / "killed" + ": no meta.json: an unfinished capture"},
        {d / "bad", d / "bad/meta.json" + ": not valid JSON (damaged or unfinished capture)"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.dir);
        auto in = open_input(c.dir);
        ASSERT_FALSE(in);
        EXPECT_EQ(in.error().code, ExitCode::usage);
        EXPECT_EQ(in.error().message.rfind(c.says, 0), 0u) << in.error().message;
        // check, diff and export say the same (they said "no report.json" for all three).
        auto r = load_report_input(c.dir);
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error().message, in.error().message);
    }
    auto kmsg = open_input(d / "plain", TraceFormat::kernel_log);
    ASSERT_FALSE(kmsg);
    EXPECT_NE(kmsg.error().message.find("is a directory (expected a kernel log file"), std::string::npos);
}

TEST(Input, SavedReportFileIsASavedReport) {
    auto in = open_input(kCapture + "/report.json");
    ASSERT_TRUE(in) << in.error().message;
    EXPECT_EQ(in->kind, InputKind::saved_report);
    EXPECT_TRUE(in->reopenable());
    EXPECT_FALSE(in->read_once);
    // --format skips the saved-report test: a '{' file forced to a trace format is text for that reader.
    auto forced = open_input(kCapture + "/report.json", TraceFormat::fgraph_text);
    ASSERT_TRUE(forced);
    EXPECT_EQ(forced->kind, InputKind::text);
    EXPECT_EQ(forced->format, TraceFormat::fgraph_text);
}

TEST(Input, TextFormatsAreTheDetectedOnes) {
    struct {
        const char* file;
        TraceFormat want;
    } cases[] = {
        {"fgraph-retval-merged-format.txt", TraceFormat::fgraph_text},
        {"function-text-stacktrace-rpi.txt", TraceFormat::function_text},
        {"trace-cmd-report-fgraph-v6.txt", TraceFormat::trace_cmd_report},
        {"strace-nvidia-ioctl-libva.txt", TraceFormat::strace},
        {"nvrm-xid79-fallen-off-bus-continuation.log", TraceFormat::kernel_log},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.file);
        auto in = open_input(kData + "/cases/" + c.file);
        ASSERT_TRUE(in) << in.error().message;
        EXPECT_EQ(in->kind, InputKind::text);
        EXPECT_EQ(in->format, c.want);
        EXPECT_EQ(in->bytes(), slurp(kData + "/cases/" + c.file));
    }
    // No format fits: text without a format, left to import_input (a kernel log, or what it expected).
    auto none = open_input(kData + "/cases/gdrcopy-sanity-copylat-fail.txt");
    ASSERT_TRUE(none);
    EXPECT_EQ(none->kind, InputKind::text);
    auto imported = import_input(*none);
    ASSERT_TRUE(imported) << imported.error().message;
    EXPECT_EQ(imported->format, TraceFormat::kernel_log);
}

TEST(Input, FifoSavedReportIsDetected) {
    TempDir d("fifo");
    const std::string file = kCapture + "/report.json";
    Fifo fifo(d / "r.fifo", slurp(file));
    auto in = open_input(fifo.path);
    ASSERT_TRUE(in) << in.error().message;
    EXPECT_EQ(in->kind, InputKind::saved_report);
    EXPECT_TRUE(in->read_once);
    EXPECT_FALSE(in->reopenable());
    EXPECT_EQ(in->bytes(), slurp(file));
    auto from_fifo = load_report(std::move(*in));
    auto from_file = load_report_input(file);
    ASSERT_TRUE(from_fifo) << from_fifo.error().message;
    ASSERT_TRUE(from_file);
    EXPECT_EQ(to_json(*from_fifo), to_json(*from_file));
}

TEST(Input, FifoTraceIsReadOnceAndSpooledWhenAsked) {
    TempDir d("spool");
    Fifo fifo(d / "t.fifo", slurp(kFgraph));
    auto in = open_input(fifo.path, OpenOptions{std::nullopt, d.path.string(), false});
    ASSERT_TRUE(in) << in.error().message;
    EXPECT_EQ(in->kind, InputKind::text);
    EXPECT_EQ(in->format, TraceFormat::fgraph_text);
    EXPECT_TRUE(in->read_once);
    EXPECT_TRUE(in->mapped());  // the unlinked copy in spool_dir, mapped
    EXPECT_EQ(in->bytes(), slurp(kFgraph));
    // The copy is unlinked: nothing but the FIFO is left in the directory.
    std::size_t entries = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(d.path))
        ++entries;
    EXPECT_EQ(entries, 1u);
}

TEST(Input, SocketIsReadOnceLikeAPipe) {
    TempDir d("sock");
    const std::string sock = d / "trace.sock";
    SocketServer server(sock, slurp(kFgraph), 2);
    EXPECT_TRUE(is_read_once(sock));
    auto in = open_input(sock);
    ASSERT_TRUE(in) << in.error().message;
    EXPECT_EQ(in->kind, InputKind::text);
    EXPECT_EQ(in->format, TraceFormat::fgraph_text);
    EXPECT_TRUE(in->read_once);
    EXPECT_EQ(in->bytes(), slurp(kFgraph));
    // check, diff and export load it as they load the file (they said "cannot open" for a socket).
    auto from_socket = load_report_input(sock);
    auto from_file = load_report_input(kFgraph);
    ASSERT_TRUE(from_socket) << from_socket.error().message;
    ASSERT_TRUE(from_file);
    auto a = to_json(*from_socket), b = to_json(*from_file);
    a.erase("source");
    b.erase("source");
    a["completeness"].erase("diagnostics");  // their first examples name the file
    b["completeness"].erase("diagnostics");
    EXPECT_EQ(a, b);
}

TEST(Input, SocketHeldByThisProcessIsReadThroughItsDescriptorName) {
    // `nvtrace report /dev/stdin` with a socket on standard input: open(2) of /proc/self/fd/N fails (ENXIO).
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    const std::string text = slurp(kFgraph);
    std::thread writer([&] {
        write_all(sv[1], text);
        ::close(sv[1]);
    });
    auto in = open_input("/proc/self/fd/" + std::to_string(sv[0]));
    writer.join();
    ::close(sv[0]);
    ASSERT_TRUE(in) << in.error().message;
    EXPECT_TRUE(in->read_once);
    EXPECT_EQ(in->format, TraceFormat::fgraph_text);
    EXPECT_EQ(in->bytes(), text);
}

TEST(Input, MovedInputKeepsItsBytes) {
    // A short input read into memory lives inside the std::string (small-string buffer): a move must follow it.
    TempDir d("move");
    Fifo fifo(d / "s.fifo", "NVRM: Xid 79\n");
    auto in = open_input(fifo.path, TraceFormat::kernel_log);
    ASSERT_TRUE(in) << in.error().message;
    Input moved = std::move(*in);
    Input again;
    again = std::move(moved);
    EXPECT_EQ(again.bytes(), "NVRM: Xid 79\n");
    EXPECT_TRUE(in->bytes().empty());
}

TEST(Input, DevicesEmptyAndMissingInputsAreErrors) {
    auto zero = open_input("/dev/zero");
    ASSERT_FALSE(zero);
    EXPECT_EQ(zero.error().code, ExitCode::usage);
    EXPECT_EQ(zero.error().message, "/dev/zero: a device, not a trace file (give a file, a pipe or - for stdin)");
    auto klog = open_input("/dev/zero", TraceFormat::kernel_log);
    ASSERT_FALSE(klog);
    EXPECT_NE(klog.error().message.find("a device, not a kernel log file"), std::string::npos);

    TempDir d("empty");
    std::ofstream(d / "empty.txt").close();
    auto empty = open_input(d / "empty.txt");
    ASSERT_FALSE(empty);
    EXPECT_EQ(empty.error().message, d / "empty.txt" + ": empty file");
    auto allowed = open_input(d / "empty.txt", OpenOptions{TraceFormat::kernel_log, "", true});
    ASSERT_TRUE(allowed);
    EXPECT_TRUE(allowed->bytes().empty());

    auto missing = open_input(d / "missing.txt");
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().message.rfind(d / "missing.txt" + ": cannot open: ", 0), 0u);

    // A size-0 file that is not empty (procfs, tracefs `trace`) is read, not refused.
    auto proc = open_input("/proc/self/status");
    ASSERT_TRUE(proc) << proc.error().message;
    EXPECT_FALSE(proc->bytes().empty());
}

// A file truncated by another program while nvtrace read it (`nvtrace report t.txt` while `cat trace > t.txt` ran
// again) killed nvtrace with "Bus error" (exit 135, no word of why): the mapped pages past the new end raise
// SIGBUS. Now that is one line naming the file and the offset, and exit 2 (an input error).
TEST(InputDeathTest, AMappedFileTruncatedWhileReadIsAnInputErrorNotABusError) {
    TempDir d("shrank");
    const std::string path = d / "t.txt";
    std::ofstream(path) << std::string(1 << 20, 'x');
    EXPECT_EXIT(
        {
            auto in = open_input(path);
            if (!in || !in->mapped()) std::_Exit(7);
            if (::truncate(path.c_str(), 0) != 0) std::_Exit(8);
            volatile char c = in->bytes()[(1 << 20) - 1];  // the last page: gone
            (void)c;
            std::_Exit(9);
        },
        ::testing::ExitedWithCode(2),
        "nvtrace: .*t\\.txt: cannot be read past byte 1048575: the file shrank while it was read");
    // A SIGBUS that is not an access to a mapped input keeps the default action.
    std::ofstream(path) << std::string(1 << 20, 'x');
    EXPECT_EXIT(
        {
            auto in = open_input(path);
            if (!in || !in->mapped()) std::_Exit(7);
            ::raise(SIGBUS);
            std::_Exit(9);
        },
        ::testing::KilledBySignal(SIGBUS), "");
}
