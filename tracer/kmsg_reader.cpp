#include "kmsg_reader.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace nvtrace::tracer {

KmsgReader::~KmsgReader() {
    if (fd_ >= 0) ::close(fd_);
}

Result<void> KmsgReader::start() {
    fd_ = ::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd_ < 0) return fail(Error::environment(fmt::format("cannot open /dev/kmsg: {}", std::strerror(errno))));
    if (::lseek(fd_, 0, SEEK_END) < 0)
        return fail(Error::environment(fmt::format("cannot seek /dev/kmsg: {}", std::strerror(errno))));
    return {};
}

void KmsgReader::poll() {
    if (fd_ < 0) return;
    char buf[16384];  // a record is at most about 8 KB (CONSOLE_EXT_LOG_MAX)
    for (;;) {
        ssize_t n = ::read(fd_, buf, sizeof buf);
        if (n > 0) {
            std::string rec(buf, static_cast<std::size_t>(n));
            if (!rec.empty() && rec.back() == '\n') rec.pop_back();
            records_.push_back({std::move(rec)});
            continue;
        }
        if (n < 0 && errno == EPIPE) {
            overwritten_ = true;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        break;  // EAGAIN: nothing more now
    }
}

}  // namespace nvtrace::tracer
