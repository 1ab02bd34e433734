// Reader of strace text: ioctl calls with their fds' paths (from -y, or from open/openat/close/dup lines).
#include <cctype>
#include <charconv>
#include <map>

#include <fmt/format.h>

#include "nvtrace/knowledge.hpp"

namespace nvtrace {

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
        s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
        s.remove_suffix(1);
    return s;
}

bool starts_with(std::string_view s, std::string_view p) {
    return s.substr(0, p.size()) == p;
}

template <class T>
std::optional<T> parse_int(std::string_view s) {
    s = trim(s);
    bool neg = false;
    if (!s.empty() && s.front() == '-') {
        neg = true;
        s.remove_prefix(1);
    }
    int base = 10;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s.remove_prefix(2);
    }
    std::uint64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
    if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
    if (neg) return static_cast<T>(-static_cast<std::int64_t>(v));
    return static_cast<T>(v);
}

// One syscall line, split into its parts. `args` is the text inside the outer parentheses.
struct Line {
    std::optional<int> pid;
    std::string_view name;
    std::string_view args;
    std::string_view result;  // after " = ", without a trailing " <0.000012>"
    bool unfinished = false;  // "... <unfinished ...>"
    bool resumed = false;     // "<... ioctl resumed>..."
    bool complete = false;    // closing parenthesis and " = " seen
};

// Skips "[pid N] ", "N " (strace -f into one file) and -t/-tt/-ttt/-r timestamps.
std::string_view strip_prefix(std::string_view s, std::optional<int>& pid) {
    s = trim(s);
    if (starts_with(s, "[pid ")) {
        auto close = s.find(']');
        if (close != std::string_view::npos) {
            pid = parse_int<int>(s.substr(5, close - 5));
            s = trim(s.substr(close + 1));
        }
    }
    for (int i = 0; i < 2; ++i) {  // a pid column, then a timestamp column, in either order
        std::size_t n = 0;
        while (n < s.size() && (std::isdigit(static_cast<unsigned char>(s[n])) || s[n] == '.' || s[n] == ':'))
            ++n;
        if (n == 0 || n >= s.size() || s[n] != ' ') break;
        std::string_view tok = s.substr(0, n);
        if (tok.find_first_of(".:") == std::string_view::npos && !pid) pid = parse_int<int>(tok);
        s = trim(s.substr(n));
    }
    return s;
}

// Index of the parenthesis closing the one at `open`, skipping strings, or npos.
std::size_t matching_paren(std::string_view s, std::size_t open) {
    int depth = 0;
    bool in_str = false;
    for (std::size_t i = open; i < s.size(); ++i) {
        char ch = s[i];
        if (in_str) {
            if (ch == '\\')
                ++i;
            else if (ch == '"')
                in_str = false;
            continue;
        }
        if (ch == '"')
            in_str = true;
        else if (ch == '(' || ch == '{' || ch == '[')
            ++depth;
        else if (ch == ')' || ch == '}' || ch == ']') {
            if (--depth == 0) return i;
        }
    }
    return std::string_view::npos;
}

std::optional<Line> tokenize(std::string_view raw) {
    Line l;
    std::string_view s = strip_prefix(raw, l.pid);
    if (starts_with(s, "<... ")) {
        auto end = s.find(" resumed>");
        if (end == std::string_view::npos) return std::nullopt;
        l.name = s.substr(5, end - 5);
        l.resumed = true;
        std::string_view rest = s.substr(end + 9);
        auto close = rest.rfind(") = ");
        if (close == std::string_view::npos) return l;
        l.args = rest.substr(0, close);
        l.result = rest.substr(close + 4);
        l.complete = true;
    } else {
        auto open = s.find('(');
        if (open == std::string_view::npos || open == 0) return std::nullopt;
        l.name = s.substr(0, open);
        for (char ch : l.name)
            if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_')) return std::nullopt;
        if (auto u = s.find(" <unfinished ...>"); u != std::string_view::npos) {
            l.unfinished = true;
            l.args = s.substr(open + 1, u - open - 1);
            return l;
        }
        auto close = matching_paren(s, open);
        if (close == std::string_view::npos) {
            l.args = s.substr(open + 1);
            return l;  // incomplete: truncated
        }
        l.args = s.substr(open + 1, close - open - 1);
        std::string_view rest = trim(s.substr(close + 1));
        if (!starts_with(rest, "=")) return l;
        l.result = trim(rest.substr(1));
        l.complete = true;
    }
    // -T appends " <0.000012>".
    if (auto lt = l.result.rfind(" <");
        lt != std::string_view::npos && l.result.back() == '>' && l.result.find("resumed") == std::string_view::npos)
        l.result = trim(l.result.substr(0, lt));
    return l;
}

// Top-level comma-separated arguments (commas inside (), {}, [] and strings do not split).
std::vector<std::string_view> split_args(std::string_view s) {
    std::vector<std::string_view> out;
    int depth = 0;
    bool in_str = false;
    std::size_t start = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
        char ch = s[i];
        if (in_str) {
            if (ch == '\\')
                ++i;
            else if (ch == '"')
                in_str = false;
            continue;
        }
        if (ch == '"')
            in_str = true;
        else if (ch == '(' || ch == '{' || ch == '[')
            ++depth;
        else if (ch == ')' || ch == '}' || ch == ']')
            --depth;
        else if (ch == ',' && depth == 0) {
            out.push_back(trim(s.substr(start, i - start)));
            start = i + 1;
        }
    }
    if (start < s.size() || !out.empty()) out.push_back(trim(s.substr(start)));
    return out;
}

// "14</dev/nvidiactl>" -> (14, "/dev/nvidiactl"); "AT_FDCWD" -> nullopt.
std::optional<std::pair<int, std::optional<std::string>>> parse_fd(std::string_view s) {
    std::optional<std::string> path;
    if (auto lt = s.find('<'); lt != std::string_view::npos && s.back() == '>') {
        std::string_view p = s.substr(lt + 1, s.size() - lt - 2);
        if (auto inner = p.find('<'); inner != std::string_view::npos) p = p.substr(0, inner);  // -yy "<char 195:0>"
        path = std::string(p);
        s = s.substr(0, lt);
    }
    auto fd = parse_int<int>(s);
    if (!fd) return std::nullopt;
    return std::make_pair(*fd, path);
}

// A quoted strace string; escapes kept as printed except \" and \\ .
std::optional<std::string> parse_string(std::string_view s) {
    if (s.size() < 2 || s.front() != '"') return std::nullopt;
    std::string out;
    for (std::size_t i = 1; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 1 < s.size()) {
            out += s[++i];
            continue;
        }
        if (s[i] == '"') return out;
        out += s[i];
    }
    return std::nullopt;
}

// "_IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2b, 0x28)", "0xc028462b", "TCGETS", "DRM_IOCTL_VERSION".
std::optional<std::uint64_t> parse_request(std::string_view s) {
    s = trim(s);
    if (starts_with(s, "_IOC(") && s.back() == ')') {
        auto parts = split_args(s.substr(5, s.size() - 6));
        if (parts.size() != 4) return std::nullopt;
        unsigned dir = 0;
        std::string_view d = parts[0];
        if (d.find("_IOC_WRITE") != std::string_view::npos) dir |= 1;
        if (d.find("_IOC_READ") != std::string_view::npos) dir |= 2;
        if (dir == 0 && d.find("_IOC_NONE") == std::string_view::npos) {
            auto n = parse_int<unsigned>(d);
            if (!n) return std::nullopt;
            dir = *n;
        }
        auto type = parse_int<unsigned>(parts[1]);
        auto nr = parse_int<unsigned>(parts[2]);
        auto size = parse_int<unsigned>(parts[3]);
        if (!type || !nr || !size) return std::nullopt;
        return encode_ioc(dir, *type, *nr, *size);
    }
    if (auto n = parse_int<std::uint64_t>(s)) return *n;
    // strace -X verbose prints "0xc0406400 /* DRM_IOCTL_VERSION */".
    if (auto c = s.find(" /*"); c != std::string_view::npos) return parse_request(s.substr(0, c));
    return ioctl_number_by_name(s);
}

struct CallResult {
    std::optional<std::int64_t> ret;
    std::optional<std::string> error;
    std::optional<std::string> fd_path;  // -y on a returned fd: "= 15</dev/nvidiactl>"
};

CallResult parse_result(std::string_view r) {
    CallResult out;
    r = trim(r);
    std::string_view num = r;
    std::string_view rest;
    if (auto sp = r.find(' '); sp != std::string_view::npos) {
        num = r.substr(0, sp);
        rest = trim(r.substr(sp + 1));
    }
    if (auto fd = parse_fd(num); fd && fd->second) {
        out.ret = fd->first;
        out.fd_path = fd->second;
        return out;
    }
    out.ret = parse_int<std::int64_t>(num);
    if (out.ret && *out.ret < 0 && !rest.empty()) out.error = std::string(rest);
    return out;
}

}  // namespace

StraceLog parse_strace(std::string_view text, std::string_view source) {
    StraceLog log;
    std::map<int, std::string> fds;      // fd -> path, as of the current line
    std::map<int, std::size_t> pending;  // pid (or -1) -> index of an unfinished ioctl
    auto diag = [&](const char* name, const char* severity, std::uint32_t line, std::string_view what) {
        count_diagnostic(log.diagnostics, name, severity, fmt::format("{}:{}: {}", source, line, what));
    };

    std::uint32_t lineno = 0;
    std::size_t pos = 0;
    bool last_truncated = false;
    while (pos < text.size()) {
        auto nl = text.find('\n', pos);
        std::string_view raw = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
        pos = nl == std::string_view::npos ? text.size() : nl + 1;
        ++lineno;
        if (trim(raw).empty()) continue;
        last_truncated = false;
        auto l = tokenize(raw);
        if (!l) continue;  // signals, "+++ exited", "--- SIGCHLD": not calls
        const bool truncated = !l->complete && !l->unfinished;
        if (truncated) {
            last_truncated = true;
            diag("strace_truncated_line", "data_loss", lineno, "line ends mid-call");
        }
        auto args = split_args(l->args);
        CallResult res = l->complete ? parse_result(l->result) : CallResult{};

        if (l->name == "ioctl") {
            if (l->resumed) {
                auto it = pending.find(l->pid.value_or(-1));
                if (it == pending.end()) continue;
                StraceIoctl& io = log.ioctls[it->second];
                io.ret = res.ret;
                io.error = res.error;
                io.truncated = truncated;
                pending.erase(it);
                continue;
            }
            StraceIoctl io;
            io.line = lineno;
            io.pid = l->pid;
            io.truncated = truncated;
            auto fd = args.empty() ? std::nullopt : parse_fd(args[0]);
            if (!fd) {
                diag("strace_malformed_ioctl", "error", lineno, "no fd in ioctl()");
                continue;
            }
            io.fd = fd->first;
            if (fd->second)
                io.fd_path = fd->second;
            else if (auto it = fds.find(io.fd); it != fds.end())
                io.fd_path = it->second;
            if (args.size() >= 2) {
                io.cmd_text = std::string(args[1]);
                // A truncated line may cut the request itself: keep it only when it parsed whole.
                if (!truncated || args.size() >= 3) io.cmd = parse_request(args[1]);
                if (!io.cmd && !truncated) diag("strace_unknown_request", "info", lineno, io.cmd_text);
            }
            if (args.size() >= 3) io.arg = std::string(args[2]);
            io.ret = res.ret;
            io.error = res.error;
            if (l->unfinished) pending[l->pid.value_or(-1)] = log.ioctls.size();
            log.ioctls.push_back(std::move(io));
            continue;
        }
        if (!l->complete || !res.ret || *res.ret < 0) continue;
        const std::string_view n = l->name;
        if (n == "open" || n == "openat" || n == "creat" || n == "openat2") {
            std::size_t path_arg = n == "openat" || n == "openat2" ? 1 : 0;
            if (args.size() <= path_arg) continue;
            auto path = res.fd_path ? res.fd_path : parse_string(args[path_arg]);
            if (!path) continue;
            int fd = static_cast<int>(*res.ret);
            fds[fd] = *path;
            log.opens.push_back({lineno, fd, *path});
        } else if (n == "close" && !args.empty()) {
            if (auto fd = parse_fd(args[0])) fds.erase(fd->first);
        } else if ((n == "dup" || n == "dup2" || n == "dup3" ||
                    (n == "fcntl" && args.size() >= 2 && starts_with(args[1], "F_DUPFD"))) &&
                   !args.empty()) {
            if (auto fd = parse_fd(args[0])) {
                auto it = fds.find(fd->first);
                std::optional<std::string> path = fd->second;
                if (!path && it != fds.end()) path = it->second;
                if (path) fds[static_cast<int>(*res.ret)] = *path;
            }
        }
    }
    log.lines = lineno;
    log.truncated = last_truncated;
    return log;
}

std::vector<IoctlRecord> strace_ioctl_records(const StraceLog& log) {
    std::vector<IoctlRecord> out;
    for (const StraceIoctl& io : log.ioctls) {
        IoctlRecord r;
        r.pid = io.pid.value_or(-1);
        r.fd = io.fd;
        r.fd_path = io.fd_path;
        r.cmd = io.cmd.value_or(0);
        if (io.cmd) r.name = describe_ioctl(*io.cmd, io.fd_path).name;
        r.ret = io.ret;
        out.push_back(std::move(r));
    }
    return out;
}

}  // namespace nvtrace
