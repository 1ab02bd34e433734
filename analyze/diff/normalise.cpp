// Rename maps and --min-delta parsing for the diff (include/nvtrace/diff.hpp); the symbol normalisation they use
// is normalise_symbol (nvtrace/symbol_name.hpp, shared with the checker).
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "nvtrace/diff.hpp"

namespace nvtrace {

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
        s.remove_suffix(1);
    return s;
}

}  // namespace

Result<std::pair<std::string, std::string>> parse_rename(std::string_view text) {
    text = trim(text);
    auto eq = text.find('=');
    std::string_view from = trim(eq == std::string_view::npos ? text : text.substr(0, eq));
    std::string_view to = eq == std::string_view::npos ? std::string_view{} : trim(text.substr(eq + 1));
    if (from.empty())
        return fail(Error::usage(fmt::format("rename '{}': expected OLD=NEW (NEW empty to collapse OLD)", text)));
    return std::pair{normalise_symbol(from), to.empty() ? std::string() : normalise_symbol(to)};
}

Result<std::map<std::string, std::string>> parse_rename_map(std::string_view text, std::string_view file_name) {
    std::map<std::string, std::string> out;
    std::size_t line_no = 0;
    while (!text.empty()) {
        auto nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
        ++line_no;
        if (auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
        line = trim(line);
        if (line.empty()) continue;
        std::string spec(line);
        if (spec.find('=') == std::string::npos) {
            // "OLD NEW" or "OLD" alone.
            auto sp = spec.find_first_of(" \t");
            if (sp != std::string::npos) {
                std::string_view rest = trim(std::string_view(spec).substr(sp));
                if (rest.find_first_of(" \t") != std::string_view::npos)
                    return fail(Error::usage(
                        fmt::format("{}:{}: expected 'OLD NEW' or 'OLD=NEW', found '{}'", file_name, line_no, line)));
                spec = spec.substr(0, sp) + "=" + std::string(rest);
            }
        }
        auto r = parse_rename(spec);
        if (!r) return fail(Error::usage(fmt::format("{}:{}: {}", file_name, line_no, r.error().message)));
        out[r->first] = r->second;
    }
    return out;
}

Result<DiffThreshold> parse_min_delta(std::string_view text, DiffThreshold defaults) {
    DiffThreshold t = defaults;
    std::string_view rest = trim(text);
    if (rest.empty()) return fail(Error::usage("--min-delta: expected ABS, REL% or ABS,REL% (e.g. 10us,20%)"));
    // One absolute part and one relative part at the most: a third part, or two of a kind, said nothing
    // (the last won).
    bool have_abs = false, have_rel = false;
    auto twice = [&] {
        return fail(
            Error::usage(fmt::format("--min-delta '{}': expected ABS, REL% or ABS,REL% (one of each at most)", text)));
    };
    while (!rest.empty()) {
        auto comma = rest.find(',');
        std::string_view part = trim(rest.substr(0, comma));
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
        double v = 0;
        auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
        std::string_view unit = trim(std::string_view(p, static_cast<std::size_t>(part.data() + part.size() - p)));
        if (ec != std::errc() || !std::isfinite(v) || v < 0)
            return fail(
                Error::usage(fmt::format("--min-delta '{}': expected a non-negative number, found '{}'", text, part)));
        if (unit == "%") {
            if (have_rel) return twice();
            have_rel = true;
            t.min_rel = v / 100.0;
            continue;
        }
        if (have_abs) return twice();
        have_abs = true;
        if (unit.empty() && v == 0) {  // 0 needs no unit
            t.min_abs_ns = 0;
            continue;
        }
        double scale = 0;
        if (unit == "ns")
            scale = 1;
        else if (unit == "us")
            scale = 1e3;
        else if (unit == "ms")
            scale = 1e6;
        else if (unit == "s")
            scale = 1e9;
        else
            return fail(Error::usage(
                fmt::format("--min-delta '{}': expected a unit ns, us, ms, s or %, found '{}'", text, unit)));
        if (v * scale > 9.2e18)  // past what an int64 of ns holds (292 years): it used to saturate silently
            return fail(Error::usage(fmt::format("--min-delta '{}': '{}' is too large", text, part)));
        t.min_abs_ns = static_cast<std::uint64_t>(std::llround(v * scale));
    }
    return t;
}

}  // namespace nvtrace
