#include "uprobe_late.hpp"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace nvtrace::tracer {

namespace {

std::string_view next_word(std::string_view& s) {
    std::size_t b = s.find_first_not_of(' ');
    if (b == std::string_view::npos) {
        s = {};
        return {};
    }
    s.remove_prefix(b);
    std::size_t e = s.find(' ');
    std::string_view w = s.substr(0, e);
    s.remove_prefix(e == std::string_view::npos ? s.size() : e);
    return w;
}

bool starts_with(std::string_view s, std::string_view p) {
    return s.substr(0, p.size()) == p;
}

// The (st_dev, st_ino) of `path`, or nullopt.
std::optional<std::pair<std::uint64_t, std::uint64_t>> file_id(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return std::nullopt;
    return std::pair<std::uint64_t, std::uint64_t>(st.st_dev, st.st_ino);
}

}  // namespace

std::vector<MappedFile> executable_mappings(std::string_view text) {
    std::vector<MappedFile> out;
    std::set<std::pair<std::string, std::uint64_t>> seen;
    while (!text.empty()) {
        std::size_t nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
        // fs/proc/task_mmu.c show_map_vma: "%08lx-%08lx %c%c%c%c %08llx %02x:%02x %lu ", padded, then the path.
        std::string_view rest = line;
        std::string_view range = next_word(rest), perms = next_word(rest), offset = next_word(rest);
        std::string_view dev = next_word(rest), inode = next_word(rest);
        if (range.find('-') == std::string_view::npos || perms.size() != 4 || offset.empty() ||
            dev.find(':') == std::string_view::npos || inode.empty())
            continue;
        if (perms[2] != 'x') continue;
        std::size_t b = rest.find_first_not_of(' ');
        if (b == std::string_view::npos || rest[b] != '/') continue;  // anonymous, [vdso], [stack], ...
        char* end = nullptr;
        const std::string inode_s(inode);
        const unsigned long long ino = std::strtoull(inode_s.c_str(), &end, 10);
        if (!end || *end || ino == 0) continue;
        MappedFile m{std::string(rest.substr(b)), ino, std::string(dev)};
        if (seen.emplace(m.dev, m.inode).second) out.push_back(std::move(m));
    }
    return out;
}

LateMatch late_match(std::string_view name, const LateWatch& watch) {
    LateMatch m;
    if (watch.cuda) {
        if (starts_with(name, "libcudart.so"))
            m.cuda = CudaLayer::runtime;
        else if (starts_with(name, "libcuda.so"))
            m.cuda = CudaLayer::driver;
    }
    for (const auto& spec : watch.specs) {
        const std::string& lib = spec.library;
        if (lib.find('/') != std::string::npos) continue;
        const bool stem = starts_with(name, lib + ".so") ||
                          (lib.size() > 3 && lib.substr(lib.size() - 3) == ".so" && starts_with(name, lib + "."));
        if (name == lib || stem) m.specs.push_back(&spec);
    }
    return m;
}

LateUprobes::LateUprobes(LateWatch watch, const ProbePlan& start) : watch_(std::move(watch)) {
    plan_.event_names = start.event_names;
    for (const auto& f : start.functions)
        if (auto id = file_id(f.library)) armed_.insert(*id);
}

std::vector<LateLibrary> LateUprobes::scan(const std::vector<int>& pids) {
    std::vector<LateLibrary> out;
    if (!active()) return out;
    for (int pid : pids) {
        std::ifstream in(fmt::format("/proc/{}/maps", pid));
        if (!in) continue;
        std::ostringstream text;
        text << in.rdbuf();
        for (auto& lib : scan_text(pid, text.str()))
            out.push_back(std::move(lib));
    }
    return out;
}

std::vector<LateLibrary> LateUprobes::scan_text(int pid, std::string_view maps_text) {
    std::vector<LateLibrary> out;
    for (const MappedFile& m : executable_mappings(maps_text)) {
        if (!seen_.emplace(m.dev, m.inode).second) continue;
        const std::string name = std::filesystem::path(m.path).filename().string();
        const LateMatch match = late_match(name, watch_);
        if (!match.any()) continue;
        LateLibrary lib;
        lib.pid = pid;
        std::error_code ec;
        const std::string real = std::filesystem::canonical(m.path, ec).string();
        auto id = ec ? std::nullopt : file_id(real);
        // The path is the one the process sees (its root, its mount namespace): it must name the mapped inode here.
        if (!id || id->second != m.inode) {
            lib.path = m.path;
            lib.notes.push_back(fmt::format("{} (mapped by pid {}): not probed: the path names {} here, not inode {}",
                                            m.path, pid, id ? fmt::format("inode {}", id->second) : "no file",
                                            m.inode));
            out.push_back(std::move(lib));
            continue;
        }
        if (!armed_.insert(*id).second) continue;  // probed at start (or already late, through another path)
        lib.path = real;
        auto elf = read_elf(real);
        if (!elf) {
            lib.notes.push_back(fmt::format("{}: not probed: {}", real, elf.error().message));
            out.push_back(std::move(lib));
            continue;
        }
        const std::size_t first = plan_.functions.size();
        if (match.cuda) {
            std::size_t n = plan_cuda(plan_, *elf, *match.cuda);
            lib.notes.push_back(fmt::format("{} {} functions of {} (mapped by pid {} after the start)", n,
                                            *match.cuda == CudaLayer::driver ? "CUDA driver API" : "CUDA runtime", real,
                                            pid));
            for (auto& s : plan_.skipped)
                lib.notes.push_back("left out: " + s);
            plan_.skipped.clear();
        }
        for (const UprobeSpec* spec : match.specs)
            if (auto r = plan_function(plan_, *elf, spec->symbol, spec->entry_args, spec->return_args); !r)
                lib.notes.push_back(fmt::format("--uprobe '{}': {} left out: {}", spec->text, real, r.error().message));
        lib.functions.assign(plan_.functions.begin() + static_cast<std::ptrdiff_t>(first), plan_.functions.end());
        out.push_back(std::move(lib));
    }
    return out;
}

}  // namespace nvtrace::tracer
