// kmsg_reader.hpp: /dev/kmsg records from the moment start() was called.
//
// /dev/kmsg semantics (Documentation/ABI/testing/dev-kmsg): one record per read(); SEEK_END positions at
// the next record; EPIPE means records were overwritten before we read them (we keep reading).
// Thread-safety: one thread.
#pragma once

#include <vector>

#include "nvtrace/error.hpp"
#include "nvtrace/event.hpp"

namespace nvtrace::tracer {

class KmsgReader {
public:
    KmsgReader() = default;
    KmsgReader(const KmsgReader&) = delete;
    KmsgReader& operator=(const KmsgReader&) = delete;
    ~KmsgReader();

    // Opens /dev/kmsg non-blocking and skips every record already there.
    Result<void> start();
    // Reads every record available now.
    void poll();

    std::vector<KmsgRecordText>& records() { return records_; }
    bool overwritten() const { return overwritten_; }

private:
    int fd_ = -1;
    std::vector<KmsgRecordText> records_;
    bool overwritten_ = false;
};

}  // namespace nvtrace::tracer
