// library_search.hpp: which file a program will load for a library name, found the way glibc's dynamic loader
// finds it (ld.so(8) "Dynamic linking", glibc 2.36 elf/dl-load.c _dl_map_object), so that uprobes can be armed
// on it before the program starts.
//
// Order for a name without '/', requested by object O (the program, or a library it loads: DT_NEEDED, or dlopen
// from O): O's DT_RPATH and then the executable's DT_RPATH (each only when that object has no DT_RUNPATH);
// LD_LIBRARY_PATH; O's DT_RUNPATH; /etc/ld.so.cache; the default directories (unless O has DF_1_NODEFLIB).
// In each directory, the glibc-hwcaps subdirectories (x86-64-v4, -v3, -v2) come first. $ORIGIN, $LIB and
// $PLATFORM are expanded. Files of another ELF class or machine are skipped, as ld.so skips them.
// Not modelled: the legacy hwcaps subdirectories (tls/, x86_64/, haswell/), LD_PRELOAD, and secure-execution mode
// (setuid programs ignore LD_LIBRARY_PATH).
//
// /etc/ld.so.cache: the format ldconfig writes (glibc sysdeps/generic/dl-cache.h: "glibc-ld.so.cache" "1.1",
// 48-byte header, 24-byte entries whose key/value are offsets from the header), alone or after the old
// "ld.so-1.7.0" table. Pure: parse_ld_cache reads bytes; the search reads only the file system.
// Thread-safety: all functions are reentrant.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "elf_file.hpp"
#include "nvtrace/error.hpp"

namespace nvtrace::tracer {

struct LdCacheEntry {
    std::string name;         // the soname ("libc.so.6")
    std::string path;         // "/lib/x86_64-linux-gnu/libc.so.6"
    std::int32_t flags = 0;   // FLAG_ELF_LIBC6 (3) | FLAG_X8664_LIB64 (0x0300) for x86-64 libraries
    std::uint64_t hwcap = 0;  // the entry's hwcap bits (glibc-hwcaps subdirectory entries have bit 62 set)
};

// Parses the content of ld.so.cache; `source` names it in errors ("/etc/ld.so.cache: ...: expected ...").
Result<std::vector<LdCacheEntry>> parse_ld_cache(std::string_view bytes, std::string_view source);
Result<std::vector<LdCacheEntry>> read_ld_cache(const std::string& path = "/etc/ld.so.cache");
// True for an entry of a 64-bit x86 glibc library (the only kind an x86-64 program loads).
bool is_x86_64_entry(const LdCacheEntry& e);

struct SearchContext {
    std::optional<std::string> ld_library_path;  // the program's LD_LIBRARY_PATH (nullopt: unset)
    std::vector<LdCacheEntry> cache;
    std::vector<std::string> default_dirs{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib"};
    // Folders a driver installs its user-mode libraries in, searched after everything the loader searches:
    // candidates to arm, not a prediction of the loader's choice.
    std::vector<std::string> extra_dirs;
};

struct LibraryCandidate {
    std::string path;       // as found (the symlink's path, e.g. /lib/x86_64-linux-gnu/libc.so.6)
    std::string real_path;  // after symlinks: the file (inode) a uprobe is attached to
    std::string found_by;   // "DT_RUNPATH of /opt/x/app", "LD_LIBRARY_PATH", "ld.so.cache", "default directory", ...
};

// Every file `name` may be loaded from for `requester` (whose `path` must be set), in the loader's order, each
// real file once; the first is the one the loader takes. `executable` is the program (its DT_RPATH is searched
// too); pass nullptr when the requester is the program itself. Empty when nothing is found.
std::vector<LibraryCandidate> find_library(std::string_view name, const ElfInfo& requester, const ElfInfo* executable,
                                           const SearchContext& ctx);

struct LoadedLibrary {
    std::string name;                      // as in DT_NEEDED
    std::string requested_by;              // the path of the object that names it
    std::optional<LibraryCandidate> file;  // nullopt when not found (the loader would fail)
};

// The libraries a program loads at start (DT_NEEDED, breadth first from the executable as ld.so maps them,
// each name once). Libraries opened later with dlopen are not in it.
Result<std::vector<LoadedLibrary>> needed_libraries(const std::string& program, const SearchContext& ctx);

// $ORIGIN/${ORIGIN} (the folder of `object_path`), $LIB (lib/x86_64-linux-gnu, Debian's slibdir) and $PLATFORM
// (x86_64) replaced in one DT_RPATH/DT_RUNPATH element.
std::string expand_dst(std::string_view element, std::string_view object_path);

}  // namespace nvtrace::tracer
