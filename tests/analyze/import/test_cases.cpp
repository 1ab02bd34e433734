// Real inputs (tests/data/cases, copies of ../shared/cases): every value ../shared/cases/README.md lists
// for the files of the import readers, asserted by hand, plus a golden report per file
// (tests/data/golden/<case>.json; NVTRACE_UPDATE_GOLDEN=1 ctest -R golden regenerates them).
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../../../analyze/json_values.hpp"
#include "nvtrace/import.hpp"
#include "nvtrace/knowledge.hpp"
#include "nvtrace/report.hpp"

using namespace nvtrace;

namespace {

const std::string kData = NVTRACE_TEST_DATA;

struct Loaded {
    ImportResult in;
    Report report;
};

std::string case_text(const std::string& name) {
    std::ifstream in(kData + "/cases/" + name, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

Loaded load(const std::string& name) {
    // Read as text named by the case (not this checkout's path): the readers' diagnostics name the file.
    static std::map<std::string, std::string> texts;  // import_text's stream may view the text
    auto& text = texts[name];
    if (text.empty()) text = case_text(name);
    auto r = import_text(text, name);
    if (!r) ADD_FAILURE() << r.error().message;
    Loaded l{r ? std::move(*r) : ImportResult{}, {}};
    l.in.stream.file_name = name;  // the goldens name the case, not this checkout's path
    l.report = build_report(l.in.stream);
    l.report.source.kind = "file", l.report.source.path = name;
    l.report.source.format = std::string(format_name(l.in.format));
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
    EXPECT_EQ(r.completeness.orphan_returns(), 2u);
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
    EXPECT_EQ(r.completeness.orphan_returns(), 0u);
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
    EXPECT_EQ(r.completeness.orphan_returns(), 0u);
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
    EXPECT_EQ(sw->kernel_depth, 4);
    EXPECT_EQ(sw->depth, r.calls[*sw->parent - 1].depth + 1);
    const Call* ipi = call(r, "handle_IPI");
    ASSERT_TRUE(ipi);
    EXPECT_EQ(ipi->cpu, 2);
    EXPECT_TRUE(ipi->entry_seen);
    EXPECT_TRUE(ipi->exit_seen);
    EXPECT_EQ(ipi->duration_ns, us(3.490));
    EXPECT_EQ(call(r, "scheduler_ipi")->parent, ipi->id);
    // Every close except handle_IPI's is an orphan.
    EXPECT_EQ(r.completeness.orphan_returns(), 17u);
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
    // The last line's "+ 49.370 us" return (depth 7) closes d_free's caller, whose entry is before the
    // excerpt: it is d_free's parent, the one root (the reader infers its entry from the return).
    const Call& orphan = r.calls.front();
    EXPECT_FALSE(orphan.entry_seen);
    EXPECT_TRUE(orphan.exit_seen);
    EXPECT_EQ(orphan.duration_ns, us(49.370));
    EXPECT_EQ(orphan.kernel_depth, 7);
    EXPECT_FALSE(orphan.parent);
    EXPECT_EQ(call(r, "d_free")->parent, orphan.id);
    EXPECT_EQ(call(r, "d_free")->kernel_depth, 8);
    EXPECT_EQ(r.completeness.orphan_returns(), 1u);
    int first_depth = -1;
    for (const Event& e : l.in.stream.events)
        if (auto* x = std::get_if<FuncEntry>(&e.body); x && !x->inferred) {
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
    EXPECT_EQ(r.completeness.orphan_returns(), 0u);
}

// ---- Added 2026-12-01 (../shared/cases/README.md, second round) ------------------------------------------

namespace {

std::string read_case(const std::string& name) {
    return case_text(name);
}

std::vector<const Gap*> gaps(const Report& r, std::string_view kind) {
    std::vector<const Gap*> v;
    for (const Gap& g : r.completeness.gaps)
        if (g.kind == kind) v.push_back(&g);
    return v;
}

bool has_reason(const Report& r, std::string_view text) {
    for (const auto& x : r.completeness.reasons)
        if (x.find(text) != std::string::npos) return true;
    return false;
}

}  // namespace

// amd-gfx patch mail: every frame has an "[amdgpu]" module suffix, the mail quoting added a space before the
// CPU column, and the author's " [..]" rows elide lines before and after the excerpt.
TEST(ImportCases, AmdgpuDmubEmailIndent) {
    auto l = load("fgraph-amdgpu-dmub-email-indent.txt");
    const Report& r = l.report;
    EXPECT_EQ(l.in.format, TraceFormat::fgraph_text);
    EXPECT_EQ(cpus(l.in.stream), (std::set<int>{-1, 2}));  // -1: the two elision rows name no CPU
    for (const Call& c : r.calls) {
        EXPECT_EQ(c.module, "amdgpu") << c.function;
        EXPECT_EQ(c.cpu, 2);
    }
    const Call* lock = call(r, "dcn10_lock_all_pipes");
    ASSERT_TRUE(lock);
    EXPECT_FALSE(lock->parent);
    EXPECT_EQ(lock->kernel_depth, 3);  // as printed: the excerpt starts 3 levels down
    EXPECT_EQ(lock->depth, 0);
    EXPECT_FALSE(lock->exit_seen);
    const Call* tg = call(r, "optc1_is_tg_enabled");
    ASSERT_TRUE(tg);
    EXPECT_EQ(tg->parent, lock->id);
    EXPECT_EQ(tg->duration_ns, us(0.120));
    const Call* pcl = call(r, "dcn20_pipe_control_lock");
    ASSERT_TRUE(pcl);
    EXPECT_FALSE(pcl->exit_seen);
    EXPECT_EQ(call(r, "dc_dmub_srv_clear_inbox0_ack")->duration_ns, us(0.551));
    EXPECT_EQ(call(r, "dc_dmub_srv_send_inbox0_cmd")->duration_ns, us(0.511));
    const Call* wait = call(r, "dc_dmub_srv_wait_for_inbox0_ack");
    ASSERT_TRUE(wait);
    EXPECT_FALSE(wait->exit_seen);
    int reads = 0;
    for (const Call& c : r.calls)
        if (c.function == "amdgpu_dm_dmub_reg_read") {
            ++reads;
            EXPECT_EQ(c.duration_ns, us(0.110));
            EXPECT_EQ(c.parent, wait->id);
        }
    EXPECT_EQ(reads, 7);
    EXPECT_EQ(max_depth(l.in.stream), 6);
    // The elision rows are gaps, not malformed lines, and the report is not complete.
    EXPECT_EQ(r.completeness.elided_spans(), 2u);
    EXPECT_EQ(gaps(r, "elided").size(), 2u);
    EXPECT_EQ(gaps(r, "elided")[0]->line, 1u);
    EXPECT_EQ(gaps(r, "elided")[1]->line, 19u);
    EXPECT_EQ(r.completeness.unreadable_lines(), 0u);
    EXPECT_FALSE(r.completeness.complete);
    EXPECT_TRUE(has_reason(r, "2 elided spans"));
}

// pengdonglin137/FuncGraph: funcgraph-args, funcgraph-retaddr and BTF-typed "ret=" retvals (>= 6.13).
TEST(ImportCases, ArgsRetaddrRetvalBtf) {
    auto l = load("fgraph-args-retaddr-retval-btf.txt");
    const Report& r = l.report;
    EXPECT_EQ(cpus(l.in.stream), std::set<int>{3});
    auto sw = others(l.in.stream, "task_switch");
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0]->fields, "prev_comm=bash prev_pid=431 next_comm=<idle> next_pid=0");
    const Call* psi = call(r, "psi_task_switch");
    ASSERT_TRUE(psi);
    EXPECT_EQ(psi->kernel_depth, 5);
    EXPECT_EQ(psi->duration_ns, us(3.250));
    EXPECT_EQ(psi->args, "prev=0xffff888007949bc0, next=0xffff888006058000, sleep=0x1");
    EXPECT_EQ(psi->retaddr, "__schedule+0x60b/0x700");
    EXPECT_EQ(psi->pid, 431);
    const double group[] = {0.501, 0.415, 0.384, 0.459};
    for (int i = 0; i < 4; ++i) {
        const Call* g = call(r, "psi_group_change", i);
        ASSERT_TRUE(g);
        EXPECT_EQ(g->duration_ns, us(group[i]));
        EXPECT_EQ(g->parent, psi->id);
        EXPECT_EQ(g->retaddr, "psi_task_switch+0x152/0x450");
    }
    EXPECT_EQ(call(r, "psi_group_change")->args,
              "group=0xffff888101de6000, cpu=3, clear=0x14, set=0x0, now=0x15e09eb029, wake_clock=0x1");
    // An argument named "ret" is an argument, not the return value: that one is the close's "ret=false".
    const Call* held = call(r, "rcu_read_lock_held_common");
    ASSERT_TRUE(held);
    EXPECT_EQ(held->args, "ret=0xffffc900013f3d87");
    EXPECT_EQ(held->retval, 0);
    EXPECT_EQ(call(r, "rcu_read_lock_sched_held")->retval, 1);
    EXPECT_EQ(call(r, "rcu_lockdep_current_cpu_online")->retval, 1);  // ret=true
    const Call* rnp = call(r, "rcu_rnp_online_cpus");
    ASSERT_TRUE(rnp);
    EXPECT_EQ(rnp->retval, 0xff);
    EXPECT_EQ(rnp->retaddr, "rcu_rdp_cpu_online.isra.0+0xe/0x20");
    EXPECT_EQ(call(r, "rcu_rdp_cpu_online.isra.0")->retval, 1);
    // After the switch: the idle task's roots.
    const Call* fin = call(r, "finish_task_switch.isra.0");
    ASSERT_TRUE(fin);
    EXPECT_FALSE(fin->parent);
    EXPECT_EQ(fin->pid, 0);
    EXPECT_EQ(fin->duration_ns, us(1.175));
    EXPECT_EQ(fin->retval, static_cast<std::int64_t>(0xffffffff81381f60ULL));
    EXPECT_EQ(fin->kernel_depth, 0);
    const Call* idle = call(r, "do_idle");
    ASSERT_TRUE(idle);
    EXPECT_FALSE(idle->parent);
    EXPECT_FALSE(idle->exit_seen);
    EXPECT_EQ(call(r, "ktime_get")->retval, 93933535693);
    EXPECT_EQ(call(r, "can_stop_idle_tick")->retval, 1);
    EXPECT_EQ(call(r, "report_idle_softirq")->retval, 0);
    EXPECT_EQ(call(r, "cpuidle_not_available")->args, "drv=0x0, dev=0x0");
    EXPECT_EQ(call(r, "local_touch_nmi")->args, std::nullopt);  // "()" prints no arguments
    EXPECT_EQ(r.completeness.unreadable_lines(), 0u);
}

// Kernel 5.3 boot trace of the function tracer: the header says 12,325 of 70,138 entries were overwritten and
// CPU 2's buffer starts late; the excerpt ends with "...".
TEST(ImportCases, FunctionTextAnnotateCpuBufferStarted) {
    auto l = load("function-text-annotate-cpu-buffer-started.txt");
    const Report& r = l.report;
    EXPECT_EQ(l.in.format, TraceFormat::function_text);
    EXPECT_EQ(r.completeness.entries_in_buffer, 57813u);
    EXPECT_EQ(r.completeness.entries_written, 70138u);
    EXPECT_EQ(r.completeness.overruns, 12325u);
    std::vector<const Call*> cpu0, cpu2;
    for (const Call& c : r.calls)
        (c.cpu == 0 ? cpu0 : cpu2).push_back(&c);
    ASSERT_EQ(cpu0.size(), 2u);
    EXPECT_EQ(cpu0[0]->function, "pci_msi_create_irq_domain");
    EXPECT_EQ(cpu0[0]->entry_ns, 155635000u);
    auto hits = others(l.in.stream, "function");
    ASSERT_EQ(hits.size(), 12u);
    EXPECT_EQ(hits[0]->fields, "ip=pci_msi_create_irq_domain parent_ip=arch_init_msi_domain");
    EXPECT_EQ(hits[1]->fields, "ip=pci_msi_create_irq_domain parent_ip=arch_create_remap_msi_irq_domain");
    ASSERT_EQ(cpu2.size(), 10u);
    for (const Call* c : cpu2) {
        EXPECT_EQ(c->cpu, 2);
        EXPECT_EQ(c->pid, 1);
        EXPECT_EQ(c->comm, "swapper/0");
    }
    int reads = 0;
    for (const auto* h : hits)
        reads += h->fields == "ip=read_pci_config parent_ip=early_root_info_init";
    EXPECT_EQ(reads, 5);
    EXPECT_EQ(hits.back()->fields, "ip=early_pci_allowed parent_ip=amd_postcore_init");
    EXPECT_EQ(cpu2.back()->entry_ns, 853975000u);
    // "##### CPU 2 buffer started ####": CPU 2's events before its first surviving one (0.853238) are gone.
    auto started = gaps(r, "buffer_started");
    ASSERT_EQ(started.size(), 1u);
    EXPECT_EQ(started[0]->cpu, 2);
    EXPECT_EQ(started[0]->ts_ns, 853238000u);
    EXPECT_EQ(started[0]->line, 14u);
    auto elided = gaps(r, "elided");
    ASSERT_EQ(elided.size(), 1u);
    EXPECT_EQ(elided[0]->line, 25u);
    EXPECT_FALSE(r.completeness.complete);
    EXPECT_EQ(completeness_line(r.completeness),
              "complete: no: 12,325 of 70,138 entries overwritten (the buffer wrapped); CPU 2 buffer started late "
              "(older events overwritten); 1 elided span");
    EXPECT_EQ(r.completeness.unreadable_lines(), 0u);
}

// A k8s pod without access to /dev/nvidia-uvm: two failed opens (EPERM), then libcuda's ioctl on fd -1 (EBADF)
// in strace's older "_IOC(0, ...)" spelling, and the program's stdout written into the write() lines.
TEST(ImportCases, StraceUvmEpermIoc0StdoutInterleave) {
    std::string text = read_case("strace-uvm-eperm-ioc0-stdout-interleave.txt");
    StraceLog log = parse_strace(text, "strace-uvm-eperm-ioc0-stdout-interleave.txt");
    ASSERT_EQ(log.device_nodes.size(), 2u);
    EXPECT_EQ(log.device_nodes[0].path, "/dev/nvidia-uvm");
    EXPECT_EQ(log.device_nodes[0].major, 237u);
    EXPECT_EQ(log.device_nodes[0].minor, 0u);
    EXPECT_EQ(log.device_nodes[1].path, "/dev/nvidia-uvm-tools");
    EXPECT_EQ(log.device_nodes[1].minor, 1u);
    ASSERT_EQ(log.failed_opens.size(), 2u);
    EXPECT_EQ(log.failed_opens[0].path, "/dev/nvidia-uvm");
    EXPECT_EQ(log.failed_opens[0].flags, "O_RDWR|O_CLOEXEC");
    EXPECT_EQ(log.failed_opens[0].errno_name, "EPERM");
    EXPECT_EQ(log.failed_opens[0].errno_text, "Operation not permitted");
    EXPECT_EQ(log.failed_opens[1].flags, "O_RDWR");
    EXPECT_EQ(log.failed_opens[1].errno_name, "EPERM");
    ASSERT_EQ(log.ioctls.size(), 2u);
    const StraceIoctl& uvm = log.ioctls[0];
    EXPECT_EQ(uvm.fd, -1);
    ASSERT_TRUE(uvm.cmd);
    IocFields f = decode_ioc(*uvm.cmd);
    EXPECT_EQ(f.dir, 0u);
    EXPECT_EQ(f.type, 0u);
    EXPECT_EQ(f.nr, 0x2u);
    EXPECT_EQ(f.size, 0x3000u);
    EXPECT_EQ(uvm.ret, -9);  // the kernel's -EBADF (strace printed libc's -1)
    EXPECT_EQ(uvm.errno_name, "EBADF");
    EXPECT_EQ(uvm.errno_text, "Bad file descriptor");
    const StraceIoctl& ctl = log.ioctls[1];
    EXPECT_EQ(ctl.fd, 3);
    f = decode_ioc(*ctl.cmd);
    EXPECT_EQ(f.nr, 0x29u);
    EXPECT_EQ(f.size, 0x10u);
    EXPECT_EQ(ctl.ret, 0);
    EXPECT_FALSE(ctl.errno_name);
    // Three writes to fd 1; the text after each count is the program's stdout, not a cut-off line.
    ASSERT_EQ(log.writes.size(), 3u);
    const std::int64_t bytes[] = {31, 17, 14};
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(log.writes[i].fd, 1);
        EXPECT_EQ(log.writes[i].ret, bytes[i]);
    }
    EXPECT_EQ(log.program_output_lines, 3u);
    EXPECT_FALSE(log.truncated);
    for (const auto& d : log.diagnostics)
        EXPECT_NE(d.name, "strace_truncated_line");
    ASSERT_EQ(log.exits.size(), 1u);
    EXPECT_EQ(log.exits[0].status, 1);
    EXPECT_EQ(log.elided_rows, std::vector<std::uint32_t>{1});

    // The report: errnos as strace printed them (never EPERM made from -1), the failed opens as events.
    auto l = load("strace-uvm-eperm-ioc0-stdout-interleave.txt");
    const Report& r = l.report;
    EXPECT_EQ(l.in.format, TraceFormat::strace);
    ASSERT_EQ(r.ioctls.size(), 2u);
    EXPECT_EQ(r.ioctls[0].fd, -1);
    EXPECT_EQ(r.ioctls[0].ret, -9);
    EXPECT_EQ(r.ioctls[0].errno_name, "EBADF");
    EXPECT_EQ(r.ioctls[0].errno_text, "Bad file descriptor");
    EXPECT_EQ(r.ioctls[1].errno_name, std::nullopt);
    std::vector<const EventRecord*> opens;
    for (const EventRecord& e : r.events)
        if (e.name == "strace:openat") opens.push_back(&e);
    ASSERT_EQ(opens.size(), 2u);
    ASSERT_TRUE(opens[0]->fields);
    EXPECT_EQ(opens[0]->fields->at("path"), "/dev/nvidia-uvm");
    EXPECT_EQ(opens[0]->fields->at("errno"), "EPERM");
    EXPECT_EQ(opens[0]->fields->at("errno_text"), "Operation not permitted");
    EXPECT_EQ(opens[0]->line, 8u);
    EXPECT_EQ(opens[1]->fields->at("flags"), "O_RDWR");
    const EventRecord* exit = nullptr;
    for (const EventRecord& e : r.events)
        if (e.name == "strace:exit") exit = &e;
    ASSERT_TRUE(exit);
    EXPECT_EQ(exit->text, "status=1");
    EXPECT_EQ(r.completeness.elided_spans(), 1u);  // the leading "..."
    EXPECT_FALSE(r.completeness.complete);
    // The gap's first example names the file and line (it said "cpu -1" for strace input).
    bool named = false;
    for (const Diagnostic& d : r.completeness.diagnostics)
        if (d.name == "elided_span") {
            EXPECT_EQ(d.first_example, "strace-uvm-eperm-ioc0-stdout-interleave.txt:1");
            named = true;
        }
    EXPECT_TRUE(named);
}

// gVisor (runsc --strace) with nvproxy: E/X lines per call, debug lines between them, an X whose E is before
// the excerpt and an E whose X is after it.
TEST(ImportCases, StraceGvisorNvproxyExPairs) {
    std::string text = read_case("strace-gvisor-nvproxy-ex-pairs.txt");
    StraceLog log = parse_strace(text, "strace-gvisor-nvproxy-ex-pairs.txt");
    EXPECT_TRUE(log.gvisor);
    ASSERT_EQ(log.ioctls.size(), 4u);
    for (const StraceIoctl& io : log.ioctls) {
        EXPECT_EQ(io.fd, 3);
        EXPECT_EQ(io.fd_path, "/dev/nvidiactl");
        EXPECT_EQ(io.cmd, 0xc020462au);
        EXPECT_EQ(io.pid, 2);
    }
    IocFields f = decode_ioc(0xc020462a);
    EXPECT_EQ(f.dir, 3u);
    EXPECT_EQ(f.type, 0x46u);
    EXPECT_EQ(f.nr, 0x2au);
    EXPECT_EQ(f.size, 0x20u);
    EXPECT_FALSE(log.ioctls[0].entered);  // the orphan X first
    EXPECT_EQ(log.ioctls[0].ret, 0);
    EXPECT_EQ(log.ioctls[0].duration_ns, 21883u);
    EXPECT_EQ(log.ioctls[1].duration_ns, 20731u);
    EXPECT_EQ(log.ioctls[2].duration_ns, 22494u);
    for (int i = 1; i <= 2; ++i) {
        EXPECT_TRUE(log.ioctls[i].entered);
        EXPECT_EQ(log.ioctls[i].ret, 0);
        EXPECT_EQ(log.ioctls[i].nvproxy_nr, 0x2au);
        EXPECT_EQ(log.ioctls[i].nvproxy_arg_size, 0x20u);
        EXPECT_EQ(log.ioctls[i].ctrl, 0x2080122bu);
    }
    EXPECT_TRUE(log.ioctls[3].entered);  // the orphan E last: no exit
    EXPECT_FALSE(log.ioctls[3].ret);
    EXPECT_FALSE(log.ioctls[3].truncated);
    EXPECT_FALSE(log.truncated);

    auto l = load("strace-gvisor-nvproxy-ex-pairs.txt");
    EXPECT_EQ(l.in.format, TraceFormat::strace);
    const Report& r = l.report;
    ASSERT_EQ(r.ioctls.size(), 4u);
    for (const IoctlRecord& io : r.ioctls) {
        EXPECT_EQ(io.fd_path, "/dev/nvidiactl");
        EXPECT_EQ(io.name, "NV_ESC_RM_CONTROL");
        EXPECT_EQ(io.pid, 2);
    }
    // The two complete pairs' durations as gVisor printed them; the orphan X's own (21.883 us) too; the orphan E
    // has none.
    EXPECT_EQ(r.ioctls[0].duration_ns, 21883u);
    EXPECT_EQ(r.ioctls[1].duration_ns, 20731u);
    EXPECT_EQ(r.ioctls[2].duration_ns, 22494u);
    EXPECT_FALSE(r.ioctls[3].duration_ns);
    EXPECT_FALSE(r.ioctls[3].exit_ns);
    EXPECT_FALSE(r.ioctls[3].ret);
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
                                           "trace-cmd-report-fgraph-v6", "fgraph-amdgpu-dmub-email-indent",
                                           "fgraph-args-retaddr-retval-btf",
                                           "function-text-annotate-cpu-buffer-started",
                                           "strace-uvm-eperm-ioc0-stdout-interleave", "strace-gvisor-nvproxy-ex-pairs"),
                         [](const auto& param_info) {
                             std::string n = param_info.param;
                             std::replace(n.begin(), n.end(), '-', '_');
                             return n;
                         });
