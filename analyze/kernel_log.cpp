#include "nvtrace/kernel_log.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "klog/klog.hpp"
#include "kmsg_seq.hpp"
#include "nvtrace/report.hpp"

namespace nvtrace {

namespace {

template <class T>
bool parse_uint(std::string_view s, T& out) {
    if (s.empty()) return false;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out, 10);
    return ec == std::errc{} && p == s.data() + s.size();
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// /dev/kmsg escapes non-printable bytes (and backslash) as \xNN (kernel/printk/printk.c, msg_add_ext_text).
std::string unescape(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] == 'x') {
            int hi = hex_digit(s[i + 2]), lo = hex_digit(s[i + 3]);
            if (hi >= 0 && lo >= 0) {
                out.push_back(static_cast<char>(hi * 16 + lo));
                i += 3;
                continue;
            }
        }
        out.push_back(s[i]);
    }
    return out;
}

}  // namespace

Result<KmsgRecord> parse_kmsg_record(std::string_view record) {
    auto semi = record.find(';');
    if (semi == std::string_view::npos)
        return fail(Error::usage("kmsg record: expected '<prio>,<seq>,<ts_usec>,<flags>;<message>', found no ';'"));
    std::string_view header = record.substr(0, semi);
    std::string_view rest = record.substr(semi + 1);

    std::string_view parts[4];
    std::size_t n = 0;
    while (n < 4) {
        auto comma = header.find(',');
        parts[n++] = header.substr(0, comma);
        if (comma == std::string_view::npos) break;
        header.remove_prefix(comma + 1);
    }
    KmsgRecord r;
    unsigned prio = 0;
    if (n < 3 || !parse_uint(parts[0], prio) || !parse_uint(parts[1], r.seq) || !parse_uint(parts[2], r.ts_us))
        return fail(Error::usage(fmt::format("kmsg record: expected numeric prio,seq,ts_usec before ';', found '{}'",
                                             record.substr(0, semi))));
    r.level = static_cast<int>(prio & 7u);
    r.facility = static_cast<int>(prio >> 3);
    if (n >= 4)
        r.flags = parts[3].size() == 1 && (parts[3][0] == '-' || parts[3][0] == 'c' || parts[3][0] == '+') ? parts[3][0]
                                                                                                           : '?';

    auto nl = rest.find('\n');
    r.message = unescape(rest.substr(0, nl));
    while (nl != std::string_view::npos) {
        rest.remove_prefix(nl + 1);
        nl = rest.find('\n');
        std::string_view line = rest.substr(0, nl);
        if (line.size() > 1 && line[0] == ' ') {
            line.remove_prefix(1);
            auto eq = line.find('=');
            if (eq != std::string_view::npos)
                r.dict.emplace(std::string(line.substr(0, eq)), unescape(line.substr(eq + 1)));
        }
    }
    return r;
}

void classify_kernel_message(KernelLogMessage& msg) {
    msg.kind = "other";
    // Written from user space (a /dev/kmsg record of facility other than 0, another program's syslog line): the
    // text is read by the grammar of the driver it names, but the driver did not print it.
    const bool from_user = msg.source == "user";
    std::string_view t = klog::trim(std::string_view(msg.text).substr(0, msg.text.find('\n')));
    auto starts = [&](std::string_view p) { return t.substr(0, p.size()) == p; };
    if (starts("NVRM:") || starts("NVOC:") || klog::nvrm_nocolon_len(t) || starts("Cannot map memory with base addr"))
        msg.source = "NVRM";  // the latter: os-mlock.c prints it through nv_printf without the prefix; NVOC is
                              // nvidia.ko's object runtime
    else if (starts("nvidia-uvm:") || starts("nvidia_uvm:"))
        msg.source = "nvidia-uvm";
    else if (starts("nvidia-peermem") || starts("nvidia_peermem:") || starts("nv_peer_mem:"))
        msg.source = "nvidia-peermem";  // three spellings: the module's own prefix, the loader's, MLNX's old module
    else if (starts("gdrdrv:"))
        msg.source = "gdrdrv";
    else if (starts("nvidia-modeset:") || starts("nvidia_modeset:"))
        msg.source = "nvidia-modeset";
    else if (starts("nvidia-drm") || (starts("[drm:") && t.find("[nvidia_drm]]") != std::string_view::npos))
        msg.source = "nvidia-drm";
    else if (starts("nvidia-fs:") || starts("nvidia_fs:"))
        msg.source = "nvidia-fs";
    else if (starts("nvidia-nvlink:"))
        msg.source = "nvidia-nvlink";
    else if (msg.source.empty())
        msg.source = "kernel";

    std::string flat = klog::flatten(msg.text);
    if (!klog::classify_kernel(msg, flat) && msg.source != "kernel") {
        if (msg.source == "user")
            klog::classify_tool_output(msg, flat);
        else
            klog::classify_driver(msg, flat);
    }
    // errnos in any spelling ("-2", "(-2)", "-ENOENT") become errno + errno_name, for every source.
    if (msg.kind != "oops" && msg.kind != "call_trace")
        klog::errno_fields(std::string_view(flat).substr(0, 4096), msg.fields);
    if (from_user && msg.source != "user") {
        msg.fields["text_source"] = msg.source;
        msg.source = "user";
    }
}

namespace klog {

std::string flatten(std::string_view text) {
    constexpr std::size_t kMax = 8192;
    std::string out;
    std::size_t start = 0;
    bool first = true;
    while (start <= text.size() && out.size() < kMax) {
        std::size_t nl = text.find('\n', start);
        std::string_view line = trim(text.substr(start, (nl == std::string_view::npos ? text.size() : nl) - start));
        if (!first) {
            if (line.substr(0, 5) == "NVRM:") line = trim(line.substr(5));
            out.push_back(' ');
        }
        out.append(line.substr(0, kMax));
        first = false;
        if (nl == std::string_view::npos) break;
        start = nl + 1;
    }
    return out;
}

}  // namespace klog

namespace {

constexpr std::size_t kMaxLine = 64 * 1024;     // longer physical lines are cut (diagnostic long_line)
constexpr std::size_t kMaxMessage = 64 * 1024;  // joined text beyond this is dropped (message_too_long)

// A printed wall-clock time as seconds on one scale, for telling whether two lines of one log lie within a
// second of each other: ctime ("Fri Aug 30 11:43:09 2024", dmesg -T), syslog and journal short/short-precise
// ("Jun 30 11:07:05", "Dec 01 10:00:02.000001"), ISO-8601/RFC 3339 with '.' or ',' before the fraction (rsyslog,
// journal short-iso-precise, dmesg --time-format iso) and journal short-unix ("1701234567.123456"). Month and day
// place the time of day (the year and the UTC offset are ignored: lines compared come from one log); nullopt
// when no hh:mm:ss is found.
std::optional<double> wall_seconds(std::string_view w) {
    auto digits = [](std::string_view t, std::size_t at, std::size_t n) -> std::optional<int> {
        if (at + n > t.size()) return std::nullopt;
        int v = 0;
        for (std::size_t k = at; k < at + n; ++k) {
            if (!std::isdigit(static_cast<unsigned char>(t[k]))) return std::nullopt;
            v = v * 10 + (t[k] - '0');
        }
        return v;
    };
    auto fraction = [&](std::string_view t, std::size_t at) {
        double f = 0, scale = 0.1;
        if (at < t.size() && (t[at] == '.' || t[at] == ','))
            for (std::size_t k = at + 1; k < t.size() && std::isdigit(static_cast<unsigned char>(t[k])); ++k) {
                f += (t[k] - '0') * scale;
                scale /= 10;
            }
        return f;
    };
    std::size_t c = w.find(':');
    if (c == std::string_view::npos) {  // short-unix: seconds since the epoch
        std::size_t n = 0;
        while (n < w.size() && std::isdigit(static_cast<unsigned char>(w[n])))
            ++n;
        if (n == 0) return std::nullopt;
        double v = 0;
        for (std::size_t k = 0; k < n; ++k)
            v = v * 10 + (w[k] - '0');
        return v + fraction(w, n);
    }
    if (c < 2) return std::nullopt;
    auto h = digits(w, c - 2, 2), mi = digits(w, c + 1, 2), se = digits(w, c + 4, 2);
    if (!h || !mi || !se || c + 3 >= w.size() || w[c + 3] != ':') return std::nullopt;
    double day_s = *h * 3600.0 + *mi * 60.0 + *se + fraction(w, c + 6);
    int month = 0, day = 0;
    std::string_view date = w.substr(0, c - 2);
    static constexpr std::string_view kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    for (int m = 0; m < 12; ++m)
        if (auto at = date.find(kMonths[m]); at != std::string_view::npos) {
            month = m + 1;
            std::size_t k = at + 3;
            while (k < date.size() && date[k] == ' ')
                ++k;
            day = digits(date, k, 2).value_or(digits(date, k, 1).value_or(0));
            break;
        }
    if (month == 0 && date.size() >= 10 && date[4] == '-' && date[7] == '-') {  // ISO date
        month = digits(date, 5, 2).value_or(0);
        day = digits(date, 8, 2).value_or(0);
    }
    return ((month * 31.0) + day) * 86400.0 + day_s;
}

bool wall_times_close(const std::string& a, const std::string& b) {
    if (a.empty() || b.empty()) return false;
    if (a == b) return true;
    auto x = wall_seconds(a), y = wall_seconds(b);
    return x && y && (*x > *y ? *x - *y : *y - *x) < 1.0;
}

bool valid_utf8(std::string_view s) {
    for (std::size_t i = 0; i < s.size();) {
        auto c = static_cast<unsigned char>(s[i]);
        std::size_t n = 0;
        if (c < 0x80)
            n = 0;
        else if (c >= 0xC2 && c <= 0xDF)
            n = 1;
        else if ((c & 0xF0) == 0xE0)
            n = 2;
        else if (c >= 0xF0 && c <= 0xF4)
            n = 3;
        else
            return false;
        if (n && i + n >= s.size()) return false;
        for (std::size_t k = 1; k <= n; ++k)
            if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return false;
        i += n + 1;
    }
    return true;
}

bool looks_like_kmsg(std::string_view line) {
    // "<prio>,<seq>,<ts_usec>[,<flags>...];" (Documentation/ABI/testing/dev-kmsg). A header of that shape whose
    // fields are not numbers is still a record (read by parse_kmsg_record, which names what is wrong): a digit
    // first, then no blank before the ';' within 64 bytes, and two commas.
    std::size_t commas = 0, i = 0;
    for (; i < line.size() && i < 64; ++i) {
        char c = line[i];
        if (c == ';') break;
        if (c == ',') ++commas;
        if (c == ' ' || c == '\t' || c == '[' || c == ':') return false;
    }
    return i < line.size() && line[i] == ';' && commas >= 2 && line[0] >= '0' && line[0] <= '9';
}

// Where an open kernel report (WARN/UBSAN/BUG/Oops) is: right after the cut-here banner its title comes next;
// after the title up to kMaxReportText free-text lines (UBSAN's "index N is out of range for type 'T'", a
// WARN's own message: kernel/panic.c __warn prints it after the "WARNING: CPU:" line) belong to it; then only
// report body lines (lib/dump_stack.c, arch/x86/kernel/dumpstack.c) do.
enum class ReportState { none, banner, title, body };
constexpr int kMaxReportText = 6;

struct Building {
    KernelLogMessage msg;
    std::string format;
    std::string last_line;
    bool removed = false;
    ReportState report = ReportState::none;
    int report_text = 0;
};

class Reader {
public:
    explicit Reader(std::string_view file) : file_(file) {}

    void line(std::string_view raw, std::uint32_t lineno);
    KernelLogParse finish();

private:
    // The example quotes the input: control bytes (a terminal escape in a hostile log) and bytes that are not
    // UTF-8 are shown as \xNN, so printing a diagnostic never echoes them.
    void diag(Diag d, std::uint32_t lineno, std::string_view what) { diag_n(d, lineno, what, 1); }
    void diag_n(Diag d, std::uint32_t lineno, std::string_view what, std::uint64_t count) {
        std::string shown = fmt::format("{}:{}: ", file_, lineno);
        bool utf8 = valid_utf8(what);
        for (char ch : what) {
            auto c = static_cast<unsigned char>(ch);
            if (c < 0x20 || c == 0x7f || (c >= 0x80 && !utf8))
                shown += fmt::format("\\x{:02x}", c);
            else
                shown.push_back(ch);
        }
        count_diagnostic(out_.diagnostics, d, shown, count);
    }
    void append(int idx, std::string_view body, std::uint32_t lineno);
    void record(std::string_view body, const klog::LinePrefix& p, std::uint32_t lineno,
                std::optional<std::uint64_t> seq, const std::string& preset_source);
    void emit(std::string_view body, const klog::LinePrefix& p, std::uint32_t lineno);
    void close_groups() { open_trace_ = open_words_ = open_gsp_ = -1; }
    // Written from user space (source user, preset when the line is read and kept by classify_kernel_message): never
    // joined with the kernel's lines.
    bool user(int idx) const { return msgs_[static_cast<std::size_t>(idx)].msg.source == "user"; }
    void post_process();

    std::string file_;
    std::vector<Building> msgs_;
    KernelLogParse out_;
    std::vector<std::string> formats_;
    bool syslog_evidence_ = false;
    std::optional<std::uint64_t> last_kmsg_seq_;
    // Each /dev/kmsg record read, by seq: its ts_usec, a hash of its text and the line it was read at. A record
    // equal in all three to one read before is that record again (kmsg_record_repeated).
    struct KmsgSeen {
        std::uint64_t ts_us = 0;
        std::size_t text_hash = 0;
        std::uint32_t lineno = 0;
    };
    std::unordered_multimap<std::uint64_t, KmsgSeen> kmsg_seen_;
    // The same for lines with a kernel timestamp other than kmsg records (dmesg, syslog with "[ts]", journalctl -o
    // short-monotonic), by timestamp: a hash of the whole line and where it was read. A line equal byte for byte,
    // prefix included, is the line read again (log_line_repeated); `repeat_open_` leaves out its indented lines too.
    struct LineSeen {
        std::size_t line_hash = 0;
        std::uint32_t lineno = 0;
    };
    std::unordered_multimap<std::uint64_t, LineSeen> lines_seen_;
    bool repeat_open_ = false;
    int last_ = -1, open_oops_ = -1, open_trace_ = -1, open_words_ = -1, open_gsp_ = -1;
};

void Reader::append(int idx, std::string_view body, std::uint32_t lineno) {
    auto& b = msgs_[static_cast<std::size_t>(idx)];
    std::string_view t = klog::trim(body);
    if (b.msg.text.size() + t.size() + 1 > kMaxMessage) {
        diag(Diag::message_too_long, lineno,
             fmt::format("message continued past {} bytes; the rest is dropped", kMaxMessage));
        return;
    }
    b.msg.text.push_back('\n');
    b.msg.text.append(t);
    b.last_line = std::string(t);
    ++out_.log_lines;
}

void Reader::record(std::string_view body_in, const klog::LinePrefix& p, std::uint32_t lineno,
                    std::optional<std::uint64_t> seq, const std::string& preset_source) {
    std::string unescaped;
    std::string_view body = body_in;
    if (p.format.rfind("syslog", 0) == 0) {
        unescaped = klog::unescape_syslog_octal(body_in);
        body = unescaped;
    }
    std::string_view first = body.substr(0, body.find('\n'));
    auto same_stream = [&](int idx) { return msgs_[static_cast<std::size_t>(idx)].format == p.format; };
    auto same_time = [&](const KernelLogMessage& m) {
        if (m.ts_ns && p.ts_ns) return *m.ts_ns == *p.ts_ns;
        return !m.ts_ns && !p.ts_ns && wall_times_close(m.wall_time, p.wall_time);
    };
    if (preset_source.empty() && open_oops_ >= 0 && same_stream(open_oops_)) {
        auto& ob = msgs_[static_cast<std::size_t>(open_oops_)];
        std::string_view ft = klog::trim(first);
        bool take = false;
        if (ob.report == ReportState::banner) {
            take = !klog::is_driver_body(ft) && !klog::is_report_banner(ft);
            if (take) ob.report = ReportState::title;
        } else if (klog::is_report_banner(ft)) {
            // lib/ubsan.c (before 5.x) closes its report with the same row of '=' it opened with.
            take = ob.msg.text.rfind("====", 0) == 0 && ft[0] == '=';
            if (take) {
                append(open_oops_, body, lineno);
                open_oops_ = -1;
                last_ = -1;
                return;
            }
        } else if (klog::is_oops_start(ft) && ft.rfind("Oops: ", 0) != 0 && ob.report == ReportState::body) {
            take = false;  // a new report
        } else if (klog::is_oops_body(ft)) {
            take = true;
            if (!klog::is_frame_line(ft) || ob.report == ReportState::title) ob.report = ReportState::body;
        } else if (ob.report == ReportState::title && ob.report_text < kMaxReportText && !klog::is_driver_body(ft)) {
            take = true;
            ++ob.report_text;
        }
        if (take) {
            append(open_oops_, body, lineno);
            if (klog::is_oops_end(ft)) open_oops_ = -1;
            last_ = -1;
            return;
        }
    }
    if (preset_source.empty()) {
        if (open_trace_ >= 0 && same_stream(open_trace_) && klog::is_frame_line(first)) {
            append(open_trace_, body, lineno);
            return;
        }
        if (open_words_ >= 0 && same_stream(open_words_) && klog::is_stack_word(first)) {
            append(open_words_, body, lineno);
            return;
        }
        if (open_gsp_ >= 0 && same_stream(open_gsp_) && klog::is_gsp_table_line(first)) {
            append(open_gsp_, body, lineno);
            return;
        }
        if (last_ >= 0 && same_stream(last_) && !user(last_) && same_time(msgs_[static_cast<std::size_t>(last_)].msg) &&
            klog::continues_nvrm_text(msgs_[static_cast<std::size_t>(last_)].last_line, first)) {
            append(last_, body, lineno);
            return;
        }
    }
    close_groups();
    if (open_oops_ >= 0 && !klog::is_driver_body(first)) open_oops_ = -1;

    Building b;
    b.format = p.format;
    b.msg.ts_ns = p.ts_ns;
    b.msg.level = p.level >= 0 ? p.level : 6;
    b.msg.level_known = p.level >= 0;
    b.msg.wall_time = p.wall_time;
    b.msg.host = p.host;
    b.msg.line = lineno;
    b.msg.seq = seq;
    b.msg.source = preset_source;
    std::string_view text = klog::trim(body);
    if (text.size() > kMaxMessage) text = text.substr(0, kMaxMessage);
    b.msg.text = std::string(text);
    b.last_line =
        std::string(klog::trim(text.substr(text.rfind('\n') == std::string_view::npos ? 0 : text.rfind('\n') + 1)));
    if (!p.ident.empty() && p.ident != "kernel") {
        b.msg.source = "user";  // another program's syslog line: kept, attributed to its tag
        b.msg.fields["ident"] = p.ident;
    }
    msgs_.push_back(std::move(b));
    ++out_.log_lines;
    int idx = static_cast<int>(msgs_.size() - 1);
    last_ = idx;
    if (std::find(formats_.begin(), formats_.end(), p.format) == formats_.end()) formats_.push_back(p.format);
    if (p.syslog_evidence) syslog_evidence_ = true;
    if (p.quoted) diag(Diag::quoted_line, lineno, "kernel log line quoted inside other output");
    if (!p.unknown_prefix.empty()) {
        msgs_.back().msg.fields["line_prefix"] = p.unknown_prefix;
        diag(Diag::unknown_prefix, lineno,
             fmt::format("text before the message start kept as field line_prefix: \"{}\"",
                         std::string_view(p.unknown_prefix).substr(0, 80)));
    }
    if (user(idx)) return;
    if (klog::is_oops_start(first)) {
        open_oops_ = idx;
        msgs_.back().report = klog::is_report_banner(first) ? ReportState::banner : ReportState::title;
    } else if (klog::is_call_trace_start(first))
        open_trace_ = idx;
    else if (klog::is_stack_word(first))
        open_words_ = idx;
    else if (klog::is_gsp_timeout_banner(first))
        open_gsp_ = idx;
}

void Reader::line(std::string_view raw, std::uint32_t lineno) {
    ++out_.lines;
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    if (raw.size() > kMaxLine) {
        diag(Diag::long_line, lineno, fmt::format("line of {} bytes cut to {}", raw.size(), kMaxLine));
        raw = raw.substr(0, kMaxLine);
    }
    if (!valid_utf8(raw)) diag(Diag::invalid_utf8, lineno, "bytes that are not UTF-8 (kept; replaced in JSON)");
    std::string_view t = klog::trim(raw);
    if (t.empty()) {
        last_ = -1;
        return;
    }
    if (klog::is_journal_marker(t)) {
        diag(Diag::journal_marker, lineno, fmt::format("\"{}\" is journalctl's own line", t.substr(0, 80)));
        last_ = -1;
        return;
    }
    if (looks_like_kmsg(raw)) {
        auto rec = parse_kmsg_record(raw);
        if (!rec) {
            diag(Diag::malformed_kmsg_record, lineno, rec.error().message);
            // A record whose seq still reads (`4,7,1e3,-;...`) is in the file: the next record's seq must not count
            // it as missing too.
            const std::string_view after_prio = raw.substr(std::min(raw.find(','), raw.size()));
            if (std::uint64_t seq = 0;
                after_prio.size() > 1 && parse_uint(after_prio.substr(1, after_prio.find_first_of(",;", 1) - 1), seq))
                last_kmsg_seq_ = seq;
            last_ = -1;
            return;
        }
        // Sequence numbers count every record the kernel logged: a jump forward means records are missing (the
        // reader fell behind the ring buffer, or the file left them out); a step back (another boot, or the buffer
        // read again) starts over.
        // The kernel numbers its records one by one within a boot: the same seq, ts_usec and text again is the same
        // record read a second time (two dumps of the buffer in one file, `cat /dev/kmsg` run twice), not a second
        // message. It is left out, so an Xid is not counted twice, and its seq still counts as read. Records logged
        // before the clock runs (ts_usec 0: "Linux version ...", the command line) read the same in every boot, so
        // they never count as a repeat: a second boot's first records are kept.
        const std::size_t text_hash = std::hash<std::string_view>{}(rec->message);
        const auto [first, end] = kmsg_seen_.equal_range(rec->seq);
        const auto again = rec->ts_us == 0 ? end : std::find_if(first, end, [&](const auto& kv) {
            return kv.second.ts_us == rec->ts_us && kv.second.text_hash == text_hash;
        });
        if (again != end) {
            diag(Diag::kmsg_record_repeated, lineno,
                 fmt::format("seq {} (ts_usec {}) is the record read at line {}: left out", rec->seq, rec->ts_us,
                             again->second.lineno));
            last_kmsg_seq_ = rec->seq;
            last_ = -1;
            return;
        }
        if (rec->ts_us != 0) kmsg_seen_.emplace(rec->seq, KmsgSeen{rec->ts_us, text_hash, lineno});
        const auto gap = kmsg_seq_gap(last_kmsg_seq_, rec->seq);
        if (gap) diag_n(Diag::kmsg_seq_gap, lineno, gap->text, gap->missing);
        last_kmsg_seq_ = rec->seq;
        if (rec->flags == '?')
            diag(Diag::kmsg_unknown_flags, lineno,
                 fmt::format("flags of '{}' are not '-', 'c' or '+': read as a record of its own",
                             raw.substr(0, std::min<std::size_t>(raw.find(';'), 64))));
        // A continuation fragment (LOG_CONT, kernels before 4.9) of the same writer: a record of facility 0 never
        // continues one user space wrote, nor the other way round.
        // Not across missing records: the fragment may continue one of them (a pid or a status joined to the wrong
        // Xid).
        if (rec->flags == '+' && !gap && last_ >= 0 && user(last_) == (rec->facility != 0)) {
            append(last_, rec->message, lineno);
            return;
        }
        klog::LinePrefix p;
        p.format = "kmsg";
        p.ts_ns = rec->ts_us * 1000;
        p.level = rec->level;
        record(rec->message, p, lineno, rec->seq, rec->facility != 0 ? "user" : "");
        if (rec->facility != 0) msgs_.back().msg.fields["facility"] = std::to_string(rec->facility);
        return;
    }
    // /dev/kmsg dictionary lines (" SUBSYSTEM=pci", " DEVICE=+pci:0000:01:00.0") follow their record.
    if (raw.front() == ' ' && last_ >= 0 && msgs_[static_cast<std::size_t>(last_)].format == "kmsg") {
        auto eq = t.find('=');
        if (eq != std::string_view::npos && eq > 0 && t.substr(0, eq).find(' ') == std::string_view::npos) {
            std::string key(t.substr(0, eq));
            for (auto& c : key)
                c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            msgs_[static_cast<std::size_t>(last_)].msg.fields["kmsg_" + key] = std::string(t.substr(eq + 1));
            ++out_.log_lines;
            return;
        }
    }
    const bool after_repeat = std::exchange(repeat_open_, false);
    klog::LinePrefix p = klog::parse_line_prefix(raw);
    if (!p.format.empty()) {
        // A kernel timestamp is printed to the microsecond: a line that matches one read before byte for byte, time
        // and any wall-clock prefix included, is that line again (a dmesg pasted twice), not a second message, so an
        // Xid is not counted twice. Lines at time 0 (logged before the clock runs) read the same in every boot: a
        // log of two boots keeps both.
        if (p.ts_ns && *p.ts_ns != 0) {
            const std::size_t line_hash = std::hash<std::string_view>{}(raw);
            const auto [first, end] = lines_seen_.equal_range(*p.ts_ns);
            const auto again =
                std::find_if(first, end, [&](const auto& kv) { return kv.second.line_hash == line_hash; });
            if (again != end) {
                diag(Diag::log_line_repeated, lineno,
                     fmt::format("the line read at line {}: left out", again->second.lineno));
                repeat_open_ = true;
                last_ = -1;
                return;
            }
            lines_seen_.emplace(*p.ts_ns, LineSeen{line_hash, lineno});
        }
        emit(raw.substr(std::min(p.body, raw.size())), p, lineno);
        return;
    }
    // The indented lines under a line left out as a repeat are its own again.
    if (after_repeat && (raw.front() == ' ' || raw.front() == '\t')) {
        repeat_open_ = true;
        return;
    }
    // An open report printed without timestamps (`dmesg -t`) takes its body lines, indented frames included.
    if (open_oops_ >= 0 && msgs_[static_cast<std::size_t>(open_oops_)].format == "bare" &&
        (klog::is_oops_body(t) || klog::is_report_banner(t) ||
         msgs_[static_cast<std::size_t>(open_oops_)].report != ReportState::body)) {
        klog::LinePrefix bare;
        bare.format = "bare";
        record(t, bare, lineno, std::nullopt, "");
        return;
    }
    // No prefix. Indented: a continuation (dmesg prints a multi-line record's further lines under the message,
    // journalctl aligns them under the message column).
    // Not after a /dev/kmsg record: it escapes its line breaks, and its only indented lines are KEY=value.
    if ((raw.front() == ' ' || raw.front() == '\t') && last_ >= 0 &&
        msgs_[static_cast<std::size_t>(last_)].format != "kmsg") {
        append(last_, t, lineno);
        return;
    }
    if (klog::is_elision(t)) {
        diag(Diag::elided_lines, lineno, fmt::format("'{}' stands for lines left out", t));
        last_ = -1;
        return;
    }
    std::string_view unquoted = t;
    bool quoted = false;
    while (unquoted.size() > 1 && (unquoted[0] == '>' || unquoted[0] == '|') && unquoted[1] == ' ') {
        unquoted = klog::trim(unquoted.substr(2));
        quoted = true;
    }
    klog::LinePrefix bare;
    bare.format = "bare";
    bare.quoted = quoted;
    // `dmesg -t` and pasted excerpts: a known message start at the beginning of the line.
    if (klog::is_bare_kernel_body(unquoted)) {
        emit(unquoted, bare, lineno);
        return;
    }
    // A driver message start later in the line: the text before it is a prefix no recogniser knows (another
    // tool's report quoting the kernel line, a chat paste); it is kept as a field, the message is read.
    if (std::size_t at = klog::find_driver_start(unquoted); at != std::string_view::npos && at > 0) {
        std::string_view before = klog::trim(unquoted.substr(0, at));
        std::string_view msg = unquoted.substr(at);
        // A quoted message: drop the closing quote that matches the opening one right before the start.
        if (!before.empty() && (before.back() == '"' || before.back() == '\'' || before.back() == '`')) {
            char q = before.back();
            if (!msg.empty() && msg.back() == q) msg.remove_suffix(1);
            before.remove_suffix(1);
            before = klog::trim(before);
        }
        klog::LinePrefix inner = klog::parse_line_prefix(std::string(before) + " x");
        if (!inner.format.empty() && inner.body == before.size() + 1) {
            inner.body = 0;
            emit(msg, inner, lineno);
        } else {
            bare.unknown_prefix = std::string(before);
            emit(msg, bare, lineno);
        }
        return;
    }
    if (klog::is_tool_output_line(t)) {
        klog::LinePrefix tool;
        tool.format = "tool-output";
        record(t, tool, lineno, std::nullopt, "user");
        return;
    }
    // Kernel messages of any subsystem, `dmesg -t` style ("intel_vpu 0000:00:0b.0: ...", "ACPI Error: ...").
    if (klog::is_module_form(unquoted)) {
        emit(unquoted, bare, lineno);
        return;
    }
    // An open report (an Oops printed by `dmesg -t`) takes its unprefixed body lines.
    last_ = -1;
    ++out_.unread_lines;
    diag(Diag::non_log_line, lineno,
         fmt::format("expected a kernel log line (dmesg \"[seconds]\", dmesg -T, journalctl, syslog, /dev/kmsg record "
                     "or a kernel/driver message), found \"{}\"; the line is not read",
                     t.substr(0, 80)));
}

void Reader::emit(std::string_view body, const klog::LinePrefix& p, std::uint32_t lineno) {
    // One physical line may hold several messages when a printk had no trailing newline.
    klog::LinePrefix prefix = p;
    for (bool first = true;; first = false) {
        std::size_t glued = klog::find_glued_message(body);
        // A priority of facility other than 0 (dmesg -r "<12>", dmesg -x "user  :"): written from user space, as a
        // /dev/kmsg record of that facility (fresh user: `dmesg -r`'s user-space Xid line counted as the driver's).
        const bool from_user = prefix.facility > 0;
        record(body.substr(0, glued), prefix, lineno, std::nullopt, from_user ? "user" : "");
        if (from_user) msgs_.back().msg.fields["facility"] = std::to_string(prefix.facility);
        if (!first) {
            msgs_.back().msg.fields["fused"] = "true";
            --out_.log_lines;  // the same physical line
        }
        if (glued == std::string_view::npos) return;
        msgs_.back().msg.fields["fused"] = "true";
        body = body.substr(glued);
        prefix.unknown_prefix.clear();
        prefix.quoted = false;
    }
}

std::string detail_of(const KernelLogMessage& m) {
    auto it = m.fields.find("detail");
    return it == m.fields.end() ? std::string{} : it->second;
}

bool close_in_time(const KernelLogMessage& a, const KernelLogMessage& b) {
    if (a.ts_ns && b.ts_ns)
        return (*b.ts_ns >= *a.ts_ns ? *b.ts_ns - *a.ts_ns : *a.ts_ns - *b.ts_ns) < 1'000'000'000ull;
    return a.wall_time == b.wall_time || wall_times_close(a.wall_time, b.wall_time);
}

std::string field(const KernelLogMessage& m, const std::string& k) {
    auto it = m.fields.find(k);
    return it == m.fields.end() ? std::string{} : it->second;
}

// Whether two messages were written by the same side: the kernel, or user space (source user: a /dev/kmsg record
// of facility other than 0, another program's syslog line, tool output). One event's lines never mix the two: a
// user-space line joined to the kernel's would pass for the driver's, or hide it.
bool same_writer(const KernelLogMessage& a, const KernelLogMessage& b) {
    return (a.source == "user") == (b.source == "user");
}

void Reader::post_process() {
    for (auto& b : msgs_)
        classify_kernel_message(b.msg);
    for (std::size_t i = 0; i < msgs_.size(); ++i) {
        auto& m = msgs_[i].msg;
        // nv.c prints "rm_init_adapter failed, device minor number N" right after osinit.c's "RmInitAdapter
        // failed! (...)" for the same device: one failure, one message (other lines, e.g. an Oops, may sit between).
        if (m.kind == "rm_init_adapter_failed" && m.fields.count("minor") && !m.fields.count("code")) {
            for (std::size_t back = 1; back <= 16 && back <= i; ++back) {
                auto& j = msgs_[i - back];
                if (j.removed || !same_writer(j.msg, m) || j.msg.kind != "rm_init_adapter_failed" ||
                    (!j.msg.fields.count("code") && !j.msg.fields.count("truncated")) || j.msg.fields.count("minor") ||
                    field(j.msg, "pci") != field(m, "pci") || !close_in_time(j.msg, m))
                    continue;
                j.msg.text += "\n" + m.text;
                j.msg.fields["minor"] = m.fields["minor"];
                msgs_[i].removed = true;
                break;
            }
        }
        // An FE "Graphics Exception:" Xid 13 report is several printks: the exception, its ESR registers and the
        // "ChID ..., Class ..., Offset ..., Data ..." line (one event). SM exceptions are separate events.
        if (m.kind == "xid" && field(m, "xid") == "13") {
            std::string d = detail_of(m);
            bool part = d.rfind("Graphics Exception: ESR ", 0) == 0 || d.rfind("Graphics Exception: ChID ", 0) == 0;
            if (part && i > 0) {
                for (std::size_t back = 1; back <= i; ++back) {
                    auto& j = msgs_[i - back];
                    if (j.removed || !same_writer(j.msg, m)) continue;
                    if (j.msg.kind == "xid" && field(j.msg, "xid") == "13" && field(j.msg, "pci") == field(m, "pci") &&
                        detail_of(j.msg).rfind("Graphics Exception: ", 0) == 0 && close_in_time(j.msg, m)) {
                        j.msg.text += "\n" + m.text;
                        for (const auto& [k, v] : m.fields) {
                            if (k == "esr" && j.msg.fields.count("esr"))
                                j.msg.fields["esr"] += " " + v;
                            else if (k != "detail")
                                j.msg.fields.emplace(k, v);
                        }
                        j.msg.fields["detail"] += "\n" + d;
                        msgs_[i].removed = true;
                    }
                    break;
                }
            }
        }
        // osinit.c reports a lost GPU twice: nvErrorLog_va's "Xid (PCI:dddd:bb:dd): 79, ... GPU has fallen off
        // the bus." and NV_DEV_PRINTF's "GPU dddd:bb:dd.f: GPU has fallen off the bus." right after it. One
        // event: the second joins the Xid (field device) and is not counted again.
        if (m.kind == "fallen_off_bus" && m.fields.count("pci")) {
            for (std::size_t back = 1; back <= 4 && back <= i; ++back) {
                auto& j = msgs_[i - back];
                if (j.removed || !same_writer(j.msg, m) || j.msg.kind != "xid" ||
                    field(j.msg, "fallen_off_bus") != "true" || !close_in_time(j.msg, m))
                    continue;
                std::string xpci = field(j.msg, "pci"), dpci = field(m, "pci");
                if (dpci.rfind(xpci, 0) != 0 || j.msg.fields.count("device")) continue;
                j.msg.text += "\n" + m.text;
                j.msg.fields["device"] = dpci;
                j.msg.fields["duplicate_lines"] = std::to_string(m.line);
                msgs_[i].removed = true;
                break;
            }
        }
        // A register dump is one printk per register of the same function ("kfspDumpDebugState_GH100:
        // NV_PFSP_..._GROUP_2(0) = 0x9f", "(1) = ...", ...): one message, the values in order.
        if (m.kind == "register_dump") {
            for (std::size_t back = 1; back <= i; ++back) {
                auto& j = msgs_[i - back];
                if (j.removed || !same_writer(j.msg, m)) continue;
                if (j.msg.kind == "register_dump" && field(j.msg, "register") == field(m, "register") &&
                    field(j.msg, "function") == field(m, "function") && close_in_time(j.msg, m)) {
                    j.msg.text += "\n" + m.text;
                    const std::string reg = field(m, "register") + "(" + field(m, "register_index") + ")";
                    j.msg.fields[reg] = field(m, "register_value");
                    j.msg.fields["values"] += ", " + field(m, "register_value");
                    j.msg.fields["registers"] = std::to_string(std::stoul(j.msg.fields["registers"]) + 1);
                    msgs_[i].removed = true;
                }
                break;
            }
            if (!msgs_[i].removed) {
                m.fields["values"] = field(m, "register_value");
                m.fields["registers"] = "1";
            }
        }
        // arch/x86/mm/ioremap.c prints "caller SYM mapping multiple BARs" right after kernel/resource.c's
        // "resource sanity check: requesting [mem ...], which spans more than ...": one event.
        if (m.kind == "resource_conflict" && m.fields.count("caller") && !m.fields.count("range_start") && i > 0) {
            auto& j = msgs_[i - 1];
            if (!j.removed && same_writer(j.msg, m) && j.msg.kind == "resource_conflict" &&
                j.msg.fields.count("range_start") && !j.msg.fields.count("caller")) {
                j.msg.text += "\n" + m.text;
                j.msg.fields["caller"] = m.fields["caller"];
                if (m.fields.count("caller_module")) j.msg.fields["caller_module"] = m.fields["caller_module"];
                msgs_[i].removed = true;
            }
        }
        // kernel/module/main.c prints "disagrees about version of symbol S" then "Unknown symbol S (err -22)".
        if (m.kind == "unknown_symbol" && i > 0) {
            const auto& j = msgs_[i - 1].msg;
            if (j.kind == "symbol_version_mismatch" && same_writer(j, m) && field(j, "symbol") == field(m, "symbol") &&
                field(j, "module") == field(m, "module"))
                m.fields["version_mismatch"] = "true";
        }
    }
}

KernelLogParse Reader::finish() {
    post_process();
    for (auto& b : msgs_)
        if (!b.removed) out_.messages.push_back(std::move(b.msg));
    if (syslog_evidence_) {
        auto j = std::find(formats_.begin(), formats_.end(), "journal");
        if (j != formats_.end()) {
            if (std::find(formats_.begin(), formats_.end(), "syslog") == formats_.end())
                *j = "syslog";
            else
                formats_.erase(j);
        }
    }
    out_.format = formats_.empty() ? "unknown" : fmt::format("{}", fmt::join(formats_, "+"));
    for (const auto& d : out_.diagnostics)
        if (d.severity == "data_loss" || d.severity == "error")
            out_.incomplete.push_back(fmt::format("{} x{} (first: {})", d.name, d.count, d.first_example));
    out_.complete = out_.incomplete.empty();
    return std::move(out_);
}

std::string quote_value(const std::string& v) {
    bool plain = !v.empty();
    for (char c : v)
        if (c == ' ' || c == '"' || c == '\n' || c == '\\' || c == '|' || c == '=') plain = false;
    if (plain) return v;
    std::string out = "\"";
    for (char c : v) {
        if (c == '"' || c == '\\') out.push_back('\\');
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out.push_back(c);
    }
    return out + "\"";
}

}  // namespace

KernelLogParse read_kernel_log(std::string_view text, std::string_view file_name) {
    Reader r(file_name);
    std::uint32_t lineno = 0;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t nl = text.find('\n', start);
        std::size_t end = nl == std::string_view::npos ? text.size() : nl;
        r.line(text.substr(start, end - start), ++lineno);
        start = end + 1;
    }
    return r.finish();
}

bool looks_like_kernel_log_line(std::string_view line) {
    if (looks_like_kmsg(line) || !klog::parse_line_prefix(line).format.empty()) return true;
    std::string_view t = klog::trim(line);
    return klog::is_bare_kernel_body(t) || klog::find_driver_start(t) != std::string_view::npos;
}

std::string format_kernel_log_message(const KernelLogMessage& m) {
    std::string ts = m.ts_ns
                         ? fmt::format("{}.{:06}", *m.ts_ns / 1'000'000'000ull, (*m.ts_ns % 1'000'000'000ull) / 1000)
                     : !m.wall_time.empty() ? quote_value(m.wall_time)
                                            : std::string("-");
    std::string out = fmt::format("{} {} {} {}", ts, m.level_known ? std::to_string(m.level) : std::string("-"),
                                  m.source.empty() ? "-" : m.source, m.kind.empty() ? "-" : m.kind);
    for (const auto& [k, v] : m.fields)
        out += fmt::format(" {}={}", k, quote_value(v));
    std::string text;
    for (char c : m.text) {
        if (c == '\n')
            text += "\\n";
        else
            text.push_back(c);
    }
    return out + " | " + text;
}

std::string kernel_log_json(const KernelLogParse& parse, int indent) {
    using nlohmann::json;
    json msgs = json::array();
    for (const auto& m : parse.messages) {
        json j = {{"line", m.line},
                  {"ts", m.ts_ns ? json(*m.ts_ns) : json(nullptr)},
                  {"wall_time", m.wall_time.empty() ? json(nullptr) : json(m.wall_time)},
                  {"host", m.host.empty() ? json(nullptr) : json(m.host)},
                  {"level", m.level_known ? json(m.level) : json(nullptr)},
                  {"source", m.source},
                  {"kind", m.kind},
                  {"fields", m.fields},
                  {"text", m.text},
                  {"seq", m.seq ? json(*m.seq) : json(nullptr)}};
        msgs.push_back(std::move(j));
    }
    json diags = json::array();
    for (const auto& d : parse.diagnostics)
        diags.push_back(
            {{"name", d.name}, {"severity", d.severity}, {"count", d.count}, {"first_example", d.first_example}});
    json doc = {{"schema", "nvtrace.kernel_log/1"},
                {"format", parse.format},
                {"lines", parse.lines},
                {"log_lines", parse.log_lines},
                {"unread_lines", parse.unread_lines},
                {"complete", parse.complete},
                {"incomplete", parse.incomplete},
                {"messages", std::move(msgs)},
                {"diagnostics", std::move(diags)}};
    return doc.dump(indent, ' ', false, json::error_handler_t::replace);
}

void attach_kernel_log_by_time(std::vector<KernelLogMessage>& log, const std::vector<Call>& calls,
                               const std::optional<KmsgClockOffset>& clock) {
    // Closed calls only: a call whose exit was not seen has no known end, so "running at t" is unknown.
    struct Span {
        std::uint64_t begin, end;
        std::size_t index;
    };
    std::vector<Span> roots;
    std::unordered_map<std::uint64_t, std::size_t> index_of;
    index_of.reserve(calls.size());
    for (std::size_t i = 0; i < calls.size(); ++i)
        index_of.emplace(calls[i].id, i);
    std::unordered_map<std::uint64_t, std::vector<Span>> children;  // parent id -> closed children
    std::uint64_t longest_root = 0;
    for (std::size_t i = 0; i < calls.size(); ++i) {
        const Call& c = calls[i];
        if (!c.entry_ns || !c.duration_ns) continue;
        Span s{*c.entry_ns, *c.entry_ns + *c.duration_ns, i};
        if (c.parent && index_of.count(*c.parent)) {
            children[*c.parent].push_back(s);
        } else if (!c.parent) {
            roots.push_back(s);
            longest_root = std::max(longest_root, *c.duration_ns);
        }
    }
    std::sort(roots.begin(), roots.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });

    const bool usable = clock && clock->offset_ns;
    for (KernelLogMessage& m : log) {
        if (!m.attached.empty()) continue;  // "console" (or "none") decided from the trace buffer
        m.attached = "none";
        if (!usable || !m.ts_ns) continue;
        // The record's time is truncated to microseconds: the printk happened in [ts, ts + 999 ns].
        std::int64_t t = static_cast<std::int64_t>(*m.ts_ns) + *clock->offset_ns;
        auto unc = static_cast<std::int64_t>(clock->uncertainty_ns);
        if (t + 999 + unc < 0) continue;
        m.trace_ts_ns = static_cast<std::uint64_t>(std::max<std::int64_t>(t, 0));
        auto lo = static_cast<std::uint64_t>(std::max<std::int64_t>(t - unc, 0));
        auto hi = static_cast<std::uint64_t>(t + 999 + unc);
        // Roots that overlap [lo, hi] (entered at or before hi, no longer than the longest root): exactly one,
        // holding the whole window, or the message cannot be placed.
        auto end = std::upper_bound(roots.begin(), roots.end(), hi,
                                    [](std::uint64_t v, const Span& s) { return v < s.begin; });
        const Span* holder = nullptr;
        std::size_t overlapping = 0;
        for (auto it = end; it != roots.begin();) {
            --it;
            if (it->begin + longest_root < lo) break;
            if (it->end < lo) continue;
            ++overlapping;
            holder = &*it;
        }
        if (overlapping != 1 || holder->begin > lo || holder->end < hi) continue;
        // Down the chain while exactly one child overlaps the window and holds all of it.
        std::size_t at = holder->index;
        for (;;) {
            auto ch = children.find(calls[at].id);
            if (ch == children.end()) break;
            const Span* next = nullptr;
            std::size_t over = 0;
            for (const Span& s : ch->second)
                if (s.begin <= hi && s.end >= lo) {
                    ++over;
                    next = &s;
                }
            if (over != 1 || next->begin > lo || next->end < hi) break;
            at = next->index;
        }
        m.call = calls[at].id;
        m.attached = "time";
    }
}

bool is_kernel_log_kind(std::string_view kind) {
    static constexpr std::string_view kKinds[] = {"xid",
                                                  "fallen_off_bus",
                                                  "api_mismatch",
                                                  "rm_init_adapter_failed",
                                                  "device_open_failed",
                                                  "probe_failed",
                                                  "gsp_timeout",
                                                  "nv_status",
                                                  "assertion_failed",
                                                  "bar_overlap",
                                                  "io_memory_denied",
                                                  "io_memory_map_failed",
                                                  "p2p_invalid_argument",
                                                  "gfw_boot_timeout",
                                                  "gpu_uuid",
                                                  "driver_loaded",
                                                  "driver_error",
                                                  "driver_warning",
                                                  "register_dump",
                                                  "crash_dump",
                                                  "resource_conflict",
                                                  "firmware_load_failed",
                                                  "firmware_loaded",
                                                  "unknown_symbol",
                                                  "symbol_version_mismatch",
                                                  "module_taint",
                                                  "call_trace",
                                                  "oops",
                                                  "cuda_error",
                                                  "tool_error",
                                                  "gpu_info",
                                                  "test_status",
                                                  "command",
                                                  "other"};
    return std::find(std::begin(kKinds), std::end(kKinds), kind) != std::end(kKinds);
}

}  // namespace nvtrace
