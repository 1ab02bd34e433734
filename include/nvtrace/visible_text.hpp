// Text from a trace or a saved report as the text outputs show it (docs/diff.md, docs/tree.md, docs/fleet.md,
// docs/export.md "CSV"). Function names, comms, device paths, kernel-log lines and host strings come from files
// anyone may have written: a newline in one would start a row of its own in a table (a forged row), an escape
// sequence would drive the terminal. Used by every command that prints such text (analyze/ and tracer/summary.cpp);
// header only.
#pragma once

#include <string>
#include <string_view>

#include <fmt/format.h>

namespace nvtrace {

// `s` with each C0 control byte (0x00-0x1f) and DEL (0x7f) written as \xNN (lower-case hex); every other byte,
// UTF-8 included, as it is. Thread-safe (pure).
inline std::string visible(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if (c < 0x20 || c == 0x7f)
            out += fmt::format("\\x{:02x}", c);
        else
            out += ch;
    }
    return out;
}

// One CSV cell of text (RFC 4180): control bytes as visible() writes them, so that no cell holds a line break and
// a line-oriented reader (grep, head) sees one record per line; the cell quoted ("" for a quote) when it holds a
// comma or a quote. A cell that starts with = + - or @ is one a spreadsheet runs as a formula (OWASP "CSV
// Injection"): it is written quoted with a ' before it, which spreadsheets show as text. Thread-safe (pure).
inline std::string csv_text_cell(std::string_view s) {
    std::string v = visible(s);
    const bool formula = !v.empty() && (v[0] == '=' || v[0] == '+' || v[0] == '-' || v[0] == '@');
    if (!formula && v.find_first_of(",\"") == std::string::npos) return v;
    std::string q = formula ? "\"'" : "\"";
    for (char c : v) {
        if (c == '"') q += '"';
        q += c;
    }
    return q + '"';
}

}  // namespace nvtrace
