// The raw capture directory reader (include/nvtrace/capture_dir.hpp). tests/data/capture_dir/fionread20 is a
// real capture from the CI host (6.18 kernel): `sudo nvtrace run --no-preload --out DIR -- fionread_loop 20
// "NVRM: Xid (PCI:0000:01:00): 79, pid=1, GPU has fallen off the bus."`; its report.json is what the live
// run wrote. Damaged copies of it are made in a temporary directory.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <event-parse.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../../../analyze/json_values.hpp"
#include "../../../analyze/raw_event_decoder.hpp"
#include "ioctl_formats.hpp"
#include "nvtrace/capture_dir.hpp"
#include "nvtrace/report.hpp"

namespace fs = std::filesystem;
using namespace nvtrace;

namespace {

const fs::path kCapture = fs::path(NVTRACE_TEST_DATA) / "capture_dir" / "fionread20";

// A private copy of the committed capture, removed at the end of the test.
struct Copy {
    fs::path dir;
    Copy() {
        char tpl[] = "/tmp/nvtrace-capdir-XXXXXX";
        dir = fs::path(::mkdtemp(tpl)) / "cap";
        fs::copy(kCapture, dir, fs::copy_options::recursive);
    }
    ~Copy() { fs::remove_all(dir.parent_path()); }
    void write(const std::string& rel, const std::string& bytes) const {
        std::ofstream(dir / rel, std::ios::binary | std::ios::trunc) << bytes;
    }
    std::string read(const std::string& rel) const {
        std::ifstream in(dir / rel, std::ios::binary);
        std::ostringstream ss;
        ss << in.rdbuf();
        return ss.str();
    }
};

std::string error_of(const fs::path& dir) {
    auto r = read_capture_dir(dir.string());
    return r ? std::string("<no error>") : r.error().message;
}

}  // namespace

TEST(CaptureDir, ReanalysisOfTheCommittedCaptureEqualsTheReportItsRunWrote) {
    auto data = read_capture_dir(kCapture.string());
    ASSERT_TRUE(data) << data.error().message;
    Report r = build_report(data->stream);
    r.environment = data->meta.environment;
    nlohmann::json got = to_json(r);
    std::ifstream in(kCapture / "report.json");
    nlohmann::json live = nlohmann::json::parse(in);
    // The data sections (the report gains other keys over time; the live tier compares whole reports). An ioctl
    // gains fields too (arg, duration_ns): compared on the keys the run wrote.
    for (auto& io : got["ioctls"])
        for (auto it = io.begin(); it != io.end();)
            it = live["ioctls"].empty() || live["ioctls"][0].contains(it.key()) ? std::next(it) : io.erase(it);
    for (const char* k : {"ioctls", "kernel_log", "markers", "completeness", "calls", "graph", "environment"})
        EXPECT_EQ(got[k], live[k]) << k;
    EXPECT_EQ(data->stream.kmsg.size(), 1u);
    EXPECT_EQ(data->undecodable_records, 0u);
}

TEST(CaptureDir, TruncatedPageFileNamesTheFileAndTheLastPageOffset) {
    Copy c;
    std::string page = c.read("raw/instance/cpu0");
    ASSERT_EQ(page.size(), 8192u);
    c.write("raw/instance/cpu0", page.substr(0, 5000));
    std::string e = error_of(c.dir);
    EXPECT_NE(e.find("raw/instance/cpu0"), std::string::npos) << e;
    EXPECT_NE(e.find("truncated"), std::string::npos) << e;
    EXPECT_NE(e.find("offset 4096"), std::string::npos) << e;
}

// raw/instance/cpu0 cut to 0 bytes (or to one whole page) and got "ioctls: 0, complete: yes":
// a page file cut at a page boundary, or a meta.json edited to read the pages differently, lost data quietly.
TEST(CaptureDir, PageFileCutAtAPageBoundaryIsAnErrorNotAQuietReport) {
    for (std::size_t keep : {std::size_t{0}, std::size_t{4096}}) {
        Copy c;
        c.write("raw/instance/cpu0", c.read("raw/instance/cpu0").substr(0, keep));
        std::string e = error_of(c.dir);
        EXPECT_NE(e.find("raw/instance"), std::string::npos) << e;
        EXPECT_NE(e.find("meta.json says 2 with 42"), std::string::npos) << keep << ": " << e;
    }
    Copy c;
    nlohmann::json j = nlohmann::json::parse(c.read("meta.json"));
    j["raw"]["buffers"] = nlohmann::json::array();
    c.write("meta.json", j.dump());
    std::string e = error_of(c.dir);
    EXPECT_NE(e.find("lists no buffer"), std::string::npos) << e;
}

// The diagnostics of a capture directory whose read succeeded, or the error.
std::string damaged_page_example_of(const fs::path& dir, std::size_t* events = nullptr) {
    auto r = read_capture_dir(dir.string());
    if (!r) return "<error> " + r.error().message;
    if (events) *events = r->stream.events.size();
    for (const auto& d : r->stream.diagnostics)
        if (d.name == "damaged_page" && d.severity == "data_loss") return d.first_example;
    return "<no damaged_page diagnostic>";
}

// The same for the committed capture with its cpu0 file replaced by `input` (a fuzzer's page) and zeroes.
std::string damaged_first_page_example(const unsigned char* input, std::size_t size) {
    Copy c;
    std::string pages(8192, '\0');
    std::memcpy(pages.data(), input, size);
    c.write("raw/instance/cpu0", pages);
    return damaged_page_example_of(c.dir);
}

// fuzz_capture_page found a page on which libtraceevent's kbuffer_next_event never returned (the fuzzer's input,
// made into the first of the two pages). First read as a type_len 0 event of length 0; with the types of
// include/linux/ring_buffer.h right it is a padding of length -4 (see PaddingLengthPointingBack... below). The
// test keeps its name: what it protects against is the same.
TEST(CaptureDir, EventLengthOfZeroIsADamagedPageNotAHangInKbuffer) {
    const unsigned char input[] = {0x5b, 0x38, 0x37, 0x5b, 0x38, 0x3b, 0x20, 0x64, 0x66, 0x01, 0x00, 0x00,
                                   0x01, 0xa6, 0xa6, 0xa6, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83,
                                   0x83, 0x2d, 0x00, 0x00, 0x38, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83,
                                   0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0xa6, 0xf7, 0xdd,
                                   0xdd, 0xfe, 0xff, 0xff, 0xfc, 0xff, 0xff, 0xff, 0x00, 0x00, 0xdd};
    std::string e = damaged_first_page_example(input, sizeof input);
    EXPECT_NE(e.find("raw/instance/cpu0: page at offset 0"), std::string::npos) << e;
    EXPECT_NE(e.find("offset 52: a padding length of -4 bytes points back into the page"), std::string::npos) << e;
}

// fuzz_capture_page found a second kbuffer hang (first described as a discarded event of length 0xffff past a time
// extend: the walk had the type numbers wrong, see PaddingLengthPointingBack... below): a padding of length -4.
TEST(CaptureDir, DiscardedEventWithImpossibleLengthIsADamagedPageNotAHangInKbuffer) {
    const unsigned char input[] = {0x20, 0x40, 0x00, 0x00, 0x39, 0x4f, 0x00, 0x34, 0x7e, 0x00, 0x00, 0x00, 0x00, 0x00,
                                   0x39, 0x34, 0x5d, 0xff, 0xff, 0xff, 0xfc, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                   0xff, 0xff, 0x00, 0x00, 0x1e, 0x8d, 0x5e, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41,
                                   0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41,
                                   0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41,
                                   0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41,
                                   0x40, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x1b, 0x1b};
    std::string e = damaged_first_page_example(input, sizeof input);
    EXPECT_NE(e.find("raw/instance/cpu0: page at offset 0"), std::string::npos) << e;
    EXPECT_NE(e.find("offset 20: a padding length of -4 bytes points back into the page"), std::string::npos) << e;
}

// The third kbuffer hang fuzz_capture_page found (CI, 2026-11-29), and what the three had in common: a padding
// event (type_len 29) whose length word is -4 sends kbuffer back to the same padding forever. The header walk had
// the types of include/linux/ring_buffer.h wrong (31 taken for padding, 29 for a time event), so it passed this
// page (a time stamp, type 31, then that padding) and refused the first two only by luck, with wrong messages.
TEST(CaptureDir, PaddingLengthPointingBackIsADamagedPageNotAHangInKbuffer) {
    const unsigned char input[] = {
        0x5b, 0xfe, 0xff, 0x00, 0x00, 0x0a, 0x00, 0x94, 0x5b, 0x09, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0xec, 0xec,
        0xec, 0xec, 0xec, 0xec, 0xec, 0xec, 0xec, 0xec, 0xec, 0xec, 0xec, 0xec, 0xec, 0xec, 0xec, 0xec, 0xec, 0xec,
        0xec, 0xec, 0xec, 0xec, 0xec, 0xec, 0xec, 0xec, 0xec, 0xec, 0xec, 0xec, 0xec, 0xec, 0xec, 0xec, 0xec, 0xec,
        0xec, 0xec, 0x00, 0x0a, 0x00, 0x94, 0x5b, 0x09, 0x00, 0x00, 0x2d, 0x7e, 0x00, 0x00, 0x1f, 0x00, 0x00, 0x00,
        0xbc, 0xec, 0xec, 0xec, 0x3d, 0xec, 0xd3, 0x13, 0xfc, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x94, 0xd3};
    std::string e = damaged_first_page_example(input, sizeof input);
    EXPECT_NE(e.find("raw/instance/cpu0: page at offset 0"), std::string::npos) << e;
    EXPECT_NE(e.find("a padding length of -4 bytes points back into the page"), std::string::npos) << e;
}

// A live capture (6.18 kernel, 256 MB buffer, 1,000,000 ioctls) wrote two pages whose data ended in zeroes (a
// type_len 0 event with length 0 where events should be): its report said complete with 84 records missing,
// and `nvtrace report DIR` refused the whole directory. The damaged page is now data lost, named, and every
// other page is still read.
TEST(CaptureDir, PageEndingInZeroesIsDataLossAndTheOtherPagesAreKept) {
    auto whole = read_capture_dir(kCapture.string());
    ASSERT_TRUE(whole) << whole.error().message;
    Copy c;
    std::string page = c.read("raw/instance/cpu0");
    ASSERT_EQ(page.size(), 8192u);
    // Zero the second half of the first page's data: the walk meets a type_len 0 event of length 0 there.
    std::uint64_t commit = 0;
    for (int i = 0; i < 8; ++i)
        commit |= std::uint64_t{static_cast<unsigned char>(page[8 + static_cast<std::size_t>(i)])} << (8 * i);
    std::size_t len = static_cast<std::size_t>(commit & ((1u << 27) - 1));
    ASSERT_GT(len, 64u);
    std::size_t cut = 16 + len / 2;
    std::fill(page.begin() + static_cast<std::ptrdiff_t>(cut), page.begin() + static_cast<std::ptrdiff_t>(16 + len),
              '\0');
    c.write("raw/instance/cpu0", page);
    std::size_t events = 0;
    std::string e = damaged_page_example_of(c.dir, &events);
    EXPECT_NE(e.find("raw/instance/cpu0: page at offset 0"), std::string::npos) << e;
    EXPECT_NE(e.find("the events of this page are lost"), std::string::npos) << e;
    // Fewer events than the whole capture, but not none: the page's first half and the other CPU's pages.
    EXPECT_LT(events, whole->stream.events.size());
    EXPECT_GT(events, 0u);
    // The whole page is lost, not only what follows the zeroes (the message says so: it was found
    // "the rest of the page" while the page's first half was gone too): as many events as with its data zeroed.
    {
        Copy z;
        std::string zeroed = z.read("raw/instance/cpu0");
        std::fill(zeroed.begin() + 16, zeroed.begin() + static_cast<std::ptrdiff_t>(16 + len), '\0');
        z.write("raw/instance/cpu0", zeroed);
        std::size_t events_zeroed = 0;
        std::string ez = damaged_page_example_of(z.dir, &events_zeroed);
        EXPECT_NE(ez.find("page at offset 0"), std::string::npos) << ez;
        EXPECT_EQ(events, events_zeroed);
    }
    auto r = read_capture_dir(c.dir.string());
    ASSERT_TRUE(r);
    Report rep = build_report(r->stream);
    EXPECT_FALSE(rep.completeness.complete);
    bool named = false;
    for (const auto& why : rep.completeness.reasons)
        named = named || why.find("damaged_page") != std::string::npos;
    EXPECT_TRUE(named);
}

// A drain that could not read or write some pages records it in meta.json raw.write_error; the report of the
// directory said complete all the same. Those pages' events are lost: a data_loss diagnostic now says so.
TEST(CaptureDir, DrainWriteErrorInMetaIsDataLoss) {
    Copy c;
    nlohmann::json j = nlohmann::json::parse(c.read("meta.json"));
    j["raw"]["write_error"] = "raw/instance/cpu1: No space left on device";
    c.write("meta.json", j.dump());
    auto r = read_capture_dir(c.dir.string());
    ASSERT_TRUE(r) << r.error().message;
    Report rep = build_report(r->stream);
    EXPECT_FALSE(rep.completeness.complete);
    bool found = false;
    for (const auto& d : rep.completeness.diagnostics)
        found = found || (d.name == "pages_not_saved" && d.severity == "data_loss" &&
                          d.first_example == "raw/instance/cpu1: No space left on device");
    EXPECT_TRUE(found);
}

// A program opened /dev/null, /dev/zero, /dev/tty0 and /etc/hostname one after the other on the
// same fd and made ioctls on each: all of them were named /etc/hostname, the last path the poll saw. An fd
// seen naming several files now names none (which one each ioctl used is not known), with a diagnostic.
TEST(CaptureDir, FdReusedForAnotherFileNamesNoPathInsteadOfTheLastOne) {
    auto ioctl_paths = [](const fs::path& dir, std::string* example) {
        auto r = read_capture_dir(dir.string());
        EXPECT_TRUE(r) << r.error().message;
        std::set<std::string> paths;
        if (!r) return paths;
        Report rep = build_report(r->stream);
        for (const auto& io : rep.ioctls)
            if (io.fd == 4) paths.insert(io.fd_path.value_or("<none>"));
        for (const auto& d : rep.completeness.diagnostics)
            if (d.name == "fd_reused" && d.severity == "info") *example = d.first_example;
        EXPECT_TRUE(rep.completeness.complete);
        return paths;
    };
    Copy c;
    nlohmann::json fds = nlohmann::json::parse(c.read("fd_paths.json"));
    nlohmann::json one = fds;
    one.push_back({13948, 4, "/dev/null"});
    c.write("fd_paths.json", one.dump());
    std::string example;
    EXPECT_EQ(ioctl_paths(c.dir, &example), std::set<std::string>{"/dev/null"});
    EXPECT_EQ(example, "");
    fds.push_back({13948, 4, "/dev/null"});
    fds.push_back({13948, 4, "/dev/zero"});
    fds.push_back({13948, 4, "/dev/null"});
    c.write("fd_paths.json", fds.dump());
    EXPECT_EQ(ioctl_paths(c.dir, &example), std::set<std::string>{"<none>"});
    EXPECT_EQ(example, "pid 13948 fd 4: /dev/null, /dev/zero, /dev/null (ioctls on it are not named by path)");
}

TEST(CaptureDir, MissingPageFileIsAnErrorNamingIt) {
    Copy c;
    fs::remove(c.dir / "raw/instance/cpu1");
    std::string e = error_of(c.dir);
    EXPECT_NE(e.find("raw/instance/cpu1"), std::string::npos) << e;
}

TEST(CaptureDir, MissingFormatFileIsAnErrorNamingIt) {
    Copy c;
    fs::remove(c.dir / "events/syscalls/sys_enter_ioctl/format");
    std::string e = error_of(c.dir);
    EXPECT_NE(e.find("events/syscalls/sys_enter_ioctl/format"), std::string::npos) << e;
    EXPECT_NE(e.find("missing"), std::string::npos) << e;
}

TEST(CaptureDir, GarbageFormatHeaderPageAndMetaAreErrorsNamingTheFile) {
    for (const char* rel : {"events/syscalls/sys_exit_ioctl/format", "events/header_page", "meta.json", "comms.json",
                            "fd_paths.json", "buffer_stats.json"}) {
        Copy c;
        c.write(rel, std::string("\x7f\x45garbage\0\xff\n", 12));
        std::string e = error_of(c.dir);
        EXPECT_NE(e.find(rel), std::string::npos) << rel << ": " << e;
    }
}

TEST(CaptureDir, CommitLengthPastThePageIsDataLossWithTheOffset) {
    Copy c;
    std::string page = c.read("raw/instance/cpu0");
    for (int i = 8; i < 16; ++i)
        page[static_cast<std::size_t>(i)] = '\xff';  // commit word: every length bit set
    c.write("raw/instance/cpu0", page);
    std::string e = damaged_page_example_of(c.dir);
    EXPECT_NE(e.find("raw/instance/cpu0: page at offset 0"), std::string::npos) << e;
    EXPECT_NE(e.find("commit length"), std::string::npos) << e;
}

// Pages of pseudo-random bytes with a plausible commit word: never a crash; an error names the file, and a
// page that does decode to other record counts than the capture wrote is data lost (damaged_page).
TEST(CaptureDir, GarbagePagesNeverCrash) {
    std::uint32_t x = 12345;
    Copy c;
    for (int round = 0; round < 300; ++round) {
        std::string page(8192, '\0');
        for (auto& ch : page) {
            x = x * 1103515245u + 12345u;
            ch = static_cast<char>(x >> 16);
        }
        std::uint64_t commit = (x >> 8) % 4081;  // within the page, so kbuffer walks the garbage events
        for (int i = 0; i < 8; ++i)
            page[8 + static_cast<std::size_t>(i)] = static_cast<char>((commit >> (8 * i)) & 0xff);
        c.write("raw/instance/cpu0", page);
        auto r = read_capture_dir(c.dir.string());
        if (!r) {
            // The page file, or its buffer when the pages decode to other counts than the capture wrote.
            EXPECT_NE(r.error().message.find("raw/instance"), std::string::npos) << r.error().message;
        } else {
            build_report(r->stream);  // whatever decoded must be analysable too
        }
    }
}

TEST(CaptureDir, DirectoryWithoutCaptureFormatIsNotARawCapture) {
    Copy c;
    nlohmann::json m = nlohmann::json::parse(c.read("meta.json"));
    m.erase("capture_format");
    c.write("meta.json", m.dump());
    EXPECT_FALSE(is_raw_capture_dir(c.dir.string()));
    std::string e = error_of(c.dir);
    EXPECT_NE(e.find("capture_format"), std::string::npos) << e;
    EXPECT_TRUE(is_raw_capture_dir(kCapture.string()));
}

// Sources of events for merge_segments, whose order must be exactly the documented one: a stable sort by ts_ns of
// the sources concatenated, whether it merges sorted sources or sorts. The events carry a unique tag in `pid`.
namespace {

std::vector<std::vector<Event>> random_sources(std::size_t k, std::size_t n, bool sorted, unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<std::vector<Event>> s(k);
    int tag = 0;
    for (auto& src : s) {
        std::uint64_t ts = rng() % 4;
        std::size_t len = rng() % (n + 1);
        for (std::size_t i = 0; i < len; ++i) {
            ts += rng() % 3;  // steps of 0 give equal times inside a source, small ranges equal times across
            Event e;
            e.ts_ns = sorted ? ts : rng() % 16;
            e.pid = tag++;
            e.cpu = static_cast<int>(&src - s.data());
            src.push_back(e);
        }
    }
    return s;
}

std::vector<std::pair<std::uint64_t, int>> keys(const std::vector<Event>& v) {
    std::vector<std::pair<std::uint64_t, int>> out;
    for (const auto& e : v)
        out.emplace_back(e.ts_ns, e.pid);
    return out;
}

std::vector<Event> reference_merge(const std::vector<std::vector<Event>>& sources) {
    std::vector<Event> all;
    for (const auto& s : sources)
        all.insert(all.end(), s.begin(), s.end());
    std::stable_sort(all.begin(), all.end(), [](const Event& a, const Event& b) { return a.ts_ns < b.ts_ns; });
    return all;
}

}  // namespace

// decode_append is decode() without the moves: the same Event, or nothing (and the same counting).
TEST(RawEventDecoder, DecodeAppendGivesTheEventsDecodeGives) {
    test::IoctlFormats formats;
    tep_handle* tep = formats.tep;
    std::vector<unsigned char> a = formats.enter_record(77, 3, 0x541b, 0x7ffd1234, 0x08 /* hardirq */);
    std::vector<unsigned char> b = formats.exit_record(78, -25);
    std::vector<unsigned char> unknown(16, 0), short_(12, 0);
    test::IoctlFormats::header(unknown, 4242, 1);
    test::IoctlFormats::header(short_, formats.enter, 1);  // shorter than arg's end: undecodable

    RawEventDecoder one(tep), two(tep);
    std::vector<Event> appended;
    std::vector<std::optional<Event>> decoded;
    for (auto* buf : {&a, &b, &unknown, &short_, &a}) {
        tep_record rec{};
        rec.ts = 1000 + buf->size();
        rec.cpu = 1;
        rec.size = static_cast<int>(buf->size());
        rec.data = buf->data();
        decoded.push_back(one.decode(&rec));
        bool added = two.decode_append(&rec, appended);
        EXPECT_EQ(added, decoded.back().has_value());
    }
    ASSERT_EQ(appended.size(), 3u);
    std::size_t j = 0;
    for (const auto& d : decoded) {
        if (!d) continue;
        const Event& x = appended[j++];
        EXPECT_EQ(x.ts_ns, d->ts_ns);
        EXPECT_EQ(x.cpu, d->cpu);
        EXPECT_EQ(x.pid, d->pid);
        EXPECT_EQ(x.irq, d->irq);
        EXPECT_EQ(x.body.index(), d->body.index());
    }
    auto* in = std::get_if<IoctlEnter>(&appended[0].body);
    ASSERT_NE(in, nullptr);
    EXPECT_EQ(in->fd, 3);
    EXPECT_EQ(in->cmd, 0x541bu);
    EXPECT_EQ(in->arg, 0x7ffd1234u);
    EXPECT_EQ(appended[0].pid, 77);
    EXPECT_TRUE(appended[0].irq);
    auto* out = std::get_if<IoctlExit>(&appended[1].body);
    ASSERT_NE(out, nullptr);
    EXPECT_EQ(out->ret, -25);
    EXPECT_FALSE(appended[1].irq);
    EXPECT_EQ(one.undecodable(), 1u);
    EXPECT_EQ(two.undecodable(), 1u);
}

// merge_segments: the stable sort's order for the sources laid end to end in one vector.
TEST(MergeSegments, GivesTheStableSortOrderForSortedAndUnsortedSegments) {
    for (bool sorted : {true, false})
        for (std::size_t k : {1u, 2u, 3u, 5u, 8u, 33u})
            for (unsigned seed = 1; seed <= 20; ++seed) {
                auto sources = random_sources(k, 30, sorted, seed);  // some sources are empty
                auto want = reference_merge(sources);
                std::vector<Event> all;
                std::vector<std::size_t> starts;
                for (const auto& s : sources) {
                    starts.push_back(all.size());
                    all.insert(all.end(), s.begin(), s.end());
                }
                merge_segments(all, starts);
                ASSERT_EQ(keys(all), keys(want)) << "sorted=" << sorted << " k=" << k << " seed=" << seed;
            }
}

TEST(MergeSegments, StartsPastTheEndOrOutOfOrderMakeEmptySegments) {
    std::vector<Event> all;
    for (int i = 0; i < 6; ++i) {
        Event e;
        e.ts_ns = std::vector<std::uint64_t>{1, 4, 9, 2, 4, 7}[static_cast<std::size_t>(i)];
        e.pid = i;
        all.push_back(e);
    }
    merge_segments(all, {0, 3, 2, 100});  // segments [0,3) and [3,6)
    std::vector<int> order;
    for (const auto& e : all)
        order.push_back(e.pid);
    EXPECT_EQ(order, (std::vector<int>{0, 3, 1, 4, 5, 2}));
    std::vector<Event> none;
    merge_segments(none, {0, 0});
    EXPECT_TRUE(none.empty());
}

namespace {

// What CaptureDirReader::stream hands out, one line per event, then the side's diagnostics; or the error.
std::string streamed_of(const fs::path& dir) {
    auto reader = CaptureDirReader::open(dir.string());
    if (!reader) return "<error> " + reader.error().message;
    std::string out;
    auto st = reader->stream([&](Event& ev) {
        out += fmt::format("{} {} {} {}", ev.ts_ns, ev.cpu, ev.pid, ev.body.index());
        if (const auto* m = std::get_if<Marker>(&ev.body)) out += " " + m->text;
        if (const auto* e = std::get_if<IoctlEnter>(&ev.body)) out += fmt::format(" {} {}", e->fd, e->cmd);
        out += "\n";
        return true;
    });
    if (!st) return "<error> " + st.error().message;
    if (!*st) return "<refused>";
    for (const auto& d : reader->side().diagnostics)
        out += fmt::format("diagnostic {} {} {} {}\n", d.name, d.severity, d.count, d.first_example);
    return out;
}

// The same from read_capture_dir.
std::string whole_of(const fs::path& dir) {
    auto r = read_capture_dir(dir.string());
    if (!r) return "<error> " + r.error().message;
    std::string out;
    for (const Event& ev : r->stream.events) {
        out += fmt::format("{} {} {} {}", ev.ts_ns, ev.cpu, ev.pid, ev.body.index());
        if (const auto* m = std::get_if<Marker>(&ev.body)) out += " " + m->text;
        if (const auto* e = std::get_if<IoctlEnter>(&ev.body)) out += fmt::format(" {} {}", e->fd, e->cmd);
        out += "\n";
    }
    for (const auto& d : r->stream.diagnostics)
        out += fmt::format("diagnostic {} {} {} {}\n", d.name, d.severity, d.count, d.first_example);
    return out;
}

}  // namespace

// `nvtrace report DIR` streams the pages (CaptureDirReader::stream) when nothing needs the whole report: the same
// events in the same order, and the same diagnostics, as read_capture_dir, on the committed capture and on copies
// with a damaged page, a drain write error, a reused fd, and page files cut short (the same error).
TEST(CaptureDirReader, StreamHandsOutReadAllsEventsAndDiagnostics) {
    {
        std::string s = streamed_of(kCapture);
        EXPECT_EQ(s, whole_of(kCapture));
        EXPECT_GT(std::count(s.begin(), s.end(), '\n'), 40);
    }
    {
        Copy c;
        std::string page = c.read("raw/instance/cpu0");
        std::fill(page.begin() + 16 + 40, page.begin() + 4096, '\0');
        c.write("raw/instance/cpu0", page);
        std::string s = streamed_of(c.dir);
        EXPECT_NE(s.find("diagnostic damaged_page data_loss 1"), std::string::npos) << s;
        EXPECT_EQ(s, whole_of(c.dir));
    }
    {
        Copy c;
        nlohmann::json j = nlohmann::json::parse(c.read("meta.json"));
        j["raw"]["write_error"] = "raw/instance/cpu1: No space left on device";
        c.write("meta.json", j.dump());
        nlohmann::json fds = nlohmann::json::parse(c.read("fd_paths.json"));
        fds.push_back({13948, 4, "/dev/null"});
        fds.push_back({13948, 4, "/dev/zero"});
        c.write("fd_paths.json", fds.dump());
        std::string s = streamed_of(c.dir);
        EXPECT_NE(s.find("diagnostic pages_not_saved"), std::string::npos) << s;
        EXPECT_NE(s.find("diagnostic fd_reused"), std::string::npos) << s;
        EXPECT_EQ(s, whole_of(c.dir));
    }
    {
        Copy c;
        c.write("raw/instance/cpu0", c.read("raw/instance/cpu0").substr(0, 4096));
        std::string s = streamed_of(c.dir);
        EXPECT_NE(s.find("<error>"), std::string::npos) << s;
        EXPECT_NE(s.find("meta.json says 2 with 42"), std::string::npos) << s;
        EXPECT_EQ(s, whole_of(c.dir));
    }
}

// Equal times in several page files come in file order (the order of the stable sort read_all gives): a copy of
// cpu0's pages as a third CPU makes every event of cpu0 tie with its twin.
TEST(CaptureDirReader, EqualTimesAcrossPageFilesComeInFileOrder) {
    Copy c;
    c.write("raw/instance/cpu2", c.read("raw/instance/cpu0"));
    nlohmann::json j = nlohmann::json::parse(c.read("meta.json"));
    for (auto& b : j["raw"]["buffers"])
        if (b["name"] == "instance") {
            b["cpus"].push_back(2);
            b.erase("pages");  // the counts the capture wrote no longer apply
            b.erase("records");
        }
    c.write("meta.json", j.dump());
    std::string s = streamed_of(c.dir);
    ASSERT_EQ(s.find("<error>"), std::string::npos) << s;
    EXPECT_EQ(s, whole_of(c.dir));
    // Every event of cpu 0 has its twin on cpu 2, and the twin never comes first.
    std::istringstream lines(s);
    std::string line;
    std::map<std::string, int> seen;  // the line without its cpu -> cpu of its first occurrence
    std::size_t twins = 0;
    while (std::getline(lines, line)) {
        std::istringstream f(line);
        std::string ts, cpu, rest;
        f >> ts >> cpu;
        std::getline(f, rest);
        if (ts == "diagnostic") continue;
        auto [it, fresh] = seen.emplace(ts + rest, std::stoi(cpu));
        if (!fresh && cpu == "2") {
            ++twins;
            EXPECT_EQ(it->second, 0) << line;
        }
        if (fresh) {
            EXPECT_NE(cpu, "2") << "a cpu 2 event before its cpu 0 twin: " << line;
        }
    }
    EXPECT_GT(twins, 10u);
}

// A capture with function_graph data (a kallsyms file) streams like any other: the same events as read_all.
TEST(CaptureDirReader, FunctionGraphCaptureIsStreamedAndASinkMayStopIt) {
    Copy c;
    c.write("kallsyms", "ffffffff81000000 t some_function\n");
    auto reader = CaptureDirReader::open(c.dir.string());
    ASSERT_TRUE(reader) << reader.error().message;
    EXPECT_TRUE(reader->has_function_graph());
    std::size_t handed = 0;
    auto st = reader->stream([&](Event&) { return ++handed, true; });
    ASSERT_TRUE(st) << st.error().message;
    EXPECT_TRUE(*st);
    auto whole = CaptureDirReader::open(c.dir.string());
    ASSERT_TRUE(whole);
    auto all = whole->read_all();
    ASSERT_TRUE(all) << all.error().message;
    EXPECT_EQ(handed, all->stream.events.size());
    EXPECT_GT(handed, 0u);

    auto again = CaptureDirReader::open(kCapture.string());
    ASSERT_TRUE(again);
    handed = 0;
    auto stopped = again->stream([&](Event&) { return ++handed < 3; });
    ASSERT_TRUE(stopped);
    EXPECT_FALSE(*stopped);
    EXPECT_EQ(handed, 3u);
}

namespace {

// The committed capture's events/header_page parsed into `tep` (the ring-buffer page layout PageDecoder needs).
bool parse_capture_header_page(tep_handle* tep) {
    std::ifstream hp(kCapture / "events" / "header_page");
    std::ostringstream hs;
    hs << hp.rdbuf();
    std::string header = hs.str();
    return tep_parse_header_page(tep, header.data(), static_cast<unsigned long>(header.size()), 8) == 0;
}

}  // namespace

// PageDecoder::observe (the live capture reads the fd syscalls' fields in its one decoding of the pages): the records
// of the observed types come with the index of their page file, exactly those of the pages decoded whole (here the
// ioctl enters, which are Events too: the two lists must match), none of a page the decoder refuses, and none once
// observing stops.
TEST(PageDecoder, ObservedRecordsAreThoseOfTheWholePagesWithTheirFileIndex) {
    test::IoctlFormats formats;
    ASSERT_TRUE(parse_capture_header_page(formats.tep));
    Copy c;
    using Key = std::tuple<std::size_t, std::uint64_t, int, std::int64_t>;  // (file, ts, pid, fd)
    auto run = [&](bool observing, std::vector<Key>& observed, std::vector<Key>& enters) {
        PageDecoder dec(formats.tep);
        if (observing)
            dec.observe({formats.enter}, [&](std::size_t source, const tep_record& rec) {
                std::int64_t fd = 0;
                std::memcpy(&fd, static_cast<const char*>(rec.data) + 16, 8);
                int pid = 0;
                std::memcpy(&pid, static_cast<const char*>(rec.data) + 4, 4);
                observed.emplace_back(source, rec.ts, pid, fd);
            });
        else
            dec.observe({}, {});
        std::vector<PageFile> files;
        for (int cpu : {0, 1})
            files.push_back(
                {"instance", cpu, (c.dir / "raw" / "instance" / fmt::format("cpu{}", cpu)).string(), 4096, 0, 0, 0});
        PageFileProblems problems;
        EXPECT_TRUE(decode_page_files_merged(
            dec, files,
            [&](Event& ev) {
                if (const auto* in = std::get_if<IoctlEnter>(&ev.body))
                    enters.emplace_back(static_cast<std::size_t>(ev.cpu), ev.ts_ns, ev.pid, in->fd);
                return true;
            },
            problems));
        std::sort(observed.begin(), observed.end());
        std::sort(enters.begin(), enters.end());
    };
    std::vector<Key> observed, enters;
    run(true, observed, enters);
    EXPECT_GE(enters.size(), 20u);  // fionread_loop 20: an enter per ioctl
    EXPECT_EQ(observed, enters);
    // Damage the page of the file holding the most enters (each file is one page): its records are neither decoded
    // nor observed.
    const auto on_cpu1 = std::count_if(enters.begin(), enters.end(), [](const Key& k) { return std::get<0>(k) == 1; });
    const int most = 2 * static_cast<std::size_t>(on_cpu1) > enters.size() ? 1 : 0;
    const std::string rel = fmt::format("raw/instance/cpu{}", most);
    std::string page = c.read(rel);
    for (int i = 8; i < 16; ++i)
        page[static_cast<std::size_t>(i)] = '\xff';  // commit word: every length bit set
    c.write(rel, page);
    std::vector<Key> observed2, enters2;
    run(true, observed2, enters2);
    EXPECT_LT(enters2.size(), enters.size());
    EXPECT_EQ(observed2, enters2);
    std::vector<Key> none, enters3;
    run(false, none, enters3);
    EXPECT_TRUE(none.empty());
    EXPECT_EQ(enters3, enters2);
}

// PageDecoder::Appends::kMarkersAndFunctions (the live capture's own pass over its pages, before the report decodes
// them again): the same pages give the same events but the ioctls, whose pids come in pids() instead; the records,
// types seen and undecodable records are counted as when every event is appended.
TEST(PageDecoder, MarkersAndFunctionsPassLeavesOutTheIoctlsButKeepsTheirPidsAndCounts) {
    test::IoctlFormats formats;
    ASSERT_TRUE(parse_capture_header_page(formats.tep));
    for (const auto& ev :
         std::filesystem::directory_iterator(kCapture / "events" / "ftrace")) {  // the markers' formats
        std::ifstream in(ev.path() / "format");
        std::ostringstream ss;
        ss << in.rdbuf();
        std::string text = ss.str();
        ASSERT_EQ(tep_parse_event(formats.tep, text.data(), text.size(), "ftrace"), 0) << ev.path();
    }
    Copy c;
    struct Pass {
        std::vector<Event> events;
        std::set<int> pids;
        std::uint64_t records = 0, undecodable = 0;
        std::set<int> types;
    };
    auto run = [&](PageDecoder::Appends appends) {
        PageDecoder dec(formats.tep);
        dec.set_appends(appends);
        std::vector<PageFile> files;
        for (int cpu : {0, 1})
            files.push_back(
                {"instance", cpu, (c.dir / "raw" / "instance" / fmt::format("cpu{}", cpu)).string(), 4096, 0, 0, 0});
        PageFileProblems problems;
        Pass p;
        EXPECT_TRUE(decode_page_files_merged(
            dec, files,
            [&](Event& ev) {
                p.events.push_back(ev);
                return true;
            },
            problems));
        p.pids = dec.pids();
        p.records = dec.records();
        p.undecodable = dec.undecodable();
        p.types = dec.types_seen();
        return p;
    };
    const Pass every = run(PageDecoder::Appends::kEvery);
    const Pass light = run(PageDecoder::Appends::kMarkersAndFunctions);
    auto is_ioctl = [](const Event& e) {
        return std::holds_alternative<IoctlEnter>(e.body) || std::holds_alternative<IoctlExit>(e.body);
    };
    std::set<int> ioctl_pids;
    std::vector<std::tuple<std::uint64_t, int, std::size_t>> rest;
    for (const Event& e : every.events)
        if (is_ioctl(e))
            ioctl_pids.insert(e.pid);
        else
            rest.emplace_back(e.ts_ns, e.pid, e.body.index());
    ASSERT_GE(every.events.size() - rest.size(), 40u);  // fionread_loop 20: an enter and an exit per ioctl
    ASSERT_FALSE(rest.empty());                         // the capture's markers
    std::vector<std::tuple<std::uint64_t, int, std::size_t>> light_events;
    for (const Event& e : light.events) {
        EXPECT_FALSE(is_ioctl(e));
        light_events.emplace_back(e.ts_ns, e.pid, e.body.index());
    }
    EXPECT_EQ(light_events, rest);
    EXPECT_EQ(light.pids, ioctl_pids);
    EXPECT_TRUE(every.pids.empty());
    EXPECT_EQ(light.records, every.records);
    EXPECT_EQ(light.types, every.types);
    EXPECT_EQ(light.undecodable, every.undecodable);
}
