// The direct JSON writer of the report's per-record arrays (analyze/import/json_write.cpp) against
// nlohmann's dump of the DOM that to_json() builds: the same bytes, record by record and for the whole of
// write_json(), with escapes, UTF-8, invalid UTF-8, nulls, empty and extreme values.
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../../../analyze/json_values.hpp"
#include "json_write.hpp"
#include "nvtrace/report.hpp"

using namespace nvtrace;
using nlohmann::json;

namespace {

std::string dump(const json& j) {
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

// write_json()'s layout: every key of to_json(), "calls" and "ioctls" first (the arrays a streamed report
// writes as it goes), then the others in nlohmann's order; arrays one element a line, each value as nlohmann
// dumps it.
std::string layout_of_dom(const json& j) {
    std::vector<std::pair<std::string, json>> items{{"calls", j.at("calls")}, {"ioctls", j.at("ioctls")}};
    for (const auto& [key, v] : j.items())
        if (key != "calls" && key != "ioctls") items.emplace_back(key, v);
    std::string s = "{\n";
    std::size_t k = 0;
    for (const auto& [key, v] : items) {
        s += " \"" + key + "\": ";
        if (v.is_array()) {
            s += "[";
            for (std::size_t i = 0; i < v.size(); ++i)
                s += (i ? ",\n  " : "\n  ") + dump(v[i]);
            s += v.empty() ? "]" : "\n ]";
        } else {
            s += dump(v);
        }
        s += ++k == j.size() ? "\n" : ",\n";
    }
    return s + "}\n";
}

// Every byte class the escaper treats differently, valid UTF-8, and invalid UTF-8 (replaced with U+FFFD).
const std::string kNasty = std::string("q\"b\\s/\x01\x1f\t\n\r\b\f\x7f ") + "caf\xc3\xa9";
const std::string kInvalid = "bad \xff byte";
const std::string kAllControl = [] {
    std::string s;
    for (int c = 1; c < 0x20; ++c)
        s += static_cast<char>(c);
    return s + s;  // the worst case of the writer's size bound: 6 bytes out per byte in
}();

Report rich_report() {
    Report r;
    r.source.other["input"] = "\"x.dat\"";  // a key nvtrace does not interpret, written back as it was
    r.environment.kernel = "6.1";
    Call c;
    c.id = 1;
    c.function = kNasty;
    c.comm = kInvalid;
    Call d;  // extremes
    d.id = UINT64_MAX;
    d.parent = UINT64_MAX;
    d.cpu = INT32_MIN;
    d.pid = INT32_MAX;
    d.depth = INT32_MIN;
    d.comm = kAllControl;
    d.function = kAllControl;
    d.module = kAllControl;
    d.entry_ns = UINT64_MAX;
    d.duration_ns = UINT64_MAX;
    d.retval = INT64_MIN;
    d.irq = true;
    d.entry_seen = false;
    d.exit_seen = false;
    d.phase = kAllControl;
    r.calls = {c, d};
    r.graph = {{"a > " + kNasty, 3, UINT64_MAX, 5, 0, UINT64_MAX}, {"", 0, 0, 0, 0, 0}};

    IoctlRecord a;  // every optional set
    a.pid = INT32_MIN;
    a.comm = kNasty;
    a.fd = 7;
    a.fd_path = kAllControl;
    a.cmd = UINT64_MAX;
    a.name = "NV_ESC_RM_CONTROL";
    a.hclass = UINT32_MAX;
    a.status = "NV_ERR_INVALID_ARGUMENT";
    a.ctrl = 0x20800110;
    a.ctrl_class = kAllControl;
    a.ret = INT64_MIN;
    a.enter_ns = UINT64_MAX;
    a.exit_ns = 0;
    a.call = UINT64_MAX;
    a.calls = {9, 10, UINT64_MAX};
    a.phase = kInvalid;
    IoctlRecord b;  // none set, negative fd
    b.cmd = 0x541B;
    b.fd = -1;
    r.ioctls = {a, b};

    r.markers = {{std::nullopt, -1, kNasty}, {7, 9, kInvalid}, {0, 0, ""}, {UINT64_MAX, INT32_MIN, kAllControl}};

    EventRecord e;
    e.name = "sched:sched_switch";
    e.ts_ns = 12;
    e.cpu = 3;
    e.pid = 9;
    e.comm = "k/0:1";
    e.fields = std::map<std::string, std::string>{{"prev_comm", kNasty}, {"a", ""}, {"Z", kInvalid}};
    e.text = kNasty;
    e.stack = {"f+0x1/0x2", kNasty};
    e.user_stack = {"0x7f00"};
    e.line = 4;
    EventRecord f;  // nulls and empties
    f.name = "x";
    f.fields = std::map<std::string, std::string>{};
    EventRecord g;
    g.name = kInvalid;
    g.fields = std::map<std::string, std::string>{{kAllControl, kAllControl}};
    g.stack = {kAllControl, kAllControl};
    r.events = {e, f, g};

    KernelLogMessage m;
    m.ts_ns = 5;
    m.level = 3;
    m.source = "NVRM";
    m.kind = "xid";
    m.fields = {{"xid", "79"}, {"pci", kNasty}};
    m.text = kInvalid;
    m.seq = 0;
    m.call = UINT64_MAX;
    m.attached = "console";
    m.trace_ts_ns = 6;
    KernelLogMessage n;  // attached "" prints as "none"
    n.text = kAllControl;
    r.kernel_log = {m, n};

    r.checks = {{"c", "pass", kNasty, "w"}};
    r.kmsg_clock = KmsgClockOffset{"local", -5, 3, "measured"};
    return r;
}

template <class T, class Append>
void expect_records_match(const std::vector<T>& items, const json& dom, Append append) {
    ASSERT_EQ(dom.size(), items.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
        SCOPED_TRACE(i);
        std::string got = "prefix";
        append(got, items[i]);
        EXPECT_EQ(got, "prefix" + dump(dom[i]));
    }
}

}  // namespace

TEST(JsonWrite, EveryRecordWriterPrintsNlohmannsBytes) {
    Report r = rich_report();
    json j = to_json(r);
    expect_records_match(r.calls, j["calls"], import::append_call_json);
    expect_records_match(r.ioctls, j["ioctls"], import::append_ioctl_json);
    expect_records_match(r.events, j["events"], import::append_event_json);
    expect_records_match(r.markers, j["markers"], import::append_marker_json);
    expect_records_match(r.graph, j["graph"], import::append_graph_json);
    expect_records_match(r.kernel_log, j["kernel_log"], import::append_log_json);
    std::string s;
    import::append_json_string(s, kAllControl);
    EXPECT_EQ(s, dump(json(kAllControl)));
}

TEST(JsonWrite, WriteJsonIsTheDomLaidOutOneRecordALine) {
    Report r = rich_report();
    std::ostringstream out;
    write_json(r, out);
    EXPECT_EQ(out.str(), layout_of_dom(to_json(r)));

    Report empty;
    std::ostringstream out2;
    write_json(empty, out2);
    EXPECT_EQ(out2.str(), layout_of_dom(to_json(empty)));
}

// More than one 1 MiB write: the pieces join without a byte lost or doubled.
TEST(JsonWrite, LargeArraysAreWrittenInPiecesThatJoinUp) {
    Report r;
    for (int i = 0; i < 20000; ++i) {
        IoctlRecord io;
        io.pid = i;
        io.cmd = 0x541B;
        io.name = "FIONREAD";
        io.enter_ns = 1000u * i;
        io.exit_ns = 1000u * i + 7;
        io.ret = 0;
        r.ioctls.push_back(io);
        r.markers.push_back({io.enter_ns, i, "nvtrace-phase: p" + std::to_string(i)});
    }
    std::ostringstream out;
    write_json(r, out);
    ASSERT_GT(out.str().size(), 2u << 20);
    EXPECT_EQ(out.str(), layout_of_dom(to_json(r)));
}

// The call writer threw nlohmann's type_error 316 ("invalid UTF-8 byte") on a comm or function name with a
// stray byte, where every other array of write_json() replaced it: report.json was cut off.
TEST(JsonWrite, InvalidUtf8InACallIsReplacedNotAnException) {
    Call c;
    c.comm = kInvalid;
    c.function = "f\xc3";  // a truncated sequence
    std::string got;
    ASSERT_NO_THROW(import::append_call_json(got, c));
    json back = json::parse(got);
    EXPECT_EQ(back["comm"], "bad \xEF\xBF\xBD byte");
    EXPECT_EQ(back["function"], "f\xEF\xBF\xBD");
}

// The writer decides per string whether it needs escaping by whole words, short strings and the last bytes of a
// long one by overlapping loads: every length from 0 to 40 with each kind of byte that needs escaping (a quote, a
// backslash, control bytes at both ends of the range, a byte >= 0x80) at every position, and the plain string
// itself, give nlohmann's bytes.
TEST(JsonWrite, EveryLengthAndPositionOfAByteToEscapeIsFound) {
    int checked = 0;
    for (std::size_t n = 0; n <= 40; ++n) {
        std::string plain;
        for (std::size_t i = 0; i < n; ++i)
            plain += static_cast<char>('a' + i % 26);
        std::vector<std::string> cases{plain};
        for (std::size_t k = 0; k < n; ++k)
            for (char bad : {'"', '\\', '\x01', '\x1f', '\x00', '\xc3'}) {
                std::string s = plain;
                s[k] = bad;
                cases.push_back(s);
            }
        for (const std::string& s : cases) {
            std::string got;
            import::append_json_string(got, s);
            EXPECT_EQ(got, json(s).dump(-1, ' ', false, json::error_handler_t::replace)) << "length " << n;
            ++checked;
        }
    }
    EXPECT_EQ(checked, 41 + 6 * (40 * 41 / 2));
}

// The number writer (8 digits at a time, split by multiplications in the lanes of one register) prints what
// std::to_string prints: every value below 10^5, a stride through 10^8 (where the 8-digit groups start), each
// length from 1 to 20 digits at its ends and with every digit value in every position, the unsigned and the
// signed limits; as a call's id (unsigned) and its retval (signed, negated too).
TEST(JsonWrite, NumbersOfEveryLengthArePrintedAsToString) {
    std::vector<std::uint64_t> values;
    for (std::uint64_t v = 0; v < 100000; ++v)
        values.push_back(v);
    for (std::uint64_t v = 100000; v < 300000000; v += 9973)
        values.push_back(v);
    std::uint64_t p = 1;
    for (int k = 1; k <= 20; ++k) {
        values.push_back(p - 1);
        values.push_back(p);
        values.push_back(p + 1);
        for (int digit = 0; digit <= 9; ++digit) {
            std::uint64_t v = 0;
            for (int i = 0; i < k; ++i)
                v = v * 10 + static_cast<std::uint64_t>((i * 7 + digit * 3 + k) % 10);
            values.push_back(v);
        }
        if (k < 20) p *= 10;
    }
    values.push_back(UINT64_MAX);
    values.push_back(static_cast<std::uint64_t>(INT64_MAX));
    std::size_t checked = 0;
    for (std::uint64_t v : values) {
        Call c;
        c.id = v;
        c.retval = static_cast<std::int64_t>(v);
        std::string got;
        import::append_call_json(got, c);
        ASSERT_NE(got.find("\"id\":" + std::to_string(v) + ","), std::string::npos) << v << ": " << got;
        ASSERT_NE(got.find("\"retval\":" + std::to_string(static_cast<std::int64_t>(v)) + "}"), std::string::npos)
            << v << ": " << got;
        c.retval = -static_cast<std::int64_t>(v & 0x7fffffffffffffffULL);
        got.clear();
        import::append_call_json(got, c);
        ASSERT_NE(got.find("\"retval\":" + std::to_string(*c.retval) + "}"), std::string::npos) << v << ": " << got;
        ++checked;
    }
    {
        Call c;
        c.retval = INT64_MIN;
        std::string got;
        import::append_call_json(got, c);
        EXPECT_NE(got.find("\"retval\":-9223372036854775808}"), std::string::npos) << got;
    }
    EXPECT_GT(checked, 130000u);
}
