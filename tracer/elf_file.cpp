#include "elf_file.hpp"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <string_view>

#include <fmt/format.h>

namespace nvtrace::tracer {

namespace {

struct Fd {
    int fd = -1;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

struct ElfHandle {
    Elf* elf = nullptr;
    ~ElfHandle() {
        if (elf) elf_end(elf);
    }
};

std::vector<std::string> split_path_list(std::string_view s) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= s.size()) {
        std::size_t colon = s.find(':', start);
        if (colon == std::string_view::npos) colon = s.size();
        // An empty element means the current directory to ld.so; kept as "" so the search can say so.
        out.emplace_back(s.substr(start, colon - start));
        start = colon + 1;
    }
    return out;
}

// Version index -> name, from .gnu.version_d.
std::map<unsigned, std::string> read_verdefs(Elf* elf, Elf_Scn* scn, const GElf_Shdr& sh) {
    std::map<unsigned, std::string> names;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data) return names;
    int off = 0;
    for (GElf_Word i = 0; i < sh.sh_info; ++i) {
        GElf_Verdef def;
        if (!gelf_getverdef(data, off, &def)) break;
        GElf_Verdaux aux;
        if (def.vd_cnt > 0 && gelf_getverdaux(data, off + static_cast<int>(def.vd_aux), &aux)) {
            const char* n = elf_strptr(elf, sh.sh_link, aux.vda_name);
            if (n) names[def.vd_ndx] = n;
        }
        if (def.vd_next == 0) break;
        off += static_cast<int>(def.vd_next);
    }
    return names;
}

}  // namespace

std::optional<std::uint64_t> file_offset_of(std::span<const ElfSegment> segments, std::uint64_t vaddr) {
    for (const auto& s : segments)
        if (vaddr >= s.vaddr && vaddr - s.vaddr < s.file_size) return s.offset + (vaddr - s.vaddr);
    return std::nullopt;
}

Result<ElfInfo> read_elf(const std::string& path) {
    if (elf_version(EV_CURRENT) == EV_NONE) return fail(Error::internal(fmt::format("libelf: {}", elf_errmsg(-1))));
    Fd fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (fd.fd < 0) return fail(Error::usage(fmt::format("{}: {}", path, std::strerror(errno))));
    ElfHandle h{elf_begin(fd.fd, ELF_C_READ_MMAP, nullptr)};
    if (!h.elf || elf_kind(h.elf) != ELF_K_ELF)
        return fail(
            Error::usage(fmt::format("{}: not an ELF file (expected a shared library or an executable)", path)));
    GElf_Ehdr eh;
    if (!gelf_getehdr(h.elf, &eh))
        return fail(Error::usage(fmt::format("{}: unreadable ELF header: {}", path, elf_errmsg(-1))));
    ElfInfo info;
    info.path = path;
    info.is_64 = gelf_getclass(h.elf) == ELFCLASS64;
    info.machine = eh.e_machine;
    info.shared_object = eh.e_type == ET_DYN;

    std::size_t nphdr = 0;
    if (elf_getphdrnum(h.elf, &nphdr) != 0) nphdr = 0;
    for (std::size_t i = 0; i < nphdr; ++i) {
        GElf_Phdr ph;
        if (!gelf_getphdr(h.elf, static_cast<int>(i), &ph)) continue;
        if (ph.p_type == PT_LOAD) {
            info.segments.push_back({ph.p_offset, ph.p_vaddr, ph.p_filesz, (ph.p_flags & PF_X) != 0});
        } else if (ph.p_type == PT_INTERP) {
            std::size_t size = 0;
            char* raw = elf_rawfile(h.elf, &size);
            if (raw && ph.p_offset < size) {
                std::size_t n = std::min<std::size_t>(ph.p_filesz, size - ph.p_offset);
                info.interpreter.assign(raw + ph.p_offset, strnlen(raw + ph.p_offset, n));
            }
        }
    }

    Elf_Scn* dynsym = nullptr;
    GElf_Shdr dynsym_sh{};
    Elf_Scn* versym = nullptr;
    std::map<unsigned, std::string> verdefs;
    for (Elf_Scn* scn = elf_nextscn(h.elf, nullptr); scn; scn = elf_nextscn(h.elf, scn)) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh)) continue;
        if (sh.sh_type == SHT_DYNSYM) {
            dynsym = scn;
            dynsym_sh = sh;
        } else if (sh.sh_type == SHT_GNU_versym) {
            versym = scn;
        } else if (sh.sh_type == SHT_GNU_verdef) {
            verdefs = read_verdefs(h.elf, scn, sh);
        } else if (sh.sh_type == SHT_DYNAMIC) {
            Elf_Data* data = elf_getdata(scn, nullptr);
            std::size_t n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
            for (std::size_t i = 0; data && i < n; ++i) {
                GElf_Dyn dyn;
                if (!gelf_getdyn(data, static_cast<int>(i), &dyn)) break;
                if (dyn.d_tag == DT_NULL) break;
                auto str = [&] {
                    const char* s = elf_strptr(h.elf, sh.sh_link, dyn.d_un.d_val);
                    return std::string(s ? s : "");
                };
                switch (dyn.d_tag) {
                    case DT_NEEDED:
                        info.needed.push_back(str());
                        break;
                    case DT_SONAME:
                        info.soname = str();
                        break;
                    case DT_RPATH:
                        info.rpath = split_path_list(str());
                        break;
                    case DT_RUNPATH:
                        info.runpath = split_path_list(str());
                        break;
                    case DT_FLAGS_1:
                        info.nodeflib = (dyn.d_un.d_val & DF_1_NODEFLIB) != 0;
                        break;
                    default:
                        break;
                }
            }
        }
    }
    if (!dynsym) return info;

    Elf_Data* syms = elf_getdata(dynsym, nullptr);
    Elf_Data* vers = versym ? elf_getdata(versym, nullptr) : nullptr;
    std::size_t count = dynsym_sh.sh_entsize ? dynsym_sh.sh_size / dynsym_sh.sh_entsize : 0;
    for (std::size_t i = 1; syms && i < count; ++i) {
        GElf_Sym sym;
        if (!gelf_getsym(syms, static_cast<int>(i), &sym)) break;
        unsigned type = GELF_ST_TYPE(sym.st_info);
        if (sym.st_shndx == SHN_UNDEF || (type != STT_FUNC && type != STT_GNU_IFUNC)) continue;
        const char* name = elf_strptr(h.elf, dynsym_sh.sh_link, sym.st_name);
        if (!name || !*name) continue;
        ElfSymbol s;
        s.name = name;
        s.ifunc = type == STT_GNU_IFUNC;
        s.weak = GELF_ST_BIND(sym.st_info) == STB_WEAK;
        s.value = sym.st_value;
        s.size = sym.st_size;
        s.file_offset = file_offset_of(info.segments, sym.st_value);
        GElf_Versym vs;
        if (vers && gelf_getversym(vers, static_cast<int>(i), &vs)) {
            unsigned idx = vs & 0x7fff;
            s.default_version = (vs & 0x8000) == 0;
            // Index 1 is the file's own base definition (VER_NDX_GLOBAL): the symbol is unversioned.
            if (idx > 1)
                if (auto it = verdefs.find(idx); it != verdefs.end()) s.version = it->second;
        }
        info.functions.push_back(std::move(s));
    }
    return info;
}

const ElfSymbol* find_function(const ElfInfo& elf, std::string_view name) {
    std::string_view base = name, version;
    bool want_default = false;
    if (auto at = name.find('@'); at != std::string_view::npos) {
        base = name.substr(0, at);
        version = name.substr(at + 1);
        if (!version.empty() && version[0] == '@') {
            version.remove_prefix(1);
            want_default = true;
        }
    }
    const ElfSymbol* fallback = nullptr;
    for (const auto& s : elf.functions) {
        if (s.name != base) continue;
        if (!version.empty()) {
            if (s.version == version && (!want_default || s.default_version)) return &s;
            continue;
        }
        if (s.default_version) return &s;
        if (!fallback) fallback = &s;
    }
    return version.empty() ? fallback : nullptr;
}

}  // namespace nvtrace::tracer
