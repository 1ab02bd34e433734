// API call spans from uprobe events (api_calls.hpp).
#include "api_calls.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "nvtrace/api_calls.hpp"
#include "nvtrace/knowledge.hpp"

namespace nvtrace::detail {

namespace {

bool is_hex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// "0x7f1234567890" or "7f1234567890" (%lx): an address as either print writes it.
bool is_address(std::string_view s) {
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
    return !s.empty() && std::all_of(s.begin(), s.end(), is_hex);
}

// A printed fetch-arg value as an integer: decimal (u*, s*: "%u", "%Lu", "%d"), or hex with "0x" (x*: "0x%x").
std::optional<std::int64_t> parse_int(std::string_view s) {
    bool neg = !s.empty() && s[0] == '-';
    if (neg) s.remove_prefix(1);
    int base = 10;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        s.remove_prefix(2);
        base = 16;
    }
    std::uint64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
    if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
    auto r = static_cast<std::int64_t>(v);  // 64-bit hex is the register's bits: two's complement
    return neg ? -r : r;
}

const char* kind_name(CudaArgKind k) {
    switch (k) {
        case CudaArgKind::bytes:
            return "bytes";
        case CudaArgKind::count:
            return "count";
        case CudaArgKind::flags:
            return "flags";
        case CudaArgKind::address:
            return "address";
        case CudaArgKind::device_address:
            return "device_address";
        case CudaArgKind::handle:
            return "handle";
        case CudaArgKind::device:
            return "device";
        case CudaArgKind::enum_value:
            return "enum";
        case CudaArgKind::value:
            return "value";
        case CudaArgKind::string:
            return "string";
    }
    return "value";
}

// An argument decoded by its kind; nullopt when the value is not what the kind says ("(fault)" of a string
// fetch that failed is said as such).
std::optional<std::string> decode(CudaArgKind k, const std::string& v) {
    if (k == CudaArgKind::string) {
        if (v == "(fault)") return std::string("unreadable: the probe's string fetch faulted");
        if (v.size() >= 2 && v.front() == '"' && v.back() == '"') return v.substr(1, v.size() - 2);
        return v;
    }
    auto n = parse_int(v);
    if (!n) return std::nullopt;
    auto u = static_cast<std::uint64_t>(*n);
    switch (k) {
        case CudaArgKind::bytes:
            return format_bytes(u);
        case CudaArgKind::address:
        case CudaArgKind::device_address:
        case CudaArgKind::handle:
            return u == 0 ? std::string("NULL") : fmt::format("0x{:x}", u);
        case CudaArgKind::flags:
            return fmt::format("0x{:x}", u);
        case CudaArgKind::device:
            return fmt::format("device {}", *n);
        default:
            return std::to_string(*n);
    }
}

}  // namespace

std::string api_ioctl_label(const IoctlRecord& io) {
    std::string s = io.name ? *io.name : fmt::format("0x{:x}", io.cmd);
    if (io.hclass) {
        if (auto n = rm_class_name(*io.hclass))
            s += fmt::format(" hClass {}(0x{:x})", *n, *io.hclass);
        else
            s += fmt::format(" hClass 0x{:x}", *io.hclass);
    }
    if (io.status && *io.status != "NV_OK") s += " " + *io.status;
    if (!io.ret) {
        s += " ret=?";
    } else if (*io.ret != 0) {
        s += fmt::format(" ret={}", *io.ret);
        if (io.errno_name)
            s += fmt::format("({})", *io.errno_name);
        else if (*io.ret < 0 && *io.ret >= -4095)
            if (const char* e = strerrorname_np(static_cast<int>(-*io.ret))) s += fmt::format("({})", e);
    }
    return s;
}

std::string format_bytes(std::uint64_t n) {
    static constexpr std::pair<std::uint64_t, const char*> kUnits[] = {
        {1ull << 40, "TiB"}, {1ull << 30, "GiB"}, {1ull << 20, "MiB"}, {1ull << 10, "KiB"}};
    for (const auto& [size, unit] : kUnits)
        if (n >= size && n % size == 0) return fmt::format("{} {}", n / size, unit);
    return fmt::format("{} {}", n, n == 1 ? "byte" : "bytes");
}

std::optional<UprobePrint> parse_uprobe_print(std::string_view text) {
    while (!text.empty() && text.front() == ' ')
        text.remove_prefix(1);
    // A record decoded field by field (a capture directory's pages): the probe's own fields first, named as
    // kernel/trace/trace_probe.h names them (FIELD_STRING_IP "__probe_ip"; FIELD_STRING_FUNC "__probe_func" and
    // FIELD_STRING_RETIP "__probe_ret_ip" of a return probe), then the fetch-args.
    if (text.rfind("__probe_", 0) == 0) {
        auto f = parse_event_fields(text);
        if (!f) return std::nullopt;
        UprobePrint p;
        auto ip = f->find("__probe_ip"), func = f->find("__probe_func"), ret_ip = f->find("__probe_ret_ip");
        if (ip != f->end() && is_address(ip->second)) {
            f->erase(ip);
        } else if (func != f->end() && ret_ip != f->end() && is_address(func->second) && is_address(ret_ip->second)) {
            p.is_return = true;
            f->erase(func);
            f->erase(ret_ip);
        } else {
            return std::nullopt;
        }
        p.fields = std::move(*f);
        return p;
    }
    if (text.empty() || text.front() != '(') return std::nullopt;
    std::size_t close = text.find(')');
    if (close == std::string_view::npos) return std::nullopt;
    std::string_view head = text.substr(1, close - 1);
    UprobePrint p;
    if (std::size_t arrow = head.find(" <- "); arrow != std::string_view::npos) {
        if (!is_address(head.substr(0, arrow)) || !is_address(head.substr(arrow + 4))) return std::nullopt;
        p.is_return = true;
    } else if (!is_address(head)) {
        return std::nullopt;
    }
    std::string_view rest = text.substr(close + 1);
    while (!rest.empty() && rest.front() == ' ')
        rest.remove_prefix(1);
    if (!rest.empty()) {
        auto f = parse_event_fields(rest);
        if (!f) return std::nullopt;  // something after the head that is not NAME=VALUE: not a probe's print
        p.fields = std::move(*f);
    }
    return p;
}

std::string ApiCalls::place(const Event& ev, std::string_view function, std::string_view file_name) const {
    if (ev.line && !file_name.empty()) return fmt::format("{}:{}: {}", file_name, ev.line, function);
    return fmt::format("cpu {} ts {} ns: {}", ev.cpu, ev.ts_ns, function);
}

ApiCalls::ApiCalls(const std::vector<CaptureUprobe>& probes) {
    std::map<std::string, std::pair<const CaptureUprobe*, std::size_t>> late;  // file -> (first probe, functions)
    for (const CaptureUprobe& p : probes) {
        probes_.emplace(std::pair(p.group, p.event), p);
        if (!p.late_pid) continue;
        auto it = late.try_emplace(p.library, &p, 0).first;
        ++it->second.second;
    }
    for (const auto& [file, first_and_count] : late) {
        const CaptureUprobe& p = *first_and_count.first;
        late_files_.push_back(fmt::format(
            "{} ({} functions): mapped by pid {} after the start, probes armed {} ms after the program started{}; its "
            "calls before that are not seen",
            file, first_and_count.second, *p.late_pid,
            p.armed_after_ns ? fmt::format("{:.1f}", static_cast<double>(*p.armed_after_ns) / 1e6) : "?",
            p.armed_ns ? fmt::format(" (ts {} ns)", *p.armed_ns) : " (when on the trace clock: unknown)"));
    }
}

ApiCall* ApiCalls::add(const Event& ev, const OtherEvent& o, const std::map<int, std::string>& comms,
                       std::string_view file_name) {
    auto print = parse_uprobe_print(o.fields);
    if (!print) return nullptr;
    std::string_view name = o.name;
    if (print->is_return) {
        constexpr std::string_view kSuffix = "__return";
        if (name.size() > kSuffix.size() && name.substr(name.size() - kSuffix.size()) == kSuffix)
            name.remove_suffix(kSuffix.size());
        auto& stack = open_[ev.pid];
        auto it = std::find_if(stack.rbegin(), stack.rend(),
                               [&](const Open& x) { return x.event == name && calls_[x.index].group == o.system; });
        if (it == stack.rend()) {
            if (orphans_++ == 0) first_orphan_ = place(ev, o.name, file_name);
            return nullptr;
        }
        // The spans above it: their returns were not seen (lost, or a longjmp/exception left them).
        const std::size_t at = static_cast<std::size_t>(stack.rend() - it) - 1;
        for (std::size_t k = stack.size(); k-- > at + 1;) {
            ApiCall& inner = calls_[stack[k].index];
            inner.exit_unknown = fmt::format("its return was not seen before the return of {} (id {}) that called it",
                                             name, calls_[stack[at].index].id);
            inner.result_unknown = "no return seen";
            limit_[stack[k].index] = ev.ts_ns;
            if (unclosed_++ == 0)
                first_unclosed_ = fmt::format(
                    "{} (returned from {} at ts {} ns)",
                    inner.function + " entered at ts " + std::to_string(inner.entry_ns) + " ns", name, ev.ts_ns);
        }
        ApiCall& c = calls_[stack[at].index];
        c.exit_ns = ev.ts_ns;
        c.result_unknown.reset();  // set again below when the return says no name
        limit_[stack[at].index] = ev.ts_ns;
        stack.resize(at);
        const CudaApi* api = cuda_api(c.function);
        auto ret = print->fields.find("ret");
        std::optional<std::int64_t> value;
        if (ret != print->fields.end()) value = parse_int(ret->second);
        if (!value) {
            c.result_unknown = ret == print->fields.end() ? "the return probe recorded no ret"
                                                          : fmt::format("ret '{}' is not an integer", ret->second);
            return nullptr;
        }
        c.result = *value;
        if (!api) {
            c.result_unknown = "not in the CUDA table (nvtrace/knowledge.hpp): its results have no names";
            return nullptr;
        }
        // CUresult and cudaError_t are int enums: the low 32 bits of %ax (an untyped $retval is all 64).
        const auto v32 = static_cast<std::int32_t>(static_cast<std::uint32_t>(static_cast<std::uint64_t>(*value)));
        auto named = api->layer == CudaLayer::driver ? cu_result_name(v32) : cuda_error_name(v32);
        if (named) {
            c.result_name = std::string(*named);
        } else {
            c.result_unknown = fmt::format("{} is not a {} value of the CUDA 13.0 headers", v32,
                                           api->layer == CudaLayer::driver ? "CUresult" : "cudaError_t");
        }
        return nullptr;
    }

    ApiCall& c = calls_.emplace_back();
    limit_.push_back(UINT64_MAX);
    c.id = calls_.size();
    auto& stack = open_[ev.pid];
    if (!stack.empty()) {
        c.parent = calls_[stack.back().index].id;
        c.depth = static_cast<int>(stack.size());
    }
    c.cpu = ev.cpu;
    c.pid = ev.pid;
    if (auto it = comms.find(ev.pid); ev.pid >= 0 && it != comms.end()) c.comm = it->second;
    const auto probe = probes_.find(std::pair(o.system, std::string(name)));
    const CaptureUprobe* rec = probe == probes_.end() ? nullptr : &probe->second;
    // "cudaMalloc_2" is the event of a second file's cudaMalloc; "memcpy@GLIBC_2.2.5" the versioned symbol.
    c.function = rec && !rec->symbol.empty() ? rec->symbol.substr(0, rec->symbol.find('@')) : std::string(name);
    c.group = o.system;
    c.entry_ns = ev.ts_ns;
    c.args = std::move(print->fields);
    c.result_unknown = "no return seen";
    if (const CudaApi* api = cuda_api(c.function)) {
        c.api = api->layer == CudaLayer::driver ? "cuda_driver" : "cuda_runtime";
        // The driver API's library has one soname (libcuda.so.1); the runtime's soname carries its major version,
        // which the trace does not say.
        c.library = api->layer == CudaLayer::driver ? "libcuda.so.1" : "libcudart.so";
        for (const CudaApiArg& a : api->arguments()) {
            auto v = c.args.find(a.name);
            if (v == c.args.end()) continue;
            c.arg_kinds[a.name] = kind_name(a.kind);
            if (auto d = decode(a.kind, v->second)) c.args_decoded[a.name] = std::move(*d);
        }
    } else {
        c.api = "unknown";
    }
    if (rec) {  // what the capture armed: the file itself (the table knows only sonames), and the api it chose
        if (!rec->library.empty()) c.library = rec->library;
        if (!rec->api.empty()) c.api = rec->api;
    }
    stack.push_back({calls_.size() - 1, std::string(name)});
    by_pid_[ev.pid].push_back(calls_.size() - 1);
    return &c;
}

std::optional<std::size_t> ApiCalls::innermost_index(int pid, std::uint64_t ts) const {
    auto it = by_pid_.find(pid);
    if (it == by_pid_.end()) return std::nullopt;
    const auto& v = it->second;
    // The last span entered at or before ts; if it ended before ts, the span holding ts (spans of one thread
    // nest) is one of its callers.
    auto ub = std::upper_bound(v.begin(), v.end(), ts,
                               [&](std::uint64_t t, std::uint64_t i) { return t < calls_[i].entry_ns; });
    if (ub == v.begin()) return std::nullopt;
    std::size_t i = *std::prev(ub);
    for (;;) {
        const ApiCall& c = calls_[i];
        if (c.entry_ns <= ts && ts <= limit_[i]) return i;
        if (!c.parent) return std::nullopt;
        i = *c.parent - 1;
    }
}

std::optional<std::uint64_t> ApiCalls::innermost(int pid, std::uint64_t ts) const {
    auto i = innermost_index(pid, ts);
    if (!i) return std::nullopt;
    return calls_[*i].id;
}

std::optional<std::string> ApiCalls::top_function(int pid, std::uint64_t ts) const {
    auto i = innermost_index(pid, ts);
    if (!i) return std::nullopt;
    while (calls_[*i].parent)
        *i = *calls_[*i].parent - 1;
    return calls_[*i].function;
}

void ApiCalls::ioctl(std::uint64_t index, const IoctlRecord& io) {
    const std::optional<std::uint64_t> enter = io.enter_ns;  // null: a source without times (strace without -t)
    if (!enter) return;
    if (auto i = innermost_index(io.pid, *enter)) {
        calls_[*i].ioctls.push_back(index);
        calls_[*i].ioctl_names.push_back(api_ioctl_label(io));
    }
}

void ApiCalls::call(std::uint64_t id, int pid, std::uint64_t ts) {
    if (auto i = innermost_index(pid, ts)) calls_[*i].calls.push_back(id);
}

std::vector<ApiCall> ApiCalls::finish(Completeness& cm) {
    for (auto& [pid, stack] : open_)
        for (const Open& o : stack) {
            ApiCall& c = calls_[o.index];
            c.exit_unknown = "the trace ended inside the call (no return after its entry)";
            if (unclosed_++ == 0)
                first_unclosed_ = fmt::format("{} entered at ts {} ns (pid {})", c.function, c.entry_ns, pid);
        }
    open_.clear();
    if (orphans_) {
        cm.diagnostics.push_back(make_diagnostic(Diag::api_return_without_entry, orphans_, first_orphan_));
        cm.reasons.push_back(fmt::format("{} API returns without their entry", thousands(orphans_)));
    }
    if (unclosed_) {
        cm.diagnostics.push_back(make_diagnostic(Diag::api_call_unclosed, unclosed_, first_unclosed_));
        cm.reasons.push_back(fmt::format("{} API calls without their return", thousands(unclosed_)));
    }
    if (!late_files_.empty()) {
        cm.diagnostics.push_back(make_diagnostic(Diag::uprobes_armed_late, late_files_.size(), late_files_.front()));
        cm.reasons.push_back(
            fmt::format("uprobes armed late on {} {} mapped after the start: calls made before "
                        "the arming are not seen",
                        late_files_.size(), late_files_.size() == 1 ? "library" : "libraries"));
    }
    for (ApiCall& c : calls_)
        std::sort(c.calls.begin(), c.calls.end());
    return std::move(calls_);
}

}  // namespace nvtrace::detail

namespace nvtrace {

namespace {

bool is_success(const ApiCall& c) {
    return c.result_name == "CUDA_SUCCESS" || c.result_name == "cudaSuccess";
}

std::string us(std::uint64_t ns) {
    return fmt::format("{:.3f}", static_cast<double>(ns) / 1e3);
}

std::string call_line(const ApiCall& c, const ApiSummaryOptions& o) {
    std::vector<std::string> shown;
    // In the prototype's order for a function of the CUDA table, else in the order of the names.
    std::vector<std::pair<std::string, std::string>> args;
    if (const CudaApi* api = cuda_api(c.function))
        for (const CudaApiArg& a : api->arguments())
            if (auto v = c.args.find(a.name); v != c.args.end()) args.emplace_back(*v);
    for (const auto& kv : c.args)  // not a structured binding: clang 14 cannot capture one in the lambda
        if (std::find_if(args.begin(), args.end(), [&](const auto& a) { return a.first == kv.first; }) == args.end())
            args.emplace_back(kv.first, kv.second);
    for (const auto& [name, value] : args) {
        auto kind = c.arg_kinds.find(name);
        if (kind == c.arg_kinds.end()) {
            if (c.api == "unknown" || c.api == "user") shown.push_back(name + "=" + value);
            continue;
        }
        if (kind->second == "address" || kind->second == "device_address" || kind->second == "handle") continue;
        auto d = c.args_decoded.find(name);
        shown.push_back(d != c.args_decoded.end() ? d->second : value);
    }
    std::string s(static_cast<std::size_t>(2 + 2 * c.depth), ' ');
    s += fmt::format("{}({}) = ", c.function, fmt::join(shown, ", "));
    if (c.result_name != "unknown")
        s += c.result_name;
    else if (c.result)
        s += std::to_string(*c.result);
    else
        s += "unknown";
    s += c.exit_ns && *c.exit_ns >= c.entry_ns ? fmt::format(" in {} us", us(*c.exit_ns - c.entry_ns))
                                               : std::string(" in unknown time");
    const std::size_t n = c.ioctl_names.size();
    s += fmt::format(": {} ioctl{}", n, n == 1 ? "" : "s");
    if (n) {
        const std::size_t named = o.verbose ? n : std::min(n, o.max_ioctls);
        std::vector<std::string> names(c.ioctl_names.begin(), c.ioctl_names.begin() + static_cast<long>(named));
        if (named < n) names.push_back(fmt::format("... {} more", n - named));
        s += fmt::format(" ({})", fmt::join(names, ", "));
    }
    if (!c.calls.empty()) s += fmt::format(", {} kernel root call{}", c.calls.size(), c.calls.size() == 1 ? "" : "s");
    return s;
}

}  // namespace

std::vector<std::string> api_call_summary(const std::vector<ApiCall>& calls, const ApiSummaryOptions& o) {
    std::vector<std::string> out;
    if (calls.empty()) return out;
    struct Row {
        std::string function;
        std::uint64_t calls = 0, errors = 0, unknown = 0, known = 0, total = 0, max = 0;
    };
    std::vector<Row> rows;
    std::map<std::string, std::size_t> at;
    std::map<int, bool> threads;
    for (const ApiCall& c : calls) {
        threads[c.pid] = true;
        auto [it, fresh] = at.emplace(c.function, rows.size());
        if (fresh) rows.push_back({c.function});
        Row& r = rows[it->second];
        ++r.calls;
        if (c.result_name == "unknown")
            ++r.unknown;
        else if (!is_success(c))
            ++r.errors;
        if (c.exit_ns && *c.exit_ns >= c.entry_ns) {
            const std::uint64_t d = *c.exit_ns - c.entry_ns;
            ++r.known;
            r.total += d;
            r.max = std::max(r.max, d);
        }
    }
    std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.total > b.total; });
    std::size_t width = 8;
    for (const Row& r : rows)
        width = std::max(width, r.function.size());
    out.push_back(
        fmt::format("api calls: {} ({} thread{})", calls.size(), threads.size(), threads.size() == 1 ? "" : "s"));
    out.push_back(fmt::format("  {:<{}}  {:>6}  {:>6}  {:>7}  {:>12}  {:>12}", "function", width, "calls", "errors",
                              "unknown", "total us", "max us"));
    for (const Row& r : rows)
        out.push_back(fmt::format("  {:<{}}  {:>6}  {:>6}  {:>7}  {:>12}  {:>12}", r.function, width, r.calls, r.errors,
                                  r.unknown, r.known ? us(r.total) : "unknown", r.known ? us(r.max) : "unknown"));
    const std::size_t lines = o.verbose ? calls.size() : std::min(calls.size(), o.max_calls);
    for (std::size_t i = 0; i < lines; ++i)
        out.push_back(call_line(calls[i], o));
    if (lines < calls.size())
        out.push_back(fmt::format("  ... {} more API calls; -v prints them all", calls.size() - lines));
    return out;
}

}  // namespace nvtrace
