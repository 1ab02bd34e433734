#include "summary.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "nvtrace/api_calls.hpp"
#include "nvtrace/ioctl.hpp"
#include "nvtrace/report_stream.hpp"
#include "nvtrace/source_links.hpp"
#include "stderr_note.hpp"
// visible(): the one rule of the text outputs for control bytes from the input (\xNN), header only.
#include "nvtrace/visible_text.hpp"

namespace nvtrace::cli {

std::string format_ns(std::uint64_t ns) {
    if (ns >= 1'000'000'000) return fmt::format("{:.3f} s", static_cast<double>(ns) / 1e9);
    if (ns >= 1'000'000) return fmt::format("{:.3f} ms", static_cast<double>(ns) / 1e6);
    return fmt::format("{:.3f} us", static_cast<double>(ns) / 1e3);
}

namespace {

// The lines about ioctls, markers and events, from the report's records or from what was streamed.
struct RecordLines {
    std::uint64_t ioctls = 0;
    std::vector<std::string> ioctl_lines;
    std::uint64_t markers = 0;
    std::uint64_t events = 0;
    std::vector<std::pair<std::string, std::uint64_t>> event_names;  // by count, most first
};

void print_body(const Report& r, const RecordLines& rec, const SummaryCalls& calls, bool markers, bool diagnostics,
                bool verbose);

bool kernel_traced(const Report& r, std::uint64_t calls) {
    // Without function tracing there are no kernel calls to count: the "(kernel: ...)" part is left out.
    return calls != 0 || (r.source.tracer_mode && r.source.tracer_mode->rfind("function_graph", 0) == 0);
}

std::vector<std::pair<std::string, std::uint64_t>> by_count(const std::map<std::string, std::uint64_t>& by_name) {
    std::vector<std::pair<std::string, std::uint64_t>> names(by_name.begin(), by_name.end());
    std::stable_sort(names.begin(), names.end(), [](auto& a, auto& b) { return a.second > b.second; });
    return names;
}

}  // namespace

void print_report_body(const Report& r, bool markers, bool diagnostics, bool verbose) {
    RecordLines rec;
    rec.ioctls = r.ioctls.size();
    IoctlSummaryOptions io_opts;
    io_opts.verbose = verbose;
    io_opts.kernel_traced = kernel_traced(r, r.calls.size());
    rec.ioctl_lines = summarize_ioctls(r.ioctls, r.calls, io_opts);
    rec.markers = r.markers.size();
    rec.events = r.events.size();
    std::map<std::string, std::uint64_t> by_name;
    for (const auto& e : r.events)
        ++by_name[e.name];
    rec.event_names = by_count(by_name);
    SummaryCalls calls;
    calls.calls = r.calls.size();
    // Ids are index + 1 in a built report; a report read from elsewhere is looked up by id.
    bool dense = true;
    for (std::size_t i = 0; dense && i < r.calls.size(); ++i)
        dense = r.calls[i].id == i + 1;
    std::unordered_map<std::uint64_t, const Call*> by_id;
    if (!dense)
        for (const auto& c : r.calls)
            by_id.emplace(c.id, &c);
    auto find = [&r, dense, &by_id](std::uint64_t id) -> const Call* {
        if (dense) return id >= 1 && id <= r.calls.size() ? &r.calls[id - 1] : nullptr;
        auto it = by_id.find(id);
        return it == by_id.end() ? nullptr : it->second;
    };
    // A root: a call without a parent, or whose parent is not in the report (it heads its own tree, as `nvtrace
    // tree` shows it; a saved report may hold one).
    for (const auto& c : r.calls) {
        if (c.parent && find(*c.parent)) continue;
        ++calls.roots;
        if (c.duration_ns) ++calls.known_roots[c.function];
    }
    calls.function_of = [find](std::uint64_t id) -> const std::string* {
        const Call* c = find(id);
        return c ? &c->function : nullptr;
    };
    print_body(r, rec, calls, markers, diagnostics, verbose);
}

void print_report_body(const Report& r, const StreamedRecords& streamed, bool markers, bool diagnostics, bool verbose) {
    RecordLines rec;
    rec.ioctls = streamed.ioctls;
    rec.ioctl_lines = streamed.ioctl_lines;
    rec.markers = streamed.markers;
    rec.events = streamed.events;
    rec.event_names = by_count(streamed.event_names);
    print_body(r, rec, streamed.calls, markers, diagnostics, verbose);
}

SummaryTap::SummaryTap(bool verbose)
    : plain_(IoctlSummaryOptions{false, verbose, 40}), costed_(IoctlSummaryOptions{true, verbose, 40}) {}

void SummaryTap::call(const Call& c) {
    if (c.id == 0) return;
    const std::size_t at = c.id - 1;
    if (at >= function_.size()) {
        function_.resize(at + 1, 0);
        subtree_.resize(at + 1, 0);
        duration_.resize(at + 1, -1);
    }
    auto [it, fresh] = index_.try_emplace(c.function, static_cast<std::uint32_t>(names_.size()));
    if (fresh) names_.push_back(c.function);
    function_[at] = it->second;
    subtree_[at] += 1;  // itself, after its children (they ended first)
    duration_[at] = c.duration_ns ? static_cast<std::int64_t>(*c.duration_ns) : -1;
    ++calls_;
    if (!c.parent) {
        ++roots_;
        if (c.duration_ns) ++known_roots_[c.function];
    } else if (*c.parent >= 1) {
        const std::size_t p = *c.parent - 1;
        if (p >= subtree_.size()) {
            function_.resize(p + 1, 0);
            subtree_.resize(p + 1, 0);
            duration_.resize(p + 1, -1);
        }
        subtree_[p] += subtree_[at];
    }
}

void SummaryTap::ioctl(const IoctlRecord& io) {
    // ioctl_kernel_costs' rule: the calls under each root the ioctl joined, and the roots' known durations.
    IoctlKernelCost cost;
    cost.roots = io.calls.size();
    for (std::uint64_t id : io.calls) {
        const bool known = id >= 1 && id <= subtree_.size();
        if (known) cost.calls += subtree_[id - 1];
        if (known && duration_[id - 1] >= 0)
            cost.total_ns += static_cast<std::uint64_t>(duration_[id - 1]);
        else
            ++cost.unfinished;
    }
    plain_.add(io, std::nullopt);
    costed_.add(io, cost);
}

StreamedRecords SummaryTap::records(ReportStream& r) {
    StreamedRecords out{r.ioctls(), {}, r.markers(), r.events(), r.event_names(), calls()};
    out.ioctl_lines = kernel_traced(r.report(), calls_) ? costed_.lines() : plain_.lines();
    return out;
}

SummaryCalls SummaryTap::calls() const {
    SummaryCalls out;
    out.calls = calls_;
    out.roots = roots_;
    out.known_roots = known_roots_;
    out.function_of = [this](std::uint64_t id) -> const std::string* {
        if (id < 1 || id > function_.size() || subtree_[id - 1] == 0) return nullptr;
        return &names_[function_[id - 1]];
    };
    return out;
}

namespace {

void print_body(const Report& r, const RecordLines& rec, const SummaryCalls& calls, bool markers, bool diagnostics,
                bool verbose) {
    // --calls-jsonl: the calls are in their own file, not in the report (the graph below still counts them).
    if (r.source.calls_count && r.source.calls_jsonl)
        fmt::print("calls: {} (written to {})\n", *r.source.calls_count, *r.source.calls_jsonl);
    else
        fmt::print("calls: {} ({} roots)\n", calls.calls, calls.roots);
    // An input that cannot hold calls: say so rather than let "0" read as "the driver did nothing".
    if (const auto& f = r.source.format; calls.calls == 0 && r.graph.empty() && f) {
        if (*f == "kernel-log") fmt::print("  no calls were traced: the input is a kernel log\n");
        if (*f == "strace") fmt::print("  no kernel calls were traced: the input is strace output (ioctls only)\n");
    }
    std::vector<const GraphNode*> top;
    for (const auto& g : r.graph)
        if (g.path.find(" > ") == std::string::npos) top.push_back(&g);
    std::sort(top.begin(), top.end(), [](auto* a, auto* b) { return a->total_ns > b->total_ns; });
    // Roots whose duration is not known (unclosed, function tracer hits, orphans without a time): the graph's
    // total_ns counts only known durations, so say "unknown" rather than print 0 as a time.
    for (std::size_t i = 0; i < top.size() && i < 5; ++i) {
        std::size_t known = top[i]->count;
        if (calls.calls != 0) {
            auto k = calls.known_roots.find(top[i]->path);
            known = k == calls.known_roots.end() ? 0 : k->second;
        }
        std::string total = known == 0 ? std::string("unknown") : format_ns(top[i]->total_ns);
        std::string note = known != 0 && known < top[i]->count
                               ? fmt::format(" ({} without a duration)", top[i]->count - known)
                               : std::string();
        fmt::print("  {:>6}x  {:>12}  {}{}\n", top[i]->count, total, visible(top[i]->path), note);
    }
    fmt::print("ioctls: {}\n", rec.ioctls);
    // Names, device paths and messages come from the input, which anyone may have written: a newline in one would
    // start a line of its own, an escape sequence would drive the terminal.
    for (const auto& line : rec.ioctl_lines)
        fmt::print("  {}\n", visible(line));
    for (const auto& line : ioctl_stats_table(r.ioctl_stats, verbose))
        fmt::print("{}\n", visible(line));
    ApiSummaryOptions api_options;  // API calls with their ioctls (nvtrace/api_calls.hpp)
    api_options.verbose = verbose;
    for (const auto& line : api_call_summary(r.api_calls, api_options))
        fmt::print("{}\n", visible(line));
    if (markers) fmt::print("markers: {}\n", rec.markers);
    fmt::print("kernel log: {} message(s)\n", r.kernel_log.size());
    for (std::size_t i = 0; i < r.kernel_log.size() && (verbose || i < 5); ++i) {
        const auto& m = r.kernel_log[i];
        std::string where;
        if (const std::string* f = m.call && calls.function_of ? calls.function_of(*m.call) : nullptr)
            where = fmt::format(" (in {}, by {})", *f, m.attached.empty() ? "console" : m.attached);
        std::string text;  // continuation lines indented under the first, each with its control bytes as \xNN
        for (std::size_t from = 0;;) {
            const std::size_t nl = m.text.find('\n', from);
            text += visible(std::string_view(m.text).substr(from, nl == std::string::npos ? nl : nl - from));
            if (nl == std::string::npos) break;
            text += "\n      ";
            from = nl + 1;
        }
        fmt::print("  [{}] {}{}\n", visible(m.kind), text, visible(where));
    }
    if (!verbose && r.kernel_log.size() > 5) fmt::print("  ... {} more; -v prints them all\n", r.kernel_log.size() - 5);
    if (r.source_links) {
        const auto& sl = *r.source_links;
        fmt::print("source links: {} found, {} ambiguous, {} missing ({} files under {})\n", sl.found.size(),
                   sl.ambiguous.size(), sl.missing.size(), sl.files_scanned, sl.root);
        std::size_t shown = 0;
        for (const auto& l : sl.ambiguous) {
            if (!verbose && shown++ == 5) break;
            std::vector<std::string> where;
            for (const auto& c : l.candidates)
                where.push_back(fmt::format("{}:{}", c.file, c.line));
            fmt::print("  ambiguous: {} ({})\n", visible(l.function),
                       visible(fmt::format("{}", fmt::join(where, ", "))));
        }
        shown = 0;
        for (const auto& f : sl.missing) {
            if (!verbose && shown++ == 5) break;
            fmt::print("  missing: {}\n", visible(f));
        }
        if (verbose)
            for (const auto& l : sl.found)
                fmt::print("  {}: {}:{}\n", visible(l.function), visible(l.candidates[0].file), l.candidates[0].line);
    }
    if (rec.events > 0) {
        const auto& names = rec.event_names;
        fmt::print("events: {}\n", rec.events);
        for (std::size_t i = 0; i < names.size() && (verbose || i < 10); ++i)
            fmt::print("  {:>6}x  {}\n", names[i].second, visible(names[i].first));
        if (!verbose && names.size() > 10) fmt::print("  ... {} more names; -v prints them all\n", names.size() - 10);
    }
    if (diagnostics)
        for (const auto& d : r.completeness.diagnostics)
            fmt::print("diagnostic: {} ({}) x{}{}{}\n", d.name, d.severity, d.count,
                       d.first_example.empty() ? "" : ": ", visible(d.first_example));
    fmt::print("{}\n", visible(completeness_line(r.completeness)));
}

}  // namespace

int add_source_links(Report& report, const std::string& dir, std::string_view command) {
    auto links = link_report_sources(dir, report);
    if (!links) {
        tracer::note("nvtrace {}: {}\n", command, links.error().message);
        return static_cast<int>(links.error().code);
    }
    report.source_links = std::move(*links);
    return 0;
}

}  // namespace nvtrace::cli
