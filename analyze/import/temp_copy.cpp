// temp_copy (temp_copy.hpp).
#include "temp_copy.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "../report_write.hpp"

namespace nvtrace::import {

namespace {

Result<int> open_unlinked(const std::string& dir, const std::string& name) {
    int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) {
        std::string tmpl = dir + "/.nvtrace-input-XXXXXX";
        fd = ::mkostemp(tmpl.data(), O_CLOEXEC);
        if (fd >= 0) ::unlink(tmpl.c_str());
    }
    if (fd < 0)
        return fail(Error::environment(
            fmt::format("{}: cannot make a temporary copy in {}: {}", name, dir, std::strerror(errno))));
    return fd;
}

Result<void> append(int fd, const char* p, std::size_t n, const std::string& dir, const std::string& name) {
    std::string error;
    if (detail::write_all(fd, p, n, error) != n)
        return fail(Error::environment(fmt::format("{}: cannot write its temporary copy in {}: {}", name, dir,
                                                   error.empty() ? "short write" : error)));
    return {};
}

}  // namespace

Result<int> temp_copy(std::string_view bytes, const std::string& dir, const std::string& name) {
    auto fd = open_unlinked(dir, name);
    if (!fd) return fd;
    if (auto w = append(*fd, bytes.data(), bytes.size(), dir, name); !w) {
        ::close(*fd);
        return fail(w.error());
    }
    ::lseek(*fd, 0, SEEK_SET);
    return fd;
}

Result<int> temp_copy(int from_fd, const std::string& dir, const std::string& name) {
    auto fd = open_unlinked(dir, name);
    if (!fd) return fd;
    char buf[1 << 16];
    for (;;) {
        ssize_t n = ::read(from_fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int err = errno;
            ::close(*fd);
            return fail(Error::usage(fmt::format("{}: cannot read: {}", name, std::strerror(err))));
        }
        if (n == 0) break;
        if (auto w = append(*fd, buf, static_cast<std::size_t>(n), dir, name); !w) {
            ::close(*fd);
            return fail(w.error());
        }
    }
    ::lseek(*fd, 0, SEEK_SET);
    return fd;
}

}  // namespace nvtrace::import
