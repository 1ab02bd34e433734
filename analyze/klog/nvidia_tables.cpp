// The kernel-log reader's view of the NVIDIA knowledge tables (analyze/knowledge/, nvtrace/knowledge.hpp): one
// table of NV_STATUS codes (nvstatuscodes.h) and one of Xids (nverror.h) serve both the ioctl describer and the
// kernel-log classifiers. Without a driver version the newest entry is used: a log line does not say its version.
#include "klog.hpp"
#include "nvtrace/knowledge.hpp"

namespace nvtrace::klog {

std::optional<NvStatusInfo> nv_status_info(std::uint32_t code) {
    const auto* s = nvtrace::nv_status(code);
    if (!s) return std::nullopt;
    return NvStatusInfo{s->name, s->message};
}

std::optional<std::uint32_t> nv_status_code(std::string_view name) {
    const auto* s = nvtrace::nv_status_by_name(name);
    if (!s) return std::nullopt;
    return s->value;
}

std::optional<std::string_view> xid_name(int xid) {
    if (xid < 0) return std::nullopt;
    const auto* x = nvtrace::xid_info(static_cast<unsigned>(xid));
    // Only nverror.h's mnemonics: a name from NVIDIA's Xid catalog alone is not what the driver calls it.
    if (!x || x->source != XidSource::header) return std::nullopt;
    return x->mnemonic;
}

}  // namespace nvtrace::klog
