// Checks that name API calls (docs/expectations.md: `api F [= RESULT]`, `... in api F`) on the report of
// tests/data/api/cuda_uprobes.trace (a `trace` text file of uprobe and syscall events, its README.md says where
// each line's shape comes from) and on a synthetic stream with function_graph calls inside API calls: pass, fail
// with what was seen, inconclusive when no API calls were recorded or the result is unknown; parse errors for
// what no report could match.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "nvtrace/expect.hpp"
#include "nvtrace/import.hpp"
#include "nvtrace/report.hpp"

namespace nvtrace {
namespace {

// `whole`: as recorded, with its cudaMemcpy return whose entry is missing; else without that line (nothing lost).
Report traced(bool whole = true) {
    auto r = import_file(std::string(NVTRACE_CHECK_DATA_DIR) + "/../../../data/api/cuda_uprobes.trace");
    if (!r) {
        ADD_FAILURE() << r.error().message;
        return {};
    }
    if (!whole)
        std::erase_if(r->stream.events, [](const Event& ev) {
            const auto* o = std::get_if<OtherEvent>(&ev.body);
            return o && o->name == "cudaMemcpy__return";
        });
    return build_report(r->stream);
}

std::map<std::string, Check> run(const Report& r, std::string_view text) {
    auto e = parse_expectations(text, "api.expect");
    if (!e) ADD_FAILURE() << e.error().message;
    std::map<std::string, Check> m;
    if (!e) return m;
    for (auto& c : check_report(r, *e))
        m[c.id] = c;
    return m;
}

std::string dump(const std::map<std::string, Check>& m) {
    std::ostringstream s;
    for (const auto& [id, c] : m)
        s << "\n  " << c.result << " " << id << " | " << c.evidence << " | " << c.why;
    return s.str();
}

TEST(CheckApi, ResultsPassFailAndUnknownIsInconclusive) {
    Report r = traced();
    ASSERT_FALSE(r.api_calls.empty());
    auto m = run(r, R"(
check reg-fails
  api cudaHostRegister = cudaErrorInvalidValue
check reg-by-number
  api cudaHostRegister = 1
check reg-wrong
  api cudaHostRegister = cudaSuccess
check init-ok
  api cuInit=CUDA_SUCCESS
check called
  api cuMemAlloc_v2
check never-called
  api cuMemFree_v2
check not-freed
  absent api cuMemFree_v2
check not-failed
  absent api cuMemAlloc_v2 = CUDA_ERROR_OUT_OF_MEMORY
check sync-unknown
  api cuCtxSynchronize = CUDA_SUCCESS
check alloc-in-phase
  phase cudaMalloc
  api cuMemAlloc_v2 = CUDA_SUCCESS
)");
    SCOPED_TRACE(dump(m));
    EXPECT_EQ(m["reg-fails"].result, "pass");
    EXPECT_NE(m["reg-fails"].evidence.find("cudaHostRegister#"), std::string::npos);
    EXPECT_EQ(m["reg-by-number"].result, "pass");
    // Not seen with that result, but an API call's entry was lost: it may have been one.
    EXPECT_EQ(m["reg-wrong"].result, "inconclusive");
    EXPECT_NE(m["reg-wrong"].evidence.find("cudaErrorInvalidValue"), std::string::npos);
    EXPECT_NE(m["reg-wrong"].why.find("without their entry"), std::string::npos);
    EXPECT_EQ(m["init-ok"].result, "pass");
    EXPECT_EQ(m["called"].result, "pass");
    // A cudaMemcpy return came without its entry: what was not seen may have been lost.
    EXPECT_EQ(m["never-called"].result, "inconclusive");
    EXPECT_EQ(m["not-freed"].result, "inconclusive");
    EXPECT_NE(m["not-freed"].why.find("without their entry"), std::string::npos);
    EXPECT_EQ(m["not-failed"].result, "inconclusive");
    EXPECT_EQ(m["sync-unknown"].result, "inconclusive");  // the run ended inside it
    EXPECT_NE(m["sync-unknown"].why.find("no return seen"), std::string::npos);
    EXPECT_EQ(m["alloc-in-phase"].result, "pass");  // the phase named by the top API call (no markers)

    // Nothing lost: what was not seen is decided.
    Report complete_api = traced(false);
    EXPECT_EQ(complete_api.completeness.diagnostic_count(Diag::api_return_without_entry), 0u);
    m = run(complete_api, R"(
check reg-wrong
  api cudaHostRegister = cudaSuccess
check never-called
  api cuMemFree_v2
check not-freed
  absent api cuMemFree_v2
check not-failed
  absent api cuMemAlloc_v2 = CUDA_ERROR_OUT_OF_MEMORY
check failed
  absent api cudaHostRegister = cudaErrorInvalidValue
)");
    SCOPED_TRACE(dump(m));
    EXPECT_EQ(m["reg-wrong"].result, "fail");
    EXPECT_NE(m["reg-wrong"].evidence.find("1 call(s) of cudaHostRegister, none with that result"), std::string::npos);
    EXPECT_EQ(m["never-called"].result, "fail");
    EXPECT_NE(m["never-called"].evidence.find("cuMemFree_v2 is never called"), std::string::npos);
    EXPECT_EQ(m["not-freed"].result, "pass");
    EXPECT_EQ(m["not-failed"].result, "pass");
    EXPECT_EQ(m["failed"].result, "fail");
}

TEST(CheckApi, NoApiCallsIsInconclusive) {
    EventStream st;
    st.events = {Event{100, 0, 10, true, IoctlEnter{3, 0xc030462b, 0}}, Event{200, 0, 10, true, IoctlExit{0}}};
    Report r = build_report(st);
    auto m = run(r, R"(
check a
  api cuInit = CUDA_SUCCESS
check b
  absent api cuInit
check c
  ioctl NV_ESC_RM_ALLOC in api cuMemAlloc_v2
)");
    SCOPED_TRACE(dump(m));
    for (const char* id : {"a", "b", "c"}) {
        EXPECT_EQ(m[id].result, "inconclusive") << id;
        EXPECT_NE(m[id].why.find("no API calls"), std::string::npos) << id;
    }
}

// `chain ... in api F` and `ioctl ... in api F`: only records made inside F (its own, and those of the API calls
// it made); a chain run outside F does not count.
TEST(CheckApi, ChainsAndIoctlsUnderAnApiCall) {
    auto probe = [](std::uint64_t ts, const char* name, const char* fields) {
        return Event{ts, 0, 10, true, OtherEvent{"nvtrace_1", name, fields}};
    };
    auto fe = [](std::uint64_t ts, const char* fn, int depth) {
        FuncEntry e;
        e.function = fn;
        e.depth = depth;
        return Event{ts, 0, 10, true, e};
    };
    auto fx = [](std::uint64_t ts, const char* fn, int depth, std::uint64_t from) {
        FuncExit x;
        x.function = fn;
        x.depth = depth;
        x.calltime_ns = from;
        x.rettime_ns = ts;
        return Event{ts, 0, 10, true, x};
    };
    EventStream st;
    st.events = {
        // Outside any API call: nvidia_ioctl > nv_alloc_pages.
        Event{50, 0, 10, true, IoctlEnter{3, 0xc030462b, 0}},
        fe(51, "nvidia_ioctl", 0),
        fe(52, "nv_alloc_pages", 1),
        fx(53, "nv_alloc_pages", 1, 52),
        fx(54, "nvidia_ioctl", 0, 51),
        Event{55, 0, 10, true, IoctlExit{0}},
        // cudaMalloc > cuMemAlloc_v2, whose ioctl runs nvidia_ioctl > rm_alloc.
        probe(100, "cudaMalloc", "(7f0000001000) devPtr=0x7ffd0000 size=4096"),
        probe(110, "cuMemAlloc_v2", "(7f0000002000) dptr=0x7ffd0010 bytesize=4096"),
        Event{120, 0, 10, true, IoctlEnter{3, 0xc030462b, 0}},
        fe(121, "nvidia_ioctl", 0),
        fe(122, "rm_alloc", 1),
        fx(123, "rm_alloc", 1, 122),
        fx(124, "nvidia_ioctl", 0, 121),
        Event{130, 0, 10, true, IoctlExit{0}},
        probe(140, "cuMemAlloc_v2__return", "(7f0000002000 <- 7f0000001040) ret=0"),
        probe(150, "cudaMalloc__return", "(7f0000001000 <- 55d0c0a01234) ret=0"),
    };
    Report r = build_report(st);
    ASSERT_EQ(r.api_calls.size(), 2u);
    auto m = run(r, R"(
check alloc-chain
  chain nvidia_ioctl > rm_alloc in api cuMemAlloc_v2
check outer-holds-inner
  chain nvidia_ioctl > rm_alloc in api cudaMalloc
check not-inside
  chain nvidia_ioctl > nv_alloc_pages in api cudaMalloc
check absent-inside
  absent call nv_alloc_pages in api cudaMalloc
check ioctl-inside
  ioctl NV_ESC_RM_ALLOC in api cuMemAlloc_v2
check no-such-api
  call nvidia_ioctl in api cuMemFree_v2
)");
    SCOPED_TRACE(dump(m));
    EXPECT_EQ(m["alloc-chain"].result, "pass");
    EXPECT_EQ(m["outer-holds-inner"].result, "pass");
    EXPECT_EQ(m["not-inside"].result, "fail");
    EXPECT_EQ(m["absent-inside"].result, "pass");
    EXPECT_EQ(m["ioctl-inside"].result, "pass");
    EXPECT_EQ(m["no-such-api"].result, "fail");
    EXPECT_NE(m["no-such-api"].evidence.find("cuMemFree_v2 is never called"), std::string::npos);
}

// What no report could match is refused with the place and what was expected.
TEST(CheckApi, ParseErrors) {
    auto err = [](std::string_view text) {
        auto e = parse_expectations(text, "api.expect");
        return e ? std::string("parsed") : e.error().message;
    };
    EXPECT_NE(err("check a\n  api cuInit = CUDA_ERROR_NOT_INITIALISED\n")
                  .find("api.expect:2:16: expected a CUresult or cudaError_t name"),
              std::string::npos);
    EXPECT_NE(err("check a\n  api\n").find("api.expect:2:6: expected an API function name"), std::string::npos);
    EXPECT_NE(err("check a\n  chain f > g in api\n").find("expected an API function name after 'in api'"),
              std::string::npos);
    EXPECT_NE(err("check a\n  log xid in api cuInit\n").find("expected chain, call or ioctl before 'in api'"),
              std::string::npos);
    EXPECT_EQ(err("check a\n  api cuInit = 0x0\n  absent api cuMemFree_v2 = -1 when driver >= 580\n"), "parsed");
}

}  // namespace
}  // namespace nvtrace
