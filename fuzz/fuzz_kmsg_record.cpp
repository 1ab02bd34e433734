// libFuzzer target for one /dev/kmsg record (parse_kmsg_record) and the classifier run on its message, as
// build_report does for captured records.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "nvtrace/kernel_log.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view record(reinterpret_cast<const char*>(data), size);
    auto r = nvtrace::parse_kmsg_record(record);
    if (r) {
        nvtrace::KernelLogMessage m;
        m.text = r->message;
        nvtrace::classify_kernel_message(m);
    }
    return 0;
}
