// Format detection and file reading for the importers (docs/formats.md).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "graph_line.hpp"
#include "nvtrace/import.hpp"
#include "nvtrace/input.hpp"
#include "nvtrace/knowledge.hpp"
#include "text_util.hpp"

namespace nvtrace {

using namespace import;

namespace {

constexpr std::string_view kTraceDatMagic = "\x17\x08\x44tracing";

// Share of the non-empty, non-comment lines of the head (up to 400) that must look like the detected
// format (docs/formats.md, "Detection").
constexpr int kMinSharePercent = 30;

constexpr std::array<std::pair<TraceFormat, std::string_view>, 6> kNames{{
    {TraceFormat::fgraph_text, "fgraph-text"},
    {TraceFormat::function_text, "function-text"},
    {TraceFormat::trace_cmd_report, "trace-cmd-report"},
    {TraceFormat::trace_dat, "trace-dat"},
    {TraceFormat::kernel_log, "kernel-log"},
    {TraceFormat::strace, "strace"},
}};

bool is_kernel_log_line(std::string_view t) {
    // dmesg "[  885.242168] ", dmesg -T "[Fri Aug 30 11:43:09 2024] ", kmsg "6,1234,5678,-;",
    // syslog / journal "Jun 30 11:07:05 host1 kernel: ", or a bare NVRM line.
    if (t.size() > 3 && t[0] == '[') {
        std::size_t close = t.find(']');
        if (close != std::string_view::npos && close < 40) {
            std::string_view in = trim(t.substr(1, close - 1));
            std::size_t dot = in.find('.');
            if (dot != std::string_view::npos && parse_u64(in.substr(0, dot)) && parse_u64(in.substr(dot + 1)))
                return true;
            if (in.size() >= 20 && in.find(':') != std::string_view::npos) return true;
        }
    }
    if (t.size() > 2 && t[0] == '<' && is_digit(t[1]) && t.find('>') < 5) return true;
    std::size_t semi = t.find(';');
    if (semi != std::string_view::npos && semi < 40 && is_digit(t[0])) {
        std::string_view head = t.substr(0, semi);
        int commas = 0;
        for (char c : head)
            commas += c == ',';
        if (commas >= 3) return true;
    }
    static constexpr std::array<std::string_view, 12> kMonths{"Jan ", "Feb ", "Mar ", "Apr ", "May ", "Jun ",
                                                              "Jul ", "Aug ", "Sep ", "Oct ", "Nov ", "Dec "};
    for (auto m : kMonths)
        if (starts_with(t, m) && t.find(" kernel: ") != std::string_view::npos) return true;
    return starts_with(t, "NVRM: ") || starts_with(t, "nvidia-uvm: ") || starts_with(t, "nvidia_uvm: ");
}

// One strace line (`strace [-f] [-t|-tt|-ttt] [-T] [-y] ...`): "[pid N] " or "N " prefix, timestamps, then
// "name(args) = ret", "name(args <unfinished ...>", "<... name resumed>...", "--- SIGx {...} ---" or
// "+++ exited with N +++".
bool is_strace_line(std::string_view t) {
    // gVisor (runsc --strace): glog's "I1229 09:57:11.030378   13265 strace.go:605] [   2:   2] comm E ioctl(...)".
    if (t.size() > 20 && (t[0] == 'I' || t[0] == 'W' || t[0] == 'E' || t[0] == 'D') && is_digit(t[1]) &&
        is_digit(t[4]) && t[5] == ' ' && t.find(" strace.go:") != std::string_view::npos)
        return true;
    if (starts_with(t, "[pid ")) {
        // "[pid 1234<comm>] ": a comm may hold ']' (--decode-pids=comm), so the bracket closes after its '>'.
        std::size_t lt = t.find('<'), close = t.find(']');
        if (lt != std::string_view::npos && lt < close)
            if (std::size_t gt = t.find(">]", lt); gt != std::string_view::npos) close = gt + 1;
        if (close == std::string_view::npos) return false;
        t = ltrim(t.substr(close + 1));
    }
    for (int k = 0; k < 2 && !t.empty() && is_digit(t[0]); ++k) {  // pid, then -t/-tt/-ttt time
        std::size_t i = 0;
        while (i < t.size() && (is_digit(t[i]) || t[i] == ':' || t[i] == '.'))
            ++i;
        // --decode-pids=comm writes the pid as "1234<python3>" (strace.c printleader, print_comm_str).
        if (k == 0 && i < t.size() && t[i] == '<')
            if (std::size_t gt = t.find('>', i); gt != std::string_view::npos) i = gt + 1;
        if (i == t.size() || t[i] != ' ') return false;
        t = ltrim(t.substr(i));
    }
    if (starts_with(t, "<... ")) return t.find(" resumed>") != std::string_view::npos;
    if (starts_with(t, "--- SIG") || (starts_with(t, "+++ ") && ends_with(t, " +++"))) return true;
    std::size_t i = 0;
    while (i < t.size() && (is_digit(t[i]) || (t[i] >= 'a' && t[i] <= 'z') || t[i] == '_'))
        ++i;
    if (i == 0 || i == t.size() || t[i] != '(' || is_digit(t[0])) return false;
    return t.find(") = ") != std::string_view::npos || t.find(") \t= ") != std::string_view::npos ||
           t.find(" <unfinished ...>") != std::string_view::npos ||
           (t.find(')') != std::string_view::npos && t.find(" = ") != std::string_view::npos);
}

// Printable text (tabs allowed, UTF-8 lead and continuation bytes allowed): random bytes are almost never.
bool is_text_line(std::string_view t) {
    for (unsigned char c : t)
        if ((c < 0x20 && c != '\t') || c == 0x7f) return false;
    return true;
}

// The strace ioctls as ioctl events: the report's `ioctls` then come from collect_ioctls, as for a capture.
// Times where the log has them (strace -t/-tt/-ttt/-r, gVisor's glog time: StraceIoctl::enter_ns), else none
// (ts_known false, file order); a call's exit has a time only from a line stamped at its return or from its
// printed duration (IoctlExit::duration_ns, strace -T). The truncated last call and other unusable lines are the
// reader's diagnostics. Each ioctl carries the fd path printed or known at that call (IoctlEnter::fd_path, so
// a reused fd number names each call's own file) and the errno as printed (IoctlExit::errno_name/text). A
// failed open of an accelerator device node becomes an event "strace:<syscall>" (docs/report-format.md,
// `events`): it explains why no ioctl followed. "+++ exited with N +++" / "+++ killed by SIG +++" become
// "strace:exit"; "..." rows of an excerpt are elided gaps.
Result<EventStream> read_strace_text(std::string_view text, std::string_view file_name) {
    StraceLog log = parse_strace(text, file_name);
    EventStream s;
    s.file_name = std::string(file_name);  // a gap's first example is "file:line", as for the other text readers
    s.diagnostics = std::move(log.diagnostics);
    for (Diagnostic& d : s.diagnostics)
        d.first_example = clean(d.first_example);  // it quotes the input's bytes
    for (auto& [pid, comm] : log.comms)
        s.comms.emplace(pid, clean(comm));  // --decode-pids=comm
    // Everything in file order: ioctls, failed device opens and exits interleaved by line.
    struct Item {
        std::uint32_t line;
        int kind;  // 0 ioctl, 1 failed open, 2 exit, 3 elided row
        std::size_t index;
    };
    std::vector<Item> items;
    for (std::size_t i = 0; i < log.ioctls.size(); ++i)
        items.push_back({log.ioctls[i].line, 0, i});
    for (std::size_t i = 0; i < log.failed_opens.size(); ++i)
        if (is_accelerator_device_path(log.failed_opens[i].path)) items.push_back({log.failed_opens[i].line, 1, i});
    for (std::size_t i = 0; i < log.exits.size(); ++i)
        items.push_back({log.exits[i].line, 2, i});
    for (std::size_t i = 0; i < log.elided_rows.size(); ++i)
        items.push_back({log.elided_rows[i], 3, i});
    std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.line < b.line; });
    bool any_ioctl = false;
    std::uint64_t last_ts = 0;  // an event without a time keeps its place in the file's order
    auto stamp = [&](Event& e, std::optional<std::uint64_t> t) {
        e.ts_known = t.has_value();
        e.ts_ns = t.value_or(last_ts);
        if (t) last_ts = *t;
    };
    for (const Item& it : items) {
        Event e;
        e.ts_known = false;
        e.ts_ns = last_ts;
        e.line = it.line;
        if (it.kind == 1) {
            const StraceOpen& o = log.failed_opens[it.index];
            stamp(e, o.time_ns);
            e.pid = o.pid.value_or(-1);
            std::string f = "path=" + clean(o.path) + " flags=" + clean(o.flags.empty() ? "?" : o.flags) +
                            " ret=" + (o.ret ? std::to_string(*o.ret) : std::string("?")) +
                            " errno=" + clean(o.errno_name.value_or("unknown"));
            if (o.errno_text) f += " errno_text=" + clean(*o.errno_text);
            e.body = OtherEvent{"strace", o.syscall, std::move(f)};
            s.events.push_back(std::move(e));
            continue;
        }
        if (it.kind == 3) {
            e.body = LostEvents{std::nullopt, LostEvents::Kind::elided};
            s.events.push_back(std::move(e));
            continue;
        }
        if (it.kind == 2) {
            const StraceExit& x = log.exits[it.index];
            stamp(e, x.time_ns);
            e.pid = x.pid.value_or(-1);
            std::string f =
                x.status ? "status=" + std::to_string(*x.status)
                         : "signal=" + clean(x.signal.value_or("?")) + (x.core_dumped ? " core_dumped=true" : "");
            e.body = OtherEvent{"strace", "exit", std::move(f)};
            s.events.push_back(std::move(e));
            continue;
        }
        const StraceIoctl& io = log.ioctls[it.index];
        if (!io.cmd) continue;  // truncated or an unknown symbolic request: counted in the diagnostics
        stamp(e, io.enter_ns);
        e.pid = io.pid.value_or(-1);
        auto arg = parse_u64(starts_with(io.arg, "0x") ? std::string_view(io.arg).substr(2) : io.arg,
                             starts_with(io.arg, "0x") ? 16 : 10);
        IoctlEnter en{io.fd, *io.cmd, arg.value_or(0)};
        en.arg_known = arg.has_value();  // strace decoded the argument ("{B38400 opost ...}"): no number
        if (io.fd_path) en.fd_path = clean(*io.fd_path);  // strace prints a path's bytes as they are
        e.body = std::move(en);
        s.events.push_back(e);
        any_ioctl = true;
        // "= ? ERESTARTSYS": no value came back, the errno did.
        if (io.ret || io.errno_name) {
            IoctlExit x{io.ret};
            if (io.errno_name) x.errno_name = clean(*io.errno_name);
            if (io.errno_text) x.errno_text = clean(*io.errno_text);
            x.duration_ns = io.duration_ns;
            if (io.exit_ns)
                stamp(e, io.exit_ns);
            else
                e.ts_known = false;  // stamped at its start: the return's time is not in the line
            e.body = std::move(x);
            s.events.push_back(e);
        }
    }
    bool any = any_ioctl;
    for (const Item& it : items)
        any = any || it.kind == 1 || it.kind == 2;
    if (!any)
        return fail(Error::usage(
            fmt::format("{}: no complete ioctl call found in this strace output ({} lines)", file_name, log.lines)));
    return s;
}

// The lines of `s` that gave events (unusable_text's `good_lines`).
std::uint64_t lines_with_events(const EventStream& s) {
    std::uint64_t good = 0;
    std::uint32_t last = 0;
    for (const auto& e : s.events)
        if (e.line != last || e.line == 0) {
            ++good;
            last = e.line;
        }
    return good;
}

}  // namespace

namespace import {

std::optional<Error> unusable_text(std::uint64_t good_lines, const std::vector<Diagnostic>& diagnostics,
                                   std::string_view file_name, TraceFormat f) {
    std::uint64_t bad = 0;
    std::string first;
    for (const auto& d : diagnostics)
        if (d.name == diagnostic_info(Diag::malformed_line).name) {
            bad = d.count;
            first = d.first_example;
        }
    if (bad == 0 || good_lines * 3 >= bad) return std::nullopt;
    return Error::usage(fmt::format("{}: not usable as {}: {} line(s) gave events, {} could not be read (first: {})",
                                    file_name, format_name(f), good_lines, bad, first));
}

}  // namespace import

std::string_view format_name(TraceFormat f) {
    for (auto [k, n] : kNames)
        if (k == f) return n;
    return "?";
}

std::optional<TraceFormat> parse_format_name(std::string_view name) {
    for (auto [k, n] : kNames)
        if (n == name) return k;
    return std::nullopt;
}

std::optional<TraceFormat> detect_format(std::string_view head) {
    if (starts_with(head, kTraceDatMagic)) return TraceFormat::trace_dat;
    // Scores per format, and the lines that are evidence for it. A format wins only when its lines are at
    // least kMinSharePercent of the non-empty, non-comment lines looked at: one line of random bytes that
    // happens to parse is not a trace.
    int fgraph = 0, function = 0, tcmd = 0, klog = 0, strace = 0;
    int fgraph_lines = 0, function_lines = 0, tcmd_lines = 0, klog_lines = 0, strace_lines = 0;
    LineSplitter lines(head.substr(0, 256 * 1024));
    std::string_view line;
    int seen = 0;
    while (lines.next(line) && seen < 400) {
        std::string_view s = line;
        while (!s.empty() && s[0] == '\t')
            s.remove_prefix(1);
        std::string_view t = trim(s);
        if (t.empty()) continue;
        if (starts_with(t, "# tracer: ")) {
            std::string_view tracer = trim(t.substr(10));
            return tracer == "function_graph" ? TraceFormat::fgraph_text : TraceFormat::function_text;
        }
        if (t[0] == '#') continue;
        ++seen;
        if (starts_with(t, "version = ") || starts_with(t, "cpus=") ||
            (starts_with(t, "CPU ") && ends_with(t, " is empty"))) {
            tcmd += 3;
            ++tcmd_lines;
            continue;
        }
        if (auto p = parse_prefix(s)) {
            std::string_view b = trim(p->body);
            if (starts_with(b, "funcgraph_entry:") || starts_with(b, "funcgraph_exit:") ||
                starts_with(b, "function:") || starts_with(b, "kernel_stack:") || starts_with(b, "print:")) {
                tcmd += 2;
                ++tcmd_lines;
            } else {
                // A function hit, a stack, or kernel `trace` text with events (trace-cmd prints the same shape)
                function += b.find(" <-") != std::string_view::npos || b == "<stack trace>" ? 2 : 1;
                ++function_lines;
            }
            continue;
        }
        // strace -k's stack frames under each call: " > /usr/lib/libc.so.6(ioctl+0xb) [0x11b0fb]" (strace's
        // unwind printing: one space, '>', the object, the symbol and offset, the address in brackets). Read as
        // a quoted kernel-log line they made strace -k output a kernel log.
        if (starts_with(line, " > ") && ends_with(t, "]") && t.rfind(" [0x") != std::string_view::npos) {
            strace += 1;
            ++strace_lines;
            continue;
        }
        if (is_kernel_log_line(t)) {
            klog += 2;
            ++klog_lines;
            continue;
        }
        if (is_strace_line(t)) {
            strace += 2;
            ++strace_lines;
            continue;
        }
        FgraphLine L = tokenize_fgraph_line(line);
        if (L.kind == FgraphLine::Kind::banner) {
            fgraph += 2;
            ++fgraph_lines;
        } else if (L.kind == FgraphLine::Kind::graph && (L.cpu >= 0 || L.ts_ns || L.cols.body.duration_ns) &&
                   L.cols.body.kind != GraphBody::Kind::comment) {
            fgraph += 2;
            ++fgraph_lines;
        } else if (L.kind == FgraphLine::Kind::graph && line.find('|') != std::string_view::npos) {
            ++fgraph;
            if (is_text_line(line)) ++fgraph_lines;  // "  |  f() {" with no CPU column: weak evidence
        } else if (starts_with(t, "---") && t.find_first_not_of('-') == std::string_view::npos) {
            ++fgraph_lines;  // the dashed lines around a switch banner
        }
    }
    int best = std::max({fgraph, function, tcmd, klog, strace});
    if (best == 0) return std::nullopt;
    auto enough = [&](int n) { return n > 0 && n * 100 >= seen * kMinSharePercent; };
    if (best == tcmd)
        return enough(tcmd_lines + function_lines) ? std::optional(TraceFormat::trace_cmd_report) : std::nullopt;
    if (best == fgraph) return enough(fgraph_lines) ? std::optional(TraceFormat::fgraph_text) : std::nullopt;
    if (best == function) return enough(function_lines) ? std::optional(TraceFormat::function_text) : std::nullopt;
    if (best == strace) return enough(strace_lines) ? std::optional(TraceFormat::strace) : std::nullopt;
    return enough(klog_lines) ? std::optional(TraceFormat::kernel_log) : std::nullopt;
}

Result<ImportResult> import_text(std::string_view text, std::string_view file_name, std::optional<TraceFormat> forced) {
    ImportResult r;
    if (forced) {
        r.format = *forced;
    } else if (auto f = detect_format(text)) {
        r.format = *f;
    } else {
        if (text.empty()) return fail(Error::usage(fmt::format("{}: empty file", file_name)));
        // No trace: a log that read_kernel_log understands beyond the line shapes above (test-harness output,
        // "NVRM:"-less driver messages) is still a kernel log, with what it says in `kernel_log`.
        KernelLogParse k = read_kernel_log(text, file_name);
        if (!k.messages.empty() && k.format != "unknown") {
            r.format = TraceFormat::kernel_log;
            r.kernel_log = std::move(k.messages);
            r.stream.diagnostics = std::move(k.diagnostics);
            return r;
        }
        LineSplitter lines(text);
        std::string_view first;
        std::uint32_t n = 0;
        bool blank = true;
        while (blank && lines.next(first)) {
            n = lines.number();
            blank = trim(first).empty();
        }
        if (blank)
            return fail(Error::usage(fmt::format("{}: only blank lines ({}), no trace", file_name,
                                                 n == 1 ? std::string("1 line") : fmt::format("{} lines", n))));
        return fail(Error::usage(example(file_name, n,
                                         "a trace (function_graph text, function tracer text, trace-cmd report, "
                                         "trace.dat), strace output or a kernel log",
                                         first)));
    }
    Result<EventStream> s = fail(Error::usage(""));
    switch (r.format) {
        case TraceFormat::fgraph_text:
            s = read_fgraph_text(text, file_name);
            break;
        case TraceFormat::function_text:
            s = read_function_text(text, file_name);
            break;
        case TraceFormat::trace_cmd_report:
            s = read_trace_cmd_report(text, file_name);
            break;
        case TraceFormat::strace:
            s = read_strace_text(text, file_name);
            break;
        case TraceFormat::trace_dat:
            s = read_trace_dat_bytes(text, std::string(file_name));
            if (!s) return fail(s.error());
            r.stream = std::move(*s);
            return r;
        case TraceFormat::kernel_log: {
            KernelLogParse k = read_kernel_log(text, file_name);
            if (k.messages.empty())  // the first line that could not be read says where and what was wrong
                return fail(Error::usage(fmt::format(
                    "{}: no kernel log messages found (expected dmesg, journalctl -k, syslog or /dev/kmsg lines){}",
                    file_name,
                    k.diagnostics.empty() ? std::string() : "; first: " + k.diagnostics.front().first_example)));
            r.kernel_log = std::move(k.messages);
            r.stream.diagnostics = std::move(k.diagnostics);
            return r;
        }
    }
    if (!s) return fail(s.error());
    if (auto bad = import::unusable_text(lines_with_events(*s), s->diagnostics, file_name, r.format)) return fail(*bad);
    r.stream = std::move(*s);
    return r;
}

Result<ImportResult> import_input(const Input& in) {
    switch (in.kind) {
        case InputKind::capture_dir:
        case InputKind::capture_dir_saved:
            return fail(Error::usage(fmt::format("{}: a directory, not a trace file", in.path)));
        case InputKind::saved_report:
            return fail(Error::usage(fmt::format("{}: a saved report (nvtrace.report/1), not a trace", in.name)));
        case InputKind::trace_dat: {
            // libtracecmd seeks in a file: the file itself, or the bytes copied to one (read_trace_dat_bytes).
            auto s = in.reopenable() ? read_trace_dat(in.path) : read_trace_dat_bytes(in.bytes(), in.name);
            if (!s) return fail(s.error());
            ImportResult r;
            r.format = TraceFormat::trace_dat;
            r.stream = std::move(*s);
            return r;
        }
        case InputKind::text:
            break;
    }
    return import_text(in.bytes(), in.name, in.format);
}

Result<ImportResult> import_file(const std::string& path, std::optional<TraceFormat> forced) {
    auto in = open_input(path, forced);
    if (!in) return fail(in.error());
    // A '{' file given to a trace reader (a caller that did not ask for saved reports) is read as text, as before.
    if (in->kind == InputKind::saved_report) {
        in->kind = InputKind::text;
        in->format = detect_format(in->bytes().substr(0, 256 * 1024));
    }
    return import_input(*in);
}

}  // namespace nvtrace
