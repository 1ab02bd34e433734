// Reader of strace text: ioctl calls with their fds' paths (from -y, or from open/openat/close/dup lines).
#include <cctype>
#include <charconv>
#include <cstring>
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
    std::string_view comm;   // --decode-pids=comm: the comm printed with the pid ("python3"), or empty
    std::string_view stamp;  // the -t/-tt/-ttt/-r column as printed ("10:15:30.123456"); empty without one
    std::string_view name;
    std::string_view args;
    std::string_view result;  // after " = ", without a trailing " <0.000012>"
    std::string_view dash_t;  // that trailing "<0.000012>" (-T), or empty
    bool unfinished = false;  // "... <unfinished ...>"
    bool resumed = false;     // "<... ioctl resumed>..."
    bool complete = false;    // closing parenthesis and " = " seen
};

// "1234" or, with --decode-pids=comm, "1234<python3>" (strace printleader: the comm quoted with '<' and '>'
// escaped, so the first '>' closes it): the pid.
std::optional<int> prefix_pid(std::string_view tok, std::string_view* comm = nullptr) {
    if (auto lt = tok.find('<'); lt != std::string_view::npos && tok.back() == '>') {
        if (comm) *comm = tok.substr(lt + 1, tok.size() - lt - 2);
        tok = tok.substr(0, lt);
    }
    return parse_int<int>(tok);
}

// Skips "[pid N] ", "N " (strace -f into one file), their --decode-pids=comm forms "[pid N<comm>] " and
// "N<comm> ", and -t/-tt/-ttt/-r timestamps (the last one kept in `stamp`).
std::string_view strip_prefix(std::string_view s, std::optional<int>& pid, std::string_view* stamp = nullptr,
                              std::string_view* comm = nullptr) {
    s = trim(s);
    if (starts_with(s, "[pid ")) {
        std::size_t from = 5;  // a comm may hold ']'
        if (auto lt = s.find('<'); lt != std::string_view::npos && lt < s.find(']')) from = s.find('>', lt);
        auto close = from == std::string_view::npos ? from : s.find(']', from);
        if (close != std::string_view::npos) {
            pid = prefix_pid(trim(s.substr(5, close - 5)), comm);
            s = trim(s.substr(close + 1));
        }
    }
    for (int i = 0; i < 2; ++i) {  // a pid column, then a timestamp column, in either order
        std::size_t n = 0;
        while (n < s.size() && (std::isdigit(static_cast<unsigned char>(s[n])) || s[n] == '.' || s[n] == ':'))
            ++n;
        if (n > 0 && n < s.size() && s[n] == '<') {  // "1234<python3> "
            std::size_t gt = s.find('>', n);
            if (gt == std::string_view::npos || gt + 1 >= s.size() || s[gt + 1] != ' ') break;
            if (!pid) pid = prefix_pid(s.substr(0, gt + 1), comm);
            s = trim(s.substr(gt + 1));
            continue;
        }
        if (n == 0 || n >= s.size() || s[n] != ' ') break;
        std::string_view tok = s.substr(0, n);
        if (tok.find_first_of(".:") == std::string_view::npos) {
            if (!pid) pid = parse_int<int>(tok);
        } else if (stamp) {
            *stamp = tok;
        }
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
    std::string_view s = strip_prefix(raw, l.pid, &l.stamp, &l.comm);
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
        lt != std::string_view::npos && l.result.back() == '>' && l.result.find("resumed") == std::string_view::npos) {
        l.dash_t = trim(l.result.substr(lt));
        l.result = trim(l.result.substr(0, lt));
    }
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

// A request as strace's SYS_FUNC(ioctl) (src/ioctl.c) prints it, and why it gave no number when it did not.
struct Request {
    std::optional<std::uint64_t> cmd;
    bool malformed = false;  // not something strace prints (a field too wide): the line is damaged
    std::string why;         // without cmd: what was expected
};

// The _IOC fields' widths on x86-64, include/uapi/asm-generic/ioctl.h: _IOC_NRBITS 8, _IOC_TYPEBITS 8,
// _IOC_SIZEBITS 14, _IOC_DIRBITS 2. strace prints each field already masked (_IOC_TYPE(code), ...), so a wider
// value is not strace's output.
Request ioc_request(std::string_view text, unsigned dir, std::uint64_t type, std::uint64_t nr, std::uint64_t size) {
    Request r;
    auto too_wide = [&](std::string_view field, std::uint64_t v, unsigned bits) {
        r.malformed = true;
        r.why = fmt::format(
            "request {}: _IOC {} 0x{:x} does not fit its {} bits (include/uapi/asm-generic/ioctl.h: "
            "expected _IOC(dir, type <= 0xff, nr <= 0xff, size <= 0x3fff))",
            text, field, v, bits);
        return r;
    };
    if (type > 0xff) return too_wide("type", type, 8);
    if (nr > 0xff) return too_wide("nr", nr, 8);
    if (size > 0x3fff) return too_wide("size", size, 14);
    r.cmd = encode_ioc(dir, static_cast<unsigned>(type), static_cast<unsigned>(nr), static_cast<unsigned>(size));
    return r;
}

// "_IOC_READ|_IOC_WRITE", "_IOC_NONE", "0" (the older spelling of _IOC_NONE): strace's ioctl_dirs xlat.
std::optional<unsigned> parse_ioc_dir(std::string_view d) {
    unsigned dir = 0;
    bool any = false;
    while (!d.empty()) {
        std::size_t bar = d.find('|');
        std::string_view tok = trim(d.substr(0, bar));
        d = bar == std::string_view::npos ? std::string_view() : d.substr(bar + 1);
        any = true;
        if (tok == "_IOC_NONE") continue;
        if (tok == "_IOC_WRITE")
            dir |= 1;
        else if (tok == "_IOC_READ")
            dir |= 2;
        else if (auto n = parse_int<std::uint64_t>(tok); n && *n <= 3)
            dir |= static_cast<unsigned>(*n);
        else
            return std::nullopt;
    }
    if (!any) return std::nullopt;
    return dir;
}

// strace's decoders that print a request as NAME(size) (src/ioctl.c: evdev_decode_number, hiddev_decode_number,
// ioctl_decode_command_number): direction, type and nr are fixed, the printed value is _IOC_SIZE. Decoders whose
// printed value is not the size (EVIOCGABS, EVIOCSABS, MIXER_READ, MIXER_WRITE: the size is not printed) and
// HIDIOCSFEATURE (_IOC_READ or _IOC_READ|_IOC_WRITE) give no number.
struct SizedRequest {
    std::string_view name;
    unsigned dir;
    char type;
    unsigned nr;
};
constexpr SizedRequest kSizedRequests[] = {
    {"EVIOCGNAME", 2, 'E', 0x06},     {"EVIOCGPHYS", 2, 'E', 0x07},      {"EVIOCGUNIQ", 2, 'E', 0x08},
    {"EVIOCGPROP", 2, 'E', 0x09},     {"EVIOCGMTSLOTS", 2, 'E', 0x0a},   {"EVIOCGKEY", 2, 'E', 0x18},
    {"EVIOCGLED", 2, 'E', 0x19},      {"EVIOCGSND", 2, 'E', 0x1a},       {"EVIOCGSW", 2, 'E', 0x1b},
    {"HIDIOCGRAWNAME", 2, 'H', 0x04}, {"HIDIOCGRAWPHYS", 2, 'H', 0x05},  {"HIDIOCGRAWUNIQ", 2, 'H', 0x08},
    {"HIDIOCGPHYS", 2, 'H', 0x12},    {"HIDIOCGFEATURE", 3, 'H', 0x07},  {"UI_GET_SYSNAME", 2, 'U', 0x2c},
    {"JSIOCGNAME", 2, 'j', 0x13},     {"SPI_IOC_MESSAGE", 1, 'k', 0x00},
};
// EVIOCGBIT(ev, len): _IOC(_IOC_READ, 'E', 0x20 + ev, len), ev printed as 0 or by its EV_* name
// (include/uapi/linux/input-event-codes.h, strace's xlat/evdev_ev.in).
constexpr std::pair<std::string_view, unsigned> kEvdevTypes[] = {
    {"EV_SYN", 0x00}, {"EV_KEY", 0x01}, {"EV_REL", 0x02}, {"EV_ABS", 0x03}, {"EV_MSC", 0x04}, {"EV_SW", 0x05},
    {"EV_LED", 0x11}, {"EV_SND", 0x12}, {"EV_REP", 0x14}, {"EV_FF", 0x15},  {"EV_PWR", 0x16}, {"EV_FF_STATUS", 0x17},
};

// One alternative of a symbolic request: "TCGETS", "EVIOCGNAME(256)", "EVIOCGBIT(EV_KEY, 96)".
std::optional<std::uint64_t> named_request(std::string_view s) {
    if (auto open = s.find('('); open != std::string_view::npos && s.back() == ')') {
        std::string_view name = s.substr(0, open);
        auto args = split_args(s.substr(open + 1, s.size() - open - 2));
        if (name == "EVIOCGBIT" && args.size() == 2) {
            std::optional<unsigned> ev;
            if (auto n = parse_int<unsigned>(args[0]); n && *n <= 0x1f) ev = *n;
            for (auto [nm, v] : kEvdevTypes)
                if (args[0] == nm) ev = v;
            auto len = parse_int<std::uint64_t>(args[1]);
            if (!ev || !len || *len > 0x3fff) return std::nullopt;
            return encode_ioc(2, 'E', 0x20 + *ev, static_cast<unsigned>(*len));
        }
        for (const SizedRequest& q : kSizedRequests) {
            if (name != q.name || args.size() != 1) continue;
            auto len = parse_int<std::uint64_t>(args[0]);
            if (!len || *len > 0x3fff) return std::nullopt;
            return encode_ioc(q.dir, static_cast<unsigned char>(q.type), q.nr, static_cast<unsigned>(*len));
        }
        return std::nullopt;
    }
    return ioctl_number_by_name(s);
}

// The request argument as strace prints it (src/ioctl.c, SYS_FUNC(ioctl)): -X abbrev (the default) prints the
// name from strace's ioctl table, every name of that number joined by " or " ("FIONREAD or TIOCINQ"), a decoder's
// "EVIOCGNAME(256)", or "_IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2b, 0x28)" for a number it has no name for; -X raw
// the number "0xc028462b"; -X verbose the number and the name in a comment "0xc0406400 /* DRM_IOCTL_VERSION */".
Request parse_request(std::string_view s) {
    s = trim(s);
    Request r;
    if (starts_with(s, "_IOC(") && s.back() == ')') {
        auto parts = split_args(s.substr(5, s.size() - 6));
        auto dir = parts.size() == 4 ? parse_ioc_dir(parts[0]) : std::nullopt;
        auto type = parts.size() == 4 ? parse_int<std::uint64_t>(parts[1]) : std::nullopt;
        auto nr = parts.size() == 4 ? parse_int<std::uint64_t>(parts[2]) : std::nullopt;
        auto size = parts.size() == 4 ? parse_int<std::uint64_t>(parts[3]) : std::nullopt;
        if (!dir || !type || !nr || !size) {
            r.malformed = true;
            r.why = fmt::format(
                "request {}: expected _IOC(dir, type, nr, size) with dir _IOC_NONE, _IOC_READ, "
                "_IOC_WRITE or both joined by '|', and numbers",
                s);
            return r;
        }
        return ioc_request(s, *dir, *type, *nr, *size);
    }
    if (starts_with(s, "0x") || (!s.empty() && std::isdigit(static_cast<unsigned char>(s.front())))) {
        // -X verbose: the number, then its name (or _IOC(...)) in a comment.
        std::string_view num = s.substr(0, s.find(' '));
        std::string_view rest = trim(s.substr(num.size()));
        auto n = parse_int<std::uint64_t>(num);
        if (n && *n <= 0xffffffffu &&
            (rest.empty() || (starts_with(rest, "/*") && rest.size() >= 4 && rest.substr(rest.size() - 2) == "*/"))) {
            r.cmd = *n;
            return r;
        }
        r.malformed = true;
        r.why = n && *n > 0xffffffffu
                    ? fmt::format(
                          "request {}: does not fit the 32 bits of ioctl(2)'s request (strace prints it as "
                          "an unsigned int)",
                          s)
                    : fmt::format("request {}: expected a number, optionally followed by /* its name */", s);
        return r;
    }
    // Every name strace printed for the number: they are one number, so the first nvtrace knows gives it; two
    // known names with different numbers say nvtrace's table and strace's disagree, and give none.
    std::string_view rest = s;
    std::vector<std::string_view> names;
    while (!rest.empty()) {
        std::size_t sep = rest.find(" or ");
        names.push_back(trim(rest.substr(0, sep)));
        rest = sep == std::string_view::npos ? std::string_view() : rest.substr(sep + 4);
    }
    for (std::string_view name : names) {
        auto n = named_request(name);
        if (!n) continue;
        if (r.cmd && *r.cmd != *n) {
            r.why = fmt::format(
                "request {}: names nvtrace knows with different numbers (0x{:x}, 0x{:x}); the call is "
                "left out of ioctls",
                s, *r.cmd, *n);
            r.cmd.reset();
            return r;
        }
        r.cmd = n;
    }
    if (!r.cmd)
        r.why = fmt::format(
            "request {}: a name nvtrace has no number for (strace -X raw or -X verbose prints the "
            "number); the call is left out of ioctls",
            s);
    return r;
}

struct CallResult {
    std::optional<std::int64_t> ret;  // as printed: libc's -1 for a failed call
    // What the kernel returned: -errno for a failed call whose errno is known, ret otherwise; nullopt when a
    // failed call's errno is not known (a name nvtrace has no number for, a -1 without an errno).
    std::optional<std::int64_t> syscall_ret;
    std::optional<std::string> error;  // everything after the value: "ENOTTY (Inappropriate ioctl for device)"
    std::optional<std::string> errno_name, errno_text;
    std::optional<int> errno_number;     // from the name (strace's errno table), or "(errno 530)"
    std::optional<std::string> fd_path;  // -y on a returned fd: "= 15</dev/nvidiactl>"
    std::optional<std::uint64_t> duration_ns;
    std::optional<std::string> problem;  // why the result could not be read, and what was expected
};

// The errno names strace prints (src/linux/generic/errnoent.h, generated from the kernel's
// include/uapi/asm-generic/errno-base.h, errno.h and include/linux/errno.h): 1..133 with the numbering the C
// library names on this ABI (strerrorname_np), and the kernel-internal codes 512..530.
std::optional<int> errno_number_of(std::string_view name) {
    static const std::map<std::string, int, std::less<>> table = [] {
        std::map<std::string, int, std::less<>> t;
        for (int e = 1; e < 512; ++e)
            if (const char* n = strerrorname_np(e)) t.emplace(n, e);
        for (auto [e, n] : {std::pair<int, const char*>{512, "ERESTARTSYS"},
                            {513, "ERESTARTNOINTR"},
                            {514, "ERESTARTNOHAND"},
                            {515, "ENOIOCTLCMD"},
                            {516, "ERESTART_RESTARTBLOCK"},
                            {517, "EPROBE_DEFER"},
                            {518, "EOPENSTALE"},
                            {519, "ENOPARAM"},
                            {521, "EBADHANDLE"},
                            {522, "ENOTSYNC"},
                            {523, "EBADCOOKIE"},
                            {524, "ENOTSUPP"},
                            {525, "ETOOSMALL"},
                            {526, "ESERVERFAULT"},
                            {527, "EBADTYPE"},
                            {528, "EJUKEBOX"},
                            {529, "EIOCBQUEUED"},
                            {530, "ERECALLCONFLICT"}})
            t.emplace(n, e);
        return t;
    }();
    auto it = table.find(name);
    if (it == table.end()) return std::nullopt;
    return it->second;
}

// A failed call's errno after the value, in the forms of strace's src/syscall.c: print_err_ret
// "ENOTTY (Inappropriate ioctl for device)" (the name, then strerror), "(errno 530)" for a number strace has no
// name for (strace 4.10 and later), "E??? (errno 530)" (before 4.10); print_erestart "ERESTARTSYS (To be
// restarted if SA_RESTART is set)". Fault injection (-e inject) appends " (INJECTED)".
void split_errno(std::string_view rest, CallResult& out) {
    rest = trim(rest);
    if (rest.empty()) return;
    out.error = std::string(rest);
    std::string_view name;
    if (rest.front() != '(') {
        std::size_t sp = rest.find(' ');
        name = rest.substr(0, sp);
        rest = sp == std::string_view::npos ? std::string_view() : trim(rest.substr(sp + 1));
    }
    std::string_view text;
    if (starts_with(rest, "(")) {
        std::size_t close = rest.find(')');
        text = close == std::string_view::npos ? rest.substr(1) : rest.substr(1, close - 1);
    }
    if (starts_with(text, "errno ") && (name.empty() || name == "E???")) {
        if (auto n = parse_int<int>(text.substr(6)); n && *n > 0) out.errno_number = *n;
        return;  // strace printed no name (and no strerror text) for it
    }
    if (name.empty()) return;
    out.errno_name = std::string(name);
    out.errno_number = errno_number_of(name);
    if (!text.empty() || starts_with(rest, "(")) out.errno_text = std::string(text);
}

// A call's result as the log gave it, onto its ioctl record (a whole line, or the `resumed` / gVisor X half):
// ret is the kernel's return (IoctlRecord::ret), as sys_exit_ioctl gives it.
void take_result(StraceIoctl& io, const CallResult& res) {
    io.ret = res.syscall_ret;
    io.error = res.error;
    io.errno_name = res.errno_name;
    io.errno_text = res.errno_text;
    io.duration_ns = res.duration_ns;
}

// A return value as strace prints it (src/syscall.c, syscall_exiting_trace): signed decimal (PRINT_VAL_D), or
// hex (RVAL_HEX; -e raw= prints every successful return in hex), of a 64-bit kernel_long_t.
std::optional<std::int64_t> parse_return(std::string_view s) {
    if (starts_with(s, "0x") || starts_with(s, "0X")) {
        std::uint64_t v = 0;
        auto [p, ec] = std::from_chars(s.data() + 2, s.data() + s.size(), v, 16);
        if (s.size() == 2 || ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
        return static_cast<std::int64_t>(v);
    }
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 10);
    if (s.empty() || ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
    return v;
}

CallResult parse_result(std::string_view r) {
    CallResult out;
    r = trim(r);
    std::string_view num = r;
    std::string_view rest;
    std::size_t end = r.find(' ');
    if (auto lt = r.find('<'); lt != std::string_view::npos && lt < end) {
        // -y/-yy on the returned fd: "5</dev/zero<char 1:5>>" holds spaces; its angle brackets nest.
        int level = 0;
        for (std::size_t i = lt; i < r.size(); ++i) {
            if (r[i] == '<') ++level;
            if (r[i] == '>' && --level == 0) {
                end = i + 1;
                break;
            }
        }
    }
    if (end != std::string_view::npos && end < r.size()) {
        num = r.substr(0, end);
        rest = trim(r.substr(end));
    }
    if (auto fd = parse_fd(num); fd && fd->second) {
        out.ret = fd->first;
        out.syscall_ret = out.ret;
        out.fd_path = fd->second;
        return out;
    }
    // "?": no value reached the program (exit_group; print_erestart's "? ERESTARTSYS"; "? <unavailable>").
    if (num != "?") {
        out.ret = parse_return(num);
        if (!out.ret) {
            out.problem = fmt::format(
                "return value '{}' is not a number that fits in 64 bits (expected a decimal or "
                "0x... value, '?', or '-1 ENAME (text)')",
                num);
            return out;
        }
    }
    bool failed = (out.ret && *out.ret < 0) || num == "?";
    // "= 0x7f0c (flags O_RDONLY)"-style decoded values follow a success: not an errno.
    if (failed && !rest.empty() && rest != "<unavailable>") split_errno(rest, out);
    out.syscall_ret = out.ret;
    // print_erestart's "= ? ERESTARTSYS (To be restarted if SA_RESTART is set)": the program saw no value (the
    // call is restarted, or fails with EINTR), but the kernel's return was -ERESTARTSYS (strace read it from the
    // return register), as sys_exit_ioctl gives it: the kernel-internal codes 512..530 only.
    if (num == "?" && out.errno_number && *out.errno_number >= 512 && *out.errno_number <= 530)
        out.syscall_ret = -*out.errno_number;
    if (out.ret && *out.ret == -1) {
        // strace prints libc's -1 and the errno (print_err_ret); the kernel returned -errno.
        out.syscall_ret = out.errno_number ? std::optional<std::int64_t>(-*out.errno_number) : std::nullopt;
        if (!out.errno_name && !out.errno_number)
            out.problem =
                "'-1' without the errno strace prints after it (expected '-1 ENAME (text)' or "
                "'-1 (errno N)')";
    }
    return out;
}

// Go's time.Duration as gVisor prints it ("%v"): "21.883µs", "850ns", "1.5ms", "2.1s", "1m2.5s".
std::optional<std::uint64_t> parse_go_duration(std::string_view s) {
    s = trim(s);
    if (s.empty()) return std::nullopt;
    double total = 0;
    while (!s.empty()) {
        std::size_t n = 0;
        while (n < s.size() && (std::isdigit(static_cast<unsigned char>(s[n])) || s[n] == '.'))
            ++n;
        if (n == 0) return std::nullopt;
        double v = 0;
        auto [p, ec] = std::from_chars(s.data(), s.data() + n, v);
        if (ec != std::errc() || p != s.data() + n) return std::nullopt;
        s.remove_prefix(n);
        double unit = 0;
        for (auto [u, ns] : {std::pair<std::string_view, double>{"ns", 1},
                             {"us", 1e3},
                             {"\xC2\xB5s", 1e3},
                             {"\xCE\xBCs", 1e3},
                             {"ms", 1e6},
                             {"s", 1e9},
                             {"m", 60e9},
                             {"h", 3600e9}}) {
            if (starts_with(s, u) && !(u == "m" && starts_with(s, "ms"))) {
                unit = ns;
                s.remove_prefix(u.size());
                break;
            }
        }
        if (unit == 0) return std::nullopt;
        total += v * unit;
    }
    return static_cast<std::uint64_t>(total + 0.5);
}

// -T's "<0.000012>" seconds at the end of a result.
std::optional<std::uint64_t> parse_dash_t(std::string_view r) {
    r = trim(r);
    if (r.size() < 3 || r.back() != '>') return std::nullopt;
    std::size_t lt = r.rfind('<');
    if (lt == std::string_view::npos) return std::nullopt;
    std::string_view v = r.substr(lt + 1, r.size() - lt - 2);
    double secs = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), secs);
    if (ec != std::errc() || p != v.data() + v.size()) return std::nullopt;
    return static_cast<std::uint64_t>(secs * 1e9 + 0.5);
}

// A timestamp column as strace(1) prints it: -t "10:15:30", -tt "10:15:30.123456" (time of day), -ttt
// "1644616996.639050" (seconds since the epoch), -r "     0.000123" (seconds since the previous syscall's start);
// --timestamps=...,precision:ns gives up to 9 decimals. A value of 10^8 s or more without ':' is the epoch
// (1973 onward), a smaller one relative: strace picks one form per run.
struct Stamp {
    enum class Kind : std::uint8_t { time_of_day, epoch, relative } kind = Kind::time_of_day;
    std::uint64_t ns = 0;
};

std::optional<std::uint64_t> parse_seconds_ns(std::string_view s) {
    std::size_t dot = s.find('.');
    auto whole = parse_int<std::uint64_t>(s.substr(0, dot));
    if (!whole || *whole > 4'000'000'000ull) return std::nullopt;
    std::uint64_t frac = 0;
    if (dot != std::string_view::npos) {
        std::string_view f = s.substr(dot + 1);
        if (f.empty() || f.size() > 9) return std::nullopt;
        for (char ch : f) {
            if (!std::isdigit(static_cast<unsigned char>(ch))) return std::nullopt;
            frac = frac * 10 + static_cast<std::uint64_t>(ch - '0');
        }
        for (std::size_t i = f.size(); i < 9; ++i)
            frac *= 10;
    }
    return *whole * 1'000'000'000ull + frac;
}

std::optional<Stamp> parse_stamp(std::string_view tok) {
    if (tok.empty()) return std::nullopt;
    if (tok.find(':') != std::string_view::npos) {
        std::size_t c1 = tok.find(':'), c2 = tok.find(':', c1 + 1);
        if (c2 == std::string_view::npos) return std::nullopt;
        auto h = parse_int<std::uint64_t>(tok.substr(0, c1));
        auto m = parse_int<std::uint64_t>(tok.substr(c1 + 1, c2 - c1 - 1));
        auto sec = parse_seconds_ns(tok.substr(c2 + 1));
        if (!h || !m || !sec || *h > 23 || *m > 59 || *sec >= 61'000'000'000ull) return std::nullopt;
        return Stamp{Stamp::Kind::time_of_day, (*h * 3600 + *m * 60) * 1'000'000'000ull + *sec};
    }
    auto ns = parse_seconds_ns(tok);
    if (!ns || tok.find('.') == std::string_view::npos) return std::nullopt;
    return Stamp{*ns >= 100'000'000ull * 1'000'000'000ull ? Stamp::Kind::epoch : Stamp::Kind::relative, *ns};
}

// The timestamps of one log as ns on one clock: time of day from the first midnight (a time more than 12 h
// before the previous one is the next day), the epoch as it is, relative ones summed from the first call.
class StampClock {
public:
    std::optional<std::uint64_t> at(std::string_view tok) {
        auto st = parse_stamp(tok);
        if (!st) return std::nullopt;
        switch (st->kind) {
            case Stamp::Kind::epoch:
                return st->ns;
            case Stamp::Kind::relative:
                sum_ += st->ns;
                return sum_;
            case Stamp::Kind::time_of_day: {
                constexpr std::uint64_t kDay = 86'400'000'000'000ull;
                std::uint64_t t = st->ns + day_;
                if (last_ && t + kDay / 2 < *last_) {
                    day_ += kDay;
                    t += kDay;
                }
                last_ = t;
                return t;
            }
        }
        return std::nullopt;
    }

private:
    std::uint64_t sum_ = 0, day_ = 0;
    std::optional<std::uint64_t> last_;
};

// ---- gVisor ----------------------------------------------------------------------------------------------

// "I1229 09:57:11.030378   13265 strace.go:605] [   2:   2] python X ioctl(...) = 0 (0x0) (21.883µs)":
// glog's header (severity, MMDD, time, thread, file:line]) and the task's "[tid: tgid] comm" (the sentry's
// Task.Infof/Debugf prefix).
struct GlogLine {
    char severity = 'I';
    std::string_view file;  // "strace.go"
    std::optional<int> tid;
    std::string_view time;  // "09:57:11.030378"
    std::string_view msg;   // after "[tid: tgid] " (the comm still in front)
};

std::optional<GlogLine> parse_glog(std::string_view s) {
    s = trim(s);
    if (s.size() < 22 || std::string_view("IWEFD").find(s[0]) == std::string_view::npos) return std::nullopt;
    for (int i = 1; i <= 4; ++i)
        if (!std::isdigit(static_cast<unsigned char>(s[static_cast<std::size_t>(i)]))) return std::nullopt;
    if (s[5] != ' ' || s[8] != ':' || s[11] != ':') return std::nullopt;
    std::size_t close = s.find("] ");
    if (close == std::string_view::npos) return std::nullopt;
    std::string_view head = s.substr(0, close);  // "I1229 09:57:11.030378   13265 strace.go:605"
    std::size_t sp = head.rfind(' ');
    if (sp == std::string_view::npos) return std::nullopt;
    GlogLine g;
    g.severity = s[0];
    g.time = head.substr(6, head.find(' ', 6) - 6);
    std::string_view fl = head.substr(sp + 1);
    g.file = fl.substr(0, fl.find(':'));
    std::string_view rest = trim(s.substr(close + 2));
    if (starts_with(rest, "[")) {
        std::size_t rb = rest.find(']');
        std::size_t colon = rest.find(':');
        if (rb != std::string_view::npos && colon != std::string_view::npos && colon < rb) {
            g.tid = parse_int<int>(rest.substr(1, colon - 1));
            rest = trim(rest.substr(rb + 1));
        }
    }
    g.msg = rest;
    return g;
}

// "0x3 /dev/nvidiactl" (gVisor's FD argument: the number in hex, then the path), "0xffffffffffffffff (bad FD)".
std::pair<int, std::optional<std::string>> parse_gvisor_fd(std::string_view a) {
    a = trim(a);
    std::string_view num = a.substr(0, a.find(' '));
    std::optional<std::string> path;
    if (num.size() < a.size()) {
        std::string_view p = trim(a.substr(num.size()));
        if (!p.empty() && p.front() != '(') path = std::string(p);
    }
    auto v = parse_int<std::uint64_t>(num);
    int fd = v ? static_cast<int>(static_cast<std::int32_t>(static_cast<std::uint32_t>(*v))) : -1;
    return {fd, path};
}

}  // namespace

bool is_accelerator_device_path(std::string_view p) {
    return starts_with(p, "/dev/nvidia") || starts_with(p, "/dev/dri/") || starts_with(p, "/dev/accel/") ||
           p == "/dev/kfd" || p == "/dev/gdrdrv";
}

StraceLog parse_strace(std::string_view text, std::string_view source) {
    StraceLog log;
    // fd -> path as of the current line, one table per process: with -f each task's fds are its process's, and
    // a child made by clone/fork starts with a copy of its parent's table (the same table with CLONE_FILES).
    // strace prints no "[pid N]" prefix before a second task exists, so the first prefixed task that no clone
    // named is the one that ran unprefixed (pid -1).
    std::vector<std::map<int, std::string>> fd_tables(1);
    std::map<int, std::size_t> table_of{{-1, 0}};  // task (or -1) -> index in fd_tables
    std::map<int, bool> clone_shares_files;        // task -> CLONE_FILES of its unfinished clone
    bool first_task_named = false;
    auto table_for = [&](std::optional<int> pid) -> std::map<int, std::string>& {
        const int t = pid.value_or(-1);
        if (auto it = table_of.find(t); it != table_of.end()) return fd_tables[it->second];
        if (!first_task_named) {
            first_task_named = true;
            table_of[t] = 0;
            return fd_tables[0];
        }
        table_of[t] = fd_tables.size();  // a task whose start is not in the log: its fds are not known
        fd_tables.emplace_back();
        return fd_tables.back();
    };
    std::map<int, std::size_t> pending;  // pid (or -1) -> index of an unfinished ioctl
    std::map<int, std::size_t> gv_open;  // gVisor: tid -> index of an ioctl whose E was seen, X not yet
    auto diag = [&](Diag d, std::uint32_t line, std::string_view what) {
        count_diagnostic(log.diagnostics, d, fmt::format("{}:{}: {}", source, line, what));
    };
    // A call line that did not close: the program's output may have been written into it (its rest then
    // follows as ") = N"), or it is cut off. Held until the next line says which.
    struct Partial {
        std::string text;
        std::uint32_t line = 0;
        std::uint32_t output_lines = 0;
    };
    std::optional<Partial> partial;
    std::uint32_t last_nonblank = 0, last_cut = 0, first_output_line = 0;
    StampClock clock;

    // --decode-pids=comm: each line names its task; the last name strace printed for a pid wins (after an
    // execve, the program's new name).
    auto note_comm = [&](const std::optional<int>& pid, std::string_view comm) {
        if (pid && !comm.empty()) {
            std::string& known = log.comms[*pid];
            if (known != comm) known = std::string(comm);
        }
    };
    auto handle = [&](std::string_view raw, std::uint32_t lineno, bool joined) {
        auto l = tokenize(raw);
        if (l) note_comm(l->pid, l->comm);
        if (!l) {
            // "+++ exited with 1 +++", "+++ killed by SIGSEGV (core dumped) +++": how the traced task ended.
            std::optional<int> pid;
            std::string_view stamp, comm;
            std::string_view t = strip_prefix(raw, pid, &stamp, &comm);
            note_comm(pid, comm);
            if (starts_with(t, "+++ ") && t.size() > 8 && t.substr(t.size() - 4) == " +++") {
                std::string_view in = trim(t.substr(4, t.size() - 8));
                StraceExit x;
                x.line = lineno;
                x.pid = pid;
                x.time_ns = clock.at(stamp);
                if (starts_with(in, "exited with ")) {
                    x.status = parse_int<int>(in.substr(12));
                } else if (starts_with(in, "killed by ")) {
                    std::string_view sig = in.substr(10);
                    x.core_dumped = sig.find("(core dumped)") != std::string_view::npos;
                    x.signal = std::string(sig.substr(0, sig.find(' ')));
                }
                if (x.status || x.signal) log.exits.push_back(std::move(x));
                return;
            }
            // strace's own lines: "--- SIGCHLD {...} ---" (a signal), "strace: Process 12 attached", and the
            // frames of -k's stack trace (" > /usr/lib/libc.so.6(ioctl+0xb) [0xf1b]").
            if (starts_with(t, "--- ") || starts_with(t, "strace: ") || starts_with(t, "> ")) return;
            // "ioctl 3 ..." (no argument list): an ioctl that cannot be read is no line to skip.
            if (starts_with(t, "ioctl") &&
                (t.size() == 5 || !(std::isalnum(static_cast<unsigned char>(t[5])) || t[5] == '_'))) {
                diag(Diag::strace_malformed_ioctl, lineno,
                     fmt::format("expected ioctl(fd, request, ...) = result, found \"{}\"", t.substr(0, 80)));
                return;
            }
            diag(Diag::strace_other_line, lineno,
                 fmt::format("expected a call, exit or signal line, found \"{}\"; the line is not read",
                             t.substr(0, 80)));
            return;
        }
        const bool truncated = !l->complete && !l->unfinished;
        if (truncated) {
            last_cut = lineno;
            diag(Diag::strace_truncated_line, lineno, "line ends mid-call");
        }
        auto args = split_args(l->args);
        if (joined && !args.empty()) {
            // The output was written right after the last argument: keep the argument's own number.
            std::string_view a = args.back();
            std::size_t n = 0;
            if (starts_with(a, "0x"))
                for (n = 2; n < a.size() && std::isxdigit(static_cast<unsigned char>(a[n]));)
                    ++n;
            else
                while (n < a.size() && (std::isdigit(static_cast<unsigned char>(a[n])) || (n == 0 && a[n] == '-')))
                    ++n;
            if (n > 0 && n < a.size()) args.back() = a.substr(0, n);
        }
        CallResult res = l->complete ? parse_result(l->result) : CallResult{};
        if (l->complete) res.duration_ns = parse_dash_t(l->dash_t);
        const std::optional<std::uint64_t> at = clock.at(l->stamp);

        if (l->name == "ioctl") {
            if (res.problem) diag(Diag::strace_malformed_ioctl, lineno, *res.problem);
            if (l->resumed) {
                auto it = pending.find(l->pid.value_or(-1));
                if (it == pending.end()) {  // the call's request and fd were on a line the log does not hold
                    diag(Diag::strace_exit_without_entry, lineno,
                         "a '<... ioctl resumed>' line whose '<unfinished ...>' call line is not in the log");
                    return;
                }
                take_result(log.ioctls[it->second], res);
                // strace prints an argument it decodes at exit on the resumed line ("<... ioctl resumed>,
                // 0x7ffd...) = 0": a read-direction ioctl's): it is the call's argument when its line had none.
                if (StraceIoctl& io = log.ioctls[it->second]; io.arg.empty())
                    for (std::string_view a : args)
                        if (!a.empty()) {
                            io.arg = std::string(a);
                            break;
                        }
                log.ioctls[it->second].truncated = truncated;
                log.ioctls[it->second].exit_ns = at;  // strace stamps a resumed line when the call returned
                pending.erase(it);
                return;
            }
            StraceIoctl io;
            io.line = lineno;
            io.pid = l->pid;
            io.truncated = truncated;
            io.enter_ns = at;  // a call's line is stamped when it started
            auto fd = args.empty() ? std::nullopt : parse_fd(args[0]);
            if (!fd) {
                diag(Diag::strace_malformed_ioctl, lineno, "no fd in ioctl()");
                return;
            }
            io.fd = fd->first;
            auto& fds = table_for(l->pid);
            if (fd->second)
                io.fd_path = fd->second;  // -y: the path at this very call
            else if (auto it = fds.find(io.fd); it != fds.end())
                io.fd_path = it->second;
            if (args.size() >= 2) {
                io.cmd_text = std::string(args[1]);
                // A truncated line may cut the request itself: keep it only when it parsed whole.
                if (!truncated || args.size() >= 3) {
                    Request req = parse_request(args[1]);
                    io.cmd = req.cmd;
                    if (!io.cmd)
                        diag(req.malformed ? Diag::strace_malformed_ioctl : Diag::strace_unknown_request, lineno,
                             req.why);
                }
            } else if (!truncated && !l->unfinished)
                // ioctl(2) always has a request and strace always prints it: a line without one is not strace's.
                diag(Diag::strace_malformed_ioctl, lineno,
                     "no request in ioctl() (expected 'ioctl(FD, REQUEST, ...)')");
            if (args.size() >= 3) io.arg = std::string(args[2]);
            take_result(io, res);
            if (l->unfinished) pending[l->pid.value_or(-1)] = log.ioctls.size();
            log.ioctls.push_back(std::move(io));
            return;
        }
        const std::string_view n = l->name;
        if (n == "clone" || n == "clone3" || n == "fork" || n == "vfork") {
            const int parent = l->pid.value_or(-1);
            if (!l->resumed) clone_shares_files[parent] = l->args.find("CLONE_FILES") != std::string_view::npos;
            if (!l->complete || !res.ret || *res.ret <= 0) return;
            table_for(l->pid);  // the parent's table exists before the child's is made from it
            bool share = clone_shares_files[parent];
            clone_shares_files.erase(parent);
            const int child = static_cast<int>(*res.ret);
            if (share) {
                table_of[child] = table_of[parent];
            } else {
                auto copy = fd_tables[table_of[parent]];
                table_of[child] = fd_tables.size();
                fd_tables.push_back(std::move(copy));
            }
            return;
        }
        if (!l->complete) return;
        auto& fds = table_for(l->pid);
        if (n == "open" || n == "openat" || n == "creat" || n == "openat2") {
            std::size_t path_arg = n == "openat" || n == "openat2" ? 1 : 0;
            if (args.size() <= path_arg) return;
            auto path = res.fd_path ? res.fd_path : parse_string(args[path_arg]);
            if (!path) return;
            StraceOpen o;
            o.line = lineno;
            o.time_ns = at;
            o.path = *path;
            o.syscall = std::string(n);
            if (args.size() > path_arg + 1) o.flags = std::string(args[path_arg + 1]);
            o.ret = res.ret;
            o.errno_name = res.errno_name;
            o.errno_text = res.errno_text;
            o.pid = l->pid;
            if (res.ret && *res.ret >= 0) {
                o.fd = static_cast<int>(*res.ret);
                fds[o.fd] = *path;
                log.opens.push_back(std::move(o));
            } else {
                log.failed_opens.push_back(std::move(o));
            }
            return;
        }
        if (n == "write" && !args.empty()) {
            if (auto fd = parse_fd(args[0])) log.writes.push_back({lineno, fd->first, res.ret});
            return;
        }
        if ((n == "stat" || n == "lstat" || n == "newfstatat" || n == "fstatat64" || n == "statx" || n == "stat64") &&
            res.ret && *res.ret == 0) {
            // "st_rdev=makedev(237, 0)" (statx: "stx_rdev_major=237, stx_rdev_minor=0").
            std::string_view all = l->args;
            std::size_t path_arg = n == "newfstatat" || n == "fstatat64" || n == "statx" ? 1 : 0;
            auto path = args.size() > path_arg ? parse_string(args[path_arg]) : std::nullopt;
            std::optional<std::uint32_t> major, minor;
            if (auto m = all.find("makedev("); m != std::string_view::npos) {
                std::string_view in = all.substr(m + 8, all.find(')', m) - m - 8);
                auto parts = split_args(in);
                if (parts.size() == 2) {
                    major = parse_int<std::uint32_t>(parts[0]);
                    minor = parse_int<std::uint32_t>(parts[1]);
                }
            } else if (auto a = all.find("stx_rdev_major="); a != std::string_view::npos) {
                auto b = all.find("stx_rdev_minor=");
                major = parse_int<std::uint32_t>(all.substr(a + 15, all.find(',', a) - a - 15));
                if (b != std::string_view::npos)
                    minor = parse_int<std::uint32_t>(all.substr(b + 15, all.find_first_of(",}", b) - b - 15));
            }
            if (path && major && minor) log.device_nodes.push_back({lineno, *path, *major, *minor});
            return;
        }
        if (!res.ret || *res.ret < 0) return;
        if (n == "close" && !args.empty()) {
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
    };

    // gVisor: "name E ioctl(args)" and "name X ioctl(args) = 0 (0x0) (21.883µs)" / "= 0x0 errno=22 (invalid
    // argument) (5µs)"; nvproxy's "frontend ioctl: nr = 0x2a, argSize = 0x20" and "control command 0x2080122b"
    // belong to the ioctl the thread is in.
    auto handle_gvisor = [&](const GlogLine& g, std::uint32_t lineno) {
        std::string_view m = g.msg;
        const int tid = g.tid.value_or(-1);
        const std::optional<std::uint64_t> stamped = clock.at(g.time);
        if (starts_with(m, "nvproxy: ")) {
            auto it = gv_open.find(tid);
            if (it == gv_open.end()) return;
            StraceIoctl& io = log.ioctls[it->second];
            std::string_view b = m.substr(9);
            auto hexval = [](std::string_view v) { return parse_int<std::uint32_t>(trim(v.substr(0, v.find(',')))); };
            if (starts_with(b, "frontend ioctl: ")) {
                if (auto p = b.find("nr = "); p != std::string_view::npos) io.nvproxy_nr = hexval(b.substr(p + 5));
                if (auto p = b.find("argSize = "); p != std::string_view::npos)
                    io.nvproxy_arg_size = hexval(b.substr(p + 10));
            } else if (starts_with(b, "control command ")) {
                io.ctrl = hexval(b.substr(16));
            }
            return;
        }
        // "<comm> E name(" / "<comm> X name(": the comm may hold spaces, the name is an identifier.
        std::size_t at = std::string_view::npos;
        char half = 0;
        for (std::size_t k = 0; k + 3 < m.size(); ++k) {
            if (m[k] == ' ' && (m[k + 1] == 'E' || m[k + 1] == 'X') && m[k + 2] == ' ') {
                std::size_t q = k + 3;
                while (q < m.size() && (std::isalnum(static_cast<unsigned char>(m[q])) || m[q] == '_'))
                    ++q;
                if (q > k + 3 && q < m.size() && m[q] == '(') {
                    at = k + 3;
                    half = m[k + 1];
                    break;
                }
            }
        }
        if (at == std::string_view::npos) return;
        std::string_view call = m.substr(at);
        std::size_t open = call.find('(');
        std::string_view name = call.substr(0, open);
        std::size_t close = matching_paren(call, open);
        if (close == std::string_view::npos) {
            diag(Diag::strace_truncated_line, lineno, "line ends mid-call");
            last_cut = lineno;
            return;
        }
        auto args = split_args(call.substr(open + 1, close - open - 1));
        std::string_view rest = trim(call.substr(close + 1));
        CallResult res;
        if (half == 'X' && starts_with(rest, "=")) {
            rest = trim(rest.substr(1));
            std::string_view num = rest.substr(0, rest.find(' '));
            res.ret = parse_int<std::int64_t>(num);
            rest = trim(rest.substr(num.size()));
            if (starts_with(rest, "(0x")) rest = trim(rest.substr(rest.find(')') + 1));  // "(0x0)": the same value
            if (starts_with(rest, "errno=")) {
                std::string_view e = rest.substr(6);
                std::size_t sp = e.find(' ');
                auto no = parse_int<int>(e.substr(0, sp));
                rest = sp == std::string_view::npos ? std::string_view() : trim(e.substr(sp));
                if (no) {
                    res.ret = -*no;  // what the syscall returned to the application
                    const char* nm = strerrorname_np(*no);
                    res.errno_name = nm ? std::string(nm) : fmt::format("errno {}", *no);
                }
                if (starts_with(rest, "(")) {
                    std::size_t rp = rest.find(')');
                    if (rp != std::string_view::npos) {
                        res.errno_text = std::string(rest.substr(1, rp - 1));
                        res.error = *res.errno_name + " (" + *res.errno_text + ")";
                        rest = trim(rest.substr(rp + 1));
                    }
                }
            }
            if (starts_with(rest, "(") && rest.back() == ')')
                res.duration_ns = parse_go_duration(rest.substr(1, rest.size() - 2));
        }
        res.syscall_ret = res.ret;  // gVisor prints the kernel's view: the value, and errno=N on failure
        if (name != "ioctl") {
            if ((name == "openat" || name == "open") && half == 'X' && res.ret && *res.ret < 0 && args.size() >= 2) {
                StraceOpen o;
                o.line = lineno;
                o.time_ns = stamped;
                o.syscall = std::string(name);
                std::string_view pa = trim(args[name == "openat" ? 1 : 0]);
                std::size_t sp = pa.find(' ');  // "0x7f... /dev/nvidia-uvm": the pointer, then the path
                o.path = std::string(sp == std::string_view::npos ? pa : trim(pa.substr(sp)));
                if (args.size() > (name == "openat" ? 2u : 1u)) o.flags = std::string(args[name == "openat" ? 2 : 1]);
                o.ret = res.ret;
                o.errno_name = res.errno_name;
                o.errno_text = res.errno_text;
                o.pid = g.tid;
                log.failed_opens.push_back(std::move(o));
            }
            return;
        }
        auto [fd, path] =
            args.empty() ? std::pair<int, std::optional<std::string>>{-1, std::nullopt} : parse_gvisor_fd(args[0]);
        if (half == 'X') {
            auto it = gv_open.find(tid);
            if (it != gv_open.end()) {
                take_result(log.ioctls[it->second], res);
                log.ioctls[it->second].exit_ns = stamped;  // glog stamps the X line after the call returned
                gv_open.erase(it);
                return;
            }
        }
        StraceIoctl io;
        io.line = lineno;
        io.pid = g.tid;
        io.fd = fd;
        io.fd_path = path;
        io.entered = half == 'E';
        if (args.size() >= 2) {
            io.cmd_text = std::string(args[1]);
            Request req = parse_request(args[1]);
            io.cmd = req.cmd;
            if (!io.cmd)
                diag(req.malformed ? Diag::strace_malformed_ioctl : Diag::strace_unknown_request, lineno, req.why);
        }
        if (args.size() >= 3) io.arg = std::string(args[2]);
        if (half == 'X') {
            take_result(io, res);
            io.exit_ns = stamped;
            if (stamped && res.duration_ns && *res.duration_ns <= *stamped) io.enter_ns = *stamped - *res.duration_ns;
        } else {
            io.enter_ns = stamped;
            // A second E on a thread whose last call never exited: that one's X is not in the log.
            gv_open[tid] = log.ioctls.size();
        }
        log.ioctls.push_back(std::move(io));
    };

    std::uint32_t lineno = 0;
    std::size_t pos = 0;
    while (pos < text.size()) {
        auto nl = text.find('\n', pos);
        std::string_view raw = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
        pos = nl == std::string_view::npos ? text.size() : nl + 1;
        ++lineno;
        if (trim(raw).empty()) continue;
        last_nonblank = lineno;
        if (auto g = parse_glog(raw)) {
            log.gvisor = log.gvisor || g->file == "strace.go";
            handle_gvisor(*g, lineno);
            continue;
        }
        std::string_view t = trim(raw);
        if (t == "..." || t == "[...]" || t == "[..]") {
            log.elided_rows.push_back(lineno);
            continue;
        }
        if (partial) {
            // ") = 31" (with -T "<...>"): the rest of the held call; anything else in between was the program's.
            if (starts_with(t, ")") && trim(t.substr(1)).substr(0, 1) == "=") {
                std::string joined = partial->text + std::string(t);
                log.program_output_lines += partial->output_lines + 1;
                if (!first_output_line) first_output_line = partial->line;
                std::uint32_t at = partial->line;
                partial.reset();
                handle(joined, at, true);
                continue;
            }
            auto l = tokenize(raw);
            if (!l) {
                ++partial->output_lines;
                continue;
            }
            Partial p = std::move(*partial);
            partial.reset();
            handle(p.text, p.line, false);  // cut off: a real call line came next
        }
        if (auto l = tokenize(raw); l && !l->complete && !l->unfinished && !l->resumed) {
            partial = Partial{std::string(raw), lineno, 0};
            continue;
        }
        handle(raw, lineno, false);
    }
    if (partial) handle(partial->text, partial->line, false);
    if (log.program_output_lines)
        count_diagnostic(log.diagnostics, Diag::strace_program_output,
                         fmt::format("{}:{}: the program's output was written into the call line (not a cut-off line)",
                                     source, first_output_line),
                         log.program_output_lines);
    // Calls whose other half is not in the log: the result (or the request) is not known.
    std::vector<bool> open_at_end(log.ioctls.size(), false);
    for (const auto& [pid, idx] : pending)
        open_at_end[idx] = true;
    for (const auto& [tid, idx] : gv_open)
        open_at_end[idx] = true;
    for (std::size_t i = 0; i < log.ioctls.size(); ++i) {
        const StraceIoctl& io = log.ioctls[i];
        if (!io.entered)
            diag(Diag::strace_exit_without_entry, io.line, "an X (exit) line whose E line is not in the log");
        else if (open_at_end[i] || (log.gvisor && !io.ret))
            diag(Diag::strace_unfinished_call, io.line, "a call whose return is not in the log");
    }
    log.lines = lineno;
    // Only a cut in the last line says the input was cut off; an earlier one is a damaged line.
    log.truncated = last_cut != 0 && last_cut == last_nonblank;
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
        r.errno_name = io.errno_name;
        r.errno_text = io.errno_text;
        r.ctrl = io.ctrl;
        out.push_back(std::move(r));
    }
    return out;
}

}  // namespace nvtrace
