// normalise_symbol (nvtrace/symbol_name.hpp).
#include "nvtrace/symbol_name.hpp"

namespace nvtrace {

namespace {

// Suffixes GCC and clang append to a function they cloned or split (gcc/ipa-sra.cc "isra",
// ipa-cp.cc "constprop", ipa-split.cc "part", hot/cold partitioning "cold", LTO "lto_priv", ThinLTO
// promotion "llvm.<hash>", clang's "localalias"). Each may carry a ".N" counter.
constexpr std::string_view kCloneSuffixes[] = {"isra", "constprop", "part", "cold", "lto_priv", "llvm", "localalias"};

bool all_digits(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s)
        if (c < '0' || c > '9') return false;
    return true;
}

bool is_clone_word(std::string_view s) {
    for (auto w : kCloneSuffixes)
        if (s == w) return true;
    return false;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
        s.remove_suffix(1);
    return s;
}

}  // namespace

std::string normalise_symbol(std::string_view name) {
    name = trim(name);
    // "func [module]" (kallsyms, function_graph text) or "func\t[module]".
    if (!name.empty() && name.back() == ']') {
        auto open = name.rfind('[');
        if (open != std::string_view::npos && open > 0 && (name[open - 1] == ' ' || name[open - 1] == '\t'))
            name = trim(name.substr(0, open));
    }
    // Strip ".word[.N]" clone suffixes from the right while they are known ones; a bare ".N" counts only
    // right after a clone word (".constprop.0"), so "foo.5" alone stays.
    for (;;) {
        auto dot = name.rfind('.');
        if (dot == std::string_view::npos || dot == 0) break;
        std::string_view last = name.substr(dot + 1);
        if (is_clone_word(last)) {
            name = name.substr(0, dot);
            continue;
        }
        if (all_digits(last)) {
            auto dot2 = name.rfind('.', dot - 1);
            if (dot2 != std::string_view::npos && dot2 > 0 && is_clone_word(name.substr(dot2 + 1, dot - dot2 - 1))) {
                name = name.substr(0, dot2);
                continue;
            }
            // ".llvm.<hash>" is a long number; the loop above handled it. Anything else: stop.
        }
        break;
    }
    return std::string(name);
}

}  // namespace nvtrace
