// The expectations format (docs/expectations.md): one directive a line, '#' comments, indentation free.
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "nvtrace/expect.hpp"
#include "nvtrace/kernel_log.hpp"
#include "values.hpp"

namespace nvtrace {

namespace {

constexpr const char* kIoctlName =
    "an ioctl nvtrace knows by name (a name its reports give in ioctls[].name) or its number (0xc0206444)";

struct Word {
    std::string_view text;
    std::size_t col = 0;  // 1-based
};

std::vector<Word> split_words(std::string_view line) {
    std::vector<Word> out;
    std::size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && (line[i] == ' ' || line[i] == '\t'))
            ++i;
        if (i >= line.size()) break;
        std::size_t b = i;
        while (i < line.size() && line[i] != ' ' && line[i] != '\t')
            ++i;
        out.push_back({line.substr(b, i - b), b + 1});
    }
    return out;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
        s.remove_suffix(1);
    return s;
}

// The line without its comment: '#' at the start or after a blank.
std::string_view strip_comment(std::string_view line) {
    for (std::size_t i = 0; i < line.size(); ++i)
        if (line[i] == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) return line.substr(0, i);
    return line;
}

struct Parser {
    std::string_view file;
    std::uint32_t line_no = 0;

    Error error(std::size_t col, const std::string& expected, std::string_view found) const {
        return Error::usage(fmt::format("{}:{}:{}: expected {}, found {}", file, line_no, col, expected,
                                        found.empty() ? std::string("end of line") : fmt::format("'{}'", found)));
    }

    Result<Condition> condition(const std::vector<Word>& w, std::size_t& i) const {
        Condition c;
        if (i >= w.size()) return fail(error(w.empty() ? 1 : w.back().col, "driver, kernel or flavour", ""));
        std::size_t first = i;
        const Word subject = w[i++];
        if (subject.text == "flavour" || subject.text == "flavor") {
            c.subject = Condition::Subject::flavour;
            if (i >= w.size() || (w[i].text != "open" && w[i].text != "proprietary"))
                return fail(error(i < w.size() ? w[i].col : subject.col + subject.text.size(), "open or proprietary",
                                  i < w.size() ? w[i].text : ""));
            c.flavour = std::string(w[i++].text);
        } else if (subject.text == "driver" || subject.text == "kernel") {
            c.subject = subject.text == "driver" ? Condition::Subject::driver : Condition::Subject::kernel;
            if (i >= w.size()) return fail(error(subject.col + subject.text.size(), "<, <=, ==, !=, >= or >", ""));
            static constexpr std::pair<std::string_view, Condition::Op> ops[] = {
                {"<", Condition::Op::lt},  {"<=", Condition::Op::le}, {"==", Condition::Op::eq},
                {"!=", Condition::Op::ne}, {">=", Condition::Op::ge}, {">", Condition::Op::gt}};
            bool found = false;
            for (auto [t, op] : ops)
                if (w[i].text == t) {
                    c.op = op;
                    found = true;
                }
            if (!found) return fail(error(w[i].col, "<, <=, ==, !=, >= or >", w[i].text));
            ++i;
            if (i >= w.size()) return fail(error(w[i - 1].col + w[i - 1].text.size(), "a version", ""));
            auto v = parse_driver_version(w[i].text);
            if (!v) return fail(error(w[i].col, "a version (e.g. 595.44.02)", w[i].text));
            c.version = *v;
            ++i;
        } else {
            return fail(error(subject.col, "driver, kernel or flavour", subject.text));
        }
        std::string text;
        for (std::size_t k = first; k < i; ++k)
            text += (k > first ? " " : "") + std::string(w[k].text);
        c.text = text;
        return c;
    }

    // "COND [and COND]..." from w[i] to the end.
    Result<std::vector<Condition>> conditions(const std::vector<Word>& w, std::size_t i) const {
        std::vector<Condition> out;
        while (true) {
            auto c = condition(w, i);
            if (!c) return fail(c.error());
            out.push_back(*c);
            if (i >= w.size()) return out;
            if (w[i].text != "and") return fail(error(w[i].col, "'and' or end of line", w[i].text));
            ++i;
        }
    }

    // Splits "... when COND" off; `end` is the index of "when" (or w.size()).
    Result<std::vector<Condition>> trailing_when(const std::vector<Word>& w, std::size_t& end) const {
        end = w.size();
        for (std::size_t k = 0; k < w.size(); ++k)
            if (w[k].text == "when") {
                end = k;
                return conditions(w, k + 1);
            }
        return std::vector<Condition>{};
    }

    // "A, B, C" or "A B C" (commas optional).
    static std::vector<std::string> list(const std::vector<Word>& w, std::size_t b, std::size_t e) {
        std::vector<std::string> out;
        for (std::size_t k = b; k < e; ++k) {
            std::string_view t = w[k].text;
            std::size_t start = 0;
            while (start <= t.size()) {
                std::size_t comma = t.find(',', start);
                std::string_view part = t.substr(start, comma == std::string_view::npos ? t.npos : comma - start);
                if (!part.empty()) out.emplace_back(part);
                if (comma == std::string_view::npos) break;
                start = comma + 1;
            }
        }
        return out;
    }

    Result<Fact> fact(const std::vector<Word>& all, std::string_view text) const {
        Fact f;
        f.line = line_no;
        f.text = std::string(text);
        std::size_t end = 0;
        auto when = trailing_when(all, end);
        if (!when) return fail(when.error());
        f.when = *when;
        // "... in api FUNCTION" before the "when": the fact's scope (chain, call, ioctl).
        if (end >= 3 && all[end - 3].text == "in" && all[end - 2].text == "api") {
            f.in_api = std::string(all[end - 1].text);
            end -= 3;
        } else if (end >= 2 && all[end - 2].text == "in" && all[end - 1].text == "api") {
            return fail(error(all[end - 1].col + all[end - 1].text.size(), "an API function name after 'in api'", ""));
        }
        std::size_t i = 0;
        if (i < end && all[i].text == "or") {
            f.alternative = true;
            ++i;
        }
        if (i < end && all[i].text == "absent") {
            f.absent = true;
            ++i;
        }
        if (i >= end)
            return fail(
                error(all.empty() ? 1 : all.back().col, "chain, call, ioctl, ioctls, log, result, phases or api", ""));
        const Word kw = all[i++];
        const std::size_t kw_end = kw.col + kw.text.size();
        if (kw.text == "chain" || kw.text == "call") {
            f.kind = Fact::Kind::chain;
            bool direct = true;
            bool want_name = true;
            for (std::size_t k = i; k < end; ++k) {
                std::string_view t = all[k].text;
                if (t == ">" || t == ">>") {
                    if (want_name) return fail(error(all[k].col, "a function name", t));
                    direct = t == ">";
                    want_name = true;
                    continue;
                }
                if (!want_name) return fail(error(all[k].col, "'>' or '>>'", t));
                f.chain.push_back({std::string(t), direct});
                want_name = false;
            }
            if (f.chain.empty()) return fail(error(kw_end, "a function name", ""));
            if (want_name) return fail(error(all[end - 1].col + all[end - 1].text.size(), "a function name", ""));
            if (kw.text == "call" && f.chain.size() != 1)
                return fail(
                    error(all[i + 1].col, "one function after 'call' (use 'chain' for several)", all[i + 1].text));
        } else if (kw.text == "ioctls" || kw.text == "phases") {
            if (f.absent) return fail(error(kw.col, "chain, call, ioctl or log after 'absent'", kw.text));
            f.kind = kw.text == "ioctls" ? Fact::Kind::ioctls : Fact::Kind::phases;
            f.names = list(all, i, end);
            if (f.names.empty()) return fail(error(kw_end, "a list of names", ""));
            if (f.kind == Fact::Kind::ioctls)
                for (const auto& n : f.names)
                    if (n.empty() || !check_values::ioctl_value(n))
                        return fail(error(all[i].col, kIoctlName, n.empty() ? std::string_view("an empty name") : n));
        } else if (kw.text == "ioctl" || kw.text == "log") {
            f.kind = kw.text == "ioctl" ? Fact::Kind::ioctl : Fact::Kind::log;
            if (i >= end) return fail(error(kw_end, kw.text == "ioctl" ? "an ioctl name" : "a kernel-log kind", ""));
            // A name or value nvtrace cannot match is refused here: `absent ioctl FIONRAED` (misspelt) would pass
            // on every report.
            if (kw.text == "ioctl" && !check_values::ioctl_value(all[i].text))
                return fail(error(all[i].col, kIoctlName, all[i].text));
            if (kw.text == "log" && !is_kernel_log_kind(all[i].text))
                return fail(error(all[i].col, "a kernel-log kind (docs/dmesg.md: xid, nv_status, bar_overlap, ...)",
                                  all[i].text));
            f.names.emplace_back(all[i++].text);
            for (; i < end; ++i) {
                std::string_view t = all[i].text;
                auto eq = t.find('=');
                if (eq == std::string_view::npos || eq == 0 || eq + 1 == t.size())
                    return fail(error(all[i].col, "key=value", t));
                std::string key(t.substr(0, eq));
                std::string_view value = t.substr(eq + 1);
                if (kw.text == "ioctl" && key != "hclass" && key != "status" && key != "ret" && key != "calls" &&
                    key != "fd")
                    return fail(error(all[i].col, "hclass=, status=, ret=, calls= or fd=", t));
                const std::size_t vcol = all[i].col + eq + 1;
                if (kw.text == "ioctl" && key == "ret" && !check_values::errno_value(value))
                    return fail(error(vcol, "a return value: a number or an errno name (0, -22, EINVAL)", value));
                if (kw.text == "ioctl" && key == "status" && !check_values::status_value(value))
                    return fail(error(vcol, "an NV_STATUS name or number (NV_OK, 0x1f)", value));
                // An Xid message's xid is the number its line printed (kernel_rc.c: "Xid (PCI:...): %d"); the
                // checker compares numbers by value and nothing else matches it.
                if (kw.text == "log" && f.names[0] == "xid" && key == "xid" && !check_values::number(value))
                    return fail(error(vcol, "an Xid number (79, 0x4f; the name is the field xid_name)", value));
                // A kernel-log line's PCI address (the checker compares addresses, not strings): a value that is none
                // could match no message, and `absent log xid pci=0000:3b:000` passed on every log.
                if (kw.text == "log" && (key == "pci" || key == "device") && !check_values::pci_address(value))
                    return fail(error(
                        vcol, "a PCI address, [DOMAIN:]BUS:DEVICE[.FUNCTION] in hex (0000:01:00.0, 01:00.0)", value));
                if (kw.text == "ioctl" && key == "hclass" && !check_values::hclass_value(value))
                    return fail(
                        error(vcol, "an RM class name or number (NV01_MEMORY_SYSTEM_OS_DESCRIPTOR, 0x71)", value));
                f.fields.emplace_back(key, std::string(value));
            }
        } else if (kw.text == "api") {
            f.kind = Fact::Kind::api;
            if (f.in_api) return fail(error(kw.col, "chain, call or ioctl before 'in api'", kw.text));
            // "api F = RESULT", "api F=RESULT" or "api F"
            std::string rest;
            for (std::size_t k = i; k < end; ++k)
                rest += std::string(all[k].text);
            auto eq = rest.find('=');
            if (rest.empty() || eq == 0)
                return fail(error(i < end ? all[i].col : kw_end, "an API function name", i < end ? all[i].text : ""));
            f.names.push_back(rest.substr(0, eq));
            if (eq != std::string::npos) {
                std::string value = rest.substr(eq + 1);
                // A result nvtrace cannot match is refused: `absent api cuInit = CUDA_ERROR_NOT_INITIALISED`
                // (misspelt) would pass on every report.
                if (value.empty() || !check_values::api_result_value(value))
                    return fail(
                        error(i < end ? all[end - 1].col : kw_end,
                              "a CUresult or cudaError_t name (CUDA_SUCCESS, cudaErrorInvalidValue) or a number",
                              value.empty() ? std::string_view() : std::string_view(all[end - 1].text)));
                f.fields.emplace_back("", value);
            }
        } else if (kw.text == "result") {
            if (f.absent) return fail(error(kw.col, "chain, call, ioctl or log after 'absent'", kw.text));
            f.kind = Fact::Kind::result;
            // "result KEY = VALUE" or "result KEY=VALUE"
            std::string rest;
            for (std::size_t k = i; k < end; ++k)
                rest += std::string(all[k].text);
            auto eq = rest.find('=');
            if (eq == std::string::npos || eq == 0 || eq + 1 == rest.size())
                return fail(error(i < end ? all[i].col : kw_end, "KEY = VALUE", i < end ? all[i].text : ""));
            f.names.push_back(rest.substr(0, eq));
            f.fields.emplace_back("", rest.substr(eq + 1));
        } else {
            return fail(error(kw.col, "chain, call, ioctl, ioctls, log, result, phases or api", kw.text));
        }
        if (f.in_api && f.kind != Fact::Kind::chain && f.kind != Fact::Kind::ioctl)
            return fail(error(kw.col, "chain, call or ioctl before 'in api'", kw.text));
        return f;
    }
};

bool valid_id(std::string_view id) {
    if (id.empty()) return false;
    for (char c : id)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) return false;
    return true;
}

// Text after " -- " on the line (title or reason), trimmed; the words before it in `head`.
std::pair<std::string_view, std::string_view> split_dashes(std::string_view line) {
    auto p = line.find(" -- ");
    if (p == std::string_view::npos) return {line, {}};
    return {line.substr(0, p), trim(line.substr(p + 4))};
}

}  // namespace

Result<ExpectFile> parse_expectations(std::string_view text, std::string_view file_name) {
    ExpectFile out;
    out.file_name = std::string(file_name);
    Parser p{file_name};
    Expectation* cur = nullptr;
    std::size_t pos = 0;
    while (pos <= text.size()) {
        std::size_t nl = text.find('\n', pos);
        std::string_view raw = text.substr(pos, nl == std::string_view::npos ? text.npos : nl - pos);
        if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);  // a file with CRLF line ends (Windows editors)
        pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
        ++p.line_no;
        std::string_view line = strip_comment(raw);
        if (trim(line).empty()) continue;
        auto [head, tail] = split_dashes(line);
        auto words = split_words(head);
        if (words.empty()) return fail(p.error(1, "a directive", trim(line)));
        const Word kw = words[0];
        const std::size_t kw_end = kw.col + kw.text.size();
        auto rest_of = [&](std::size_t from) {
            std::string_view r = from < words.size() ? line.substr(words[from].col - 1) : std::string_view{};
            return std::string(trim(r));
        };
        if (kw.text == "format") {
            if (words.size() != 2 || words[1].text != kExpectFormat)
                return fail(p.error(words.size() > 1 ? words[1].col : kw_end, kExpectFormat,
                                    words.size() > 1 ? words[1].text : ""));
        } else if (kw.text == "title") {
            (cur ? cur->title : out.title) = rest_of(1);
        } else if (kw.text == "untraced") {
            if (cur) return fail(p.error(kw.col, "'untraced' before the first check", kw.text));
            Untraced u;
            u.line = p.line_no;
            std::size_t end = 0;
            auto when = p.trailing_when(words, end);
            if (!when) return fail(when.error());
            u.when = *when;
            for (std::size_t k = 1; k < end; ++k)
                u.functions.emplace_back(words[k].text);
            if (u.functions.empty()) return fail(p.error(kw_end, "function names", ""));
            u.reason = std::string(tail);
            if (u.reason.empty())
                return fail(p.error(line.size() + 1, "' -- REASON' (why ftrace cannot see these functions)", ""));
            out.untraced.push_back(std::move(u));
        } else if (kw.text == "check") {
            if (words.size() < 2) return fail(p.error(kw_end, "a check id", ""));
            if (!valid_id(words[1].text))
                return fail(p.error(words[1].col, "a check id (letters, digits, '-', '_', '.')", words[1].text));
            if (words.size() > 2) return fail(p.error(words[2].col, "' -- TITLE' or end of line", words[2].text));
            for (const auto& c : out.checks)
                if (c.id == words[1].text)
                    return fail(Error::usage(fmt::format("{}:{}:{}: check id '{}' already used on line {}", file_name,
                                                         p.line_no, words[1].col, c.id, c.line)));
            out.checks.push_back({});
            cur = &out.checks.back();
            cur->id = std::string(words[1].text);
            cur->title = std::string(tail);
            cur->line = p.line_no;
        } else if (!cur) {
            return fail(p.error(kw.col, "format, title, untraced or check", kw.text));
        } else if (kw.text == "source") {
            // A source may contain " -- ": take the whole line.
            std::string_view full = trim(strip_comment(raw));
            cur->sources.emplace_back(trim(full.substr(kw.text.size())));
            if (cur->sources.back().empty()) return fail(p.error(kw_end, "where the fact comes from", ""));
        } else if (kw.text == "phase") {
            if (words.size() != 2)
                return fail(p.error(words.size() > 2 ? words[2].col : kw_end, "one phase name",
                                    words.size() > 2 ? words[2].text : ""));
            cur->phase = std::string(words[1].text);
        } else if (kw.text == "when") {
            auto c = p.conditions(words, 1);
            if (!c) return fail(c.error());
            cur->when.insert(cur->when.end(), c->begin(), c->end());
        } else {
            auto f = p.fact(words, trim(head));
            if (!f) return fail(f.error());
            if (f->alternative && cur->facts.empty())
                return fail(p.error(kw.col, "a fact before the first 'or'", kw.text));
            cur->facts.push_back(std::move(*f));
        }
    }
    // A file that checks nothing would let every report pass.
    if (out.checks.empty())
        return fail(Error::usage(
            fmt::format("{}:{}:1: expected at least one check: the file holds no checks, so nothing would be checked",
                        file_name, p.line_no)));
    for (const auto& c : out.checks)
        if (c.facts.empty())
            return fail(
                Error::usage(fmt::format("{}:{}:1: check '{}' has no fact (chain, call, ioctl, ioctls, log, "
                                         "result, phases, api)",
                                         file_name, c.line, c.id)));
    return out;
}

Result<ExpectFile> read_expectations_file(const std::string& path) {
    // An ifstream opens a directory and reads it as empty: that must not pass as a file without checks.
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        return fail(Error::usage(fmt::format("{}: is a directory, not an expectations file", path)));
    std::ifstream in(path, std::ios::binary);
    if (!in) return fail(Error::usage(fmt::format("{}: cannot open: {}", path, std::strerror(errno))));
    std::ostringstream s;
    s << in.rdbuf();
    return parse_expectations(s.str(), path);
}

}  // namespace nvtrace
