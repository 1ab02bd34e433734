// nvtrace diff A B [--phase P] [--rename OLD=NEW]... [--rename-map FILE] [--min-delta ABS,REL%] [--json]
// (docs/diff.md)
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <tuple>

#include <fmt/format.h>

#include "commands.hpp"
#include "nvtrace/diff.hpp"
#include "nvtrace/input.hpp"
#include "nvtrace/report_io.hpp"
#include "stderr_note.hpp"

namespace nvtrace::cli {

namespace {

struct DiffArgs {
    std::string a, b;
    std::string phase;
    std::vector<std::string> renames;
    std::string rename_map;
    std::vector<std::string> ignore;
    std::string min_delta;
    bool keep_irq = false;
    bool all = false;
    bool json = false;
    bool exit_code = false;
    std::size_t max_rows = 0;
    bool min_delta_given = false;  // set from the option's count (an empty value is an error)
};

int usage_error(const Error& e) {
    tracer::note("nvtrace diff: {}\n", e.message);
    return static_cast<int>(e.code);
}

int do_diff(const DiffArgs& args) {
    DiffOptions o;
    if (!args.phase.empty()) o.phase = args.phase;
    if (!args.rename_map.empty()) {
        std::error_code ec;
        if (std::filesystem::is_directory(args.rename_map, ec))
            return usage_error(Error::usage(fmt::format("--rename-map {}: a directory, not a file", args.rename_map)));
        std::ifstream in(args.rename_map, std::ios::binary);
        if (!in)
            return usage_error(Error::usage(fmt::format("{}: cannot open: {}", args.rename_map, std::strerror(errno))));
        std::ostringstream ss;
        ss << in.rdbuf();
        auto m = parse_rename_map(ss.str(), args.rename_map);
        if (!m) return usage_error(m.error());
        o.renames = std::move(*m);
    }
    for (const auto& r : args.renames) {
        auto p = parse_rename(r);
        if (!p) return usage_error(p.error());
        o.renames[p->first] = p->second;
    }
    o.ignore = args.ignore;
    if (args.min_delta_given) {  // `--min-delta ''` is an error, not the default
        auto t = parse_min_delta(args.min_delta);
        if (!t) return usage_error(t.error());
        o.threshold = *t;
    }
    o.keep_irq_nesting = args.keep_irq;
    o.keep_unchanged = args.all;

    // Both inputs are opened first, by one rule (nvtrace/input.hpp: what can be read only once is read now). Two
    // saved reports are then parsed at once, one on another thread (reading is nearly all of a diff's time); a
    // trace is imported on its own. A's error is the one reported when both fail, as before. Each report's calls
    // are folded into its side of the diff as they are read (DiffCalls), never held as Calls.
    if (args.a == "-" && args.b == "-")
        return usage_error(Error::usage("standard input can be read only once: give - as A or as B, not both"));
    auto ia = open_input(args.a);
    if (!ia) return usage_error(ia.error());
    auto ib = open_input(args.b);
    auto is_saved = [](const Input& in) { return in.kind != InputKind::trace_dat && in.kind != InputKind::text; };
    DiffCalls ca(o), cb(o);
    const CallSink sink_a = [&ca](Call&& c) { ca.add(c); };
    const CallSink sink_b = [&cb](Call&& c) { cb.add(c); };
    Result<Report> ra = fail(Error::usage("")), rb = fail(Error::usage(""));
    if (ib && is_saved(*ia) && is_saved(*ib)) {
        std::thread tb([&] { rb = load_report(std::move(*ib), sink_b); });
        ra = load_report(std::move(*ia), sink_a);
        tb.join();
        if (!ra) return usage_error(ra.error());
    } else {
        ra = load_report(std::move(*ia), sink_a);
        if (!ra) return usage_error(ra.error());
        rb = ib ? load_report(std::move(*ib), sink_b) : fail(ib.error());
    }
    if (!rb) return usage_error(rb.error());
    for (auto [label, calls] : {std::pair{&args.a, &ca}, std::pair{&args.b, &cb}})
        if (calls->depth() > kDiffMaxDepth)
            return usage_error(
                Error::usage(fmt::format("{}: its calls nest {} deep: nvtrace diff compares call "
                                         "trees up to {} calls deep",
                                         *label, calls->depth(), kDiffMaxDepth)));
    // A report made with --calls-jsonl holds none of its calls: comparing it would show every call as added.
    for (auto [label, r, calls] : {std::tuple{&args.a, &*ra, &ca}, std::tuple{&args.b, &*rb, &cb}})
        if (auto why = calls_written_elsewhere(r->source, calls->report_calls()))
            return usage_error(Error::usage(fmt::format(
                "{}: {}: diff the report made without --calls-jsonl (nvtrace report INPUT -o FILE)", *label, *why)));

    // Two reports without calls, ioctls or API calls (events-only runs) have nothing to compare: saying "no change"
    // would claim a comparison that did not happen. Without calls, the ioctls and API calls alone are compared.
    const bool no_calls = ca.report_calls() == 0 && cb.report_calls() == 0;
    if (no_calls && ra->ioctl_stats.empty() && rb->ioctl_stats.empty() && ra->api_calls.empty() &&
        rb->api_calls.empty()) {
        // Why each has no call graph: a live run without --module, or an input that records none (a kernel log).
        auto why = [](const std::string& label, const Report& r) {
            return r.source.kind == "live"
                       ? fmt::format("{} has no call graph: function_graph was not traced (run with --module)", label)
                       : fmt::format("{} has no call graph: its input ({}) records no calls", label,
                                     r.source.format.value_or("unknown"));
        };
        return usage_error(
            Error::usage(fmt::format("neither report has calls, API calls or ioctls: nothing to compare ({}; {})",
                                     why(args.a, *ra), why(args.b, *rb))));
    }
    DiffResult d = diff_reports(*ra, std::move(ca), *rb, std::move(cb), o);
    d.a.label = args.a;
    d.b.label = args.b;
    // One report with calls and one without (strace, a kernel log): the call paths are not compared (every path
    // would be "added"); with no ioctls or API calls either, nothing is.
    // The same when the ioctls of one report cannot be compared (its input shows no syscall events at all).
    if ((!d.calls_compared || no_calls) && !d.ioctls_compared && !d.api_compared) {
        const DiffInput& none = d.a.report_calls == 0 ? d.a : d.b;
        const std::string calls = !d.calls_compared
                                      ? fmt::format("{} has no call graph ({})", none.label, why_no_call_graph(none))
                                      : std::string("neither report has calls");
        const DiffInput& unrecorded = d.ioctls_unrecorded == 'a' ? d.a : d.b;
        return usage_error(Error::usage(
            d.ioctls_unrecorded
                ? fmt::format("{} and {} has no ioctls ({}), and neither report has API calls: nothing to compare",
                              calls, unrecorded.label, why_no_ioctls(unrecorded))
                : fmt::format("{} and neither report has ioctls or API calls: nothing to compare", calls)));
    }
    if (o.phase) {
        for (const auto* in : {&d.a, &d.b})
            if (in->calls == 0) return usage_error(Error::usage(describe_empty_phase(*in, *o.phase)));
    }
    // `--ignore '*'` left no call on either side: "no change" (exit 0 even with --exit-code) would claim a
    // comparison that did not happen, as for two reports without calls above.
    if (!no_calls && d.a.calls == 0 && d.b.calls == 0)
        return usage_error(Error::usage("--ignore left no call in either report: nothing to compare"));
    if (args.json) {
        fmt::print("{}\n", to_json_text(d));
    } else {
        DiffTextOptions t;
        t.colour = isatty(STDOUT_FILENO) && !std::getenv("NO_COLOR");
        t.max_rows = args.max_rows;
        fmt::print("{}", format_diff_text(d, t));
    }
    return args.exit_code && d.any_change() ? static_cast<int>(ExitCode::expectation_failed) : 0;
}

void add_diff(CLI::App& app, int& exit_code) {
    auto args = std::make_shared<DiffArgs>();
    CLI::App* cmd = app.add_subcommand("diff", "Compare the call trees of two reports (e.g. two driver versions)");
    cmd->footer(
        "A and B: report.json files, capture directories or trace files. Paths are aligned after stripping clone\n"
        "suffixes (.isra.N, .constprop.N, .part.N, .cold) and [module]; --rename maps names that changed between\n"
        "versions (NEW empty collapses OLD). Marks: + added, - removed, ~ changed (calls, retval, time).\n"
        "ioctls are compared by (device, request): added, removed, count, mean latency (--min-delta), new errors;\n"
        "API calls (uprobes) are compared by (api, function): added, removed, count, results by name, total and\n"
        "max latency (--min-delta), the ioctls made inside them. Two reports without calls are compared by their\n"
        "ioctls and API calls alone; so are a report with calls and one without (strace, a kernel log), whose\n"
        "call paths are not compared. A time that needs a duration the report lacks (exit not seen) is 'unknown'.\n"
        "Exit codes: 0 compared (1 with --exit-code when something changed), 2 unreadable input, a report made with\n"
        "--calls-jsonl (its calls are not in it), one nesting deeper than 4096 calls, or nothing to compare\n"
        "(no calls on one side and no ioctls or API calls on either). See docs/diff.md.");
    cmd->add_option("a", args->a, "Base: report, capture directory or trace file")->required();
    cmd->add_option("b", args->b, "New: report, capture directory or trace file")->required();
    cmd->add_option("--phase", args->phase, "Only calls in this phase (scenario phase marker)");
    cmd->add_option("--rename", args->renames, "OLD=NEW: treat OLD (in either report) as NEW; OLD= collapses OLD");
    cmd->add_option("--rename-map", args->rename_map, "File of renames, one 'OLD NEW' or 'OLD=NEW' per line");
    cmd->add_option("--ignore", args->ignore, "Leave out frames matching this glob, with their subtrees");
    cmd->add_option("--min-delta", args->min_delta,
                    "Time change threshold: ABS, REL% or ABS,REL% (default 10us,20%; both must be reached)");
    cmd->add_flag("--keep-irq-nesting", args->keep_irq, "Keep interrupts where they arrived (default: under [irq])");
    cmd->add_flag("--all", args->all, "Keep unchanged paths too");
    cmd->add_option("--max-rows", args->max_rows, "Text output: at most this many rows")->check(non_negative_integer);
    cmd->add_flag("--json", args->json, "Print the diff as JSON (schema nvtrace.diff/1)");
    cmd->add_flag("--exit-code", args->exit_code, "Exit 1 when any change is found");
    cmd->callback([args, cmd, &exit_code] {
        args->min_delta_given = cmd->count("--min-delta") > 0;
        exit_code = do_diff(*args);
    });
}

}  // namespace

NVTRACE_COMMAND(40, add_diff);

}  // namespace nvtrace::cli
