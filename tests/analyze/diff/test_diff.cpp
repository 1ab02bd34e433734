// The diff on hand-made fixture reports (tests/data/reports/make_fixtures.py says what each one changes).
#include <functional>
#include <limits>

#include <sstream>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../../../analyze/json_values.hpp"
#include "nvtrace/diff.hpp"
#include "nvtrace/import.hpp"
#include "nvtrace/report.hpp"
#include "nvtrace/report_io.hpp"

using namespace nvtrace;

namespace {

Report fixture(const std::string& name) {
    auto r = read_report_file(std::string(NVTRACE_TEST_DATA) + "/reports/" + name + ".json");
    if (!r) throw std::runtime_error(r.error().message);
    return std::move(*r);
}

DiffResult diff(const std::string& a, const std::string& b, DiffOptions o = {}) {
    return diff_reports(fixture(a), fixture(b), o);
}

const DiffNode* find(const std::vector<DiffNode>& nodes, const std::string& path) {
    for (const auto& n : nodes) {
        if (n.path == path) return &n;
        if (auto* f = find(n.children, path)) return f;
    }
    return nullptr;
}

constexpr const char* kRmAlloc = "nvidia_unlocked_ioctl > nvidia_ioctl > rm_ioctl > RmIoctl > rmapiAllocWithSecInfo";
constexpr const char* kUvmGpu = "uvm_ioctl > uvm_api_map_external_allocation > uvm_map_external_allocation_on_gpu";

}  // namespace

TEST(Diff, SameReportHasNoChange) {
    DiffResult d = diff("baseline", "baseline");
    EXPECT_FALSE(d.summary.any());
    EXPECT_TRUE(d.roots.empty());
    EXPECT_TRUE(d.retvals_compared);
    EXPECT_EQ(d.a.calls, 24u);
}

TEST(Diff, NoiseOnlyCopyShowsNoChange) {
    // Other pid and times, +-8% durations, clone suffixes, [module] tails, an interrupt somewhere else.
    DiffResult d = diff("baseline", "noise");
    EXPECT_FALSE(d.summary.structural());
    EXPECT_EQ(d.summary.time_changes, 0u);
    EXPECT_TRUE(d.roots.empty()) << format_diff_text(d);
}

TEST(Diff, InterruptsNestedWhereTheyArrivedAreNoise) {
    DiffOptions o;
    o.keep_irq_nesting = true;
    DiffResult d = diff("baseline", "noise", o);
    EXPECT_EQ(d.summary.added_paths, 1u);
    EXPECT_EQ(d.summary.removed_paths, 1u);
    EXPECT_TRUE(find(d.roots, std::string(kUvmGpu) + " > uvm_pmm_gpu_alloc > smp_apic_timer_interrupt"));
}

TEST(Diff, AddedPath) {
    DiffResult d = diff("baseline", "added_path");
    EXPECT_EQ(d.summary.added_paths, 1u);
    EXPECT_EQ(d.summary.added_nodes, 2u);
    EXPECT_EQ(d.summary.added_calls, 2u);
    EXPECT_EQ(d.summary.removed_paths, 0u);
    EXPECT_EQ(d.summary.count_changes, 0u);
    EXPECT_EQ(d.summary.retval_changes, 0u);
    EXPECT_EQ(d.summary.time_changes, 0u);  // +4 us is below the 10 us threshold
    const DiffNode* n = find(d.roots, std::string(kRmAlloc) + " > nv_check_bar_overlap");
    ASSERT_TRUE(n) << format_diff_text(d);
    EXPECT_EQ(n->status, DiffStatus::added);
    EXPECT_FALSE(n->a);
    ASSERT_TRUE(n->b);
    EXPECT_EQ(n->b->count, 1u);
    EXPECT_EQ(n->b->total_ns, 4000u);
    ASSERT_EQ(n->children.size(), 1u);
    EXPECT_EQ(n->children[0].status, DiffStatus::added);
    // Ancestors are context, not changes.
    const DiffNode* top = find(d.roots, "nvidia_unlocked_ioctl");
    ASSERT_TRUE(top);
    EXPECT_EQ(top->status, DiffStatus::context);
    // Unchanged siblings are pruned.
    EXPECT_FALSE(find(d.roots, "uvm_ioctl"));
}

TEST(Diff, RemovedPath) {
    DiffResult d = diff("baseline", "removed_path");
    EXPECT_EQ(d.summary.removed_paths, 1u);
    EXPECT_EQ(d.summary.removed_nodes, 2u);
    EXPECT_EQ(d.summary.added_paths, 0u);
    const DiffNode* n = find(d.roots, kUvmGpu);
    ASSERT_TRUE(n);
    EXPECT_EQ(n->status, DiffStatus::removed);
    EXPECT_EQ(n->delta_total_ns, -40000);
    // Its parents lost 40 us of 55 and 60: time changes.
    EXPECT_EQ(d.summary.time_changes, 2u);
    EXPECT_TRUE(find(d.roots, "uvm_ioctl")->time_changed);
}

TEST(Diff, CountChange) {
    DiffResult d = diff("baseline", "count_change");
    EXPECT_FALSE(d.summary.added_paths + d.summary.removed_paths);
    EXPECT_EQ(d.summary.count_changes, 1u);
    const DiffNode* n =
        find(d.roots,
             "nvidia_unlocked_ioctl > nvidia_ioctl > rm_ioctl > nv_alloc_pages > nv_alloc_contig_pages > "
             "nv_get_kern_phys_address");
    ASSERT_TRUE(n) << format_diff_text(d);
    EXPECT_TRUE(n->count_changed);
    EXPECT_EQ(n->a->count, 4u);
    EXPECT_EQ(n->b->count, 8u);
    EXPECT_EQ(n->delta_count, 4);
}

TEST(Diff, TimeChangeWithThreshold) {
    DiffResult d = diff("baseline", "time_change");
    EXPECT_FALSE(d.summary.structural());
    EXPECT_EQ(d.summary.time_changes, 3u);  // the function and its two ancestors
    ASSERT_FALSE(d.roots.empty());
    EXPECT_EQ(d.roots[0].function, "uvm_ioctl");
    const DiffNode* n = find(d.roots, kUvmGpu);
    ASSERT_TRUE(n);
    EXPECT_TRUE(n->time_changed);
    EXPECT_EQ(n->delta_total_ns, 145000);
    ASSERT_TRUE(n->rel_total);
    EXPECT_NEAR(*n->rel_total, 145.0 / 40.0, 1e-9);
    EXPECT_EQ(n->delta_self_ns, 145000);

    DiffOptions strict;
    strict.threshold.min_abs_ns = 200'000;  // 200 us: nothing reaches it
    EXPECT_EQ(diff("baseline", "time_change", strict).summary.time_changes, 0u);
    DiffOptions rel;
    rel.threshold.min_rel = 4.0;  // +400%: nothing reaches it (+362% at most)
    EXPECT_EQ(diff("baseline", "time_change", rel).summary.time_changes, 0u);
}

TEST(Diff, RetvalChange) {
    DiffResult d = diff("baseline", "retval_change");
    EXPECT_EQ(d.summary.retval_changes, 1u);
    EXPECT_TRUE(d.summary.structural());
    const DiffNode* n = find(d.roots, kRmAlloc);
    ASSERT_TRUE(n);
    EXPECT_TRUE(n->retval_changed);
    EXPECT_EQ(n->a->retvals.count("0"), 1u);
    EXPECT_EQ(n->b->retvals.count("30 (0x1e)"), 1u);
    EXPECT_NE(format_diff_text(d).find("ret {0 x1} -> {30 (0x1e) x1}"), std::string::npos) << format_diff_text(d);
}

TEST(Diff, RetvalsNotComparedWhenOneSideHasNone) {
    Report a = fixture("baseline");
    Report b = fixture("retval_change");
    for (auto& c : b.calls)
        c.retval.reset();
    DiffResult d = diff_reports(a, b, {});
    EXPECT_FALSE(d.retvals_compared);
    EXPECT_EQ(d.summary.retval_changes, 0u);
}

TEST(Diff, ErrnoRetvalsAreNamed) {
    Report a = fixture("baseline");
    Report b = a;
    for (auto& c : b.calls)
        if (c.function == "nvidia_ioctl") c.retval = -22;
    DiffResult d = diff_reports(a, b, {});
    EXPECT_EQ(d.summary.retval_changes, 1u);
    const DiffNode* n = find(d.roots, "nvidia_unlocked_ioctl > nvidia_ioctl");
    ASSERT_TRUE(n);
    EXPECT_EQ(n->b->retvals.count("-22 (EINVAL)"), 1u);
}

// The case's two runs: funcgraph-retval prints the int-sized error as -22, funcgraph-retval-hex as 0xffffffea.
TEST(Diff, RetvalHexAndDecimalOfTheSameErrnoAreNoChange) {
    const std::string dec =
        " 1)               |    cgroup_migrate() {\n"
        " 1)   0.651 us    |      cgroup_migrate_add_task(); /* = 0xffff93fcfd346c00 */\n"
        " 1)   4.369 us    |      cgroup_migrate_execute(); /* = -22 */\n"
        " 1)   7.143 us    |    } /* cgroup_migrate = -22 */\n";
    std::string hex = dec;
    for (std::size_t at; (at = hex.find("-22")) != std::string::npos;)
        hex.replace(at, 3, "0xffffffea");
    auto sa = read_fgraph_text(dec, "rv1");
    auto sb = read_fgraph_text(hex, "rv2");
    ASSERT_TRUE(sa && sb);
    DiffOptions o;
    o.keep_unchanged = true;
    DiffResult d = diff_reports(build_report(*sa), build_report(*sb), o);
    EXPECT_TRUE(d.retvals_compared);
    EXPECT_EQ(d.summary.retval_changes, 0u);
    EXPECT_FALSE(d.summary.any());
    const DiffNode* n = find(d.roots, "cgroup_migrate");
    ASSERT_TRUE(n);
    EXPECT_EQ(n->b->retvals.count("-22 (EINVAL)"), 1u);
}

TEST(Diff, Only32BitErrorPatternsAreReadAsErrno) {
    Report a = fixture("baseline");
    Report b = a;
    for (auto& c : a.calls)
        if (c.function == "nvidia_ioctl") c.retval = 0xfffff000;  // -4096: not an errno, a 32-bit value
    for (auto& c : b.calls)
        if (c.function == "nvidia_ioctl") c.retval = 0x1fffffffea;  // upper half not zero: not an int
    DiffResult d = diff_reports(a, b, {});
    const DiffNode* n = find(d.roots, "nvidia_unlocked_ioctl > nvidia_ioctl");
    ASSERT_TRUE(n);
    EXPECT_EQ(n->a->retvals.count("4294963200 (0xfffff000)"), 1u);
    EXPECT_EQ(n->b->retvals.count("pointer"), 1u);
}

TEST(Diff, PointerRetvalsAreOneClass) {
    Report a = fixture("baseline");
    Report b = a;
    std::int64_t p = -0x7e0000000000;  // kernel pointers read as negative int64
    for (auto& c : a.calls)
        if (c.function == "os_alloc_mem") c.retval = p--;
    for (auto& c : b.calls)
        if (c.function == "os_alloc_mem") c.retval = p--;
    EXPECT_FALSE(diff_reports(a, b, {}).summary.any());
}

TEST(Diff, RenamesAlignDriverVersions) {
    DiffResult raw = diff("renamed_535", "baseline");
    EXPECT_EQ(raw.summary.removed_paths, 1u);  // nvidia_frontend_unlocked_ioctl (both RM ioctls: one root path)
    EXPECT_EQ(raw.summary.added_paths, 1u);    // nvidia_unlocked_ioctl
    DiffOptions o;
    o.renames = {{"nvidia_frontend_unlocked_ioctl", "nvidia_unlocked_ioctl"}, {"nvidia_frontend_ioctl", ""}};
    DiffResult d = diff("renamed_535", "baseline", o);
    EXPECT_FALSE(d.summary.any()) << format_diff_text(d);
}

TEST(Diff, UpgradeExampleFindsEverything) {
    DiffOptions o;
    o.renames = {{"nvidia_frontend_unlocked_ioctl", "nvidia_unlocked_ioctl"}, {"nvidia_frontend_ioctl", ""}};
    DiffResult d = diff("renamed_535", "driver_upgrade", o);
    EXPECT_EQ(d.summary.added_paths, 1u);
    EXPECT_EQ(d.summary.removed_paths, 1u);
    EXPECT_EQ(d.summary.count_changes, 1u);
    EXPECT_EQ(d.summary.retval_changes, 1u);
    EXPECT_GE(d.summary.time_changes, 1u);
    // Sorted by impact: the UVM path (its subtree lost 40 us) comes before the RM ioctls.
    ASSERT_GE(d.roots.size(), 2u);
    EXPECT_GE(d.roots[0].impact_ns, d.roots[1].impact_ns);
    std::function<void(const std::vector<DiffNode>&)> sorted = [&](const std::vector<DiffNode>& v) {
        for (std::size_t i = 1; i < v.size(); ++i)
            EXPECT_GE(v[i - 1].impact_ns, v[i].impact_ns) << v[i].path;
        for (const auto& n : v)
            sorted(n.children);
    };
    sorted(d.roots);
}

TEST(Diff, PhaseRestricts) {
    DiffOptions o;
    o.phase = "cudaMalloc";
    DiffResult d = diff("baseline", "added_path", o);
    EXPECT_EQ(d.summary.added_paths, 1u);
    EXPECT_EQ(d.a.phases, std::vector<std::string>{"cudaMalloc"});
    o.phase = "cudaFree";
    DiffResult none = diff("baseline", "added_path", o);
    EXPECT_EQ(none.a.calls, 0u);
    EXPECT_FALSE(none.summary.any());
}

// `nvtrace diff mk1 mk1 --phase one` on a run without function_graph said "(phases: none)" though its
// ioctls and markers were in phases one and two.
TEST(Diff, PhasesComeFromMarkersIoctlsAndCalls) {
    Report r = fixture("baseline");
    r.calls.clear();
    r.graph.clear();
    for (std::size_t i = 0; i < r.ioctls.size(); ++i) {
        r.ioctls[i].call.reset();
        r.ioctls[i].calls.clear();
        r.ioctls[i].phase = i == 0 ? "one" : "two";
    }
    r.markers = {{100, 1, "nvtrace-phase: one"},
                 {200, 1, "nvtrace-phase: two"},
                 {300, 1, "nvtrace-phase-end"},
                 {400, 1, "nvtrace-phase: three"}};
    DiffOptions o;
    o.phase = "one";
    DiffResult d = diff_reports(r, r, o);
    d.a.label = "mk1";
    EXPECT_EQ(d.a.calls, 0u);
    EXPECT_EQ(d.a.phases, (std::vector<std::string>{"one", "three", "two"}));
    EXPECT_TRUE(d.a.call_phases.empty());
    EXPECT_EQ(describe_empty_phase(d.a, "one"),
              "mk1: no calls in phase 'one' (the report has no calls: function_graph was not traced; phases of "
              "its markers and ioctls: one, three, two)");
}

// diff read a marker's text after "nvtrace-phase: " whole, so one write of two lines listed a phase named
// "one\nnvtrace-phase: two\n" and "three \r" kept its trailing blanks, unlike the phases the report's calls got.
TEST(Diff, PhasesOfAMarkerOfSeveralLinesAreEachListedWithoutTrailingBlanks) {
    Report r = fixture("baseline");
    r.calls.clear();
    r.graph.clear();
    for (auto& io : r.ioctls) {
        io.call.reset();
        io.calls.clear();
        io.phase.reset();
    }
    r.markers = {{100, 1, "nvtrace-phase: one\nnvtrace-phase: two\n"}, {400, 1, "nvtrace-phase: three \r"}};
    DiffResult d = diff_reports(r, r, DiffOptions{});
    EXPECT_EQ(d.a.phases, (std::vector<std::string>{"one", "three", "two"}));
}

TEST(Diff, EmptyPhaseMessageSaysWhetherThePhaseExists) {
    DiffOptions o;
    o.phase = "nope";
    DiffResult d = diff("baseline", "baseline", o);
    d.a.label = "A";
    EXPECT_EQ(d.a.calls, 0u);
    EXPECT_EQ(d.a.phases, std::vector<std::string>{"cudaMalloc"});
    EXPECT_EQ(describe_empty_phase(d.a, "nope"), "A: no phase 'nope' in the report (phases: cudaMalloc)");
    // A phase that exists (from a marker) but holds no calls.
    Report r = fixture("baseline");
    r.markers.push_back({1, 1, "nvtrace-phase: later"});
    o.phase = "later";
    DiffResult e = diff_reports(r, r, o);
    e.a.label = "A";
    EXPECT_EQ(describe_empty_phase(e.a, "later"),
              "A: no calls in phase 'later' (phases: cudaMalloc, later; with calls: cudaMalloc)");
}

TEST(Diff, IgnoreGlobDropsSubtrees) {
    DiffOptions o;
    o.ignore = {"nv_check_*"};
    EXPECT_FALSE(diff("baseline", "added_path", o).summary.any());
}

TEST(Diff, KeepUnchangedKeepsEveryPath) {
    DiffOptions o;
    o.keep_unchanged = true;
    DiffResult d = diff("baseline", "baseline", o);
    EXPECT_EQ(d.roots.size(), 3u);  // nvidia_unlocked_ioctl, uvm_ioctl, [irq]
    EXPECT_TRUE(find(d.roots, "[irq] > smp_apic_timer_interrupt"));
}

// The [irq] pseudo-root is no call: its row printed "0 -> 0  0.000 us  0.000 us  +0.000 us" above an interrupt of
// several us (fresh user). It shows '-' for count and time.
TEST(Diff, IrqPseudoRootRowHasNoCountOrTime) {
    DiffOptions o;
    o.keep_unchanged = true;
    const std::string text = format_diff_text(diff("baseline", "baseline", o));
    std::istringstream in(text);
    std::string line, irq;
    while (std::getline(in, line))
        if (line.size() > 6 && line.substr(line.size() - 6) == " [irq]") irq = line;
    ASSERT_FALSE(irq.empty()) << text;
    EXPECT_EQ(irq.find("0.000"), std::string::npos) << irq;
    EXPECT_NE(irq.find("-> -"), std::string::npos) << irq;
}

TEST(Diff, JsonShape) {
    DiffResult d = diff("baseline", "added_path");
    d.a.label = "a.json";
    nlohmann::json j = to_json(d);
    EXPECT_EQ(j["schema"], kDiffSchema);
    EXPECT_EQ(j["a"]["input"], "a.json");
    EXPECT_EQ(j["summary"]["added_paths"], 1);
    EXPECT_EQ(j["summary"]["structural_change"], true);
    ASSERT_EQ(j["changes"].size(), 1u);  // the top of the added subtree only
    EXPECT_EQ(j["changes"][0]["status"], "added");
    EXPECT_EQ(j["tree"][0]["status"], "context");
    EXPECT_EQ(j["options"]["irq"], "hoisted");
}

TEST(Diff, TextMarks) {
    std::string added = format_diff_text(diff("baseline", "added_path"));
    EXPECT_NE(added.find("\n+ "), std::string::npos) << added;
    EXPECT_NE(added.find("nv_check_bar_overlap"), std::string::npos);
    std::string removed = format_diff_text(diff("baseline", "removed_path"));
    EXPECT_NE(removed.find("\n- "), std::string::npos) << removed;
    std::string changed = format_diff_text(diff("baseline", "count_change"));
    EXPECT_NE(changed.find("\n~ "), std::string::npos) << changed;
    EXPECT_NE(changed.find("[calls +4]"), std::string::npos) << changed;
    std::string none = format_diff_text(diff("baseline", "noise"));
    EXPECT_NE(none.find("no change"), std::string::npos) << none;
}

// build_trie finds a parent by position when the ids are 1..N in order (every report nvtrace writes) and through
// a map otherwise: a report whose ids are sparse and not in order must give the same diff as the same calls
// numbered 1..N.
TEST(Diff, SparseUnorderedCallIdsGiveTheSameDiffAsDenseOnes) {
    DiffOptions o;
    o.renames = {{"nvidia_frontend_unlocked_ioctl", "nvidia_unlocked_ioctl"}, {"nvidia_frontend_ioctl", ""}};
    Report a = fixture("renamed_535");
    Report b = fixture("driver_upgrade");
    DiffResult dense = diff_reports(a, b, o);
    ASSERT_GT(b.calls.size(), 2u);
    for (std::size_t i = 0; i < b.calls.size(); ++i)
        ASSERT_EQ(b.calls[i].id, i + 1) << "the fixture is expected to number its calls 1..N";
    // id k becomes 1000 - 7k: decreasing, so no id is its position + 1, and parents still come first.
    auto renumber = [](std::uint64_t id) { return 1000 - 7 * id; };
    for (Call& c : b.calls) {
        c.id = renumber(c.id);
        if (c.parent) c.parent = renumber(*c.parent);
    }
    DiffResult sparse = diff_reports(a, b, o);
    EXPECT_EQ(to_json(sparse), to_json(dense));
    EXPECT_EQ(sparse.summary.added_paths, 1u);
    EXPECT_EQ(sparse.summary.removed_paths, 1u);
}

namespace {

const char* const kFixtures[] = {"baseline",      "noise",       "added_path",     "removed_path", "count_change",
                                 "retval_change", "time_change", "driver_upgrade", "renamed_535"};

std::string fixture_path(const std::string& name) {
    return std::string(NVTRACE_TEST_DATA) + "/reports/" + name + ".json";
}

// The diff as `nvtrace diff` makes it: each report's calls folded into its DiffCalls while the file is read.
DiffResult diff_streamed(const std::string& path_a, const std::string& path_b, const DiffOptions& o) {
    DiffCalls ca(o), cb(o);
    auto ra = load_report(open_input(path_a).value(), [&](Call&& c) { ca.add(c); });
    auto rb = load_report(open_input(path_b).value(), [&](Call&& c) { cb.add(c); });
    if (!ra) throw std::runtime_error(ra.error().message);
    if (!rb) throw std::runtime_error(rb.error().message);
    EXPECT_TRUE(ra->calls.empty() && rb->calls.empty()) << "a sink's calls are not held";
    return diff_reports(*ra, std::move(ca), *rb, std::move(cb), o);
}

}  // namespace

// nvtrace diff folds each report's calls as they are read (read_report_file's sink, DiffCalls) instead of holding
// two Reports: on every pair of fixtures and with each option that changes the fold (phase, renames that collapse
// a frame, ignore globs, irq nesting, unchanged paths), the text and the JSON are those of the held reports'.
TEST(Diff, CallsFoldedWhileReadingGiveTheSameDiffAsHeldReports) {
    std::vector<DiffOptions> options(6);
    options[1].renames = {{"nvidia_frontend_unlocked_ioctl", "nvidia_unlocked_ioctl"}, {"nvidia_frontend_ioctl", ""}};
    options[2].ignore = {"uvm_*"};
    options[3].keep_irq_nesting = true;
    options[4].keep_unchanged = true;
    options[5].threshold = DiffThreshold{0, 0.0};
    std::size_t compared = 0;
    for (const char* a : kFixtures)
        for (const char* b : kFixtures)
            for (const DiffOptions& o : options) {
                SCOPED_TRACE(std::string(a) + " vs " + b);
                DiffResult held = diff_reports(fixture(a), fixture(b), o);
                DiffResult streamed = diff_streamed(fixture_path(a), fixture_path(b), o);
                EXPECT_EQ(to_json(streamed).dump(1), to_json(held).dump(1));
                EXPECT_EQ(format_diff_text(streamed), format_diff_text(held));
                EXPECT_EQ(streamed.a.report_calls, fixture(a).calls.size());
                ++compared;
            }
    EXPECT_EQ(compared, 9u * 9u * 6u);
    // A trace file (built whole, then its calls given to the sink) against a saved report, and a phase.
    const std::string trace = std::string(NVTRACE_TEST_DATA) + "/cases/fgraph-irq-nested-module-suffix.txt";
    auto held_trace = load_report_input(trace);
    ASSERT_TRUE(held_trace) << held_trace.error().message;
    ASSERT_FALSE(held_trace->calls.empty());
    DiffOptions none;
    EXPECT_EQ(to_json(diff_streamed(trace, fixture_path("baseline"), none)).dump(),
              to_json(diff_reports(*held_trace, fixture("baseline"), none)).dump());
    DiffOptions phase;
    phase.phase = "no-such-phase";
    DiffResult empty = diff_streamed(fixture_path("baseline"), fixture_path("noise"), phase);
    EXPECT_EQ(empty.a.calls, 0u);
    EXPECT_EQ(describe_empty_phase(empty.a, "no-such-phase"),
              describe_empty_phase(diff_reports(fixture("baseline"), fixture("noise"), phase).a, "no-such-phase"));
}

// DiffCalls finds a parent by position while the ids are 1..N and switches to a map of the calls so far at the
// first id that is not: a report whose later calls have sparse ids gives the same diff as the same calls numbered
// 1..N.
TEST(Diff, IdsThatStopBeingPositionsPartWayGiveTheSameDiff) {
    Report a = fixture("baseline");
    Report b = fixture("count_change");
    DiffResult dense = diff_reports(a, b, {});
    const std::uint64_t half = b.calls.size() / 2;
    ASSERT_GT(half, 2u);
    auto renumber = [&](std::uint64_t id) { return id > half ? id * 100 : id; };
    for (Call& c : b.calls) {
        c.id = renumber(c.id);
        if (c.parent) c.parent = renumber(*c.parent);
    }
    DiffCalls ca({}), cb({});
    for (const Call& c : a.calls)
        ca.add(c);
    for (const Call& c : b.calls)
        cb.add(c);
    EXPECT_EQ(cb.report_calls(), b.calls.size());
    DiffResult sparse = diff_reports(a, std::move(ca), b, std::move(cb), {});
    EXPECT_EQ(to_json(sparse), to_json(dense));
    EXPECT_GT(sparse.summary.count_changes, 0u);
}

// A function name holding a newline started a row of its own in the text form ("+ - -> 9 FAKE ROW" looked like an
// added path), and an escape sequence reached the terminal: control bytes are shown as \xNN.
TEST(Diff, ControlBytesInNamesCannotForgeRowsOfTheText) {
    Report a = fixture("baseline");
    Report b = a;
    b.calls.back().function = "evil\n+      - -> 9      FAKE ROW\x1b[2J";
    b.environment.kernel = "6.1\nWARNING";
    const std::string text = format_diff_text(diff_reports(a, b, {}));
    EXPECT_EQ(text.find("\n+      - -> 9      FAKE"), std::string::npos) << text;
    EXPECT_EQ(text.find('\x1b'), std::string::npos);
    EXPECT_NE(text.find("evil\\x0a+      - -> 9      FAKE ROW\\x1b[2J"), std::string::npos) << text;
    EXPECT_NE(text.find("kernel 6.1\\x0aWARNING"), std::string::npos) << text;
}

// A call whose duration is unknown (its exit was not seen: the trace ends inside it, or its return was lost) was
// summed as 0 ns: uvm_ioctl went from 60 us to "0.000 us", a "-100.0%" time change. Each shape below leaves a
// duration unknown in its own way; the path's total, self time and delta must be unknown with the reason, never a
// number, and no time change may be claimed.
TEST(Diff, CallWithoutADurationKeepsItsTimeUnknownNotZero) {
    const Report base = fixture("baseline");
    auto without_duration = [&](std::initializer_list<const char*> functions, bool exit_seen) {
        Report r = base;
        for (Call& c : r.calls)
            for (const char* f : functions)
                if (c.function == f) {
                    c.duration_ns.reset();
                    c.exit_seen = exit_seen;
                }
        return r;
    };
    // 1. B's trace ends inside uvm_ioctl and its child (exit not seen, as a truncated function_graph text gives).
    Report truncated = without_duration({"uvm_ioctl", "uvm_api_map_external_allocation"}, false);
    DiffResult d = diff_reports(base, truncated, DiffOptions{});
    const DiffNode* n = find(d.roots, "uvm_ioctl");
    ASSERT_TRUE(n) << format_diff_text(d);
    EXPECT_FALSE(n->time_changed);
    EXPECT_EQ(n->status, DiffStatus::context);  // shown (its time is unknown), not a change
    EXPECT_FALSE(n->delta_total_ns);
    EXPECT_FALSE(n->rel_total);
    EXPECT_FALSE(n->b->total_ns);
    EXPECT_FALSE(n->b->self_ns);
    EXPECT_EQ(n->a->total_ns, 60000u);
    ASSERT_TRUE(n->time_unknown);
    EXPECT_EQ(*n->time_unknown, "B: 1 of 1 call without a duration (exit not seen)");
    EXPECT_EQ(d.summary.time_changes, 0u);
    EXPECT_EQ(d.summary.time_unknown, 2u);
    EXPECT_FALSE(d.summary.any());
    // The grandchild, whose duration is known and unchanged, is pruned as before.
    EXPECT_FALSE(find(d.roots, kUvmGpu)) << format_diff_text(d);
    std::string text = format_diff_text(d);
    EXPECT_EQ(text.find("-100.0%"), std::string::npos) << text;
    EXPECT_EQ(text.find(" 0.000 us"), std::string::npos) << text;
    EXPECT_NE(text.find("60.000 us      unknown                unknown  uvm_ioctl  [time unknown: B: 1 of 1 call "
                        "without a duration (exit not seen)]"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find(", 2 path(s) whose time is unknown"), std::string::npos) << text;
    nlohmann::json j = to_json(d);
    const nlohmann::json& top = j["tree"][0];
    EXPECT_EQ(top["path"], "uvm_ioctl");
    EXPECT_TRUE(top["b"]["total_ns"].is_null());
    EXPECT_TRUE(top["b"]["self_ns"].is_null());
    EXPECT_TRUE(top["b"]["max_ns"].is_null());
    EXPECT_EQ(top["b"]["time_unknown"], "1 of 1 call without a duration (exit not seen)");
    EXPECT_TRUE(top["delta"]["total_ns"].is_null());
    EXPECT_TRUE(top["delta"]["total_rel"].is_null());
    EXPECT_EQ(top["delta"]["time_unknown"], "B: 1 of 1 call without a duration (exit not seen)");
    EXPECT_EQ(j["summary"]["time_unknown"], 2);
    EXPECT_EQ(j["summary"]["time_changes"], 0);

    // 2. The same in A (the reverse diff): +100% would be just as false.
    DiffResult r = diff_reports(truncated, base, DiffOptions{});
    n = find(r.roots, "uvm_ioctl");
    ASSERT_TRUE(n);
    EXPECT_FALSE(n->delta_total_ns);
    EXPECT_EQ(*n->time_unknown, "A: 1 of 1 call without a duration (exit not seen)");
    EXPECT_EQ(r.summary.time_changes, 0u);

    // 3. Only a child's duration is unknown (its exit seen but no duration recorded, as the function tracer gives):
    // the parent's total is known and compared, its self time is not.
    Report child = without_duration({"uvm_map_external_allocation_on_gpu"}, true);
    DiffOptions all;
    all.keep_unchanged = true;
    DiffResult c = diff_reports(base, child, all);
    const DiffNode* parent = find(c.roots, "uvm_ioctl > uvm_api_map_external_allocation");
    ASSERT_TRUE(parent);
    EXPECT_EQ(parent->b->total_ns, 55000u);
    EXPECT_FALSE(parent->b->self_ns);
    EXPECT_EQ(parent->delta_total_ns, 0);
    EXPECT_FALSE(parent->delta_self_ns);
    EXPECT_FALSE(parent->time_unknown);
    n = find(c.roots, kUvmGpu);
    ASSERT_TRUE(n);
    EXPECT_EQ(*n->time_unknown, "B: 1 of 1 call without a duration (no duration recorded)");

    // 4. Some of a path's calls have a duration and some not: the sum of the known ones is not the total.
    Report some = base;
    for (Call& c2 : some.calls)
        if (c2.function == "nv_get_kern_phys_address" && c2.id == 18) {
            c2.duration_ns.reset();
            c2.exit_seen = false;
        }
    DiffResult s = diff_reports(base, some, DiffOptions{});
    n = find(s.roots,
             "nvidia_unlocked_ioctl > nvidia_ioctl > rm_ioctl > nv_alloc_pages > nv_alloc_contig_pages > "
             "nv_get_kern_phys_address");
    ASSERT_TRUE(n) << format_diff_text(s);
    EXPECT_FALSE(n->b->total_ns);
    EXPECT_EQ(n->b->known_total_ns, 3000u);
    EXPECT_EQ(*n->time_unknown, "B: 1 of 4 calls without a duration (exit not seen)");

    // 5. An added path whose duration is unknown: its total is unknown, not 0, and the row says why.
    Report added = base;
    Call extra = added.calls.back();
    extra.id = added.calls.size() + 1;
    extra.parent = 24;
    extra.function = "uvm_pmm_chunk_alloc";
    extra.duration_ns.reset();
    extra.exit_seen = false;
    added.calls.push_back(extra);
    DiffResult a = diff_reports(base, added, DiffOptions{});
    n = find(a.roots, std::string(kUvmGpu) + " > uvm_pmm_gpu_alloc > uvm_pmm_chunk_alloc");
    ASSERT_TRUE(n) << format_diff_text(a);
    EXPECT_EQ(n->status, DiffStatus::added);
    EXPECT_FALSE(n->delta_total_ns);
    text = format_diff_text(a);
    EXPECT_NE(text.find("unknown  "
                        "        uvm_pmm_chunk_alloc  [time unknown: 1 of 1 call without a duration"),
              std::string::npos)
        << text;
}

// A damaged report's duration of 2^64-1 ns (or durations whose sum passes 2^63-1 ns) wrapped in the sums and the
// signed delta: a total is never past 2^63-1 ns (292 years), so such a total is unknown with the reason.
TEST(Diff, DurationSumsPast2To63AreUnknownNotWrapped) {
    const Report base = fixture("baseline");
    for (std::uint64_t huge :
         {std::numeric_limits<std::uint64_t>::max(), std::uint64_t{1} << 63, (std::uint64_t{1} << 62) + 1}) {
        Report r = base;
        // uvm_ioctl and its child: 2^62+1 twice passes 2^63-1 only in the parent's sum with its sibling calls.
        for (Call& c : r.calls)
            if (c.function == "uvm_ioctl" || c.function == "uvm_api_map_external_allocation") c.duration_ns = huge;
        Report twice = r;  // a second uvm_ioctl tree: the sums of two such calls overflow
        for (const Call& c : r.calls)
            if (c.id >= 21) {
                Call k = c;
                k.id = c.id + 4;
                if (k.parent) *k.parent += 4;
                twice.calls.push_back(k);
            }
        DiffResult d = diff_reports(base, twice, DiffOptions{});
        const DiffNode* n = find(d.roots, "uvm_ioctl");
        ASSERT_TRUE(n) << huge << "\n" << format_diff_text(d);
        EXPECT_FALSE(n->b->total_ns) << huge;
        EXPECT_TRUE(n->b->overflow);
        EXPECT_FALSE(n->delta_total_ns);
        ASSERT_TRUE(n->time_unknown);
        EXPECT_EQ(*n->time_unknown, "B: the durations sum past 2^63-1 ns (292 years): not a real duration");
        EXPECT_EQ(n->b->known_total_ns, kDiffMaxTotalNs);
        std::string text = format_diff_text(d);
        EXPECT_NE(text.find("unknown  uvm_ioctl  [calls +1, time unknown: B: the durations sum past"),
                  std::string::npos)
            << text;
    }
}

// A report without calls (strace output, a kernel log, a run without function tracing) against one with a
// function_graph call tree showed every path as added: a difference of what was traced, not of what the kernel
// did (fleet says "not compared" for the same pair). Each input without a call graph, against the call tree and
// in both orders, leaves the paths uncompared and says which side has no call graph and why.
TEST(Diff, ReportWithoutCallsAgainstACallGraphDoesNotCompareCallPaths) {
    const Report graph = fixture("baseline");
    struct Case {
        const char* file;
        const char* why;
        bool records_ioctls;  // strace shows every ioctl made; a kernel log holds no syscall at all
    };
    for (const Case& k :
         {Case{"cases/strace-uvm-eperm-ioc0-stdout-interleave.txt", "its input (strace) records no calls", true},
          Case{"cases/nvrm-xid79-fallen-off-bus-continuation.log", "records no calls", false}}) {
        auto none = load_report_input(std::string(NVTRACE_TEST_DATA) + "/" + k.file);
        ASSERT_TRUE(none) << none.error().message;
        ASSERT_TRUE(none->calls.empty());
        for (bool none_is_b : {true, false}) {
            DiffResult d =
                none_is_b ? diff_reports(graph, *none, DiffOptions{}) : diff_reports(*none, graph, DiffOptions{});
            d.a.label = none_is_b ? "graph.json" : k.file;
            d.b.label = none_is_b ? k.file : "graph.json";
            EXPECT_FALSE(d.calls_compared) << k.file;
            EXPECT_TRUE(d.roots.empty());
            EXPECT_EQ(d.summary.added_paths + d.summary.removed_paths, 0u) << k.file;
            EXPECT_FALSE(d.summary.any());
            std::string text = format_diff_text(d);
            const std::string side = none_is_b ? "B" : "A";
            EXPECT_NE(text.find("#  call paths not compared: " + side + " " + k.file + " has no call graph ("),
                      std::string::npos)
                << text;
            EXPECT_NE(text.find(k.why), std::string::npos) << text;
            if (k.records_ioctls) {
                EXPECT_NE(text.find("graph.json has 24 calls: only the ioctls are compared"), std::string::npos)
                    << text;
            } else {
                EXPECT_NE(text.find("graph.json has 24 calls\n"), std::string::npos) << text;
                EXPECT_NE(text.find("#  ioctls not compared: " + side + " " + k.file +
                                    " has none (its input (kernel-log) recorded no ioctl and need not record "
                                    "syscalls: whether ioctls were made is unknown)"),
                          std::string::npos)
                    << text;
            }
            // No row of the call tree (the ioctl section after it has its own + and - rows).
            const std::string tree_part = text.substr(0, text.find("# ioctls by"));
            EXPECT_EQ(tree_part.find("\n+ "), std::string::npos) << text;
            EXPECT_EQ(tree_part.find("\n- "), std::string::npos) << text;
            nlohmann::json j = to_json(d);
            EXPECT_EQ(j["calls_compared"], false);
            EXPECT_EQ(j["calls_not_compared"].get<std::string>().rfind(
                          none_is_b ? "b has no call graph: " : "a has no call graph: ", 0),
                      0u)
                << j["calls_not_compared"];
            EXPECT_TRUE(j["tree"].empty());
        }
    }
    // A run traced without function_graph (tracer events) is named by its tracer.
    Report events = graph;
    events.calls.clear();
    events.graph.clear();
    events.source.tracer_mode = "events";
    DiffResult d = diff_reports(graph, events, DiffOptions{});
    EXPECT_FALSE(d.calls_compared);
    EXPECT_NE(format_diff_text(d).find("it was traced with tracer events (no function_graph)"), std::string::npos)
        << format_diff_text(d);
    // Two reports with calls, and two without, are compared as before (the latter by their ioctls alone).
    EXPECT_TRUE(diff_reports(graph, graph, DiffOptions{}).calls_compared);
    EXPECT_TRUE(diff_reports(events, events, DiffOptions{}).calls_compared);
    EXPECT_FALSE(to_json(diff_reports(graph, graph, DiffOptions{})).contains("calls_compared"));
}

// A function_graph text records calls but no syscall: diffed against a report with ioctls, every request was
// "removed" (a difference of what was traced, not of what the driver did). Its ioctls are not compared, and the
// text and JSON say why; the call paths still are.
TEST(Diff, IoctlsOfAnInputThatRecordsNoSyscallsAreNotComparedNotRemoved) {
    const Report graph = fixture("baseline");
    ASSERT_FALSE(graph.ioctl_stats.empty());
    auto text_trace = load_report_input(std::string(NVTRACE_TEST_DATA) + "/cases/fgraph-abstime-orphan-close.txt");
    ASSERT_TRUE(text_trace) << text_trace.error().message;
    ASSERT_FALSE(text_trace->calls.empty());
    ASSERT_TRUE(text_trace->ioctls.empty());
    for (bool trace_is_b : {true, false}) {
        DiffResult d = trace_is_b ? diff_reports(graph, *text_trace, DiffOptions{})
                                  : diff_reports(*text_trace, graph, DiffOptions{});
        d.a.label = trace_is_b ? "graph.json" : "trace.txt";
        d.b.label = trace_is_b ? "trace.txt" : "graph.json";
        EXPECT_TRUE(d.calls_compared);
        EXPECT_FALSE(d.ioctls_compared);
        EXPECT_EQ(d.ioctls_unrecorded, trace_is_b ? 'b' : 'a');
        EXPECT_TRUE(d.ioctls.empty());
        EXPECT_EQ(d.ioctl_summary.removed + d.ioctl_summary.added, 0u);
        const std::string text = format_diff_text(d);
        EXPECT_NE(text.find(std::string("#  ioctls not compared: ") + (trace_is_b ? "B" : "A") +
                            " trace.txt has none (its input (fgraph-text) recorded no ioctl and need not record "
                            "syscalls: whether ioctls were made is unknown)"),
                  std::string::npos)
            << text;
        EXPECT_EQ(text.find("# ioctls by"), std::string::npos) << text;
        nlohmann::json j = to_json(d);
        EXPECT_EQ(j["ioctls"]["compared"], false);
        EXPECT_EQ(j["ioctls"]["not_compared"].get<std::string>().rfind(trace_is_b ? "b has no ioctls: "
                                                                                  : "a has no "
                                                                                    "ioctls: ",
                                                                       0),
                  0u)
            << j["ioctls"];
    }
    // strace records every ioctl a program made: one without any is compared (its requests are "added" in B).
    Report strace_none = graph;
    strace_none.ioctls.clear();
    strace_none.ioctl_stats.clear();
    strace_none.source.kind = "file";
    strace_none.source.format = "strace";
    EXPECT_TRUE(diff_reports(strace_none, graph, DiffOptions{}).ioctls_compared);
    EXPECT_EQ(diff_reports(strace_none, graph, DiffOptions{}).ioctls_unrecorded, 0);
}
