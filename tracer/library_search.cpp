#include "library_search.hpp"

#include <unistd.h>

#include <cctype>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <elf.h>
#include <fmt/format.h>

namespace nvtrace::tracer {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kMagicNew = "glibc-ld.so.cache1.1";  // CACHEMAGIC_NEW + CACHE_VERSION
constexpr std::string_view kMagicOld = "ld.so-1.7.0";           // CACHEMAGIC
constexpr std::size_t kHeaderNew = 48;  // magic[17] version[3] nlibs len_strings flags pad[3] ext_offset unused[3]
constexpr std::size_t kEntryNew = 24;   // flags key value osversion hwcap(u64)
constexpr std::size_t kEntryOld = 12;   // flags key value

std::uint32_t u32_at(std::string_view b, std::size_t off) {
    std::uint32_t v = 0;
    std::memcpy(&v, b.data() + off, 4);
    return v;
}
std::uint64_t u64_at(std::string_view b, std::size_t off) {
    std::uint64_t v = 0;
    std::memcpy(&v, b.data() + off, 8);
    return v;
}

// The NUL-terminated string at `off` of `b`, or nullopt when it runs past the end.
std::optional<std::string> cstr_at(std::string_view b, std::size_t off) {
    if (off >= b.size()) return std::nullopt;
    std::size_t end = b.find('\0', off);
    if (end == std::string_view::npos) return std::nullopt;
    return std::string(b.substr(off, end - off));
}

std::string dir_of(std::string_view path) {
    auto slash = path.rfind('/');
    if (slash == std::string_view::npos) return ".";
    if (slash == 0) return "/";
    return std::string(path.substr(0, slash));
}

// An ELF file the loader would accept for an x86-64 requester of the same class.
bool loadable(const std::string& path, const ElfInfo& requester) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) return false;
    auto elf = read_elf(path);
    return elf && elf->is_64 == requester.is_64 && elf->machine == requester.machine;
}

}  // namespace

Result<std::vector<LdCacheEntry>> parse_ld_cache(std::string_view b, std::string_view source) {
    std::size_t base = 0;
    if (b.substr(0, kMagicOld.size()) == kMagicOld) {
        // The old table first: magic[11] (12 with alignment), nlibs, entries; the new one follows, 8-aligned.
        if (b.size() < 16)
            return fail(Error::usage(fmt::format("{}: truncated old-format header (expected 16 bytes)", source)));
        std::uint32_t n = u32_at(b, 12);
        base = (16 + std::size_t{n} * kEntryOld + 7) & ~std::size_t{7};
        if (base > b.size() || b.substr(base, kMagicNew.size()) != kMagicNew)
            return fail(Error::usage(fmt::format(
                "{}: only the old ld.so-1.7.0 format, which glibc 2.32 and later no longer read (expected '{}' after "
                "it)",
                source, kMagicNew)));
    } else if (b.substr(0, kMagicNew.size()) != kMagicNew) {
        return fail(Error::usage(fmt::format("{}: not an ld.so cache (expected '{}' at byte 0)", source, kMagicNew)));
    }
    std::string_view nb = b.substr(base);
    if (nb.size() < kHeaderNew)
        return fail(
            Error::usage(fmt::format("{}: truncated header (expected {} bytes at byte {})", source, kHeaderNew, base)));
    std::uint32_t nlibs = u32_at(nb, 20);
    if (std::uint64_t{nlibs} * kEntryNew > nb.size() - kHeaderNew)
        return fail(Error::usage(fmt::format("{}: {} entries do not fit in {} bytes", source, nlibs, b.size())));
    std::vector<LdCacheEntry> out;
    out.reserve(nlibs);
    for (std::uint32_t i = 0; i < nlibs; ++i) {
        std::size_t e = kHeaderNew + std::size_t{i} * kEntryNew;
        LdCacheEntry entry;
        entry.flags = static_cast<std::int32_t>(u32_at(nb, e));
        auto key = cstr_at(nb, u32_at(nb, e + 4));
        auto value = cstr_at(nb, u32_at(nb, e + 8));
        entry.hwcap = u64_at(nb, e + 16);
        if (!key || !value)
            return fail(Error::usage(
                fmt::format("{}: entry {}: string offset outside the file (expected < {})", source, i, nb.size())));
        entry.name = std::move(*key);
        entry.path = std::move(*value);
        out.push_back(std::move(entry));
    }
    return out;
}

Result<std::vector<LdCacheEntry>> read_ld_cache(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return fail(Error::environment(fmt::format("{}: {}", path, std::strerror(errno))));
    std::ostringstream s;
    s << in.rdbuf();
    std::string bytes = s.str();
    return parse_ld_cache(bytes, path);
}

bool is_x86_64_entry(const LdCacheEntry& e) {
    // dl-cache.h: FLAG_TYPE_MASK 0x00ff (FLAG_ELF_LIBC6 = 3), FLAG_REQUIRED_MASK 0xff00 (FLAG_X8664_LIB64 = 0x0300).
    return (e.flags & 0xff) == 0x03 && (e.flags & 0xff00) == 0x0300;
}

std::string expand_dst(std::string_view element, std::string_view object_path) {
    std::string out;
    for (std::size_t i = 0; i < element.size();) {
        if (element[i] != '$') {
            out += element[i++];
            continue;
        }
        auto token = [&](std::string_view name) {
            std::string plain = "$" + std::string(name), braced = "${" + std::string(name) + "}";
            if (element.substr(i, braced.size()) == braced) return braced.size();
            if (element.substr(i, plain.size()) == plain) {
                std::size_t after = i + plain.size();
                bool more = after < element.size() &&
                            (std::isalnum(static_cast<unsigned char>(element[after])) || element[after] == '_');
                return more ? std::size_t{0} : plain.size();
            }
            return std::size_t{0};
        };
        if (std::size_t n = token("ORIGIN")) {
            out += dir_of(object_path);
            i += n;
        } else if (std::size_t n2 = token("LIB")) {
            out += "lib/x86_64-linux-gnu";
            i += n2;
        } else if (std::size_t n3 = token("PLATFORM")) {
            out += "x86_64";
            i += n3;
        } else {
            out += element[i++];
        }
    }
    return out;
}

std::vector<LibraryCandidate> find_library(std::string_view name, const ElfInfo& requester, const ElfInfo* executable,
                                           const SearchContext& ctx) {
    std::vector<LibraryCandidate> out;
    std::set<std::string> seen;
    auto consider = [&](const std::string& path, const std::string& why) {
        if (!loadable(path, requester)) return;
        std::error_code ec;
        std::string real = fs::canonical(path, ec).string();
        if (ec) real = path;
        if (!seen.insert(real).second) return;
        out.push_back({path, real, why});
    };
    auto search_dirs = [&](const std::vector<std::string>& dirs, const std::string& object, const std::string& why) {
        for (const auto& raw : dirs) {
            std::string dir = object.empty() ? raw : expand_dst(raw, object);
            if (dir.empty()) dir = ".";  // an empty element is the current directory (ld.so)
            for (const char* level : {"x86-64-v4", "x86-64-v3", "x86-64-v2"})
                consider(fmt::format("{}/glibc-hwcaps/{}/{}", dir, level, name),
                         fmt::format("{} (glibc-hwcaps/{}, when the CPU supports it)", why, level));
            consider(fmt::format("{}/{}", dir, name), why);
        }
    };
    if (name.find('/') != std::string_view::npos) {
        consider(std::string(name), "path given");
        return out;
    }
    if (requester.runpath.empty()) {
        search_dirs(requester.rpath, requester.path, "DT_RPATH of " + requester.path);
        if (executable && executable != &requester && executable->runpath.empty())
            search_dirs(executable->rpath, executable->path, "DT_RPATH of " + executable->path);
    }
    if (ctx.ld_library_path) {
        std::vector<std::string> dirs;
        std::string_view s = *ctx.ld_library_path;
        // ld.so splits LD_LIBRARY_PATH on ':' and ';'.
        std::size_t start = 0;
        while (start <= s.size()) {
            std::size_t end = s.find_first_of(":;", start);
            if (end == std::string_view::npos) end = s.size();
            dirs.emplace_back(s.substr(start, end - start));
            start = end + 1;
        }
        search_dirs(dirs, requester.path, "LD_LIBRARY_PATH");
    }
    search_dirs(requester.runpath, requester.path, "DT_RUNPATH of " + requester.path);
    if (!requester.nodeflib) {
        for (const auto& e : ctx.cache)
            if (e.name == name && is_x86_64_entry(e)) consider(e.path, "ld.so.cache");
        search_dirs(ctx.default_dirs, "", "default directory");
    }
    search_dirs(ctx.extra_dirs, "", "driver folder (not searched by ld.so)");
    return out;
}

Result<std::vector<LoadedLibrary>> needed_libraries(const std::string& program, const SearchContext& ctx) {
    auto exe = read_elf(program);
    if (!exe) return fail(exe.error());
    std::vector<LoadedLibrary> out;
    std::set<std::string> names;
    std::deque<ElfInfo> queue;  // objects whose DT_NEEDED are still to visit, in load order
    queue.push_back(*exe);
    while (!queue.empty()) {
        ElfInfo obj = std::move(queue.front());
        queue.pop_front();
        for (const auto& n : obj.needed) {
            if (!names.insert(n).second) continue;
            LoadedLibrary lib{n, obj.path, std::nullopt};
            auto c = find_library(n, obj, &*exe, ctx);
            if (!c.empty()) {
                lib.file = c.front();
                if (auto e = read_elf(c.front().path)) queue.push_back(std::move(*e));
            }
            out.push_back(std::move(lib));
        }
    }
    return out;
}

}  // namespace nvtrace::tracer
