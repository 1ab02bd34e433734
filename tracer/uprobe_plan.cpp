#include "uprobe_plan.hpp"

#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <array>
#include <cctype>

#include <fmt/format.h>

namespace nvtrace::tracer {

namespace {

// arch/x86/kernel/ptrace.c regoffset_table (x86-64): the names a uprobe fetch-arg may use after '%'.
constexpr std::array<std::string_view, 24> kRegisters{"ax", "bx",    "cx",  "dx",  "si",  "di",  "bp",  "sp",
                                                      "r8", "r9",    "r10", "r11", "r12", "r13", "r14", "r15",
                                                      "ip", "flags", "cs",  "ss",  "ds",  "es",  "fs",  "gs"};

bool is_register(std::string_view s) {
    return std::find(kRegisters.begin(), kRegisters.end(), s) != kRegisters.end() || s == "orig_ax";
}

bool is_ident(std::string_view s) {
    if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
    return std::all_of(s.begin(), s.end(),
                       [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

bool all_digits(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool is_number(std::string_view s) {  // decimal or 0x hex
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        return std::all_of(s.begin() + 2, s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
    return all_digits(s);
}

// uprobetracer.rst "Types": u8/16/32/64, s8/16/32/64, x8/16/32/64, char, string, ustring, symbol,
// b<bit-width>@<bit-offset>/<container-size>, each optionally an array TYPE[N].
std::string check_type(std::string_view t) {
    if (auto lb = t.find('['); lb != std::string_view::npos) {
        if (t.back() != ']' || !all_digits(t.substr(lb + 1, t.size() - lb - 2)))
            return fmt::format("an array type TYPE[N], found '{}'", t);
        t = t.substr(0, lb);
    }
    for (std::string_view plain : {"u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "x8", "x16", "x32", "x64",
                                   "char", "string", "ustring", "symbol"})
        if (t == plain) return {};
    if (t.size() > 1 && t[0] == 'b') {
        auto at = t.find('@'), slash = t.find('/');
        if (at != std::string_view::npos && slash != std::string_view::npos && at < slash &&
            all_digits(t.substr(1, at - 1)) && all_digits(t.substr(at + 1, slash - at - 1)) &&
            all_digits(t.substr(slash + 1)))
            return {};
    }
    return fmt::format("a type (u8..u64, s8..s64, x8..x64, char, string, ustring, symbol, bW@O/C), found '{}'", t);
}

// FETCHARG without NAME= and :TYPE.
std::string check_location(std::string_view a) {
    if (a.empty()) return "a fetch-arg (%REG, $stackN, $retval, $comm, @ADDR, +OFFS(FETCHARG), \\IMM), found nothing";
    if (a[0] == '%') {
        if (is_register(a.substr(1))) return {};
        return fmt::format("an x86-64 register after '%' (di, si, dx, cx, r8, r9, ax, sp, ip, ...), found '{}'", a);
    }
    if (a[0] == '$') {
        if (a == "$stack" || a == "$retval" || a == "$comm") return {};
        if (a.substr(0, 6) == "$stack" && all_digits(a.substr(6))) return {};
        return fmt::format("$stack, $stackN, $retval or $comm, found '{}'", a);
    }
    if (a[0] == '@') {
        std::string_view n = a.substr(1);
        if (!n.empty() && n[0] == '+') n.remove_prefix(1);
        if (is_number(n)) return {};
        return fmt::format("@ADDR or @+OFFSET with a number, found '{}'", a);
    }
    if (a[0] == '\\') {
        std::string_view v = a.substr(1);
        if (v.size() >= 2 && v.front() == '"' && v.back() == '"') return {};
        if (!v.empty() && v[0] == '-') v.remove_prefix(1);
        if (is_number(v)) return {};
        return fmt::format("\\IMM (a number) or \\\"STRING\\\", found '{}'", a);
    }
    if (a[0] == '+' || a[0] == '-') {
        auto open = a.find('(');
        if (open == std::string_view::npos || a.back() != ')') return fmt::format("+|-OFFS(FETCHARG), found '{}'", a);
        std::string_view offs = a.substr(1, open - 1);
        if (!offs.empty() && offs[0] == 'u') offs.remove_prefix(1);
        if (!is_number(offs)) return fmt::format("a number in +|-OFFS(FETCHARG), found '{}'", a);
        return check_location(a.substr(open + 1, a.size() - open - 2));
    }
    return fmt::format("a fetch-arg (%REG, $stackN, $retval, $comm, @ADDR, +OFFS(FETCHARG), \\IMM), found '{}'", a);
}

std::vector<std::string> split_args(std::string_view s) {
    std::vector<std::string> out;
    std::string cur;
    bool quoted = false;
    for (char c : s) {
        if (c == '"') quoted = !quoted;
        if (c == ',' && !quoted) {
            out.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    out.push_back(cur);
    return out;
}

std::string join(const std::vector<std::string>& v) {
    return fmt::format("{}", fmt::join(v, " "));
}

}  // namespace

std::string check_fetcharg(std::string_view arg) {
    std::string_view body = arg;
    if (auto eq = body.find('='); eq != std::string_view::npos && body[0] != '\\') {
        if (!is_ident(body.substr(0, eq)))
            return fmt::format("a C identifier before '=' in '{}', found '{}'", arg, body.substr(0, eq));
        body = body.substr(eq + 1);
    }
    // The type follows the last ':' outside parentheses and quotes.
    std::size_t colon = std::string_view::npos;
    int depth = 0;
    bool quoted = false;
    for (std::size_t i = 0; i < body.size(); ++i) {
        char c = body[i];
        if (c == '"') quoted = !quoted;
        if (quoted) continue;
        if (c == '(') ++depth;
        if (c == ')') --depth;
        if (c == ':' && depth == 0) colon = i;
    }
    if (colon != std::string_view::npos) {
        if (auto e = check_type(body.substr(colon + 1)); !e.empty()) return e;
        body = body.substr(0, colon);
    }
    return check_location(body);
}

Result<UprobeSpec> parse_uprobe_spec(std::string_view text) {
    auto bad = [&](std::string what) {
        return fail(Error::usage(fmt::format("--uprobe '{}': expected {}", text, what)));
    };
    UprobeSpec spec;
    spec.text = std::string(text);
    std::string_view head = text, args;
    bool has_args = false;
    if (auto pct = text.find('%'); pct != std::string_view::npos) {
        head = text.substr(0, pct);
        args = text.substr(pct + 1);
        has_args = true;
    }
    auto colon = head.rfind(':');
    if (colon == std::string_view::npos)
        return bad(fmt::format("LIB:SYMBOL[%FETCHARGS] (e.g. libc.so.6:getpid), found no ':' in '{}'", head));
    spec.library = std::string(head.substr(0, colon));
    spec.symbol = std::string(head.substr(colon + 1));
    if (spec.library.empty()) return bad("a library (a path or a name such as libc.so.6) before ':'");
    std::string_view base = spec.symbol, version;
    if (auto at = base.find('@'); at != std::string_view::npos) {
        version = base.substr(at + 1);
        base = base.substr(0, at);
        if (!version.empty() && version[0] == '@') version.remove_prefix(1);
        if (version.empty()) return bad(fmt::format("a version after '@' in '{}'", spec.symbol));
    }
    if (base.empty()) return bad("a symbol after ':'");
    if (!std::all_of(base.begin(), base.end(), [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$';
        }))
        return bad(fmt::format("a symbol name (letters, digits, '_', '.', '$'), found '{}'", base));
    if (!has_args) return spec;
    if (args.empty()) return bad("fetch-args after '%'");
    std::vector<std::string> list = split_args(args);
    // The '%' that ends SYMBOL may be the first register's own ("write%di:s32").
    {
        std::string& first = list.front();
        std::size_t end = first.find_first_of(":=");
        std::string_view word = std::string_view(first).substr(0, end);
        bool followed_ok = end == std::string::npos || first[end] == ':';
        if (is_register(word) && followed_ok) first = "%" + first;
    }
    for (const auto& a : list) {
        if (auto e = check_fetcharg(a); !e.empty()) return bad(e);
        (a.find("$retval") != std::string::npos ? spec.return_args : spec.entry_args).push_back(a);
    }
    return spec;
}

Result<std::vector<LibraryCandidate>> resolve_uprobe_library(std::string_view lib, const std::string& program,
                                                             const SearchContext& ctx) {
    auto exe = read_elf(program);
    if (!exe) return fail(exe.error());
    if (lib.find('/') != std::string_view::npos) {
        auto c = find_library(lib, *exe, nullptr, ctx);
        if (c.empty())
            return fail(Error::usage(fmt::format("--uprobe library {}: not an ELF file of the program's class", lib)));
        return c;
    }
    auto needed = needed_libraries(program, ctx);
    if (!needed) return fail(needed.error());
    // "libc" and "libc.so" both stand for "libc.so.<version>".
    const bool ends_so = lib.size() > 3 && lib.substr(lib.size() - 3) == ".so";
    const std::string stem = ends_so ? std::string(lib) : std::string(lib) + ".so";
    for (const auto& n : *needed) {
        bool same = n.name == lib || n.name == stem;
        bool stem_of =
            n.name.size() > stem.size() && n.name.compare(0, stem.size(), stem) == 0 && n.name[stem.size()] == '.';
        if ((same || stem_of) && n.file) {
            // Every candidate for that name, as the object that needs it searches.
            auto requester = n.requested_by == exe->path ? *exe : read_elf(n.requested_by).value_or(*exe);
            return find_library(n.name, requester, &*exe, ctx);
        }
    }
    auto c = find_library(lib, *exe, nullptr, ctx);
    if (c.empty())
        return fail(Error::usage(
            fmt::format("--uprobe library '{}': expected a path, or a library {} loads or could dlopen; none found",
                        lib, program)));
    return c;
}

std::vector<UprobeDef> ProbePlan::defs() const {
    std::vector<UprobeDef> out;
    for (const auto& f : functions) {
        out.push_back(f.entry);
        out.push_back(f.exit);
    }
    return out;
}

std::string unique_event_name(ProbePlan& plan, std::string_view symbol) {
    constexpr std::size_t kReturnSuffix = 8;                          // "__return"
    constexpr std::size_t kRoom = kMaxEventName - kReturnSuffix - 4;  // and "_NNN" for duplicates
    std::string base;
    for (char c : symbol)
        base += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
    if (base.empty() || std::isdigit(static_cast<unsigned char>(base[0]))) base = "_" + base;
    if (base.size() > kRoom) base.resize(kRoom);
    std::string name = base;
    for (int n = 2; plan.event_names.count(name); ++n)
        name = fmt::format("{}_{}", base, n);
    plan.event_names.insert(name);
    return name;
}

Result<void> plan_function(ProbePlan& plan, const ElfInfo& elf, std::string_view symbol,
                           const std::vector<std::string>& entry_args, const std::vector<std::string>& return_args,
                           const CudaApi* cuda) {
    const ElfSymbol* sym = find_function(elf, symbol);
    if (!sym)
        return fail(Error::usage(
            fmt::format("{}: no function '{}' in its .dynsym (expected a defined STT_FUNC)", elf.path, symbol)));
    if (sym->ifunc)
        return fail(Error::usage(fmt::format(
            "{}: '{}' is an IFUNC (STT_GNU_IFUNC): its address is the resolver, which runs once at load; probe the "
            "implementation it selects instead",
            elf.path, symbol)));
    if (!sym->file_offset)
        return fail(Error::usage(
            fmt::format("{}: '{}' at 0x{:x} is in no PT_LOAD segment of the file", elf.path, symbol, sym->value)));
    PlannedFunction f;
    f.function = std::string(symbol);
    f.library = elf.path;
    f.cuda = cuda;
    std::string name = unique_event_name(plan, symbol);
    f.entry = UprobeDef{name, false, elf.path, *sym->file_offset, join(entry_args)};
    f.exit = UprobeDef{name + "__return", true, elf.path, *sym->file_offset,
                       return_args.empty() ? "ret=$retval:s64" : join(return_args)};
    plan.functions.push_back(std::move(f));
    return {};
}

std::size_t plan_cuda(ProbePlan& plan, const ElfInfo& elf, CudaLayer layer) {
    std::size_t added = 0;
    // CUresult and cudaError_t are C enums: 32 bits in eax.
    const std::vector<std::string> ret{"ret=$retval:s32"};
    for (const auto& api : cuda_apis()) {
        if (api.layer != layer) continue;
        const std::vector<std::string> args{cuda_fetchargs(api)};
        std::vector<std::string> entry = args.front().empty() ? std::vector<std::string>{} : args;
        for (std::string_view suffix : {"", "_ptds", "_ptsz"}) {
            std::string name = std::string(api.symbol) + std::string(suffix);
            const ElfSymbol* sym = find_function(elf, name);
            if (!sym) continue;
            if (auto r = plan_function(plan, elf, name, entry, ret, &api); r)
                ++added;
            else
                plan.skipped.push_back(r.error().message);
        }
    }
    return added;
}

}  // namespace nvtrace::tracer

namespace nvtrace::tracer {

std::optional<std::string> find_program(const std::string& name, const std::optional<std::string>& path_env) {
    if (name.empty()) return std::nullopt;
    if (name.find('/') != std::string::npos) return name;
    const std::string path = path_env.value_or("/usr/bin:/bin");
    for (std::size_t pos = 0; pos <= path.size();) {
        std::size_t colon = path.find(':', pos);
        std::string dir = path.substr(pos, colon == std::string::npos ? std::string::npos : colon - pos);
        if (dir.empty()) dir = ".";  // an empty element is the current directory (execvp)
        std::string file = dir + "/" + name;
        struct stat st {};
        if (::stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(file.c_str(), X_OK) == 0) return file;
        if (colon == std::string::npos) break;
        pos = colon + 1;
    }
    return std::nullopt;
}

std::vector<std::string> cuda_driver_dirs() {
    return {"/usr/lib/x86_64-linux-gnu/nvidia/current", "/usr/lib64", "/usr/local/nvidia/lib64",
            "/usr/local/cuda/compat", "/usr/lib/wsl/lib"};
}

CudaUse cuda_use(const std::vector<LoadedLibrary>& needed) {
    CudaUse use;
    for (const auto& n : needed) {
        if (!use.runtime && n.name.rfind("libcudart.so.", 0) == 0) use.runtime = n;
        if (!use.driver && n.name.rfind("libcuda.so.", 0) == 0) use.driver = n;
    }
    return use;
}

Result<std::size_t> plan_cuda_program(ProbePlan& plan, const std::string& program, const SearchContext& ctx, bool force,
                                      std::vector<std::string>& notes) {
    auto exe = read_elf(program);
    if (!exe) return fail(exe.error());
    auto needed = needed_libraries(program, ctx);
    if (!needed) return fail(needed.error());
    const CudaUse use = cuda_use(*needed);
    std::size_t added = 0;
    std::set<std::string> armed;  // real files (a uprobe attaches to the inode)
    auto arm = [&](const std::string& file, CudaLayer layer, const std::string& how) -> std::optional<ElfInfo> {
        if (!armed.insert(file).second) return std::nullopt;
        auto elf = read_elf(file);
        if (!elf) {
            notes.push_back(fmt::format("{}: not probed: {}", file, elf.error().message));
            return std::nullopt;
        }
        std::size_t n = plan_cuda(plan, *elf, layer);
        added += n;
        notes.push_back(fmt::format("{} {} functions of {} ({})", n,
                                    layer == CudaLayer::driver ? "CUDA driver API" : "CUDA runtime", file, how));
        return std::move(*elf);
    };
    std::optional<ElfInfo> cudart;
    if (use.runtime && use.runtime->file) {
        cudart = arm(use.runtime->file->real_path, CudaLayer::runtime,
                     fmt::format("DT_NEEDED {}, {}", use.runtime->name, use.runtime->file->found_by));
    } else if (use.runtime) {
        notes.push_back(fmt::format("{} (DT_NEEDED of {}) is not found: the runtime is not probed", use.runtime->name,
                                    use.runtime->requested_by));
    } else if (force) {
        for (const auto& c : find_library("libcudart.so.13", *exe, nullptr, ctx))
            if (auto elf =
                    arm(c.real_path, CudaLayer::runtime, "as a dlopen of libcudart.so.13 finds it, " + c.found_by);
                elf && !cudart)
                cudart = std::move(elf);
    }
    if (use.driver && use.driver->file)
        arm(use.driver->file->real_path, CudaLayer::driver,
            fmt::format("DT_NEEDED {}, {}", use.driver->name, use.driver->file->found_by));
    if (use.runtime || force) {
        // libcudart opens the driver with dlopen("libcuda.so.1"): searched as the loader searches for libcudart.
        SearchContext driver_ctx = ctx;
        for (auto& d : cuda_driver_dirs())
            driver_ctx.extra_dirs.push_back(std::move(d));
        const bool from_cudart = cudart.has_value();
        auto cands =
            find_library("libcuda.so.1", from_cudart ? *cudart : *exe, from_cudart ? &*exe : nullptr, driver_ctx);
        for (const auto& c : cands)
            arm(c.real_path, CudaLayer::driver, "a candidate for dlopen(\"libcuda.so.1\"), " + c.found_by);
        if (cands.empty())
            notes.push_back(
                "no libcuda.so.1 found where the loader and the driver's folders have it: the driver API is not "
                "probed (the program's dlopen of it will fail as well)");
    }
    return added;
}

Result<void> plan_uprobe_spec(ProbePlan& plan, const UprobeSpec& spec, const std::string& program,
                              const SearchContext& ctx, std::vector<std::string>& notes) {
    auto cands = resolve_uprobe_library(spec.library, program, ctx);
    if (!cands) return fail(cands.error());
    std::set<std::string> armed;
    bool first = true;
    for (const auto& c : *cands) {
        if (!armed.insert(c.real_path).second) continue;
        auto elf = read_elf(c.real_path);
        Result<void> r = elf ? plan_function(plan, *elf, spec.symbol, spec.entry_args, spec.return_args)
                             : Result<void>(fail(elf.error()));
        if (!r && first)
            return fail(Error{r.error().code, fmt::format("--uprobe '{}': {}", spec.text, r.error().message)});
        if (!r)
            notes.push_back(fmt::format("--uprobe '{}': {} left out: {}", spec.text, c.real_path, r.error().message));
        first = false;
    }
    return {};
}

std::string_view api_name(const PlannedFunction& f) {
    if (!f.cuda) return "user";
    return f.cuda->layer == CudaLayer::driver ? "cuda_driver" : "cuda_runtime";
}

}  // namespace nvtrace::tracer
