// The call-path tree view (analyze/tree/tree.cpp, include/nvtrace/tree.hpp, docs/tree.md).
//
// Inputs: tests/data/tree/fgraph-nv-alloc-pages-seed.txt, function_graph text in the kernel's layout
// (kernel/trace/trace_functions_graph.c: "CPU) DURATION | FUNCTION", two spaces per level, overhead marks '!'
// above 100 us) of the system-memory allocation path of ../shared/reference/nvidia-driver.md section 5(c):
// nv_alloc_pages > nvos_create_alloc, nv_alloc_contig_pages > nv_compute_gfp_mask, __get_free_pages, one
// nv_get_kern_phys_address per page (12 pages), 24 calls in all. fgraph-nv-alloc-pages-unclosed.txt is the same
// trace read before nv_alloc_contig_pages and nv_alloc_pages returned (a `trace` read while the call runs: their
// closing lines are not in it). The shared cases (tests/data/cases), the diff fixtures (tests/data/reports, made
// by make_fixtures.py there) and the capture directory tests/data/capture_dir/fionread20 (an ioctl-only run).
#include <gtest/gtest.h>

#include <limits>
#include <sstream>
#include <string>

#include "../../../analyze/json_values.hpp"
#include "nvtrace/report_io.hpp"
#include "nvtrace/tree.hpp"

using namespace nvtrace;

namespace {

std::string data(const std::string& rel) {
    return std::string(NVTRACE_TEST_DATA) + "/" + rel;
}

Report load(const std::string& rel) {
    auto r = load_report_input(data(rel));
    EXPECT_TRUE(r) << rel << ": " << r.error().message;
    return r ? std::move(*r) : Report{};
}

std::string tree_text(const Report& r, const TreeOptions& o = {}) {
    std::ostringstream out;
    write_tree(build_tree(r, o), r, o, out);
    return out.str();
}

const char* const kSeedTree =
    "    TOTAL us      SELF us       MAX us     CALLS  CALL PATH\n"
    "     380.000       62.490      380.000        1x  nv_alloc_pages [nvidia]\n"
    "     312.640        6.250      312.640        1x  |- nv_alloc_contig_pages [nvidia]\n"
    "     304.230        0.328      304.230        1x  |  |- __get_free_pages\n"
    "     303.902        0.358      303.902        1x  |  |  `- alloc_pages\n"
    "     303.544        0.524      303.544        1x  |  |     `- __alloc_pages\n"
    "     303.020        0.902      303.020        1x  |  |        `- get_page_from_freelist\n"
    "     302.118        0.658      302.118        1x  |  |           `- prep_new_page\n"
    "     301.460      301.460      301.460        1x  |  |              `- clear_page_erms\n"
    "       1.950        1.950        0.180       12x  |  |- nv_get_kern_phys_address [nvidia]\n"
    "       0.210        0.210        0.210        1x  |  `- nv_compute_gfp_mask [nvidia]\n"
    "       4.870        1.356        4.870        1x  `- nvos_create_alloc [nvidia]\n"
    "       2.310        2.310        2.310        1x     |- __kvmalloc_node\n"
    "       1.204        1.204        1.204        1x     `- __kmalloc\n"
    "complete: yes\n";

// A call of `function` (module optional) with `parent`, `duration_ns` (nullopt: no exit seen).
Call call(std::uint64_t id, std::optional<std::uint64_t> parent, const std::string& function,
          std::optional<std::uint64_t> duration_ns, std::optional<std::string> module = "nvidia") {
    Call c;
    c.id = id;
    c.parent = parent;
    c.function = function;
    c.module = std::move(module);
    c.duration_ns = duration_ns;
    c.exit_seen = duration_ns.has_value();
    c.pid = 4242;
    c.comm = "cuda_host_reg";
    return c;
}

}  // namespace

// The case: 24 calls under one root; the 12 calls of nv_get_kern_phys_address are one line with their
// count, summed total (1.950 us), self and largest call (0.180 us); children by total time, most first. Self is
// total minus the direct children: 380.000 - 312.640 - 4.870 = 62.490.
TEST(Tree, SeedIsOneRootWithTwelveRepeatsCollapsed) {
    Report r = load("tree/fgraph-nv-alloc-pages-seed.txt");
    ASSERT_EQ(r.calls.size(), 24u);
    EXPECT_EQ(tree_text(r), kSeedTree);
    TreeView v = build_tree(r, {});
    EXPECT_EQ(v.calls, 24u);
    ASSERT_EQ(v.tops.size(), 1u);
}

TEST(Tree, MinTimeFoldsTheSiblingsBelowItIntoOneLine) {
    Report r = load("tree/fgraph-nv-alloc-pages-seed.txt");
    TreeOptions o;
    o.min_time_ns = 10'000;
    // Under nv_alloc_contig_pages: nv_get_kern_phys_address (12 calls, 1.950 us) and nv_compute_gfp_mask
    // (0.210 us) are folded; under nv_alloc_pages: nvos_create_alloc and its two children, 3 paths.
    EXPECT_EQ(tree_text(r, o),
              "    TOTAL us      SELF us       MAX us     CALLS  CALL PATH\n"
              "     380.000       62.490      380.000        1x  nv_alloc_pages [nvidia]\n"
              "     312.640        6.250      312.640        1x  |- nv_alloc_contig_pages [nvidia]\n"
              "     304.230        0.328      304.230        1x  |  |- __get_free_pages\n"
              "     303.902        0.358      303.902        1x  |  |  `- alloc_pages\n"
              "     303.544        0.524      303.544        1x  |  |     `- __alloc_pages\n"
              "     303.020        0.902      303.020        1x  |  |        `- get_page_from_freelist\n"
              "     302.118        0.658      302.118        1x  |  |           `- prep_new_page\n"
              "     301.460      301.460      301.460        1x  |  |              `- clear_page_erms\n"
              "       2.160                     0.210       13x  |  `- ... 2 paths below 10.000 us\n"
              "       4.870                     4.870        1x  `- ... 3 paths below 10.000 us\n"
              "complete: yes\n");
}

TEST(Tree, DepthCutsTheTreeAndSaysHowManyPathsAreBelow) {
    Report r = load("tree/fgraph-nv-alloc-pages-seed.txt");
    TreeOptions o;
    o.max_depth = 2;
    EXPECT_EQ(
        tree_text(r, o),
        "    TOTAL us      SELF us       MAX us     CALLS  CALL PATH\n"
        "     380.000       62.490      380.000        1x  nv_alloc_pages [nvidia]\n"
        "     312.640        6.250      312.640        1x  |- nv_alloc_contig_pages [nvidia]  (+8 paths below "
        "--depth 2)\n"
        "       4.870        1.356        4.870        1x  `- nvos_create_alloc [nvidia]  (+2 paths below --depth "
        "2)\n"
        "complete: yes\n");
    o.max_depth = 1;
    EXPECT_EQ(tree_text(r, o),
              "    TOTAL us      SELF us       MAX us     CALLS  CALL PATH\n"
              "     380.000       62.490      380.000        1x  nv_alloc_pages [nvidia]  (+12 paths below --depth 1)\n"
              "complete: yes\n");
}

TEST(Tree, FocusIsTheSubtreeOfTheFunctionWithItsCallerPaths) {
    Report r = load("tree/fgraph-nv-alloc-pages-seed.txt");
    TreeOptions o;
    o.focus = "nv_get_kern_phys_address";
    EXPECT_EQ(tree_text(r, o),
              "nv_get_kern_phys_address: 12 outermost calls, from 1 caller path:\n"
              "        12x  nv_alloc_pages > nv_alloc_contig_pages\n"
              "    TOTAL us      SELF us       MAX us     CALLS  CALL PATH\n"
              "       1.950        1.950        0.180       12x  nv_get_kern_phys_address [nvidia]\n"
              "complete: yes\n");
    o.focus = "no_such_function";
    EXPECT_EQ(tree_text(r, o), "no call of no_such_function among the report's 24 calls\ncomplete: yes\n");
}

// --focus rm_ioctl said "no call of rm_ioctl" on a trace of rm_ioctl.isra.0, which check and diff match to it
// (fresh user): the function is named by its base name, clone suffixes left out, as they do.
TEST(Tree, FocusFindsTheCompilersClonesOfTheFunction) {
    Report r = load("reports/baseline.json");
    TreeOptions o;
    o.focus = "os_alloc_mem";
    const std::string plain = tree_text(r, o);
    for (Call& c : r.calls)
        if (c.function == "os_alloc_mem") c.function = "os_alloc_mem.isra.0";
    r.graph.clear();  // rebuilt from the calls, with the clone's name
    const std::string cloned = tree_text(r, o);
    EXPECT_EQ(cloned.rfind("os_alloc_mem: 2 outermost calls, from 1 caller path:\n", 0), 0u) << cloned;
    EXPECT_NE(cloned.find("2x  os_alloc_mem.isra.0 [nvidia]"), std::string::npos) << cloned;
    EXPECT_EQ(plain.rfind("os_alloc_mem: 2 outermost calls", 0), 0u) << plain;
}

// Calls of the function under different parents are merged into one tree (os_alloc_mem twice under
// rmapiAllocWithSecInfo, one with an interrupt under it), with the ioctl and phase they ran under.
TEST(Tree, FocusMergesEveryCallOfTheFunction) {
    Report r = load("reports/baseline.json");
    TreeOptions o;
    o.focus = "os_alloc_mem";
    EXPECT_EQ(tree_text(r, o),
              "os_alloc_mem: 2 outermost calls, from 1 caller path:\n"
              "         2x  nvidia_unlocked_ioctl > nvidia_ioctl > rm_ioctl > RmIoctl > rmapiAllocWithSecInfo\n"
              "    TOTAL us      SELF us       MAX us     CALLS  CALL PATH\n"
              "       8.000        5.000        6.000        2x  os_alloc_mem [nvidia]  (ioctl NV_ESC_RM_ALLOC x1: "
              "NV_OK x1)  (phase cudaMalloc x2)\n"
              "       3.000        2.500        3.000        1x  `- smp_apic_timer_interrupt\n"
              "       0.500        0.500        0.500        1x     `- irq_enter\n"
              "complete: yes\n");
}

// A saved report whose child (5 us) is longer than its parent (1 us): the parent's self was shown as 0 with no
// word of why (fresh user). The note names the inconsistent durations; a consistent parent gets none.
TEST(Tree, CallShorterThanItsChildrenIsNotedNotSilentlyGivenSelfZero) {
    Report r;
    r.calls = {call(1, std::nullopt, "parent", 1'000), call(2, 1, "child", 5'000), call(3, std::nullopt, "ok", 9'000),
               call(4, 3, "child", 5'000)};
    TreeView v = build_tree(r, {});
    std::uint64_t clamped = 0;
    for (const TreeNode& n : v.nodes)
        if (n.label.rfind("parent", 0) == 0) {
            EXPECT_EQ(n.self_ns, 0u);
            clamped = n.self_clamped;
        } else {
            EXPECT_EQ(n.self_clamped, 0u) << n.label;
        }
    EXPECT_EQ(clamped, 1u);
    const std::string text = tree_text(r);
    EXPECT_NE(text.find("parent [nvidia]  (1 shorter than its children: self taken as 0)"), std::string::npos) << text;
    EXPECT_EQ(text.find("ok [nvidia]  ("), std::string::npos) << text;
}

// A recursive function: the inner call is part of the outer call's subtree, not a second top.
TEST(Tree, FocusTakesOnlyTheOutermostCallOfARecursiveFunction) {
    Report r;
    r.calls = {call(1, std::nullopt, "walk", 9'000), call(2, 1, "walk", 4'000), call(3, 2, "leaf", 1'000)};
    TreeOptions o;
    o.focus = "walk";
    TreeView v = build_tree(r, o);
    ASSERT_EQ(v.tops.size(), 1u);
    EXPECT_EQ(v.nodes[v.tops[0]].count, 1u);
    EXPECT_EQ(v.nodes[v.tops[0]].total_ns, 9'000u);
    EXPECT_EQ(v.calls, 3u);
}

// The tree cut at the driver boundary: the kernel's syscall frames above the driver are left out, the driver's
// entry points are the tops, and what the driver calls in the kernel stays under them. Module names compare with
// '-' and '_' alike (kallsyms says nvidia_uvm, the module file nvidia-uvm.ko).
TEST(Tree, ModuleCutsTheTreeAtTheDriverBoundary) {
    Report r;
    r.calls = {call(1, std::nullopt, "__x64_sys_ioctl", 50'000, std::nullopt),
               call(2, 1, "nvidia_unlocked_ioctl", 45'000),
               call(3, 2, "nvidia_ioctl", 40'000),
               call(4, 3, "__kmalloc", 2'000, std::nullopt),
               call(5, std::nullopt, "__x64_sys_ioctl", 30'000, std::nullopt),
               call(6, 5, "uvm_unlocked_ioctl_entry", 25'000, "nvidia_uvm"),
               call(7, std::nullopt, "ksys_mmap_pgoff", 20'000, std::nullopt),
               call(8, 7, "nvidia_mmap", 12'000)};
    TreeOptions o;
    o.module = "nvidia";
    EXPECT_EQ(tree_text(r, o),
              "module nvidia: 2 outermost calls (the driver's entry points)\n"
              "    TOTAL us      SELF us       MAX us     CALLS  CALL PATH\n"
              "      45.000        5.000       45.000        1x  nvidia_unlocked_ioctl [nvidia]\n"
              "      40.000       38.000       40.000        1x  `- nvidia_ioctl [nvidia]\n"
              "       2.000        2.000        2.000        1x     `- __kmalloc\n"
              "      12.000       12.000       12.000        1x  nvidia_mmap [nvidia]\n"
              "complete: yes\n");
    o.module = "nvidia-uvm";
    TreeView v = build_tree(r, o);
    ASSERT_EQ(v.tops.size(), 1u);
    EXPECT_EQ(v.nodes[v.tops[0]].label, "uvm_unlocked_ioctl_entry [nvidia_uvm]");
}

// One top level per ioctl request: the root calls that ran inside each ioctl, keyed by the decoded name, with
// the ioctls' outcomes.
TEST(Tree, GroupByIoctlKeysTheRootCallsByTheDecodedRequest) {
    Report r = load("reports/baseline.json");
    TreeOptions o;
    o.group_by = TreeGroupBy::ioctl;
    o.max_depth = 2;
    EXPECT_EQ(tree_text(r, o),
              "    TOTAL us      SELF us       MAX us     CALLS  CALL PATH\n"
              "      60.000            -       60.000        1x  [UVM_MAP_EXTERNAL_ALLOCATION]  (1 ioctl: NV_OK x1)\n"
              "      60.000        5.000       60.000        1x  `- uvm_ioctl [nvidia_uvm]  (phase cudaMalloc x1)  (+3 "
              "paths below --depth 2)\n"
              "      50.000            -       50.000        1x  [NV_ESC_RM_ALLOC_MEMORY]  (1 ioctl: NV_OK x1)\n"
              "      50.000        2.000       50.000        1x  `- nvidia_unlocked_ioctl [nvidia]  (phase cudaMalloc "
              "x1)  (+7 paths below --depth 2)\n"
              "      40.000            -       40.000        1x  [NV_ESC_RM_ALLOC]  (1 ioctl: NV_OK x1)\n"
              "      40.000        2.000       40.000        1x  `- nvidia_unlocked_ioctl [nvidia]  (phase cudaMalloc "
              "x1)  (+7 paths below --depth 2)\n"
              "complete: yes\n");
}

// A function_graph trace has no ioctl records (no syscall events): its calls were grouped under "[not inside an
// ioctl]", although __x64_sys_ioctl was plainly one (fresh user). With no ioctl in the report the group says none
// was recorded; with ioctls, a call outside them is still "not inside an ioctl".
TEST(Tree, GroupByIoctlWithoutAnyIoctlSaysNoneWasRecorded) {
    Report r = load("reports/baseline.json");
    TreeOptions o;
    o.group_by = TreeGroupBy::ioctl;
    o.max_depth = 1;
    r.ioctls.clear();
    const std::string t = tree_text(r, o);
    EXPECT_NE(t.find("[no ioctl recorded]"), std::string::npos) << t;
    EXPECT_EQ(t.find("not inside an ioctl"), std::string::npos) << t;
}

TEST(Tree, WithoutGroupingTheTopsSayTheIoctlTheyRanUnderAndItsStatus) {
    Report r = load("reports/baseline.json");
    TreeOptions o;
    o.max_depth = 1;
    EXPECT_EQ(
        tree_text(r, o),
        "    TOTAL us      SELF us       MAX us     CALLS  CALL PATH\n"
        "      90.000        4.000       50.000        2x  nvidia_unlocked_ioctl [nvidia]  (ioctl NV_ESC_RM_ALLOC "
        "x1, NV_ESC_RM_ALLOC_MEMORY x1: NV_OK x2)  (phase cudaMalloc x2)  (+12 paths below --depth 1)\n"
        "      60.000        5.000       60.000        1x  uvm_ioctl [nvidia_uvm]  (ioctl "
        "UVM_MAP_EXTERNAL_ALLOCATION x1: NV_OK x1)  (phase cudaMalloc x1)  (+3 paths below --depth 1)\n"
        "complete: yes\n");
}

TEST(Tree, GroupByPhaseAndByThread) {
    Report r = load("reports/baseline.json");
    TreeOptions o;
    o.group_by = TreeGroupBy::phase;
    o.max_depth = 2;
    EXPECT_EQ(tree_text(r, o),
              "    TOTAL us      SELF us       MAX us     CALLS  CALL PATH\n"
              "     150.000            -       60.000        3x  [phase cudaMalloc]\n"
              "      90.000        4.000       50.000        2x  |- nvidia_unlocked_ioctl [nvidia]  (ioctl "
              "NV_ESC_RM_ALLOC x1, NV_ESC_RM_ALLOC_MEMORY x1: NV_OK x2)  (+12 paths below --depth 2)\n"
              "      60.000        5.000       60.000        1x  `- uvm_ioctl [nvidia_uvm]  (ioctl "
              "UVM_MAP_EXTERNAL_ALLOCATION x1: NV_OK x1)  (+3 paths below --depth 2)\n"
              "complete: yes\n");
    // funcgraph-proc: the TASK/PID column names the thread (sh-4802); the trace starts inside a call, so the
    // last line closes a call whose entry is not in it (its function unnamed, "?").
    Report p = load("cases/fgraph-funcgraph-proc-column.txt");
    o.group_by = TreeGroupBy::thread;
    o.max_depth = 1;
    EXPECT_EQ(tree_text(p, o),
              "    TOTAL us      SELF us       MAX us     CALLS  CALL PATH\n"
              "      49.370            -       49.370        1x  [sh-4802]  (+6 paths below --depth 1)\n"
              "complete: no: 1 returns without their entry\n");
    // Text without a task column: the thread is not known, and says so.
    Report s = load("tree/fgraph-nv-alloc-pages-seed.txt");
    TreeView v = build_tree(s, o);
    ASSERT_EQ(v.tops.size(), 1u);
    EXPECT_EQ(v.nodes[v.tops[0]].label, "thread unknown");
}

// One top level per API call path (uprobe spans, Report::api_calls): the root calls made while it was the
// innermost open API call of the thread.
TEST(Tree, GroupByApiCall) {
    Report r;
    r.calls = {call(1, std::nullopt, "nvidia_unlocked_ioctl", 30'000), call(2, 1, "nvidia_ioctl", 20'000),
               call(3, std::nullopt, "nvidia_unlocked_ioctl", 10'000), call(4, std::nullopt, "nvidia_mmap", 5'000)};
    ApiCall outer, inner;
    outer.id = 1;
    outer.function = "cudaMalloc";
    inner.id = 2;
    inner.parent = 1;
    inner.function = "cuMemAlloc_v2";
    inner.calls = {1, 3};
    r.api_calls = {outer, inner};
    TreeOptions o;
    o.group_by = TreeGroupBy::api;
    EXPECT_EQ(tree_text(r, o),
              "    TOTAL us      SELF us       MAX us     CALLS  CALL PATH\n"
              "      40.000            -       30.000        2x  [api cudaMalloc > cuMemAlloc_v2]\n"
              "      40.000       20.000       30.000        2x  `- nvidia_unlocked_ioctl [nvidia]\n"
              "      20.000       20.000       20.000        1x     `- nvidia_ioctl [nvidia]\n"
              "       5.000            -        5.000        1x  [no API call]\n"
              "       5.000        5.000        5.000        1x  `- nvidia_mmap [nvidia]\n"
              "complete: yes\n");
    // Without grouping, the API call path is a note on the top.
    o.group_by = TreeGroupBy::none;
    TreeView v = build_tree(r, o);
    ASSERT_EQ(v.tops.size(), 2u);
    EXPECT_EQ(v.nodes[v.tops[0]].notes, std::vector<std::string>{"api cudaMalloc > cuMemAlloc_v2 x2"});
}

// Calls whose exit is not in the trace: their total, self and max are "unknown", never 0; their children keep
// their times; a line under the tree says how many and why.
TEST(Tree, UnknownDurationsPrintUnknownNeverZero) {
    Report r = load("tree/fgraph-nv-alloc-pages-unclosed.txt");
    EXPECT_EQ(tree_text(r),
              "    TOTAL us      SELF us       MAX us     CALLS  CALL PATH\n"
              "     unknown      unknown      unknown        1x  nv_alloc_pages [nvidia]\n"
              "       4.870        1.356        4.870        1x  |- nvos_create_alloc [nvidia]\n"
              "       2.310        2.310        2.310        1x  |  |- __kvmalloc_node\n"
              "       1.204        1.204        1.204        1x  |  `- __kmalloc\n"
              "     unknown      unknown      unknown        1x  `- nv_alloc_contig_pages [nvidia]\n"
              "     304.230        0.328      304.230        1x     |- __get_free_pages\n"
              "     303.902        0.358      303.902        1x     |  `- alloc_pages\n"
              "     303.544        0.524      303.544        1x     |     `- __alloc_pages\n"
              "     303.020        0.902      303.020        1x     |        `- get_page_from_freelist\n"
              "     302.118        0.658      302.118        1x     |           `- prep_new_page\n"
              "     301.460      301.460      301.460        1x     |              `- clear_page_erms\n"
              "       1.950        1.950        0.180       12x     |- nv_get_kern_phys_address [nvidia]\n"
              "       0.210        0.210        0.210        1x     `- nv_compute_gfp_mask [nvidia]\n"
              "unknown: 2 of the 24 calls shown have no duration (no exit recorded: the trace ended, or lost events, "
              "inside them)\n"
              "complete: no: 2 calls without their return\n");
    // --min-time never folds a path whose time is unknown.
    TreeOptions o;
    o.min_time_ns = 1'000'000;
    std::string folded = tree_text(r, o);
    EXPECT_NE(folded.find("nv_alloc_pages [nvidia]\n"), std::string::npos) << folded;
    EXPECT_NE(folded.find("|- nv_alloc_contig_pages [nvidia]\n"), std::string::npos) << folded;
}

// Function tracer text records hits, not durations: every line is unknown, none is 0.000.
TEST(Tree, FunctionTracerHitsHaveUnknownDurations) {
    Report r = load("cases/function-text-annotate-cpu-buffer-started.txt");
    std::string text = tree_text(r);
    EXPECT_EQ(text.find("0.000"), std::string::npos) << text;
    EXPECT_NE(text.find("     unknown      unknown      unknown        5x  read_pci_config\n"), std::string::npos)
        << text;
    EXPECT_NE(text.find("unknown: 12 of the 12 calls shown have no duration (the source records none: function "
                        "tracer hits)\n"),
              std::string::npos)
        << text;
}

// Some calls of a path with a duration and some without: the known ones are summed and the line says how many
// have none; a parent whose child has no duration has an unknown self time.
TEST(Tree, PartlyKnownDurationsSayHowManyAreMissing) {
    Report r;
    r.calls = {call(1, std::nullopt, "nv_alloc_pages", 10'000), call(2, 1, "nv_get_kern_phys_address", 1'000),
               call(3, 1, "nv_get_kern_phys_address", std::nullopt)};
    EXPECT_EQ(tree_text(r),
              "    TOTAL us      SELF us       MAX us     CALLS  CALL PATH\n"
              "      10.000      unknown       10.000        1x  nv_alloc_pages [nvidia]  (self of 1 unknown)\n"
              "       1.000        1.000        1.000        2x  `- nv_get_kern_phys_address [nvidia]  (1 without a "
              "duration)\n"
              "unknown: 1 of the 3 calls shown have no duration (no exit recorded: the trace ended, or lost events, "
              "inside them)\n"
              "complete: yes\n");
}

// What no CPU profiler knows: the kernel-log line printed inside a call (attached by the report to that call)
// and the RM status of the ioctl the tree ran under. The BAR-overlap line and NV_ERR_INVALID_ADDRESS are those of
// cudaHostRegister on BAR1 memory (nvidia-driver.md section 5(d), printed by osCreateOsDescriptorFromIoMemory).
TEST(Tree, KernelLogLineAndRmStatusAreNotedOnTheirPath) {
    Report r;
    r.calls = {call(1, std::nullopt, "nvidia_unlocked_ioctl", 80'000), call(2, 1, "nvidia_ioctl", 75'000),
               call(3, 2, "os_lock_user_pages", 20'000), call(4, 2, "nv_printf", 3'000)};
    KernelLogMessage m;
    m.text =
        "NVRM: osCreateOsDescriptorFromIoMemory(): phys range 0x0000380000000000-0x0000380000ffffff overlaps "
        "with GPU BARs";
    m.kind = "bar_overlap";
    m.level = 3;
    m.call = 4;
    r.kernel_log = {m, m};
    IoctlRecord io;
    io.name = "NV_ESC_RM_ALLOC_MEMORY";
    io.ret = 0;
    io.status = "NV_ERR_INVALID_ADDRESS";
    io.calls = {1};
    io.call = 1;
    r.ioctls = {io};
    TreeView v = build_tree(r, {});
    ASSERT_EQ(v.tops.size(), 1u);
    const TreeNode& top = v.nodes[v.tops[0]];
    EXPECT_EQ(top.notes, std::vector<std::string>{"ioctl NV_ESC_RM_ALLOC_MEMORY x1: NV_ERR_INVALID_ADDRESS x1"});
    EXPECT_TRUE(top.error);
    std::string text = tree_text(r);
    EXPECT_NE(text.find("`- nv_printf [nvidia]  (log x2 [bar_overlap] \"NVRM: osCreateOsDescriptorFromIoMemory(): "
                        "phys range 0x0000380000000000-0x0000380000ffffff overla...\")\n"),
              std::string::npos)
        << text;
    // Grouped by request, the status is the group's.
    TreeOptions o;
    o.group_by = TreeGroupBy::ioctl;
    o.max_depth = 1;
    EXPECT_EQ(tree_text(r, o),
              "    TOTAL us      SELF us       MAX us     CALLS  CALL PATH\n"
              "      80.000            -       80.000        1x  [NV_ESC_RM_ALLOC_MEMORY]  (1 ioctl: "
              "NV_ERR_INVALID_ADDRESS x1)  (+4 paths below --depth 1)\n"
              "complete: yes\n");
}

// A run where the kernel refused function tracing (the CI machines): the ioctl requests are the tree's leaves,
// under the file they were issued on, with counts, outcomes and latency (enter -> exit).
TEST(Tree, IoctlOnlyReportDrawsTheRequestsAsLeaves) {
    Report r = load("capture_dir/fionread20");
    ASSERT_TRUE(r.calls.empty());
    EXPECT_EQ(tree_text(r),
              "no calls in the report (tracer: events): its 20 ioctls by request, latency enter -> exit\n"
              "    TOTAL us      SELF us       MAX us     CALLS  IOCTL REQUEST\n"
              "      11.097            -        2.834       20x  [fd 4 (path unknown: no sample of this fd)]\n"
              "      11.097       11.097        2.834       20x  `- FIONREAD  (ret=0 x20)\n"
              "complete: yes\n");
    TreeOptions o;
    o.group_by = TreeGroupBy::thread;
    EXPECT_EQ(tree_text(r, o),
              "no calls in the report (tracer: events): its 20 ioctls by request, latency enter -> exit\n"
              "    TOTAL us      SELF us       MAX us     CALLS  IOCTL REQUEST\n"
              "      11.097            -        2.834       20x  [fionread_loop-13948]\n"
              "      11.097       11.097        2.834       20x  `- FIONREAD  (ret=0 x20)  (on fd 4 (path unknown: no "
              "sample of this fd) x20)\n"
              "complete: yes\n");
}

// strace without -T prints no times: the requests are counted and their latency is unknown.
TEST(Tree, IoctlOnlyWithoutTimesHasUnknownLatency) {
    Report r = load("cases/strace-nvidia-ioctl-libva.txt");
    EXPECT_EQ(
        tree_text(r),
        "no calls in the report (input: strace): its 9 ioctls by request, latency enter -> exit\n"
        "    TOTAL us      SELF us       MAX us     CALLS  IOCTL REQUEST\n"
        "     unknown            -      unknown        7x  [fd 5 (path unknown: the source records no fd paths)]\n"
        "     unknown      unknown      unknown        3x  |- NV_ESC_RM_CONTROL  (ret=0 x3)\n"
        "     unknown      unknown      unknown        2x  |- NV_ESC_RM_MAP_MEMORY  (ret=0 x2)\n"
        "     unknown      unknown      unknown        1x  |- NV_ESC_RM_ALLOC  (ret=0 x1)\n"
        "     unknown      unknown      unknown        1x  `- NV_ESC_RM_VID_HEAP_CONTROL  (ret=0 x1)\n"
        "     unknown            -      unknown        2x  [fd 14 (path unknown: the source records no fd "
        "paths)]\n"
        "     unknown      unknown      unknown        1x  |- NV_ESC_ALLOC_OS_EVENT  (ret=0 x1)\n"
        "     unknown      unknown      unknown        1x  `- NV_ESC_RM_ALLOC  (ret=0 x1)\n"
        "unknown: 9 of the 9 ioctls have no latency (exit not seen, or the source printed no time)\n"
        "complete: no: strace_truncated_line: 1 (" +
            data("cases/strace-nvidia-ioctl-libva.txt") + ":19: line ends mid-call)\n");
}

TEST(Tree, AReportWithNeitherCallsNorIoctlsSaysSo) {
    Report r = load("cases/nvrm-xid79-fallen-off-bus-continuation.log");
    EXPECT_EQ(tree_text(r).substr(0, 59), "no calls and no ioctls in the report (input: kernel-log): n");
}

TEST(Tree, ColoursOnlyWhenAsked) {
    Report r = load("tree/fgraph-nv-alloc-pages-unclosed.txt");
    TreeOptions o;
    EXPECT_EQ(tree_text(r, o).find('\x1b'), std::string::npos);
    o.color = true;
    std::string coloured = tree_text(r, o);
    EXPECT_NE(coloured.find("\x1b[33m     unknown\x1b[0m"), std::string::npos) << coloured;
    EXPECT_NE(coloured.find("\x1b[1mnv_alloc_pages [nvidia]\x1b[0m"), std::string::npos) << coloured;
}

// A saved report (report.json written and read back) gives the tree of the trace it was built from; so does a
// capture directory and its report.json.
TEST(Tree, ASavedReportGivesTheTreeOfItsSource) {
    Report r = load("tree/fgraph-nv-alloc-pages-seed.txt");
    auto saved = report_from_json(to_json(r));
    ASSERT_TRUE(saved) << saved.error().message;
    EXPECT_EQ(tree_text(*saved), kSeedTree);
    EXPECT_EQ(tree_text(load("capture_dir/fionread20")), tree_text(load("capture_dir/fionread20/report.json")));
}

// --calls-jsonl leaves `calls` empty and the graph rows in the report: the tree is drawn from them, with the
// same times (no unknown durations here).
TEST(Tree, GraphRowsWhenTheCallsAreElsewhere) {
    Report r = load("tree/fgraph-nv-alloc-pages-seed.txt");
    r.calls.clear();
    std::string text = tree_text(r);
    std::string expected = std::string(
                               "the report's calls are not in it (written to their own file): drawn from its graph "
                               "rows, without ioctl, kernel-log or grouping annotations\n") +
                           kSeedTree;
    // Graph rows drop the module suffix: the functions are named alone.
    for (std::size_t at; (at = expected.find(" [nvidia]")) != std::string::npos;)
        expected.erase(at, 9);
    EXPECT_EQ(text, expected);
}

// A damaged or synthetic report may nest far deeper than a kernel stack: no recursion on the C++ stack.
TEST(Tree, AVeryDeepChainDoesNotOverflowTheStack) {
    Report r;
    constexpr std::uint64_t kDepth = 100'000;
    for (std::uint64_t i = 1; i <= kDepth; ++i)
        r.calls.push_back(call(i, i == 1 ? std::nullopt : std::optional<std::uint64_t>(i - 1), "f", kDepth - i + 1));
    TreeView v = build_tree(r, {});
    EXPECT_EQ(v.nodes.size(), kDepth);
    std::ostringstream out;
    TreeOptions o;
    write_tree(v, r, o, out);
    EXPECT_GT(out.str().size(), kDepth);
}

// A saved report is anyone's file: a newline in a function name started a line of its own (a forged tree row with
// its own times), ESC and other C0 bytes or DEL in a name, a comm, a device path or kernel-log text reached the
// terminal. They are shown as \xNN; the tree's own colours (--color) are the only escape sequences left.
TEST(Tree, ControlBytesInNamesAndLogTextCannotForgeLinesOrDriveTheTerminal) {
    Report r;
    r.calls = {call(1, std::nullopt, "nvidia_ioctl\n      99.000       99.000       99.000        1x  forged", 80'000),
               call(2, 1, "nv_printf\x1b[2J\x7f", 3'000)};
    r.calls[0].comm = "evil\x1b[31m\tcomm";
    KernelLogMessage m;
    m.text = "NVRM: line\x1b]0;owned\x07 end";
    m.kind = "other";
    m.call = 2;
    r.kernel_log = {m};
    IoctlRecord io;
    io.name = "NV_ESC\rRM";
    io.fd_path = "/dev/nvidia0\nforged";
    io.ret = 0;
    io.call = 1;
    io.calls = {1};
    r.ioctls = {io};
    r.completeness.complete = false;
    r.completeness.reasons = {"lost\nforged: yes"};
    for (const TreeGroupBy g : {TreeGroupBy::none, TreeGroupBy::ioctl, TreeGroupBy::thread}) {
        TreeOptions o;
        o.group_by = g;
        const std::string text = tree_text(r, o);
        SCOPED_TRACE(text);
        for (char c = 0; c < 0x20; ++c)
            if (c != '\n') {
                EXPECT_EQ(text.find(c), std::string::npos) << int(c);
            }
        EXPECT_EQ(text.find('\x7f'), std::string::npos);
        EXPECT_EQ(text.find("\nforged"), std::string::npos);
        EXPECT_EQ(text.find("\n      99.000"), std::string::npos);
        EXPECT_NE(text.find("nvidia_ioctl\\x0a      99.000"), std::string::npos);
    }
    const std::string text = tree_text(r);
    EXPECT_NE(text.find("nv_printf\\x1b[2J\\x7f"), std::string::npos) << text;
    EXPECT_NE(text.find("NVRM: line\\x1b]0;owned\\x07 end"), std::string::npos) << text;
    EXPECT_NE(text.find("lost\\x0aforged: yes"), std::string::npos) << text;
    // With colours the escape sequences are the tree's own SGR ones only.
    TreeOptions coloured;
    coloured.color = true;
    const std::string painted = tree_text(r, coloured);
    for (std::size_t at = painted.find('\x1b'); at != std::string::npos; at = painted.find('\x1b', at + 1)) {
        ASSERT_LT(at + 1, painted.size());
        EXPECT_EQ(painted[at + 1], '[') << painted.substr(at, 10);
        const std::size_t m_at = painted.find_first_not_of("0123456789;", at + 2);
        ASSERT_NE(m_at, std::string::npos);
        EXPECT_EQ(painted[m_at], 'm') << painted.substr(at, 10);
    }
}

TEST(Tree, ParseDuration) {
    EXPECT_EQ(parse_duration_ns("10us"), 10'000u);
    EXPECT_EQ(parse_duration_ns("10"), 10'000u);
    EXPECT_EQ(parse_duration_ns("1.5ms"), 1'500'000u);
    EXPECT_EQ(parse_duration_ns("250ns"), 250u);
    EXPECT_EQ(parse_duration_ns("2s"), 2'000'000'000u);
    EXPECT_EQ(parse_duration_ns("0.0005us"), 1u);  // rounded to the nearest ns
    EXPECT_FALSE(parse_duration_ns(""));
    EXPECT_FALSE(parse_duration_ns("us"));
    EXPECT_FALSE(parse_duration_ns("-5us"));
    EXPECT_FALSE(parse_duration_ns("10 us"));
    EXPECT_FALSE(parse_duration_ns("10xs"));
    EXPECT_FALSE(parse_duration_ns("1e30s"));
    EXPECT_EQ(tree_us(3'971'558), "3,971.558");
    EXPECT_EQ(tree_us(0), "0.000");
}

// A damaged report's duration of 2^64-1 ns, or durations whose sum passes it, wrapped: the fresh user's report
// (baseline with its first nvidia_unlocked_ioctl at 2^64-1) printed TOTAL 49.999 and SELF 18,446,744,073,709,515.615
// for the path. Every sum saturates and the line says "overflow"; nothing wraps. Variants: one huge duration plus
// a second call of the path (total), two children whose sum passes 2^64-1 (the parent's self), and graph rows and
// ioctls (the same sums from the other two sources of the tree).
TEST(Tree, DurationSumsPast2To64Minus1SayOverflowAndNeverWrap) {
    constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
    // 1. Two calls of one path, one of them 2^64-1: the path's total passes 2^64-1.
    Report r;
    r.calls = {call(1, std::nullopt, "nvidia_unlocked_ioctl", kMax), call(2, 1, "nvidia_ioctl", 38000),
               call(3, std::nullopt, "nvidia_unlocked_ioctl", 50000), call(4, 3, "nvidia_ioctl", 48000)};
    TreeView v = build_tree(r, {});
    ASSERT_EQ(v.tops.size(), 1u);
    EXPECT_TRUE(v.nodes[v.tops[0]].overflow);
    EXPECT_EQ(v.nodes[v.tops[0]].total_ns, kMax);
    std::string text = tree_text(r);
    EXPECT_NE(
        text.find("    overflow     overflow 18,446,744,073,709,551.615        2x  nvidia_unlocked_ioctl [nvidia]\n"),
        std::string::npos)
        << text;
    EXPECT_NE(text.find("      86.000       86.000       48.000        2x  `- nvidia_ioctl [nvidia]\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("overflow: the durations of 1 line sum past 2^64-1 ns (584 years, no real duration: a damaged "
                        "report): shown as 'overflow'\n"),
              std::string::npos)
        << text;
    EXPECT_EQ(text.find("49.999"), std::string::npos) << text;

    // 2. One parent whose two children sum past 2^64-1: the children's sum saturates, the parent's self is 0.
    Report kids;
    kids.calls = {call(1, std::nullopt, "f", kMax), call(2, 1, "g", kMax / 2 + 1), call(3, 1, "h", kMax / 2 + 1)};
    TreeView k = build_tree(kids, {});
    const TreeNode& f = k.nodes[k.tops[0]];
    EXPECT_EQ(f.self_ns, 0u);
    EXPECT_FALSE(f.overflow);
    EXPECT_EQ(f.total_ns, kMax);

    // 3. Graph rows (a report whose calls are elsewhere) of one path summing past 2^64-1.
    Report g;
    GraphNode row;
    row.path = "f";
    row.count = 1;
    row.total_ns = kMax;
    row.self_ns = kMax;
    row.max_ns = kMax;
    g.graph = {row, row};
    TreeView gv = build_tree(g, {});
    ASSERT_EQ(gv.tops.size(), 1u);
    EXPECT_TRUE(gv.nodes[gv.tops[0]].overflow);
    EXPECT_NE(tree_text(g).find("    overflow     overflow"), std::string::npos) << tree_text(g);

    // 4. Two ioctls of one request (a report without calls) whose latencies sum past 2^64-1.
    Report io;
    for (int i = 0; i < 2; ++i) {
        IoctlRecord x;
        x.fd = 3;
        x.cmd = 0xc0104629;
        x.name = "NV_ESC_RM_ALLOC";
        x.fd_path = "/dev/nvidiactl";
        x.ret = 0;
        x.duration_ns = kMax - 1;
        io.ioctls.push_back(x);
    }
    std::string itext = tree_text(io);
    EXPECT_NE(itext.find("    overflow     overflow 18,446,744,073,709,551.614        2x"), std::string::npos) << itext;
}
