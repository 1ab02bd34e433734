#include "nvtrace/symbols.hpp"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

namespace nvtrace {

namespace {

std::string_view next_token(std::string_view& line) {
    auto start = line.find_first_not_of(" \t");
    if (start == std::string_view::npos) {
        line = {};
        return {};
    }
    line.remove_prefix(start);
    auto end = line.find_first_of(" \t");
    auto tok = line.substr(0, end);
    line.remove_prefix(end == std::string_view::npos ? line.size() : end);
    return tok;
}

}  // namespace

SymbolTable SymbolTable::from_kallsyms(std::string_view text) {
    SymbolTable table;
    while (!text.empty()) {
        auto nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
        if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;

        auto addr_s = next_token(line);
        auto type_s = next_token(line);
        auto name_s = next_token(line);
        auto mod_s = next_token(line);
        std::uint64_t addr = 0;
        auto [p, ec] = std::from_chars(addr_s.data(), addr_s.data() + addr_s.size(), addr, 16);
        if (ec != std::errc{} || p != addr_s.data() + addr_s.size() || type_s.size() != 1 || name_s.empty()) {
            ++table.malformed_;
            continue;
        }
        // Only text symbols can be traced functions.
        char t = type_s[0];
        if (t != 't' && t != 'T' && t != 'w' && t != 'W') continue;
        Symbol s{addr, std::string(name_s), std::nullopt};
        if (mod_s.size() > 2 && mod_s.front() == '[' && mod_s.back() == ']')
            s.module = std::string(mod_s.substr(1, mod_s.size() - 2));
        table.by_addr_.push_back(std::move(s));
    }
    std::stable_sort(table.by_addr_.begin(), table.by_addr_.end(),
                     [](const Symbol& a, const Symbol& b) { return a.addr < b.addr; });
    for (std::size_t i = 0; i < table.by_addr_.size(); ++i)
        table.exact_.try_emplace(table.by_addr_[i].addr, i);
    return table;
}

const Symbol* SymbolTable::lookup(std::uint64_t addr) const {
    if (auto it = exact_.find(addr); it != exact_.end()) return &by_addr_[it->second];
    auto it = std::upper_bound(by_addr_.begin(), by_addr_.end(), addr,
                               [](std::uint64_t a, const Symbol& s) { return a < s.addr; });
    if (it == by_addr_.begin()) return nullptr;
    return &*std::prev(it);
}

bool SymbolTable::resolve(Event& ev) const {
    auto fill = [&](auto& f) {
        if (!f.function.empty()) return false;
        if (const Symbol* s = has_addresses() ? lookup(f.func_addr) : nullptr) {
            f.function = s->name;
            f.module = s->module;
            return false;
        }
        f.function = fmt::format("0x{:x}", f.func_addr);
        return true;
    };
    if (auto* e = std::get_if<FuncEntry>(&ev.body)) return fill(*e);
    if (auto* x = std::get_if<FuncExit>(&ev.body)) return fill(*x);
    return false;
}

std::size_t SymbolTable::resolve(EventStream& stream) const {
    std::size_t unresolved = 0;
    for (auto& ev : stream.events)
        unresolved += resolve(ev) ? 1 : 0;
    return unresolved;
}

}  // namespace nvtrace
