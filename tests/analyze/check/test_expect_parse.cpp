// The expectations format (docs/expectations.md): what parses, into what, and the file:line:col errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "nvtrace/expect.hpp"

namespace nvtrace {
namespace {

Result<ExpectFile> parse(std::string_view text) {
    return parse_expectations(text, "t.expect");
}

std::string error_of(std::string_view text) {
    auto r = parse(text);
    return r ? std::string("<parsed>") : r.error().message;
}

TEST(ExpectParse, EveryScenarioFileParses) {
    int files = 0;
    for (const auto& d : std::filesystem::directory_iterator(NVTRACE_SCENARIOS_DIR)) {
        auto p = d.path() / "path.expect";
        if (!std::filesystem::exists(p)) continue;
        ++files;
        auto r = read_expectations_file(p.string());
        ASSERT_TRUE(r) << r.error().message;
        EXPECT_FALSE(r->checks.empty()) << p;
        EXPECT_FALSE(r->title.empty()) << p;
    }
    EXPECT_EQ(files, 7) << "gem-mmap and the six CUDA scenarios";
}

// Seen: `absent ioctl FIONRAED`, `absent ioctl FIONREAD ret=EINAVL` and `absent log xdi` (typos)
// passed on every report, and `ioctl FIONREAD ret=banana` failed instead of being refused. What nvtrace cannot
// match is now a parse error naming line and column; a file with CRLF line ends parses as with LF.
TEST(ExpectParse, NamesAndValuesNvtraceCannotMatchAreRefused) {
    const std::string kIoctl = "an ioctl nvtrace knows by name";
    EXPECT_NE(error_of("check a\n  absent ioctl FIONRAED\n").find("t.expect:2:16: expected " + kIoctl),
              std::string::npos);
    EXPECT_NE(error_of("check a\n  ioctls FIONREAD, FOO\n").find("expected " + kIoctl), std::string::npos);
    EXPECT_EQ(error_of("check a\n  absent ioctl FIONREAD ret=EINAVL\n"),
              "t.expect:2:29: expected a return value: a number or an errno name (0, -22, EINVAL), found 'EINAVL'");
    EXPECT_NE(error_of("check a\n  ioctl FIONREAD ret=banana\n").find("found 'banana'"), std::string::npos);
    EXPECT_NE(error_of("check a\n  ioctl NV_ESC_RM_ALLOC status=NV_ERR_BOGUS\n").find("an NV_STATUS name or number"),
              std::string::npos);
    EXPECT_NE(error_of("check a\n  ioctl NV_ESC_RM_ALLOC hclass=NOT_A_CLASS\n").find("an RM class name or number"),
              std::string::npos);
    EXPECT_EQ(
        error_of("check a\n  absent log xdi\n"),
        "t.expect:2:14: expected a kernel-log kind (docs/dmesg.md: xid, nv_status, bar_overlap, ...), found 'xdi'");
    // `absent log xid xid=abc` (fresh user) passed on every report: no Xid message has a number that is no number.
    EXPECT_EQ(error_of("check a\n  absent log xid xid=abc\n"),
              "t.expect:2:22: expected an Xid number (79, 0x4f; the name is the field xid_name), found 'abc'");
    EXPECT_EQ(error_of("check a\n  log xid xid=0x4f pci=0000:b3:00\n  absent log xid xid=79\n"), "<parsed>");
    // `absent log xid xid=79 pci=0000:3b:000` (fresh user) passed on every log: a pci= or device= that is no PCI
    // address matches no message. Every form a tool prints parses.
    for (const char* bad : {"0000:3b:000", "zz", "3b:00.8", "0000:3B:00.0.0", "b3:00.0x"})
        EXPECT_NE(error_of(std::string("check a\n  absent log xid pci=") + bad + "\n").find("expected a PCI address"),
                  std::string::npos)
            << bad;
    EXPECT_NE(error_of("check a\n  log fallen_off_bus device=0000:3b\n").find("expected a PCI address"),
              std::string::npos);
    EXPECT_EQ(
        error_of("check a\n  log xid pci=00000000:3B:00.0\n  log xid pci=3b:00.0\n  log xid device=PCI:0000:3b:00\n"),
        "<parsed>");
    // What is known parses: names, numbers, errno names and numbers, NV_STATUS and class names.
    EXPECT_EQ(error_of("check a\n  ioctl FIONREAD ret=-22\n  absent ioctl 0x541b ret=EINVAL\n  absent log xid\n"
                       "  ioctl NV_ESC_RM_ALLOC_MEMORY hclass=0x71 status=NV_OK\n"),
              "<parsed>");
    EXPECT_EQ(error_of("check a\r\n  ioctl FIONREAD\r\n"), "<parsed>");
}

TEST(ExpectParse, ChecksFactsAndTheirParts) {
    auto r = parse(R"(format nvtrace.expect/1
title demo
untraced rm_ioctl RmIoctl when flavour open -- RM core, no ftrace hooks
check one -- a title
  source a.c: where it comes from -- with dashes
  phase mmap-shared
  when kernel >= 6.1 and driver < 600
  chain a > b >> c   # comment
  or call d when driver <= 535.104.05
  absent call e
  ioctls FIONREAD, TCGETS,0x5421
  ioctl NV_ESC_RM_ALLOC_MEMORY hclass=0x71 status=NV_ERR_INVALID_ADDRESS ret=0
  log bar_overlap pci=0000:01:00.0
  result mmap-private = EINVAL
  result k=v
  phases open,create
)");
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->title, "demo");
    ASSERT_EQ(r->untraced.size(), 1u);
    EXPECT_EQ(r->untraced[0].functions, (std::vector<std::string>{"rm_ioctl", "RmIoctl"}));
    EXPECT_EQ(r->untraced[0].reason, "RM core, no ftrace hooks");
    ASSERT_EQ(r->untraced[0].when.size(), 1u);
    EXPECT_EQ(r->untraced[0].when[0].flavour, "open");
    ASSERT_EQ(r->checks.size(), 1u);
    const Expectation& e = r->checks[0];
    EXPECT_EQ(e.id, "one");
    EXPECT_EQ(e.title, "a title");
    EXPECT_EQ(e.sources, (std::vector<std::string>{"a.c: where it comes from -- with dashes"}));
    EXPECT_EQ(e.phase, "mmap-shared");
    ASSERT_EQ(e.when.size(), 2u);
    EXPECT_EQ(e.when[0].subject, Condition::Subject::kernel);
    EXPECT_EQ(e.when[1].op, Condition::Op::lt);
    ASSERT_EQ(e.facts.size(), 9u);
    const Fact& chain = e.facts[0];
    ASSERT_EQ(chain.chain.size(), 3u);
    EXPECT_TRUE(chain.chain[1].direct);
    EXPECT_FALSE(chain.chain[2].direct);
    EXPECT_EQ(chain.line, 8u);
    EXPECT_TRUE(e.facts[1].alternative);
    ASSERT_EQ(e.facts[1].when.size(), 1u);
    EXPECT_EQ(to_string(e.facts[1].when[0].version), "535.104.05");
    EXPECT_TRUE(e.facts[2].absent);
    EXPECT_EQ(e.facts[3].names, (std::vector<std::string>{"FIONREAD", "TCGETS", "0x5421"}));
    EXPECT_EQ(e.facts[4].fields.size(), 3u);
    EXPECT_EQ(e.facts[5].kind, Fact::Kind::log);
    EXPECT_EQ(e.facts[6].names[0], "mmap-private");
    EXPECT_EQ(e.facts[6].fields[0].second, "EINVAL");
    EXPECT_EQ(e.facts[7].names[0], "k");
    EXPECT_EQ(e.facts[8].names, (std::vector<std::string>{"open", "create"}));
}

TEST(ExpectParse, ErrorsNameFileLineAndColumn) {
    EXPECT_EQ(error_of("check a\n  chian x\n"),
              "t.expect:2:3: expected chain, call, ioctl, ioctls, log, result, phases or api, found 'chian'");
    EXPECT_EQ(error_of("check a\n  chain x > \n"), "t.expect:2:12: expected a function name, found end of line");
    EXPECT_EQ(error_of("check a\n  chain x y\n"), "t.expect:2:11: expected '>' or '>>', found 'y'");
    EXPECT_EQ(error_of("check a\n  call x when driver => 5\n"),
              "t.expect:2:22: expected <, <=, ==, !=, >= or >, found '=>'");
    EXPECT_EQ(error_of("check a\n  call x when driver >= five\n"),
              "t.expect:2:25: expected a version (e.g. 595.44.02), found 'five'");
    EXPECT_EQ(error_of("check a\n  call x when os linux\n"),
              "t.expect:2:15: expected driver, kernel or flavour, found 'os'");
    EXPECT_EQ(error_of("  call x\n"), "t.expect:1:3: expected format, title, untraced or check, found 'call'");
    EXPECT_EQ(error_of("format nvtrace.expect/2\n"),
              "t.expect:1:8: expected nvtrace.expect/1, found 'nvtrace.expect/2'");
    EXPECT_EQ(error_of("untraced f\n"),
              "t.expect:1:11: expected ' -- REASON' (why ftrace cannot see these functions), found end of line");
    EXPECT_EQ(error_of("check a\n  call x\ncheck a\n  call y\n"), "t.expect:3:7: check id 'a' already used on line 1");
    EXPECT_EQ(error_of("check a\n  phase p\n"),
              "t.expect:1:1: check 'a' has no fact (chain, call, ioctl, ioctls, log, result, phases, api)");
    EXPECT_EQ(error_of("check a\n  or call x\n"), "t.expect:2:3: expected a fact before the first 'or', found 'or'");
    EXPECT_EQ(error_of("check a\n  ioctl FIONREAD size=3\n"),
              "t.expect:2:18: expected hclass=, status=, ret=, calls= or fd=, found 'size=3'");
    EXPECT_EQ(error_of("check a\n  absent result x = y\n"),
              "t.expect:2:10: expected chain, call, ioctl or log after 'absent', found 'result'");
    EXPECT_EQ(error_of("check a\n  result x\n"), "t.expect:2:10: expected KEY = VALUE, found 'x'");
    EXPECT_EQ(error_of("check a b\n  call x\n"), "t.expect:1:9: expected ' -- TITLE' or end of line, found 'b'");
    EXPECT_EQ(error_of("check a\n  call x > y\n"),
              "t.expect:2:10: expected one function after 'call' (use 'chain' for several), found '>'");
}

TEST(ExpectParse, MissingFileIsAUsageError) {
    auto r = read_expectations_file("/nonexistent/path.expect");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, ExitCode::usage);
    EXPECT_NE(r.error().message.find("/nonexistent/path.expect: cannot open"), std::string::npos);
}

// An ifstream opens a directory and reads nothing: it parsed as an empty file, and `nvtrace check --expect DIR`
// passed with zero checks.
TEST(ExpectParse, DirectoryIsAUsageErrorNotAnEmptyFile) {
    auto dir = std::filesystem::temp_directory_path() / ("nvtrace-expect-dir-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    auto r = read_expectations_file(dir.string());
    std::filesystem::remove(dir);
    ASSERT_FALSE(r) << "a directory parsed with " << r->checks.size() << " checks";
    EXPECT_EQ(r.error().code, ExitCode::usage);
    EXPECT_EQ(r.error().message, dir.string() + ": is a directory, not an expectations file");
}

// A file that checks nothing lets every report pass: an error, not zero checks.
TEST(ExpectParse, FileWithoutAnyCheckIsAUsageError) {
    for (std::string_view text :
         {std::string_view(""), std::string_view("# only a comment\n"),
          std::string_view("format nvtrace.expect/1\ntitle t\n"), std::string_view("untraced f -- inlined\n")}) {
        auto r = parse(text);
        ASSERT_FALSE(r) << "parsed with no check: " << text;
        EXPECT_EQ(r.error().code, ExitCode::usage);
        EXPECT_EQ(r.error().message.rfind("t.expect:", 0), 0u) << r.error().message;
        EXPECT_NE(r.error().message.find("expected at least one check"), std::string::npos) << r.error().message;
    }
}

}  // namespace
}  // namespace nvtrace
