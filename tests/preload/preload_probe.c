// preload_probe: does real ioctls under LD_PRELOAD=libnvtrace_preload.so for tests/preload/test_preload.cpp.
//
//   preload_probe CASE
//
// The test sets NVTRACE_TRACE_MARKER_FD (a temp file standing in for trace_marker), the test-only
// NVTRACE_PRELOAD_TEST_DEVICE_PREFIX=DIR (DIR/dev/X counts as /dev/X) and NVTRACE_PRELOAD_DRIVER_VERSION.
// The probe creates the "devices" it needs under DIR/dev, does its ioctls and prints one line per call:
//   RESULT <label> fd=<fd> ret=<ret> errno=<errno> [value=<n>]
// so that the test can compare the marker lines with what the program saw. errno is set to 1234 before
// each call: a call that succeeds must leave it there.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

static const char* dir(void) {
    const char* d = getenv("NVTRACE_PRELOAD_TEST_DEVICE_PREFIX");
    if (!d) {
        fprintf(stderr, "NVTRACE_PRELOAD_TEST_DEVICE_PREFIX is not set\n");
        exit(2);
    }
    return d;
}

static int open_dev(const char* name, int fifo) {
    char path[512];
    snprintf(path, sizeof path, "%s/dev/%s", dir(), name);
    char sub[512];
    snprintf(sub, sizeof sub, "%s", path);
    char* slash = strrchr(sub, '/');
    *slash = '\0';
    mkdir(sub, 0700);
    if (fifo) {
        if (mkfifo(path, 0600) != 0 && errno != EEXIST) {
            perror("mkfifo");
            exit(2);
        }
    }
    int fd = open(path, fifo ? O_RDWR : (O_RDWR | O_CREAT), 0600);
    if (fd < 0) {
        perror(path);
        exit(2);
    }
    return fd;
}

static void result(const char* label, int fd, int ret, int err, long long value, int has_value) {
    if (has_value)
        printf("RESULT %s fd=%d ret=%d errno=%d value=%lld\n", label, fd, ret, err, value);
    else
        printf("RESULT %s fd=%d ret=%d errno=%d\n", label, fd, ret, err);
}

// One ioctl through libc (and so through the preload library), reported.
static int call(const char* label, int fd, unsigned long req, void* arg) {
    errno = 1234;
    int ret = ioctl(fd, req, arg);
    int err = errno;
    result(label, fd, ret, err, 0, 0);
    return ret;
}

static void put32(unsigned char* p, unsigned off, uint32_t v) {
    memcpy(p + off, &v, 4);
}

// Recorded parameter buffers, laid out as nvidia-driver.md 1.4 and the driver headers give them.
static void case_rm(void) {
    int fd = open_dev("nvidiactl", 0);
    unsigned char nvos21[32] = {0};  // NVOS21: hRoot hObjectParent hObjectNew hClass@12 ... status@28
    put32(nvos21, 0, 0xc1d00001u);
    put32(nvos21, 12, 0xa06fu);
    put32(nvos21, 24, 0x24u);  // where NVOS21 kept status before 535.43.02
    put32(nvos21, 28, 0x1fu);
    call("alloc21", fd, 0xc020462bul, nvos21);
    unsigned char nvos64[48] = {0};  // NVOS64 from 535.43.02: hClass@12 status@40
    put32(nvos64, 12, 0x0080u);
    put32(nvos64, 40, 0x22u);
    call("alloc64", fd, 0xc030462bul, nvos64);
    unsigned char nvos54[32] = {0};  // NVOS54: cmd@8 status@28
    put32(nvos54, 8, 0x20800110u);
    put32(nvos54, 28, 0x56u);
    call("control", fd, 0xc020462aul, nvos54);
    unsigned char nvos00[16] = {0};  // NVOS00: status@12
    put32(nvos00, 12, 0x0u);
    call("free", fd, 0xc0104629ul, nvos00);
    call("null", fd, 0xc020462bul, NULL);
    call("badptr", fd, 0xc020462bul, (void*)8);
    call("badsize", fd, 0xc018462bul, nvos21);
    // NV_ESC_IOCTL_XFER_CMD wrapping the NVOS21 above.
    unsigned char xfer[16] = {0};
    put32(xfer, 0, 0x2bu);
    put32(xfer, 4, 32u);
    uint64_t ptr = (uint64_t)(uintptr_t)nvos21;
    memcpy(xfer + 8, &ptr, 8);
    call("xfer", fd, 0xc01046d3ul, xfer);
    close(fd);

    int gpu = open_dev("nvidia0", 0);
    unsigned char nvos02[56] = {0};  // nv_ioctl_nvos02_parameters_with_fd: hClass@12 status@40 fd@48
    put32(nvos02, 12, 0x71u);
    put32(nvos02, 40, 0x1eu);
    call("allocmem", gpu, 0xc0384627ul, nvos02);
    close(gpu);
}

static void case_uvm(void) {
    int fd = open_dev("nvidia-uvm", 0);
    unsigned char init[16] = {0};  // UVM_INITIALIZE_PARAMS: flags@0 rmStatus@8
    put32(init, 8, 0x16u);
    call("initialize", fd, 0x30000001ul, init);
    unsigned char freep[24] = {0};  // UVM_FREE_PARAMS: base@0, rmStatus@8 (from 590) or @16 (before)
    put32(freep, 8, 0x1fu);
    put32(freep, 16, 0x3du);
    call("free", fd, 34ul, freep);
    call("unknown", fd, 35ul, freep);  // UVM_MEM_MAP: not routed, no status
    close(fd);
}

static void case_fifo(void) {
    int fd = open_dev("nvidiactl", 1);
    if (write(fd, "abc", 3) != 3) exit(2);
    int n = -1;
    errno = 1234;
    int ret = ioctl(fd, FIONREAD, &n);
    result("fionread", fd, ret, errno, n, 1);
    struct termios t;
    call("tcgets", fd, TCGETS, &t);
    close(fd);
}

static void case_plain(void) {
    int p[2];
    if (pipe(p) != 0) exit(2);
    if (write(p[1], "hello", 5) != 5) exit(2);
    int n = -1;
    errno = 1234;
    int ret = ioctl(p[0], FIONREAD, &n);
    result("pipe_fionread", p[0], ret, errno, n, 1);
    // The same request without the library, for comparison.
    int m = -1;
    errno = 1234;
    int raw = (int)syscall(SYS_ioctl, p[0], FIONREAD, &m);
    result("pipe_fionread_raw", p[0], raw, errno, m, 1);
    struct termios t;
    call("pipe_tcgets", p[0], TCGETS, &t);
    int pt = posix_openpt(O_RDWR | O_NOCTTY);
    if (pt < 0) exit(2);
    errno = 1234;
    ret = ioctl(pt, TCGETS, &t);
    result("pty_tcgets", pt, ret, errno, (long long)(t.c_cflag & CSIZE), 1);
    close(pt);
}

static void case_drm(void) {
    int fd = open_dev("dri/renderD128", 0);
    unsigned char version[64] = {0};
    call("drm_version", fd, 0xc0406400ul, version);  // DRM_IOCTL_VERSION
    close(fd);
    int g = open_dev("gdrdrv", 0);
    call("gdr_version", g, 0xc008daffUL, version);  // GDRDRV_IOC_GET_VERSION
    close(g);
}

// The program closes the marker fd and opens a file of its own that gets the same number: the library
// must not write into it.
static void case_marker_reused(void) {
    int mfd = atoi(getenv("NVTRACE_TRACE_MARKER_FD"));
    int fd = open_dev("nvidiactl", 1);
    close(mfd);
    char path[512];
    snprintf(path, sizeof path, "%s/own_file", dir());
    int own = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (own != mfd) {
        if (dup2(own, mfd) < 0) exit(2);
        close(own);
    }
    int n = 0;
    errno = 1234;
    int ret = ioctl(fd, FIONREAD, &n);
    result("after_reuse", fd, ret, errno, n, 1);
}

#define THREADS 4
#define PER_THREAD 500
static int g_thread_fd;

static void* worker(void* unused) {
    (void)unused;
    for (int i = 0; i < PER_THREAD; ++i) {
        int n;
        if (ioctl(g_thread_fd, FIONREAD, &n) != 0) abort();
    }
    return NULL;
}

static void case_threads(void) {
    g_thread_fd = open_dev("nvidiactl", 1);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; ++i)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < THREADS; ++i)
        pthread_join(t[i], NULL);
    printf("RESULT threads fd=%d calls=%d\n", g_thread_fd, THREADS * PER_THREAD);
}

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: preload_probe rm|uvm|fifo|plain|drm|marker_reused|threads\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char* c = argv[1];
    if (!strcmp(c, "rm"))
        case_rm();
    else if (!strcmp(c, "uvm"))
        case_uvm();
    else if (!strcmp(c, "fifo"))
        case_fifo();
    else if (!strcmp(c, "plain"))
        case_plain();
    else if (!strcmp(c, "drm"))
        case_drm();
    else if (!strcmp(c, "marker_reused"))
        case_marker_reused();
    else if (!strcmp(c, "threads"))
        case_threads();
    else
        return 2;
    return 0;
}
