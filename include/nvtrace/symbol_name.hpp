// nvtrace/symbol_name.hpp: a kernel function's name without what the compiler and the trace add to it, so that one
// function has one name across builds and sources. Used by the diff and fleet views (call paths) and by the checker
// (expectations name functions as the source declares them). Implementation: analyze/symbol_name.cpp.
// Thread-safety: pure function.
#pragma once

#include <string>
#include <string_view>

namespace nvtrace {

// "nvidia_ioctl.isra.0 [nvidia]" -> "nvidia_ioctl"; "x.constprop.0.cold" -> "x". Strips a trailing " [module]"
// (kallsyms, function_graph text) and, from the right, the suffixes GCC and clang give a function they cloned or
// split: ".isra", ".constprop", ".part", ".cold", ".lto_priv", ".llvm.<hash>", ".localalias", each with an
// optional ".N" counter. Unknown suffixes are kept, and a bare ".N" alone ("foo.5") too.
std::string normalise_symbol(std::string_view name);

}  // namespace nvtrace
