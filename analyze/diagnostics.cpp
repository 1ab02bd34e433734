// The diagnostics table's run-time helpers (nvtrace/diagnostics.hpp).
#include "nvtrace/diagnostics.hpp"

#include <stdexcept>

#include <fmt/format.h>

namespace nvtrace {

void count_diagnostic(std::vector<Diagnostic>& ds, std::string_view name, std::string_view severity,
                      const std::string& example, std::uint64_t count) {
    const DiagnosticInfo* d = find_diagnostic(name);
    if (!d || severity_name(d->severity) != severity)
        throw std::logic_error(
            fmt::format("diagnostic '{}' ({}) is not in nvtrace/diagnostics.hpp's table", name, severity));
    count_diagnostic(ds, d->id, example, count);
}

std::string diagnostics_markdown_table() {
    std::string out = "| name | severity | makes the report incomplete | what a count means |\n|---|---|---|---|\n";
    for (const auto& d : kDiagnostics)
        out += fmt::format("| `{}` | {} | {} | {} |\n", d.name, severity_name(d.severity),
                           !makes_incomplete(d) ? "no"
                           : d.unreadable       ? "yes (unreadable lines)"
                                                : "yes",
                           d.meaning);
    return out;
}

}  // namespace nvtrace
