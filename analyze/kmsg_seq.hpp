// kmsg_seq.hpp: gaps in /dev/kmsg sequence numbers (private to analyze). The kernel numbers every record it logs,
// one after the other; a reader that fell behind the ring buffer gets EPIPE and then the oldest record still there,
// "The passed sequence numbers allow the log consumer to calculate the amount of lost messages" (commit e11fea92e13f,
// kmsg: export printk records to the /dev/kmsg interface; Documentation/ABI/testing/dev-kmsg). One rule for the
// kernel-log reader (a file of records) and the report builder (a live capture's records).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <fmt/format.h>

namespace nvtrace {

struct KmsgSeqGap {
    std::uint64_t missing = 0;  // records between the two, none of them read
    std::string text;           // "seq 9 follows seq 6: 2 record(s) missing"
};

// The records missing between a record of sequence number `seq` and the one read before it (`last`; none for the
// first). A step back (another boot, the buffer read again) or the next number is no gap. Pure.
inline std::optional<KmsgSeqGap> kmsg_seq_gap(const std::optional<std::uint64_t>& last, std::uint64_t seq) {
    if (!last || seq <= *last + 1) return std::nullopt;
    const std::uint64_t missing = seq - *last - 1;
    return KmsgSeqGap{missing, fmt::format("seq {} follows seq {}: {} record(s) missing", seq, *last, missing)};
}

}  // namespace nvtrace
