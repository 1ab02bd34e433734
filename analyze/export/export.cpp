// Folded stacks, the calls CSV and the format dispatch (include/nvtrace/export.hpp, docs/export.md).
#include <fmt/format.h>

#include "../record_fields.hpp"
#include "nvtrace/call_graph.hpp"
#include "nvtrace/export.hpp"

namespace nvtrace {

namespace {

// A frame of a folded stack cannot hold ';' (the separator) or white space (the count follows a space).
std::string folded_frame(std::string_view f) {
    std::string s(f);
    for (char& c : s)
        if (c == ';' || c == ' ' || c == '\t' || c == '\n' || c == '\r') c = '_';
    return s.empty() ? std::string("[unknown]") : s;
}

std::string csv_cell(std::string_view s) {
    if (s.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(s);
    std::string q = "\"";
    for (char c : s) {
        if (c == '"') q += '"';
        q += c;
    }
    return q + '"';
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
            write_calls_csv(r, out);
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
