// report_write.hpp: write_json's layout with arrays whose elements were written to files as they were built
// (private to analyze; ReportStream in nvtrace/report_stream.hpp uses it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "nvtrace/error.hpp"
#include "nvtrace/report.hpp"

namespace nvtrace::detail {

// The elements of one array in a file (`fd`, readable, from offset 0): `bytes` long, each element preceded by
// the separator write_json puts before it (import::append_element_separator), `count` elements.
struct StreamedArray {
    int fd = -1;
    std::uint64_t bytes = 0;
    std::uint64_t count = 0;
};
struct StreamedArrays {
    StreamedArray calls;  // only `count` is read: the elements are in the output already
    StreamedArray ioctls, events, markers;
};

// The first bytes of every report write_json writes, up to its first call element: `{` and the opening of
// "calls". A streamed report writes them, then its call elements (each with its separator).
std::string_view streamed_report_head();

// The rest of write_json(r)'s bytes after streamed_report_head() and `streamed.calls.count` call elements, with
// `streamed`'s ioctls, events and markers in place of r.ioctls, r.events and r.markers, to `fd`. Error::environment
// with the system's reason when a write fails.
Result<void> write_report_tail(const Report& r, const StreamedArrays& streamed, int fd);

// write_json(r)'s bytes to `fd`. Error::environment with the system's reason when a write fails.
Result<void> write_report_fd(const Report& r, int fd);

// write(2) of `n` bytes, again after a short write or EINTR; on a failure `error` gets the system's reason. The
// bytes written.
std::size_t write_all(int fd, const char* p, std::size_t n, std::string& error);

// `bytes` from offset 0 of `from` to `to` (copy_file_range, else sendfile, else read/write).
Result<void> copy_fd(int from, std::uint64_t bytes, int to);

}  // namespace nvtrace::detail
