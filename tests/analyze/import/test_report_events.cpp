// Regression tests for data that was read but never reached the report (report.events), inputs that were
// refused (strace, kernel-log-only files, pipes) and random bytes that were accepted as a trace.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../../../analyze/json_values.hpp"
#include "nvtrace/import.hpp"
#include "nvtrace/report.hpp"

using namespace nvtrace;

namespace {

const std::string kData = NVTRACE_TEST_DATA;

Report report_of(const std::string& case_name, TraceFormat want) {
    auto in = import_file(kData + "/cases/" + case_name);
    if (!in) {
        ADD_FAILURE() << in.error().message;
        return {};
    }
    EXPECT_EQ(in->format, want) << case_name;
    Report r = build_report(in->stream);
    for (auto& m : in->kernel_log)
        r.kernel_log.push_back(std::move(m));
    return r;
}

std::vector<const EventRecord*> named(const Report& r, std::string_view name) {
    std::vector<const EventRecord*> out;
    for (const auto& e : r.events)
        if (e.name == name) out.push_back(&e);
    return out;
}

// The streamed JSON and the DOM must agree on the new section too.
void expect_streamed_equals_dom(const Report& r) {
    std::ostringstream ss;
    write_json(r, ss);
    nlohmann::json streamed = nlohmann::json::parse(ss.str());
    EXPECT_EQ(streamed, to_json(r));
    ASSERT_TRUE(streamed.contains("events"));
    EXPECT_EQ(streamed["events"].size(), r.events.size());
}

}  // namespace

// `nvtrace run --event sched:sched_process_exit --event syscalls:sys_enter_openat`: the raw decoder keeps them
// as OtherEvent, and build_report used to drop them (the names were only in meta.json).
TEST(ReportEvents, run_event_tracepoints_reach_report_events) {
    EventStream s;
    s.comms[4242] = "cat";
    Event a;
    a.ts_ns = 1000;
    a.cpu = 1;
    a.pid = 4242;
    a.body = OtherEvent{"syscalls", "sys_enter_openat",
                        "__syscall_nr=257 dfd=0xffffff9c filename=0x7ffd1234 flags=0x80000 mode=0x0"};
    s.events.push_back(a);
    Event b = a;
    b.ts_ns = 2000;
    b.body = OtherEvent{"sched", "sched_process_exit", "comm=cat pid=4242 prio=120"};
    s.events.push_back(b);
    Report r = build_report(s);
    ASSERT_EQ(r.events.size(), 2u);
    const EventRecord& open = r.events[0];
    EXPECT_EQ(open.name, "syscalls:sys_enter_openat");
    EXPECT_EQ(open.ts_ns, 1000u);
    EXPECT_EQ(open.cpu, 1);
    EXPECT_EQ(open.pid, 4242);
    EXPECT_EQ(open.comm, "cat");
    ASSERT_TRUE(open.fields);
    EXPECT_EQ(open.fields->at("flags"), "0x80000");
    EXPECT_EQ(r.events[1].name, "sched:sched_process_exit");
    EXPECT_EQ(r.events[1].fields->at("comm"), "cat");
    EXPECT_EQ(r.events[1].text, "comm=cat pid=4242 prio=120");
    EXPECT_FALSE(r.events[1].line);
    expect_streamed_equals_dom(r);
}

TEST(ReportEvents, parse_event_fields_keeps_spaced_values_and_drops_arrows) {
    auto f = parse_event_fields(
        "prev_comm=chromium-browse prev_pid=919 prev_prio=120 prev_state=R ==> next_comm=kworker/3:1 next_pid=32");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->at("prev_state"), "R");
    EXPECT_EQ(f->at("next_comm"), "kworker/3:1");
    EXPECT_EQ(f->size(), 6u);
    auto g = parse_event_fields("comm=Web Content pid=7");
    ASSERT_TRUE(g);
    EXPECT_EQ(g->at("comm"), "Web Content");
    EXPECT_EQ(parse_event_fields("irq=17, process: x")->at("irq"), "17, process: x");
    EXPECT_FALSE(parse_event_fields("free text with no fields"));
    EXPECT_FALSE(parse_event_fields(""));
}

// function-text-stacktrace-rpi: the parent of the hit and its 25-frame stack were read and then dropped.
TEST(ReportEvents, function_text_stacktrace_rpi_hit_parent_and_25_frame_stack_reach_events) {
    Report r = report_of("function-text-stacktrace-rpi.txt", TraceFormat::function_text);
    ASSERT_EQ(r.events.size(), 2u);  // irq_handler_entry, the function hit (the stack is attached to it)
    const EventRecord& irq = r.events[0];
    EXPECT_EQ(irq.name, "irq_handler_entry");
    EXPECT_EQ(irq.cpu, 0);
    EXPECT_EQ(irq.pid, 27338);
    EXPECT_EQ(irq.comm, "kworker/0:0");
    EXPECT_EQ(irq.ts_ns, 6028897808000u);
    EXPECT_EQ(irq.fields->at("irq"), "56");
    EXPECT_EQ(irq.fields->at("name"), "dwc_otg");
    const EventRecord& hit = r.events[1];
    EXPECT_EQ(hit.name, "ftrace:function");
    EXPECT_EQ(hit.ts_ns, 6028897809000u);
    EXPECT_EQ(hit.fields->at("ip"), "dwc_otg_common_irq");
    EXPECT_EQ(hit.fields->at("parent_ip"), "__handle_irq_event_percpu");
    ASSERT_EQ(hit.stack.size(), 25u);
    EXPECT_EQ(hit.stack.front(), "handle_irq_event");
    EXPECT_EQ(hit.stack.back(), "ret_from_fork");
    EXPECT_TRUE(hit.user_stack.empty());
    expect_streamed_equals_dom(r);
}

// fgraph-events-sched-switch-rpi: irq_handler_*, sched_wakeup/sched_switch comments and the three task-switch
// banners were read as events and dropped by the report.
TEST(ReportEvents, fgraph_events_sched_switch_rpi_irq_sched_and_task_switches_reach_events) {
    Report r = report_of("fgraph-events-sched-switch-rpi.txt", TraceFormat::fgraph_text);
    EXPECT_EQ(named(r, "irq_handler_entry").size(), 1u);
    EXPECT_EQ(named(r, "irq_handler_exit").size(), 1u);
    EXPECT_EQ(named(r, "sched_wakeup").size(), 2u);
    auto sw = named(r, "sched_switch");
    ASSERT_EQ(sw.size(), 2u);
    EXPECT_EQ(sw[0]->fields->at("prev_comm"), "chromium-browse");
    EXPECT_EQ(sw[0]->fields->at("next_pid"), "32");
    EXPECT_EQ(sw[0]->cpu, 3);
    EXPECT_FALSE(sw[0]->ts_ns);  // no abstime column: no time
    EXPECT_TRUE(sw[0]->line);
    auto ts = named(r, "nvtrace:task_switch");
    ASSERT_EQ(ts.size(), 3u);
    EXPECT_EQ(ts[0]->fields->at("prev_comm"), "kworker");
    EXPECT_EQ(ts[0]->fields->at("prev_pid"), "32");
    EXPECT_EQ(ts[0]->fields->at("next_comm"), "chromiu");
    EXPECT_EQ(ts[0]->fields->at("next_pid"), "919");
    EXPECT_EQ(ts[2]->fields->at("next_comm"), "irq/17-");
    EXPECT_EQ(ts[2]->fields->at("next_pid"), "33");
    expect_streamed_equals_dom(r);
}

TEST(ReportEvents, fgraph_task_switch_mid_schedule_switch_reaches_events) {
    Report r = report_of("fgraph-task-switch-mid-schedule.txt", TraceFormat::fgraph_text);
    auto ts = named(r, "nvtrace:task_switch");
    ASSERT_EQ(ts.size(), 1u);
    EXPECT_EQ(ts[0]->cpu, 0);
    EXPECT_EQ(ts[0]->fields->at("prev_comm"), "platfor");
    EXPECT_EQ(ts[0]->fields->at("prev_pid"), "3210");
    EXPECT_EQ(ts[0]->fields->at("next_comm"), "vmstat");
    EXPECT_EQ(ts[0]->fields->at("next_pid"), "2854");
}

// A stack with no event before it on its CPU and task stays its own record.
TEST(ReportEvents, stack_without_its_event_is_its_own_record) {
    EventStream s;
    Event e;
    e.cpu = 2;
    e.pid = 7;
    e.ts_ns = 5;
    e.body = OtherEvent{"ftrace", "kernel_stack", "a\nb"};
    s.events.push_back(e);
    Report r = build_report(s);
    ASSERT_EQ(r.events.size(), 1u);
    EXPECT_EQ(r.events[0].name, "ftrace:kernel_stack");
    EXPECT_EQ(r.events[0].stack, (std::vector<std::string>{"a", "b"}));
    EXPECT_FALSE(r.events[0].fields);
}

// `head -c 100000 /dev/urandom > f; nvtrace report f` was read as fgraph-text in 4 of 5 tries.
TEST(ImportEvidence, random_bytes_are_not_a_trace) {
    for (unsigned seed = 1; seed <= 40; ++seed) {
        std::mt19937 gen(seed);
        std::string bytes(100000, '\0');
        for (auto& c : bytes)
            c = static_cast<char>(gen() & 0xff);
        EXPECT_FALSE(detect_format(bytes)) << "seed " << seed;
        auto r = import_text(bytes, "random");
        EXPECT_FALSE(r) << "seed " << seed << ": read as " << format_name(r->format);
        if (!r) {
            EXPECT_EQ(r.error().code, Error::usage("").code);
        }
    }
}

// Forcing a text format on random bytes: most lines are malformed, so the input is not usable.
TEST(ImportEvidence, random_bytes_forced_as_fgraph_text_are_not_usable) {
    std::mt19937 gen(7);
    std::string bytes(100000, '\0');
    for (auto& c : bytes)
        c = static_cast<char>(gen() & 0xff);
    for (auto f : {TraceFormat::fgraph_text, TraceFormat::function_text, TraceFormat::trace_cmd_report}) {
        auto r = import_text(bytes, "random", f);
        ASSERT_FALSE(r) << format_name(f);
        EXPECT_TRUE(r.error().message.find("not usable") != std::string::npos ||
                    r.error().message.find("nothing usable") != std::string::npos)
            << r.error().message;
    }
}

// A real trace with a few trace-like lines among prose is still refused; a trace with some junk is read.
TEST(ImportEvidence, a_share_of_recognised_lines_is_required) {
    std::string prose;
    for (int i = 0; i < 20; ++i)
        prose += "This is a line of a README that talks about the | pipe character.\n";
    prose += " 0)   1.234 us    |  f();\n";
    EXPECT_FALSE(detect_format(prose));
    std::string trace;
    for (int i = 0; i < 10; ++i)
        trace += " 0)   1.234 us    |  f();\n";
    trace += "some junk line\nanother one\n";
    EXPECT_EQ(detect_format(trace), TraceFormat::fgraph_text);
}

// Every kernel log of the cases is still a kernel log.
TEST(ImportEvidence, every_kernel_log_case_is_still_a_kernel_log) {
    int n = 0;
    for (const auto& ent : std::filesystem::directory_iterator(kData + "/cases")) {
        if (ent.path().extension() != ".log") continue;
        ++n;
        auto in = import_file(ent.path().string());
        ASSERT_TRUE(in) << ent.path() << ": " << in.error().message;
        EXPECT_EQ(in->format, TraceFormat::kernel_log) << ent.path();
        EXPECT_FALSE(in->kernel_log.empty()) << ent.path();
    }
    EXPECT_GE(n, 14);
}

// gdrcopy and cuda-hostregister: `nvtrace dmesg` read them, `nvtrace report` refused them (exit 2).
TEST(ImportEvidence, gdrcopy_and_cuda_hostregister_logs_give_a_kernel_log_report) {
    Report g = report_of("gdrcopy-sanity-copylat-fail.txt", TraceFormat::kernel_log);
    EXPECT_TRUE(g.calls.empty());
    bool pin = false;
    for (const auto& m : g.kernel_log)
        pin = pin || m.text.find("gdr_pin_buffer") != std::string::npos;
    EXPECT_TRUE(pin);
    Report c = report_of("cuda-hostregister-cumemaddressreserve-fail.txt", TraceFormat::kernel_log);
    bool err30 = false;
    for (const auto& m : c.kernel_log)
        err30 = err30 || m.text.find("code=30(cudaErrorUnknown)") != std::string::npos;
    EXPECT_TRUE(err30);
}

// strace-nvidia-ioctl-libva: refused with exit 2; the cases README expects the ioctl list and the truncated
// last line flagged.
TEST(ImportEvidence, strace_nvidia_ioctl_libva_gives_the_ioctl_list_and_flags_the_truncated_line) {
    EXPECT_EQ(parse_format_name(format_name(TraceFormat::strace)), TraceFormat::strace);
    Report r = report_of("strace-nvidia-ioctl-libva.txt", TraceFormat::strace);
    struct Want {
        int fd;
        unsigned nr, size;
    };
    const std::vector<Want> want{{14, 0xce, 0x10}, {14, 0x2b, 0x28}, {5, 0x4a, 0xb8}, {5, 0x2a, 0x20}, {5, 0x4e, 0x38},
                                 {5, 0x2b, 0x28},  {5, 0x2a, 0x20},  {5, 0x2a, 0x20}, {5, 0x4e, 0x38}};
    std::multiset<std::tuple<int, unsigned, unsigned>> got, expected;
    for (const auto& w : want)
        expected.insert({w.fd, w.nr, w.size});
    for (const auto& io : r.ioctls) {
        got.insert({io.fd, static_cast<unsigned>(io.cmd & 0xff), static_cast<unsigned>((io.cmd >> 16) & 0x3fff)});
        EXPECT_EQ((io.cmd >> 8) & 0xff, 0x46u);
        ASSERT_TRUE(io.ret);
        EXPECT_EQ(*io.ret, 0);
    }
    EXPECT_EQ(got, expected);
    EXPECT_FALSE(r.completeness.complete);
    bool flagged = false;
    for (const auto& d : r.completeness.diagnostics)
        flagged = flagged || d.name == "strace_truncated_line";
    EXPECT_TRUE(flagged);
}

// `nvtrace report -` and /dev/stdin were "not a regular file": a pipe is read whole.
TEST(ImportEvidence, trace_through_a_pipe_is_read) {
    std::string text;
    {
        std::ifstream in(kData + "/cases/fgraph-retval-merged-format.txt", std::ios::binary);
        std::ostringstream ss;
        ss << in.rdbuf();
        text = ss.str();
    }
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    std::thread writer([&] {
        std::size_t off = 0;
        while (off < text.size()) {
            ssize_t n = ::write(fds[1], text.data() + off, text.size() - off);
            if (n <= 0) break;
            off += static_cast<std::size_t>(n);
        }
        ::close(fds[1]);
    });
    auto in = import_file("/proc/self/fd/" + std::to_string(fds[0]));
    writer.join();
    ::close(fds[0]);
    ASSERT_TRUE(in) << in.error().message;
    EXPECT_EQ(in->format, TraceFormat::fgraph_text);
    auto file = import_file(kData + "/cases/fgraph-retval-merged-format.txt");
    ASSERT_TRUE(file);
    EXPECT_EQ(in->stream.events.size(), file->stream.events.size());
}
