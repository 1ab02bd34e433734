// nvtrace/expect.hpp: documented paths (expectations) and the checker (DESIGN.md section 6).
//
// An expectations file says what a run must show, in the field's own words: call chains with alternatives
// by driver version, ioctls in order, kernel-log kinds and fields, NV_STATUS values, the program's own
// results, must-not-appear rules and the phase each belongs to. The format is line based and documented in
// docs/expectations.md; parse errors name "file:line:col".
//
// The checker is pure analysis: it reads a Report (report.hpp) and gives each check "pass", "fail" (with the
// closest evidence) or "inconclusive" (with the data that was missing). Missing data never passes: lost
// events, a report without function_graph data, a function the driver cannot show to ftrace, a phase the
// program never marked, a driver too old to print a line all make a check inconclusive.
// Thread-safety: pure functions on value types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nvtrace/error.hpp"
#include "nvtrace/knowledge.hpp"
#include "nvtrace/report.hpp"

namespace nvtrace {

inline constexpr const char* kExpectFormat = "nvtrace.expect/1";

// "driver >= 595.44.02", "kernel < 6.5", "flavour open". Driver: the NVIDIA module version of the report's
// environment; kernel: the release's leading numbers ("6.1.0-56-amd64" -> 6.1.0).
struct Condition {
    enum class Subject : std::uint8_t { driver, kernel, flavour };
    enum class Op : std::uint8_t { lt, le, eq, ne, ge, gt };
    Subject subject = Subject::driver;
    Op op = Op::ge;
    DriverVersion version;
    std::string flavour;  // "open" or "proprietary" (Subject::flavour)
    std::string text;     // as written, for messages
};

// One step of a call chain and how it hangs under the previous step.
struct ChainStep {
    std::string function;
    bool direct = true;  // '>' : called directly by the previous step; '>>' : anywhere below it
};

// One assertion line of a check.
struct Fact {
    enum class Kind : std::uint8_t {
        chain,   // chain F1 > F2 >> F3   (call F = a one-step chain)
        ioctls,  // ioctls N1, N2, ...    (in this order; others may come between)
        ioctl,   // ioctl NAME [hclass=X] [status=S] [ret=R] [calls=F] [fd=PREFIX]
        log,     // log KIND [field=value]...
        result,  // result KEY = VALUE    (the program's "nvtrace-result: KEY=VALUE" marker)
        phases,  // phases P1, P2, ...    (phase markers in this order)
        api,     // api FUNCTION [= RESULT]  (an API call from uprobes, report.api_calls; RESULT a CUresult /
                 // cudaError_t name or a number)
    };
    Kind kind = Kind::chain;
    bool absent = false;       // "absent ...": must not appear
    bool alternative = false;  // "or ...": an alternative to the fact before it
    std::vector<ChainStep> chain;
    std::vector<std::string> names;                           // ioctls / phases lists; ioctl name; log kind; result key
    std::vector<std::pair<std::string, std::string>> fields;  // ioctl / log key=value; result value as ("", v)
    std::vector<Condition> when;                              // all must hold
    // "chain ... in api F" / "ioctl ... in api F": only the calls and ioctls made inside an API call F (its own and
    // those of the API calls it made; report.api_calls[].calls and .ioctls).
    std::optional<std::string> in_api;
    std::uint32_t line = 0;
    std::string text;  // the line as written (trimmed), for evidence
};

struct Expectation {
    std::string id;
    std::string title;
    std::vector<std::string> sources;  // "source ..." lines: where the fact comes from
    std::optional<std::string> phase;
    std::vector<Condition> when;
    std::vector<Fact> facts;  // all must hold; an "or" fact joins the group of the fact before it
    std::uint32_t line = 0;
};

// Functions ftrace cannot see (e.g. the NVIDIA RM core, built without ftrace hooks): a chain through one of
// them is checked on its visible part and is at best inconclusive.
struct Untraced {
    std::vector<std::string> functions;
    std::vector<Condition> when;
    std::string reason;
    std::uint32_t line = 0;
};

struct ExpectFile {
    std::string file_name;
    std::string title;
    std::vector<Untraced> untraced;
    std::vector<Expectation> checks;
};

// Parses an expectations file. Errors (ExitCode::usage) read "FILE:LINE:COL: expected X, found Y".
Result<ExpectFile> parse_expectations(std::string_view text, std::string_view file_name);
Result<ExpectFile> read_expectations_file(const std::string& path);

// What the checker knows of the run (from report.environment; nullopt = unknown).
struct CheckEnvironment {
    std::optional<DriverVersion> driver;
    std::optional<DriverVersion> kernel;
    std::optional<std::string> flavour;
};
CheckEnvironment check_environment(const Report& report);

// One Check per expectation, in file order: id, result ("pass", "fail", "inconclusive"), evidence (what was
// seen, or the closest thing to it), why (the fact, where it comes from, and for inconclusive what data was
// missing).
std::vector<Check> check_report(const Report& report, const ExpectFile& expectations);

struct CheckSummary {
    std::size_t pass = 0, fail = 0, inconclusive = 0;
};
CheckSummary summarize(const std::vector<Check>& checks);

}  // namespace nvtrace
