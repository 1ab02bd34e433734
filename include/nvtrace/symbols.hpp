// nvtrace/symbols.hpp: kernel symbol table from /proc/kallsyms text.
//
// Format (kernel/kallsyms.c, s_show): "<addr> <type> <name>[\t[<module>]]". Addresses read as zero for
// users without CAP_SYSLOG (kptr_restrict), which makes the table useless: has_addresses() says so.
// Thread-safety: build once, then const lookups from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "nvtrace/event.hpp"

namespace nvtrace {

struct Symbol {
    std::uint64_t addr = 0;
    std::string name;
    std::optional<std::string> module;
};

class SymbolTable {
public:
    // Parses kallsyms text; malformed lines are skipped and counted.
    static SymbolTable from_kallsyms(std::string_view text);

    // Exact start address first (funcgraph records carry the function's start), else the nearest
    // symbol below addr. nullptr when addr is below every symbol or the table is empty.
    const Symbol* lookup(std::uint64_t addr) const;

    bool has_addresses() const { return !by_addr_.empty() && by_addr_.back().addr != 0; }
    std::size_t size() const { return by_addr_.size(); }
    std::size_t malformed_lines() const { return malformed_; }

    // Fills function/module of a FuncEntry/FuncExit that has no name yet; an unresolved address becomes a
    // "0x<hex>" name. Returns whether the event's address was unresolved (false for any other event).
    bool resolve(Event& ev) const;
    // resolve() of every event of the stream. Returns the number of unresolved addresses.
    std::size_t resolve(EventStream& stream) const;

private:
    std::vector<Symbol> by_addr_;  // sorted by addr
    std::unordered_map<std::uint64_t, std::size_t> exact_;
    std::size_t malformed_ = 0;
};

}  // namespace nvtrace
