/* getpid_calls N: calls libc's getpid N times through the PLT (not inlined, not the vDSO: glibc's getpid is a
 * syscall wrapper) and prints "pid=PID calls=N ns_per_call=X". Used by the live test of `--uprobe libc:getpid`
 * (tests/live/test_live_api.cpp) and by bench/uprobe_overhead.sh (the cost of a probed call). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char** argv) {
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 3;
    pid_t (*volatile call)(void) = getpid; /* one real call per iteration: the compiler cannot fold them */
    struct timespec a, b;
    pid_t pid = 0;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n; ++i)
        pid = call();
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ns = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
    printf("pid=%d calls=%ld ns_per_call=%.1f\n", (int)pid, n, n > 0 ? ns / (double)n : 0.0);
    return 0;
}
