// Folded stacks, the calls CSV and the format dispatch (include/nvtrace/export.hpp, docs/export.md).
#include <algorithm>
#include <limits>
#include <unordered_map>

#include <fmt/format.h>

#include "../record_fields.hpp"
#include "nvtrace/call_graph.hpp"
#include "nvtrace/export.hpp"
#include "nvtrace/ioctl.hpp"
#include "nvtrace/visible_text.hpp"

namespace nvtrace {

namespace {

// A frame of a folded stack cannot hold ';' (the separator) or white space (the count follows a space); control
// bytes are written as \xNN (nvtrace/visible_text.hpp), so that a newline in a name cannot start a stack of its own.
std::string folded_frame(std::string_view f) {
    std::string s = visible(f);
    for (char& c : s)
        if (c == ';' || c == ' ') c = '_';
    return s.empty() ? std::string("[unknown]") : s;
}

std::string csv_cell(std::string_view s) {
    return csv_text_cell(s);
}

// A cell by the field's type: null an empty cell, booleans true/false.
template <class T>
void put_cell(std::string& row, const T& v) {
    if constexpr (requires { v.has_value(); }) {
        if (v) put_cell(row, *v);
    } else if constexpr (std::is_same_v<T, bool>) {
        row += v ? "true" : "false";
    } else if constexpr (std::is_same_v<T, std::string>) {
        row += csv_cell(v);
    } else {
        row += std::to_string(v);
    }
}

}  // namespace

std::string_view to_string(ExportFormat f) {
    switch (f) {
        case ExportFormat::json:
            return "json";
        case ExportFormat::chrome:
            return "chrome";
        case ExportFormat::folded:
            return "folded";
        case ExportFormat::csv:
            return "csv";
        case ExportFormat::html:
            return "html";
    }
    return "json";
}

std::optional<ExportFormat> parse_export_format(std::string_view name) {
    if (name == "json" || name == "report") return ExportFormat::json;
    if (name == "chrome" || name == "perfetto" || name == "trace-event") return ExportFormat::chrome;
    if (name == "folded" || name == "flamegraph" || name == "collapsed") return ExportFormat::folded;
    if (name == "csv") return ExportFormat::csv;
    if (name == "html") return ExportFormat::html;
    return std::nullopt;
}

void write_folded_stacks(const Report& r, std::ostream& out) {
    // The report's own graph is the source of truth for totals; a report without one (hand-made) gets it
    // rebuilt from the calls the same way build_report does.
    std::vector<GraphNode> rebuilt;
    const std::vector<GraphNode>* graph = &r.graph;
    if (r.graph.empty() && !r.calls.empty()) {
        rebuilt = aggregate_graph(r.calls);
        graph = &rebuilt;
    }
    std::string line;
    for (const GraphNode& n : *graph) {
        if (n.self_ns == 0) continue;
        line.clear();
        std::string_view p = n.path;
        for (;;) {
            auto sep = p.find(" > ");
            line += folded_frame(p.substr(0, sep));
            if (sep == std::string_view::npos) break;
            line += ';';
            p.remove_prefix(sep + 3);
        }
        out << line << ' ' << n.self_ns << '\n';
    }
}

std::optional<std::string> folded_self_clamped_note(const Report& r) {
    // The same self time as the graph's (PathTree::add): the call's duration minus its children's known durations.
    std::unordered_map<std::uint64_t, std::size_t> at;
    at.reserve(r.calls.size());
    for (std::size_t i = 0; i < r.calls.size(); ++i)
        at.emplace(r.calls[i].id, i);
    std::vector<std::uint64_t> kids_ns(r.calls.size(), 0);
    std::vector<bool> kids_over(r.calls.size(), false);
    for (const Call& c : r.calls)
        if (c.parent && c.duration_ns)
            if (auto it = at.find(*c.parent); it != at.end()) {
                std::uint64_t& k = kids_ns[it->second];
                if (k > std::numeric_limits<std::uint64_t>::max() - *c.duration_ns) kids_over[it->second] = true;
                k += *c.duration_ns;
            }
    std::uint64_t clamped = 0, first_id = 0;
    for (std::size_t i = 0; i < r.calls.size(); ++i)
        if (r.calls[i].duration_ns && (kids_over[i] || kids_ns[i] > *r.calls[i].duration_ns) && clamped++ == 0)
            first_id = r.calls[i].id;
    if (!clamped) return std::nullopt;
    return fmt::format(
        "{} call{} shorter than {} children (first: call {}): {} self time is taken as 0 in the "
        "stacks",
        clamped, clamped == 1 ? "" : "s", clamped == 1 ? "its" : "their", first_id, clamped == 1 ? "its" : "their");
}

// The columns of record_fields.hpp's Call table, in its order.
void write_calls_csv(const Report& r, std::ostream& out) {
    std::string row;
    fields::for_each_field<Call>([&](const auto& f) {
        if (!row.empty()) row += ',';
        row += f.key;
    });
    out << row << '\n';
    for (const Call& c : r.calls) {
        row.clear();
        bool first = true;
        fields::for_each_field<Call>([&](const auto& f) {
            if (!first) row += ',';
            first = false;
            put_cell(row, c.*(f.member));
        });
        row += '\n';
        out << row;
    }
}

std::optional<CsvTable> parse_csv_table(std::string_view name) {
    if (name == "calls") return CsvTable::calls;
    if (name == "ioctls") return CsvTable::ioctls;
    if (name == "ioctl-stats") return CsvTable::ioctl_stats;
    return std::nullopt;
}

std::string_view to_string(CsvTable t) {
    switch (t) {
        case CsvTable::calls:
            return "calls";
        case CsvTable::ioctls:
            return "ioctls";
        case CsvTable::ioctl_stats:
            return "ioctl-stats";
    }
    return "calls";
}

CsvTable default_csv_table(const Report& r) {
    return r.calls.empty() && !r.ioctls.empty() ? CsvTable::ioctls : CsvTable::calls;
}

namespace {

// One row of cells, each by its type (put_cell), joined by ','.
struct CsvRow {
    std::string text;
    template <class T>
    CsvRow& operator<<(const T& v) {
        if (!first) text += ',';
        first = false;
        put_cell(text, v);
        return *this;
    }
    bool first = true;
};

std::optional<std::string> hex(const std::optional<std::uint64_t>& v) {
    return v ? std::optional(fmt::format("0x{:x}", *v)) : std::nullopt;
}

void write_ioctls_csv(const Report& r, std::ostream& out) {
    out << "enter_ns,exit_ns,duration_ns,pid,comm,fd,device,fd_path_unknown,request,cmd,arg,ret,errno,errno_text,"
           "status,error,hclass,ctrl,ctrl_class,phase,call\n";
    for (const IoctlRecord& io : r.ioctls) {
        // The errno alone: as printed, else named from ret = -errno (an RM status has its own column).
        std::optional<std::string> errno_name = io.errno_name;
        if (!errno_name && io.ret && *io.ret < 0) {
            IoctlRecord bare;
            bare.ret = io.ret;
            errno_name = ioctl_error_name(bare);
        }
        CsvRow row;
        row << io.enter_ns << io.exit_ns << io.duration_ns << io.pid << io.comm << io.fd << io.fd_path
            << io.fd_path_unknown << io.name << hex(io.cmd) << hex(io.arg) << io.ret << errno_name << io.errno_text
            << io.status << ioctl_error_name(io) << hex(io.hclass) << hex(io.ctrl) << io.ctrl_class << io.phase
            << io.call;
        row.text += '\n';
        out << row.text;
    }
}

void write_ioctl_stats_csv(const Report& r, std::ostream& out) {
    std::string head;
    fields::for_each_field<IoctlStat>([&](const auto& f) {
        if (!head.empty()) head += ',';
        head += f.key;
    });
    out << head << '\n';
    for (const IoctlStat& s : r.ioctl_stats) {
        std::string row;
        bool first = true;
        fields::for_each_field<IoctlStat>([&](const auto& f) {
            if (!first) row += ',';
            first = false;
            const auto& v = s.*(f.member);
            using V = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<V, std::uint64_t>) {
                // The request in hex, as the ioctls table writes it (0xc020462a); a count in decimal.
                if (f.key == std::string_view("cmd"))
                    put_cell(row, *hex(v));
                else
                    put_cell(row, v);
            } else if constexpr (std::is_same_v<V, std::map<std::string, std::uint64_t>>) {
                std::string cell;
                for (const auto& [name, n] : v)
                    cell += fmt::format("{}{}={}", cell.empty() ? "" : ";", name, n);
                put_cell(row, cell);
            } else {
                put_cell(row, v);
            }
        });
        out << row << '\n';
    }
}

}  // namespace

void write_csv(const Report& r, CsvTable table, std::ostream& out) {
    switch (table) {
        case CsvTable::calls:
            write_calls_csv(r, out);
            break;
        case CsvTable::ioctls:
            write_ioctls_csv(r, out);
            break;
        case CsvTable::ioctl_stats:
            write_ioctl_stats_csv(r, out);
            break;
    }
}

namespace {

// Why the report has no calls, from its source: "its input (strace) records none", "it was traced with tracer
// events (no function_graph)".
std::string why_no_calls(const Report& r) {
    if (r.source.tracer_mode)
        return fmt::format("it was traced with tracer {} (no function_graph)", *r.source.tracer_mode);
    if (r.source.format) return fmt::format("its input ({}) records none", *r.source.format);
    return "none were recorded";
}

std::string count_of(std::size_t n, std::string_view one, std::string_view many) {
    return fmt::format("{} {}", thousands(n), n == 1 ? one : many);
}

// "2 ioctls, 4 kernel-log lines" of what the report holds besides calls; "nothing else" when it holds none.
std::string holdings(const Report& r, bool with_calls = false) {
    std::vector<std::string> parts;
    if (with_calls && !r.calls.empty()) parts.push_back(count_of(r.calls.size(), "call", "calls"));
    if (!r.ioctls.empty()) parts.push_back(count_of(r.ioctls.size(), "ioctl", "ioctls"));
    if (!r.api_calls.empty()) parts.push_back(count_of(r.api_calls.size(), "API call", "API calls"));
    if (!r.kernel_log.empty()) parts.push_back(count_of(r.kernel_log.size(), "kernel-log line", "kernel-log lines"));
    if (!r.markers.empty()) parts.push_back(count_of(r.markers.size(), "marker", "markers"));
    return parts.empty() ? std::string("nothing else") : fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace

std::optional<std::string> empty_export_reason(const Report& r, ExportFormat f, CsvTable table) {
    const std::string no_calls = fmt::format("the report has no calls ({})", why_no_calls(r));
    switch (f) {
        case ExportFormat::json:
        case ExportFormat::html:
            return std::nullopt;  // the report's head and completeness are always there
        case ExportFormat::chrome:
            if (!r.calls.empty() || !r.ioctls.empty() || !r.api_calls.empty() || !r.kernel_log.empty() ||
                !r.markers.empty())
                return std::nullopt;
            return no_calls + ", ioctls, API calls, kernel-log lines or markers: the trace would hold no event";
        case ExportFormat::folded: {
            const bool graph = !r.graph.empty();
            if (graph ? std::any_of(r.graph.begin(), r.graph.end(), [](const GraphNode& n) { return n.self_ns; })
                      : std::any_of(r.calls.begin(), r.calls.end(), [](const Call& c) { return c.duration_ns; }))
                return std::nullopt;
            if (r.calls.empty() && !graph)
                return fmt::format("{}: there is no call stack to fold (it holds {})", no_calls, holdings(r));
            return fmt::format(
                "none of the report's {} has a known duration (a function tracer records hits, a trace read "
                "before the calls returned no exits): folded stacks are weighed by self time, there is none to "
                "write (--format csv --table calls lists the calls)",
                count_of(graph ? r.graph.size() : r.calls.size(), graph ? "path" : "call", graph ? "paths" : "calls"));
        }
        case ExportFormat::csv:
            switch (table) {
                case CsvTable::calls:
                    if (!r.calls.empty()) return std::nullopt;
                    return fmt::format("{}: the calls table would be a bare header (it holds {})", no_calls,
                                       holdings(r));
                case CsvTable::ioctls:
                    if (!r.ioctls.empty()) return std::nullopt;
                    return fmt::format(
                        "the report has no ioctls: the ioctls table would be a bare header (it "
                        "holds {})",
                        holdings(r, true));
                case CsvTable::ioctl_stats:
                    if (!r.ioctl_stats.empty()) return std::nullopt;
                    return "the report has no ioctl statistics (no ioctls): the ioctl-stats table would be a bare "
                           "header";
            }
    }
    return std::nullopt;
}

std::optional<std::string> export_without_calls_note(const Report& r, ExportFormat f, const ChromeTraceStats* chrome) {
    if (!r.calls.empty() || f == ExportFormat::csv || f == ExportFormat::folded) return std::nullopt;
    std::string note =
        fmt::format("the report has no calls ({}): the {} export holds {}", why_no_calls(r), to_string(f), holdings(r));
    if (chrome && chrome->synthetic_instants)
        note += fmt::format(
            " ({} without a time laid out in recorded order after the timed events, "
            "args.synthetic_time)",
            thousands(chrome->synthetic_instants));
    return note;
}

Result<void> export_report(const Report& r, ExportFormat f, std::ostream& out) {
    switch (f) {
        case ExportFormat::json:
            write_json(r, out);
            break;
        case ExportFormat::chrome:
            write_chrome_trace(r, out);
            break;
        case ExportFormat::folded:
            write_folded_stacks(r, out);
            break;
        case ExportFormat::csv:
            write_csv(r, default_csv_table(r), out);
            break;
        case ExportFormat::html:
            write_html_report(r, out);
            break;
    }
    out.flush();
    if (!out) return fail(Error::environment("write failed"));
    return {};
}

}  // namespace nvtrace
