// odirect_read DEV COUNT: COUNT preads of 4 KiB with O_DIRECT at offsets 0, 4096, ... of DEV.
//
// The scenario program of the null_blk function_graph tests: an O_DIRECT read bypasses the page cache, so every
// pread reaches the block driver (null_blk's null_queue_rq) in the caller's context. Only libc, so that it links
// -static for the qemu guest (tests/vm/vm.sh). Exit status 0 on success, 1 with a message on stderr otherwise.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr size_t block_size = 4096;

int usage(const char* argv0) {
    std::fprintf(stderr, "usage: %s DEV COUNT\n  COUNT 4 KiB O_DIRECT preads at offsets 0, 4096, ... of DEV\n", argv0);
    return 1;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) return usage(argv[0]);
    const char* dev = argv[1];

    errno = 0;
    char* end = nullptr;
    const long long count = std::strtoll(argv[2], &end, 10);
    if (errno != 0 || end == argv[2] || *end != '\0' || count < 1 ||
        count > LLONG_MAX / static_cast<long long>(block_size)) {
        std::fprintf(stderr, "odirect_read: COUNT must be a positive integer, got '%s'\n", argv[2]);
        return 1;
    }

    const int fd = open(dev, O_RDONLY | O_DIRECT | O_CLOEXEC);
    if (fd < 0) {
        std::fprintf(stderr, "odirect_read: open %s with O_DIRECT: %s\n", dev, std::strerror(errno));
        return 1;
    }

    // O_DIRECT needs a buffer aligned to the device's logical block size; 4096 covers every common device.
    void* buf = nullptr;
    if (const int rc = posix_memalign(&buf, block_size, block_size); rc != 0) {
        std::fprintf(stderr, "odirect_read: posix_memalign(%zu): %s\n", block_size, std::strerror(rc));
        close(fd);
        return 1;
    }

    int status = 0;
    for (long long i = 0; i < count; ++i) {
        const off_t offset = static_cast<off_t>(i) * static_cast<off_t>(block_size);
        const ssize_t n = pread(fd, buf, block_size, offset);
        if (n < 0) {
            std::fprintf(stderr, "odirect_read: pread %s at offset %lld: %s\n", dev, static_cast<long long>(offset),
                         std::strerror(errno));
            status = 1;
            break;
        }
        if (static_cast<size_t>(n) != block_size) {
            std::fprintf(stderr, "odirect_read: pread %s at offset %lld: short read, %zd of %zu bytes\n", dev,
                         static_cast<long long>(offset), n, block_size);
            status = 1;
            break;
        }
    }

    std::free(buf);
    if (close(fd) != 0 && status == 0) {
        std::fprintf(stderr, "odirect_read: close %s: %s\n", dev, std::strerror(errno));
        status = 1;
    }
    return status;
}
