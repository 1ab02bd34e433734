#include "summary.hpp"

#include <algorithm>
#include <map>
#include <vector>

#include <fmt/format.h>

namespace nvtrace::cli {

std::string format_ns(std::uint64_t ns) {
    if (ns >= 1'000'000'000) return fmt::format("{:.3f} s", static_cast<double>(ns) / 1e9);
    if (ns >= 1'000'000) return fmt::format("{:.3f} ms", static_cast<double>(ns) / 1e6);
    return fmt::format("{:.3f} us", static_cast<double>(ns) / 1e3);
}

void print_report_body(const Report& r, bool markers, bool diagnostics) {
    std::size_t roots = 0;
    for (const auto& c : r.calls)
        if (!c.parent) ++roots;
    fmt::print("calls: {} ({} roots)\n", r.calls.size(), roots);
    std::vector<const GraphNode*> top;
    for (const auto& g : r.graph)
        if (g.path.find(" > ") == std::string::npos) top.push_back(&g);
    std::sort(top.begin(), top.end(), [](auto* a, auto* b) { return a->total_ns > b->total_ns; });
    for (std::size_t i = 0; i < top.size() && i < 5; ++i)
        fmt::print("  {:>6}x  {:>12}  {}\n", top[i]->count, format_ns(top[i]->total_ns), top[i]->path);
    std::map<std::string, std::size_t> by_name;
    for (const auto& io : r.ioctls)
        ++by_name[io.name.value_or(fmt::format("0x{:x}", io.cmd))];
    fmt::print("ioctls: {}\n", r.ioctls.size());
    for (const auto& [name, n] : by_name)
        fmt::print("  {:>6}x  {}\n", n, name);
    if (markers) fmt::print("markers: {}\n", r.markers.size());
    fmt::print("kernel log: {} message(s)\n", r.kernel_log.size());
    for (std::size_t i = 0; i < r.kernel_log.size() && i < 5; ++i)
        fmt::print("  [{}] {}\n", r.kernel_log[i].kind, r.kernel_log[i].text);
    if (diagnostics)
        for (const auto& d : r.completeness.diagnostics)
            fmt::print("diagnostic: {} ({}) x{}{}{}\n", d.name, d.severity, d.count,
                       d.first_example.empty() ? "" : ": ", d.first_example);
    if (r.completeness.complete)
        fmt::print("complete: yes\n");
    else
        fmt::print("complete: NO: {}\n", fmt::join(r.completeness.reasons, "; "));
}

}  // namespace nvtrace::cli
