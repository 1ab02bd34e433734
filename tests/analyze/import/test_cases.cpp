// Real inputs (tests/data/cases, copies of ../shared/cases): every value ../shared/cases/README.md lists
// for the files of the import readers, asserted by hand, plus a golden report per file
// (tests/data/golden/<case>.json; NVTRACE_UPDATE_GOLDEN=1 ctest -R golden regenerates them).
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "nvtrace/import.hpp"
#include "nvtrace/report.hpp"

using namespace nvtrace;

namespace {

const std::string kData = NVTRACE_TEST_DATA;

struct Loaded {
    ImportResult in;
    Report report;
};

Loaded load(const std::string& name) {
    auto r = import_file(kData + "/cases/" + name);
    if (!r) ADD_FAILURE() << r.error().message;
    Loaded l{r ? std::move(*r) : ImportResult{}, {}};
    l.in.stream.file_name = name;  // the goldens name the case, not this checkout's path
    l.report = build_report(l.in.stream);
    l.report.source = {{"kind", "file"}, {"path", name}, {"format", std::string(format_name(l.in.format))}};
    return l;
}

// The n-th call (0-based) of `fn`.
const Call* call(const Report& r, std::string_view fn, int nth = 0) {
    for (const Call& c : r.calls)
        if (c.function == fn && nth-- == 0) return &c;
    return nullptr;
}

int max_depth(const EventStream& s) {
    int d = -1;
    for (const Event& e : s.events) {
        if (auto* x = std::get_if<FuncEntry>(&e.body)) d = std::max(d, x->depth);
        if (auto* x = std::get_if<FuncExit>(&e.body)) d = std::max(d, x->depth);
    }
    return d;
}

std::set<int> cpus(const EventStream& s) {
    std::set<int> c;
    for (const Event& e : s.events)
        c.insert(e.cpu);
    return c;
}

std::vector<const OtherEvent*> others(const EventStream& s, std::string_view name) {
    std::vector<const OtherEvent*> v;
    for (const Event& e : s.events)
        if (auto* o = std::get_if<OtherEvent>(&e.body); o && o->name == name) v.push_back(o);
    return v;
}

std::vector<std::string> markers(const EventStream& s) {
    std::vector<std::string> v;
    for (const Event& e : s.events)
        if (auto* m = std::get_if<Marker>(&e.body)) v.push_back(m->text);
    return v;
}

constexpr std::uint64_t us(double v) {
    return static_cast<std::uint64_t>(v * 1000.0 + 0.5);
}

}  // namespace

TEST(ImportCases, TaskSwitchMidSchedule) {
    auto l = load("fgraph-task-switch-mid-schedule.txt");
    const Report& r = l.report;
    EXPECT_EQ(l.in.format, TraceFormat::fgraph_text);
    EXPECT_EQ(cpus(l.in.stream), std::set<int>{0});
    auto sw = others(l.in.stream, "task_switch");
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0]->fields, "prev_comm=platfor prev_pid=3210 next_comm=vmstat next_pid=2854");
    EXPECT_EQ(l.in.stream.comms.at(3210), "platfor");
    EXPECT_EQ(l.in.stream.comms.at(2854), "vmstat");
    // The excerpt starts mid-tree: two returns with no opener (depth 4, then 3); the depth-3 one is the
    // parent of the depth-4 one, and both wait for their ids until nothing can adopt them.
    std::vector<const Call*> orphans;
    for (const Call& c : r.calls)
        if (!c.entry_seen) orphans.push_back(&c);
    ASSERT_EQ(orphans.size(), 2u);
    EXPECT_EQ(orphans[0]->duration_ns, us(1.367));
    EXPECT_FALSE(orphans[0]->parent);
    EXPECT_EQ(orphans[1]->duration_ns, us(0.737));
    EXPECT_EQ(orphans[1]->parent, orphans[0]->id);
    EXPECT_EQ(orphans[1]->depth, 1);
    EXPECT_EQ(r.completeness.orphan_returns, 2u);
    // The lines before the banner ran as the task switched out.
    EXPECT_EQ(orphans[0]->pid, 3210);
    EXPECT_EQ(orphans[1]->pid, 3210);
    const Call* tls = call(r, "load_TLS_descriptor", 1);
    ASSERT_TRUE(tls);
    EXPECT_EQ(tls->duration_ns, us(1.583));  // "} /* load_TLS_descriptor */"
    EXPECT_TRUE(tls->entry_seen);
    // After the switch: a fresh root for the new task.
    const Call* ns = call(r, "do_nanosleep");
    ASSERT_TRUE(ns);
    EXPECT_FALSE(ns->parent);
    EXPECT_FALSE(ns->exit_seen);
    EXPECT_EQ(ns->pid, 2854);
    EXPECT_EQ(ns->comm, "vmstat");
    const Call* hs = call(r, "hrtimer_start_range_ns");
    ASSERT_TRUE(hs);
    EXPECT_EQ(hs->parent, ns->id);
    EXPECT_EQ(hs->duration_ns, us(4.523));
    const Call* hs2 = call(r, "__hrtimer_start_range_ns");
    ASSERT_TRUE(hs2);
    EXPECT_EQ(hs2->parent, hs->id);
    EXPECT_EQ(hs2->duration_ns, us(4.050));
    const Call* enq = call(r, "enqueue_hrtimer");
    ASSERT_TRUE(enq);
    EXPECT_EQ(enq->duration_ns, us(1.172));
    EXPECT_EQ(enq->parent, hs2->id);
    EXPECT_EQ(max_depth(l.in.stream), 6);
    EXPECT_FALSE(l.in.stream.events.front().ts_known);
}

TEST(ImportCases, AbstimeOrphanClose) {
    auto l = load("fgraph-abstime-orphan-close.txt");
    const Report& r = l.report;
    EXPECT_TRUE(l.in.stream.events.front().ts_known);
    EXPECT_EQ(l.in.stream.events.front().ts_ns, 7238523638063000u);
    const Call* sched = call(r, "__schedule");
    ASSERT_TRUE(sched);
    EXPECT_FALSE(sched->entry_seen);
    EXPECT_EQ(sched->duration_ns, 19354026000u);
    // The six returns are one chain, vfs_read > tty_read > n_tty_read > schedule_timeout > schedule >
    // __schedule: each orphan is the parent of the one returned before it, one level deeper.
    const Call* inner = sched;
    for (const char* fn : {"schedule", "schedule_timeout", "n_tty_read", "tty_read", "vfs_read"}) {
        const Call* c = nullptr;
        for (const Call& k : r.calls)
            if (k.function == fn && !k.entry_seen) c = &k;
        ASSERT_TRUE(c) << fn;
        EXPECT_EQ(inner->parent, c->id) << fn;
        EXPECT_EQ(inner->depth, c->depth + 1) << fn;
        inner = c;
    }
    EXPECT_FALSE(inner->parent);  // vfs_read, the root
    EXPECT_EQ(sched->depth, 5);
    const Call* vfs = nullptr;  // the second vfs_read, whose entry is in the data
    for (const Call& k : r.calls)
        if (k.function == "vfs_read" && k.entry_seen) vfs = &k;
    ASSERT_TRUE(vfs);
    EXPECT_TRUE(vfs->entry_seen);
    EXPECT_FALSE(vfs->exit_seen);
    EXPECT_FALSE(vfs->parent);
    EXPECT_EQ(vfs->entry_ns, 7238523638156000u);
    const Call* ref = call(r, "tty_ldisc_ref_wait");
    ASSERT_TRUE(ref);
    EXPECT_EQ(ref->duration_ns, us(0.637));
    const Call* ld = call(r, "ldsem_down_read");
    ASSERT_TRUE(ld);
    EXPECT_FALSE(ld->entry_seen);
    EXPECT_EQ(ld->duration_ns, us(0.080));
    EXPECT_EQ(ld->parent, ref->id);
    EXPECT_EQ(max_depth(l.in.stream), 8);
}

TEST(ImportCases, EventsSchedSwitchRpi) {
    auto l = load("fgraph-events-sched-switch-rpi.txt");
    const Report& r = l.report;
    EXPECT_EQ(cpus(l.in.stream), (std::set<int>{0, 3}));
    auto sw = others(l.in.stream, "task_switch");
    ASSERT_EQ(sw.size(), 3u);
    EXPECT_EQ(sw[0]->fields, "prev_comm=kworker prev_pid=32 next_comm=chromiu next_pid=919");
    EXPECT_EQ(sw[1]->fields, "prev_comm=chromiu prev_pid=919 next_comm=kworker next_pid=32");
    EXPECT_EQ(sw[2]->fields, "prev_comm=kworker prev_pid=32 next_comm=irq/17- next_pid=33");
    const Call* root = call(r, "bcm2835_mbox_threaded_irq");
    ASSERT_TRUE(root);
    EXPECT_FALSE(root->parent);
    EXPECT_EQ(root->duration_ns, us(153.437));  // "! 153.437 us" on the last line, no final newline
    EXPECT_EQ(root->cpu, 3);
    EXPECT_EQ(root->pid, 33);
    const Call* leaf = call(r, "bcm2835_mbox_irq");
    ASSERT_TRUE(leaf);
    EXPECT_FALSE(leaf->parent);
    EXPECT_EQ(leaf->duration_ns, us(7.084));
    EXPECT_EQ(leaf->cpu, 0);
    EXPECT_EQ(others(l.in.stream, "irq_handler_entry").size(), 1u);
    EXPECT_EQ(others(l.in.stream, "irq_handler_entry")[0]->fields, "irq=17 name=3f00b880.mailbox");
    EXPECT_EQ(others(l.in.stream, "irq_handler_exit").size(), 1u);
    EXPECT_EQ(others(l.in.stream, "sched_wakeup").size(), 2u);
    ASSERT_EQ(others(l.in.stream, "sched_switch").size(), 2u);
    EXPECT_NE(others(l.in.stream, "sched_switch")[0]->fields.find("==>"), std::string::npos);
    auto m = markers(l.in.stream);
    ASSERT_EQ(m.size(), 2u);
    EXPECT_EQ(m[0], "irq=17, process: irq/17-3f00b880");
    EXPECT_EQ(m[1], "[+] in_interrupt: 0x00000000,preempt_count = 0x00000000, stack=0xb9714000");
    EXPECT_EQ(r.markers.size(), 2u);
    EXPECT_EQ(max_depth(l.in.stream), 0);
    EXPECT_EQ(r.completeness.orphan_returns, 0u);
}

TEST(ImportCases, IrqNestedModuleSuffix) {
    auto l = load("fgraph-irq-nested-module-suffix.txt");
    const Report& r = l.report;
    const Call* root = call(r, "test_proc_show");
    ASSERT_TRUE(root);
    EXPECT_FALSE(root->parent);
    EXPECT_EQ(root->module, "proc");
    EXPECT_EQ(root->duration_ns, us(3975.158));
    const Call* kt = call(r, "kill_time");
    ASSERT_TRUE(kt);
    EXPECT_EQ(kt->module, "proc");
    EXPECT_EQ(kt->duration_ns, us(3971.558));
    const Call* irq = call(r, "smp_apic_timer_interrupt");
    ASSERT_TRUE(irq);
    EXPECT_EQ(irq->duration_ns, us(114.183));
    EXPECT_TRUE(irq->irq);
    EXPECT_EQ(irq->depth, 3);
    const Call* delay = call(r, "delay_tsc");
    ASSERT_TRUE(delay);
    EXPECT_EQ(irq->parent, delay->id);
    EXPECT_FALSE(delay->irq);
    EXPECT_TRUE(call(r, "profile_tick")->irq);
    EXPECT_FALSE(call(r, "kill_moretime")->irq);
    EXPECT_EQ(call(r, "kill_moretime")->duration_ns, us(1985.092));
    EXPECT_EQ(call(r, "kill_moretime")->module, "proc");
    EXPECT_EQ(max_depth(l.in.stream), 9);
    EXPECT_TRUE(r.completeness.complete);
}

TEST(ImportCases, RetvalMergedFormat) {
    auto l = load("fgraph-retval-merged-format.txt");
    const Report& r = l.report;
    EXPECT_EQ(call(r, "cpu_cgroup_can_attach", 0)->retval, -22);
    EXPECT_EQ(call(r, "cpu_cgroup_can_attach", 1)->retval, 0xffffffeaLL);
    const Call* mig = call(r, "cgroup_migrate");
    ASSERT_TRUE(mig);
    EXPECT_EQ(mig->duration_ns, us(7.143));
    EXPECT_EQ(mig->retval, -22);
    EXPECT_EQ(call(r, "sched_rt_can_attach")->retval, 0);
    EXPECT_EQ(static_cast<std::uint64_t>(*call(r, "cgroup_migrate_add_task")->retval), 0xffff93fcfd346c00u);
    EXPECT_EQ(max_depth(l.in.stream), 6);
    // The two runs have different base indents: the roots are at kernel depth 1 and 2.
    int root_depths[2] = {-1, -1};
    int n = 0;
    for (const Event& e : l.in.stream.events)
        if (auto* x = std::get_if<FuncEntry>(&e.body); x && x->function == "cgroup_migrate" && n < 2)
            root_depths[n++] = x->depth;
    EXPECT_EQ(root_depths[0], 1);
    EXPECT_EQ(root_depths[1], 2);
    EXPECT_EQ(r.completeness.orphan_returns, 0u);
}

TEST(ImportCases, OverheadMarkersCpuInterleave) {
    auto l = load("fgraph-overhead-markers-cpu-interleave.txt");
    const Report& r = l.report;
    EXPECT_EQ(cpus(l.in.stream), (std::set<int>{1, 2, 3}));
    const Call* last = nullptr;  // the CPU 2 root close, the last line
    for (const Call& c : r.calls)
        if (c.cpu == 2 && !c.parent && !c.entry_seen) last = &c;
    ASSERT_TRUE(last);
    EXPECT_EQ(last->cpu, 2);
    EXPECT_FALSE(last->entry_seen);
    EXPECT_EQ(last->duration_ns, 3594274000u);  // "$ 3594274 us": over 1 s
    const Call* at = nullptr;
    for (const Call& c : r.calls)
        if (c.duration_ns == 119760200u) at = &c;
    ASSERT_TRUE(at);  // "@ 119760.2 us"
    EXPECT_EQ(at->cpu, 1);
    EXPECT_FALSE(at->entry_seen);
    const Call* spd = call(r, "schedule_preempt_disabled");
    ASSERT_TRUE(spd);
    EXPECT_EQ(spd->duration_ns, 33998590u);  // "* 33998.59 us"
    // CPU 3's closes are one chain under it: schedule > __schedule > __schedule > __switch_to.
    const Call* sch = call(r, "schedule");
    ASSERT_TRUE(sch);
    EXPECT_EQ(sch->parent, spd->id);
    const Call* sw = call(r, "__switch_to");
    ASSERT_TRUE(sw);
    EXPECT_EQ(sw->depth, 4);
    const Call* ipi = call(r, "handle_IPI");
    ASSERT_TRUE(ipi);
    EXPECT_EQ(ipi->cpu, 2);
    EXPECT_TRUE(ipi->entry_seen);
    EXPECT_TRUE(ipi->exit_seen);
    EXPECT_EQ(ipi->duration_ns, us(3.490));
    EXPECT_EQ(call(r, "scheduler_ipi")->parent, ipi->id);
    // Every close except handle_IPI's is an orphan.
    EXPECT_EQ(r.completeness.orphan_returns, 17u);
}

TEST(ImportCases, FuncgraphProcColumn) {
    auto l = load("fgraph-funcgraph-proc-column.txt");
    const Report& r = l.report;
    for (const Event& e : l.in.stream.events)
        EXPECT_EQ(e.pid, 4802);
    EXPECT_EQ(l.in.stream.comms.at(4802), "sh");
    EXPECT_EQ(call(r, "__call_rcu")->duration_ns, us(2.899));
    EXPECT_EQ(call(r, "d_free")->duration_ns, us(5.151));
    EXPECT_EQ(call(r, "d_free")->comm, "sh");
    const Call& orphan = r.calls.back();
    EXPECT_FALSE(orphan.entry_seen);
    EXPECT_EQ(orphan.duration_ns, us(49.370));
    EXPECT_EQ(r.completeness.orphan_returns, 1u);
    int first_depth = -1;
    for (const Event& e : l.in.stream.events)
        if (auto* x = std::get_if<FuncEntry>(&e.body)) {
            first_depth = x->depth;
            break;
        }
    EXPECT_EQ(first_depth, 8);
}

TEST(ImportCases, FunctionTextStacktraceRpi) {
    auto l = load("function-text-stacktrace-rpi.txt");
    EXPECT_EQ(l.in.format, TraceFormat::function_text);
    const EventStream& s = l.in.stream;
    EXPECT_EQ(cpus(s), std::set<int>{0});
    for (const Event& e : s.events) {
        EXPECT_EQ(e.pid, 27338);
        EXPECT_TRUE(e.irq);  // "d.h."
    }
    EXPECT_EQ(s.comms.at(27338), "kworker/0:0");
    // Three records: an event, a function hit, a stack trace.
    ASSERT_EQ(others(s, "irq_handler_entry").size(), 1u);
    EXPECT_EQ(others(s, "irq_handler_entry")[0]->fields, "irq=56 name=dwc_otg");
    auto fn = others(s, "function");
    ASSERT_EQ(fn.size(), 1u);
    EXPECT_EQ(fn[0]->fields, "ip=dwc_otg_common_irq parent_ip=__handle_irq_event_percpu");
    const Event* entry = nullptr;
    for (const Event& e : s.events)
        if (std::holds_alternative<FuncEntry>(e.body)) entry = &e;
    ASSERT_TRUE(entry);
    EXPECT_EQ(std::get<FuncEntry>(entry->body).function, "dwc_otg_common_irq");
    EXPECT_EQ(entry->ts_ns, 6028897809000u);
    auto st = others(s, "kernel_stack");
    ASSERT_EQ(st.size(), 1u);
    std::vector<std::string> frames;
    std::istringstream in(st[0]->fields);
    for (std::string f; std::getline(in, f);)
        frames.push_back(f);
    ASSERT_EQ(frames.size(), 25u);
    EXPECT_EQ(frames.front(), "handle_irq_event");
    EXPECT_EQ(frames.back(), "ret_from_fork");
    ASSERT_EQ(l.report.calls.size(), 1u);
    EXPECT_FALSE(l.report.calls[0].duration_ns);
    EXPECT_EQ(s.diagnostics.size(), 0u);
}

TEST(ImportCases, TraceCmdReportFgraphV6) {
    auto l = load("trace-cmd-report-fgraph-v6.txt");
    EXPECT_EQ(l.in.format, TraceFormat::trace_cmd_report);
    const Report& r = l.report;
    EXPECT_EQ(cpus(l.in.stream), std::set<int>{1});
    for (const Call& c : r.calls) {
        EXPECT_EQ(c.pid, 2564);
        EXPECT_EQ(c.comm, "ruby");
    }
    const Call* open = call(r, "sys_open");
    ASSERT_TRUE(open);
    EXPECT_FALSE(open->parent);
    EXPECT_FALSE(open->exit_seen);
    const Call* dso = call(r, "do_sys_open");
    ASSERT_TRUE(dso);
    EXPECT_EQ(dso->parent, open->id);
    const Call* gn = call(r, "getname");
    ASSERT_TRUE(gn);
    EXPECT_EQ(gn->parent, dso->id);
    EXPECT_EQ(gn->duration_ns, us(32.205));
    const Call* msr = call(r, "__math_state_restore");
    ASSERT_TRUE(msr);
    EXPECT_FALSE(msr->parent);
    EXPECT_EQ(msr->duration_ns, us(7.076));
    EXPECT_EQ(msr->entry_ns, 107227460641000u);
    EXPECT_EQ(call(r, "native_apic_mem_write")->duration_ns, us(10.453));  // "+" on an entry line
    const Call* irq = call(r, "smp_apic_timer_interrupt");
    const Call* walk = call(r, "__link_path_walk");
    ASSERT_TRUE(irq && walk);
    EXPECT_EQ(irq->parent, walk->id);
    EXPECT_TRUE(irq->irq);
    EXPECT_TRUE(call(r, "acpi_pm_read")->irq);
    EXPECT_FALSE(call(r, "dput")->irq);
    EXPECT_FALSE(walk->irq);
    EXPECT_EQ(max_depth(l.in.stream), 10);
    EXPECT_EQ(r.completeness.orphan_returns, 0u);
}

// Golden reports: the whole report JSON of each case.
class ImportGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(ImportGolden, golden) {
    const std::string name = GetParam();
    auto l = load(name + ".txt");
    nlohmann::json got = to_json(l.report);
    std::string path = kData + "/golden/" + name + ".json";
    if (std::getenv("NVTRACE_UPDATE_GOLDEN")) {
        std::ofstream(path) << got.dump(1) << "\n";
        GTEST_SKIP() << "regenerated " << path << ": review the diff";
    }
    std::ifstream in(path);
    ASSERT_TRUE(in) << path << " missing: run NVTRACE_UPDATE_GOLDEN=1 ctest -R golden";
    nlohmann::json want = nlohmann::json::parse(in);
    EXPECT_EQ(got, want) << "report of " << name << " changed; diff against " << path
                         << " (NVTRACE_UPDATE_GOLDEN=1 ctest -R golden regenerates it)\n"
                         << nlohmann::json::diff(want, got).dump(1);
}

INSTANTIATE_TEST_SUITE_P(Cases, ImportGolden,
                         ::testing::Values("fgraph-abstime-orphan-close", "fgraph-events-sched-switch-rpi",
                                           "fgraph-funcgraph-proc-column", "fgraph-irq-nested-module-suffix",
                                           "fgraph-overhead-markers-cpu-interleave", "fgraph-retval-merged-format",
                                           "fgraph-task-switch-mid-schedule", "function-text-stacktrace-rpi",
                                           "trace-cmd-report-fgraph-v6"),
                         [](const auto& param_info) {
                             std::string n = param_info.param;
                             std::replace(n.begin(), n.end(), '-', '_');
                             return n;
                         });
