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
#include "text_util.hpp"

namespace nvtrace {

using namespace import;

namespace {

constexpr std::string_view kTraceDatMagic = "\x17\x08\x44tracing";

constexpr std::array<std::pair<TraceFormat, std::string_view>, 5> kNames{{
    {TraceFormat::fgraph_text, "fgraph-text"},
    {TraceFormat::function_text, "function-text"},
    {TraceFormat::trace_cmd_report, "trace-cmd-report"},
    {TraceFormat::trace_dat, "trace-dat"},
    {TraceFormat::kernel_log, "kernel-log"},
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

}  // namespace

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
    int fgraph = 0, function = 0, tcmd = 0, klog = 0;
    LineSplitter lines(head.substr(0, 256 * 1024));
    std::string_view line;
    int seen = 0;
    while (lines.next(line) && seen < 400) {
        std::string_view s = line;
        while (!s.empty() && s[0] == '\t')
            s.remove_prefix(1);
        std::string_view t = trim(s);
        if (t.empty()) continue;
        ++seen;
        if (starts_with(t, "# tracer: ")) {
            std::string_view tracer = trim(t.substr(10));
            return tracer == "function_graph" ? TraceFormat::fgraph_text : TraceFormat::function_text;
        }
        if (t[0] == '#') continue;
        if (starts_with(t, "version = ") || starts_with(t, "cpus=") ||
            (starts_with(t, "CPU ") && ends_with(t, " is empty"))) {
            tcmd += 3;
            continue;
        }
        if (auto p = parse_prefix(s)) {
            std::string_view b = trim(p->body);
            if (starts_with(b, "funcgraph_entry:") || starts_with(b, "funcgraph_exit:") ||
                starts_with(b, "function:") || starts_with(b, "kernel_stack:") || starts_with(b, "print:"))
                tcmd += 2;
            else if (b.find(" <-") != std::string_view::npos || b == "<stack trace>")
                function += 2;
            else
                ++function;  // kernel `trace` text with events; trace-cmd prints the same shape
            continue;
        }
        if (is_kernel_log_line(t)) {
            klog += 2;
            continue;
        }
        FgraphLine L = tokenize_fgraph_line(line);
        if (L.kind == FgraphLine::Kind::banner) fgraph += 2;
        if (L.kind == FgraphLine::Kind::graph && (L.cpu >= 0 || L.ts_ns || L.cols.body.duration_ns) &&
            L.cols.body.kind != GraphBody::Kind::comment)
            fgraph += 2;
        else if (L.kind == FgraphLine::Kind::graph && line.find('|') != std::string_view::npos)
            ++fgraph;
    }
    int best = std::max({fgraph, function, tcmd, klog});
    if (best == 0) return std::nullopt;
    if (best == tcmd) return TraceFormat::trace_cmd_report;
    if (best == fgraph) return TraceFormat::fgraph_text;
    if (best == function) return TraceFormat::function_text;
    return TraceFormat::kernel_log;
}

Result<ImportResult> import_text(std::string_view text, std::string_view file_name, std::optional<TraceFormat> forced) {
    ImportResult r;
    if (forced) {
        r.format = *forced;
    } else if (auto f = detect_format(text)) {
        r.format = *f;
    } else {
        if (text.empty()) return fail(Error::usage(fmt::format("{}: empty file", file_name)));
        LineSplitter lines(text);
        std::string_view first;
        std::uint32_t n = 0;
        while (lines.next(first)) {
            n = lines.number();
            if (!trim(first).empty()) break;
        }
        return fail(Error::usage(example(file_name, n,
                                         "a trace (function_graph text, function tracer text, trace-cmd report, "
                                         "trace.dat) or a kernel log",
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
        case TraceFormat::trace_dat:
            return fail(Error::usage(fmt::format("{}: a trace.dat must be read from a file", file_name)));
        case TraceFormat::kernel_log: {
            KernelLogParse k = read_kernel_log(text, file_name);
            if (k.messages.empty())
                return fail(
                    Error::usage(fmt::format("{}: no kernel log messages found (expected dmesg, "
                                             "journalctl -k, syslog or /dev/kmsg lines)",
                                             file_name)));
            r.kernel_log = std::move(k.messages);
            r.stream.diagnostics = std::move(k.diagnostics);
            return r;
        }
    }
    if (!s) return fail(s.error());
    r.stream = std::move(*s);
    return r;
}

Result<ImportResult> import_file(const std::string& path, std::optional<TraceFormat> forced) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fail(Error::usage(fmt::format("{}: cannot open: {}", path, std::strerror(errno))));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        return fail(Error::usage(fmt::format("{}: not a regular file", path)));
    }
    auto size = static_cast<std::size_t>(st.st_size);
    if (size == 0) {
        ::close(fd);
        return fail(Error::usage(fmt::format("{}: empty file", path)));
    }
    // Mapped, not read: the readers walk it line by line and keep only what they parse.
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (map == MAP_FAILED) return fail(Error::usage(fmt::format("{}: cannot map: {}", path, std::strerror(errno))));
    ::madvise(map, size, MADV_SEQUENTIAL);
    std::string_view text(static_cast<const char*>(map), size);
    std::optional<TraceFormat> fmt_ = forced;
    if (!fmt_) fmt_ = detect_format(text.substr(0, 256 * 1024));
    Result<ImportResult> r = fail(Error::usage(""));
    if (fmt_ && *fmt_ == TraceFormat::trace_dat) {
        ::munmap(map, size);
        auto s = read_trace_dat(path);
        if (!s) return fail(s.error());
        ImportResult ir;
        ir.format = TraceFormat::trace_dat;
        ir.stream = std::move(*s);
        return ir;
    }
    r = import_text(text, path, fmt_);
    ::munmap(map, size);
    return r;
}

}  // namespace nvtrace
