// The API-call part of nvtrace diff (analyze/diff/api_diff.cpp): two small reports whose api_calls differ in
// count, result, latency and in the ioctls made inside them; reports without API calls have no API section.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../../../analyze/json_values.hpp"
#include "nvtrace/diff.hpp"
#include "nvtrace/report_io.hpp"

using namespace nvtrace;

namespace {

ApiCall call(const char* function, const char* api, std::uint64_t entry, std::optional<std::uint64_t> dur,
             std::optional<std::int64_t> result, const char* result_name, std::vector<std::string> ioctls = {}) {
    static std::uint64_t next_id = 1;
    ApiCall c;
    c.id = next_id++;
    c.pid = 7;
    c.comm = "app";
    c.function = function;
    c.api = api;
    c.library = std::string(api) == "cuda_runtime" ? "libcudart.so.13" : "libcuda.so.1";
    c.entry_ns = entry;
    if (dur) c.exit_ns = entry + *dur;
    c.result = result;
    c.result_name = result_name;
    c.ioctl_names = std::move(ioctls);
    return c;
}

Report report(std::vector<ApiCall> calls) {
    Report r;
    r.api_calls = std::move(calls);
    return r;
}

const ApiDiffRow* find(const DiffResult& d, const std::string& function) {
    for (const auto& r : d.api_calls)
        if (r.function == function) return &r;
    return nullptr;
}

constexpr const char* kAlloc = "NV_ESC_RM_ALLOC hClass NV01_MEMORY_SYSTEM(0x3e)";
constexpr const char* kMap = "UVM_MAP_EXTERNAL_ALLOCATION";

// A: cuInit once; cuMemHostRegister_v2 x3 succeeding in 10 us each with one RM_ALLOC inside; cuMemAlloc_v2 x2 at
// 20 us; cudaFree once. B: cuInit the same; cuMemHostRegister_v2 x3 failing with CUDA_ERROR_INVALID_VALUE, no
// ioctl inside; cuMemAlloc_v2 x3, one of them 100 us long, each with a RM_ALLOC and a UVM map; cudaFree not called;
// cudaMalloc called once.
std::pair<Report, Report> pair() {
    Report a = report({
        call("cuInit", "cuda_driver", 100, 5000, 0, "CUDA_SUCCESS"),
        call("cuMemHostRegister_v2", "cuda_driver", 10'000, 10'000, 0, "CUDA_SUCCESS", {kAlloc}),
        call("cuMemHostRegister_v2", "cuda_driver", 30'000, 10'000, 0, "CUDA_SUCCESS", {kAlloc}),
        call("cuMemHostRegister_v2", "cuda_driver", 50'000, 10'000, 0, "CUDA_SUCCESS", {kAlloc}),
        call("cuMemAlloc_v2", "cuda_driver", 70'000, 20'000, 0, "CUDA_SUCCESS", {kAlloc}),
        call("cuMemAlloc_v2", "cuda_driver", 100'000, 20'000, 0, "CUDA_SUCCESS", {kAlloc}),
        call("cudaFree", "cuda_runtime", 130'000, 1000, 0, "cudaSuccess"),
    });
    Report b = report({
        call("cuInit", "cuda_driver", 100, 5100, 0, "CUDA_SUCCESS"),
        call("cuMemHostRegister_v2", "cuda_driver", 10'000, 9000, 1, "CUDA_ERROR_INVALID_VALUE"),
        call("cuMemHostRegister_v2", "cuda_driver", 30'000, 9000, 1, "CUDA_ERROR_INVALID_VALUE"),
        call("cuMemHostRegister_v2", "cuda_driver", 50'000, 9000, 1, "CUDA_ERROR_INVALID_VALUE"),
        call("cuMemAlloc_v2", "cuda_driver", 70'000, 20'000, 0, "CUDA_SUCCESS", {kAlloc, kMap}),
        call("cuMemAlloc_v2", "cuda_driver", 100'000, 100'000, 0, "CUDA_SUCCESS", {kAlloc, kMap}),
        call("cuMemAlloc_v2", "cuda_driver", 210'000, 20'000, 0, "CUDA_SUCCESS", {kAlloc, kMap}),
        call("cudaMalloc", "cuda_runtime", 240'000, 2000, 2, "cudaErrorMemoryAllocation"),
    });
    return {std::move(a), std::move(b)};
}

}  // namespace

TEST(DiffApiCalls, CountResultLatencyAndIoctls) {
    auto [a, b] = pair();
    DiffResult d = diff_reports(a, b, DiffOptions{});
    EXPECT_TRUE(d.api_compared);
    EXPECT_EQ(d.api_summary.added, 1u);    // cudaMalloc
    EXPECT_EQ(d.api_summary.removed, 1u);  // cudaFree
    EXPECT_EQ(d.api_summary.count_changes, 1u);
    EXPECT_EQ(d.api_summary.result_changes, 1u);
    EXPECT_EQ(d.api_summary.latency_changes, 1u);
    EXPECT_EQ(d.api_summary.ioctl_changes, 2u);  // cuMemHostRegister_v2 lost its RM_ALLOC, cuMemAlloc_v2 maps
    EXPECT_TRUE(d.any_change());
    ASSERT_EQ(d.api_calls.size(), 4u);  // cuInit is unchanged (+100 ns is below the threshold)
    EXPECT_FALSE(find(d, "cuInit"));
    // Added and removed first (cudaFree before cudaMalloc: one call each, then by key), then the changed ones.
    EXPECT_EQ(d.api_calls[0].status, DiffStatus::removed);
    EXPECT_EQ(d.api_calls[1].status, DiffStatus::added);
    EXPECT_EQ(d.api_calls[2].function, "cuMemAlloc_v2");  // 3 calls in B before cuMemHostRegister_v2's 3: by key

    const ApiDiffRow* reg = find(d, "cuMemHostRegister_v2");
    ASSERT_TRUE(reg);
    EXPECT_EQ(reg->status, DiffStatus::changed);
    EXPECT_FALSE(reg->count_changed);
    EXPECT_TRUE(reg->results_changed);
    EXPECT_EQ(reg->a->results, (std::map<std::string, std::uint64_t>{{"CUDA_SUCCESS", 3}}));
    EXPECT_EQ(reg->b->results, (std::map<std::string, std::uint64_t>{{"CUDA_ERROR_INVALID_VALUE", 3}}));
    EXPECT_FALSE(reg->total_changed);  // -3 us: below 10 us
    ASSERT_EQ(reg->ioctl_changes.size(), 1u);
    EXPECT_EQ(reg->ioctl_changes[0].ioctl, kAlloc);
    EXPECT_EQ(reg->ioctl_changes[0].a, 3u);
    EXPECT_EQ(reg->ioctl_changes[0].b, 0u);

    const ApiDiffRow* alloc = find(d, "cuMemAlloc_v2");
    ASSERT_TRUE(alloc);
    EXPECT_TRUE(alloc->count_changed);
    EXPECT_EQ(alloc->delta_count, 1);
    EXPECT_FALSE(alloc->results_changed);  // more successful calls: a count change only
    EXPECT_TRUE(alloc->total_changed);
    EXPECT_EQ(alloc->delta_total_ns, 100'000);  // 40 us -> 140 us
    EXPECT_TRUE(alloc->max_changed);
    EXPECT_EQ(alloc->delta_max_ns, 80'000);  // 20 us -> 100 us
    EXPECT_DOUBLE_EQ(*alloc->rel_max, 4.0);
    ASSERT_EQ(alloc->ioctl_changes.size(), 2u);  // by label
    EXPECT_EQ(alloc->ioctl_changes[0].ioctl, kAlloc);
    EXPECT_EQ(alloc->ioctl_changes[0].a, 2u);
    EXPECT_EQ(alloc->ioctl_changes[0].b, 3u);
    EXPECT_EQ(alloc->ioctl_changes[1].ioctl, kMap);
    EXPECT_EQ(alloc->ioctl_changes[1].a, 0u);

    const ApiDiffRow* added = find(d, "cudaMalloc");
    ASSERT_TRUE(added && added->b && !added->a);
    EXPECT_EQ(added->library, "libcudart.so.13");
    EXPECT_EQ(added->b->results.at("cudaErrorMemoryAllocation"), 1u);

    // A bigger threshold leaves the latency out, not the structure.
    DiffOptions loose;
    loose.threshold.min_abs_ns = 200'000;
    DiffResult l = diff_reports(a, b, loose);
    EXPECT_EQ(l.api_summary.latency_changes, 0u);
    EXPECT_EQ(l.api_summary.count_changes, 1u);
}

TEST(DiffApiCalls, TextAndJson) {
    auto [a, b] = pair();
    DiffResult d = diff_reports(a, b, DiffOptions{});
    const std::string text = format_diff_text(d);
    EXPECT_NE(text.find("# API calls by (api, function); latency changes need |delta| >= 10.000 us and >= 20% of A, "
                        "of the total or the max\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("#  1 added function(s), 1 removed function(s), 1 count change(s), 1 result change(s), 1 "
                        "latency change(s), 2 with ioctl changes\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("cuMemHostRegister_v2 (cuda_driver)  [results, ioctls]\n"), std::string::npos) << text;
    EXPECT_NE(text.find("results: CUDA_SUCCESS x3 -> CUDA_ERROR_INVALID_VALUE x3\n"), std::string::npos) << text;
    EXPECT_NE(text.find("cuMemAlloc_v2 (cuda_driver)  [calls +1, total, max, ioctls]\n"), std::string::npos) << text;
    EXPECT_NE(text.find("max: 20.000 us -> 100.000 us: +80.000 us (+400.0%)\n"), std::string::npos) << text;
    EXPECT_NE(text.find(std::string("ioctls: ") + kAlloc + " x2 -> x3; " + kMap + " x0 -> x3\n"), std::string::npos)
        << text;
    EXPECT_NE(text.find("\n+      - -> 1 "), std::string::npos) << text;
    EXPECT_NE(text.find("cudaMalloc (cuda_runtime)\n"), std::string::npos) << text;
    EXPECT_NE(text.find("\n-      1 -> -  "), std::string::npos) << text;
    // No calls in either: the header says what is compared.
    EXPECT_NE(text.find("only the ioctls and API calls are compared"), std::string::npos) << text;

    nlohmann::json j = to_json(d)["api_calls"];
    EXPECT_EQ(j["compared"], true);
    EXPECT_EQ(j["summary"]["result_changes"], 1);
    EXPECT_EQ(j["summary"]["any_change"], true);
    ASSERT_EQ(j["rows"].size(), 4u);
    nlohmann::json reg;
    for (const auto& r : j["rows"])
        if (r["function"] == "cuMemHostRegister_v2") reg = r;
    ASSERT_TRUE(reg.is_object());
    EXPECT_EQ(reg["api"], "cuda_driver");
    EXPECT_EQ(reg["library"], "libcuda.so.1");
    EXPECT_EQ(reg["status"], "changed");
    EXPECT_EQ(reg["changes"], (nlohmann::json{"results", "ioctls"}));
    EXPECT_EQ(reg["a"]["results"]["CUDA_SUCCESS"], 3);
    EXPECT_EQ(reg["b"]["results"]["CUDA_ERROR_INVALID_VALUE"], 3);
    EXPECT_EQ(reg["a"]["max_ns"], 10'000);
    EXPECT_EQ(reg["delta_total_ns"], -3000);
    EXPECT_EQ(reg["ioctl_changes"][0]["ioctl"], kAlloc);
    EXPECT_EQ(reg["ioctl_changes"][0]["b"], 0);
}

TEST(DiffApiCalls, UnknownReturnsAndRawResults) {
    // A lost return is its own result class and leaves the latency of the known calls; a --uprobe's unnamed
    // results are classed (0, errno, other) so that a pid returned by getpid is no change between two runs.
    Report a =
        report({call("cuCtxSynchronize", "cuda_driver", 100, 1000, 0, "CUDA_SUCCESS"),
                call("getpid", "unknown", 200, 10, 4242, "unknown"), call("write", "user", 300, 10, -9, "unknown")});
    Report b =
        report({call("cuCtxSynchronize", "cuda_driver", 100, std::nullopt, std::nullopt, "unknown"),
                call("getpid", "unknown", 200, 10, 5151, "unknown"), call("write", "user", 300, 10, -9, "unknown")});
    DiffResult d = diff_reports(a, b, DiffOptions{});
    ASSERT_EQ(d.api_calls.size(), 1u);
    const ApiDiffRow& sync = d.api_calls[0];
    EXPECT_EQ(sync.function, "cuCtxSynchronize");
    EXPECT_TRUE(sync.results_changed);
    EXPECT_EQ(sync.b->results.at("unknown"), 1u);
    EXPECT_EQ(sync.b->unknown_durations, 1u);
    EXPECT_FALSE(sync.b->max_ns);
    EXPECT_FALSE(sync.delta_total_ns);  // B has no known duration: not compared
    EXPECT_FALSE(sync.total_changed);

    DiffOptions all;
    all.keep_unchanged = true;
    DiffResult k = diff_reports(a, b, all);
    ASSERT_EQ(k.api_calls.size(), 3u);
    for (const auto& r : k.api_calls) {
        if (r.function == "getpid") {
            EXPECT_EQ(r.status, DiffStatus::same);
            EXPECT_EQ(r.a->results.at("other"), 1u);
        }
        if (r.function == "write") {
            EXPECT_EQ(r.a->results.at("-9 (EBADF)"), 1u);
        }
    }
}

TEST(DiffApiCalls, PhaseRestricts) {
    auto [a, b] = pair();
    for (auto* r : {&a, &b})
        for (ApiCall& c : r->api_calls)
            c.phase = c.function == std::string("cuInit") ? "init" : "work";
    DiffOptions o;
    o.phase = "init";
    DiffResult d = diff_reports(a, b, o);
    EXPECT_TRUE(d.api_compared);
    EXPECT_FALSE(d.api_summary.any());
    EXPECT_NE(format_diff_text(d).find("# API calls by (api, function), phase init;"), std::string::npos);
    EXPECT_NE(format_diff_text(d).find("#  no API call change\n"), std::string::npos);
}

TEST(DiffApiCalls, ReportsWithoutApiCallsHaveNoApiSection) {
    auto r = read_report_file(std::string(NVTRACE_TEST_DATA) + "/reports/baseline.json");
    ASSERT_TRUE(r) << r.error().message;
    auto s = read_report_file(std::string(NVTRACE_TEST_DATA) + "/reports/added_path.json");
    ASSERT_TRUE(s) << s.error().message;
    ASSERT_TRUE(r->api_calls.empty() && s->api_calls.empty());
    DiffResult d = diff_reports(*r, *s, DiffOptions{});
    EXPECT_FALSE(d.api_compared);
    EXPECT_TRUE(d.api_calls.empty());
    EXPECT_FALSE(d.api_summary.any());
    const std::string text = format_diff_text(d);
    EXPECT_EQ(text.find("API call"), std::string::npos) << text;
    nlohmann::json j = to_json(d)["api_calls"];
    EXPECT_EQ(j["compared"], false);
    EXPECT_TRUE(j["rows"].empty());
    // One side with API calls: every function is added.
    Report with = *s;
    with.api_calls.push_back(call("cuInit", "cuda_driver", 1, 10, 0, "CUDA_SUCCESS"));
    DiffResult e = diff_reports(*r, with, DiffOptions{});
    EXPECT_TRUE(e.api_compared);
    EXPECT_EQ(e.api_summary.added, 1u);
}
