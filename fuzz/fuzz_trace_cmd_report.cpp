// libFuzzer target for nvtrace::read_trace_cmd_report (analyze/import): any bytes must give events or an error, never a
// crash, and the report built from them must serialise (invalid UTF-8 is replaced by the reader).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "../analyze/json_values.hpp"
#include "nvtrace/import.hpp"
#include "nvtrace/report.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    auto stream = nvtrace::read_trace_cmd_report(text, "fuzz.txt");
    if (stream) (void)nvtrace::to_json(nvtrace::build_report(*stream)).dump();
    if (size < 4096) (void)nvtrace::detect_format(text);
    return 0;
}
