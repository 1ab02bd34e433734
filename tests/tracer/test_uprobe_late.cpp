// The pure parts of arming uprobes on libraries mapped after the start (tracer/uprobe_late.hpp): reading
// /proc/PID/maps and matching file names. The maps lines follow fs/proc/task_mmu.c show_map_vma ("%08lx-%08lx
// %c%c%c%c %08llx %02x:%02x %lu " padded to a column, then the path from d_path, " (deleted)" appended for an
// unlinked file); the real file of this process is read too, and checked against what the process itself has
// loaded (dladdr of a libc function).
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "uprobe_late.hpp"

using namespace nvtrace::tracer;
using nvtrace::CudaLayer;

namespace {

const char* kMaps =
    "5581d6a00000-5581d6a02000 r--p 00000000 fd:01 1835123                    /usr/bin/cat\n"
    "5581d6a02000-5581d6a07000 r-xp 00002000 fd:01 1835123                    /usr/bin/cat\n"
    "5581d7c1e000-5581d7c3f000 rw-p 00000000 00:00 0                          [heap]\n"
    "7f3a10000000-7f3a10021000 rw-p 00000000 00:00 0 \n"
    "7f3a1b000000-7f3a1b028000 r--p 00000000 fd:01 1840001                    /usr/lib/x86_64-linux-gnu/libc.so.6\n"
    "7f3a1b028000-7f3a1b1bd000 r-xp 00028000 fd:01 1840001                    /usr/lib/x86_64-linux-gnu/libc.so.6\n"
    "7f3a1c000000-7f3a1c0b0000 r-xp 00010000 00:2a 77                         /tmp/my dir/libcudart.so.13\n"
    "7f3a1d000000-7f3a1d010000 r-xp 00010000 fd:01 99                         /tmp/x/libcuda.so.1 (deleted)\n"
    "7ffd5e490000-7ffd5e4b2000 rw-p 00000000 00:00 0                          [stack]\n"
    "7ffd5e5c5000-7ffd5e5c7000 r-xp 00000000 00:00 0                          [vdso]\n"
    "not a maps line\n"
    "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]";

}  // namespace

TEST(UprobeLate, ExecutableMappingsAreTheFilesMappedWithXOnceEach) {
    auto m = executable_mappings(kMaps);
    ASSERT_EQ(m.size(), 4u);
    EXPECT_EQ(m[0].path, "/usr/bin/cat");
    EXPECT_EQ(m[0].inode, 1835123u);
    EXPECT_EQ(m[0].dev, "fd:01");
    EXPECT_EQ(m[1].path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
    EXPECT_EQ(m[2].path, "/tmp/my dir/libcudart.so.13");  // a path with a space: the rest of the line
    EXPECT_EQ(m[2].dev, "00:2a");
    EXPECT_EQ(m[3].path, "/tmp/x/libcuda.so.1 (deleted)");
}

TEST(UprobeLate, ExecutableMappingsOfThisProcessHoldTheLibcItLoaded) {
    std::ifstream in("/proc/self/maps");
    std::stringstream text;
    text << in.rdbuf();
    Dl_info info{};
    ASSERT_NE(dladdr(reinterpret_cast<void*>(&::getpid), &info), 0);
    const std::string libc = std::filesystem::canonical(info.dli_fname).string();
    struct stat st {};
    ASSERT_EQ(::stat(libc.c_str(), &st), 0);
    bool found = false;
    for (const auto& m : executable_mappings(text.str()))
        if (std::filesystem::canonical(m.path) == libc) {
            found = true;
            EXPECT_EQ(m.inode, static_cast<std::uint64_t>(st.st_ino));
        }
    EXPECT_TRUE(found) << libc << " not in\n" << text.str();
}

TEST(UprobeLate, MatchNamesTheCudaLibrariesAndTheSpecsBySonameOrStem) {
    LateWatch w;
    w.cuda = true;
    auto spec = [](const char* text) {
        auto s = parse_uprobe_spec(text);
        EXPECT_TRUE(s) << text;
        return *s;
    };
    w.specs = {spec("libc:getpid"), spec("libfoo.so:bar"), spec("libz.so.1:inflate"), spec("/opt/x/libq.so:q")};
    EXPECT_EQ(late_match("libcudart.so.13", w).cuda, CudaLayer::runtime);
    EXPECT_EQ(late_match("libcudart.so.12.4.127", w).cuda, CudaLayer::runtime);
    EXPECT_EQ(late_match("libcuda.so.1", w).cuda, CudaLayer::driver);
    EXPECT_EQ(late_match("libcuda.so.580.95.05", w).cuda, CudaLayer::driver);
    EXPECT_FALSE(late_match("libcudnn.so.9", w).any());
    EXPECT_FALSE(late_match("libcublas.so.13", w).any());
    ASSERT_EQ(late_match("libc.so.6", w).specs.size(), 1u);
    EXPECT_EQ(late_match("libc.so.6", w).specs[0]->symbol, "getpid");
    EXPECT_FALSE(late_match("libcap.so.2", w).any());
    EXPECT_EQ(late_match("libfoo.so.3", w).specs.size(), 1u);
    EXPECT_EQ(late_match("libfoo.so", w).specs.size(), 1u);
    EXPECT_EQ(late_match("libz.so.1", w).specs.size(), 1u);
    EXPECT_FALSE(late_match("libz.so.2", w).any());
    EXPECT_FALSE(late_match("libq.so", w).any());  // a path spec: its file is armed at start
    w.cuda = false;                                // --no-api
    EXPECT_FALSE(late_match("libcudart.so.13", w).any());
}

// A mapping seen twice is planned once; a file the start's plan probed is not armed again; a name that matches
// nothing is skipped. The file is this process's own libc (probed with --uprobe libc:getpid).
TEST(UprobeLate, ScanPlansEachNewMatchingFileOnce) {
    Dl_info info{};
    ASSERT_NE(dladdr(reinterpret_cast<void*>(&::getpid), &info), 0);
    const std::string libc = std::filesystem::canonical(info.dli_fname).string();
    struct stat st {};
    ASSERT_EQ(::stat(libc.c_str(), &st), 0);
    const std::string line = "7f3a1b028000-7f3a1b1bd000 r-xp 00028000 fd:01 " + std::to_string(st.st_ino) +
                             "                    " + libc + "\n";
    LateWatch w;
    w.specs = {*parse_uprobe_spec("libc:getpid")};
    {
        LateUprobes late(w, ProbePlan{});
        auto libs = late.scan_text(42, line);
        ASSERT_EQ(libs.size(), 1u);
        EXPECT_EQ(libs[0].path, libc);
        EXPECT_EQ(libs[0].pid, 42);
        ASSERT_EQ(libs[0].functions.size(), 1u);
        EXPECT_EQ(libs[0].functions[0].function, "getpid");
        EXPECT_EQ(libs[0].functions[0].entry.event, "getpid");
        EXPECT_EQ(libs[0].functions[0].exit.event, "getpid__return");
        EXPECT_TRUE(late.scan_text(43, line).empty());  // seen already
    }
    {
        // The start's plan has getpid on the same file: not armed again.
        ProbePlan start;
        auto elf = read_elf(libc);
        ASSERT_TRUE(elf);
        ASSERT_TRUE(plan_function(start, *elf, "getpid", {}, {}));
        LateUprobes late(w, start);
        EXPECT_TRUE(late.scan_text(42, line).empty());
    }
    {
        // Another file by the same name (the start's event names stay taken: the late one is getpid_2).
        ProbePlan start;
        start.event_names = {"getpid", "getpid__return"};
        LateUprobes late(w, start);
        auto libs = late.scan_text(42, line);
        ASSERT_EQ(libs.size(), 1u);
        ASSERT_EQ(libs[0].functions.size(), 1u);
        EXPECT_EQ(libs[0].functions[0].entry.event, "getpid_2");
    }
    {
        // The inode in the maps line is not the file's here (another mount namespace): not probed, said so.
        LateUprobes late(w, ProbePlan{});
        auto libs = late.scan_text(42, "7f3a1b028000-7f3a1b1bd000 r-xp 00028000 fd:01 1 " + libc + "\n");
        ASSERT_EQ(libs.size(), 1u);
        EXPECT_TRUE(libs[0].functions.empty());
        ASSERT_EQ(libs[0].notes.size(), 1u);
        EXPECT_NE(libs[0].notes[0].find("not probed"), std::string::npos) << libs[0].notes[0];
    }
}
