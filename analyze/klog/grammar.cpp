// The small grammar shared by the classifiers: the head of an NVRM message and the key/value runs of message
// bodies, and errno values in any of the ways the kernel prints them. Hand-written (no regex): bodies can be
// long and std::regex recurses per character. Sources of the shapes:
//   NVRM heads: NV_PRINTF through RmMsgPrefix (src/nvidia/src/kernel/diagnostics/nvlog_printf.c: "NVRM: ",
//     then "GPU%d " when a GPU is known, then the function name and ": "); NV_DEV_PRINTF (os-interface.h,
//     "NVRM: GPU %04x:%02x:%02x.%x: "); debug RmMsg prints without the colon ("NVRM kbusVerifyBar2_GM107: ");
//     functions of one chip family carry a suffix (_GM107, _TU102, _GH100: the HAL naming of the RM sources).
//   Key/value runs as the RM sources print them: "hClient=0x%x; hObject=0x%x; paramsStatus=0x%08x;
//     status=0x%08x" (rpcRmApiFree_GSP), "status = 0x%x" (GspMsgQueueSendCommand), "addr: 0x%x,  regvalue:
//     0x%x,  error code: %s" (gpuHandleSanityCheckRegReadError_GH100), "NAME(%d) = 0x%x" register rows
//     (kfspDumpDebugState_GH100), "for fn %d sequence %d" (_issueRpcAndWait), Xid 94/95 "Contained: SM (0x1).
//     RST: No, D-RST: No".
//   errnos: "error -2" / "err -22" / "(-2)" / ": -2" (%d of a negative errno), "-ENOENT" (%pe, lib/vsprintf.c,
//     errname()), "errno=22".
#include <array>
#include <cctype>
#include <charconv>
#include <cstring>

#include <fmt/format.h>

#include "klog.hpp"

namespace nvtrace::klog {

namespace {

bool is_ident(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}
bool is_digit(char c) {
    return c >= '0' && c <= '9';
}
bool starts(std::string_view s, std::string_view p) {
    return s.substr(0, p.size()) == p;
}

// "0000:01:00" or "0000:01:00.0" at the start of s; returns the length or 0.
std::size_t pci_at(std::string_view s) {
    auto hex = [&](std::size_t i) { return i < s.size() && std::isxdigit(static_cast<unsigned char>(s[i])); };
    if (!(hex(0) && hex(1) && hex(2) && hex(3) && s.size() > 4 && s[4] == ':' && hex(5) && hex(6) && s.size() > 7 &&
          s[7] == ':' && hex(8) && hex(9)))
        return 0;
    if (s.size() > 11 && s[10] == '.' && s[11] >= '0' && s[11] <= '7') return 12;
    return 10;
}

// A number as printed: 0x-hex, decimal, or negative decimal.
bool is_number(std::string_view v) {
    if (v.empty()) return false;
    if (v.size() > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) {
        for (char c : v.substr(2))
            if (!std::isxdigit(static_cast<unsigned char>(c)) && c != '_') return false;
        return true;
    }
    std::size_t i = v[0] == '-' ? 1 : 0;
    if (i == v.size()) return false;
    for (; i < v.size(); ++i)
        if (!is_digit(v[i])) return false;
    return true;
}

std::string snake(std::string_view key) {
    std::string out;
    for (char c : key) {
        if (c == ' ' || c == '-')
            out.push_back('_');
        else
            out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
    return out;
}

// Splits at depth 0 (outside (), [] and quotes) on ", ", "; " and sentence ends ". " before an upper-case
// letter.
std::vector<std::string_view> segments(std::string_view s) {
    std::vector<std::string_view> out;
    int depth = 0;
    std::size_t start = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
        char c = s[i];
        if (c == '(' || c == '[') ++depth;
        if ((c == ')' || c == ']') && depth > 0) --depth;
        if (depth) continue;
        bool cut = (c == ',' || c == ';') && i + 1 < s.size() && s[i + 1] == ' ';
        cut = cut ||
              (c == '.' && i + 2 < s.size() && s[i + 1] == ' ' && std::isupper(static_cast<unsigned char>(s[i + 2])));
        if (cut) {
            out.push_back(trim(s.substr(start, i - start)));
            start = i + 1;
        }
    }
    out.push_back(trim(s.substr(start)));
    return out;
}

// Words that read as "<word> <number>" without being a key.
bool is_filler(std::string_view w) {
    static constexpr std::string_view kWords[] = {"for",  "with", "of",    "on",       "at",     "to",  "in",
                                                  "from", "by",   "and",   "or",       "is",     "the", "a",
                                                  "an",   "than", "after", "returned", "number", "be",  "was",
                                                  "are",  "has",  "have",  "size",     "error",  "err", "errno"};
    for (auto k : kWords)
        if (w == k) return true;
    return false;
}

void put(Fields& f, const std::string& k, std::string_view v) {
    if (!k.empty() && !v.empty()) f.emplace(k, std::string(v));
}

}  // namespace

std::size_t nvrm_head(std::string_view flat, Fields& f) {
    std::size_t p = 0;
    if (starts(flat, "NVRM:") || starts(flat, "NVOC:"))
        p = 5;
    else if (std::size_t n = nvrm_nocolon_len(flat))
        p = n;
    else
        return 0;
    if (starts(flat, "NVOC:")) f.emplace("component", "NVOC");
    if (p == 5 && flat[4] == ' ') f.emplace("prefix_form", "no_colon");
    while (p < flat.size() && flat[p] == ' ')
        ++p;
    bool have_function = false;
    for (int round = 0; round < 3 && p < flat.size(); ++round) {
        std::string_view r = flat.substr(p);
        // "GPU6 " / "GPU0 " (RmMsgPrefix's GPU instance)
        if (starts(r, "GPU") && r.size() > 3 && is_digit(r[3])) {
            std::size_t i = 3;
            while (i < r.size() && is_digit(r[i]))
                ++i;
            if (i == r.size() || r[i] == ' ' || r[i] == ':') {
                f.emplace("gpu_index", std::string(r.substr(3, i - 3)));
                p += i;
                while (p < flat.size() && (flat[p] == ' ' || flat[p] == ':'))
                    ++p;
                continue;
            }
        }
        // "GPU 0000:01:00.0: " (NV_DEV_PRINTF) or "GPU 0000:01:00" (no function number, kfspDumpDebugState)
        if (starts(r, "GPU ")) {
            if (std::size_t n = pci_at(r.substr(4))) {
                std::size_t end = 4 + n;
                if (end == r.size() || r[end] == ':' || r[end] == ' ') {
                    f.emplace("pci", std::string(r.substr(4, n)));
                    p += end;
                    while (p < flat.size() && (flat[p] == ' ' || flat[p] == ':'))
                        ++p;
                    continue;
                }
            }
        }
        // "function: " (one identifier, then ':' and a space or the end)
        if (!have_function) {
            std::size_t i = 0;
            while (i < r.size() && is_ident(r[i]))
                ++i;
            if (i > 0 && i < r.size() && r[i] == ':' && (i + 1 == r.size() || r[i + 1] == ' ') && !is_digit(r[0])) {
                std::string fn(r.substr(0, i));
                if (fn != "Xid" && fn != "API" && fn != "NVRM") {
                    f.emplace("function", fn);
                    // A HAL suffix: "_" + two upper-case letters + three digits (+ one letter): _GM107, _TU102.
                    auto us = fn.rfind('_');
                    if (us != std::string::npos) {
                        std::string_view suf = std::string_view(fn).substr(us + 1);
                        bool chip =
                            (suf.size() == 5 || suf.size() == 6) && std::isupper(static_cast<unsigned char>(suf[0])) &&
                            std::isupper(static_cast<unsigned char>(suf[1])) && is_digit(suf[2]) && is_digit(suf[3]) &&
                            is_digit(suf[4]) && (suf.size() == 5 || std::isupper(static_cast<unsigned char>(suf[5])));
                        if (chip) f.emplace("chip", std::string(suf));
                    }
                    have_function = true;
                    p += i + 1;
                    while (p < flat.size() && flat[p] == ' ')
                        ++p;
                    continue;
                }
            }
        }
        break;
    }
    return p;
}

void kv_fields(std::string_view rest, Fields& f) {
    // 1. key=value and key = value (also NAME(i) = value register rows).
    std::vector<std::pair<std::string, std::string>> eq_pairs;
    for (std::size_t e = rest.find('='); e != std::string_view::npos; e = rest.find('=', e + 1)) {
        if (e == 0 || e + 1 >= rest.size()) continue;
        char prev = rest[e - 1], next = rest[e + 1];
        if (next == '=' || prev == '!' || prev == '<' || prev == '>' || prev == '=') continue;
        bool spaced = prev == ' ';
        if (spaced && next != ' ') continue;
        std::size_t kend = spaced ? e - 1 : e;
        std::size_t kb = kend;
        std::string index;
        if (kb > 0 && rest[kb - 1] == ')') {  // NAME(i)
            std::size_t open = rest.rfind('(', kb - 1);
            if (open == std::string_view::npos || open == 0) continue;
            std::string_view idx = rest.substr(open + 1, kb - 1 - open - 1);
            if (!is_number(idx)) continue;
            index = std::string(idx);
            kb = open;
        }
        std::size_t name_end = kb;
        while (kb > 0 && (is_ident(rest[kb - 1]) || rest[kb - 1] == '.'))
            --kb;
        if (kb == name_end || is_digit(rest[kb])) continue;
        if (kb > 0 && !(rest[kb - 1] == ' ' || rest[kb - 1] == ',' || rest[kb - 1] == ';' || rest[kb - 1] == '(' ||
                        rest[kb - 1] == '['))
            continue;
        std::size_t vb = spaced ? e + 2 : e + 1;
        std::size_t ve = vb;
        if (ve < rest.size() && rest[ve] == '\'') {  // pid='<unknown>'
            std::size_t close = rest.find('\'', ve + 1);
            ve = close == std::string_view::npos ? rest.size() : close + 1;
        } else {
            while (ve < rest.size() && rest[ve] != ' ' && rest[ve] != ',' && rest[ve] != ';')
                ++ve;
        }
        std::string_view v = rest.substr(vb, ve - vb);
        while (!v.empty() &&
               (v.back() == '.' || v.back() == '!' || (v.back() == ')' && v.find('(') == std::string_view::npos)))
            v.remove_suffix(1);
        if (v.size() >= 2 && v.front() == '\'' && v.back() == '\'') v = v.substr(1, v.size() - 2);
        if (v.empty()) continue;
        std::string key(rest.substr(kb, name_end - kb));
        if (!index.empty()) {
            f.emplace("register", key);
            f.emplace("register_index", index);
            f.emplace("register_value", std::string(v));
            key += "(" + index + ")";
        }
        eq_pairs.emplace_back(key, std::string(v));
    }
    // A list of fixed-width values ("0x%08x; ") whose last value is shorter and ends the text was cut off
    // (printk's or the driver's line limit): say so instead of reporting a wrong value.
    if (eq_pairs.size() >= 2) {
        auto width = [](const std::string& v) { return v.rfind("0x", 0) == 0 ? v.size() - 2 : 0; };
        std::size_t w = width(eq_pairs[eq_pairs.size() - 2].second);
        const auto& last = eq_pairs.back();
        std::string_view tail = trim(rest);
        bool ends = tail.size() >= last.second.size() && tail.substr(tail.size() - last.second.size()) == last.second;
        if (w >= 8 && width(last.second) > 0 && width(last.second) < w && ends) {
            f.emplace(last.first + "_truncated", "true");
            f.emplace("truncated", "true");
        }
    }
    for (auto& [k, v] : eq_pairs)
        f.emplace(k, v);

    // 2. "key: value" runs ("addr: 0x110804,  regvalue: 0xbadf4100,  error code: Unknown ...").
    std::vector<std::pair<std::string, std::string>> colon_pairs;
    bool numeric = false;
    for (std::string_view seg : segments(rest)) {
        std::size_t c = std::string_view::npos;
        int depth = 0;
        for (std::size_t i = 0; i + 1 < seg.size(); ++i) {
            if (seg[i] == '(' || seg[i] == '[') ++depth;
            if ((seg[i] == ')' || seg[i] == ']') && depth > 0) --depth;
            if (!depth && seg[i] == ':' && seg[i + 1] == ' ') c = i;
        }
        if (c == std::string_view::npos) continue;
        std::size_t prev = seg.rfind(": ", c == 0 ? 0 : c - 1);
        std::size_t ks = prev == std::string_view::npos || prev >= c ? 0 : prev + 2;
        std::string_view key = trim(seg.substr(ks, c - ks));
        std::string_view value = trim(seg.substr(c + 2));
        std::size_t words = 1;
        bool ok = !key.empty() && std::isalpha(static_cast<unsigned char>(key[0])) && !value.empty();
        for (char ch : key) {
            if (ch == ' ')
                ++words;
            else if (!is_ident(ch) && ch != '-')
                ok = false;
        }
        if (!ok || words > 3) continue;
        while (!value.empty() && value.back() == '.')
            value.remove_suffix(1);
        if (is_number(value)) numeric = true;
        colon_pairs.emplace_back(snake(key), std::string(value));
    }
    if (colon_pairs.size() >= 2 || numeric) {
        for (auto& [k, v] : colon_pairs) {
            // "SM (0x1)": a name and its code.
            auto open = v.rfind(" (");
            if (open != std::string::npos && v.back() == ')' &&
                is_number(std::string_view(v).substr(open + 2, v.size() - open - 3))) {
                f.emplace(k + "_code", v.substr(open + 2, v.size() - open - 3));
                v = v.substr(0, open);
            }
            f.emplace(k, v);
        }
    }

    // 3. "<word> <number>" pairs ("fn 10 sequence 759", "offset 0x70f000", "on head 0").
    std::size_t i = 0;
    while (i < rest.size()) {
        while (i < rest.size() && !std::isalpha(static_cast<unsigned char>(rest[i])))
            ++i;
        std::size_t ws = i;
        while (i < rest.size() && (is_ident(rest[i])))
            ++i;
        std::string_view word = rest.substr(ws, i - ws);
        if (ws > 0 && (is_ident(rest[ws - 1]) || rest[ws - 1] == '-')) continue;
        if (i >= rest.size() || rest[i] != ' ' || word.empty()) continue;
        std::size_t vs = i + 1, ve = vs;
        while (ve < rest.size() && (std::isalnum(static_cast<unsigned char>(rest[ve])) || rest[ve] == '_'))
            ++ve;
        std::string_view v = rest.substr(vs, ve - vs);
        bool end_ok = ve == rest.size() || rest[ve] == ' ' || rest[ve] == ',' || rest[ve] == '!' || rest[ve] == ';' ||
                      rest[ve] == ')' || (rest[ve] == '.' && (ve + 1 == rest.size() || rest[ve + 1] == ' '));
        bool lower = true;
        for (char ch : word)
            lower = lower && !std::isupper(static_cast<unsigned char>(ch));
        if (lower && end_ok && is_number(v) && !is_filler(word)) put(f, std::string(word), v);
    }
}

// ---- errnos ----

namespace {
// include/linux/errno.h: codes the kernel uses internally (never seen by user space, but printed by drivers).
constexpr std::array<std::pair<int, std::string_view>, 13> kKernelErrnos{{{512, "ERESTARTSYS"},
                                                                          {513, "ERESTARTNOINTR"},
                                                                          {514, "ERESTARTNOHAND"},
                                                                          {515, "ENOIOCTLCMD"},
                                                                          {516, "ERESTART_RESTARTBLOCK"},
                                                                          {517, "EPROBE_DEFER"},
                                                                          {518, "EOPENSTALE"},
                                                                          {519, "ENOPARAM"},
                                                                          {521, "EBADHANDLE"},
                                                                          {524, "ENOTSUPP"},
                                                                          {526, "ESERVERFAULT"},
                                                                          {527, "EBADTYPE"},
                                                                          {528, "EJUKEBOX"}}};
}  // namespace

std::string_view errno_name_of(int e) {
    if (e < 0) e = -e;
    for (auto [n, name] : kKernelErrnos)
        if (n == e) return name;
    if (e <= 0 || e > 4095) return {};
    // glibc's table (strerrorname_np, glibc 2.32+): the Linux asm-generic numbering on this ABI.
    const char* name = strerrorname_np(e);
    return name ? std::string_view(name) : std::string_view{};
}

std::optional<int> errno_by_name(std::string_view name) {
    for (auto [n, nm] : kKernelErrnos)
        if (nm == name) return n;
    for (int e = 1; e < 200; ++e) {
        const char* nm = strerrorname_np(e);
        if (nm && name == nm) return e;
    }
    return std::nullopt;
}

namespace {
// Words a kernel message uses when it reports a failure (dev_err/pr_err texts: "failed", "Failed to", "error",
// "unable to", "cannot", "can't", "could not", "timed out"), compared without case.
bool speaks_of_failure(std::string_view t) {
    std::string low(t);
    for (char& ch : low)
        ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    for (std::string_view w : {"fail", "error", "err ", "unable", "cannot", "can't", "could not", "couldn't",
                               "timed out", "timeout", "refused", "denied", "invalid"})
        if (low.find(w) != std::string::npos) return true;
    return false;
}
}  // namespace

void errno_fields(std::string_view text, Fields& f) {
    if (auto it = f.find("errno"); it != f.end()) {
        int e = 0;
        std::string_view v = it->second;
        if (!v.empty() && v[0] == '-') v.remove_prefix(1);
        if (!f.count("errno_name") && std::from_chars(v.data(), v.data() + v.size(), e).ec == std::errc{})
            if (auto name = errno_name_of(e); !name.empty()) f.emplace("errno_name", std::string(name));
        return;
    }
    auto set = [&](int e) {
        if (e <= 0 || e > 4095) return false;
        auto name = errno_name_of(e);
        if (name.empty()) return false;
        f.emplace("errno", fmt::format("-{}", e));
        f.emplace("errno_name", std::string(name));
        return true;
    };
    // "-ENOENT" (%pe)
    for (std::size_t at = text.find("-E"); at != std::string_view::npos; at = text.find("-E", at + 1)) {
        if (at > 0 && (is_ident(text[at - 1]))) continue;
        std::size_t j = at + 1;
        while (j < text.size() &&
               (std::isupper(static_cast<unsigned char>(text[j])) || is_digit(text[j]) || text[j] == '_'))
            ++j;
        if (j < text.size() && is_ident(text[j])) continue;
        if (auto e = errno_by_name(text.substr(at + 1, j - at - 1)); e && set(*e)) return;
    }
    // "-N" after "error ", "err ", "errno ", "returned ", "ret ", "= ", "=", "(" with ")", or ": " at the end.
    for (std::size_t at = text.find('-'); at != std::string_view::npos; at = text.find('-', at + 1)) {
        std::size_t j = at + 1;
        while (j < text.size() && is_digit(text[j]))
            ++j;
        if (j == at + 1 || j - at > 5) continue;
        if (j < text.size() && (is_ident(text[j]) || text[j] == '.')) continue;
        std::string_view before = text.substr(0, at);
        bool paren = !before.empty() && before.back() == '(' && j < text.size() && text[j] == ')';
        bool after_word = false;
        for (std::string_view w : {"error ", "err ", "errno ", "returned ", "ret ", "rc ", "status "})
            if (before.size() >= w.size() && before.substr(before.size() - w.size()) == w) after_word = true;
        // "KEY=-N" / "KEY = -N" only for keys that hold a return code: "temp=-5" or "offset=-1" is a value.
        if (!after_word && !before.empty() &&
            (before.back() == '=' || (before.size() >= 2 && before.ends_with("= ")))) {
            std::string_view k = before.substr(0, before.find_last_of('='));
            while (!k.empty() && k.back() == ' ')
                k.remove_suffix(1);
            std::size_t b = k.size();
            while (b > 0 && is_ident(k[b - 1]))
                --b;
            std::string key(k.substr(b));
            for (char& ch : key)
                ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
            for (std::string_view w : {"ret", "rc", "err", "error", "errno", "status", "result", "retval", "rv"})
                if (key == w) after_word = true;
        }
        // "...: -N" at the end only when the message says something failed: "temperature: -5" is a reading.
        bool colon_end = before.size() >= 2 && before.substr(before.size() - 2) == ": " &&
                         (j == text.size() || text[j] == ' ' || text[j] == ',') && speaks_of_failure(before);
        if (!(paren || after_word || colon_end)) continue;
        int e = 0;
        std::from_chars(text.data() + at + 1, text.data() + j, e);
        if (set(e)) return;
    }
    // "errno=22" / "errno 22" (positive, as tools print it)
    for (std::string_view w : {"errno=", "errno "}) {
        std::size_t at = text.find(w);
        if (at == std::string_view::npos) continue;
        std::size_t j = at + w.size(), k = j;
        while (k < text.size() && is_digit(text[k]))
            ++k;
        int e = 0;
        if (k > j && std::from_chars(text.data() + j, text.data() + k, e).ec == std::errc{} && set(e)) return;
    }
}

}  // namespace nvtrace::klog
