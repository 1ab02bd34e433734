// Folded stacks, the calls CSV and the format dispatch (include/nvtrace/export.hpp, docs/export.md).
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
            if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::map<std::string, std::uint64_t>>) {
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
