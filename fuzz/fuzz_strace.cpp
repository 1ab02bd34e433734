// libFuzzer target for nvtrace::parse_strace (analyze/knowledge/strace.cpp) and the strace import (strace text,
// gVisor's strace lines): any bytes must give a log or an error, never a crash, and the report built from them
// must serialise.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "../analyze/json_values.hpp"
#include "nvtrace/import.hpp"
#include "nvtrace/knowledge.hpp"
#include "nvtrace/report.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    nvtrace::StraceLog log = nvtrace::parse_strace(text, "fuzz.txt");
    (void)nvtrace::strace_ioctl_records(log);
    auto in = nvtrace::import_text(text, "fuzz.txt", nvtrace::TraceFormat::strace);
    if (in) (void)nvtrace::to_json(nvtrace::build_report(in->stream)).dump();
    return 0;
}
