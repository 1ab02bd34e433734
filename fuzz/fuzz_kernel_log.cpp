// libFuzzer target for the kernel-log reader: any bytes must parse without a crash, a hang or UB, and the
// JSON writer must accept whatever the reader kept (invalid UTF-8 included).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "nvtrace/kernel_log.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    auto parse = nvtrace::read_kernel_log(text, "fuzz.log");
    (void)nvtrace::kernel_log_json(parse);
    for (const auto& m : parse.messages)
        (void)nvtrace::format_kernel_log_message(m);
    return 0;
}
