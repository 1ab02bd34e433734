/* cuda_dlopen_late LIB [WAIT_S]: loads the CUDA runtime LIB with dlopen (a file nvtrace cannot know about before
 * the start: not in the program's DT_NEEDED, not where a dlopen by name would look), then waits until nvtrace has
 * armed its probes, then calls cudaMalloc once through dlsym and prints "cudaMalloc=RESULT armed=0|1 waited_ms=N".
 *
 * The wait is the handshake that makes the live test (tests/live/test_live_api.cpp) deterministic: nvtrace arms the
 * probes of a library mapped after the start only once it sees the mapping (its drain loop reads /proc/PID/maps),
 * so a call made right after dlopen may come before them. The program polls the probe's enable file in nvtrace's
 * instance, which it finds from NVTRACE_TRACE_MARKER (docs/markers.md: the instance's trace_marker), until one
 * events/nvtrace_*<group>/cudaMalloc*__return/enable reads 1 (the return probe of a pair is enabled after its entry),
 * at most WAIT_S seconds (default 60); armed=0 says it gave up and called anyway. Needs root to read the
 * instance (the live tests run as root). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <glob.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int probe_enabled(const char* instance) {
    char pattern[4096];
    snprintf(pattern, sizeof pattern, "%s/events/nvtrace_*/cudaMalloc*__return/enable", instance);
    glob_t g;
    int on = 0;
    if (glob(pattern, 0, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc && !on; ++i) {
            FILE* f = fopen(g.gl_pathv[i], "r");
            if (!f) continue;
            on = fgetc(f) == '1';
            fclose(f);
        }
        globfree(&g);
    }
    return on;
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: cuda_dlopen_late LIB [WAIT_S]\n");
        return 2;
    }
    const long wait_s = argc > 2 ? strtol(argv[2], NULL, 10) : 60;
    void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
        return 1;
    }
    int (*cuda_malloc)(void**, size_t) = NULL;
    void* sym = dlsym(lib, "cudaMalloc");
    memcpy(&cuda_malloc, &sym, sizeof sym); /* POSIX dlsym(3): a function's address as an object pointer */
    if (!cuda_malloc) {
        fprintf(stderr, "dlsym cudaMalloc: %s\n", dlerror());
        return 1;
    }
    char instance[4096] = "", copy[4096];
    const char* marker = getenv("NVTRACE_TRACE_MARKER");
    if (marker && strlen(marker) < sizeof copy) {
        strcpy(copy, marker);
        snprintf(instance, sizeof instance, "%s", dirname(copy));
    }
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    int armed = 0;
    long waited_ms = 0;
    while (instance[0] && !(armed = probe_enabled(instance)) && waited_ms < wait_s * 1000) {
        usleep(10000);
        clock_gettime(CLOCK_MONOTONIC, &b);
        waited_ms = (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
    }
    void* p = NULL;
    int rc = cuda_malloc(&p, (size_t)1 << 20);
    printf("cudaMalloc=%d armed=%d waited_ms=%ld\n", rc, armed, waited_ms);
    return 0;
}
