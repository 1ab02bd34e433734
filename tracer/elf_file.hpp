// elf_file.hpp: what the dynamic loader and uprobes need to know about an ELF file, read with libelf (elfutils).
//
// Pure: reads the file and nothing else (no /proc, no tracefs). The facts come from the ELF gABI and the
// x86-64 psABI: program headers (PT_LOAD, PT_INTERP), the dynamic section (DT_NEEDED, DT_SONAME, DT_RPATH,
// DT_RUNPATH, DT_FLAGS_1), the dynamic symbol table .dynsym and its GNU symbol versions (.gnu.version,
// .gnu.version_d; the "Linux Standard Base" symbol versioning chapter).
// Thread-safety: read_elf may run on several threads at once (each call opens its own descriptor).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "nvtrace/error.hpp"

namespace nvtrace::tracer {

struct ElfSegment {               // one PT_LOAD program header
    std::uint64_t offset = 0;     // p_offset: where it starts in the file, bytes
    std::uint64_t vaddr = 0;      // p_vaddr: where it is mapped, relative to the load base for ET_DYN
    std::uint64_t file_size = 0;  // p_filesz
    bool executable = false;      // PF_X
};

struct ElfSymbol {  // a defined function in .dynsym
    std::string name;
    std::string version;                       // "GLIBC_2.2.5", "libcudart.so.13"; "" when unversioned
    bool default_version = true;               // "name@@VERSION" (what a new link binds to); false for "name@VERSION"
    bool ifunc = false;                        // STT_GNU_IFUNC: the address is the resolver, not the implementation
    bool weak = false;                         // STB_WEAK
    std::uint64_t value = 0;                   // st_value (virtual address)
    std::uint64_t size = 0;                    // st_size, bytes
    std::optional<std::uint64_t> file_offset;  // the byte of `value` in the file (a uprobe's offset); nullopt when
                                               // no PT_LOAD segment holds it
};

struct ElfInfo {
    std::string path;
    bool is_64 = false;                // ELFCLASS64
    unsigned machine = 0;              // e_machine (EM_X86_64 = 62)
    bool shared_object = false;        // ET_DYN (a library, or a PIE executable)
    std::string interpreter;           // PT_INTERP ("" for libraries and static executables)
    std::string soname;                // DT_SONAME
    std::vector<std::string> needed;   // DT_NEEDED, in order
    std::vector<std::string> rpath;    // DT_RPATH, split on ':' (tokens such as $ORIGIN not expanded)
    std::vector<std::string> runpath;  // DT_RUNPATH, split on ':'
    bool nodeflib = false;             // DF_1_NODEFLIB: the loader skips ld.so.cache and the default directories
    std::vector<ElfSegment> segments;
    std::vector<ElfSymbol> functions;  // defined STT_FUNC / STT_GNU_IFUNC symbols of .dynsym, in table order
    bool is_dynamic() const { return !interpreter.empty() || !needed.empty() || !soname.empty(); }
};

// Reads `path`. Errors name the file and what was expected ("not an ELF file", "no .dynsym").
// A file without .dynsym (a static executable) reads with `functions` empty.
Result<ElfInfo> read_elf(const std::string& path);

// The file offset of virtual address `vaddr`: the PT_LOAD segment that holds it in its file part
// (p_vaddr <= vaddr < p_vaddr + p_filesz) maps it to p_offset + (vaddr - p_vaddr). nullopt otherwise.
std::optional<std::uint64_t> file_offset_of(std::span<const ElfSegment> segments, std::uint64_t vaddr);

// The symbol a uprobe on `name` means: `name` may be "sym" (the default version, or the only one) or
// "sym@VERSION" / "sym@@VERSION". nullptr when there is none.
const ElfSymbol* find_function(const ElfInfo& elf, std::string_view name);

}  // namespace nvtrace::tracer
