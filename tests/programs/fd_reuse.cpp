// fd_reuse N [HOLD_MS]: N times: open /etc/hostname (fd F), FIONREAD on it, [hold it open HOLD_MS], close it, open
// /dev/zero (the lowest free number: F again), TCGETS on it (ENOTTY), [hold], close. Prints "fd F" once per cycle
// on stdout. Exits 0, or 1 with a message when an open fails or /dev/zero did not get the same number (then the
// test would not reproduce the reused fd). The live tests check that no ioctl is named after the wrong file
// (tests/live/test_live_fd_lifetimes.cpp).
#include <fcntl.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace {
void hold(long ms) {
    if (ms <= 0) return;
    timespec t{ms / 1000, (ms % 1000) * 1'000'000};
    nanosleep(&t, nullptr);
}
}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: fd_reuse N [HOLD_MS]\n");
        return 1;
    }
    const long n = std::strtol(argv[1], nullptr, 10);
    const long hold_ms = argc > 2 ? std::strtol(argv[2], nullptr, 10) : 0;
    for (long i = 0; i < n; ++i) {
        int a = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
        if (a < 0) {
            std::perror("open /etc/hostname");
            return 1;
        }
        int avail = 0;
        (void)ioctl(a, FIONREAD, &avail);
        hold(hold_ms);
        close(a);
        int b = open("/dev/zero", O_RDONLY | O_CLOEXEC);
        if (b != a) {
            std::fprintf(stderr, "/dev/zero got fd %d, not %d\n", b, a);
            return 1;
        }
        termios t{};
        (void)ioctl(b, TCGETS, &t);
        hold(hold_ms);
        close(b);
        std::printf("fd %d\n", a);
    }
    return 0;
}
