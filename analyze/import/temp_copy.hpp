// temp_copy.hpp: an input that must be a file (libtracecmd seeks in it; the text streamer maps it) copied into an
// unlinked file of a temporary directory: disk, not a second copy in memory, and nothing left behind when the
// process ends however it ends. Used for standard input and pipes (trace_dat.cpp, stream_report.cpp).
#pragma once

#include <string>
#include <string_view>

#include "nvtrace/error.hpp"

namespace nvtrace::import {

// The copy's descriptor (O_RDWR, at offset 0), from bytes in memory or from `from_fd` read to its end. `dir`:
// where (O_TMPFILE; a named file removed at once where the file system has none); `name` names the input in
// messages. Errors: Error::environment (no file can be made or written in `dir`), Error::usage (`from_fd`
// cannot be read).
Result<int> temp_copy(std::string_view bytes, const std::string& dir, const std::string& name);
Result<int> temp_copy(int from_fd, const std::string& dir, const std::string& name);

}  // namespace nvtrace::import
