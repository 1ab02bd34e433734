// meta.json as CaptureMeta (include/nvtrace/capture_meta.hpp): the committed capture (tests/data/capture_dir/
// fionread20, written by `nvtrace run` before "tty", "fd_events" and the other later keys existed) is written
// again byte for byte; a meta.json as today's capture writes it round-trips; damaged ones name file: key.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../../../analyze/json_values.hpp"
#include "nvtrace/capture_dir.hpp"
#include "nvtrace/capture_meta.hpp"

namespace fs = std::filesystem;
using namespace nvtrace;

namespace {

const fs::path kMeta = fs::path(NVTRACE_TEST_DATA) / "capture_dir" / "fionread20" / "meta.json";

std::string read_bytes(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// A meta.json with every key today's capture writes, function_graph at the top level (filter_functions and
// unresolved_functions are written only then).
CaptureMeta full_meta() {
    CaptureMeta m;
    m.capture_format = kCaptureDirFormat;
    m.command = {"/usr/bin/dd", "if=/dev/nullb0"};
    m.pid = 4242;
    m.run_as_uid = 1000;
    m.tty = true;
    m.preload = "/usr/lib/nvtrace/libnvtrace_preload.so";
    m.started_utc = "2026-12-01T10:00:00Z";
    m.duration_ns = 123456789;
    m.signal = 15;
    m.interrupted_by = 2;
    m.timed_out = true;
    m.stopped_on_terminal = "SIGTTOU";
    m.descendants_ended = {{17, "sleep", "SIGTERM"}, {18, "yes", "SIGKILL"}};
    m.descendants_left = {{19, "stuck", "none"}};
    m.modules = {"null_blk"};
    m.filters = {"blk_mq_*"};
    m.notrace = {"*spin*"};
    m.graph_functions = {"null_queue_rq"};
    m.events = {"block:block_rq_issue"};
    m.max_depth = 4;
    m.filter_counts = {{"module:null_blk", 96}, {"filter:blk_mq_*", 120}};
    m.filter_functions = 216;
    m.tracer_mode = "function_graph (top level)";
    m.tracing_dir = "/sys/kernel/tracing";
    m.instance = "nvtrace-4241";
    m.clock = "global";
    m.buffer_size_kb = 8192;
    m.kept_events = {"block:block_rq_issue"};
    m.fd_events = {"openat", "close"};
    m.event_formats = {"ftrace:funcgraph_entry", "syscalls:sys_enter_ioctl"};
    m.printk_console = true;
    m.kmsg_clock = KmsgClockOffset{"global", std::nullopt, 1500, "measured"};
    m.kmsg_overwritten = true;
    m.kmsg_records = {"6,1,2,-;null_blk: loaded"};
    m.buffer_stats = {{0, "top", 3, 1}};
    m.undecodable_records = 2;
    m.unresolved_functions = 1;
    m.raw.long_size = 8;
    m.raw.page_size = 4096;
    m.raw.buffers = {{"instance", 4096, {0, 1}, 3, 40}, {"top", 4096, {0, 1}, 9, 800}};
    m.raw.drained_while_running = false;
    m.raw.write_error = "raw/top/cpu1: write: No space left on device";
    m.instance_left = "instances/nvtrace-4241: held open by 19 (stuck)";
    m.trace_dat = {"trace.dat", "trace-top.dat"};
    m.report_source.kind = "live", m.report_source.scenario = "blk";
    m.environment.kernel = "6.1.0";
    return m;
}

std::string error_of(const nlohmann::json& j) {
    auto m = capture_meta_from_json(j, "DIR/meta.json");
    return m ? "<no error>" : m.error().message;
}

}  // namespace

TEST(CaptureMeta, CommittedCaptureIsWrittenAgainByteForByte) {
    const std::string bytes = read_bytes(kMeta);
    ASSERT_FALSE(bytes.empty());
    auto m = capture_meta_from_json(nlohmann::json::parse(bytes), kMeta.string());
    ASSERT_TRUE(m) << m.error().message;
    EXPECT_EQ(dump_capture_meta(*m), bytes);
    // The keys written after that capture was made read as their defaults.
    EXPECT_TRUE(m->absent_keys.count("tty"));
    EXPECT_TRUE(m->absent_keys.count("descendants_ended"));
    EXPECT_FALSE(m->tty);
    EXPECT_EQ(m->pid, 13948);
    EXPECT_EQ(m->raw.buffers.at(0).records, 42u);
    EXPECT_EQ(m->kmsg_clock->basis, "same_clock");
}

TEST(CaptureMeta, EveryKeyRoundTrips) {
    const CaptureMeta m = full_meta();
    const std::string bytes = dump_capture_meta(m);
    nlohmann::json j = nlohmann::json::parse(bytes);
    for (const char* key : {"tty", "fd_events", "instance_left", "trace_dat", "filter_functions",
                            "unresolved_functions", "stopped_on_terminal", "descendants_left"})
        EXPECT_TRUE(j.contains(key)) << key;
    EXPECT_TRUE(j["kmsg_clock"]["offset_ns"].is_null());
    EXPECT_EQ(j["raw"]["endianness"], "little");
    auto back = capture_meta_from_json(j, "meta.json");
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_TRUE(back->absent_keys.empty()) << *back->absent_keys.begin();
    EXPECT_EQ(dump_capture_meta(*back), bytes);
    EXPECT_EQ(back->descendants_ended.at(1).signal, "SIGKILL");
    EXPECT_EQ(back->raw.write_error, m.raw.write_error);
}

// Without function_graph the capture writes neither "filter_functions" nor "unresolved_functions".
TEST(CaptureMeta, EventsOnlyCaptureHasNoFunctionCounts) {
    CaptureMeta m = full_meta();
    m.filter_functions.reset();
    m.unresolved_functions.reset();
    nlohmann::json j = to_json(m);
    EXPECT_FALSE(j.contains("filter_functions"));
    EXPECT_FALSE(j.contains("unresolved_functions"));
    EXPECT_TRUE(j["exit_code"].is_null());
}

// Each damage names the file and the key, and says what was expected.
TEST(CaptureMeta, DamagedMetaNamesFileAndKey) {
    const nlohmann::json good = nlohmann::json::parse(read_bytes(kMeta));
    struct Case {
        const char* what;
        nlohmann::json::json_pointer at;
        nlohmann::json value;  // null with erase = true: the key is removed
        bool erase;
        const char* message;
    };
    using P = nlohmann::json::json_pointer;
    const Case cases[] = {
        {"capture_format missing", P("/capture_format"), nullptr, true,
         "DIR/meta.json: no \"capture_format\": not a raw capture directory"},
        {"capture_format 2", P("/capture_format"), 2, false, "DIR/meta.json: capture_format 2 is not 1"},
        {"raw not an object", P("/raw"), "x", false, "DIR/meta.json: expected an object \"raw\""},
        {"long_size a string", P("/raw/long_size"), "8", false,
         "DIR/meta.json: raw.long_size: expected a non-negative integer"},
        {"long_size 2", P("/raw/long_size"), 2u, false, "DIR/meta.json: raw.long_size must be 4 or 8"},
        {"endianness missing", P("/raw/endianness"), nullptr, true, "DIR/meta.json: raw.endianness: missing"},
        {"write_error a number", P("/raw/write_error"), 5, false,
         "DIR/meta.json: raw.write_error: expected a string or null"},
        {"unknown buffer", P("/raw/buffers/0/name"), "other", false,
         "DIR/meta.json: raw.buffers: unknown buffer 'other'"},
        {"page_size negative", P("/raw/buffers/0/page_size"), -1, false,
         "DIR/meta.json: raw.buffers[].page_size: expected a non-negative integer"},
        {"cpu -1", P("/raw/buffers/0/cpus/0"), -1, false, "DIR/meta.json: raw.buffers cpus must be CPU numbers"},
        {"no buffers", P("/raw/buffers"), nlohmann::json::array(), false,
         "DIR/meta.json: raw.buffers lists no buffer: nothing to decode"},
        {"event_formats missing", P("/event_formats"), nullptr, true,
         "DIR/meta.json: event_formats: missing, expected an array of strings"},
        {"event_formats with a number", P("/event_formats/0"), 1, false,
         "DIR/meta.json: event_formats[]: expected a string"},
        {"pid a string", P("/pid"), "13948", false, "DIR/meta.json: pid: expected an integer or null"},
        {"exit_code too large", P("/exit_code"), 1ll << 40, false,
         "DIR/meta.json: exit_code: expected an integer or null"},
        {"kmsg_overwritten a number", P("/kmsg_overwritten"), 0, false,
         "DIR/meta.json: kmsg_overwritten: expected true or false"},
        {"kmsg_clock without basis", P("/kmsg_clock/basis"), nullptr, true,
         "DIR/meta.json: kmsg_clock.basis: missing, expected a string"},
        {"kmsg_clock a string", P("/kmsg_clock"), "local", false, "DIR/meta.json: kmsg_clock: expected an object"},
        {"buffer_stats entry without cpu", P("/buffer_stats/0/cpu"), nullptr, true,
         "DIR/meta.json: buffer_stats[].cpu: missing, expected an integer"},
        {"filter_counts negative",
         P("/filter_counts"),
         {{"module:x", -1}},
         false,
         "DIR/meta.json: filter_counts: expected an object of non-negative integers"},
        {"descendants_ended entry without comm", P("/descendants_ended"),
         nlohmann::json::array({{{"pid", 1}, {"signal", "SIGTERM"}}}), false,
         "DIR/meta.json: descendants_ended[].comm: missing, expected a string"},
        {"environment an array", P("/environment"), nlohmann::json::array(), false,
         "DIR/meta.json: environment: expected an object"},
    };
    for (const auto& c : cases) {
        nlohmann::json j = good;
        if (c.erase)
            j.at(c.at.parent_pointer()).erase(c.at.back());
        else
            j[c.at] = c.value;
        std::string e = error_of(j);
        EXPECT_EQ(e.rfind(c.message, 0), 0u) << c.what << ": " << e;
    }
    EXPECT_EQ(error_of(good), "<no error>");
}

// The capture directory reader gives the same errors, naming the directory's meta.json.
TEST(CaptureMeta, ReaderNamesTheMetaFile) {
    char tpl[] = "/tmp/nvtrace-capmeta-XXXXXX";
    const fs::path dir = fs::path(::mkdtemp(tpl)) / "cap";
    fs::copy(kMeta.parent_path(), dir, fs::copy_options::recursive);
    nlohmann::json j = nlohmann::json::parse(read_bytes(kMeta));
    j["raw"]["long_size"] = "8";
    std::ofstream(dir / "meta.json", std::ios::trunc) << j.dump();
    auto r = read_capture_dir(dir.string());
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, (dir / "meta.json").string() + ": raw.long_size: expected a non-negative integer");
    fs::remove_all(dir.parent_path());
}
