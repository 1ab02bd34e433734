// report.json -> Report (include/nvtrace/report_io.hpp): exact round trips and errors that name the field.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../../../analyze/json_values.hpp"
#include "nvtrace/report_io.hpp"

using namespace nvtrace;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> report_files() {
    std::vector<std::string> out;
    for (const char* dir : {"/reports", "/golden"})
        for (const auto& e : fs::directory_iterator(std::string(NVTRACE_TEST_DATA) + dir))
            if (e.path().extension() == ".json") out.push_back(e.path().string());
    std::sort(out.begin(), out.end());
    return out;
}

nlohmann::json parse_file(const std::string& p) {
    std::ifstream in(p);
    return nlohmann::json::parse(in);
}

fs::path temp_dir(const std::string& name) {
    fs::path d = fs::temp_directory_path() / ("nvtrace-report-io-" + name + "-" + std::to_string(::getpid()));
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
}

}  // namespace

TEST(ReportIo, EveryFixtureAndGoldenRoundTripsExactly) {
    auto files = report_files();
    ASSERT_GE(files.size(), 15u);
    for (const auto& f : files) {
        SCOPED_TRACE(f);
        nlohmann::json j = parse_file(f);
        auto streamed = read_report_file(f);
        ASSERT_TRUE(streamed) << streamed.error().message;
        EXPECT_EQ(to_json(*streamed), j);
        auto dom = report_from_json(j);
        ASSERT_TRUE(dom) << dom.error().message;
        EXPECT_EQ(to_json(*dom), j);
    }
}

TEST(ReportIo, ErrorsNameTheField) {
    nlohmann::json j = parse_file(std::string(NVTRACE_TEST_DATA) + "/reports/baseline.json");
    j["calls"][3]["duration_ns"] = "12 us";
    auto r = report_from_json(j);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("calls[3].duration_ns"), std::string::npos) << r.error().message;

    fs::path d = temp_dir("errors");
    std::ofstream(d / "bad.json") << j.dump();
    auto s = read_report_file((d / "bad.json").string());
    ASSERT_FALSE(s);
    EXPECT_NE(s.error().message.find("bad.json: calls[3].duration_ns"), std::string::npos) << s.error().message;

    j = parse_file(std::string(NVTRACE_TEST_DATA) + "/reports/baseline.json");
    j["schema"] = "nvtrace.report/99";
    auto wrong = report_from_json(j);
    ASSERT_FALSE(wrong);
    EXPECT_NE(wrong.error().message.find("schema"), std::string::npos);

    std::ofstream(d / "trunc.json") << "{\"schema\":\"nvtrace.report/1\",\"calls\":[{\"id\":1";
    auto t = read_report_file((d / "trunc.json").string());
    ASSERT_FALSE(t);
    EXPECT_NE(t.error().message.find("not valid JSON"), std::string::npos);
    fs::remove_all(d);
}

TEST(ReportIo, LoadsCaptureDirectoriesAndTraceFiles) {
    fs::path d = temp_dir("capture");
    fs::copy_file(std::string(NVTRACE_TEST_DATA) + "/reports/baseline.json", d / "report.json");
    auto dir = load_report_input(d.string());
    ASSERT_TRUE(dir) << dir.error().message;
    EXPECT_EQ(dir->calls.size(), 24u);

    auto trace = load_report_input(std::string(NVTRACE_TEST_DATA) + "/cases/fgraph-irq-nested-module-suffix.txt");
    ASSERT_TRUE(trace) << trace.error().message;
    EXPECT_FALSE(trace->calls.empty());
    EXPECT_EQ(trace->source.kind, "file");

    fs::create_directories(d / "empty");
    auto empty = load_report_input((d / "empty").string());
    ASSERT_FALSE(empty);
    EXPECT_NE(empty.error().message.find("not a capture directory"), std::string::npos);
    EXPECT_FALSE(load_report_input((d / "missing.json").string()));
    fs::remove_all(d);
}

// read_report_file fills `calls` straight from the parser's events (no DOM per call) and reads the file in
// 1 MiB blocks: these hold it to report_from_json's results and messages, which build a DOM.
namespace {

nlohmann::json baseline() {
    return parse_file(std::string(NVTRACE_TEST_DATA) + "/reports/baseline.json");
}

Result<Report> read_text(const fs::path& dir, const std::string& name, const std::string& text) {
    std::ofstream(dir / name, std::ios::binary) << text;
    return read_report_file((dir / name).string());
}

}  // namespace

TEST(ReportIo, StreamedCallsMatchTheDomReaderForEveryFieldShape) {
    nlohmann::json j = baseline();
    auto& calls = j["calls"];
    // Optional fields missing, nulls, defaults, values at the edges of their types, unknown keys holding
    // objects and arrays (skipped, with keys inside them named like call fields), and duplicate keys (the last
    // one wins, as in a DOM).
    calls[0].erase("comm");
    calls[0].erase("cpu");
    calls[0].erase("module");
    calls[0].erase("irq");
    calls[0].erase("entry_seen");
    calls[1]["module"] = nullptr;
    calls[1]["retval"] = -22;
    calls[1]["cpu"] = nullptr;
    calls[2]["retval"] = 18446744073709551615ull;
    calls[2]["extra"] = {{"function", 5}, {"id", {1, 2, {{"x", nullptr}}}}};
    calls[3]["also"] = {nlohmann::json::object(), nlohmann::json::array(), 1.5, "s", true};
    calls[4]["entry_ns"] = 0;
    calls[4]["phase"] = nullptr;
    calls[5]["depth"] = -1;
    std::string text = j.dump();
    const std::string dup = "\"function\":\"first_then_replaced\",";
    text.insert(text.find("{", text.find("\"calls\"")) + 1, dup);  // calls[0] holds "function" twice
    j = nlohmann::json::parse(text);

    fs::path d = temp_dir("shapes");
    auto streamed = read_text(d, "shapes.json", text);
    ASSERT_TRUE(streamed) << streamed.error().message;
    auto dom = report_from_json(j);
    ASSERT_TRUE(dom) << dom.error().message;
    EXPECT_EQ(to_json(*streamed), to_json(*dom));
    EXPECT_EQ(streamed->calls[0].function, dom->calls[0].function);
    EXPECT_NE(streamed->calls[0].function, "first_then_replaced");
    EXPECT_EQ(streamed->calls[0].cpu, -1);
    EXPECT_EQ(streamed->calls[0].comm, "");
    EXPECT_FALSE(streamed->calls[1].module);
    EXPECT_EQ(streamed->calls[1].retval, -22);
    EXPECT_EQ(streamed->calls[2].retval, static_cast<std::int64_t>(18446744073709551615ull));
    fs::remove_all(d);
}

TEST(ReportIo, WrongTypeOfACallFieldNamesTheFileAndFieldLikeTheDomReader) {
    using nlohmann::json;
    const std::vector<std::pair<const char*, json>> cases = {
        {"id", "7"},
        {"id", -1},
        {"id", nullptr},
        {"id", 1.5},
        {"parent", "1"},
        {"parent", -3},
        {"cpu", "2"},
        {"cpu", 2.0},
        {"pid", true},
        {"comm", 5},
        {"depth", json::array()},
        {"function", nullptr},
        {"function", 1},
        {"module", false},
        {"entry_ns", -1},
        {"duration_ns", "12 us"},
        {"duration_ns", json::object()},
        {"retval", "0"},
        {"retval", 0.5},
        {"irq", 0},
        {"entry_seen", "yes"},
        {"exit_seen", 1},
        {"phase", json::array({"a"})},
    };
    fs::path d = temp_dir("types");
    for (const auto& [key, value] : cases) {
        json j = baseline();
        j["calls"][3][key] = value;
        SCOPED_TRACE(std::string(key) + " = " + value.dump());
        auto dom = report_from_json(j);
        ASSERT_FALSE(dom);
        auto streamed = read_text(d, "bad.json", j.dump());
        ASSERT_FALSE(streamed);
        EXPECT_EQ(streamed.error().message, (d / "bad.json").string() + ": " + dom.error().message);
        EXPECT_NE(streamed.error().message.find(std::string("calls[3].") + key + ": "), std::string::npos)
            << streamed.error().message;
    }
    // Required fields missing.
    for (const char* key : {"id", "function"}) {
        json j = baseline();
        j["calls"][5].erase(key);
        auto streamed = read_text(d, "missing.json", j.dump());
        ASSERT_FALSE(streamed);
        EXPECT_EQ(streamed.error().message, (d / "missing.json").string() + ": calls[5]." + key + ": missing");
    }
    // The first wrong field in call_from's order is the one named, whatever the order in the file.
    json j = baseline();
    j["calls"][2]["phase"] = 1;
    j["calls"][2]["cpu"] = "x";
    auto streamed = read_text(d, "two.json", j.dump());
    ASSERT_FALSE(streamed);
    EXPECT_EQ(streamed.error().message, (d / "two.json").string() + ": calls[2].cpu: expected an integer");
    fs::remove_all(d);
}

TEST(ReportIo, TruncatedFileIsInvalidJsonWithItsPositionAtEveryCut) {
    const std::string text = baseline().dump(1);
    fs::path d = temp_dir("cuts");
    for (std::size_t cut = 0; cut < text.size(); cut += 97) {
        SCOPED_TRACE(cut);
        auto r = read_text(d, "cut.json", text.substr(0, cut));
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error().message.rfind((d / "cut.json").string() + ": not valid JSON: ", 0), 0u)
            << r.error().message;
        EXPECT_NE(r.error().message.find("line "), std::string::npos) << r.error().message;
        EXPECT_NE(r.error().message.find("column "), std::string::npos) << r.error().message;
    }
    // Trailing garbage after the report, and garbage inside a call.
    auto trailing = read_text(d, "trailing.json", text + "\n}");
    ASSERT_FALSE(trailing);
    EXPECT_NE(trailing.error().message.find("not valid JSON"), std::string::npos) << trailing.error().message;
    std::string inside = text;
    inside.replace(inside.find("\"duration_ns\": 40000"), 20, "\"duration_ns\": 4x000");
    auto bad = read_text(d, "inside.json", inside);
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message.find("inside.json: not valid JSON: "), std::string::npos) << bad.error().message;
    fs::remove_all(d);
}

TEST(ReportIo, SectionsOfTheWrongShapeAreErrors) {
    fs::path d = temp_dir("shape");
    struct Case {
        std::string text;
        std::string message;
    };
    nlohmann::json j = baseline();
    nlohmann::json non_object = j;
    non_object["calls"].push_back(5);
    nlohmann::json nested = j;
    nested["calls"].push_back(nlohmann::json::array({j["calls"][0]}));
    nlohmann::json object_calls = j;
    object_calls["calls"] = {{"x", j["calls"][0]}};
    nlohmann::json ioctl_bad = j;
    ioctl_bad["ioctls"][1]["cmd"] = "0x1";
    nlohmann::json no_schema = j;
    no_schema.erase("schema");
    const std::string last = std::to_string(j["calls"].size());
    const std::vector<Case> cases = {
        {non_object.dump(), "calls[" + last + "]: expected an object, found number"},
        {nested.dump(), "calls[" + last + "]: expected an object, found array"},
        {object_calls.dump(), "calls: expected an array"},
        {ioctl_bad.dump(), "ioctls[1].cmd: expected an unsigned integer"},
        {no_schema.dump(), "schema: expected \"nvtrace.report/1\", found nothing"},
        {"[" + j.dump() + "]", "(top): expected a JSON object"},
        {"5", "(top): expected a JSON object"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.message);
        auto r = read_text(d, "shape.json", c.text);
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error().message, (d / "shape.json").string() + ": " + c.message);
        // The DOM reader fails too, with the same message.
        auto dom = report_from_json(nlohmann::json::parse(c.text));
        ASSERT_FALSE(dom);
        EXPECT_EQ(dom.error().message, c.message);
    }
    auto empty = read_text(d, "empty.json", "");
    ASSERT_FALSE(empty);
    EXPECT_NE(empty.error().message.find("empty.json: not valid JSON"), std::string::npos) << empty.error().message;
    auto missing = read_report_file((d / "missing.json").string());
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.error().message.find("missing.json: cannot open: "), std::string::npos);
    fs::remove_all(d);
}

TEST(ReportIo, LargeReportAcrossManyReadBlocksMatchesTheDomReader) {
    // 20,000 calls with long names: several 1 MiB read blocks (strings, numbers and keys cut at block edges)
    // and several blocks of gathered calls.
    nlohmann::json j = baseline();
    nlohmann::json one = j["calls"][1];
    auto& calls = j["calls"];
    for (std::uint64_t i = 0; i < 20000; ++i) {
        one["id"] = 1000 + i;
        one["function"] = "function_with_a_rather_long_name_" + std::to_string(i * 7919 % 1000);
        one["duration_ns"] = i * 31;
        one["retval"] = i % 3 == 0 ? nlohmann::json(nullptr) : nlohmann::json(-static_cast<std::int64_t>(i % 40));
        calls.push_back(one);
    }
    fs::path d = temp_dir("large");
    std::string text = j.dump(1);
    ASSERT_GT(text.size(), 3u << 20);
    auto streamed = read_text(d, "large.json", text);
    ASSERT_TRUE(streamed) << streamed.error().message;
    ASSERT_EQ(streamed->calls.size(), calls.size());
    EXPECT_EQ(to_json(*streamed), j);
    fs::remove_all(d);
}

TEST(ReportIo, SavedReportInputsAreToldFromTraceFiles) {
    fs::path d = temp_dir("kind");
    EXPECT_TRUE(is_saved_report_input(d.string()));
    EXPECT_TRUE(is_saved_report_input(std::string(NVTRACE_TEST_DATA) + "/reports/baseline.json"));
    std::ofstream(d / "spaced.json") << " \n\t{}";
    EXPECT_TRUE(is_saved_report_input((d / "spaced.json").string()));
    EXPECT_FALSE(is_saved_report_input(std::string(NVTRACE_TEST_DATA) + "/cases/fgraph-irq-nested-module-suffix.txt"));
    fs::remove_all(d);
}

// A saved report whose call was its own parent sent `nvtrace diff` round forever and `nvtrace check` (and diff of
// the file with itself) into a stack overflow (SIGSEGV); two calls each other's parent did the same. Both readers
// now refuse a call that is its own parent, a parent with a larger id that is in the report (a cycle), and a call
// id listed twice, naming the call. A parent missing from the report is still read (the call heads its tree).
TEST(ReportIo, CallThatIsItsOwnParentOrInACycleIsRefusedByBothReaders) {
    const std::string base = std::string(NVTRACE_TEST_DATA) + "/reports/baseline.json";
    fs::path d = temp_dir("cycles");
    struct Case {
        const char* name;
        std::function<void(nlohmann::json&)> edit;
        const char* message;
    };
    const std::vector<Case> cases{
        {"self", [](nlohmann::json& j) { j["calls"][0]["parent"] = j["calls"][0]["id"]; },
         "calls[0]: call 1 is its own parent"},
        {"cycle",
         [](nlohmann::json& j) {
             j["calls"][0]["parent"] = j["calls"][1]["id"];
             j["calls"][1]["parent"] = j["calls"][0]["id"];
         },
         "calls[0]: parent 2 of call 1 has a larger id"},
        {"duplicate",
         [](nlohmann::json& j) {
             j["calls"][1]["id"] = std::uint64_t{7};
             j["calls"][2]["id"] = std::uint64_t{7};
             for (auto& c : j["calls"])
                 c["parent"] = nullptr;
         },
         "calls[2]: id 7 appears twice"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.name);
        nlohmann::json j = parse_file(base);
        ASSERT_GE(j["calls"].size(), 3u);
        c.edit(j);
        auto dom = report_from_json(j);
        ASSERT_FALSE(dom);
        EXPECT_NE(dom.error().message.find(c.message), std::string::npos) << dom.error().message;
        const fs::path f = d / (std::string(c.name) + ".json");
        std::ofstream(f) << j.dump();
        auto streamed = read_report_file(f.string());
        ASSERT_FALSE(streamed);
        EXPECT_NE(streamed.error().message.find(f.string() + ": " + c.message), std::string::npos)
            << streamed.error().message;
        EXPECT_EQ(streamed.error().code, ExitCode::usage);
    }
    nlohmann::json dangling = parse_file(base);
    dangling["calls"][2]["parent"] = std::uint64_t{99999};
    auto read = report_from_json(dangling);
    EXPECT_TRUE(read) << (read ? "" : read.error().message);
    // Every fixture and golden report (what nvtrace writes) still reads: checked by the round-trip test above.
    fs::remove_all(d);
}

// report.json lists its calls by id: a child listed before its parent was read, and the diff and the exports (which
// find a parent among the calls before it) made it a root while tree and check did not. Both readers refuse it, and
// a source or environment that is not an object (it was read as {} and written back so).
TEST(ReportIo, ChildListedBeforeItsParentOrAHeadThatIsNotAnObjectIsRefusedByBothReaders) {
    const nlohmann::json base = parse_file(std::string(NVTRACE_TEST_DATA) + "/reports/baseline.json");
    fs::path d = temp_dir("order");
    auto both = [&](const nlohmann::json& j) {
        auto dom = report_from_json(j);
        const fs::path f = d / "r.json";
        std::ofstream(f) << j.dump();
        auto streamed = read_report_file(f.string());
        auto sunk = read_report_file(f.string(), [](Call&&) {});
        EXPECT_FALSE(streamed || sunk);
        if (!dom && !streamed && !sunk) {
            EXPECT_EQ(f.string() + ": " + dom.error().message, streamed.error().message);
            EXPECT_EQ(sunk.error().message, streamed.error().message);
        }
        return dom ? std::string("<read>") : dom.error().message;
    };
    nlohmann::json swapped = base;
    ASSERT_EQ(swapped["calls"][4]["parent"], swapped["calls"][3]["id"]);
    std::swap(swapped["calls"][3], swapped["calls"][4]);
    EXPECT_EQ(both(swapped),
              "calls[4]: id 4 after id 5: the calls must be listed by id, parents before their children");
    nlohmann::json reversed = base;
    std::reverse(reversed["calls"].begin(), reversed["calls"].end());
    EXPECT_EQ(both(reversed).rfind("calls[", 0), 0u);
    for (const char* key : {"source", "environment"}) {
        nlohmann::json j = base;
        j[key] = "hello";
        EXPECT_EQ(both(j), std::string(key) + ": expected an object, found string");
        j[key] = nlohmann::json::array({"a"});
        EXPECT_EQ(both(j), std::string(key) + ": expected an object, found array");
    }
    // Sparse ids in increasing order still read (ids need not be 1..N).
    nlohmann::json sparse = base;
    for (auto& c : sparse["calls"]) {
        c["id"] = c["id"].get<std::uint64_t>() * 10;
        if (!c["parent"].is_null()) c["parent"] = c["parent"].get<std::uint64_t>() * 10;
    }
    EXPECT_TRUE(report_from_json(sparse));
    fs::remove_all(d);
}

// Three shapes of a hostile but valid (or nearly valid) report, each read alike by the held reader, the sink's
// reader (nvtrace diff's, through simdjson) and the DOM reader of stdin: an element of an array section that is
// not an object is named by its index ("calls: expected an array of objects" named none); a number no double holds
// (JSON's grammar, RFC 8259 section 6, has no bound; nlohmann refuses 1e400 with out_of_range.406 and no position)
// is named with its line and column; a UTF-8 byte order mark before the '{' (written by Windows editors; RFC 8259
// section 8.1 lets a parser ignore it) is skipped.
TEST(ReportIo, ElementThatIsNotAnObjectANumberOutOfRangeAndAByteOrderMarkAreReadAlikeByEveryReader) {
    const nlohmann::json base = parse_file(std::string(NVTRACE_TEST_DATA) + "/reports/baseline.json");
    fs::path d = temp_dir("hostile");
    const fs::path f = d / "r.json";
    // The message of the file readers (the same for both), or "" when they read it; the stdin reader must agree.
    auto both = [&](const std::string& text) {
        std::ofstream(f, std::ios::binary) << text;
        auto held = read_report_file(f.string());
        auto sunk = read_report_file(f.string(), [](Call&&) {});
        EXPECT_EQ(bool(held), bool(sunk));
        auto in = saved_report_from_text(text, f.string());
        EXPECT_TRUE(in);
        if (in) {
            EXPECT_EQ(bool(*in), bool(held));
        }
        if (held || sunk) return std::string();
        EXPECT_EQ(sunk.error().message, held.error().message);
        return held.error().message;
    };
    const std::vector<std::pair<nlohmann::json, std::string>> not_objects = {
        {7, "number"}, {"x", "string"}, {nullptr, "null"}, {nlohmann::json::array(), "array"}};
    for (const char* section : {"calls", "ioctls", "kernel_log", "markers"}) {
        for (const auto& [bad, type] : not_objects) {
            nlohmann::json j = base;
            j[section] = nlohmann::json::array();
            j[section].push_back(bad);
            EXPECT_EQ(both(j.dump(1)), f.string() + ": " + section + "[0]: expected an object, found " + type);
        }
    }
    // The third call replaced: the two before it were read (and given to the sink) first.
    nlohmann::json third = base;
    third["calls"][2] = true;
    EXPECT_EQ(both(third.dump()), f.string() + ": calls[2]: expected an object, found boolean");

    // 1e400 where no field reads it, and as a call's duration: on line 3 of the one-space dump, after `"calls": [`.
    nlohmann::json head = base;
    head["zz"] = "QQ";
    std::string text = head.dump();
    text.replace(text.find("\"QQ\""), 4, "1e400");
    EXPECT_EQ(both(text).rfind(f.string() + ": not valid JSON: the number 1e400 at line 1, column ", 0), 0u)
        << both(text);
    std::string in_call = base.dump(1);
    const std::size_t at = in_call.find("\"duration_ns\": ");
    ASSERT_NE(at, std::string::npos);
    const std::size_t line = static_cast<std::size_t>(std::count(in_call.begin(), in_call.begin() + at, '\n')) + 1;
    const std::size_t col = at - in_call.rfind('\n', at) + std::string("\"duration_ns\": 1e400").size() - 1;
    in_call.replace(at, in_call.find_first_of(",\n", at) - at, "\"duration_ns\": 1e400");
    EXPECT_EQ(both(in_call), fmt::format("{}: not valid JSON: the number 1e400 at line {}, column {} is out of the "
                                         "range of a double (numbers are read as 64-bit integers or doubles)",
                                         f.string(), line, col));
    // A double that fits is read.
    std::string fits = in_call;
    fits.replace(fits.find("1e400"), 5, "1e300");
    EXPECT_NE(both(fits), "");  // a float is not an unsigned duration: a field error, not a JSON one
    EXPECT_EQ(both(fits).find("not valid JSON"), std::string::npos);

    // A byte order mark before the '{': read as without it, by every reader, and told apart from a trace file.
    EXPECT_EQ(both("\xef\xbb\xbf" + base.dump(1)), "");
    auto with_bom = read_report_file(f.string());
    ASSERT_TRUE(with_bom);
    EXPECT_EQ(to_json(*with_bom), to_json(*report_from_json(base)));
    EXPECT_TRUE(is_saved_report_input(f.string()));
    auto loaded = load_report_input(f.string());
    ASSERT_TRUE(loaded) << loaded.error().message;
    EXPECT_EQ(loaded->calls.size(), base["calls"].size());
    fs::remove_all(d);
}

// read_report_file with a call sink (what nvtrace diff reads through) gives the calls one by one in file order,
// holds none, and refuses every bad file the held reader refuses with the same message naming the file and the
// call: wrong field types, a call that is its own parent, a cycle, an id listed twice (also after the ids stop being
// 1..N part way), truncated JSON; a call already given to the sink does not make the file valid.
TEST(ReportIo, CallSinkGetsEveryCallInOrderAndTheSameErrors) {
    fs::path d = temp_dir("sink");
    auto both = [&](const std::string& name, const std::string& text) {
        const fs::path f = d / name;
        std::ofstream(f) << text;
        auto held = read_report_file(f.string());
        std::vector<Call> got;
        auto streamed = read_report_file(f.string(), [&](Call&& c) { got.push_back(std::move(c)); });
        EXPECT_EQ(bool(held), bool(streamed)) << name;
        if (held && streamed) {
            EXPECT_TRUE(streamed->calls.empty());
            EXPECT_EQ(to_json(*streamed)["calls"], nlohmann::json::array());
            Report with = *streamed;
            with.calls = std::move(got);
            EXPECT_EQ(to_json(with), to_json(*held)) << name;
        } else if (!held && !streamed) {
            EXPECT_EQ(streamed.error().message, held.error().message) << name;
            EXPECT_EQ(streamed.error().code, held.error().code);
        }
        return streamed ? std::string() : streamed.error().message;
    };
    for (const auto& p : report_files()) {
        std::ifstream in(p);
        std::stringstream ss;
        ss << in.rdbuf();
        EXPECT_EQ(both(fs::path(p).filename().string(), ss.str()), "") << p;
    }
    using nlohmann::json;
    const json base = baseline();
    auto edited = [&](const std::function<void(json&)>& edit) {
        json j = base;
        edit(j);
        return j.dump(1);
    };
    const std::string f = (d / "bad.json").string();
    EXPECT_EQ(both("bad.json", edited([](json& j) { j["calls"][3]["function"] = 1; })),
              f + ": calls[3].function: expected a string");
    EXPECT_EQ(both("bad.json", edited([](json& j) { j["calls"][4]["parent"] = j["calls"][4]["id"]; })),
              f + ": calls[4]: call 5 is its own parent");
    EXPECT_EQ(both("bad.json", edited([](json& j) {
                       j["calls"][0]["parent"] = j["calls"][1]["id"];
                       j["calls"][1]["parent"] = j["calls"][0]["id"];
                   })),
              f + ": calls[0]: parent 2 of call 1 has a larger id (a parent is entered before its children: a cycle?)");
    // Ids 1..3, then 50, then 3 again: the set of ids starts part way and still sees the first three.
    EXPECT_EQ(both("bad.json", edited([](json& j) {
                       j["calls"][3]["id"] = std::uint64_t{50};
                       j["calls"][4]["id"] = std::uint64_t{3};
                       for (auto& c : j["calls"])
                           c["parent"] = nullptr;
                   })),
              f + ": calls[4]: id 3 appears twice");
    // A larger parent that is not in the report is allowed; one that is (after the ids stop being 1..N) is not.
    EXPECT_EQ(both("ok.json", edited([](json& j) { j["calls"][2]["parent"] = std::uint64_t{99999}; })), "");
    EXPECT_EQ(
        both("bad.json", edited([](json& j) {
                 j["calls"][3]["id"] = std::uint64_t{50};
                 j["calls"][2]["parent"] = std::uint64_t{50};
             })),
        f + ": calls[2]: parent 50 of call 3 has a larger id (a parent is entered before its children: a cycle?)");
    const std::string text = base.dump(1);
    const std::string cut = both("bad.json", text.substr(0, text.size() / 2));
    EXPECT_EQ(cut.rfind(f + ": not valid JSON: ", 0), 0u) << cut;

    // The sink's reader reads `calls` through simdjson in chunks of about 1 MiB and leaves to nlohmann what the two
    // could read differently; here in the last call of a report of several chunks, so that the calls of the first
    // chunks were given already and nlohmann's reading goes on past them: a \u escape, "-0" (an integer 0 to
    // nlohmann: a retval is read, an id is refused), a number above 2^64 in a key no field reads (a float to
    // nlohmann), an unescaped control character (refused by nlohmann), bad JSON at the end.
    json large = base;
    large["calls"] = json::array();
    const std::size_t per_copy = base["calls"].size();
    for (std::uint64_t k = 0; k < 400; ++k)
        for (json c : base["calls"]) {
            c["id"] = c["id"].get<std::uint64_t>() + k * per_copy;
            if (!c["parent"].is_null()) c["parent"] = c["parent"].get<std::uint64_t>() + k * per_copy;
            large["calls"].push_back(std::move(c));
        }
    json& last = large["calls"].back();
    last["function"] = "rm_ioctl_\u00e9QQFUNCQQ";
    last["retval"] = std::uint64_t{987654321};
    last["zz_not_a_field"] = std::uint64_t{4242424242};
    const std::string big = large.dump(1, ' ', true);
    ASSERT_GT(big.size(), std::size_t{3} << 20);
    auto replaced = [&](std::string t, const std::string& what, const std::string& with) {
        const auto at = t.rfind(what);
        EXPECT_NE(at, std::string::npos) << what;
        return at == std::string::npos ? t : t.replace(at, what.size(), with);
    };
    EXPECT_EQ(both("large.json", big), "");
    EXPECT_EQ(both("large.json", replaced(big, "987654321", "-0")), "");
    EXPECT_EQ(both("large.json", replaced(big, "4242424242", "18446744073709551616")), "");
    const std::string last_id = std::to_string(per_copy * 400);
    const std::string n = std::to_string(per_copy * 400 - 1);
    EXPECT_EQ(both("large.json", replaced(big, "\"id\": " + last_id, "\"id\": -0")),
              (d / "large.json").string() + ": calls[" + n + "].id: expected an unsigned integer");
    EXPECT_NE(both("large.json", replaced(big, "QQFUNCQQ", "\x01")).find("not valid JSON"), std::string::npos);
    EXPECT_NE(both("large.json", big.substr(0, big.size() - 3)).find("not valid JSON"), std::string::npos);

    // A call of several read blocks (1 MiB each): a function name of 1,500,000 escaped quotes and a key no field
    // reads holding 1,000,000 negative numbers, so that blocks end after a backslash and after a minus sign (the
    // padding key before `calls` moves the block ends by one byte per try).
    json huge = base;
    huge["calls"][2]["function"] = std::string(1'500'000, '"');
    huge["calls"][2]["zz_not_a_field"] = std::vector<int>(1'000'000, -7);
    for (std::size_t pad = 0; pad < 3; ++pad) {
        huge["aaa_padding"] = std::string(pad, 'x');  // keys are written in order: before "calls"
        EXPECT_EQ(both("huge.json", huge.dump()), "") << pad;
    }
    fs::remove_all(d);
}

// A fresh user's finding: a saved report with "complete": true (edited by hand, or another producer's) beside
// data_loss diagnostics printed "complete: yes" under the diagnostics it listed, while `check` treated the same
// data as lost. Such a report is read as incomplete, a reason for each count.
// A fresh user's finding: a saved report with "complete": true whose calls include one that never returned
// (exit_seen false: the builder counts it as unclosed_call, data_loss) printed "complete: yes". Both readers (the
// file's, used by every command, and the DOM's) say incomplete, naming the first such call.
TEST(ReportIo, CompleteBesideACallThatNeverReturnedIsNotBelieved) {
    fs::path d = temp_dir("said-complete-unclosed");
    nlohmann::json j = baseline();
    j["completeness"]["complete"] = true;
    j["completeness"]["reasons"] = nlohmann::json::array();
    j["calls"][3]["exit_seen"] = false;
    j["calls"][5]["exit_seen"] = false;
    const std::string want = fmt::format(
        "2 calls without their return (exit_seen false, first: call {}; the saved "
        "report said complete)",
        j["calls"][3]["id"].get<std::uint64_t>());
    auto r = read_text(d, "said.json", j.dump());
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_FALSE(r->completeness.complete);
    ASSERT_EQ(r->completeness.reasons.size(), 1u);
    EXPECT_EQ(r->completeness.reasons[0], want);
    auto dom = report_from_json(j);
    ASSERT_TRUE(dom) << dom.error().message;
    EXPECT_FALSE(dom->completeness.complete);
    ASSERT_EQ(dom->completeness.reasons.size(), 1u);
    EXPECT_EQ(dom->completeness.reasons[0], want);
    // A report that says it is incomplete keeps its own reasons.
    j["completeness"]["complete"] = false;
    j["completeness"]["reasons"] = nlohmann::json::array({"2 calls without their return"});
    auto kept = read_text(d, "kept.json", j.dump());
    ASSERT_TRUE(kept) << kept.error().message;
    EXPECT_EQ(kept->completeness.reasons, std::vector<std::string>{"2 calls without their return"});
    fs::remove_all(d);
}

// The fresh user's next edits: "complete": true with the diagnostics emptied but the derived counts left
// (unreadable_lines, elided_spans, orphan_returns, unclosed_calls), with gaps listed, or with a call whose entry
// was not seen: each printed "complete: yes".
TEST(ReportIo, CompleteBesideDerivedCountsGapsOrUnenteredCallsIsNotBelieved) {
    fs::path d = temp_dir("said-complete-derived");
    auto said_complete = [] {
        nlohmann::json j = baseline();
        j["completeness"]["complete"] = true;
        j["completeness"]["reasons"] = nlohmann::json::array();
        j["completeness"]["diagnostics"] = nlohmann::json::array();
        j["completeness"]["gaps"] = nlohmann::json::array();
        for (auto& c : j["calls"]) {
            c["exit_seen"] = true;
            c["entry_seen"] = true;
        }
        return j;
    };
    const std::string said = " (the saved report said complete)";
    for (const auto& [key, reason] :
         {std::pair<const char*, const char*>{"unreadable_lines", "lines could not be read"},
          {"elided_spans", "elided spans"},
          {"orphan_returns", "returns without their entry"},
          {"unclosed_calls", "calls without their return"}}) {
        nlohmann::json j = said_complete();
        j["completeness"][key] = 3;
        auto r = read_text(d, "derived.json", j.dump());
        ASSERT_TRUE(r) << r.error().message;
        EXPECT_FALSE(r->completeness.complete) << key;
        EXPECT_EQ(r->completeness.reasons, std::vector<std::string>{std::string("3 ") + reason + said}) << key;
    }
    nlohmann::json g = said_complete();
    g["completeness"]["gaps"] = nlohmann::json::array({{{"kind", "lost_events"}, {"cpu", 1}, {"count", 4}}});
    auto rg = read_text(d, "gaps.json", g.dump());
    ASSERT_TRUE(rg) << rg.error().message;
    EXPECT_EQ(rg->completeness.reasons,
              std::vector<std::string>{"1 place where data is missing (completeness.gaps)" + said});
    nlohmann::json e = said_complete();
    e["calls"][0]["entry_seen"] = false;
    auto re = read_text(d, "entry.json", e.dump());
    ASSERT_TRUE(re) << re.error().message;
    EXPECT_EQ(re->completeness.reasons,
              std::vector<std::string>{fmt::format("1 call without its entry (entry_seen false, first: call {}; the "
                                                   "saved report said complete)",
                                                   e["calls"][0]["id"].get<std::uint64_t>())});
    // Nothing of the kind: complete as saved.
    auto ok = read_text(d, "ok.json", said_complete().dump());
    ASSERT_TRUE(ok) << ok.error().message;
    EXPECT_TRUE(ok->completeness.complete);
    fs::remove_all(d);
}

TEST(ReportIo, CompleteBesideCountsOfLostDataIsNotBelieved) {
    fs::path d = temp_dir("said-complete");
    nlohmann::json j = baseline();
    j["completeness"]["complete"] = true;
    j["completeness"]["reasons"] = nlohmann::json::array();
    j["completeness"]["lost_events"] = 3;
    j["completeness"]["diagnostics"] = nlohmann::json::array(
        {{{"name", "strace_truncated_line"}, {"severity", "data_loss"}, {"count", 1}, {"first_example", "s:5: cut"}},
         {{"name", "starts_mid_tree"}, {"severity", "info"}, {"count", 2}, {"first_example", "f:1: x"}},
         {{"name", "other_tools_loss"}, {"severity", "data_loss"}, {"count", 4}, {"first_example", ""}}});
    auto r = read_text(d, "said.json", j.dump());
    ASSERT_TRUE(r) << r.error().message;
    const Completeness& c = r->completeness;
    EXPECT_FALSE(c.complete);
    ASSERT_EQ(c.reasons.size(), 3u);
    EXPECT_EQ(c.reasons[0], "3 events lost (the saved report said complete)");
    EXPECT_EQ(c.reasons[1], "strace_truncated_line: 1 (s:5: cut) (the saved report said complete)");
    EXPECT_EQ(c.reasons[2].rfind("other_tools_loss: 4", 0), 0u);
    // Without such counts, complete stays as saved.
    nlohmann::json k = baseline();
    k["completeness"]["complete"] = true;
    k["completeness"]["reasons"] = nlohmann::json::array();
    k["completeness"]["lost_events"] = 0;
    k["completeness"]["diagnostics"] = nlohmann::json::array(
        {{{"name", "starts_mid_tree"}, {"severity", "info"}, {"count", 2}, {"first_example", "f:1: x"}}});
    auto ok = read_text(d, "ok.json", k.dump());
    ASSERT_TRUE(ok) << ok.error().message;
    EXPECT_TRUE(ok->completeness.complete);
    fs::remove_all(d);
}
