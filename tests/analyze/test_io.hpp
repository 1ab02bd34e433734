// Small file helpers shared by the analyze tests.
#pragma once

#include <unistd.h>

#include <string>

namespace nvtrace::test {

// Everything in `fd` from its start (it is rewound first).
inline std::string read_fd(int fd) {
    std::string out;
    char buf[65536];
    ::lseek(fd, 0, SEEK_SET);
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;)
        out.append(buf, static_cast<std::size_t>(n));
    return out;
}

}  // namespace nvtrace::test
