// The per-node digest, its signature, and the grouping of a fleet (analyze/fleet). Fixtures: tests/data/reports
// (made by make_fixtures.py there: noise.json is baseline.json with another pid and start time, durations moved by
// up to 8%, clone suffixes, [module] tails and its interrupt under another function) and the live capture
// tests/data/capture_dir/fionread20 (3 FIONREAD on a pipe, recorded on the CI kernel).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../../../analyze/report_head.hpp"
#include "nvtrace/fleet.hpp"
#include "nvtrace/report_io.hpp"

namespace nvtrace {
namespace {

namespace fs = std::filesystem;

Report load(const std::string& name) {
    auto r = read_report_file(std::string(NVTRACE_TEST_DATA) + "/" + name);
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? std::move(*r) : Report{};
}

IoctlRecord ioctl(int pid, std::uint64_t enter_ns, const char* name, const char* path = "pipe:[599327]",
                  std::int64_t ret = 0) {
    IoctlRecord io;
    io.pid = pid;
    io.enter_ns = enter_ns;
    io.exit_ns = enter_ns + 1000;
    io.name = name;
    io.cmd = 0x541b;
    io.fd = 3;
    io.fd_path = path;
    io.ret = ret;
    return io;
}

TEST(FleetSignature, TimingPidsSuffixesAndInterruptPlacementDoNotCount) {
    Report base = load("reports/baseline.json");
    Report noise = load("reports/noise.json");
    ASSERT_FALSE(base.calls.empty());
    EXPECT_EQ(node_signature_text(base), node_signature_text(noise));
    EXPECT_EQ(node_signature(base).hash, node_signature(noise).hash);
    // Return values and durations are not in the signature either (shown per node, not a different path).
    EXPECT_EQ(node_signature(base).hash, node_signature(load("reports/retval_change.json")).hash);
    EXPECT_EQ(node_signature(base).hash, node_signature(load("reports/time_change.json")).hash);
}

TEST(FleetSignature, StructureChangesTheSignature) {
    Report base = load("reports/baseline.json");
    for (const char* f : {"reports/added_path.json", "reports/removed_path.json", "reports/count_change.json"})
        EXPECT_NE(node_signature(base).hash, node_signature(load(f)).hash) << f;
}

TEST(FleetSignature, InterruptSubtreeIsUnderTheIrqPseudoRoot) {
    std::string text = node_signature_text(load("reports/baseline.json"));
    EXPECT_NE(text.find("call [irq] > "), std::string::npos) << text;
    EXPECT_EQ(text.find(".isra"), std::string::npos) << text;
}

TEST(FleetSignature, IoctlSequencesPerThreadIgnoreTidsAndInterleaving) {
    Report a, b;
    // Thread 10 asks FIONREAD twice then TCGETS; thread 11 FIONBIO. In b the tids differ, the pipe is another
    // inode and the two threads interleave otherwise.
    a.ioctls = {ioctl(10, 100, "FIONREAD"), ioctl(11, 150, "FIONBIO"), ioctl(10, 200, "FIONREAD"),
                ioctl(10, 300, "TCGETS", "/dev/pts/0", -25)};
    b.ioctls = {ioctl(21, 50, "FIONBIO"), ioctl(20, 400, "FIONREAD", "pipe:[77]"),
                ioctl(20, 500, "FIONREAD", "pipe:[77]"), ioctl(20, 600, "TCGETS", "/dev/pts/0", 0)};
    EXPECT_EQ(node_signature_text(a), node_signature_text(b));
    EXPECT_EQ(node_signature_text(a), "thread pipe FIONBIO x1\nthread pipe FIONREAD x2, pts/0 TCGETS x1\n");
    // The order within a thread counts.
    Report c = a;
    c.ioctls[3].enter_ns = 50;
    EXPECT_NE(node_signature(a).hash, node_signature(c).hash);
    // An extra request counts.
    Report d = a;
    d.ioctls.push_back(ioctl(10, 900, "FIONCLEX"));
    EXPECT_NE(node_signature(a).hash, node_signature(d).hash);
}

TEST(FleetSignature, ApiCallSequencesPerThreadIgnoreTidsTimesAndResults) {
    // Thread 10: cuInit, then cudaMalloc calling cuMemAlloc_v2 twice in a row; thread 11: cuCtxSynchronize. In b
    // the tids, the times and a result differ (results are left out, as return values are).
    auto api = [](std::uint64_t id, std::optional<std::uint64_t> parent, int pid, std::uint64_t entry,
                  const char* function, const char* result = "CUDA_SUCCESS") {
        ApiCall c;
        c.id = id;
        c.parent = parent;
        c.pid = pid;
        c.entry_ns = entry;
        c.exit_ns = entry + 5;
        c.function = function;
        c.result_name = result;
        return c;
    };
    Report a, b;
    a.api_calls = {api(1, std::nullopt, 10, 100, "cuInit"), api(2, std::nullopt, 11, 105, "cuCtxSynchronize"),
                   api(3, std::nullopt, 10, 110, "cudaMalloc"), api(4, 3, 10, 111, "cuMemAlloc_v2"),
                   api(5, 3, 10, 120, "cuMemAlloc_v2")};
    b.api_calls = {api(1, std::nullopt, 21, 7, "cuCtxSynchronize", "CUDA_ERROR_UNKNOWN"),
                   api(2, std::nullopt, 20, 900, "cuInit"), api(3, std::nullopt, 20, 1000, "cudaMalloc"),
                   api(4, 3, 20, 1001, "cuMemAlloc_v2"), api(5, 3, 20, 1500, "cuMemAlloc_v2")};
    EXPECT_EQ(node_signature_text(a), node_signature_text(b));
    EXPECT_EQ(node_signature_text(a),
              "api cuCtxSynchronize x1\napi cuInit x1, cudaMalloc x1, cudaMalloc > cuMemAlloc_v2 x2\n");
    EXPECT_EQ(node_signature(a).hash, node_signature(b).hash);
    // The order within a thread counts, and so does the nesting.
    Report c = a;
    c.api_calls[0].entry_ns = 130;
    EXPECT_NE(node_signature(a).hash, node_signature(c).hash);
    Report d = a;
    d.api_calls[4].parent.reset();
    EXPECT_NE(node_signature(a).hash, node_signature(d).hash);
    // Without API calls the signature is what it was: no "api" line.
    Report e = load("reports/baseline.json");
    EXPECT_EQ(node_signature_text(e).find("\napi "), std::string::npos);
}

TEST(FleetDigest, LiveCaptureRowAndNodeName) {
    Report r = load("capture_dir/fionread20/report.json");
    ProgramEnd exit0;
    exit0.exit_code = 0;
    r.environment.slurm = {{"node", "n2"}, {"job_id", "5"}};
    NodeDigest d = digest_report(r, "runs/5/n2/report.json", &exit0, nullptr);
    EXPECT_EQ(d.node, "n2");
    EXPECT_EQ(d.node_from, "slurm");
    EXPECT_EQ(d.result, "exit 0");
    EXPECT_EQ(d.kernel, "6.18.44-fc-v669");
    EXPECT_FALSE(d.driver);  // no NVIDIA driver on the CI machine: unknown, not guessed
    EXPECT_EQ(d.ioctls, r.ioctls.size());
    ASSERT_TRUE(d.ioctl_requests.count("fd? FIONREAD")) << to_json_text(group_fleet({d}));
    // Without slurm or host the directory names the node; without meta.json the result is unknown.
    r.environment.slurm.reset();
    NodeDigest e = digest_report(r, "runs/gpu7/report.json", nullptr, nullptr);
    EXPECT_EQ(e.node, "gpu7");
    EXPECT_EQ(e.node_from, "directory");
    EXPECT_EQ(e.result.rfind("unknown", 0), 0u) << e.result;
}

TEST(FleetDigest, XidsDriverErrorsAndIoctlErrorsAreCounted) {
    Report r;
    KernelLogMessage xid;
    xid.source = "NVRM";
    xid.kind = "xid";
    xid.fields["xid"] = "79";
    KernelLogMessage status;
    status.source = "NVRM";
    status.kind = "nv_status";
    KernelLogMessage loaded;
    loaded.source = "NVRM";
    loaded.kind = "driver_loaded";
    KernelLogMessage kernel_line;
    kernel_line.source = "kernel";
    kernel_line.kind = "other";
    kernel_line.level = 3;
    r.kernel_log = {xid, xid, status, loaded, kernel_line};
    r.ioctls = {ioctl(1, 1, "TCGETS", "/dev/pts/0", -25), ioctl(1, 2, "TCGETS", "/dev/pts/0", 0)};
    r.ioctls[1].status = "NV_ERR_INVALID_ARGUMENT";
    NodeDigest d = digest_report(r, "x/report.json", nullptr, nullptr);
    EXPECT_EQ(d.xids, (std::map<std::string, std::uint64_t>{{"79", 2}}));
    EXPECT_EQ(d.nvrm_errors, (std::map<std::string, std::uint64_t>{{"nv_status", 1}}));
    EXPECT_EQ(d.ioctl_errors, 2u);
    const FleetIoctlStats& st = d.ioctl_requests.at("pts/0 TCGETS");
    EXPECT_EQ(st.by_error, (std::map<std::string, std::uint64_t>{{"ENOTTY", 1}, {"NV_ERR_INVALID_ARGUMENT", 1}}));
}

NodeDigest node(const std::string& name, std::uint64_t hash, nlohmann::json env = nlohmann::json::object()) {
    NodeDigest d;
    d.node = name;
    d.report = name + "/report.json";
    d.signature.hash = hash;
    d.environment = report_environment_from_json(env);
    return d;
}

TEST(FleetGroups, MajorityAndOutliersBySize) {
    FleetResult f = group_fleet({node("n1", 7), node("n2", 9), node("n3", 7), node("n4", 7), node("n5", 8)});
    ASSERT_EQ(f.groups.size(), 3u);
    ASSERT_TRUE(f.majority);
    EXPECT_EQ(f.groups[0].nodes, (std::vector<std::size_t>{0, 2, 3}));
    EXPECT_EQ(f.groups[0].id, "A");
    // Groups of one: in node order.
    EXPECT_EQ(f.nodes[f.groups[1].representative].node, "n2");
    EXPECT_EQ(f.nodes[f.groups[2].representative].node, "n5");
    EXPECT_EQ(f.outliers.size(), 2u);
}

TEST(FleetGroups, TieHasNoMajority) {
    FleetResult f = group_fleet({node("n1", 1), node("n2", 2)});
    EXPECT_FALSE(f.majority);
    EXPECT_EQ(f.outliers.size(), 1u);
    EXPECT_NE(format_fleet_text(f).find("no majority"), std::string::npos);
}

TEST(FleetGroups, EnvironmentChangesLeaveOutTheNodesIdentity) {
    nlohmann::json a = {{"kernel", "6.1.0"},
                        {"host", "gpu1"},
                        {"slurm", {{"node", "n1"}}},
                        {"modules", {{"nvidia", {{"version", "580.65.06"}}}}}};
    nlohmann::json b = {{"kernel", "6.1.0"},
                        {"host", "gpu2"},
                        {"slurm", {{"node", "n2"}}},
                        {"modules", {{"nvidia", {{"version", "575.57.08"}}}}},
                        {"nvidia_driver_flavour", "open"}};
    auto ch = environment_changes(report_environment_from_json(a), report_environment_from_json(b));
    ASSERT_EQ(ch.size(), 2u);
    EXPECT_EQ(ch[0].key, "modules.nvidia.version");
    EXPECT_EQ(ch[0].majority, "\"580.65.06\"");
    EXPECT_EQ(ch[0].outlier, "\"575.57.08\"");
    EXPECT_EQ(ch[1].key, "nvidia_driver_flavour");
    EXPECT_EQ(ch[1].majority, "null");
    EXPECT_EQ(ch[1].outlier, "\"open\"");
}

// A value that is not UTF-8 (a kernel release or module version read from the host as bytes) reached the fleet
// text as nlohmann::json and was dumped there with the strict handler, which throws: the table was never printed.
TEST(FleetEnvironment, ValueThatIsNotUtf8IsShownReplacedInTextAndJson) {
    ReportEnvironment a, b;
    a.kernel = "6.1.0";
    b.kernel = std::string("6.1.0-\xff");
    auto ch = environment_changes(a, b);
    ASSERT_EQ(ch.size(), 1u);
    EXPECT_EQ(ch[0].outlier, "\"6.1.0-\xef\xbf\xbd\"");  // U+FFFD
    FleetResult f;
    f.nodes.resize(2);
    f.nodes[0].node = "n1";
    f.nodes[1].node = "n2";
    f.groups = {{"A", 1, {0}, 0}, {"B", 2, {1}, 1}};
    OutlierComparison c;
    c.group = 1;
    c.environment = ch;
    f.outliers.push_back(c);
    std::string text;
    ASSERT_NO_THROW(text = format_fleet_text(f));
    EXPECT_NE(text.find("~ kernel: \"6.1.0\" -> \"6.1.0-\xef\xbf\xbd\""), std::string::npos) << text;
    std::string j;
    ASSERT_NO_THROW(j = to_json_text(f));
    EXPECT_NE(j.find("6.1.0-\xef\xbf\xbd"), std::string::npos) << j;
}

struct TempDir {
    fs::path path;
    TempDir() {
        char t[] = "/tmp/nvtrace-fleet-test-XXXXXX";
        path = ::mkdtemp(t);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

void copy_report(const std::string& from, const fs::path& dir) {
    fs::create_directories(dir);
    fs::copy_file(std::string(NVTRACE_TEST_DATA) + "/" + from, dir / "report.json");
}

TEST(FleetAnalyze, OutlierGetsTheCallTreeDiffAgainstTheMajority) {
    TempDir t;
    copy_report("reports/baseline.json", t.path / "job/n1");
    copy_report("reports/noise.json", t.path / "job/n2");
    copy_report("reports/added_path.json", t.path / "job/n3");
    auto reports = find_fleet_reports({t.path.string()});
    ASSERT_TRUE(reports) << reports.error().message;
    ASSERT_EQ(reports->size(), 3u);
    auto f = analyze_fleet(*reports, {});
    ASSERT_TRUE(f) << f.error().message;
    ASSERT_EQ(f->groups.size(), 2u);
    ASSERT_TRUE(f->majority);
    EXPECT_EQ(f->groups[0].nodes.size(), 2u);
    ASSERT_EQ(f->outliers.size(), 1u);
    EXPECT_EQ(f->nodes[f->groups[1].representative].node, "n3");
    ASSERT_TRUE(f->outliers[0].diff);
    EXPECT_EQ(f->outliers[0].diff->summary.added_paths, 1u);
    EXPECT_EQ(f->outliers[0].diff->summary.removed_paths, 0u);
    std::string text = format_fleet_text(*f);
    EXPECT_NE(text.find("outlier group B (n3) against A (n1)"), std::string::npos) << text;
    nlohmann::json j = nlohmann::json::parse(to_json_text(*f));
    EXPECT_EQ(j["schema"], kFleetSchema);
    EXPECT_EQ(j["majority"], "A");
    EXPECT_EQ(j["outliers"][0]["representative"], "n3");
    EXPECT_EQ(j["outliers"][0]["diff"]["summary"]["added_paths"], 1);
}

TEST(FleetAnalyze, ExpectFailureOnAnyNodeIsReported) {
    TempDir t;
    copy_report("capture_dir/fionread20/report.json", t.path / "n1");
    copy_report("capture_dir/fionread20/report.json", t.path / "n2");
    auto ex = parse_expectations("check needs-tcgets\n  ioctls TCGETS\n", "t.expect");
    ASSERT_TRUE(ex) << ex.error().message;
    FleetOptions o;
    o.expectations = &*ex;
    auto reports = find_fleet_reports({t.path.string()});
    ASSERT_TRUE(reports);
    auto f = analyze_fleet(*reports, o);
    ASSERT_TRUE(f) << f.error().message;
    EXPECT_TRUE(f->expect_failed);
    EXPECT_EQ(f->nodes[0].failed_checks, std::vector<std::string>{"needs-tcgets"});
    auto pass = parse_expectations("check has-fionread\n  ioctls FIONREAD\n", "t.expect");
    ASSERT_TRUE(pass) << pass.error().message;
    o.expectations = &*pass;
    f = analyze_fleet(*reports, o);
    ASSERT_TRUE(f);
    EXPECT_FALSE(f->expect_failed);
    EXPECT_EQ(f->nodes[1].checks.pass, 1u);
}

TEST(FleetAnalyze, BadInputNamesTheFile) {
    TempDir t;
    fs::create_directories(t.path / "n1");
    std::ofstream(t.path / "n1/report.json") << "{\"schema\": \"nvtrace.report/1\", \"calls\": [";
    auto reports = find_fleet_reports({t.path.string()});
    ASSERT_TRUE(reports);
    auto f = analyze_fleet(*reports, {});
    ASSERT_FALSE(f);
    EXPECT_EQ(f.error().code, ExitCode::usage);
    EXPECT_NE(f.error().message.find("n1/report.json"), std::string::npos) << f.error().message;
    // A directory without reports, a path that does not exist.
    fs::create_directories(t.path / "empty");
    auto none = find_fleet_reports({(t.path / "empty").string()});
    ASSERT_FALSE(none);
    EXPECT_NE(none.error().message.find("no report.json"), std::string::npos);
    EXPECT_FALSE(find_fleet_reports({(t.path / "missing").string()}));
}

// A node's host name, driver string, kernel, ioctl device path and completeness reasons come from its report,
// which anyone may have written: a newline in one started a forged row of the node table, ESC reached the terminal.
TEST(FleetText, ControlBytesFromTheReportsCannotForgeRowsOrDriveTheTerminal) {
    Report r = load("capture_dir/fionread20/report.json");
    r.environment.host = "n1\nevil      A      575.57.08  6.1  exit 0";
    r.environment.kernel = "6.1\x1b[2J";
    r.completeness.complete = false;
    r.completeness.reasons = {"lost\rforged"};
    r.ioctls.push_back(ioctl(1, 5, "FIONREAD\x7f", "/dev/nvidia0\nforged"));
    NodeDigest d = digest_report(r, "runs/a/report.json", nullptr, nullptr);
    Report other = load("capture_dir/fionread20/report.json");
    other.environment.host = "n2\x1b]0;t\x07";
    NodeDigest e = digest_report(other, "runs/b\n/report.json", nullptr, nullptr);
    const std::string text = format_fleet_text(group_fleet({d, e}));
    for (char c = 0; c < 0x20; ++c)
        if (c != '\n') {
            EXPECT_EQ(text.find(c), std::string::npos) << int(c) << text;
        }
    EXPECT_EQ(text.find('\x7f'), std::string::npos) << text;
    EXPECT_EQ(text.find("\nevil"), std::string::npos) << text;
    EXPECT_EQ(text.find("\nforged"), std::string::npos) << text;
    EXPECT_NE(text.find("n1\\x0aevil      A"), std::string::npos) << text;
    EXPECT_NE(text.find("6.1\\x1b[2J"), std::string::npos) << text;
    EXPECT_NE(text.find("lost\\x0dforged"), std::string::npos) << text;
    EXPECT_NE(text.find("nvidia0\\x0aforged FIONREAD\\x7f"), std::string::npos) << text;
    EXPECT_NE(text.find("n2\\x1b]0;t\\x07"), std::string::npos) << text;
    EXPECT_NE(text.find("runs/b\\x0a/report.json"), std::string::npos) << text;
}

// The outlier comparison is nvtrace diff's, which walks the call paths recursively: a report nesting deeper than
// kDiffMaxDepth (another producer's, or made to crash it) is refused naming the report, its depth and the bound;
// one at the bound is compared.
TEST(FleetDigest, ReportNestingDeeperThanTheDiffComparesIsRefused) {
    TempDir t;
    auto write = [&](const std::string& node, std::size_t depth) {
        nlohmann::json j =
            nlohmann::json::parse(std::ifstream(std::string(NVTRACE_TEST_DATA) + "/reports/baseline.json"));
        j["calls"] = nlohmann::json::array();
        for (std::size_t i = 1; i <= depth; ++i)
            j["calls"].push_back({{"id", i},
                                  {"parent", i > 1 ? nlohmann::json(i - 1) : nlohmann::json(nullptr)},
                                  {"cpu", 0},
                                  {"pid", 1},
                                  {"comm", "x"},
                                  {"depth", i - 1},
                                  {"function", "f" + std::to_string(i % 7)},
                                  {"entry_ns", i},
                                  {"duration_ns", 1}});
        j["graph"] = nlohmann::json::array();
        fs::create_directories(t.path / node);
        std::ofstream(t.path / node / "report.json") << j.dump();
        return (t.path / node / "report.json").string();
    };
    const std::string ok = write("ok", kDiffMaxDepth), deep = write("deep", kDiffMaxDepth + 1);
    const std::string base = (t.path / "base" / "report.json").string();
    copy_report("reports/baseline.json", t.path / "base");
    auto compared = analyze_fleet({base, ok}, {});
    ASSERT_TRUE(compared) << compared.error().message;
    ASSERT_EQ(compared->outliers.size(), 1u);
    EXPECT_TRUE(compared->outliers[0].diff);
    auto refused = analyze_fleet({base, deep}, {});
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().message,
              deep + ": its calls nest 4097 deep: nvtrace fleet compares call trees up to 4096 calls deep");
}

}  // namespace
}  // namespace nvtrace
