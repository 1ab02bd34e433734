// nvtrace/source_links.hpp: where the functions of a report are defined in a driver's source tree
// (`nvtrace run|report --source DIR`, e.g. a checkout of NVIDIA/open-gpu-kernel-modules).
//
// The search is the one an engineer does with grep: a definition is a name followed by its parameter list
// and then the function body's `{`, outside any other body. Calls (inside bodies), prototypes (`;` after the
// parameter list), function-like macros (`#define`), and macro invocations at file scope (`EXPORT_SYMBOL(f);`)
// are not definitions. Return types and qualifiers may be anywhere before the name, on the same line or the
// lines above (`static inline`, `NV_STATUS NV_API_CALL`, `NvU32\nfoo(...)`); attributes between the `)` and
// the `{` are skipped. Comments, string and character literals and preprocessor lines are ignored.
// Unbalanced braces across `#if` branches are re-synchronised at a `}` in column 0 (kernel style).
// Nothing is guessed: a name with no definition is "missing", one with several is "ambiguous" with all of
// them listed.
//
// Thread-safety: pure functions (link_sources only reads files).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "nvtrace/error.hpp"
#include "nvtrace/report.hpp"

namespace nvtrace {

struct FunctionDefinition {
    std::string name;
    std::uint32_t line = 0;  // 1-based line of the name
};

// Every function definition in one C source or header text, in order.
std::vector<FunctionDefinition> find_function_definitions(std::string_view c_text);

// The name to search for a traced symbol: compiler clone suffixes are dropped ("foo.isra.0",
// "foo.constprop.3", "foo.part.1", "foo.cold" -> "foo").
std::string source_lookup_name(std::string_view function);

// Scans every .c and .h file under `root` (recursively, symlinks not followed, in path order) for the
// definitions of `functions` (duplicates allowed). Errors: `root` is not a readable directory (usage).
// Files that cannot be read are skipped.
Result<SourceLinks> link_sources(const std::filesystem::path& root, const std::vector<std::string>& functions);

// The same for every distinct calls[].function of a report.
Result<SourceLinks> link_report_sources(const std::filesystem::path& root, const Report& report);

}  // namespace nvtrace
