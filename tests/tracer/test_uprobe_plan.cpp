// Unit tests of the pure parts of the uprobe layer (LABELS unit; no root, no tracefs): ELF reading
// (tracer/elf_file.cpp), the loader's search and ld.so.cache (tracer/library_search.cpp), --uprobe and fetch-arg
// parsing and the probe plan (tracer/uprobe_plan.cpp), and the CUDA table (analyze/knowledge/cuda.cpp).
// Oracles are the system's own tools and files, never numbers written here: readelf/nm for symbol offsets,
// ldconfig -p for ld.so.cache, ldd for the loader's choices, the CUDA toolkit's headers for the CUDA table.
// Where the CUDA toolkit is missing the tests that need it say so; with CI=true that is a failure.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "elf_file.hpp"
#include "library_search.hpp"
#include "nvtrace/knowledge.hpp"
#include "uprobe_plan.hpp"
#include "uprobes.hpp"

namespace fs = std::filesystem;
using namespace nvtrace;
using namespace nvtrace::tracer;

namespace {

const std::string kCuda = "/usr/local/cuda";
const std::string kCudart = kCuda + "/lib64/libcudart.so.13";
const std::string kCudaStub = kCuda + "/lib64/stubs/libcuda.so";
const std::string kLibc = "/lib/x86_64-linux-gnu/libc.so.6";

std::string run(const std::string& cmd) {
    std::string out;
    FILE* p = ::popen(cmd.c_str(), "r");
    if (!p) return out;
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0)
        out.append(buf, n);
    ::pclose(p);
    return out;
}

bool on_ci() {
    const char* ci = std::getenv("CI");
    return ci && std::string(ci) == "true";
}

// Skips (or, with CI=true, fails) when `path` is missing.
#define REQUIRE_FILE(path)                                                                        \
    do {                                                                                          \
        if (!fs::exists(path)) {                                                                  \
            if (on_ci()) FAIL() << (path) << " is missing (the CUDA toolkit at " << kCuda << ")"; \
            GTEST_SKIP() << (path) << " is missing (needs the CUDA toolkit at " << kCuda << ")";  \
        }                                                                                         \
    } while (0)

struct ReadelfSymbol {
    std::uint64_t value = 0;
    std::string type;  // FUNC, IFUNC
};

// readelf -W --dyn-syms: "name@@VERSION" / "name@VERSION" / "name" -> value, type (defined symbols only).
std::map<std::string, ReadelfSymbol> readelf_symbols(const std::string& path) {
    std::map<std::string, ReadelfSymbol> out;
    std::istringstream in(run("readelf -W --dyn-syms '" + path + "'"));
    std::string line;
    std::regex row(R"(^\s*\d+:\s+([0-9a-f]+)\s+\d+\s+(\w+)\s+\w+\s+\w+\s+(\w+)\s+(\S+))");
    while (std::getline(in, line)) {
        std::smatch m;
        if (!std::regex_search(line, m, row) || m[3] == "UND") continue;
        out[m[4]] = {std::stoull(m[1], nullptr, 16), m[2]};
    }
    return out;
}

// readelf -lW LOAD rows -> the file offset of `vaddr` (the test's own mapping, from readelf's numbers).
std::optional<std::uint64_t> readelf_file_offset(const std::string& path, std::uint64_t vaddr) {
    std::istringstream in(run("readelf -lW '" + path + "'"));
    std::string line;
    std::regex load(R"(^\s*LOAD\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+0x[0-9a-f]+\s+0x([0-9a-f]+))");
    while (std::getline(in, line)) {
        std::smatch m;
        if (!std::regex_search(line, m, load)) continue;
        std::uint64_t off = std::stoull(m[1], nullptr, 16), va = std::stoull(m[2], nullptr, 16),
                      filesz = std::stoull(m[3], nullptr, 16);
        if (vaddr >= va && vaddr < va + filesz) return off + (vaddr - va);
    }
    return std::nullopt;
}

// Checks that read_elf finds `symbol` (readelf's spelling, with @@VERSION where it has one) at readelf's offset.
void expect_offset_as_readelf(const std::string& path, const std::string& readelf_name) {
    auto syms = readelf_symbols(path);
    ASSERT_TRUE(syms.count(readelf_name)) << readelf_name << " not in readelf --dyn-syms of " << path;
    auto elf = read_elf(path);
    ASSERT_TRUE(elf) << elf.error().message;
    std::string base = readelf_name.substr(0, readelf_name.find('@'));
    const ElfSymbol* s = find_function(*elf, base);
    ASSERT_NE(s, nullptr) << base << " in " << path;
    EXPECT_EQ(s->value, syms[readelf_name].value) << base;
    auto want = readelf_file_offset(path, syms[readelf_name].value);
    ASSERT_TRUE(want) << base << ": readelf shows no LOAD segment holding it";
    ASSERT_TRUE(s->file_offset);
    EXPECT_EQ(*s->file_offset, *want) << base;
    if (auto at = readelf_name.find("@@"); at != std::string::npos) {
        EXPECT_EQ(s->version, readelf_name.substr(at + 2));
    }
}

}  // namespace

// ---- ELF ----------------------------------------------------------------------------------------------------

TEST(ElfFile, symbol_offsets_match_readelf_in_libc) {
    REQUIRE_FILE(kLibc);
    expect_offset_as_readelf(kLibc, "getpid@@GLIBC_2.2.5");
    expect_offset_as_readelf(kLibc, "write@@GLIBC_2.2.5");
}

TEST(ElfFile, symbol_offsets_match_readelf_in_cuda_stub_and_cudart) {
    REQUIRE_FILE(kCudaStub);
    REQUIRE_FILE(kCudart);
    expect_offset_as_readelf(kCudaStub, "cuInit");
    expect_offset_as_readelf(kCudaStub, "cuMemAlloc_v2");
    expect_offset_as_readelf(kCudart, "cudaMalloc@@libcudart.so.13");
}

TEST(ElfFile, every_defined_function_is_read_as_nm_lists_it) {
    REQUIRE_FILE(kCudaStub);
    // nm -D --defined-only: "value T name" for every defined text symbol.
    std::istringstream in(run("nm -D --defined-only '" + kCudaStub + "'"));
    std::set<std::string> nm_funcs;
    std::string value, type, name;
    while (in >> value >> type >> name)
        if (type == "T" || type == "W" || type == "i") nm_funcs.insert(name.substr(0, name.find('@')));
    auto elf = read_elf(kCudaStub);
    ASSERT_TRUE(elf) << elf.error().message;
    std::set<std::string> ours;
    for (const auto& f : elf->functions)
        ours.insert(f.name);
    EXPECT_EQ(ours, nm_funcs);
    EXPECT_EQ(elf->soname, "libcuda.so.1");
}

TEST(ElfFile, versions_default_and_hidden_and_ifunc_as_readelf_shows) {
    REQUIRE_FILE(kLibc);
    auto syms = readelf_symbols(kLibc);
    auto elf = read_elf(kLibc);
    ASSERT_TRUE(elf);
    // memcpy: an IFUNC at the default version GLIBC_2.14 and a plain function at the hidden GLIBC_2.2.5 (glibc's
    // compatibility copy for binaries linked before 2.14), as readelf shows them.
    ASSERT_TRUE(syms.count("memcpy@@GLIBC_2.14"));
    ASSERT_TRUE(syms.count("memcpy@GLIBC_2.2.5"));
    const ElfSymbol* def = find_function(*elf, "memcpy");
    ASSERT_NE(def, nullptr);
    EXPECT_EQ(def->ifunc, syms["memcpy@@GLIBC_2.14"].type == "IFUNC");
    EXPECT_EQ(def->value, syms["memcpy@@GLIBC_2.14"].value);
    const ElfSymbol* old = find_function(*elf, "memcpy@GLIBC_2.2.5");
    ASSERT_NE(old, nullptr);
    EXPECT_FALSE(old->default_version);
    EXPECT_EQ(old->value, syms["memcpy@GLIBC_2.2.5"].value);
    EXPECT_EQ(find_function(*elf, "memcpy@@GLIBC_2.2.5"), nullptr);  // that version is not the default one
}

TEST(ElfFile, file_offset_of_maps_through_the_segment_that_holds_the_address) {
    // A segment whose file offset differs from its address (the usual shape of a data segment, and of text in
    // objects linked with -z separate-code variants), and an address past p_filesz (.bss).
    std::vector<ElfSegment> segs{{0x0, 0x0, 0x1000, false}, {0x1000, 0x201000, 0x800, true}};
    EXPECT_EQ(file_offset_of(segs, 0x10), 0x10u);
    EXPECT_EQ(file_offset_of(segs, 0x201010), 0x1010u);
    EXPECT_EQ(file_offset_of(segs, 0x201800), std::nullopt);
    EXPECT_EQ(file_offset_of(segs, 0x5000), std::nullopt);
}

TEST(ElfFile, errors_name_the_file_and_what_was_expected) {
    auto missing = read_elf("/nonexistent/libx.so");
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.error().message.find("/nonexistent/libx.so"), std::string::npos);
    char tmpl[] = "/tmp/nvtrace-notelf-XXXXXX";
    int fd = ::mkstemp(tmpl);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, "hello", 5), 5);
    ::close(fd);
    auto notelf = read_elf(tmpl);
    ::unlink(tmpl);
    ASSERT_FALSE(notelf);
    EXPECT_NE(notelf.error().message.find("not an ELF file"), std::string::npos) << notelf.error().message;
}

// ---- ld.so.cache and the loader's search ----------------------------------------------------------------------

TEST(LdCache, parse_reads_every_entry_ldconfig_lists) {
    auto cache = read_ld_cache("/etc/ld.so.cache");
    ASSERT_TRUE(cache) << cache.error().message;
    // ldconfig -p: "N libs found in cache ..." then "\tNAME (FLAGS) => PATH".
    std::istringstream in(run("ldconfig -p"));
    std::string line;
    std::getline(in, line);
    std::size_t listed = std::stoul(line);
    std::multiset<std::pair<std::string, std::string>> want, got;
    std::regex row(R"(^\s+(\S+) \(([^)]*)\) => (\S+))");
    while (std::getline(in, line)) {
        std::smatch m;
        if (std::regex_search(line, m, row)) want.insert({m[1], m[3]});
    }
    for (const auto& e : *cache)
        got.insert({e.name, e.path});
    EXPECT_EQ(cache->size(), listed);
    EXPECT_EQ(got, want);
}

TEST(LdCache, bad_input_is_an_error_naming_the_source) {
    auto r = parse_ld_cache("not a cache at all, long enough for a header ........................", "x.cache");
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("x.cache"), std::string::npos);
    EXPECT_NE(r.error().message.find("expected 'glibc-ld.so.cache1.1'"), std::string::npos) << r.error().message;
    // A real cache cut short: the entries no longer fit.
    std::ifstream in("/etc/ld.so.cache", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_GT(bytes.size(), 100u);
    auto cut = parse_ld_cache(std::string_view(bytes).substr(0, 100), "cut");
    ASSERT_FALSE(cut);
    EXPECT_NE(cut.error().message.find("do not fit"), std::string::npos) << cut.error().message;
}

namespace {

// ldd PROGRAM: "name => path" for each library the loader maps.
std::map<std::string, std::string> ldd(const std::string& program) {
    std::map<std::string, std::string> out;
    std::istringstream in(run("ldd '" + program + "'"));
    std::string line;
    std::regex row(R"(^\s+(\S+) => (/\S+))");
    while (std::getline(in, line)) {
        std::smatch m;
        if (std::regex_search(line, m, row)) out[m[1]] = m[2];
    }
    return out;
}

void expect_needed_as_ldd(const std::string& program, const SearchContext& ctx) {
    auto want = ldd(program);
    ASSERT_FALSE(want.empty()) << "ldd lists nothing for " << program;
    auto got = needed_libraries(program, ctx);
    ASSERT_TRUE(got) << got.error().message;
    std::map<std::string, std::string> ours;
    for (const auto& l : *got)
        if (l.file) ours[l.name] = l.file->path;
    for (const auto& [name, path] : want) {
        ASSERT_TRUE(ours.count(name)) << name << " (ldd: " << path << ") not found for " << program;
        EXPECT_EQ(fs::canonical(ours[name]), fs::canonical(path)) << name;
    }
}

}  // namespace

TEST(LibrarySearch, program_libraries_as_ldd_finds_them) {
    auto cache = read_ld_cache();
    ASSERT_TRUE(cache) << cache.error().message;
    SearchContext ctx;
    ctx.cache = *cache;
    expect_needed_as_ldd(fs::canonical("/proc/self/exe").string(), ctx);
    // A program with DT_RUNPATH (systemd's tools find libsystemd-shared through it).
    if (fs::exists("/usr/bin/busctl")) expect_needed_as_ldd("/usr/bin/busctl", ctx);
}

TEST(LibrarySearch, ld_library_path_comes_before_the_cache_as_ldd_says) {
    auto cache = read_ld_cache();
    ASSERT_TRUE(cache);
    // A folder holding libz.so.1 (a link to the system's): with LD_LIBRARY_PATH on it, ldd maps it from there.
    fs::path dir = fs::temp_directory_path() / fmt::format("nvtrace-ldpath-{}", ::getpid());
    fs::create_directories(dir);
    SearchContext plain;
    plain.cache = *cache;
    auto sys = find_library("libz.so.1", *read_elf("/proc/self/exe"), nullptr, plain);
    ASSERT_FALSE(sys.empty());
    fs::create_symlink(sys.front().real_path, dir / "libz.so.1");
    std::string ldd_path;
    {
        std::istringstream in(run("LD_LIBRARY_PATH='" + dir.string() + "' ldd /usr/lib/x86_64-linux-gnu/libelf.so.1"));
        std::string line;
        std::regex row(R"(^\s+libz\.so\.1 => (/\S+))");
        while (std::getline(in, line)) {
            std::smatch m;
            if (std::regex_search(line, m, row)) ldd_path = m[1];
        }
    }
    auto elf = read_elf("/usr/lib/x86_64-linux-gnu/libelf.so.1");
    ASSERT_TRUE(elf);
    SearchContext with_path = plain;
    with_path.ld_library_path = dir.string();
    auto c = find_library("libz.so.1", *elf, nullptr, with_path);
    fs::remove_all(dir);
    ASSERT_FALSE(c.empty());
    EXPECT_EQ(c.front().path, ldd_path);
    EXPECT_EQ(c.front().found_by, "LD_LIBRARY_PATH");
    // The same file through the cache is not listed twice (uprobes attach to the file, not the name).
    for (std::size_t i = 1; i < c.size(); ++i)
        EXPECT_NE(c[i].real_path, c.front().real_path);
}

TEST(LibrarySearch, driver_stub_found_through_ld_library_path_then_extra_folders) {
    REQUIRE_FILE(kCudaStub);
    auto exe = read_elf("/proc/self/exe");
    ASSERT_TRUE(exe);
    // libcuda.so.1 is what libcudart dlopens; the stub folder holds it only as libcuda.so.
    SearchContext ctx;
    ctx.ld_library_path = kCuda + "/lib64/stubs";
    auto c = find_library("libcuda.so", *exe, nullptr, ctx);
    ASSERT_FALSE(c.empty());
    EXPECT_EQ(c.front().path, kCudaStub);
    EXPECT_EQ(c.front().found_by, "LD_LIBRARY_PATH");
    SearchContext extra;
    extra.extra_dirs = {kCuda + "/lib64/stubs"};
    auto e = find_library("libcuda.so", *exe, nullptr, extra);
    ASSERT_FALSE(e.empty());
    EXPECT_EQ(e.back().found_by, "driver folder (not searched by ld.so)");
}

TEST(LibrarySearch, expand_dst_tokens) {
    EXPECT_EQ(expand_dst("$ORIGIN/../lib", "/opt/app/bin/app"), "/opt/app/bin/../lib");
    EXPECT_EQ(expand_dst("${ORIGIN}/x", "/a/b.so"), "/a/x");
    EXPECT_EQ(expand_dst("/usr/$LIB/y", "/a/b"), "/usr/lib/x86_64-linux-gnu/y");
    EXPECT_EQ(expand_dst("/p/$PLATFORM", "/a/b"), "/p/x86_64");
    EXPECT_EQ(expand_dst("/p/$ORIGINAL", "/a/b"), "/p/$ORIGINAL");  // not a token: the name goes on
}

// ---- --uprobe and fetch-args --------------------------------------------------------------------------------

TEST(UprobeSpec, forms_of_the_generic_option) {
    auto a = parse_uprobe_spec("libc.so.6:getpid");
    ASSERT_TRUE(a) << a.error().message;
    EXPECT_EQ(a->library, "libc.so.6");
    EXPECT_EQ(a->symbol, "getpid");
    EXPECT_TRUE(a->entry_args.empty());
    // The '%' before FETCHARGS is the first register's own.
    auto b = parse_uprobe_spec("libc:write%di:s32,%dx:u64");
    ASSERT_TRUE(b) << b.error().message;
    EXPECT_EQ(b->entry_args, (std::vector<std::string>{"%di:s32", "%dx:u64"}));
    // A named first fetch-arg after the '%'.
    auto c = parse_uprobe_spec("/usr/lib/x86_64-linux-gnu/libdrm.so.2:drmIoctl%fd=%di:s32,req=%si:x64,ret=$retval:s32");
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_EQ(c->library, "/usr/lib/x86_64-linux-gnu/libdrm.so.2");
    EXPECT_EQ(c->entry_args, (std::vector<std::string>{"fd=%di:s32", "req=%si:x64"}));
    EXPECT_EQ(c->return_args, (std::vector<std::string>{"ret=$retval:s32"}));
    // A versioned symbol, a dereference, a stack slot, a string.
    auto d = parse_uprobe_spec("libc.so.6:memcpy@GLIBC_2.2.5%%dx:u64,first=+0(%si):x8,s=$stack1:u32,p=+0(%di):string");
    ASSERT_TRUE(d) << d.error().message;
    EXPECT_EQ(d->symbol, "memcpy@GLIBC_2.2.5");
    EXPECT_EQ(d->entry_args.size(), 4u);
}

TEST(UprobeSpec, errors_say_what_was_expected) {
    struct Case {
        const char* text;
        const char* expected;
    };
    for (const Case& c :
         {Case{"getpid", "LIB:SYMBOL[%FETCHARGS]"}, Case{":getpid", "a library"}, Case{"libc:", "a symbol after ':'"},
          Case{"libc:get-pid", "a symbol name"}, Case{"libc:getpid%", "fetch-args after '%'"},
          Case{"libc:write%di:u65", "a type (u8..u64"}, Case{"libc:write%zz", "a fetch-arg (%REG"},
          Case{"libc:write%%xx", "an x86-64 register"}, Case{"libc:write%$stackx", "$stack, $stackN"},
          Case{"libc:write%+8%di", "+|-OFFS(FETCHARG)"}, Case{"libc:write%1x=%di", "a C identifier before '='"},
          Case{"libc:getpid@", "a version after '@'"}}) {
        auto r = parse_uprobe_spec(c.text);
        ASSERT_FALSE(r) << c.text;
        EXPECT_NE(r.error().message.find(c.expected), std::string::npos) << c.text << ": " << r.error().message;
        EXPECT_NE(r.error().message.find(std::string("'") + c.text + "'"), std::string::npos) << r.error().message;
        EXPECT_EQ(r.error().code, ExitCode::usage);
    }
}

TEST(UprobeSpec, library_names_resolve_as_the_program_loads_them) {
    auto cache = read_ld_cache();
    ASSERT_TRUE(cache);
    SearchContext ctx;
    ctx.cache = *cache;
    const std::string self = fs::canonical("/proc/self/exe").string();
    auto libc_ldd = ldd(self).at("libc.so.6");
    for (const char* name : {"libc", "libc.so", "libc.so.6"}) {
        auto c = resolve_uprobe_library(name, self, ctx);
        ASSERT_TRUE(c) << name << ": " << c.error().message;
        ASSERT_FALSE(c->empty());
        EXPECT_EQ(fs::canonical(c->front().path), fs::canonical(libc_ldd)) << name;
    }
    // "libc" must not match libcap or libcrypt: only "libc.so.*".
    auto none = resolve_uprobe_library("libnvtrace_no_such_library", self, ctx);
    ASSERT_FALSE(none);
    EXPECT_NE(none.error().message.find("libnvtrace_no_such_library"), std::string::npos);
    auto path = resolve_uprobe_library(kLibc, self, ctx);
    ASSERT_TRUE(path);
    EXPECT_EQ(path->front().found_by, "path given");
}

// ---- the probe plan -----------------------------------------------------------------------------------------

TEST(UprobePlan, generic_probe_on_libc_getpid_at_readelf_offset) {
    REQUIRE_FILE(kLibc);
    auto elf = read_elf(kLibc);
    ASSERT_TRUE(elf);
    ProbePlan plan;
    ASSERT_TRUE(plan_function(plan, *elf, "getpid", {}, {}));
    ASSERT_EQ(plan.functions.size(), 1u);
    const auto& f = plan.functions.front();
    auto syms = readelf_symbols(kLibc);
    EXPECT_EQ(f.entry.offset, *readelf_file_offset(kLibc, syms["getpid@@GLIBC_2.2.5"].value));
    EXPECT_EQ(f.entry.offset, f.exit.offset);
    EXPECT_FALSE(f.entry.is_return);
    EXPECT_TRUE(f.exit.is_return);
    EXPECT_EQ(f.entry.event, "getpid");
    EXPECT_EQ(f.exit.event, "getpid__return");
    EXPECT_EQ(f.exit.fetchargs, "ret=$retval:s64");
    EXPECT_EQ(uprobe_definition("nvtrace_1", f.entry),
              fmt::format("p:nvtrace_1/getpid {}:0x{:x}", kLibc, f.entry.offset));
    // The same symbol again (another candidate file) gets its own event name.
    ASSERT_TRUE(plan_function(plan, *elf, "getpid", {}, {}));
    EXPECT_EQ(plan.functions.back().entry.event, "getpid_2");
}

TEST(UprobePlan, ifunc_and_missing_symbols_are_refused_with_the_reason) {
    REQUIRE_FILE(kLibc);
    auto elf = read_elf(kLibc);
    ASSERT_TRUE(elf);
    ProbePlan plan;
    auto ifunc = plan_function(plan, *elf, "memcpy", {}, {});
    ASSERT_FALSE(ifunc);
    EXPECT_NE(ifunc.error().message.find("IFUNC"), std::string::npos);
    auto none = plan_function(plan, *elf, "no_such_function_here", {}, {});
    ASSERT_FALSE(none);
    EXPECT_NE(none.error().message.find("no function 'no_such_function_here'"), std::string::npos);
    EXPECT_TRUE(plan.functions.empty());
}

TEST(UprobePlan, event_names_fit_the_kernel_limit) {
    ProbePlan plan;
    std::string longname(200, 'a');
    std::string n1 = unique_event_name(plan, longname), n2 = unique_event_name(plan, longname);
    EXPECT_NE(n1, n2);
    for (const auto& n : {n1, n2}) {
        EXPECT_TRUE(is_probe_identifier(n + "__return")) << n;
    }
    EXPECT_EQ(unique_event_name(plan, "foo.cold"), "foo_cold");
    EXPECT_EQ(unique_event_name(plan, "9lives"), "_9lives");
}

TEST(UprobeGroup, names_and_owners) {
    EXPECT_EQ(uprobe_group(123), "nvtrace_123");
    EXPECT_EQ(uprobe_group(123, "t1"), "nvtrace_123_t1");
    EXPECT_EQ(uprobe_group_owner("nvtrace_123"), 123);
    EXPECT_EQ(uprobe_group_owner("nvtrace_123_t1"), 123);
    // Other tools' groups, and names that only look like ours, are not nvtrace's.
    for (const char* other : {"uprobes", "probe_libc", "nvtrace_", "nvtrace_abc", "nvtrace_12x", "nvtrace_0",
                              "nvtrace_123_", "nvtrace-123", "xnvtrace_123"})
        EXPECT_EQ(uprobe_group_owner(other), std::nullopt) << other;
}

// ---- the CUDA table against the toolkit's headers and libraries ------------------------------------------------

namespace {

// "CUresult CUDAAPI name(params);" of the preprocessed header -> name -> parameter list (first declaration).
std::map<std::string, std::vector<std::pair<std::string, std::string>>> prototypes(const std::string& text,
                                                                                   const std::string& ret) {
    std::map<std::string, std::vector<std::pair<std::string, std::string>>> out;
    std::regex proto("\\b" + ret + R"(\s+(\w+)\s*\(([^;{]*?)\)\s*;)");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), proto); it != std::sregex_iterator(); ++it) {
        std::string name = (*it)[1], params = (*it)[2];
        if (out.count(name)) continue;
        std::vector<std::pair<std::string, std::string>> list;
        std::stringstream ss(params);
        std::string p;
        while (std::getline(ss, p, ',')) {
            std::smatch m;
            std::string flat = std::regex_replace(p, std::regex(R"(\s+)"), " ");
            if (std::regex_search(flat, m, std::regex(R"(^\s*(.*?)\s*\b(\w+)\s*$)")) && m[2] != "void")
                list.push_back({m[1], m[2]});
        }
        out[name] = list;
    }
    return out;
}

int enum_value_of(const std::string& header_text, const std::string& start, std::map<std::string, int>& out) {
    auto i = header_text.find(start);
    if (i == std::string::npos) return -1;
    auto body = header_text.substr(i, header_text.find('}', i) - i);
    std::regex entry(R"((?:^|\n)\s*,?\s*(\w+)\s*=\s*(\d+))");
    for (auto it = std::sregex_iterator(body.begin(), body.end(), entry); it != std::sregex_iterator(); ++it)
        out[(*it)[1]] = std::stoi((*it)[2]);
    return static_cast<int>(out.size());
}

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

TEST(CudaTable, results_are_the_headers_enums) {
    REQUIRE_FILE(kCuda + "/include/cuda.h");
    std::map<std::string, int> cu, rt;
    ASSERT_GT(enum_value_of(slurp(kCuda + "/include/cuda.h"), "typedef enum cudaError_enum", cu), 50);
    ASSERT_GT(enum_value_of(slurp(kCuda + "/include/driver_types.h"), "enum __device_builtin__ cudaError", rt), 50);
    std::map<std::string, int> ours_cu, ours_rt;
    for (const auto& r : cu_results())
        ours_cu[r.name] = r.value;
    for (const auto& r : cuda_errors())
        ours_rt[r.name] = r.value;
    EXPECT_EQ(ours_cu, cu);
    EXPECT_EQ(ours_rt, rt);
    EXPECT_EQ(cu_result_name(cu["CUDA_ERROR_STUB_LIBRARY"]), "CUDA_ERROR_STUB_LIBRARY");
    EXPECT_EQ(cuda_error_name(rt["cudaErrorInsufficientDriver"]), "cudaErrorInsufficientDriver");
    EXPECT_EQ(cu_result_name(123456), std::nullopt);
}

TEST(CudaTable, arguments_follow_the_prototypes_and_the_abi) {
    REQUIRE_FILE(kCuda + "/include/cuda.h");
    // The headers after the preprocessor: every exported version of a driver function under its own name.
    const std::string cc = NVTRACE_C_COMPILER;
    std::string drv = run(cc + " -E -P -D__CUDA_API_VERSION_INTERNAL -I" + kCuda + "/include -x c " + kCuda +
                          "/include/cuda.h 2>/dev/null");
    std::string rt =
        run("echo '#include <cuda_runtime_api.h>' | " + cc + " -E -P -I" + kCuda + "/include -x c - 2>/dev/null");
    auto dp = prototypes(drv, "CUresult"), rp = prototypes(rt, "cudaError_t");
    ASSERT_GT(dp.size(), 300u);
    ASSERT_GT(rp.size(), 200u);
    const char* regs[] = {"%di", "%si", "%dx", "%cx", "%r8", "%r9"};
    auto slot_location = [&](std::size_t slot) {
        return slot < 6 ? std::string(regs[slot]) : fmt::format("$stack{}", slot - 5);
    };
    for (const auto& api : cuda_apis()) {
        auto& table = api.layer == CudaLayer::driver ? dp : rp;
        ASSERT_TRUE(table.count(api.symbol)) << api.symbol << " is not declared in the header";
        const auto& params = table[api.symbol];
        auto args = api.arguments();
        std::size_t a = 0, slot = 0;
        for (const auto& [type, name] : params) {
            bool pair = type == "dim3" || type == "CUmemLocation";  // structs by value, two 32-bit fields
            if (type.find("float") != std::string::npos || type.find("double") != std::string::npos)
                FAIL() << api.symbol << ": a floating-point argument is not in an integer register";
            std::vector<std::string> names =
                type == "dim3"            ? std::vector<std::string>{name + "_x", name + "_y", name + "_z"}
                : type == "CUmemLocation" ? std::vector<std::string>{name + "_type", name + "_id"}
                                          : std::vector<std::string>{name};
            for (std::size_t k = 0; k < names.size(); ++k, ++a) {
                ASSERT_LT(a, args.size()) << api.symbol << ": no table argument for " << names[k];
                EXPECT_EQ(args[a].name, names[k]) << api.symbol;
                std::size_t s = slot + (type == "dim3" && k == 2 ? 1 : 0);
                std::string loc = args[a].location;
                std::string want = slot_location(s);
                if (std::string(args[a].type) == "string") want = "+0(" + want + ")";
                EXPECT_EQ(loc, want) << api.symbol << " " << names[k];
            }
            slot += type == "dim3" ? 2 : 1;
            (void)pair;
        }
        EXPECT_EQ(a, args.size()) << api.symbol << ": the table has more arguments than the prototype";
        for (const auto& arg : args)
            EXPECT_EQ(check_fetcharg(fmt::format("{}={}:{}", arg.name, arg.location, arg.type)), "") << api.symbol;
    }
}

TEST(CudaTable, every_entry_is_exported_by_the_real_libraries_and_planned) {
    REQUIRE_FILE(kCudaStub);
    REQUIRE_FILE(kCudart);
    for (auto [path, layer] : {std::pair{kCudaStub, CudaLayer::driver}, std::pair{kCudart, CudaLayer::runtime}}) {
        auto syms = readelf_symbols(path);
        std::set<std::string> exported;
        for (const auto& [n, s] : syms)
            exported.insert(n.substr(0, n.find('@')));
        auto elf = read_elf(path);
        ASSERT_TRUE(elf);
        ProbePlan plan;
        std::size_t n = plan_cuda(plan, *elf, layer);
        EXPECT_TRUE(plan.skipped.empty()) << plan.skipped.front();
        std::size_t want = 0;
        for (const auto& api : cuda_apis()) {
            if (api.layer != layer) continue;
            EXPECT_TRUE(exported.count(api.symbol)) << api.symbol << " not exported by " << path;
            for (const char* suffix : {"", "_ptds", "_ptsz"})
                want += exported.count(std::string(api.symbol) + suffix);
        }
        EXPECT_EQ(n, want) << path;
        EXPECT_EQ(plan.functions.size(), want);
        for (const auto& f : plan.functions) {
            ASSERT_NE(f.cuda, nullptr);
            auto it = syms.find(f.function);
            if (it == syms.end()) it = syms.find(f.function + "@@libcudart.so.13");
            ASSERT_NE(it, syms.end()) << f.function;
            EXPECT_EQ(f.entry.offset, *readelf_file_offset(path, it->second.value)) << f.function;
            EXPECT_EQ(f.exit.fetchargs, "ret=$retval:s32");
        }
    }
}

// ---- The probes of one program (plan_cuda_program, plan_uprobe_spec, find_program) ----

namespace {

// A scratch directory, removed at the end of the test.
struct Scratch {
    fs::path dir;
    Scratch() {
        char tpl[] = "/tmp/nvtrace-uprobe-plan-XXXXXX";
        dir = ::mkdtemp(tpl);
    }
    ~Scratch() {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
};

// `dir`/cuda_prog: a C program that calls cudaMalloc, linked against the toolkit's libcudart.so.13 (DT_NEEDED).
std::string build_cudart_program(const fs::path& dir) {
    const fs::path src = dir / "cuda_prog.c", exe = dir / "cuda_prog";
    std::ofstream(src) << "#include <cuda_runtime_api.h>\nint main(void) { void* p; return (int)cudaMalloc(&p, 1); }\n";
    run(fmt::format("{} -I{}/include {} -o {} {}/lib64/libcudart.so.13 2>&1", NVTRACE_C_COMPILER, kCuda, src.string(),
                    exe.string(), kCuda));
    return exe.string();
}

std::set<std::string> planned_files(const ProbePlan& plan, std::string_view api) {
    std::set<std::string> out;
    for (const auto& f : plan.functions)
        if (api_name(f) == api) out.insert(f.library);
    return out;
}

}  // namespace

TEST(UprobeProgram, find_program_searches_path_as_execvp) {
    EXPECT_EQ(find_program("/bin/true", std::nullopt), "/bin/true");
    auto sh = find_program("sh", std::string("/nonexistent:/bin:/usr/bin"));
    ASSERT_TRUE(sh);
    EXPECT_EQ(*sh, "/bin/sh");
    EXPECT_FALSE(find_program("nvtrace-no-such-program", std::string("/bin:/usr/bin")));
    EXPECT_FALSE(find_program("", std::nullopt));
}

// A program with no CUDA library: nothing is planned, automatic or not asked.
TEST(UprobeProgram, program_without_cuda_gets_no_probes) {
    SearchContext ctx;
    ctx.cache = read_ld_cache().value_or(std::vector<LdCacheEntry>{});
    ProbePlan plan;
    std::vector<std::string> notes;
    auto n = plan_cuda_program(plan, "/bin/true", ctx, false, notes);
    ASSERT_TRUE(n) << n.error().message;
    EXPECT_EQ(*n, 0u);
    EXPECT_TRUE(plan.functions.empty());
    EXPECT_TRUE(notes.empty()) << notes.front();
}

// A program linked against libcudart: the runtime table on that file (what ldd says it loads), and, because libcudart
// dlopens libcuda.so.1, the driver table on every candidate for that name: here the toolkit's stub, as libcuda.so.1
// in a folder of LD_LIBRARY_PATH. Without such a folder, no driver file is found and a note says so.
TEST(UprobeProgram, cudart_program_gets_the_runtime_table_and_the_driver_on_every_dlopen_candidate) {
    REQUIRE_FILE(kCudart);
    REQUIRE_FILE(kCudaStub);
    REQUIRE_FILE(kCuda + "/include/cuda_runtime_api.h");
    Scratch s;
    const std::string prog = build_cudart_program(s.dir);
    ASSERT_TRUE(fs::exists(prog)) << "the C compiler did not build " << prog;
    const std::string ldd = run("ldd " + prog);
    std::smatch m;
    ASSERT_TRUE(std::regex_search(ldd, m, std::regex(R"(libcudart\.so\.13 => (\S+))"))) << ldd;
    const std::string cudart = fs::canonical(m[1].str()).string();

    SearchContext ctx;
    ctx.cache = read_ld_cache().value_or(std::vector<LdCacheEntry>{});
    ProbePlan plan;
    std::vector<std::string> notes;
    auto n = plan_cuda_program(plan, prog, ctx, false, notes);
    ASSERT_TRUE(n) << n.error().message;
    EXPECT_EQ(planned_files(plan, "cuda_runtime"), std::set<std::string>{cudart});
    ElfInfo rt = *read_elf(cudart);
    ProbePlan alone;
    EXPECT_EQ(planned_files(plan, "cuda_runtime").size(), 1u);
    EXPECT_EQ(plan.functions.size(), plan_cuda(alone, rt, CudaLayer::runtime)) << "only the runtime table";
    const bool driver_note = std::any_of(notes.begin(), notes.end(), [](const std::string& l) {
        return l.find("no libcuda.so.1 found") != std::string::npos;
    });
    // This machine has no driver, the tests' premise: its absence is said.
    if (planned_files(plan, "cuda_driver").empty()) {
        EXPECT_TRUE(driver_note) << fmt::format("{}", fmt::join(notes, "\n"));
    }

    // The stub as libcuda.so.1 ahead of everything else.
    fs::create_symlink(kCudaStub, s.dir / "libcuda.so.1");
    ctx.ld_library_path = s.dir.string();
    ProbePlan with_stub;
    notes.clear();
    n = plan_cuda_program(with_stub, prog, ctx, false, notes);
    ASSERT_TRUE(n) << n.error().message;
    const std::set<std::string> drivers = planned_files(with_stub, "cuda_driver");
    EXPECT_TRUE(drivers.count(fs::canonical(kCudaStub).string())) << fmt::format("{}", fmt::join(notes, "\n"));
    ProbePlan stub_alone;
    EXPECT_GE(plan_cuda(stub_alone, *read_elf(kCudaStub), CudaLayer::driver), 50u);
}

// --api cuda on a program that links neither: libcudart.so.13 and libcuda.so.1 as a dlopen from it finds them.
TEST(UprobeProgram, forced_cuda_finds_the_libraries_a_dlopen_would) {
    REQUIRE_FILE(kCudart);
    REQUIRE_FILE(kCudaStub);
    Scratch s;
    fs::create_symlink(kCudaStub, s.dir / "libcuda.so.1");
    SearchContext ctx;
    ctx.ld_library_path = kCuda + "/lib64:" + s.dir.string();
    ProbePlan plan;
    std::vector<std::string> notes;
    auto n = plan_cuda_program(plan, "/bin/true", ctx, true, notes);
    ASSERT_TRUE(n) << n.error().message;
    EXPECT_EQ(planned_files(plan, "cuda_runtime"), std::set<std::string>{fs::canonical(kCudart).string()});
    EXPECT_TRUE(planned_files(plan, "cuda_driver").count(fs::canonical(kCudaStub).string()));
    // Without LD_LIBRARY_PATH, /bin/true finds neither (the toolkit is not in ld.so.cache here): nothing to plan.
    if (run("ldconfig -p").find("libcudart.so.13") == std::string::npos) {
        ProbePlan none;
        notes.clear();
        auto z = plan_cuda_program(none, "/bin/true", SearchContext{}, true, notes);
        ASSERT_TRUE(z);
        EXPECT_EQ(*z, 0u);
    }
}

// --uprobe libc:getpid for a program that loads libc: the function at readelf's offset of the file ldd names.
TEST(UprobeProgram, uprobe_spec_probes_the_loaders_choice) {
    SearchContext ctx;
    ctx.cache = read_ld_cache().value_or(std::vector<LdCacheEntry>{});
    auto spec = parse_uprobe_spec("libc:getpid");
    ASSERT_TRUE(spec);
    ProbePlan plan;
    std::vector<std::string> notes;
    ASSERT_TRUE(plan_uprobe_spec(plan, *spec, "/bin/true", ctx, notes));
    ASSERT_GE(plan.functions.size(), 1u);
    std::smatch m;
    const std::string ldd = run("ldd /bin/true");
    ASSERT_TRUE(std::regex_search(ldd, m, std::regex(R"(libc\.so\.6 => (\S+))"))) << ldd;
    const PlannedFunction& f = plan.functions.front();
    EXPECT_EQ(f.library, fs::canonical(m[1].str()).string());
    EXPECT_EQ(api_name(f), "user");
    EXPECT_EQ(f.entry.offset,
              readelf_file_offset(f.library, readelf_symbols(f.library).at("getpid@@GLIBC_2.2.5").value));
    auto bad = parse_uprobe_spec("libc:nvtrace_no_such_function");
    ASSERT_TRUE(bad);
    auto r = plan_uprobe_spec(plan, *bad, "/bin/true", ctx, notes);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("--uprobe 'libc:nvtrace_no_such_function'"), std::string::npos)
        << r.error().message;
    EXPECT_NE(r.error().message.find("no function 'nvtrace_no_such_function'"), std::string::npos);
}
