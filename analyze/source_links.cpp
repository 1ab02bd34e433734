#include "nvtrace/source_links.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

namespace nvtrace {

namespace {

bool ident_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool ident_char(char c) {
    return ident_start(c) || (c >= '0' && c <= '9');
}
bool space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// Conditional directives, which keep brace depth consistent across `#if`/`#else` branches.
enum class Cond : std::uint8_t { open, alternative, close };
struct Directive {
    std::size_t offset;
    Cond kind;
};

// The text with comments, literal contents and preprocessor lines replaced by spaces; newlines and
// offsets kept, so that positions and line numbers stay those of the original. `directives` gets the
// conditional directives in order.
std::string code_only(std::string_view in, std::vector<Directive>& directives) {
    std::string out(in);
    std::size_t i = 0, n = in.size();
    bool line_start = true;  // only spaces so far on this line
    auto blank = [&](std::size_t from, std::size_t to) {
        for (std::size_t k = from; k < to && k < n; ++k)
            if (out[k] != '\n') out[k] = ' ';
    };
    while (i < n) {
        char c = in[i];
        if (c == '\n') {
            line_start = true;
            ++i;
            continue;
        }
        if (line_start && c == '#') {  // a directive, with its backslash continuations and comments
            std::size_t j = i;
            while (j < n) {
                if (in[j] == '/' && j + 1 < n && in[j + 1] == '*') {
                    auto e = in.find("*/", j + 2);
                    j = e == std::string_view::npos ? n : e + 2;
                    continue;
                }
                if (in[j] == '\n') {
                    std::size_t k = j;
                    while (k > i && (in[k - 1] == ' ' || in[k - 1] == '\t' || in[k - 1] == '\r'))
                        --k;
                    if (k > i && in[k - 1] == '\\') {
                        ++j;
                        continue;
                    }
                    break;
                }
                ++j;
            }
            std::size_t w = i + 1;
            while (w < j && (in[w] == ' ' || in[w] == '\t'))
                ++w;
            std::string_view word = in.substr(w, std::min(j, in.find_first_of(" \t\n(", w)) - w);
            if (word == "if" || word == "ifdef" || word == "ifndef")
                directives.push_back({i, Cond::open});
            else if (word == "else" || word == "elif" || word == "elifdef" || word == "elifndef")
                directives.push_back({i, Cond::alternative});
            else if (word == "endif")
                directives.push_back({i, Cond::close});
            blank(i, j);
            i = j;
            continue;
        }
        if (!space(c)) line_start = false;
        if (c == '/' && i + 1 < n && in[i + 1] == '*') {
            auto e = in.find("*/", i + 2);
            std::size_t end = e == std::string_view::npos ? n : e + 2;
            blank(i, end);
            i = end;
        } else if (c == '/' && i + 1 < n && in[i + 1] == '/') {
            std::size_t end = in.find('\n', i);
            if (end == std::string_view::npos) end = n;
            blank(i, end);
            i = end;
        } else if (c == '"' || c == '\'') {
            std::size_t j = i + 1;
            while (j < n && in[j] != c && in[j] != '\n') {
                if (in[j] == '\\') ++j;
                ++j;
            }
            blank(i + 1, std::min(j, n));
            i = j < n && in[j] == c ? j + 1 : j;
        } else {
            ++i;
        }
    }
    return out;
}

const std::set<std::string_view>& not_names() {
    static const std::set<std::string_view> k{"if",
                                              "for",
                                              "while",
                                              "switch",
                                              "return",
                                              "sizeof",
                                              "do",
                                              "else",
                                              "case",
                                              "__attribute__",
                                              "__typeof",
                                              "__typeof__",
                                              "typeof",
                                              "alignof",
                                              "_Alignof",
                                              "__alignof__",
                                              "defined",
                                              "_Static_assert",
                                              "static_assert",
                                              "__declspec",
                                              "asm",
                                              "__asm__",
                                              "_Generic",
                                              "__builtin_offsetof"};
    return k;
}

std::size_t skip_space(const std::string& s, std::size_t i) {
    while (i < s.size() && space(s[i]))
        ++i;
    return i;
}

// Index after the ')' matching the '(' at `open`, or npos.
std::size_t after_parens(const std::string& s, std::size_t open) {
    int depth = 0;
    for (std::size_t i = open; i < s.size(); ++i) {
        if (s[i] == '(') ++depth;
        if (s[i] == ')' && --depth == 0) return i + 1;
        if (s[i] == ';' || s[i] == '{' || s[i] == '}') {
            // A parameter list holds none of these (a K&R list or a statement-expression is not worth it).
            if (s[i] != '{' || depth == 0) return std::string::npos;
        }
    }
    return std::string::npos;
}

// True when the body's '{' follows the parameter list ending at `i` (attributes and annotations skipped).
bool body_follows(const std::string& s, std::size_t i) {
    for (;;) {
        i = skip_space(s, i);
        if (i >= s.size()) return false;
        if (s[i] == '{') return true;
        if (!ident_start(s[i])) return false;
        while (i < s.size() && ident_char(s[i]))
            ++i;
        std::size_t j = skip_space(s, i);
        if (j < s.size() && s[j] == '(') {
            i = after_parens(s, j);
            if (i == std::string::npos) return false;
        }
    }
}

// `extern "C" {` (the literal's content is blanked): true when the text before `brace` ends with it.
bool extern_c_block(const std::string& s, std::size_t brace) {
    std::size_t i = brace;
    while (i > 0 && space(s[i - 1]))
        --i;
    if (i == 0 || s[i - 1] != '"') return false;
    --i;
    while (i > 0 && s[i - 1] != '"')
        --i;
    if (i == 0) return false;
    --i;
    while (i > 0 && space(s[i - 1]))
        --i;
    return i >= 6 && s.compare(i - 6, 6, "extern") == 0 && (i == 6 || !ident_char(s[i - 7]));
}

}  // namespace

std::vector<FunctionDefinition> find_function_definitions(std::string_view c_text) {
    std::vector<FunctionDefinition> out;
    std::vector<Directive> directives;
    const std::string s = code_only(c_text, directives);
    int braces = 0;
    std::vector<int> at_if;  // brace depth where each open #if started: every branch starts from it
    std::size_t next_directive = 0;
    std::uint32_t line = 1;
    std::size_t line_begin = 0;
    std::size_t i = 0;
    while (i < s.size()) {
        while (next_directive < directives.size() && directives[next_directive].offset <= i) {
            switch (directives[next_directive++].kind) {
                case Cond::open:
                    at_if.push_back(braces);
                    break;
                case Cond::alternative:
                    if (!at_if.empty()) braces = at_if.back();
                    break;
                case Cond::close:
                    if (!at_if.empty()) at_if.pop_back();
                    break;
            }
        }
        char c = s[i];
        if (c == '\n') {
            ++line;
            line_begin = ++i;
            continue;
        }
        if (c == '{') {
            if (!(braces == 0 && extern_c_block(s, i))) ++braces;
            ++i;
            continue;
        }
        if (c == '}') {
            // Kernel style closes a function in column 0: re-synchronise there (unbalanced #if branches).
            braces = i == line_begin ? 0 : std::max(braces - 1, 0);
            ++i;
            continue;
        }
        if (!ident_start(c) || (i > 0 && ident_char(s[i - 1]))) {
            ++i;
            continue;
        }
        std::size_t b = i;
        while (i < s.size() && ident_char(s[i]))
            ++i;
        if (braces != 0) continue;
        std::string_view name(s.data() + b, i - b);
        std::size_t p = skip_space(s, i);
        if (p >= s.size() || s[p] != '(' || not_names().count(name)) continue;
        // A member access or a call through a pointer is no definition.
        std::size_t q = b;
        while (q > 0 && space(s[q - 1]))
            --q;
        if (q > 0 && (s[q - 1] == '.' || s[q - 1] == '>' || s[q - 1] == '=' || s[q - 1] == ',' || s[q - 1] == '('))
            continue;
        std::size_t close = after_parens(s, p);
        if (close == std::string::npos || !body_follows(s, close)) continue;
        out.push_back({std::string(name), line});
        // The parameter list holds no newline-sensitive state: continue after it (its newlines still count).
        for (std::size_t k = i; k < close; ++k)
            if (s[k] == '\n') {
                ++line;
                line_begin = k + 1;
            }
        i = close;
    }
    return out;
}

std::string source_lookup_name(std::string_view function) {
    // Kernel symbols carry '.' only in compiler-made clones and split parts.
    auto dot = function.find('.');
    return std::string(function.substr(0, dot));
}

Result<SourceLinks> link_sources(const std::filesystem::path& root, const std::vector<std::string>& functions) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::is_directory(root, ec))
        return fail(Error::usage(fmt::format("--source {}: not a directory", root.string())));
    std::map<std::string, std::vector<SourceLocation>> defs;  // lookup name -> definitions
    for (const auto& f : functions)
        defs.emplace(source_lookup_name(f), std::vector<SourceLocation>{});
    std::vector<fs::path> files;
    fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
    if (ec) return fail(Error::usage(fmt::format("--source {}: {}", root.string(), ec.message())));
    for (; it != end; it.increment(ec)) {
        if (ec) break;
        const auto& e = *it;
        auto ext = e.path().extension();
        if ((ext == ".c" || ext == ".h") && e.is_regular_file(ec) && !e.is_symlink(ec)) files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    SourceLinks links;
    links.root = root.string();
    for (const auto& p : files) {
        std::ifstream in(p, std::ios::binary);
        if (!in) continue;
        std::ostringstream ss;
        ss << in.rdbuf();
        ++links.files_scanned;
        std::string rel = p.lexically_relative(root).generic_string();
        for (auto& d : find_function_definitions(ss.str()))
            if (auto h = defs.find(d.name); h != defs.end()) h->second.push_back({rel, d.line});
    }
    std::set<std::string> seen;
    std::vector<std::string> sorted(functions);
    std::sort(sorted.begin(), sorted.end());
    for (const auto& f : sorted) {
        if (!seen.insert(f).second) continue;
        std::string lookup = source_lookup_name(f);
        const auto& d = defs[lookup];
        if (d.empty())
            links.missing.push_back(f);
        else if (d.size() == 1)
            links.found.push_back({f, lookup, d});
        else
            links.ambiguous.push_back({f, lookup, d});
    }
    return links;
}

Result<SourceLinks> link_report_sources(const std::filesystem::path& root, const Report& report) {
    std::set<std::string> names;
    for (const auto& c : report.calls)
        names.insert(c.function);
    return link_sources(root, {names.begin(), names.end()});
}

}  // namespace nvtrace
