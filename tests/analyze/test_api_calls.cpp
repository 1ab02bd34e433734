// api_calls (nvtrace/report.hpp ApiCall, analyze/api_calls.hpp): uprobe entry/return events paired per thread
// into spans with the ioctls and root calls made inside them, from a `trace` text file
// (tests/data/api/cuda_uprobes.trace: the kernel's print, see its README.md) and from a capture-like EventStream
// (libtraceevent's print of the probes' print fmt); the same api_calls streamed and held whole, after a round trip
// through report.json, and phases from API calls when there are no phase markers.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../../analyze/json_values.hpp"
#include "api_calls.hpp"
#include "event_builders.hpp"
#include "nvtrace/api_calls.hpp"
#include "nvtrace/capture_dir.hpp"
#include "nvtrace/import.hpp"
#include "nvtrace/report.hpp"
#include "nvtrace/report_io.hpp"
#include "nvtrace/report_stream.hpp"
#include "test_io.hpp"

using namespace nvtrace;

namespace {

const std::string kData = NVTRACE_TEST_DATA;

EventStream text_stream() {
    auto r = import_file(kData + "/api/cuda_uprobes.trace");
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? r->stream : EventStream{};
}

const ApiCall* find(const Report& r, std::string_view function, int nth = 0) {
    for (const ApiCall& a : r.api_calls)
        if (a.function == function && nth-- == 0) return &a;
    return nullptr;
}

Event at(std::uint64_t ts, int pid, EventBody body, int cpu = 0) {
    return Event{ts, cpu, pid, true, std::move(body)};
}
Event probe(std::uint64_t ts, int pid, const char* name, const char* fields) {
    return at(ts, pid, OtherEvent{"nvtrace_777", name, fields});
}

std::string whole_json(const Report& r) {
    std::ostringstream os;
    write_json(r, os);
    return os.str();
}

std::string streamed_json(const EventStream& st) {
    EventStream side = st;
    side.events.clear();
    auto rs = ReportStream::open(std::filesystem::temp_directory_path().string(), std::move(side));
    EXPECT_TRUE(rs) << rs.error().message;
    if (!rs) return {};
    for (const Event& ev : st.events)
        (*rs)->add(ev);
    EXPECT_TRUE((*rs)->finish());
    FILE* tmp = std::tmpfile();
    EXPECT_TRUE((*rs)->write(::fileno(tmp)));
    std::string out = test::read_fd(::fileno(tmp));
    std::fclose(tmp);
    return out;
}

}  // namespace

// The print heads of kernel/trace/trace_uprobe.c print_uprobe_event ("(0x%lx)", "(0x%lx <- 0x%lx)") and of
// trace_probe.c __set_print_fmt as libtraceevent prints it ("(%lx)", "(%lx <- %lx)"); a kprobe's symbol head and
// other events' fields are not uprobe prints.
TEST(ApiCalls, UprobePrintHeads) {
    auto e = detail::parse_uprobe_print("(0x7f3a1b012340) dptr=0x7ffd5e4b0990 bytesize=16777216");
    ASSERT_TRUE(e);
    EXPECT_FALSE(e->is_return);
    EXPECT_EQ(e->fields.at("bytesize"), "16777216");
    auto r = detail::parse_uprobe_print("(7f3a1b012340 <- 7f3a1c2b4f00) ret=0");
    ASSERT_TRUE(r);
    EXPECT_TRUE(r->is_return);
    EXPECT_EQ(r->fields.at("ret"), "0");
    auto bare = detail::parse_uprobe_print("(0x7f3a1b0456a0)");
    ASSERT_TRUE(bare);
    EXPECT_TRUE(bare->fields.empty());
    // A capture directory's record decoded field by field, as `nvtrace run --uprobe libc:getpid` of
    // python3 recorded it (report.json events[]: the uprobe format's own fields, trace_probe.h FIELD_STRING_*).
    auto raw_entry = detail::parse_uprobe_print(" __probe_ip=7fb4077bb4e0");
    ASSERT_TRUE(raw_entry);
    EXPECT_FALSE(raw_entry->is_return);
    EXPECT_TRUE(raw_entry->fields.empty());
    auto raw_ret = detail::parse_uprobe_print(" __probe_func=7fb4077bb4e0 __probe_ret_ip=5d591b ret=30668");
    ASSERT_TRUE(raw_ret);
    EXPECT_TRUE(raw_ret->is_return);
    EXPECT_EQ(raw_ret->fields, (std::map<std::string, std::string>{{"ret", "30668"}}));
    auto raw_args = detail::parse_uprobe_print("__probe_ip=7f3a1b012340 dptr=140726184921488 bytesize=16777216");
    ASSERT_TRUE(raw_args);
    EXPECT_EQ(raw_args->fields.at("bytesize"), "16777216");
    EXPECT_FALSE(detail::parse_uprobe_print("__probe_func=7f00 ret=1"));  // a return without its return address
    EXPECT_FALSE(detail::parse_uprobe_print("(do_sys_open+0x0/0x80) dfd=0xffffff9c"));  // a kprobe
    EXPECT_FALSE(detail::parse_uprobe_print("(do_sys_open+0x5c/0x80 <- do_sys_open) arg1=0x3"));
    EXPECT_FALSE(detail::parse_uprobe_print("irq=24 name=ahci"));
    EXPECT_FALSE(detail::parse_uprobe_print("(0x7f00) free text after"));
    EXPECT_EQ(detail::format_bytes(16777216), "16 MiB");
    EXPECT_EQ(detail::format_bytes(1536), "1536 bytes");
    EXPECT_EQ(detail::format_bytes(4096), "4 KiB");
}

TEST(ApiCalls, FromTraceText) {
    EventStream st = text_stream();
    Report r = build_report(st);
    ASSERT_EQ(r.api_calls.size(), 6u) << whole_json(r);

    const ApiCall* init = find(r, "cuInit");
    ASSERT_TRUE(init);
    EXPECT_EQ(init->api, "cuda_driver");
    EXPECT_EQ(init->library, "libcuda.so.1");
    EXPECT_EQ(init->result, 0);
    EXPECT_EQ(init->result_name, "CUDA_SUCCESS");  // "ret=0x0": an untyped $retval
    EXPECT_FALSE(init->result_unknown) << *init->result_unknown;
    EXPECT_FALSE(init->exit_unknown);
    EXPECT_EQ(init->args.at("Flags"), "0x0");
    EXPECT_EQ(init->arg_kinds.at("Flags"), "flags");
    EXPECT_EQ(init->ioctls, std::vector<std::uint64_t>{0});
    EXPECT_EQ(init->comm, "api_test");
    EXPECT_EQ(init->entry_ns, 100000001000u);
    EXPECT_EQ(init->exit_ns, 100000012000u);

    const ApiCall* rt = find(r, "cudaMalloc");
    const ApiCall* drv = find(r, "cuMemAlloc_v2");
    ASSERT_TRUE(rt && drv);
    EXPECT_EQ(rt->api, "cuda_runtime");
    EXPECT_FALSE(rt->parent);
    EXPECT_EQ(drv->parent, rt->id);  // cudaMalloc's span holds the cuMemAlloc_v2 it calls
    EXPECT_EQ(drv->depth, 1);
    EXPECT_EQ(drv->args_decoded.at("bytesize"), "16 MiB");
    EXPECT_EQ(drv->arg_kinds.at("bytesize"), "bytes");
    EXPECT_EQ(drv->args_decoded.at("dptr"), "0x7ffd5e4b0990");
    EXPECT_EQ(drv->ioctls, (std::vector<std::uint64_t>{1, 2}));  // the innermost span's
    EXPECT_EQ(rt->ioctls, std::vector<std::uint64_t>{3});        // after cuMemAlloc_v2 returned
    EXPECT_EQ(rt->result_name, "cudaSuccess");
    EXPECT_EQ(rt->phase, "cudaMalloc");
    EXPECT_EQ(drv->phase, "cudaMalloc");  // the top call's function: no phase markers

    // The second thread: an entry with no arguments whose return never came; its ioctl (which failed) is its.
    const ApiCall* sync = find(r, "cuCtxSynchronize");
    ASSERT_TRUE(sync);
    EXPECT_EQ(sync->pid, 4243);
    EXPECT_TRUE(sync->args.empty());
    EXPECT_FALSE(sync->exit_ns);
    ASSERT_TRUE(sync->exit_unknown);
    EXPECT_NE(sync->exit_unknown->find("trace ended"), std::string::npos);
    EXPECT_EQ(sync->result_name, "unknown");
    EXPECT_EQ(sync->result_unknown, "no return seen");
    EXPECT_EQ(sync->ioctls, std::vector<std::uint64_t>{4});
    EXPECT_EQ(r.ioctls[4].pid, 4243);
    EXPECT_EQ(r.ioctls[4].phase, "cuCtxSynchronize");

    const ApiCall* reg = find(r, "cudaHostRegister");
    ASSERT_TRUE(reg);
    EXPECT_EQ(reg->result, 1);
    EXPECT_EQ(reg->result_name, "cudaErrorInvalidValue");
    EXPECT_TRUE(reg->ioctls.empty());
    EXPECT_EQ(reg->args_decoded.at("size"), "4 KiB");

    const ApiCall* load = find(r, "cuModuleLoad");
    ASSERT_TRUE(load);
    EXPECT_EQ(load->args.at("fname"), "\"/tmp/k.cubin\"");
    EXPECT_EQ(load->args_decoded.at("fname"), "/tmp/k.cubin");
    EXPECT_EQ(load->arg_kinds.at("fname"), "string");
    EXPECT_EQ(load->ioctls, std::vector<std::uint64_t>{5});  // an ioctl whose exit is not in the trace either

    // cudaMemcpy__return without its entry: counted, no span; the two unreturned calls counted.
    EXPECT_FALSE(find(r, "cudaMemcpy"));
    EXPECT_EQ(r.completeness.diagnostic_count(Diag::api_return_without_entry), 1u);
    EXPECT_EQ(r.completeness.diagnostic_count(Diag::api_call_unclosed), 2u);
    EXPECT_FALSE(r.completeness.complete);
    // The probe events stay listed as events too.
    std::size_t probe_events = 0;
    for (const EventRecord& e : r.events)
        probe_events += e.text.rfind("(0x", 0) == 0 ? 1 : 0;
    EXPECT_EQ(probe_events, 11u);  // the uprobe lines of the file
}

// A capture's events: the system is the probe group, the text libtraceevent's print of the print fmt; a root call
// of function_graph inside the innermost span on the same thread, none from another thread; recursion pairs
// innermost first; a lost inner return ends the inner span at its caller's return.
TEST(ApiCalls, FromCaptureStream) {
    EventStream st;
    st.comms[10] = "torch";
    st.comms[11] = "torch";
    st.events = {
        probe(1000, 10, "cuMemHostRegister_v2", "(7f1200001000) p=0x7f0000000000 bytesize=4096 Flags=0x1"),
        at(1100, 10, IoctlEnter{3, 0xc030462b, 0}),
        test::entry(1110, 10, "nvidia_ioctl", 0),
        test::exit_(1190, 10, "nvidia_ioctl", 0, 1110, 1190),
        at(1200, 10, IoctlExit{0}),
        at(1150, 11, IoctlEnter{3, 0xc030462b, 0}),  // another thread: no API call of its
        at(1160, 11, IoctlExit{0}),
        probe(1300, 10, "cuMemHostRegister_v2__return", "(7f1200001000 <- 55d0c0a01234) ret=1"),
        // Recursion: f calls f; the returns pair innermost first.
        probe(2000, 10, "cuCtxSynchronize", "(7f1200002000)"),
        probe(2100, 10, "cuCtxSynchronize", "(7f1200002000)"),
        probe(2200, 10, "cuCtxSynchronize__return", "(7f1200002000 <- 7f1200002040) ret=0"),
        probe(2300, 10, "cuCtxSynchronize__return", "(7f1200002000 <- 55d0c0a01300) ret=12345"),
        // A lost inner return: cuMemcpyHtoD_v2's return is missing, cudaMemcpy's closes both.
        probe(3000, 10, "cudaMemcpy", "(7f1300000000) dst=0x7000 src=0x0 count=64 kind=1"),
        probe(3100, 10, "cuMemcpyHtoD_v2", "(7f1200003000) dstDevice=0x7000 srcHost=0x8000 ByteCount=64"),
        probe(3300, 10, "cudaMemcpy__return", "(7f1300000000 <- 55d0c0a01400) ret=35"),
        // A function outside the CUDA table (a --uprobe), its records decoded field by field as a capture
        // directory gives them.
        probe(4000, 11, "getpid", " __probe_ip=7fb4077bb4e0"),
        probe(4010, 11, "getpid__return", " __probe_func=7fb4077bb4e0 __probe_ret_ip=5d591b ret=11"),
    };
    Report r = build_report(st);
    ASSERT_EQ(r.api_calls.size(), 6u) << whole_json(r);
    const ApiCall* reg = find(r, "cuMemHostRegister_v2");
    ASSERT_TRUE(reg);
    EXPECT_EQ(reg->group, "nvtrace_777");
    EXPECT_EQ(reg->result_name, "CUDA_ERROR_INVALID_VALUE");
    EXPECT_FALSE(reg->result_unknown);
    EXPECT_EQ(reg->args_decoded.at("Flags"), "0x1");
    EXPECT_EQ(reg->args_decoded.at("p"), "0x7f0000000000");
    ASSERT_EQ(r.ioctls.size(), 2u);
    EXPECT_EQ(reg->ioctls, std::vector<std::uint64_t>{0});
    EXPECT_EQ(r.ioctls[0].pid, 10);
    ASSERT_EQ(r.calls.size(), 1u);
    EXPECT_EQ(reg->calls, std::vector<std::uint64_t>{1});
    EXPECT_EQ(r.calls[0].phase, "cuMemHostRegister_v2");
    EXPECT_FALSE(r.ioctls[1].phase);  // pid 11 had no API call open

    const ApiCall* outer = find(r, "cuCtxSynchronize", 0);
    const ApiCall* inner = find(r, "cuCtxSynchronize", 1);
    ASSERT_TRUE(outer && inner);
    EXPECT_EQ(inner->parent, outer->id);
    EXPECT_EQ(inner->exit_ns, 2200u);
    EXPECT_EQ(inner->result_name, "CUDA_SUCCESS");
    EXPECT_EQ(outer->exit_ns, 2300u);
    EXPECT_EQ(outer->result, 12345);
    EXPECT_EQ(outer->result_name, "unknown");
    ASSERT_TRUE(outer->result_unknown);
    EXPECT_NE(outer->result_unknown->find("not a CUresult"), std::string::npos);

    const ApiCall* memcpy_rt = find(r, "cudaMemcpy");
    const ApiCall* memcpy_drv = find(r, "cuMemcpyHtoD_v2");
    ASSERT_TRUE(memcpy_rt && memcpy_drv);
    EXPECT_EQ(memcpy_rt->result_name, "cudaErrorInsufficientDriver");
    EXPECT_FALSE(memcpy_drv->exit_ns);
    ASSERT_TRUE(memcpy_drv->exit_unknown);
    EXPECT_NE(memcpy_drv->exit_unknown->find("cudaMemcpy"), std::string::npos);
    EXPECT_EQ(r.completeness.diagnostic_count(Diag::api_call_unclosed), 1u);

    const ApiCall* user = find(r, "getpid");
    ASSERT_TRUE(user);
    EXPECT_EQ(user->api, "unknown");
    EXPECT_FALSE(user->library);
    EXPECT_EQ(user->result, 11);
    EXPECT_EQ(user->result_name, "unknown");
}

// Phase markers keep their phases; API calls name phases only without them.
TEST(ApiCalls, MarkersKeepTheirPhases) {
    EventStream st;
    st.events = {
        at(10, 10, Marker{"nvtrace-phase: alloc"}),
        probe(100, 10, "cuMemAlloc_v2", "(7f1200001000) dptr=0x7ffd0000 bytesize=1024"),
        at(110, 10, IoctlEnter{3, 0xc030462b, 0}),
        at(120, 10, IoctlExit{0}),
        probe(130, 10, "cuMemAlloc_v2__return", "(7f1200001000 <- 55d0c0a01234) ret=0"),
    };
    Report r = build_report(st);
    ASSERT_EQ(r.api_calls.size(), 1u);
    EXPECT_EQ(r.api_calls[0].phase, "alloc");
    ASSERT_EQ(r.ioctls.size(), 1u);
    EXPECT_EQ(r.ioctls[0].phase, "alloc");
    EXPECT_EQ(r.api_calls[0].args_decoded.at("bytesize"), "1 KiB");
}

// The one pipeline: streamed (ReportStream, as `nvtrace run` and `report DIR` write) and held whole give the same
// bytes, api_calls included; report.json read back (DOM and file readers) gives the same api_calls.
TEST(ApiCalls, StreamedAndRoundTrip) {
    EventStream st = text_stream();
    std::stable_sort(st.events.begin(), st.events.end(),
                     [](const Event& a, const Event& b) { return a.ts_ns < b.ts_ns; });
    Report whole = build_report(st);
    ASSERT_FALSE(whole.api_calls.empty());
    std::string bytes = whole_json(whole);
    EXPECT_EQ(streamed_json(st), bytes);

    auto back = report_from_json(nlohmann::json::parse(bytes));
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(whole_json(*back), bytes);
    EXPECT_EQ(to_json(*back)["api_calls"], to_json(whole)["api_calls"]);

    auto path = std::filesystem::temp_directory_path() / "nvtrace-test-api-calls.json";
    {
        std::ofstream out(path);
        out << bytes;
    }
    auto file = read_report_file(path.string());
    std::filesystem::remove(path);
    ASSERT_TRUE(file) << file.error().message;
    EXPECT_EQ(whole_json(*file), bytes);
}

// The summary's per-API table and per-call lines (nvtrace/api_calls.hpp), with the cap on ioctls named per call.
TEST(ApiCalls, SummaryLines) {
    Report r = build_report(text_stream());
    std::vector<std::string> lines = api_call_summary(r.api_calls);
    std::string all;
    for (const auto& l : lines)
        all += l + "\n";
    SCOPED_TRACE(all);
    ASSERT_GE(lines.size(), 2u + 6u + 6u);
    EXPECT_EQ(lines[0], "api calls: 6 (2 threads)");
    EXPECT_EQ(lines[1], "  function           calls  errors  unknown      total us        max us");
    // By total time: cudaMalloc (90 us) first; calls without a return have no known time.
    EXPECT_EQ(lines[2], "  cudaMalloc             1       0        0        90.000        90.000");
    EXPECT_NE(all.find("  cudaHostRegister       1       1        0        10.000        10.000\n"), std::string::npos);
    EXPECT_NE(all.find("  cuCtxSynchronize       1       0        1       unknown       unknown\n"), std::string::npos);
    EXPECT_NE(all.find("\n  cudaMalloc(16 MiB) = cudaSuccess in 90.000 us: 1 ioctl ("), std::string::npos);
    EXPECT_NE(all.find("\n    cuMemAlloc_v2(16 MiB) = CUDA_SUCCESS in 70.000 us: 2 ioctls ("), std::string::npos);
    EXPECT_NE(all.find("\n  cudaHostRegister(4 KiB, 0x0) = cudaErrorInvalidValue in 10.000 us: 0 ioctls\n"),
              std::string::npos);
    EXPECT_NE(all.find("\n  cuCtxSynchronize() = unknown in unknown time: 1 ioctl ("), std::string::npos);
    EXPECT_NE(all.find("ret=-22(EINVAL))"), std::string::npos);  // the worker's failed ioctl
    EXPECT_NE(all.find("\n  cuModuleLoad(/tmp/k.cubin) = unknown in unknown time: 1 ioctl ("), std::string::npos);
    EXPECT_NE(all.find(" ret=?)"), std::string::npos);  // its ioctl never returned

    ApiSummaryOptions capped;
    capped.max_ioctls = 1;
    capped.max_calls = 3;  // cuInit, cudaMalloc, cuMemAlloc_v2
    lines = api_call_summary(r.api_calls, capped);
    all.clear();
    for (const auto& l : lines)
        all += l + "\n";
    EXPECT_NE(all.find(": 2 ioctls ("), std::string::npos);
    EXPECT_NE(all.find(", ... 1 more)\n"), std::string::npos);
    EXPECT_NE(all.find("  ... 3 more API calls; -v prints them all\n"), std::string::npos);
    EXPECT_TRUE(api_call_summary({}).empty());
}

// A real capture directory: `nvtrace run --uprobe libc:getpid -- /usr/bin/python3 -c 'import os
// for _ in range(3): os.getpid()'` on the CI host (kernel 6.18, tests/data/api/README.md), report.json left out.
// Its pages decode the probes field by field; streamed as `nvtrace report DIR` streams it, the report has the three
// getpid calls, each returning the program's pid, with the ioctls made between them outside any API call.
TEST(ApiCalls, RealCaptureDirectoryOfGetpid) {
    auto reader = CaptureDirReader::open(kData + "/api/capture-getpid");
    ASSERT_TRUE(reader) << reader.error().message;
    ASSERT_TRUE(reader->meta().pid);
    const int program = *reader->meta().pid;
    auto rs = ReportStream::open(std::filesystem::temp_directory_path().string(), reader->side());
    ASSERT_TRUE(rs) << rs.error().message;
    auto st = reader->stream([&](Event& ev) {
        (*rs)->add(ev);
        return true;
    });
    ASSERT_TRUE(st) << st.error().message;
    (*rs)->side().diagnostics = reader->side().diagnostics;
    ASSERT_TRUE((*rs)->finish());
    const Report& r = (*rs)->report();
    ASSERT_EQ(r.api_calls.size(), 3u);
    for (const ApiCall& a : r.api_calls) {
        EXPECT_EQ(a.function, "getpid");
        EXPECT_EQ(a.group, "nvtrace_30661");
        EXPECT_EQ(a.pid, program);
        EXPECT_EQ(a.comm, "python3");
        EXPECT_EQ(a.result, program);  // getpid() returns the caller's pid
        EXPECT_EQ(a.result_name, "unknown");
        ASSERT_TRUE(a.exit_ns);
        EXPECT_LT(a.entry_ns, *a.exit_ns);
        EXPECT_FALSE(a.parent);
        EXPECT_TRUE(a.ioctls.empty());
        EXPECT_TRUE(a.args.empty());
    }
    EXPECT_EQ(r.completeness.diagnostic_count(Diag::api_call_unclosed), 0u);
    EXPECT_EQ(r.completeness.diagnostic_count(Diag::api_return_without_entry), 0u);
}

// A capture's meta.json "uprobes" (EventStream::uprobes) says which function of which file each probe event is: a
// second file's probe of cudaMalloc is the event cudaMalloc_2, a --uprobe names a versioned symbol of libc, and
// both carry the library file that was probed and the api the capture chose. Without the record (the other
// events), the table's soname and "unknown" stay.
TEST(ApiCalls, CaptureUprobeRecordsNameLibraryApiAndSymbol) {
    EventStream st;
    st.uprobes = {
        {"nvtrace_777",
         "cudaMalloc_2",
         "cudaMalloc_2__return",
         "/opt/cuda/lib64/libcudart.so.13.0.48",
         "cudaMalloc",
         0x5e0,
         "cuda_runtime",
         {},
         {},
         {}},
        {"nvtrace_777",
         "getpid",
         "getpid__return",
         "/usr/lib/x86_64-linux-gnu/libc.so.6",
         "getpid@@GLIBC_2.2.5",
         0xd54e0,
         "user",
         {},
         {},
         {}},
    };
    st.events = {
        probe(100, 10, "cudaMalloc_2", "(7f1300000000) devPtr=0x7ffc00 size=1048576"),
        probe(200, 10, "cudaMalloc_2__return", "(7f1300000000 <- 55d0c0a01400) ret=35"),
        probe(300, 10, "getpid", "(7fb4077bb4e0)"),
        probe(310, 10, "getpid__return", "(7fb4077bb4e0 <- 5d591b) ret=10"),
        probe(400, 10, "cuInit", "(7f1200000000) Flags=0x0"),
        probe(410, 10, "cuInit__return", "(7f1200000000 <- 7f1300000100) ret=34"),
    };
    Report r = build_report(st);
    ASSERT_EQ(r.api_calls.size(), 3u);
    const ApiCall& malloc_ = r.api_calls[0];
    EXPECT_EQ(malloc_.function, "cudaMalloc");
    EXPECT_EQ(malloc_.library, "/opt/cuda/lib64/libcudart.so.13.0.48");
    EXPECT_EQ(malloc_.api, "cuda_runtime");
    EXPECT_EQ(malloc_.result_name, "cudaErrorInsufficientDriver");  // 35, named through the table by its symbol
    ASSERT_TRUE(malloc_.exit_ns);
    EXPECT_EQ(*malloc_.exit_ns, 200u);
    const ApiCall& getpid_ = r.api_calls[1];
    EXPECT_EQ(getpid_.function, "getpid");
    EXPECT_EQ(getpid_.library, "/usr/lib/x86_64-linux-gnu/libc.so.6");
    EXPECT_EQ(getpid_.api, "user");
    EXPECT_EQ(getpid_.result, 10);
    const ApiCall& init = r.api_calls[2];  // no record: named from the event and the CUDA table
    EXPECT_EQ(init.library, "libcuda.so.1");
    EXPECT_EQ(init.api, "cuda_driver");
    EXPECT_EQ(init.result_name, "CUDA_ERROR_STUB_LIBRARY");
}

// Probes armed on a library mapped after the start (meta.json uprobes[].late_pid, tracer/uprobe_late.hpp): calls
// before the arming are not in the data, so the report counts `uprobes_armed_late` once per file (not per probe),
// its example naming the file, the pid, and when, and is incomplete even though every recorded call is whole.
// Probes armed before the start count nothing.
TEST(ApiCalls, ProbesArmedLateMakeTheReportIncompleteOncePerFile) {
    EventStream st;
    const std::string late = "/tmp/x/libcudart.so.13";
    st.uprobes = {
        {"nvtrace_777",
         "getpid",
         "getpid__return",
         "/usr/lib/x86_64-linux-gnu/libc.so.6",
         "getpid",
         0xd54e0,
         "user",
         {},
         {},
         {}},
        {"nvtrace_777", "cudaMalloc", "cudaMalloc__return", late, "cudaMalloc", 0x50ad0, "cuda_runtime", 4242,
         512300000, 33765297875295},
        {"nvtrace_777", "cudaFree", "cudaFree__return", late, "cudaFree", 0x51000, "cuda_runtime", 4242, 512300000,
         33765297875295},
    };
    st.events = {
        probe(33765297875400, 10, "cudaMalloc", "(7f1300000000) devPtr=0x7ffc00 size=1048576"),
        probe(33765297875500, 10, "cudaMalloc__return", "(7f1300000000 <- 55d0c0a01400) ret=35"),
    };
    Report r = build_report(st);
    ASSERT_EQ(r.api_calls.size(), 1u);
    EXPECT_EQ(r.completeness.diagnostic_count(Diag::uprobes_armed_late), 1u);
    EXPECT_FALSE(r.completeness.complete);
    std::string example;
    for (const auto& d : r.completeness.diagnostics)
        if (d.name == "uprobes_armed_late") example = d.first_example;
    EXPECT_NE(example.find(late + " (2 functions): mapped by pid 4242"), std::string::npos) << example;
    EXPECT_NE(example.find("512.3 ms"), std::string::npos) << example;
    EXPECT_NE(example.find("ts 33765297875295 ns"), std::string::npos) << example;
    bool said = false;
    for (const auto& why : r.completeness.reasons)
        said = said || why.find("uprobes armed late on 1 library") != std::string::npos;
    EXPECT_TRUE(said);

    st.uprobes.resize(1);  // only the probe armed before the start
    Report before = build_report(st);
    EXPECT_EQ(before.completeness.diagnostic_count(Diag::uprobes_armed_late), 0u);
}
