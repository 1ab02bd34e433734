// fionread_loop N [KMSG_LINE...]: N FIONREAD ioctls on a pipe (N = 0: until killed), then writes each
// KMSG_LINE to /dev/kmsg (root only), opening it anew for each line because /dev/kmsg rate-limits to
// 10 lines per 5 s per open file (ci-environment.md section 5). Exits 0, or 1 with a message.
// The tests pass neutral, tagged lines only (kmsg_probe_line in live_util.hpp): never a GPU-monitor line.
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: fionread_loop N [KMSG_LINE...]\n");
        return 1;
    }
    long n = std::strtol(argv[1], nullptr, 10);
    int p[2];
    if (pipe(p) != 0) {
        std::perror("pipe");
        return 1;
    }
    int avail = 0;
    for (long i = 0; n == 0 || i < n; ++i) {
        if (ioctl(p[0], FIONREAD, &avail) != 0) {
            std::perror("ioctl(FIONREAD)");
            return 1;
        }
    }
    for (int i = 2; i < argc; ++i) {
        int fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
        if (fd < 0) {
            std::fprintf(stderr, "open /dev/kmsg: %s\n", std::strerror(errno));
            return 1;
        }
        std::string line = std::string("<3>") + argv[i] + "\n";
        if (write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
            std::fprintf(stderr, "write /dev/kmsg: %s\n", std::strerror(errno));
            return 1;
        }
        close(fd);
    }
    return 0;
}
