// The raw capture directory reader (include/nvtrace/capture_dir.hpp). tests/data/capture_dir/fionread20 is a
// real capture from the CI host (6.18 kernel): `sudo nvtrace run --no-preload --out DIR -- fionread_loop 20
// "NVRM: Xid (PCI:0000:01:00): 79, pid=1, GPU has fallen off the bus."`; its report.json is what the live
// run wrote. Damaged copies of it are made in a temporary directory.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

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
    r.environment = data->meta["environment"];
    nlohmann::json got = to_json(r);
    std::ifstream in(kCapture / "report.json");
    nlohmann::json live = nlohmann::json::parse(in);
    // The data sections (the report gains other keys over time; the live tier compares whole reports).
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

// A second user cut raw/instance/cpu0 to 0 bytes (or to one whole page) and got "ioctls: 0, complete: yes":
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

// fuzz_capture_page found a page on which libtraceevent's kbuffer_next_event never returned: a type_len 0 event
// whose length word is 0 (the fuzzer's input, made into the first of the two pages).
TEST(CaptureDir, EventLengthOfZeroIsAnErrorNotAHangInKbuffer) {
    const unsigned char input[] = {0x5b, 0x38, 0x37, 0x5b, 0x38, 0x3b, 0x20, 0x64, 0x66, 0x01, 0x00, 0x00,
                                   0x01, 0xa6, 0xa6, 0xa6, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83,
                                   0x83, 0x2d, 0x00, 0x00, 0x38, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83,
                                   0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0xa6, 0xf7, 0xdd,
                                   0xdd, 0xfe, 0xff, 0xff, 0xfc, 0xff, 0xff, 0xff, 0x00, 0x00, 0xdd};
    Copy c;
    std::string pages(8192, '\0');
    std::memcpy(pages.data(), input, sizeof input);
    c.write("raw/instance/cpu0", pages);
    std::string e = error_of(c.dir);
    EXPECT_NE(e.find("raw/instance/cpu0"), std::string::npos) << e;
    EXPECT_NE(e.find("an event length of 0 bytes"), std::string::npos) << e;
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

TEST(CaptureDir, CommitLengthPastThePageIsAnErrorWithTheOffset) {
    Copy c;
    std::string page = c.read("raw/instance/cpu0");
    for (int i = 8; i < 16; ++i)
        page[static_cast<std::size_t>(i)] = '\xff';  // commit word: every length bit set
    c.write("raw/instance/cpu0", page);
    std::string e = error_of(c.dir);
    EXPECT_NE(e.find("raw/instance/cpu0: page at offset 0"), std::string::npos) << e;
    EXPECT_NE(e.find("commit length"), std::string::npos) << e;
}

// Pages of pseudo-random bytes with a plausible commit word: never a crash; an error names the file.
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
